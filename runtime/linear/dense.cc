#include "runtime/linear/dense.hpp"

#include <cstring>

#include "headway/dtype_convert.hpp"
#include "headway/detail/ggml_blocks.hpp"
#include "simd/matmul/matmul.h"

namespace headway {

namespace {

// Value `col` of a block-format row: its block decoded.
float block_value(const TensorRef& t, uint64_t row, uint64_t col) {
  const DTypeTraits& type = dtype_traits(t.dtype);
  const uint8_t* r = static_cast<const uint8_t*>(t.data) + row * dtype_row_bytes(t.dtype, t.cols);
  float block[ggml_blocks::kMaxBlockValues];
  ggml_blocks::decode_block(t.dtype, r + col / type.block_values * type.block_bytes, block);
  return block[col % type.block_values];
}

}  // namespace

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
  const DTypeTraits& type = dtype_traits(src.dtype);
  const uint64_t row_bytes = dtype_row_bytes(src.dtype, src.cols);
  float block[ggml_blocks::kMaxBlockValues];
  for (uint64_t r = 0; r < src.rows; ++r) {
    const uint8_t* row = static_cast<const uint8_t*>(src.data) + r * row_bytes;
    for (uint64_t c = 0; c < src.cols; c += type.block_values) {
      ggml_blocks::decode_block(src.dtype, row + c / type.block_values * type.block_bytes, block);
      for (uint32_t j = 0; j < type.block_values; ++j) store(r * src.cols + c + j, block[j]);
    }
  }
}

namespace {

struct DenseCall {
  simd::MatmulArgs args;
  TensorRef bias;
};

void dense_task(void* ctx, size_t task) {
  const DenseCall& c = *static_cast<const DenseCall*>(ctx);
  const size_t o0 = task * kDenseRowTask;
  const size_t o1 = o0 + kDenseRowTask < c.args.out ? o0 + kDenseRowTask : c.args.out;
  simd::matmul(c.args, o0, o1);
  if (!c.bias.present()) return;
  for (size_t i = 0; i < c.args.t; ++i) {
    float* y = c.args.y + i * c.args.y_stride;
    for (size_t o = o0; o < o1; ++o) y[o] += tensor_at(c.bias, o);
  }
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
  const size_t tasks = (size_t{m.w.rows} + kDenseRowTask - 1) / kDenseRowTask;
  const uint64_t macs = uint64_t{t} * m.w.cols * m.w.rows;
  if (pool != nullptr && tasks > 1 && macs >= kDenseMinParallelMacs) {
    pool->run(tasks, dense_task, &c);
  } else {
    for (size_t i = 0; i < tasks; ++i) dense_task(&c, i);
  }
}

}  // namespace headway
