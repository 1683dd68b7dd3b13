// Instruction counts of the kernels on a Cortex-M under qemu-system-arm -icount shift=0
// (toolchains/cortex-m/instruction_count.hpp): `make bench-baremetal` builds this image with the
// Helium kernels and with Highway's SCALAR ones and tabulates both (bench/baremetal/compare.sh).
// The shapes are the firmware's (examples/baremetal/tiny_model.hpp: 4 query heads over 2 kv heads
// of head_dim 64, d_model 128, f16 weights):
//   decode    1 query token against 512 keys, K/V f32 and f16
//   prefill   64 tokens against themselves, causal, K/V f32 and f16
//   GEMV      t = 1 through the Session's largest projections, Wq [q_width, d_model] and
//             Wo [d_model, q_width] in f16, and the same shapes in q8_0 blocks (the whole
//             decoder's, tiny_decoder.hpp: its Wq, gate, up and LM head are [256, 128], its Wo
//             and down [128, 256]) and in q4_0 blocks, one simd::matmul call over all their rows
// K/V sit in the cache's layout, [n_kv_heads, rows, head_dim]. Inputs come from a fixed LCG,
// values in [-1, 1); buffers are static (no heap: the link checks it). One line per case:
//   case <name>: <N> instructions per call (median of 5 calls; min <a>, max <b>), path <target>, kernel <k>
// Instructions, not cycles (the M55 issues a 128-bit MVE instruction in two beats). The outputs
// are checked for bounds only (an attention row is a convex combination of V rows, so within
// [-1, 1]); the kernel harness checks their values.
#include <cmath>
#include <cstddef>
#include <cstdint>

#include "examples/baremetal/tiny_model.hpp"
#include "headway/detail/attention_policy.hpp"
#include "headway/dtype_convert.hpp"
#include "headway/plan.hpp"
#include "headway/quantize.hpp"
#include "instruction_count.hpp"
#include "semihosting.hpp"
#include "simd/attention/attention.h"
#include "simd/matmul/matmul.h"

#ifndef HEADWAY_BENCH_TARGET
#define HEADWAY_BENCH_TARGET "arm"
#endif

