// The GPU backend of a build without Vulkan (HEADWAY_GPU=OFF): every entry point says so.
#include "headway/backend.hpp"

namespace headway {
namespace {

Status not_built() {
  return Status::error(Code::kUnsupported,
                       "backend gpu is not available in this build (HEADWAY_GPU=OFF: CMake found no Vulkan or no "
                       "glslc; install them with toolchains/install-deps.sh gpu and reconfigure)");
}

}  // namespace

bool GpuContext::compiled() { return false; }
GpuContext::~GpuContext() = default;  // impl_ is never set in this build
Status GpuContext::create(const GpuOptions&) { return not_built(); }

GpuBackend::~GpuBackend() = default;
void GpuBackend::destroy() {}
Status GpuBackend::create(GpuContext*, const Plan&, bool) { return not_built(); }
const char* GpuBackend::kernel_name() const { return "none"; }
const char* GpuBackend::description() const { return "gpu: not available in this build"; }
const Plan& GpuBackend::plan() const {
  static constexpr Plan kNone{};
  return kNone;
}
uint32_t GpuBackend::size() const { return 0; }
uint32_t GpuBackend::position() const { return 0; }
void GpuBackend::reset(uint32_t) {}
Status GpuBackend::append(const float*, size_t, const float*, size_t, uint32_t) { return not_built(); }
Status GpuBackend::attend(const float*, size_t, float*, size_t, uint32_t, const float*) { return not_built(); }
Status GpuBackend::rotate_queries(float*, size_t, uint32_t) const { return not_built(); }
Status GpuBackend::append_unchecked(const float*, size_t, const float*, size_t, uint32_t) { return not_built(); }
Status GpuBackend::attend_unchecked(const float*, size_t, float*, size_t, uint32_t, const float*) {
  return not_built();
}
void GpuBackend::rotate_queries_unchecked(float*, size_t, uint32_t) const {}
Status GpuBackend::attend_dense(const float*, const void*, const void*, DType, float*, const AttentionShape&,
                                const AttentionParams&) {
  return not_built();
}

}  // namespace headway
