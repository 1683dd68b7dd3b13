// The attention kernels on a Cortex-M, under qemu-system-arm: the cases of
// tests/reference/attention_cases.hpp that fit the board (runs_on_baremetal there) through the public
// attend() and through the kernel entry points with each tiling forced (prefill, decode, the
// runtime-head_dim code, split-KV partials + merge), held against the
// double-precision reference computed on the build machine (kernel_golden.h); then the same for
// multi-head latent attention's call (mla_cases.hpp: head_dim 288, one kv head, V the same rows
// as K, passed as one pointer). Heap-free: static buffers sized for the largest case. Prints one
// line per check and a summary; exits 0 when every check passed, 1 otherwise.
//
// Tolerances (inputs in [-2, 2], K/V rounded to their storage type before the reference sees
// them), as the hosted kernel suite: max |kernel − reference| <= 1e-4 (f32 KV), 2e-3 (f16),
// 3e-2 (bf16); rows that see no key exactly 0; nothing written into O's row padding.
#include <cmath>
#include <cstdint>
#include <cstring>

#include "headway/attention.hpp"
#include "headway/detail/ggml_blocks.hpp"
#include "headway/quantize.hpp"
#include "kernel_golden.h"
#include "kernel_path.hpp"
#include "semihosting.hpp"
#include "simd/attention/attention.h"
#include "simd/matmul/matmul.h"
#include "tests/baremetal/mla_cases.hpp"
#include "tests/reference/attention_cases.hpp"
#include "tests/reference/reference_attention.hpp"

namespace bm = headway::test::baremetal;
namespace hs = headway::simd;
namespace ht = headway::test;

