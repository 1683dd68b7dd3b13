#include "examples/cli/run_weights.hpp"

#include <cmath>
#include <cstring>

#include "headway/dtype_convert.hpp"
#include "headway/layer_tensors.hpp"

namespace headway::cli {

TensorRef RandomWeights::make(int slot, uint32_t rows, uint32_t cols, float scale, float offset, uint64_t stream) {
  const uint64_t n = uint64_t{rows} * cols;
  std::vector<uint8_t>& b = buf[slot];
  b.resize(n * dtype_bytes(dtype));
  uint64_t s = seed * 0x9E3779B97F4A7C15ull + stream * 0xD1B54A32D192ED03ull + 1;
  const float a = scale * 1.7320508f;  // uniform [-a, a): variance scale²
  for (uint64_t i = 0; i < n; ++i) {
    s ^= s << 13;  // xorshift64: fast enough for billions of weights
    s ^= s >> 7;
    s ^= s << 17;
    const float u = static_cast<float>(s >> 40) * (1.0f / 16777216.0f);
    const float f = offset + a * (2.0f * u - 1.0f);
    if (dtype == DType::kF32) {
      std::memcpy(&b[4 * i], &f, 4);
    } else {
      const uint16_t h = dtype == DType::kBF16 ? f32_to_bf16_bits(f) : f32_to_f16_bits(f);
      std::memcpy(&b[2 * i], &h, 2);
    }
  }
  return TensorRef{b.data(), dtype, rows, cols};
}

Result<LayerWeights> RandomWeights::layer(void* ctx, uint32_t l) {
  RandomWeights& r = *static_cast<RandomWeights*>(ctx);
  const Plan& p = *r.plan;
  const LayerTensorShapes shapes = layer_tensor_shapes(p, l);
  LayerWeights w;
  for (uint32_t i = 0; i < shapes.count; ++i) {
    const LayerTensorShape& t = shapes.tensor[i];
    const uint64_t stream = uint64_t{l} * 16 + i;
    switch (t.kind) {
      case LayerTensorKind::kMatrix:
        w.*t.member = r.make(i, t.rows, t.cols, 1.0f / std::sqrt(static_cast<float>(t.cols)), 0.0f, stream);
        break;
      case LayerTensorKind::kBias: w.*t.member = r.make(i, t.rows, t.cols, 0.1f, 0.0f, stream); break;
      case LayerTensorKind::kNorm:
      case LayerTensorKind::kScale: w.*t.member = r.make(i, t.rows, t.cols, 0.1f, 1.0f, stream); break;
      case LayerTensorKind::kSinks: w.*t.member = r.make(i, t.rows, t.cols, 1.0f, 0.0f, stream); break;
    }
  }
  return w;
}

void RandomWeights::release() {
  for (std::vector<uint8_t>& b : buf) std::vector<uint8_t>().swap(b);
}

Result<LayerWeights> FileWeights::layer(void* ctx, uint32_t l) {
  const FileWeights& f = *static_cast<FileWeights*>(ctx);
  return f.file->layer_weights(f.config, l);
}

}  // namespace headway::cli