namespace {

namespace hs = headway::simd;

constexpr headway::Plan kPlan = headway::plan_for(tiny::config(), tiny::options());
constexpr uint32_t kHeads = kPlan.config.n_heads;
constexpr uint32_t kKvHeads = kPlan.config.kv_heads();
constexpr uint32_t kHeadDim = kPlan.head_dim;
constexpr uint32_t kDModel = kPlan.config.d_model;
constexpr uint32_t kQWidth = kPlan.q_width;
static_assert(kHeads == 4 && kKvHeads == 2 && kHeadDim == 64 && kDModel == 128 && kQWidth == 256);

constexpr uint32_t kDecodeKeys = 512;
constexpr uint32_t kPrefillTokens = 64;
constexpr uint32_t kRepetitions = 5;

constexpr size_t kKvValues = size_t{kKvHeads} * kDecodeKeys * kHeadDim;
static_assert(kPrefillTokens <= kDecodeKeys);
constexpr size_t kQValues = size_t{kPrefillTokens} * kHeads * kHeadDim;
constexpr size_t kScratchBytes = headway::attention_scratch_bytes(kHeadDim, kHeads / kKvHeads);
constexpr size_t kGemvMax = kQWidth > kDModel ? kQWidth : kDModel;

alignas(64) float g_q[kQValues];
alignas(64) float g_o[kQValues];
alignas(64) float g_k_f32[kKvValues];
alignas(64) float g_v_f32[kKvValues];
alignas(64) uint16_t g_k_f16[kKvValues];
alignas(64) uint16_t g_v_f16[kKvValues];
alignas(64) uint8_t g_scratch[kScratchBytes];
alignas(64) float g_x[kGemvMax];
alignas(64) float g_y[kGemvMax];
alignas(64) uint16_t g_w[size_t{kQWidth} * kDModel];          // Wq [q_width, d_model] or Wo [d_model, q_width]
constexpr size_t kQ8RowBytes = size_t{kDModel} / 32 * 34;     // q8_0: 34 bytes per 32 values
alignas(64) uint8_t g_w_q8_0[size_t{kQWidth} * kQ8RowBytes];  // the same shapes in q8_0 (or q4_0) blocks

uint32_t g_failures = 0;

// Numerical Recipes' LCG; the top 24 bits as a value in [-1, 1).
struct Lcg {
  uint32_t state;
  float next() {
    state = state * 1664525u + 1013904223u;
    return static_cast<float>(state >> 8) * (2.0f / 16777216.0f) - 1.0f;
  }
};

void fill(float* v, size_t n, uint32_t seed) {
  Lcg r{seed};
  for (size_t i = 0; i < n; ++i) v[i] = r.next();
}

void to_f16(const float* src, uint16_t* dst, size_t n) {
  for (size_t i = 0; i < n; ++i) dst[i] = headway::f32_to_f16_bits(src[i]);
}

struct Count {
  uint64_t median, min, max;
};

// Each call timed on its own; deterministic under -icount, so the spread is the tick's phase.
template <typename Call>
Count count(Call&& call) {
  uint64_t n[kRepetitions];
  for (uint64_t& v : n) {
    const uint64_t t0 = cortex_m::systick_ticks();
    call();
    v = cortex_m::instructions_since(t0);
  }
  for (uint32_t i = 1; i < kRepetitions; ++i) {  // insertion sort
    for (uint32_t j = i; j > 0 && n[j - 1] > n[j]; --j) {
      const uint64_t t = n[j];
      n[j] = n[j - 1];
      n[j - 1] = t;
    }
  }
  return {n[kRepetitions / 2], n[0], n[kRepetitions - 1]};
}

void report(const char* name, const Count& c, const char* path, const char* kernel) {
  cortex_m::Text t;
  t.str("case ")
      .str(name)
      .str(": ")
      .u64(c.median)
      .str(" instructions per call (median of ")
      .u64(kRepetitions)
      .str(" calls; min ")
      .u64(c.min)
      .str(", max ")
      .u64(c.max)
      .str("), path ")
      .str(path)
      .str(", kernel ")
      .str(kernel)
      .str("\n")
      .print();
}

// Every value finite and |v| <= bound (plus f32 rounding); a miss fails the run.
void check_bounds(const char* name, const float* v, size_t n, float bound) {
  size_t bad = 0;
  for (size_t i = 0; i < n; ++i) bad += !(std::fabs(v[i]) <= bound * 1.0001f);
  if (bad == 0) return;
  ++g_failures;
  cortex_m::Text().str("FAIL ").str(name).str(": ").u64(bad).str(" outputs out of bounds or not finite\n").print();
}

void bench_attention(const char* name, uint32_t t_q, uint32_t t_kv, hs::KvType kv_type) {
  const bool f16 = kv_type == hs::KvType::kF16;
  hs::AttentionArgs a;
  a.q = g_q;
  a.q_token_stride = size_t{kHeads} * kHeadDim;
  a.o = g_o;
  a.o_token_stride = size_t{kHeads} * kHeadDim;
  a.k = f16 ? static_cast<const void*>(g_k_f16) : g_k_f32;
  a.v = f16 ? static_cast<const void*>(g_v_f16) : g_v_f32;
  a.kv_type = kv_type;
  a.kv_head_stride = size_t{t_kv} * kHeadDim;  // [n_kv_heads, rows = t_kv, head_dim]
  a.kv_row_stride = kHeadDim;
  a.t_q = t_q;
  a.t_kv = t_kv;
  a.n_heads = kHeads;
  a.n_kv_heads = kKvHeads;
  a.head_dim = kHeadDim;
  a.scale = 1.0f / std::sqrt(static_cast<float>(kHeadDim));
  a.causal = true;
  const char* error = hs::attention_args_error(a);
  if (error == nullptr && hs::attention_scratch_bytes(kHeadDim, kHeads / kKvHeads) > sizeof(g_scratch)) {
    error = "scratch too small";
  }
  if (error != nullptr) {
    ++g_failures;
    cortex_m::Text().str("FAIL ").str(name).str(": ").str(error).str("\n").print();
    return;
  }
  const Count c = count([&] { hs::attention_f32(a, 0, kKvHeads, 0, t_q, g_scratch, sizeof(g_scratch)); });
  report(name, c, hs::attention_target_name(), hs::attention_kernel_name(a));
  check_bounds(name, g_o, size_t{t_q} * kHeads * kHeadDim, 1.0f);
}

// y [out] = W [out, in] · x [in], W in f16, q8_0 or q4_0 (ggml's blocks, the library's quantizer).
void bench_gemv(const char* name, uint32_t out, uint32_t in, uint32_t seed, hs::WeightType type) {
  float w[256];  // one row at a time through f32: the weights are drawn like the other inputs
  static_assert(kGemvMax <= 256);
  const bool blocks = type != hs::WeightType::kF16;
  const headway::QuantType quant = headway::quant_type_of(type);
  const size_t row_bytes = headway::quantized_row_bytes(quant, in);
  Lcg r{seed};
  for (uint32_t o = 0; o < out; ++o) {
    for (uint32_t i = 0; i < in; ++i) w[i] = r.next();
    if (!blocks) {
      to_f16(w, g_w + size_t{o} * in, in);
    } else if (!headway::quantize_row(quant, w, in, g_w_q8_0 + o * row_bytes, row_bytes).ok()) {
      ++g_failures;
      cortex_m::Text().str("FAIL ").str(name).str(": quantization\n").print();
      return;
    }
  }
  fill(g_x, in, seed + 1);
  hs::MatmulArgs m;
  m.x = g_x;
  m.x_stride = in;
  m.w = blocks ? static_cast<const void*>(g_w_q8_0) : g_w;
  m.w_type = type;
  m.w_stride = in;
  m.y = g_y;
  m.y_stride = out;
  m.t = 1;
  m.in = in;
  m.out = out;
  if (const char* error = hs::matmul_args_error(m)) {
    ++g_failures;
    cortex_m::Text().str("FAIL ").str(name).str(": ").str(error).str("\n").print();
    return;
  }
  const Count c = count([&] { hs::matmul(m, 0, out); });
  report(name, c, hs::matmul_target_name(), "gemv");
  check_bounds(name, g_y, out, static_cast<float>(in));
}

}  // namespace

