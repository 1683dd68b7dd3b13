// Builds without XNNPACK (HEADWAY_XNNPACK=OFF, bare metal): the projections run on the Highway
// kernel; a plan that asks for XNNPACK is refused at layer init.
#include "runtime/linear/xnnpack_dense.hpp"

namespace headway {

bool xnnpack_built() { return false; }

Status xnn_dense_create(const DenseMatrix&, size_t, size_t, uint32_t, uint8_t*, uint64_t, uint64_t*, void**) {
  return Status::error(Code::kUnsupported,
                       "xnnpack: this build has no XNNPACK (HEADWAY_XNNPACK=OFF); use the Highway projections");
}

Status xnn_dense_run(void* const*, uint32_t, uint32_t, const float*, float*, uint32_t, ThreadPool*) {
  return Status::error(Code::kUnsupported, "xnnpack: this build has no XNNPACK");
}

void xnn_dense_delete(void** ops, uint32_t blocks) {
  for (uint32_t b = 0; b < blocks; ++b) ops[b] = nullptr;
}

}  // namespace headway