namespace {

constexpr uint32_t kPad = 16;  // floats of canary after each O row (attention_f32 variants)
constexpr float kCanary = 1234.5f;
constexpr uint32_t kSplitChunk = 16;

// The largest of f over the cases this harness runs: the static buffers' sizes.
constexpr uint64_t max_of(uint64_t (*f)(const ht::AttentionCase&)) {
  uint64_t m = 0;
  for (const ht::AttentionCase& c : ht::kAttentionCases) {
    if (ht::runs_on_baremetal(c) && f(c) > m) m = f(c);
  }
  for (const ht::AttentionCase& c : bm::kMlaCases) m = f(c) > m ? f(c) : m;
  return m;
}
constexpr uint64_t q_elems(const ht::AttentionCase& c) { return uint64_t{c.t_q} * c.n_heads * c.head_dim; }
constexpr uint64_t kv_elems(const ht::AttentionCase& c) { return uint64_t{c.t_kv} * c.n_kv_heads * c.head_dim; }
constexpr uint64_t o_elems(const ht::AttentionCase& c) { return uint64_t{c.t_q} * (c.n_heads * c.head_dim + kPad); }
constexpr uint64_t split_rows(const ht::AttentionCase& c) {
  return uint64_t{(c.t_kv + kSplitChunk - 1) / kSplitChunk} * c.t_q * (c.n_heads / c.n_kv_heads);
}
constexpr uint64_t split_o(const ht::AttentionCase& c) { return split_rows(c) * c.head_dim; }
constexpr uint64_t n_heads(const ht::AttentionCase& c) { return c.n_heads; }
constexpr uint64_t head_dim(const ht::AttentionCase& c) { return c.head_dim; }
constexpr uint64_t mask_entries(const ht::AttentionCase& c) {
  return ht::case_has_mask(c) ? uint64_t{c.t_q} * c.t_kv : 1;
}

constexpr size_t kWorkspaceBytes = 256 * 1024;

alignas(64) float g_q[max_of(q_elems)];
alignas(64) uint8_t g_k[max_of(kv_elems) * 4];
alignas(64) uint8_t g_v[max_of(kv_elems) * 4];
alignas(64) float g_o[max_of(o_elems)];
alignas(64) uint8_t g_workspace[kWorkspaceBytes];
alignas(64) float g_pm[max_of(split_rows)];
alignas(64) float g_pl[max_of(split_rows)];
alignas(64) float g_po[max_of(split_o)];
float g_sinks[max_of(n_heads)];
float g_slopes[max_of(n_heads)];
uint8_t g_mask_bool[max_of(mask_entries)];
float g_mask_additive[max_of(mask_entries)];

// What the calls read as V: g_v, or g_k itself for the MLA cases (one latent row is K and V).
const uint8_t* g_v_in = g_v;

uint32_t g_checks = 0;
uint32_t g_failures = 0;

// The goldens read the same rounded (or dequantized) K/V: the block formats widen exactly, as f32.
double tolerance(headway::DType kv) {
  return kv == headway::DType::kF32 || headway::dtype_is_block(kv) ? 1e-4 : kv == headway::DType::kF16 ? 2e-3 : 3e-2;
}

// v_is_k: V is K (the MLA cases); the case's V is drawn and dropped.
void load_inputs(const ht::AttentionCase& c, bool v_is_k) {
  g_v_in = v_is_k ? g_k : g_v;
  for (uint32_t h = 0; h < c.n_heads; ++h) g_sinks[h] = ht::case_sink(c, h);
  for (uint32_t h = 0; h < c.n_heads; ++h) g_slopes[h] = ht::case_alibi_slope(c, h);
  ht::generate_mask(c, [](uint64_t i, float e) {
    g_mask_bool[i] = e == 0.0f ? 1 : 0;
    g_mask_additive[i] = e;
  });
  ht::generate_inputs(c, [&](int which, uint64_t i, float x) {
    if (which == 0) {
      g_q[i] = x;
      return;
    }
    if (which == 2 && v_is_k) return;
    uint8_t* dst = which == 1 ? g_k : g_v;
    if (headway::dtype_is_block(c.kv)) {  // a row of head_dim values, then quantized as one
      static float row[max_of(head_dim)];
      row[i % c.head_dim] = x;
      if (i % c.head_dim != c.head_dim - 1) return;
      const size_t bytes = headway::dtype_row_bytes(c.kv, c.head_dim);
      (void)headway::quantize_row(headway::quant_type_of(c.kv), row, c.head_dim, dst + i / c.head_dim * bytes, bytes);
    } else if (c.kv == headway::DType::kF32) {
      std::memcpy(dst + i * 4, &x, 4);
    } else {
      const uint16_t h = c.kv == headway::DType::kF16 ? ht::f32_to_f16_bits(x) : ht::f32_to_bf16_bits(x);
      std::memcpy(dst + i * 2, &h, 2);
    }
  });
}

// Compares O (row stride `stride` floats) with the golden output g of case c and reports.
void check(const ht::AttentionCase& c, const bm::Golden& g, const char* variant, const char* kernel, uint32_t stride) {
  const uint32_t width = c.n_heads * c.head_dim;
  double max_err = 0.0;
  uint32_t bad_zero = 0, bad_pad = 0, non_finite = 0;
  for (uint32_t t = 0; t < c.t_q; ++t) {
    for (uint32_t x = 0; x < width; ++x) {
      const float got = g_o[size_t{t} * stride + x];
      const float want = g.o[size_t{t} * width + x];
      if (!g.visible[t]) {
        if (!(got == 0.0f)) ++bad_zero;
        continue;
      }
      if (!std::isfinite(got)) {
        ++non_finite;
        continue;
      }
      const double err = std::fabs(double{got} - double{want});
      if (err > max_err) max_err = err;
    }
    for (uint32_t x = width; x < stride; ++x) {
      if (!(g_o[size_t{t} * stride + x] == kCanary)) ++bad_pad;
    }
  }
  const bool ok = max_err <= tolerance(c.kv) && bad_zero == 0 && bad_pad == 0 && non_finite == 0;
  ++g_checks;
  if (!ok) ++g_failures;
  cortex_m::Text line;
  line.str(ok ? "ok   " : "FAIL ").str(c.name).str(" [").str(variant).str(", ").str(kernel).str("] max_err ");
  line.sci(max_err);
  if (bad_zero) line.str(" nonzero-masked ").u64(bad_zero);
  if (bad_pad) line.str(" padding-written ").u64(bad_pad);
  if (non_finite) line.str(" non-finite ").u64(non_finite);
  line.str("\n").print();
}

// The kernels' f16 widening (simd::widen_f16; on Helium a hand-encoded VCVTB, which binutils 2.40
// mis-assembles from its mnemonic) against the reference's, bit for bit, on all 65536 values and
// a tail: a wrong encoding or register gives wrong values here.
void check_f16_widening() {
  constexpr uint32_t kChunk = 1027;  // not a multiple of the vector: each chunk ends in a tail
  static uint16_t x[kChunk];
  static float y[kChunk];
  uint32_t wrong = 0;
  for (uint32_t first = 0; first < 65536; first += kChunk) {
    const uint32_t n = 65536 - first < kChunk ? 65536 - first : kChunk;
    for (uint32_t i = 0; i < n; ++i) x[i] = static_cast<uint16_t>(first + i);
    hs::widen_f16(x, y, n);
    for (uint32_t i = 0; i < n; ++i) {
      const float want = ht::f16_bits_to_f32(x[i]);
      if (std::isnan(want) ? !std::isnan(y[i]) : std::memcmp(&want, &y[i], 4) != 0) ++wrong;
    }
  }
  ++g_checks;
  if (wrong != 0) ++g_failures;
  cortex_m::Text()
      .str(wrong == 0 ? "ok   " : "FAIL ")
      .str("f16 widening, all 65536 values: ")
      .u64(wrong)
      .str(" wrong\n")
      .print();
}

// The projections' kernel over weights in ggml's blocks (simd/matmul/matmul_blocks-inl.h; on Helium the
// integer decode of matmul_helium-inl.h for q8_0 and q4_0) against a double dot product with W as
// ggml_blocks decodes it: GEMV and GEMM, one block to several, a row range that starts past 0. Where
// the kernel says it quantizes x (matmul_x_code_max), the reference's x is quantized alike: per
// block of 32, d = max|x| / code_max, codes x · (code_max / max|x|) rounded to nearest even.
// Tolerance 1e-5 relative to the sum of |terms|.
void check_matmul_blocks() {
  constexpr size_t kMaxT = 3, kMaxIn = 512, kMaxOut = 7;
  static float x[kMaxT * kMaxIn];
  static double xq[kMaxIn];
  static uint8_t w[kMaxOut * kMaxIn / 32 * 34];  // q8_0: the most bytes per value of these types
  static float wf[kMaxOut * kMaxIn];
  static float y[kMaxT * kMaxOut];
  struct Format {
    hs::WeightType type;
    int f16_at[2];  // the f16 fields (scales, mins), -1: none
  };
  const Format formats[] = {{hs::WeightType::kQ8_0, {0, -1}},
                            {hs::WeightType::kQ4_0, {0, -1}},
                            {hs::WeightType::kQ4_1, {0, 2}},
                            {hs::WeightType::kQ6_K, {208, -1}}};
  uint32_t wrong = 0, runs = 0, quantized = 0;
  for (const Format& f : formats) {
    const headway::DTypeTraits& type = headway::dtype_traits(f.type);
    const size_t bv = type.block_values, bb = type.block_bytes;
    for (size_t blocks : {size_t{1}, size_t{2}, size_t{9}}) {
      const size_t in = blocks * bv;
      if (in > kMaxIn) continue;
      ht::Rng rng(in * 13 + type.ggml);
      const size_t row_bytes = blocks * bb;
      for (size_t i = 0; i < kMaxOut * row_bytes; ++i) w[i] = static_cast<uint8_t>(rng.next());
      for (size_t b = 0; b < kMaxOut * blocks; ++b) {
        for (int at : f.f16_at) {
          if (at < 0) continue;
          const uint16_t h =
              ht::f32_to_f16_bits(static_cast<float>(static_cast<int32_t>(rng.next() >> 58) - 32) / 512.0f);
          std::memcpy(&w[b * bb + static_cast<size_t>(at)], &h, 2);
        }
        headway::ggml_blocks::decode_block(f.type, &w[b * bb], &wf[b * bv]);
      }
      for (size_t t : {size_t{1}, size_t{3}}) {
        for (size_t i = 0; i < t * in; ++i)
          x[i] = static_cast<float>(static_cast<int32_t>(rng.next() >> 57) - 64) / 32.0f;
        x[in / 2] = 4.0f;  // one large value: a coarse code step for its block
        for (size_t i = 0; i < t * kMaxOut; ++i) y[i] = kCanary;
        hs::MatmulArgs a;
        a.x = x;
        a.x_stride = in;
        a.w = w;
        a.w_type = f.type;
        a.w_stride = in;
        a.y = y;
        a.y_stride = kMaxOut;
        a.t = t;
        a.in = in;
        a.out = kMaxOut;
        hs::matmul(a, 1, kMaxOut);
        const int code_max = hs::matmul_x_code_max(a);
        ++runs;
        quantized += code_max != 0;
        for (size_t i = 0; i < t; ++i) {
          const float* xi = x + i * in;
          for (size_t k = 0; k < in; ++k) xq[k] = xi[k];
          for (size_t b = 0; code_max != 0 && b < in / 32; ++b) {
            float amax = 0.0f;
            for (size_t k = 32 * b; k < 32 * b + 32; ++k) amax = std::fabs(xi[k]) > amax ? std::fabs(xi[k]) : amax;
            const float d = amax / static_cast<float>(code_max);
            const float id = amax != 0.0f ? static_cast<float>(code_max) / amax : 0.0f;
            for (size_t k = 32 * b; k < 32 * b + 32; ++k) {
              volatile float scaled = xi[k] * id;  // rounded to f32 first, as the kernels do
              // 1.5 · 2^23 added and taken away rounds to a whole number, ties to even.
              const float code = (scaled + 12582912.0f) - 12582912.0f;
              xq[k] = double{d} * double{code};
            }
          }
          if (!(y[i * kMaxOut] == kCanary)) ++wrong;  // row 0 is not asked for
          for (size_t o = 1; o < kMaxOut; ++o) {
            double want = 0.0, scale = 0.0;
            for (size_t k = 0; k < in; ++k) {
              want += xq[k] * double{wf[o * in + k]};
              scale += std::fabs(xq[k] * double{wf[o * in + k]});
            }
            if (!(std::fabs(double{y[i * kMaxOut + o]} - want) <= 1e-5 * scale + 1e-30)) ++wrong;
          }
        }
        // Another split of the rows gives bitwise the same y; a NaN in x gives rows that are NaN.
        static float y2[kMaxT * kMaxOut];
        a.y = y2;
        hs::matmul(a, 4, kMaxOut);
        hs::matmul(a, 1, 4);
        for (size_t i = 0; i < t; ++i) wrong += std::memcmp(&y[i * kMaxOut + 1], &y2[i * kMaxOut + 1], 24) != 0;
        x[t * in - 3] = NAN;  // in the last token
        hs::matmul(a, 1, kMaxOut);
        for (size_t o = 1; o < kMaxOut; ++o) wrong += !std::isnan(y2[(t - 1) * kMaxOut + o]);
      }
    }
  }
  ++g_checks;
  if (wrong != 0) ++g_failures;
  cortex_m::Text()
      .str(wrong == 0 ? "ok   " : "FAIL ")
      .str("matmul over ggml blocks (")
      .str(hs::matmul_target_name())
      .str("), q8_0/q4_0/q4_1/q6_K, GEMV and GEMM, ")
      .u64(runs)
      .str(" runs (")
      .u64(quantized)
      .str(" with x quantized): ")
      .u64(wrong)
      .str(" wrong\n")
      .print();
}

// The projections' kernel (simd::matmul) against a double-precision dot product written here:
// GEMV and GEMM, `in` on and off the vector width (Helium's predicated tail), each weight dtype,
// a row range that starts past 0. Inputs are multiples of 1/64 in [-2, 2] (exact in f16 and bf16),
// so the reference sees the weights the kernel reads. Tolerance 1e-5 relative to the sum of |terms|.
void check_matmul() {
  constexpr size_t kMaxT = 5, kMaxIn = 37, kMaxOut = 7;
  static float x[kMaxT * kMaxIn];
  static uint8_t w[kMaxOut * kMaxIn * 4];
  static float wf[kMaxOut * kMaxIn];  // the weights as the reference reads them
  static float y[kMaxT * kMaxOut];
  uint32_t wrong = 0, runs = 0;
  const hs::WeightType types[] = {hs::WeightType::kF32, hs::WeightType::kF16, hs::WeightType::kBF16};
  for (size_t t : {size_t{1}, size_t{5}}) {
    for (size_t in : {size_t{1}, size_t{3}, size_t{16}, size_t{17}, size_t{37}}) {
      for (const hs::WeightType type : types) {
        ht::Rng rng(t * 131 + in * 7 + static_cast<size_t>(type));
        const auto next = [&rng] { return static_cast<float>(static_cast<int32_t>(rng.next() >> 57) - 64) / 32.0f; };
        for (size_t i = 0; i < t * in; ++i) x[i] = next();
        for (size_t i = 0; i < kMaxOut * in; ++i) {
          wf[i] = next();
          if (type == hs::WeightType::kF32) {
            std::memcpy(w + 4 * i, &wf[i], 4);
          } else {
            const uint16_t h = type == hs::WeightType::kF16 ? ht::f32_to_f16_bits(wf[i]) : ht::f32_to_bf16_bits(wf[i]);
            std::memcpy(w + 2 * i, &h, 2);
          }
        }
        for (size_t i = 0; i < t * kMaxOut; ++i) y[i] = kCanary;
        hs::MatmulArgs a;
        a.x = x;
        a.x_stride = in;
        a.w = w;
        a.w_type = type;
        a.w_stride = in;
        a.y = y;
        a.y_stride = kMaxOut;
        a.t = t;
        a.in = in;
        a.out = kMaxOut;
        hs::matmul(a, 1, kMaxOut);
        ++runs;
        for (size_t i = 0; i < t; ++i) {
          if (!(y[i * kMaxOut] == kCanary)) ++wrong;  // row 0 is not asked for
          for (size_t o = 1; o < kMaxOut; ++o) {
            double want = 0.0, scale = 0.0;
            for (size_t k = 0; k < in; ++k) {
              want += double{x[i * in + k]} * double{wf[o * in + k]};
              scale += std::fabs(double{x[i * in + k]} * double{wf[o * in + k]});
            }
            if (!(std::fabs(double{y[i * kMaxOut + o]} - want) <= 1e-5 * (scale + 1.0))) ++wrong;
          }
        }
      }
    }
  }
  ++g_checks;
  if (wrong != 0) ++g_failures;
  cortex_m::Text()
      .str(wrong == 0 ? "ok   " : "FAIL ")
      .str("matmul (")
      .str(hs::matmul_target_name())
      .str("), GEMV and GEMM, in 1..37, f32/f16/bf16 weights, ")
      .u64(runs)
      .str(" runs: ")
      .u64(wrong)
      .str(" wrong\n")
      .print();
}

void fill_o(uint32_t rows, uint32_t stride) {
  for (size_t i = 0; i < size_t{rows} * stride; ++i) g_o[i] = kCanary;
}

hs::AttentionArgs args_for(const ht::AttentionCase& c, uint32_t o_stride) {
  hs::AttentionArgs a;
  a.q = g_q;
  a.q_token_stride = size_t{c.n_heads} * c.head_dim;
  a.o = g_o;
  a.o_token_stride = o_stride;
  a.k = g_k;
  a.v = g_v_in;
  a.kv_type = c.kv;
  const size_t row_values = headway::dtype_row_values(c.kv, c.head_dim);  // block formats: whole blocks
  a.kv_row_stride = size_t{c.n_kv_heads} * row_values;                    // [t_kv, n_kv_heads, d]
  a.kv_head_stride = row_values;
  a.t_q = c.t_q;
  a.t_kv = c.t_kv;
  a.n_heads = c.n_heads;
  a.n_kv_heads = c.n_kv_heads;
  a.head_dim = c.head_dim;
  a.scale = c.scale != 0.0f ? c.scale : 1.0f / std::sqrt(static_cast<float>(c.head_dim));
  a.softcap = c.softcap;
  a.causal = c.causal;
  a.window = c.window;
  a.sinks = ht::case_has_sinks(c) ? g_sinks : nullptr;
  a.sink_tokens = c.sink_tokens;
  a.alibi_slopes = c.alibi ? g_slopes : nullptr;
  a.prefix = c.prefix;
  a.window_symmetric = c.window_symmetric;
  a.mask_bool = c.mask == ht::CaseMask::kBool ? g_mask_bool : nullptr;
  a.mask_additive = c.mask == ht::CaseMask::kAdditive ? g_mask_additive : nullptr;
  a.mask_row_stride = c.t_kv;
  return a;
}

void run_attend(const ht::AttentionCase& c, const bm::Golden& g) {
  headway::AttentionShape shape{c.t_q, c.t_kv, c.n_heads, c.n_kv_heads, c.head_dim};
  headway::AttentionParams params;
  params.scale = c.scale;
  params.softcap = c.softcap;
  params.causal = c.causal;
  params.window = c.window;
  params.sinks = ht::case_has_sinks(c) ? g_sinks : nullptr;
  params.sink_tokens = c.sink_tokens;
  params.alibi_slopes = c.alibi ? g_slopes : nullptr;
  params.prefix = c.prefix;
  params.window_symmetric = c.window_symmetric;
  params.mask_bool = c.mask == ht::CaseMask::kBool ? g_mask_bool : nullptr;
  params.mask_additive = c.mask == ht::CaseMask::kAdditive ? g_mask_additive : nullptr;
  const uint32_t width = c.n_heads * c.head_dim;
  fill_o(c.t_q, width);
  const headway::Result<size_t> ws = headway::attention_workspace_bytes(shape, 1);
  headway::Status s = ws.ok() ? headway::Status() : ws.status();
  if (s.ok() && *ws > kWorkspaceBytes) {
    s = headway::Status::error(headway::Code::kInternal, "workspace %u bytes > %u", unsigned(*ws),
                               unsigned(kWorkspaceBytes));
  }
  if (s.ok()) s = headway::attend(g_q, g_k, g_v_in, c.kv, g_o, shape, params, nullptr, g_workspace, *ws);
  if (!s.ok()) {
    ++g_checks;
    ++g_failures;
    cortex_m::Text().str("FAIL ").str(c.name).str(" [attend] ").str(s.message()).str("\n").print();
    return;
  }
  check(c, g, "attend", "runtime", width);
}

void run_kernel(const ht::AttentionCase& c, const bm::Golden& g, const char* variant, hs::AttentionTiling tiling,
                bool generic_only) {
  const uint32_t stride = c.n_heads * c.head_dim + kPad;
  fill_o(c.t_q, stride);
  hs::AttentionArgs a = args_for(c, stride);
  a.tiling = tiling;
  a.generic_only = generic_only;
  hs::attention_f32(a, 0, c.n_kv_heads, 0, c.t_q, g_workspace, kWorkspaceBytes);
  check(c, g, variant, hs::attention_kernel_name(a), stride);
}

void run_split(const ht::AttentionCase& c, const bm::Golden& g) {
  const uint32_t stride = c.n_heads * c.head_dim + kPad;
  fill_o(c.t_q, stride);
  const hs::AttentionArgs a = args_for(c, stride);
  const uint32_t n_chunks = (c.t_kv + kSplitChunk - 1) / kSplitChunk;
  const hs::AttentionPartials p{g_pm, g_pl, g_po};
  for (uint32_t kv = 0; kv < c.n_kv_heads; ++kv) {
    for (uint32_t i = 0; i < n_chunks; ++i)
      hs::attention_partial_f32(a, kv, i, kSplitChunk, p, g_workspace, kWorkspaceBytes);
    hs::attention_merge_f32(a, kv, n_chunks, p);
  }
  check(c, g, "split-KV chunks of 16", "partial+merge", stride);
}

// Every path of one case: attend(), each tiling forced, the generic code where a specialized one
// exists, split-KV where its partials fit.
void run_case(const ht::AttentionCase& c, const bm::Golden& g, bool v_is_k) {
  load_inputs(c, v_is_k);
  run_attend(c, g);
  run_kernel(c, g, "prefill tiling", hs::AttentionTiling::kPrefill, false);
  run_kernel(c, g, "decode tiling", hs::AttentionTiling::kDecode, false);
  if (c.head_dim == 64 || c.head_dim == 128) run_kernel(c, g, "generic code", hs::AttentionTiling::kAuto, true);
  if (c.t_q * (c.n_heads / c.n_kv_heads) <= 32) run_split(c, g);
}

}  // namespace

