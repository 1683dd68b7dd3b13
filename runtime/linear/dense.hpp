// A dense projection y = x · Wᵀ + b over the thread pool, on the Highway kernel (simd/matmul/matmul.h),
// or on XNNPACK fully-connected operators (runtime/linear/xnnpack_dense.hpp) when the plan says so.
#pragma once

#include <cstddef>
#include <cstdint>

#include "headway/config.hpp"
#include "headway/thread_pool.hpp"
#include "headway/weights.hpp"

namespace headway {

// One projection: W [out, in] (row stride `in`), optional bias [out], both borrowed.
struct DenseMatrix {
  TensorRef w;
  TensorRef bias;          // !present(): none
  bool precise_x = false;  // a block-format W meets x at 16 bits or more (MatmulArgs::precise_x)
};

// The bytes of block b of row `row` of a block-format tensor, in ggml's order: where they lie, or
// gathered into scratch [row_groups::kMaxBlockBytes] from a tensor in row groups.
const uint8_t* tensor_block(const TensorRef& t, uint64_t row, uint64_t b, uint8_t* scratch);

// Row `row` of a tensor (its cols values) as f32 into y.
void tensor_row(const TensorRef& t, uint64_t row, float* y);

// Element i of a tensor as f32 (f32, f16 or bf16 storage).
float tensor_at(const TensorRef& t, uint64_t i);

// Copies `src` into dst converted to `dtype` (round to nearest even). No allocation.
void convert_tensor(const TensorRef& src, void* dst, DType dtype);

// y[i][0..out) = x[i] · Wᵀ + b for i < t (x row stride x_stride floats, y row stride y_stride).
// Output rows are cut into tasks of kDenseRowTask rows, or a prefill's tokens into tasks where
// its kernel quantizes x in each call (simd::matmul_token_task); y does not depend on the split,
// so the result is the same for every pool size, and for no pool. Never allocates.
inline constexpr uint32_t kDenseRowTask = 64;
// Below this many multiply-adds (t · in · out) the caller's thread does all the work: waking the
// pool costs more than it saves. A small model's decode projection is ~0.3-0.9 M (SmolLM2-135M's),
// ~15-30 µs on a core from quantized blocks, well above a spinning worker's wake-up; splitting
// them took SmolLM2's 2-thread decode from about 1.0× to 1.7× its 1-thread speed. On a busy
// device a worker may still wait a whole scheduler slice to run.
inline constexpr uint64_t kDenseMinParallelMacs = 1u << 16;
void dense_highway(const DenseMatrix& m, const float* x, size_t x_stride, float* y, size_t y_stride, uint32_t t,
                   ThreadPool* pool);

}  // namespace headway