int main() {
  const bool counting = cortex_m::instruction_count_start();
  cortex_m::Text()
      .str("headway bench-baremetal: ")
      .str(HEADWAY_BENCH_TARGET)
      .str(", attention kernels ")
      .str(hs::attention_target_name())
      .str(", matmul ")
      .str(hs::matmul_target_name())
      .str("; heads ")
      .u64(kHeads)
      .str("/")
      .u64(kKvHeads)
      .str(" x ")
      .u64(kHeadDim)
      .str("\n")
      .print();
  cortex_m::print_instruction_calibration();
  if (!counting) return 2;

  fill(g_q, kQValues, 11);
  fill(g_k_f32, kKvValues, 12);
  fill(g_v_f32, kKvValues, 13);
  to_f16(g_k_f32, g_k_f16, kKvValues);
  to_f16(g_v_f32, g_v_f16, kKvValues);

  bench_attention("decode 512 keys, K/V f32", 1, kDecodeKeys, hs::KvType::kF32);
  bench_attention("decode 512 keys, K/V f16", 1, kDecodeKeys, hs::KvType::kF16);
  bench_attention("prefill 64 tokens causal, K/V f32", kPrefillTokens, kPrefillTokens, hs::KvType::kF32);
  bench_attention("prefill 64 tokens causal, K/V f16", kPrefillTokens, kPrefillTokens, hs::KvType::kF16);
  bench_gemv("GEMV Wq 256x128 f16, t 1", kQWidth, kDModel, 21, hs::WeightType::kF16);
  bench_gemv("GEMV Wo 128x256 f16, t 1", kDModel, kQWidth, 31, hs::WeightType::kF16);
  bench_gemv("GEMV Wq 256x128 q8_0, t 1", kQWidth, kDModel, 21, hs::WeightType::kQ8_0);
  bench_gemv("GEMV Wo 128x256 q8_0, t 1", kDModel, kQWidth, 31, hs::WeightType::kQ8_0);
  bench_gemv("GEMV Wq 256x128 q4_0, t 1", kQWidth, kDModel, 21, hs::WeightType::kQ4_0);
  bench_gemv("GEMV Wo 128x256 q4_0, t 1", kDModel, kQWidth, 31, hs::WeightType::kQ4_0);

  cortex_m::Text().str(g_failures == 0 ? "done" : "FAIL").str("\n").print();
  return g_failures == 0 ? 0 : 1;
}
