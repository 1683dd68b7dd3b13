#include "runtime/attention/rope.hpp"

#include <cmath>

#include "headway/hadamard.hpp"
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
    case RopeScaling::kYarn:
    case RopeScaling::kOther:
    case RopeScaling::kLongRope:
    case RopeScaling::kDynamic:
    case RopeScaling::kProportional: break;
  }
  return inv_freq;
}

namespace {

constexpr double kPi = 3.14159265358979323846;

// The pair index (in units of dims, over `rotary` dims) whose frequency turns `rotations` times
// over the original context.
double yarn_correction_dim(double rotations, double rotary, const RopeConfig& rope) {
  return rotary * std::log(rope.original_max_seq / (rotations * 2 * kPi)) / (2 * std::log(double{rope.theta}));
}

// YaRN: pairs below `low` keep their frequency (extrapolation), above `high` are divided by the
// factor (interpolation), a linear ramp in the pair index between.
void yarn_frequencies(const RopeConfig& rope, uint32_t rotary, uint32_t half, double* freqs) {
  double low = yarn_correction_dim(rope.beta_fast, rotary, rope);
  double high = yarn_correction_dim(rope.beta_slow, rotary, rope);
  if (rope.yarn_truncate) low = std::floor(low), high = std::ceil(high);
  low = low > 0 ? low : 0;
  high = high < rotary - 1 ? high : rotary - 1;
  if (low == high) high += 0.001;
  for (uint32_t i = 0; i < half; ++i) {
    const double keep = std::pow(static_cast<double>(rope.theta), -2.0 * i / rotary);
    double ramp = (i - low) / (high - low);
    ramp = ramp < 0 ? 0 : ramp > 1 ? 1 : ramp;
    freqs[i] = keep / rope.factor * ramp + keep * (1 - ramp);
  }
}

}  // namespace

double rope_attention_factor(const RopeConfig& rope) {
  if (rope.scaling == RopeScaling::kLongRope) {
    if (rope.attention_factor > 0) return rope.attention_factor;
    if (rope.factor <= 1.0f) return 1.0;
    return std::sqrt(1.0 + std::log(double{rope.factor}) / std::log(static_cast<double>(rope.original_max_seq)));
  }
  if (rope.scaling != RopeScaling::kYarn) return 1.0;
  if (rope.attention_factor > 0) return rope.attention_factor;
  if (rope.mscale != 0 && rope.mscale_all_dim != 0) {
    return yarn_mscale(rope.factor, rope.mscale) / yarn_mscale(rope.factor, rope.mscale_all_dim);
  }
  return yarn_mscale(rope.factor, 1.0);
}

void rope_frequencies(const RopeConfig& rope, uint32_t head_dim, double* freqs) {
  const uint32_t half = rope_pair_count(rope, head_dim);
  const uint32_t rotary = rope.rotary_dim ? rope.rotary_dim : head_dim;
  if (rope.scaling == RopeScaling::kYarn) return yarn_frequencies(rope, rotary, half, freqs);
  if (rope.scaling == RopeScaling::kLongRope) {  // the short table, then the long one
    for (uint32_t i = 0; i < half; ++i) {
      const double keep = std::pow(static_cast<double>(rope.theta), -2.0 * i / rotary);
      freqs[i] = keep / rope.short_factor[i];
      freqs[half + i] = keep / rope.long_factor[i];
    }
    return;
  }
  if (rope.scaling == RopeScaling::kProportional) {  // a frequency of 0 leaves its pair as it is
    for (uint32_t i = 0; i < half; ++i) {
      freqs[i] =
          i < rope.rotated_pairs ? std::pow(static_cast<double>(rope.theta), -2.0 * i / rotary) / rope.factor : 0.0;
    }
    return;
  }
  for (uint32_t i = 0; i < half; ++i) {
    freqs[i] = scaled_frequency(std::pow(static_cast<double>(rope.theta), -2.0 * i / rotary), rope);
  }
}

