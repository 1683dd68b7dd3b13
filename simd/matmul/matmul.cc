// Dense projections: compiles matmul-inl.h for every target of the kernels (simd/CMakeLists.txt)
// and exports the plain functions of matmul.h.

#include "simd/matmul/matmul.h"

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "headway/detail/row_groups.hpp"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "simd/matmul/matmul-inl.h"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
#include "simd/matmul/matmul-inl.h"

#if HWY_ONCE
namespace headway {
namespace simd {

HWY_EXPORT(MatmulF32);
HWY_EXPORT(MatmulXCodeMax);
HWY_EXPORT(MatmulTargetName);
HWY_EXPORT(MatmulReadsRowGroups);
HWY_EXPORT(MatmulPrepareX);
HWY_EXPORT(MatmulTokenTask);

bool matmul_reads_row_groups(WeightType w) { return HWY_DYNAMIC_DISPATCH(MatmulReadsRowGroups)(w); }

bool matmul_prepare_x(const MatmulArgs& args, void* out) { return HWY_DYNAMIC_DISPATCH(MatmulPrepareX)(args, out); }

size_t matmul_token_task(const MatmulArgs& args) { return HWY_DYNAMIC_DISPATCH(MatmulTokenTask)(args); }

const char* matmul_args_error(const MatmulArgs& a) {
  if (!dtype_holds_weights(a.w_type)) return "w_type is not a weight dtype (dtype_holds_weights)";
  if (a.t == 0 || a.out == 0) return nullptr;  // nothing to compute
  if (a.x == nullptr && a.in > 0) return "x is null";
  if (a.w == nullptr && a.in > 0) return "w is null";
  if (a.y == nullptr) return "y is null";
  if (a.x_stride < a.in) return "x_stride is less than in";
  if (a.w_stride < a.in) return "w_stride is less than in";
  if (a.y_stride < a.out) return "y_stride is less than out";
  const uint32_t block = dtype_traits(a.w_type).block_values;
  if (a.in % block != 0 || a.w_stride % block != 0) return "in or w_stride is not a whole number of w_type's blocks";
  if (a.w_row_groups && !row_groups::holds(a.w_type)) return "w_row_groups with a w_type row groups do not hold";
  if (a.w_row_groups && a.w_stride != a.in) return "w_row_groups with w_stride other than in";
  return nullptr;
}

void matmul(const MatmulArgs& args, size_t out_begin, size_t out_end) {
  if (out_begin >= out_end || args.t == 0) return;
  HWY_DYNAMIC_DISPATCH(MatmulF32)(args, out_begin, out_end);
}

int matmul_x_code_max(const MatmulArgs& args) { return HWY_DYNAMIC_DISPATCH(MatmulXCodeMax)(args); }

const char* matmul_target_name() { return HWY_DYNAMIC_DISPATCH(MatmulTargetName)(); }

namespace {
std::atomic<bool> avx_vnni_allowed{true};
}  // namespace

bool matmul_avx_vnni_allowed() { return avx_vnni_allowed.load(std::memory_order_relaxed); }

void matmul_allow_avx_vnni(bool allow) { avx_vnni_allowed.store(allow, std::memory_order_relaxed); }

}  // namespace simd
}  // namespace headway
#endif  // HWY_ONCE