int main() {
  uint32_t cases = 0;
  for (const ht::AttentionCase& c : ht::kAttentionCases) cases += ht::runs_on_baremetal(c);
  cortex_m::Text()
      .str("headway kernel harness: ")
      .u64(cases)
      .str(" of ")
      .u64(ht::kAttentionCaseCount)
      .str(" cases of tests/reference/attention_cases.hpp and ")
      .u64(bm::kMlaCaseCount)
      .str(" MLA cases (d288, V = K), kernels: ")
      .str(hs::attention_target_name())
      .str("\n")
      .print();
  if (!cortex_m::kernel_path_is_expected(hs::attention_target_name())) return 1;
  check_f16_widening();
  check_matmul();
  check_matmul_blocks();
  for (uint32_t n = 0; n < ht::kAttentionCaseCount; ++n) {
    const ht::AttentionCase& c = ht::kAttentionCases[n];
    if (ht::runs_on_baremetal(c)) run_case(c, bm::kGolden[n], false);
  }
  for (uint32_t n = 0; n < bm::kMlaCaseCount; ++n) run_case(bm::kMlaCases[n], bm::kMlaGolden[n], true);
  cortex_m::Text()
      .str(g_failures == 0 ? "PASS" : "FAIL")
      .str(": ")
      .u64(g_checks - g_failures)
      .str("/")
      .u64(g_checks)
      .str(" kernel checks match the double reference\n")
      .print();
  return g_failures == 0 ? 0 : 1;
}
