#include "runtime/rope.hpp"

#include <cmath>

#include "headway/plan.hpp"

namespace headway {

double scaled_frequency(double inv_freq, const RopeConfig& rope) {
  switch (rope.scaling) {
    case RopeScaling::kLinear: return inv_freq / rope.factor;
    case RopeScaling::kLlama3: {
      // Wavelengths shorter than original/high_freq_factor keep their frequency, longer than
      // original/low_freq_factor are slowed by `factor`, and those between blend linearly.
      const double pi = 3.14159265358979323846;
      const double wavelen = 2 * pi / inv_freq;
      const double original = rope.original_max_seq;
      if (wavelen < original / rope.high_freq_factor) return inv_freq;
      if (wavelen > original / rope.low_freq_factor) return inv_freq / rope.factor;
      const double smooth =
          (original / wavelen - rope.low_freq_factor) / (rope.high_freq_factor - rope.low_freq_factor);
      return (1 - smooth) * inv_freq / rope.factor + smooth * inv_freq;
    }
    case RopeScaling::kNone:
    case RopeScaling::kOther: break;
  }
  return inv_freq;
}

void rope_frequencies(const RopeConfig& rope, uint32_t head_dim, double* freqs) {
  const uint32_t half = rope_frequency_count(rope, head_dim);
  const uint32_t rotary = rope.rotary_dim ? rope.rotary_dim : head_dim;
  for (uint32_t i = 0; i < half; ++i) {
    freqs[i] = scaled_frequency(std::pow(static_cast<double>(rope.theta), -2.0 * i / rotary), rope);
  }
}

void apply_rope(float* x, uint32_t n_tokens, size_t token_stride, uint32_t n_heads, uint32_t head_dim,
                uint32_t pos0, const RopeConfig& rope, const double* freqs) {
  const uint32_t half = rope_frequency_count(rope, head_dim);
  for (uint32_t t = 0; t < n_tokens; ++t) {
    const double pos = static_cast<double>(pos0) + t;
    float* row = x + t * token_stride;
    for (uint32_t i = 0; i < half; ++i) {
      const double angle = pos * freqs[i];
      const float c = static_cast<float>(std::cos(angle));
      const float s = static_cast<float>(std::sin(angle));
      const uint32_t a = rope.style == RopeStyle::kNeox ? i : 2 * i;
      const uint32_t b = rope.style == RopeStyle::kNeox ? i + half : 2 * i + 1;
      for (uint32_t h = 0; h < n_heads; ++h) {
        float* head = row + h * head_dim;
        const float x0 = head[a], x1 = head[b];
        head[a] = x0 * c - x1 * s;
        head[b] = x1 * c + x0 * s;
      }
    }
  }
}

}  // namespace headway