const double* rope_call_frequencies(const RopeConfig& rope, uint32_t head_dim, uint32_t end, const double* freqs,
                                    double* dynamic) {
  const uint32_t half = rope_pair_count(rope, head_dim);
  // LongRoPE: the long table for every token of a call whose last position passes the original
  // context (transformers' longrope_frequency_update, per forward call).
  if (rope.scaling == RopeScaling::kLongRope && end > rope.original_max_seq) return freqs + half;
  // Dynamic NTK past the original context: this call's frequencies from its own base.
  if (rope.scaling == RopeScaling::kDynamic && end > rope.original_max_seq) {
    const double rotary = 2.0 * half;
    const double grown = double{rope.factor} * end / rope.original_max_seq - (double{rope.factor} - 1.0);
    const double base = rope.theta * std::pow(grown, rotary / (rotary - 2.0));
    for (uint32_t i = 0; i < half; ++i) dynamic[i] = std::pow(base, -2.0 * i / rotary);
    return dynamic;
  }
  return freqs;
}

void rope_token_rotation(const RopeConfig& rope, uint32_t head_dim, uint32_t pos, const double* call_freqs,
                         TokenRotation* r) {
  r->pairs = rope_pair_count(rope, head_dim);
  r->style = rope.style;
  const double scale = rope_attention_factor(rope);
  for (uint32_t i = 0; i < r->pairs; ++i) {
    const double angle = pos * call_freqs[i];
    r->cos[i] = static_cast<float>(scale * std::cos(angle));
    r->sin[i] = static_cast<float>(scale * std::sin(angle));
  }
}

void rope_rotate_head(const TokenRotation& r, float* head) {
  const uint32_t half = r.pairs;
  if (r.style == RopeStyle::kNeox) {  // pairs (i, i + half)
    for (uint32_t i = 0; i < half; ++i) {
      const float x0 = head[i], x1 = head[i + half];
      head[i] = x0 * r.cos[i] - x1 * r.sin[i];
      head[i + half] = x1 * r.cos[i] + x0 * r.sin[i];
    }
    return;
  }
  for (uint32_t i = 0; i < half; ++i) {  // pairs (2i, 2i + 1)
    const float x0 = head[2 * i], x1 = head[2 * i + 1];
    head[2 * i] = x0 * r.cos[i] - x1 * r.sin[i];
    head[2 * i + 1] = x1 * r.cos[i] + x0 * r.sin[i];
  }
}

void apply_rope(float* x, uint32_t n_tokens, size_t token_stride, uint32_t n_heads, uint32_t head_dim, uint32_t pos0,
                uint32_t end, const RopeConfig& rope, const double* freqs) {
  if (rope_pair_count(rope, head_dim) == 0) return;
  double dynamic[kMaxHeadDim / 2];
  const double* call_freqs = rope_call_frequencies(rope, head_dim, end, freqs, dynamic);
  TokenRotation r;
  for (uint32_t t = 0; t < n_tokens; ++t) {
    rope_token_rotation(rope, head_dim, pos0 + t, call_freqs, &r);
    float* row = x + t * token_stride;
    for (uint32_t h = 0; h < n_heads; ++h) rope_rotate_head(r, row + h * head_dim);
  }
}

Status rotate_last_queries(const char* who, const Plan& plan, const double* freqs, uint32_t position, uint32_t size,
                           float* q, size_t q_token_stride, uint32_t t_q) {
  HEADWAY_RETURN_IF_ERROR(check_last_queries(who, plan, size, q, q_token_stride, t_q));
  rotate_queries_unchecked(plan, freqs, position - t_q, position, q, q_token_stride, t_q);
  return Status();
}

Status check_last_queries(const char* who, const Plan& plan, uint32_t size, const float* q, size_t q_token_stride,
                          uint32_t t_q) {
  if (q == nullptr) return Status::error(Code::kInvalidArgument, "%s: rotate_queries: q is null", who);
  if (t_q == 0 || t_q > size) {
    return Status::error(Code::kInvalidArgument,
                         "%s: rotate_queries of %u tokens: the queries are those of the last 1..%u tokens appended",
                         who, t_q, size);
  }
  if (q_token_stride < plan.q_width) {
    return Status::error(Code::kInvalidArgument, "%s: rotate_queries: q_token_stride %zu is below the query width %u",
                         who, q_token_stride, plan.q_width);
  }
  return Status();
}

void rotate_queries_unchecked(const Plan& plan, const double* freqs, uint32_t first_position, uint32_t call_end,
                              float* q, size_t q_token_stride, uint32_t t_q) {
  const Config& c = plan.config;
  apply_rope(q, t_q, q_token_stride, c.n_heads, plan.head_dim, first_position, call_end, c.rope, freqs);
  if (c.kv_rotation == KvRotation::kHadamard) hadamard_rotate_heads(q, t_q, q_token_stride, c.n_heads, plan.head_dim);
}

}  // namespace headway
