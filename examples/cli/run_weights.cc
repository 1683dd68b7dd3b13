#include "examples/cli/run_weights.hpp"

#include <cmath>
#include <cstring>

#include "headway/dtype_convert.hpp"

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
  const Config& c = p.config;
  const uint64_t st = uint64_t{l} * 16;
  LayerWeights w;
  const float sd = 1.0f / std::sqrt(static_cast<float>(c.d_model));
  w.wq = r.make(0, p.q_rows, c.d_model, sd, 0.0f, st + 0);
  w.wk = r.make(1, p.kv_width, c.d_model, sd, 0.0f, st + 1);
  w.wv = r.make(2, p.kv_width, c.d_model, sd, 0.0f, st + 2);
  w.wo = r.make(3, c.d_model, p.q_width, 1.0f / std::sqrt(static_cast<float>(p.q_width)), 0.0f, st + 3);
  if (c.qkv_bias) {
    w.bq = r.make(4, 1, p.q_rows, 0.1f, 0.0f, st + 4);
    w.bk = r.make(5, 1, p.kv_width, 0.1f, 0.0f, st + 5);
    w.bv = r.make(6, 1, p.kv_width, 0.1f, 0.0f, st + 6);
  }
  if (c.o_bias) w.bo = r.make(7, 1, c.d_model, 0.1f, 0.0f, st + 7);
  if (c.qk_norm) {
    w.q_norm = r.make(8, 1, c.q_norm_width(), 0.1f, 1.0f, st + 8);
    w.k_norm = r.make(9, 1, c.k_norm_width(), 0.1f, 1.0f, st + 9);
  }
  if (c.sinks) w.sinks = r.make(10, 1, c.n_heads, 1.0f, 0.0f, st + 10);
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
