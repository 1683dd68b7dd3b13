// Host program, run by the Cortex-M build: writes the reference outputs of the bare-metal
// harness's cases (those of tests/reference/attention_cases.hpp that runs_on_baremetal keeps, and
// the MLA cases of mla_cases.hpp, V = K) as a C++ header, computed by the double-precision
// reference (tests/reference/reference_attention.cc) on the build machine.
//   golden_gen OUT.h
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <vector>

#include "tests/baremetal/mla_cases.hpp"
#include "tests/reference/attention_cases.hpp"
#include "tests/reference/reference_attention.hpp"
#include "tests/support/quantized_rows.hpp"

namespace bm = headway::test::baremetal;
namespace ht = headway::test;

namespace {

float round_kv(headway::DType kv, float x) {
  if (kv == headway::DType::kF16) return ht::f16_bits_to_f32(ht::f32_to_f16_bits(x));
  if (kv == headway::DType::kBF16) return ht::bf16_bits_to_f32(ht::f32_to_bf16_bits(x));
  return x;
}

// Writes O of case c (number n of its table) and which of its rows see a key, as
// kGolden<prefix>O<n> and kGolden<prefix>Visible<n>. v_is_k: V is the case's K (MLA's latent rows,
// mla_cases.hpp); the case's own V is drawn and left unused.
bool write_case(std::FILE* f, const ht::AttentionCase& c, uint32_t n, const char* prefix, bool v_is_k) {
  std::vector<float> q(size_t{c.t_q} * c.n_heads * c.head_dim);
  std::vector<float> k(size_t{c.t_kv} * c.n_kv_heads * c.head_dim), v(k.size());
  ht::generate_inputs(c, [&](int which, uint64_t i, float x) {
    if (which == 0) q[i] = x;
    else (which == 1 ? k : v)[i] = round_kv(c.kv, x);
  });
  if (v_is_k) v = k;
  // A block format's K and V as the kernels read them (the harness stores them so on the board).
  if (headway::dtype_is_block(c.kv) &&
      !(ht::quantize_rows_and_back(c.kv, k, c.head_dim) && ht::quantize_rows_and_back(c.kv, v, c.head_dim))) {
    std::fprintf(stderr, "golden_gen: cannot quantize the K/V of %s\n", c.name);
    return false;
  }
  ht::RefAttention a;
  a.t_q = c.t_q;
  a.t_kv = c.t_kv;
  a.n_heads = c.n_heads;
  a.n_kv_heads = c.n_kv_heads;
  a.head_dim = c.head_dim;
  a.scale = c.scale != 0.0f ? double{c.scale} : 1.0 / std::sqrt(double(c.head_dim));
  a.softcap = c.softcap;
  a.causal = c.causal;
  a.window = c.window;
  if (ht::case_has_sinks(c)) {
    for (uint32_t h = 0; h < c.n_heads; ++h) a.sinks.push_back(ht::case_sink(c, h));
  }
  a.sink_tokens = c.sink_tokens;
  a.prefix = c.prefix;
  a.window_symmetric = c.window_symmetric;
  if (c.alibi) {
    for (uint32_t h = 0; h < c.n_heads; ++h) a.alibi_slopes.push_back(ht::case_alibi_slope(c, h));
  }
  ht::generate_mask(c, [&](uint64_t, float e) {
    if (c.mask == ht::CaseMask::kBool) {
      a.mask_bool.push_back(e == 0.0f ? 1 : 0);
    } else {
      a.mask_additive.push_back(e);
    }
  });
  const std::vector<double> o = ht::reference_attention(a, q.data(), k.data(), v.data());
  std::fprintf(f, "// %s\ninline constexpr float kGolden%sO%u[] = {", c.name, prefix, n);
  for (size_t i = 0; i < o.size(); ++i)
    std::fprintf(f, "%s%.9g", i == 0 ? "\n    " : i % 8 ? ", " : ",\n    ", float(o[i]));
  std::fprintf(f, "};\ninline constexpr uint8_t kGolden%sVisible%u[] = {", prefix, n);
  for (uint32_t i = 0; i < c.t_q; ++i) {
    std::fprintf(f, "%s%d", i ? ", " : "", ht::reference_row_sees_a_key(a, i) ? 1 : 0);
  }
  std::fprintf(f, "};\n\n");
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: golden_gen OUT.h\n");
    return 2;
  }
  std::FILE* f = std::fopen(argv[1], "w");
  if (f == nullptr) {
    std::fprintf(stderr, "golden_gen: cannot write %s\n", argv[1]);
    return 1;
  }
  std::fprintf(f,
               "// Generated at build time by tests/baremetal/golden_gen.cc from the double-precision\n"
               "// reference: O of each case of tests/reference/attention_cases.hpp the harness runs, and which query\n"
               "// rows see a key (null for the cases it leaves out); the same for the MLA cases of\n"
               "// tests/baremetal/mla_cases.hpp (kMlaGolden).\n"
               "#pragma once\n#include <cstdint>\n\nnamespace headway {\nnamespace test {\nnamespace baremetal {\n\n");
  for (uint32_t n = 0; n < ht::kAttentionCaseCount; ++n) {
    const ht::AttentionCase& c = ht::kAttentionCases[n];
    if (ht::runs_on_baremetal(c) && !write_case(f, c, n, "", false)) return 1;
  }
  for (uint32_t n = 0; n < bm::kMlaCaseCount; ++n) {
    if (!write_case(f, bm::kMlaCases[n], n, "Mla", true)) return 1;
  }
  std::fprintf(f,
               "struct Golden {\n  const float* o;\n  const uint8_t* visible;\n};\n"
               "inline constexpr Golden kGolden[] = {\n");
  for (uint32_t n = 0; n < ht::kAttentionCaseCount; ++n) {
    if (ht::runs_on_baremetal(ht::kAttentionCases[n])) {
      std::fprintf(f, "    {kGoldenO%u, kGoldenVisible%u},\n", n, n);
    } else {
      std::fprintf(f, "    {nullptr, nullptr},\n");
    }
  }
  std::fprintf(f, "};\ninline constexpr Golden kMlaGolden[] = {\n");
  for (uint32_t n = 0; n < bm::kMlaCaseCount; ++n) std::fprintf(f, "    {kGoldenMlaO%u, kGoldenMlaVisible%u},\n", n, n);
  std::fprintf(f, "};\n\n}  // namespace baremetal\n}  // namespace test\n}  // namespace headway\n");
  return std::fclose(f) == 0 ? 0 : 1;
}
