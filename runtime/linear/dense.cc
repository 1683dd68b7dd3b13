#include "runtime/linear/dense.hpp"

#include <cstring>

#include "headway/dtype_convert.hpp"
#include "headway/detail/ggml_blocks.hpp"
#include "headway/detail/row_groups.hpp"
#include "simd/matmul/matmul.h"

namespace headway {

namespace {

// Value `col` of a block-format row: its block decoded.
float block_value(const TensorRef& t, uint64_t row, uint64_t col) {
  uint8_t scratch[row_groups::kMaxBlockBytes];
  float block[ggml_blocks::kMaxBlockValues];
  const uint32_t values = dtype_traits(t.dtype).block_values;
  ggml_blocks::decode_block(t.dtype, tensor_block(t, row, col / values, scratch), block);
  return block[col % values];
}

}  // namespace

const uint8_t* tensor_block(const TensorRef& t, uint64_t row, uint64_t b, uint8_t* scratch) {
  const uint8_t* data = static_cast<const uint8_t*>(t.data);
  if (t.row_groups) {
    row_groups::block(t.dtype, data, t.rows, t.cols, row, b, scratch);
    return scratch;
  }
  return data + row * dtype_row_bytes(t.dtype, t.cols) + b * dtype_traits(t.dtype).block_bytes;
}

void tensor_row(const TensorRef& t, uint64_t row, float* y) {
  const uint8_t* r = static_cast<const uint8_t*>(t.data) + dtype_row_bytes(t.dtype, t.cols) * row;
  if (t.dtype == DType::kF32) {
    std::memcpy(y, r, size_t{t.cols} * sizeof(float));
  } else if (dtype_is_block(t.dtype)) {  // cols is whole blocks (the loaders and matmul_args_error hold rows to it)
    const uint32_t values = dtype_traits(t.dtype).block_values;
    uint8_t scratch[row_groups::kMaxBlockBytes];
    for (uint32_t j = 0; j < t.cols; j += values) {
      ggml_blocks::decode_block(t.dtype, tensor_block(t, row, j / values, scratch), y + j);
    }
  } else {
    const uint16_t* b = reinterpret_cast<const uint16_t*>(r);
    for (uint32_t j = 0; j < t.cols; ++j)
      y[j] = t.dtype == DType::kF16 ? f16_bits_to_f32(b[j]) : bf16_bits_to_f32(b[j]);
  }
}

float tensor_at(const TensorRef& t, uint64_t i) {
  switch (t.dtype) {
    case DType::kF32: return static_cast<const float*>(t.data)[i];
    case DType::kF16: return f16_bits_to_f32(static_cast<const uint16_t*>(t.data)[i]);
    case DType::kBF16: return bf16_bits_to_f32(static_cast<const uint16_t*>(t.data)[i]);
    default: return t.cols == 0 ? 0.0f : block_value(t, i / t.cols, i % t.cols);
  }
}

void convert_tensor(const TensorRef& src, void* dst, DType dtype) {
  if (src.dtype == dtype) {
    std::memcpy(dst, src.data, src.bytes());
    return;
  }
  if (!dtype_plans_weights(dtype)) return;  // the block formats: weights stay as their files hold them
  const auto store = [&](uint64_t i, float v) {
    if (dtype == DType::kF32) static_cast<float*>(dst)[i] = v;
    else if (dtype == DType::kF16) static_cast<uint16_t*>(dst)[i] = f32_to_f16_bits(v);
    else static_cast<uint16_t*>(dst)[i] = f32_to_bf16_bits(v);
  };
  if (!dtype_is_block(src.dtype)) {
    for (uint64_t i = 0; i < src.elements(); ++i) store(i, tensor_at(src, i));
    return;
  }
  // A block format: each block decoded once (rows are whole blocks).
  const uint32_t values = dtype_traits(src.dtype).block_values;
  uint8_t scratch[row_groups::kMaxBlockBytes];
  float block[ggml_blocks::kMaxBlockValues];
  for (uint64_t r = 0; r < src.rows; ++r) {
    for (uint64_t c = 0; c < src.cols; c += values) {
      ggml_blocks::decode_block(src.dtype, tensor_block(src, r, c / values, scratch), block);
      for (uint32_t j = 0; j < values; ++j) store(r * src.cols + c + j, block[j]);
    }
  }
}

namespace {

struct DenseCall {
  simd::MatmulArgs args;
  TensorRef bias;
  size_t token_task = 0;  // tokens per task, every row in each; 0: tasks of kDenseRowTask rows
};

void add_bias(const TensorRef& bias, float* y, size_t y_stride, size_t t, size_t o0, size_t o1) {
  if (!bias.present()) return;
  for (size_t i = 0; i < t; ++i) {
    for (size_t o = o0; o < o1; ++o) y[i * y_stride + o] += tensor_at(bias, o);
  }
}

void dense_task(void* ctx, size_t task) {
  const DenseCall& c = *static_cast<const DenseCall*>(ctx);
  if (c.token_task != 0) {
    simd::MatmulArgs a = c.args;
    const size_t t0 = task * c.token_task;
    a.t = c.args.t - t0 < c.token_task ? c.args.t - t0 : c.token_task;
    a.x += t0 * a.x_stride;
    a.y += t0 * a.y_stride;
    simd::matmul(a, 0, a.out);
    add_bias(c.bias, a.y, a.y_stride, a.t, 0, a.out);
    return;
  }
  const size_t o0 = task * kDenseRowTask;
  const size_t o1 = o0 + kDenseRowTask < c.args.out ? o0 + kDenseRowTask : c.args.out;
  simd::matmul(c.args, o0, o1);
  add_bias(c.bias, c.args.y, c.args.y_stride, c.args.t, o0, o1);
}

}  // namespace

void dense_highway(const DenseMatrix& m, const float* x, size_t x_stride, float* y, size_t y_stride, uint32_t t,
                   ThreadPool* pool) {
  DenseCall c;
  c.args.x = x;
  c.args.x_stride = x_stride;
  c.args.w = m.w.data;
  c.args.w_type = m.w.dtype;
  c.args.w_stride = m.w.cols;
  c.args.y = y;
  c.args.y_stride = y_stride;
  c.args.t = t;
  c.args.in = m.w.cols;
  c.args.out = m.w.rows;
  c.bias = m.bias;
  c.args.precise_x = m.precise_x;
  c.args.w_row_groups = m.w.row_groups;
  // A decode step's x quantized once for all its row tasks, on this stack (the tasks run before
  // run_on returns).
  alignas(64) uint8_t prepared[simd::kMatmulPreparedXBytes > 0 ? simd::kMatmulPreparedXBytes : 1];
  if (t == 1 && simd::kMatmulPreparedXBytes > 0 && simd::matmul_prepare_x(c.args, prepared)) {
    c.args.x_prepared = prepared;
  }
  // A prefill whose kernel quantizes x in each call: tasks of tokens (as many as threads at least,
  // at most a panel of the kernel's), so that each token is quantized once.
  const size_t panel = t > 1 ? simd::matmul_token_task(c.args) : 0;
  if (panel != 0) {
    const size_t threads = pool != nullptr ? pool->threads() : 1;
    const size_t share = (t + threads - 1) / threads;
    c.token_task = share < panel ? share : panel;
  }
  const size_t tasks = c.token_task != 0 ? (t + c.token_task - 1) / c.token_task
                                         : (size_t{m.w.rows} + kDenseRowTask - 1) / kDenseRowTask;
  const uint64_t macs = uint64_t{t} * m.w.cols * m.w.rows;
  ThreadPool::run_on(macs >= kDenseMinParallelMacs ? pool : nullptr, tasks, dense_task, &c);
}

}  // namespace headway
