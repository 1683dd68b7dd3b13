#include "runtime/linear/dense.hpp"

#include <cstring>

#include "headway/dtype_convert.hpp"
#include "simd/matmul.h"

namespace headway {

float tensor_at(const TensorRef& t, uint64_t i) {
  switch (t.dtype) {
    case DType::kF32: return static_cast<const float*>(t.data)[i];
    case DType::kF16: return f16_bits_to_f32(static_cast<const uint16_t*>(t.data)[i]);
    case DType::kBF16: return bf16_bits_to_f32(static_cast<const uint16_t*>(t.data)[i]);
    case DType::kQ8_0:
    case DType::kQ4_0: break;  // K/V storage only: no tensor holds them (the loaders refuse them)
  }
  return 0.0f;
}

void convert_tensor(const TensorRef& src, void* dst, DType dtype) {
  const uint64_t n = src.elements();
  if (src.dtype == dtype) {
    std::memcpy(dst, src.data, n * dtype_bytes(dtype));
    return;
  }
  switch (dtype) {
    case DType::kF32: {
      float* d = static_cast<float*>(dst);
      for (uint64_t i = 0; i < n; ++i) d[i] = tensor_at(src, i);
      break;
    }
    case DType::kF16: {
      uint16_t* d = static_cast<uint16_t*>(dst);
      for (uint64_t i = 0; i < n; ++i) d[i] = f32_to_f16_bits(tensor_at(src, i));
      break;
    }
    case DType::kBF16: {
      uint16_t* d = static_cast<uint16_t*>(dst);
      for (uint64_t i = 0; i < n; ++i) d[i] = f32_to_bf16_bits(tensor_at(src, i));
      break;
    }
    case DType::kQ8_0:
    case DType::kQ4_0: break;  // K/V storage only: weights are never converted to them (make_plan refuses)
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
  const size_t tasks = (size_t{m.w.rows} + kDenseRowTask - 1) / kDenseRowTask;
  const uint64_t macs = uint64_t{t} * m.w.cols * m.w.rows;
  if (pool != nullptr && tasks > 1 && macs >= kDenseMinParallelMacs) {
    pool->run(tasks, dense_task, &c);
  } else {
    for (size_t i = 0; i < tasks; ++i) dense_task(&c, i);
  }
}

}  // namespace headway
