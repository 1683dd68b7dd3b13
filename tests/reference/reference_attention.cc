#include "tests/reference/reference_attention.hpp"

#include <cmath>
#include <cstring>
#include <limits>

namespace headway {
namespace test {

namespace {

uint32_t bits_of(float f) {
  uint32_t b;
  std::memcpy(&b, &f, 4);
  return b;
}

float float_of(uint32_t b) {
  float f;
  std::memcpy(&f, &b, 4);
  return f;
}

}  // namespace

namespace {

// Row i's sequence as local coordinates: its keys [k0, k1) and its position p among them.
struct RowFrame {
  uint32_t k0 = 0, k1 = 0;
  int64_t p = 0;
};

RowFrame row_frame(const RefAttention& a, uint32_t i) {
  RowFrame f;
  if (a.cu_q.empty()) {
    f.k1 = a.t_kv;
    f.p = int64_t{i} + int64_t{a.t_kv} - int64_t{a.t_q};
    return f;
  }
  const std::vector<uint32_t>& ck = a.cu_k.empty() ? a.cu_q : a.cu_k;
  uint32_t b = 0;
  while (a.cu_q[b + 1] <= i) ++b;
  f.k0 = ck[b];
  f.k1 = ck[b + 1];
  f.p = int64_t{i - a.cu_q[b]} + int64_t{f.k1 - f.k0} - int64_t{a.cu_q[b + 1] - a.cu_q[b]};
  return f;
}

}  // namespace

bool reference_key_visible(const RefAttention& a, uint32_t i, uint32_t j) {
  const RowFrame f = row_frame(a, i);
  if (j < f.k0 || j >= f.k1) return false;
  const int64_t local = int64_t{j} - f.k0;
  if (a.causal && local > f.p && local >= int64_t{a.prefix}) return false;
  if (a.window > 0 && local <= f.p - int64_t{a.window} && local >= a.sink_tokens) return false;
  if (a.window_symmetric && local >= f.p + int64_t{a.window} && local >= a.sink_tokens) return false;
  const size_t entry = size_t{i} * a.t_kv + j;
  if (!a.mask_bool.empty() && a.mask_bool[entry] == 0) return false;
  if (!a.mask_additive.empty() && a.mask_additive[entry] == -std::numeric_limits<double>::infinity()) return false;
  return true;
}

bool reference_row_sees_a_key(const RefAttention& a, uint32_t i) {
  for (uint32_t j = 0; j < a.t_kv; ++j) {
    if (reference_key_visible(a, i, j)) return true;
  }
  return false;
}

std::vector<double> reference_alibi_slopes(uint32_t n_heads, double max_bias) {
  std::vector<double> m(n_heads);
  uint32_t n0 = 1;
  while (n0 * 2 <= n_heads) n0 *= 2;
  for (uint32_t h = 0; h < n_heads; ++h) {
    m[h] =
        h < n0 ? std::pow(2.0, -max_bias * (h + 1) / n0) : std::pow(2.0, -max_bias * (2 * (h - n0) + 1) / (2.0 * n0));
  }
  return m;
}

std::vector<double> reference_attention(const RefAttention& a, const float* q, const float* k, const float* v) {
  const size_t d = a.head_dim;
  const size_t dv = a.v_head_dim != 0 ? a.v_head_dim : d;
  const size_t v_stride = a.v_row_stride != 0 ? a.v_row_stride : dv;
  const uint32_t group = a.n_heads / a.n_kv_heads;
  std::vector<double> out(size_t{a.t_q} * a.n_heads * dv, 0.0);
  std::vector<double> logits(a.t_kv);
  std::vector<double> acc(dv);
  for (uint32_t i = 0; i < a.t_q; ++i) {
    const RowFrame frame = row_frame(a, i);
    if (!reference_row_sees_a_key(a, i)) continue;  // no visible key: zeros
    for (uint32_t h = 0; h < a.n_heads; ++h) {
      double* o = &out[(size_t{i} * a.n_heads + h) * dv];
      const float* qr = q + (size_t{i} * a.n_heads + h) * d;
      const uint32_t g = h / group;
      const bool sink = !a.sinks.empty();
      double m = sink ? a.sinks[h] : -std::numeric_limits<double>::infinity();
      for (uint32_t j = 0; j < a.t_kv; ++j) {
        if (!reference_key_visible(a, i, j)) continue;
        const float* kr = k + (size_t(j) * a.n_kv_heads + g) * d;
        double s = 0.0;
        for (size_t x = 0; x < d; ++x) s += double{qr[x]} * double{kr[x]};
        s *= a.scale;
        if (a.softcap > 0.0) s = a.softcap * std::tanh(s / a.softcap);
        const int64_t distance = frame.p - (int64_t{j} - frame.k0);
        if (!a.alibi_slopes.empty()) s -= a.alibi_slopes[h] * std::fabs(static_cast<double>(distance));
        if (!a.mask_additive.empty()) s += a.mask_additive[size_t{i} * a.t_kv + j];
        logits[j] = s;
        if (std::isnan(s) || std::isnan(m)) {
          m = std::numeric_limits<double>::quiet_NaN();
        } else if (s > m) {
          m = s;
        }
      }
      double l = sink ? std::exp(a.sinks[h] - m) : 0.0;
      for (size_t x = 0; x < dv; ++x) acc[x] = 0.0;
      for (uint32_t j = 0; j < a.t_kv; ++j) {
        if (!reference_key_visible(a, i, j)) continue;
        const double p = std::exp(logits[j] - m);
        l += p;
        const float* vr = v + (size_t(j) * a.n_kv_heads + g) * v_stride + a.v_offset;
        for (size_t x = 0; x < dv; ++x) acc[x] += p * double{vr[x]};
      }
      for (size_t x = 0; x < dv; ++x) o[x] = acc[x] / l;
    }
  }
  return out;
}

uint16_t f32_to_f16_bits(float f) {
  const uint32_t x = bits_of(f);
  const uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000u);
  const uint32_t ax = x & 0x7FFFFFFFu;
  if (ax > 0x7F800000u) return static_cast<uint16_t>(sign | 0x7E00u | ((ax >> 13) & 0x3FFu));
  if (ax >= 0x477FF000u) return static_cast<uint16_t>(sign | 0x7C00u);  // >= 65520 rounds to inf
  if (ax < 0x38800000u) {
    // Below 2^-14: a subnormal half, units of 2^-24. The scaling is exact; nearbyint rounds to
    // nearest even (default rounding mode). 0x400 (rounded up to the smallest normal) is the
    // right encoding too.
    const float units = float_of(ax) * 16777216.0f;
    return static_cast<uint16_t>(sign | static_cast<uint16_t>(std::nearbyint(units)));
  }
  // Normal: rebias the exponent (127 → 15) and round the 13 dropped bits to nearest even; a carry
  // into the exponent is the right result.
  const uint32_t odd = (ax >> 13) & 1u;
  const uint32_t r = ax - 0x38000000u + 0xFFFu + odd;
  return static_cast<uint16_t>(sign | (r >> 13));
}

float f16_bits_to_f32(uint16_t h) {
  const uint32_t sign = uint32_t{h & 0x8000u} << 16;
  const uint32_t exp = (h >> 10) & 0x1Fu;
  const uint32_t mant = h & 0x3FFu;
  if (exp == 0x1F) return float_of(sign | 0x7F800000u | (mant << 13));
  if (exp == 0) {
    const float f = static_cast<float>(mant) * (1.0f / 16777216.0f);
    return sign ? -f : f;
  }
  return float_of(sign | ((exp + 112) << 23) | (mant << 13));
}

uint16_t f32_to_bf16_bits(float f) {
  const uint32_t x = bits_of(f);
  if ((x & 0x7FFFFFFFu) > 0x7F800000u) return static_cast<uint16_t>((x >> 16) | 0x40u);
  return static_cast<uint16_t>((x + 0x7FFFu + ((x >> 16) & 1u)) >> 16);
}

float bf16_bits_to_f32(uint16_t b) { return float_of(uint32_t{b} << 16); }

}  // namespace test
}  // namespace headway
