// Gated DeltaNet: compiles gated_delta-inl.h for every target of the kernels (simd/CMakeLists.txt)
// and exports the plain functions of gated_delta.h.

#include "simd/gated_delta/gated_delta.h"

#include <cstddef>
#include <cstdint>

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "simd/gated_delta/gated_delta-inl.h"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
#include "simd/gated_delta/gated_delta-inl.h"

#if HWY_ONCE
namespace headway {
namespace simd {

HWY_EXPORT(GatedDeltaRecurrent);
HWY_EXPORT(GatedDeltaChunked);

const char* gated_delta_args_error(const GatedDeltaArgs& a) {
  if (a.dk == 0) return "dk is 0";
  if (a.dv == 0) return "dv is 0";
  if (a.t == 0) return nullptr;  // nothing to compute
  if (a.state == nullptr) return "state is null";
  if (a.q == nullptr) return "q is null";
  if (a.k == nullptr) return "k is null";
  if (a.v == nullptr) return "v is null";
  if (a.g == nullptr) return "g is null";
  if (a.beta == nullptr) return "beta is null";
  if (a.out == nullptr) return "out is null";
  if (a.qk_stride < a.dk) return "qk_stride is less than dk";
  if (a.v_stride < a.dv) return "v_stride is less than dv";
  if (a.out_stride < a.dv) return "out_stride is less than dv";
  if (a.gb_stride == 0) return "gb_stride is 0";
  return nullptr;
}

void gated_delta_recurrent(const GatedDeltaArgs& a) {
  if (a.t == 0) return;
  HWY_DYNAMIC_DISPATCH(GatedDeltaRecurrent)(a);
}

void gated_delta_chunked(const GatedDeltaArgs& a, float* scratch) {
  if (a.t == 0) return;
  HWY_DYNAMIC_DISPATCH(GatedDeltaChunked)(a, scratch);
}

}  // namespace simd
}  // namespace headway
#endif  // HWY_ONCE
