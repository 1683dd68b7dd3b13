// Attention kernels (simd/attention/attention.h) against the double-precision reference, on every Highway
// target this machine supports: each check loops over the targets, pins dispatch to one with
// hwy::SetSupportedTargetsForTest, and names it in failures.
//
// Inputs are unit-normal with fixed seeds (the shared cases of tests/reference/attention_cases.hpp: that
// table's exact values). K/V reach the reference already rounded (RNE) to their storage dtype,
// so the tolerances below mostly cover f32 accumulation and exp:
//   max |kernel − reference| <= 1e-4 (f32 KV), 2e-3 (f16 KV), 3e-2 (bf16 KV).
// Rows that see no key must be exact zeros; NaN must appear exactly where the reference has NaN.
// Unused cache rows, row padding and Q padding hold NaN (a stray read shows up), O padding
// and the bytes after the scratch hold canaries (a stray write shows up).
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#if defined(__aarch64__) && defined(__linux__)
#include <asm/hwcap.h>
#include <sys/auxv.h>
#endif
#if defined(__x86_64__) && defined(__GNUC__)
#include <cpuid.h>
#endif

#include "headway/plan.hpp"
#include "hwy/targets.h"
#include "simd/attention/attention.h"
#include "tests/reference/attention_cases.hpp"
#include "tests/reference/reference_attention.hpp"
#include "tests/kernels/target_scope.hpp"
#include "tests/support/quantized_query.hpp"
#include "tests/support/quantized_rows.hpp"
#include "tests/support/test_rng.hpp"

namespace hs = headway::simd;
namespace ht = headway::test;

namespace {

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kCanary = 1234.5f;
constexpr uint8_t kScratchCanary = 0xA5;
constexpr size_t kScratchCanaryBytes = 256;

double tolerance(hs::KvType t) {
  switch (t) {
    case hs::KvType::kF32: return 1e-4;
    case hs::KvType::kF16: return 2e-3;
    // The reference reads the dequantized values: the kernels widen them exactly, as f32.
    case hs::KvType::kQ8_0:
    case hs::KvType::kQ4_0: return 1e-4;
    default: return 3e-2;
  }
}

const char* kv_name(hs::KvType t) { return headway::dtype_name(static_cast<headway::DType>(t)); }

using headway::test::target_label;
using headway::test::TargetScope;
using headway::test::test_targets;

using headway::test::Rng;

// Under qemu-user (HEADWAY_TEST_EMULATED, cross builds) the two largest sweeps leave out their
// longest shapes, whose double reference alone takes minutes there, the long sequence runs 2
// query heads of 64 (GQA still) instead of 4 of 128, partial + merge skips one-key chunks, and
// the random sweep draws 40 cases of at most 10^6 multiply-adds (120 of 4 * 10^6 natively):
// every path still runs, at the lengths below them, and T = 1000 in the long-sequence case.
#ifdef HEADWAY_TEST_EMULATED
constexpr bool kEmulated = true;
#else
constexpr bool kEmulated = false;
#endif

enum class Layout { kTokens, kCache, kRing };

struct Case {
  uint32_t t_q = 1, t_kv = 1, n_heads = 1, n_kv_heads = 1, head_dim = 64;
  hs::KvType kv = hs::KvType::kF32;
  bool causal = false;
  uint32_t window = 0;
  float softcap = 0.0f;
  bool default_scale = true;
  float scale = 0.0f;
  // kTokens: K/V [t_kv, n_kv_heads, head_dim]. kCache: [n_kv_heads, t_kv + 3, head_dim].
  // kRing: [n_kv_heads, ring_rows, head_dim], key j in row (first_row + j) % ring_rows.
  Layout layout = Layout::kTokens;
  uint32_t ring_rows = 0, first_row = 0;
  uint32_t pad = 0;  // extra elements after each Q/O token row and each K/V row
  uint64_t seed = 1;
  // NaN injection: Q of (token, head) element 0, K of key element 0 (kv head 0), V of key
  // element head_dim / 2 (kv head 0). -1 = none.
  int64_t nan_q_token = -1, nan_q_head = 0, nan_k_key = -1, nan_v_key = -1;
  // When set, V element x of every key and kv head is v_values[x % size] (exact in every dtype).
  std::vector<float> v_values;
  hs::AttentionTiling tiling = hs::AttentionTiling::kAuto;
  bool generic_only = false;
  // Q, K and V from the case table's generator (tests/reference/attention_cases.hpp, exact values) with
  // this seed, instead of unit-normal draws.
  bool table_inputs = false;
  std::vector<float> sinks;  // [n_heads] sink logits, or empty: none
  // Sink tokens (with a window); in a ring, keys j < sink_tokens sit in rows j and the ring is the
  // rows after them (AttentionArgs::sink_tokens).
  uint32_t sink_tokens = 0;
  std::vector<float> alibi_slopes;  // [n_heads], or empty: none
  uint32_t prefix = 0;              // prefix-LM (with causal)
  bool window_symmetric = false;    // the window bounds from above too (without causal)
  // A general mask [t_q, mask_stride] (entries past t_kv unread), one of the two or none.
  std::vector<uint8_t> mask_bool;
  std::vector<float> mask_additive;
  size_t mask_stride = 0;
};

std::string describe(const Case& c) {
  std::string s = "t_q=" + std::to_string(c.t_q) + " t_kv=" + std::to_string(c.t_kv) +
                  " heads=" + std::to_string(c.n_heads) + "/" + std::to_string(c.n_kv_heads) +
                  " d=" + std::to_string(c.head_dim) + " kv=" + kv_name(c.kv) + (c.causal ? " causal" : "") +
                  " window=" + std::to_string(c.window) + " softcap=" + std::to_string(c.softcap) +
                  (c.default_scale ? std::string(" scale=default") : " scale=" + std::to_string(c.scale)) +
                  " layout=" + std::to_string(static_cast<int>(c.layout)) + " ring=" + std::to_string(c.ring_rows) +
                  "@" + std::to_string(c.first_row) + " pad=" + std::to_string(c.pad) +
                  " seed=" + std::to_string(c.seed) + " tiling=" + std::to_string(static_cast<int>(c.tiling)) +
                  (c.generic_only ? " generic" : "") + (c.table_inputs ? " table inputs" : "");
  if (!c.sinks.empty()) s += " sinks";
  if (c.sink_tokens != 0) s += " sink_tokens=" + std::to_string(c.sink_tokens);
  if (!c.alibi_slopes.empty()) s += " alibi";
  if (c.prefix != 0) s += " prefix=" + std::to_string(c.prefix);
  if (c.window_symmetric) s += " symmetric";
  if (!c.mask_bool.empty()) s += " bool mask";
  if (!c.mask_additive.empty()) s += " additive mask";
  return s;
}

struct Data {
  Case c;
  size_t q_stride = 0, o_stride = 0, head_stride = 0, row_stride = 0;
  std::vector<float> q;
  std::vector<float> k32, v32;     // storage when kv is f32
  std::vector<uint16_t> k16, v16;  // storage when kv is f16 / bf16
  std::vector<uint8_t> kq, vq;     // storage when kv is q8_0 / q4_0: rows of whole blocks
  std::vector<float> kref, vref;   // [t_kv, n_kv_heads, head_dim], rounded to the storage dtype
  std::vector<double> ref;         // [t_q, n_heads, head_dim]
  std::vector<char> row_visible;   // [t_q]
};

ht::RefAttention ref_args(const Case& c) {
  ht::RefAttention r;
  r.t_q = c.t_q;
  r.t_kv = c.t_kv;
  r.n_heads = c.n_heads;
  r.n_kv_heads = c.n_kv_heads;
  r.head_dim = c.head_dim;
  r.scale = c.default_scale ? 1.0 / std::sqrt(static_cast<double>(c.head_dim)) : double{c.scale};
  // The kernel gets scale as f32; the reference uses the same f32 value.
  r.scale = static_cast<float>(r.scale);
  r.softcap = c.softcap;
  r.causal = c.causal;
  r.window = c.window;
  r.sinks.assign(c.sinks.begin(), c.sinks.end());
  r.sink_tokens = c.sink_tokens;
  r.alibi_slopes.assign(c.alibi_slopes.begin(), c.alibi_slopes.end());
  r.prefix = c.prefix;
  r.window_symmetric = c.window_symmetric;
  for (size_t i = 0; i < c.t_q; ++i) {
    for (size_t j = 0; j < c.t_kv; ++j) {
      if (!c.mask_bool.empty()) r.mask_bool.push_back(c.mask_bool[i * c.mask_stride + j]);
      if (!c.mask_additive.empty()) r.mask_additive.push_back(c.mask_additive[i * c.mask_stride + j]);
    }
  }
  return r;
}

// The case's tolerance on every run, its decode's quantized query included (quantized_query.hpp).
double tolerance(const Case& c) {
  return ht::decode_quantizes_query(ref_args(c), c.kv) ? ht::kQuantizedQueryTolerance : tolerance(c.kv);
}

// Dense Q [t_q, n_heads, d], K and V [t_kv, n_kv_heads, d] from the case table's generator.
struct TableInputs {
  std::vector<float> q, k, v;
};

TableInputs draw_table_inputs(const Case& c) {
  ht::AttentionCase shape{};
  shape.t_q = c.t_q;
  shape.t_kv = c.t_kv;
  shape.n_heads = c.n_heads;
  shape.n_kv_heads = c.n_kv_heads;
  shape.head_dim = c.head_dim;
  shape.seed = c.seed;
  TableInputs in;
  in.q.resize(ht::case_q_elems(shape));
  in.k.resize(ht::case_kv_elems(shape));
  in.v.resize(in.k.size());
  ht::generate_inputs(shape, [&](int which, uint64_t i, float x) {
    (which == 0 ? in.q : which == 1 ? in.k : in.v)[i] = x;
  });
  return in;
}

Data make_data(const Case& c) {
  Data d;
  d.c = c;
  const size_t D = c.head_dim;
  Rng rng(c.seed);
  const TableInputs in = c.table_inputs ? draw_table_inputs(c) : TableInputs{};
  d.q_stride = size_t{c.n_heads} * D + c.pad;
  d.o_stride = size_t{c.n_heads} * D + c.pad;
  d.q.assign(std::max<size_t>(size_t{c.t_q} * d.q_stride, 1), kNaN);
  for (size_t t = 0; t < c.t_q; ++t) {
    for (size_t x = 0; x < size_t{c.n_heads} * D; ++x) {
      d.q[t * d.q_stride + x] = c.table_inputs ? in.q[t * c.n_heads * D + x] : rng.normal();
    }
  }
  if (c.nan_q_token >= 0) d.q[size_t(c.nan_q_token) * d.q_stride + size_t(c.nan_q_head) * D] = kNaN;

  // A block format's rows are whole blocks of 32 values, and so is its padding.
  const bool block = hs::KvTypeIsBlock(c.kv);
  const size_t row_values = block ? (D + 31) / 32 * 32 : D;
  const size_t pad = block && c.pad ? 32 : c.pad;
  size_t rows = c.t_kv;
  if (c.layout == Layout::kTokens) {
    d.row_stride = size_t{c.n_kv_heads} * row_values + pad;
    d.head_stride = row_values;
  } else {
    rows = c.layout == Layout::kCache ? size_t{c.t_kv} + 3 : c.ring_rows;
    d.row_stride = row_values + pad;
    d.head_stride = rows * d.row_stride;
  }
  const size_t storage = std::max<size_t>(rows * d.row_stride * (c.layout == Layout::kTokens ? 1 : c.n_kv_heads), 1);
  const bool wide = c.kv == hs::KvType::kF32;
  const uint16_t nan16 = c.kv == hs::KvType::kF16 ? 0x7E00 : 0x7FC0;
  if (block) {
    d.kq.assign(static_cast<size_t>(hs::KvOffsetBytes(c.kv, storage)), 0xFF);
    d.vq.assign(d.kq.size(), 0xFF);
  } else if (wide) {
    d.k32.assign(storage, kNaN);
    d.v32.assign(storage, kNaN);
  } else {
    d.k16.assign(storage, nan16);
    d.v16.assign(storage, nan16);
  }
  d.kref.assign(size_t{c.t_kv} * c.n_kv_heads * D, 0.0f);
  d.vref.assign(d.kref.size(), 0.0f);
  for (size_t j = 0; j < c.t_kv; ++j) {
    const size_t s_rows = c.sink_tokens;  // rows outside the ring
    const size_t row = c.layout != Layout::kRing ? j
                       : j < s_rows              ? j
                                                 : s_rows + (c.first_row + j - s_rows) % (c.ring_rows - s_rows);
    for (size_t g = 0; g < c.n_kv_heads; ++g) {
      std::vector<float> row_vals[2] = {std::vector<float>(D), std::vector<float>(D)};
      for (size_t x = 0; x < D; ++x) {
        for (int which = 0; which < 2; ++which) {
          float val = c.table_inputs ? (which ? in.v : in.k)[(j * c.n_kv_heads + g) * D + x] : rng.normal();
          if (which == 1 && !c.v_values.empty()) val = c.v_values[x % c.v_values.size()];
          if (g == 0 && x == 0 && which == 0 && int64_t(j) == c.nan_k_key) val = kNaN;
          if (g == 0 && x == D / 2 && which == 1 && int64_t(j) == c.nan_v_key) val = kNaN;
          row_vals[which][x] = val;
          const size_t at = g * d.head_stride + row * d.row_stride + x;
          float stored = val;
          if (block) {
            continue;  // the whole row below
          } else if (wide) {
            (which ? d.v32 : d.k32)[at] = val;
          } else if (c.kv == hs::KvType::kF16) {
            const uint16_t h = ht::f32_to_f16_bits(val);
            (which ? d.v16 : d.k16)[at] = h;
            stored = ht::f16_bits_to_f32(h);
          } else {
            const uint16_t b = ht::f32_to_bf16_bits(val);
            (which ? d.v16 : d.k16)[at] = b;
            stored = ht::bf16_bits_to_f32(b);
          }
          (which ? d.vref : d.kref)[(j * c.n_kv_heads + g) * D + x] = stored;
        }
      }
      if (!block) continue;
      // The row quantized as ggml does (headway/quantize.hpp); the reference reads its values.
      const size_t at = static_cast<size_t>(hs::KvOffsetBytes(c.kv, g * d.head_stride + row * d.row_stride));
      for (int which = 0; which < 2; ++which) {
        REQUIRE(ht::quantize_row_and_back(static_cast<headway::DType>(c.kv), row_vals[which].data(), D,
                                          (which ? d.vq : d.kq).data() + at,
                                          (which ? d.vref : d.kref).data() + (j * c.n_kv_heads + g) * D));
      }
    }
  }
  // The reference wants dense Q.
  std::vector<float> q_dense(size_t{c.t_q} * c.n_heads * D);
  for (size_t t = 0; t < c.t_q; ++t) {
    std::memcpy(&q_dense[t * c.n_heads * D], &d.q[t * d.q_stride], c.n_heads * D * sizeof(float));
  }
  const ht::RefAttention ra = ref_args(c);
  d.ref = ht::reference_attention(ra, q_dense.data(), d.kref.data(), d.vref.data());
  d.row_visible.resize(c.t_q);
  for (uint32_t t = 0; t < c.t_q; ++t) {
    d.row_visible[t] = ht::reference_row_sees_a_key(ra, t);
  }
  return d;
}

hs::AttentionArgs args_for(const Data& d, float* o) {
  const Case& c = d.c;
  hs::AttentionArgs a;
  a.q = d.q.data();
  a.q_token_stride = d.q_stride;
  a.o = o;
  a.o_token_stride = d.o_stride;
  const bool wide = c.kv == hs::KvType::kF32;
  const bool block = hs::KvTypeIsBlock(c.kv);
  a.k = block ? static_cast<const void*>(d.kq.data()) : wide ? static_cast<const void*>(d.k32.data()) : d.k16.data();
  a.v = block ? static_cast<const void*>(d.vq.data()) : wide ? static_cast<const void*>(d.v32.data()) : d.v16.data();
  a.kv_type = c.kv;
  a.kv_head_stride = d.head_stride;
  a.kv_row_stride = d.row_stride;
  a.kv_first_row = c.layout == Layout::kRing ? c.first_row : 0;
  a.kv_ring_rows = c.layout == Layout::kRing ? c.ring_rows : 0;
  a.t_q = c.t_q;
  a.t_kv = c.t_kv;
  a.n_heads = c.n_heads;
  a.n_kv_heads = c.n_kv_heads;
  a.head_dim = c.head_dim;
  a.scale = static_cast<float>(ref_args(c).scale);
  a.softcap = c.softcap;
  a.causal = c.causal;
  a.window = c.window;
  a.sinks = c.sinks.empty() ? nullptr : c.sinks.data();
  a.sink_tokens = c.sink_tokens;
  a.alibi_slopes = c.alibi_slopes.empty() ? nullptr : c.alibi_slopes.data();
  a.prefix = c.prefix;
  a.window_symmetric = c.window_symmetric;
  a.mask_bool = c.mask_bool.empty() ? nullptr : c.mask_bool.data();
  a.mask_additive = c.mask_additive.empty() ? nullptr : c.mask_additive.data();
  a.mask_row_stride = c.mask_stride;
  a.tiling = c.tiling;
  a.generic_only = c.generic_only;
  return a;
}

// Caller-owned scratch: exactly attention_scratch_bytes, 64-byte aligned, canary bytes after.
struct Scratch {
  std::vector<uint8_t> buf;
  uint8_t* p = nullptr;
  size_t bytes = 0;
  explicit Scratch(size_t n) : buf(n + 64 + kScratchCanaryBytes), bytes(n) {
    const uintptr_t base = reinterpret_cast<uintptr_t>(buf.data());
    p = buf.data() + ((64 - base % 64) % 64);
    std::memset(p + n, kScratchCanary, kScratchCanaryBytes);
  }
  bool canary_intact() const {
    for (size_t i = 0; i < kScratchCanaryBytes; ++i) {
      if (p[bytes + i] != kScratchCanary) return false;
    }
    return true;
  }
};

size_t scratch_bytes_for(const Case& c) { return hs::attention_scratch_bytes(c.head_dim, c.n_heads / c.n_kv_heads); }

std::vector<float> fresh_output(const Data& d) {
  return std::vector<float>(std::max<size_t>(size_t{d.c.t_q} * d.o_stride, 1), kCanary);
}

// attention_f32 over all kv heads and query rows.
std::vector<float> run_full(const Data& d) {
  std::vector<float> o = fresh_output(d);
  Scratch s(scratch_bytes_for(d.c));
  const hs::AttentionArgs a = args_for(d, o.data());
  hs::attention_f32(a, 0, d.c.n_kv_heads, 0, d.c.t_q, s.p, s.bytes);
  CHECK_MESSAGE(s.canary_intact(), "scratch overrun");
  return o;
}

// Partials per kv head in chunk order, then merge. reverse: compute the chunks last to first.
std::vector<float> run_split(const Data& d, uint32_t chunk, bool reverse) {
  const Case& c = d.c;
  std::vector<float> o = fresh_output(d);
  Scratch s(scratch_bytes_for(c));
  const hs::AttentionArgs a = args_for(d, o.data());
  const uint32_t n_chunks = (c.t_kv + chunk - 1) / chunk;
  const size_t rows = size_t{c.t_q} * (c.n_heads / c.n_kv_heads);
  for (uint32_t g = 0; g < c.n_kv_heads; ++g) {
    std::vector<float> m(n_chunks * rows, kCanary), l(n_chunks * rows, kCanary);
    std::vector<float> po(n_chunks * rows * c.head_dim, kCanary);
    const hs::AttentionPartials p{m.data(), l.data(), po.data()};
    for (uint32_t i = 0; i < n_chunks; ++i) {
      hs::attention_partial_f32(a, g, reverse ? n_chunks - 1 - i : i, chunk, p, s.p, s.bytes);
    }
    hs::attention_merge_f32(a, g, n_chunks, p);
  }
  CHECK_MESSAGE(s.canary_intact(), "scratch overrun");
  return o;
}

struct Report {
  double max_err = 0.0;
  size_t nan_mismatch = 0;   // NaN or Inf where the reference has none (or another), or the other way round
  size_t zero_mismatch = 0;  // rows that see no key but are not exactly 0
  size_t pad_broken = 0;     // O padding overwritten
  size_t unwritten = 0;      // still the canary
  size_t zero_rows = 0;
  size_t nan_values = 0;
};

// Compares token rows [t0, t1) and query heads [h0, h1) with the reference; checks the padding
// of every row.
Report compare(const Data& d, const std::vector<float>& o, uint32_t t0 = 0, uint32_t t1 = ~0u, uint32_t h0 = 0,
               uint32_t h1 = ~0u) {
  const Case& c = d.c;
  const size_t D = c.head_dim;
  if (t1 > c.t_q) t1 = c.t_q;
  if (h1 > c.n_heads) h1 = c.n_heads;
  Report r;
  for (size_t t = 0; t < c.t_q; ++t) {
    for (size_t x = size_t{c.n_heads} * D; x < d.o_stride; ++x) {
      if (!(o[t * d.o_stride + x] == kCanary)) ++r.pad_broken;
    }
  }
  for (size_t t = t0; t < t1; ++t) {
    if (!d.row_visible[t]) ++r.zero_rows;
    for (size_t h = h0; h < h1; ++h) {
      for (size_t x = 0; x < D; ++x) {
        const float got = o[t * d.o_stride + h * D + x];
        const double want = d.ref[(t * c.n_heads + h) * D + x];
        if (got == kCanary) ++r.unwritten;
        if (!d.row_visible[t]) {
          if (!(got == 0.0f)) ++r.zero_mismatch;
          continue;
        }
        if (std::isnan(want) || std::isnan(got)) {
          if (std::isnan(want) != std::isnan(got)) ++r.nan_mismatch;
          if (std::isnan(got)) ++r.nan_values;
          continue;
        }
        if (std::isinf(want) || std::isinf(got)) {
          if (!(double{got} == want)) ++r.nan_mismatch;
          continue;
        }
        const double err = std::fabs(double{got} - want);
        if (!(err <= r.max_err)) r.max_err = err;
      }
    }
  }
  return r;
}

void check_report(const Report& r, double tol) {
  CHECK(r.max_err <= tol);
  CHECK(r.nan_mismatch == 0);
  CHECK(r.zero_mismatch == 0);
  CHECK(r.pad_broken == 0);
  CHECK(r.unwritten == 0);
}

// attention_f32 on every target against the reference.
void check_case(const Case& c) {
  const Data d = make_data(c);
  INFO(describe(c));
  for (const int64_t target : test_targets()) {
    TargetScope scope(target);
    const std::string target_name = target_label(target);
    INFO(target_name);
    check_report(compare(d, run_full(d)), tolerance(c));
  }
}

}  // namespace

TEST_CASE("softmax exp: within 2 ulp of exp on [-86.5, 0], 0 below, NaN kept, every target") {
  // Every 257th float in [-86.5, 0] (4.4e6 values across every binade of the range), the ends,
  // and the special inputs.
  std::vector<float> x;
  for (uint32_t bits = 0x80000000u; bits <= 0xC2AD0000u; bits += 257) {  // -0 .. -86.5
    float f;
    std::memcpy(&f, &bits, 4);
    x.push_back(f);
  }
  const float inf = std::numeric_limits<float>::infinity();
  for (float f : {0.0f, -0.0f, -1e-30f, -86.5f, std::nextafter(-86.5f, 0.0f), std::nextafter(-86.5f, -inf), -87.0f,
                  -103.0f, -1e30f, -inf, std::numeric_limits<float>::quiet_NaN()}) {
    x.push_back(f);
  }
  x.push_back(-1.0f);  // an odd count: the last values take the tail path
  std::vector<float> y(x.size());
  for (const int64_t target : test_targets()) {
    TargetScope scope(target);
    INFO(target_label(target));
    headway::simd::softmax_exp(x.data(), y.data(), x.size());
    double worst_ulp = 0.0;
    float worst_x = 0.0f;
    size_t wrong = 0;
    for (size_t i = 0; i < x.size(); ++i) {
      if (std::isnan(x[i])) {
        if (!std::isnan(y[i])) ++wrong;
      } else if (x[i] < -86.5f) {
        if (y[i] != 0.0f) ++wrong;
      } else {
        const double e = std::exp(static_cast<double>(x[i]));
        const double ulp = std::ldexp(1.0, std::ilogb(e) - 23);  // of the float nearest e
        const double err = std::fabs(static_cast<double>(y[i]) - e) / ulp;
        if (!(err <= worst_ulp)) {
          worst_ulp = err;
          worst_x = x[i];
        }
      }
    }
    INFO("worst error " << worst_ulp << " ulp at x = " << worst_x);
    CHECK(wrong == 0);
    CHECK(worst_ulp <= 2.0);
  }
}

TEST_CASE("f16 widening: every one of the 65536 values exact, NaN kept, every target") {
  std::vector<uint16_t> x(65536 + 3);  // 3 more: the last values take the tail path
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<uint16_t>(i);
  std::vector<float> y(x.size());
  for (const int64_t target : test_targets()) {
    TargetScope scope(target);
    INFO(target_label(target));
    headway::simd::widen_f16(x.data(), y.data(), x.size());
    size_t wrong = 0;
    for (size_t i = 0; i < x.size(); ++i) {
      const float want = headway::test::f16_bits_to_f32(x[i]);
      const bool same = std::isnan(want) ? std::isnan(y[i]) : std::memcmp(&want, &y[i], 4) == 0;
      if (!same) ++wrong;
    }
    CHECK(wrong == 0);
  }
}

TEST_CASE("attention scratch size: simd equals the plan's constexpr formula") {
  size_t mismatches = 0;
  for (uint32_t d = 1; d <= 512; ++d) {
    for (uint32_t g : {1u, 2u, 4u, 7u, 8u, 16u, 32u, 64u}) {
      if (hs::attention_scratch_bytes(d, g) != headway::attention_scratch_bytes(d, g)) {
        INFO("head_dim " << d << " group " << g);
        CHECK(hs::attention_scratch_bytes(d, g) == headway::attention_scratch_bytes(d, g));
        ++mismatches;
      }
      if (hs::attention_scratch_bytes(d, g) % 64 != 0) ++mismatches;
    }
  }
  CHECK(mismatches == 0);
  static_assert(headway::kAttnQueryRows >= hs::kAttentionDecodeMaxRows);
}

TEST_CASE("attention dispatch: every supported target is reachable and named") {
  const std::vector<int64_t> targets = test_targets();
  REQUIRE(!targets.empty());
  std::string names;
  for (const int64_t target : targets) {
    TargetScope scope(target);
    const std::string target_name = target_label(target);
    INFO(target_name);
    if (target != 0) CHECK(std::string(hs::attention_target_name()) == hwy::TargetName(target));
    names += target_name + " ";
  }
  MESSAGE("attention targets tested: " << names);
  // After the scopes: back to the best target.
  if (targets.front() != 0) CHECK(std::string(hs::attention_target_name()) == hwy::TargetName(targets.front()));
}

// Whether the target in use multiplies int8 in one instruction on this CPU: AVX3_DL (its dispatch
// requires AVX-512 VNNI), AVX2 on a CPU with AVX-VNNI, or any AArch64 SIMD target (NEON, SVE) on
// a CPU whose kernel reports SDOT (GCC builds: the kernels compile their SDOT function with GCC's
// spelling of Armv8.2).
static bool target_multiplies_int8() {
  const std::string name = hs::attention_target_name();
  if (name == hwy::TargetName(HWY_AVX3_DL)) return true;
#if defined(__x86_64__) && defined(__GNUC__)
  if (name == hwy::TargetName(HWY_AVX2)) {
    unsigned a = 0, b = 0, c = 0, d = 0;
    return __get_cpuid_count(7, 1, &a, &b, &c, &d) != 0 && (a >> 4 & 1u) != 0;
  }
#endif
#if defined(__aarch64__) && defined(__linux__) && defined(__GNUC__) && !defined(__clang__)
  if (name != hwy::TargetName(HWY_EMU128) && name != hwy::TargetName(HWY_SCALAR)) {
    return (getauxval(AT_HWCAP) & HWCAP_ASIMDDP) != 0;
  }
#endif
  return false;
}

// Integer Q·Kᵀ (attention_decode_int8-inl.h) runs only there, and only where every row sees at
// least 64 keys, without ALiBi: elsewhere decode widens the blocks.
TEST_CASE("decode quantizes the query only with integer dot products and where every row sees 64 keys or more") {
  const auto quantizes = [](hs::KvType kv, uint32_t head_dim, uint32_t t_q, uint32_t t_kv, bool causal, uint32_t window,
                            uint32_t sink_tokens, bool alibi) {
    ht::RefAttention r;
    r.t_q = t_q;
    r.t_kv = t_kv;
    r.n_heads = 4;
    r.n_kv_heads = 2;
    r.head_dim = head_dim;
    r.causal = causal;
    r.window = window;
    r.sink_tokens = sink_tokens;
    if (alibi) r.alibi_slopes = {0.5, 0.25, 0.125, 0.0625};
    return ht::decode_quantizes_query(r, kv);
  };
  using K = hs::KvType;
  for (const int64_t target : test_targets()) {
    TargetScope scope(target);
    INFO(target_label(target));
    const bool integer = target_multiplies_int8();
    // Causal: the first row (position t_kv − t_q) sees the fewest keys.
    CHECK(quantizes(K::kQ8_0, 128, 1, 64, true, 0, 0, false) == integer);
    CHECK(quantizes(K::kQ4_0, 64, 1, 64, true, 0, 0, false) == integer);
    CHECK_FALSE(quantizes(K::kQ8_0, 128, 1, 63, true, 0, 0, false));
    CHECK(quantizes(K::kQ8_0, 128, 4, 67, true, 0, 0, false) == integer);
    CHECK_FALSE(quantizes(K::kQ8_0, 128, 4, 66, true, 0, 0, false));
    // A window bounds every row's keys; sink tokens count with them.
    CHECK_FALSE(quantizes(K::kQ8_0, 128, 1, 4096, true, 63, 0, false));
    CHECK(quantizes(K::kQ8_0, 128, 1, 4096, true, 64, 0, false) == integer);
    CHECK(quantizes(K::kQ8_0, 128, 1, 4096, true, 60, 4, false) == integer);
    CHECK_FALSE(quantizes(K::kQ8_0, 128, 1, 4096, true, 59, 4, false));
    // Without causal the last row sees the fewest (its window starts latest).
    CHECK(quantizes(K::kQ8_0, 128, 8, 4096, false, 0, 0, false) == integer);
    CHECK(quantizes(K::kQ8_0, 128, 2, 65, false, 0, 0, false) == integer);
    CHECK_FALSE(quantizes(K::kQ8_0, 128, 2, 63, false, 0, 0, false));
    // ALiBi, K that is not a block format, head_dims not of whole blocks or a single block.
    CHECK_FALSE(quantizes(K::kQ8_0, 128, 1, 4096, true, 0, 0, true));
    CHECK_FALSE(quantizes(K::kF16, 128, 1, 4096, true, 0, 0, false));
    CHECK_FALSE(quantizes(K::kF32, 128, 1, 4096, true, 0, 0, false));
    CHECK_FALSE(quantizes(K::kQ8_0, 80, 1, 4096, true, 0, 0, false));
    CHECK_FALSE(quantizes(K::kQ4_0, 32, 1, 4096, true, 0, 0, false));
    CHECK(quantizes(K::kQ4_0, 96, 1, 4096, true, 0, 0, false) == integer);
  }
}

TEST_CASE("attention kernel choice: d64/d128 specialized, generic elsewhere, decode for few rows") {
  Case c;
  c.n_heads = 8;
  c.n_kv_heads = 2;
  c.t_kv = 100;
  const Data d64 = make_data(c);
  std::vector<float> o(1);
  hs::AttentionArgs a = args_for(d64, o.data());
  a.t_q = 1;
  CHECK(std::string(hs::attention_kernel_name(a)) == "decode_d64");
  a.t_q = 3;  // 3 tokens × group 4 = 12 rows
  CHECK(std::string(hs::attention_kernel_name(a)) == "prefill_d64");
  a.head_dim = 128;
  CHECK(std::string(hs::attention_kernel_name(a)) == "prefill_d128");
  a.t_q = 2;
  CHECK(std::string(hs::attention_kernel_name(a)) == "decode_d128");
  a.generic_only = true;
  CHECK(std::string(hs::attention_kernel_name(a)) == "decode_generic");
  a.generic_only = false;
  a.tiling = hs::AttentionTiling::kPrefill;
  CHECK(std::string(hs::attention_kernel_name(a)) == "prefill_d128");
  a.tiling = hs::AttentionTiling::kAuto;
  for (uint32_t dim : {1u, 8u, 50u, 63u, 65u, 80u, 96u, 127u, 129u, 256u, 512u}) {
    a.head_dim = dim;
    CHECK(std::string(hs::attention_kernel_name(a)) == "decode_generic");
  }
}

TEST_CASE("attention head_dim: every size 1..576 path, prefill and decode") {
  uint64_t seed = 100;
  for (uint32_t dim : {1u, 8u, 50u, 64u, 80u, 96u, 128u, 256u, 288u, 512u, 576u}) {
    for (bool decode : {false, true}) {
      Case c;
      c.head_dim = dim;
      c.n_heads = 4;
      c.n_kv_heads = 2;
      c.t_q = decode ? 1 : 17;
      c.t_kv = 65;
      c.causal = !decode;
      c.kv = dim % 3 == 0 ? hs::KvType::kF16 : hs::KvType::kF32;
      c.seed = ++seed;
      check_case(c);
    }
  }
}

TEST_CASE("attention lengths: T_q x T_kv over {1, 2, 15, 16, 17, 63, 64, 65, 1000}") {
  const uint32_t lengths[] = {1, 2, 15, 16, 17, 63, 64, 65, 1000};
  uint64_t seed = 200;
  for (uint32_t tq : lengths) {
    for (uint32_t tkv : lengths) {
      if (kEmulated && tq == 1000 && tkv == 1000) continue;
      for (bool causal : {false, true}) {
        Case c;
        c.t_q = tq;
        c.t_kv = tkv;
        c.causal = causal;
        c.head_dim = 16;
        c.n_heads = 2;
        c.n_kv_heads = 1;
        c.seed = ++seed;
        check_case(c);
      }
    }
  }
}

TEST_CASE("attention T_q > T_kv causal: early rows see no key and are exact zeros") {
  for (bool decode_tiling : {false, true}) {
    Case c;
    c.t_q = 65;
    c.t_kv = 17;
    c.causal = true;
    c.head_dim = 64;
    c.n_heads = 4;
    c.n_kv_heads = 4;
    c.tiling = decode_tiling ? hs::AttentionTiling::kDecode : hs::AttentionTiling::kPrefill;
    const Data d = make_data(c);
    INFO(describe(c));
    for (const int64_t target : test_targets()) {
      TargetScope scope(target);
      const std::string target_name = target_label(target);
      INFO(target_name);
      const Report r = compare(d, run_full(d));
      CHECK(r.zero_rows == 48);
      check_report(r, tolerance(c));
    }
  }
}

TEST_CASE("attention GQA: groups {1, 2, 4, 7, 8}, decode and prefill, all KV dtypes") {
  uint64_t seed = 300;
  const hs::KvType types[] = {hs::KvType::kF32, hs::KvType::kF16, hs::KvType::kBF16};
  int i = 0;
  for (uint32_t group : {1u, 2u, 4u, 7u, 8u}) {
    for (uint32_t tq : {1u, 3u, 33u}) {
      for (uint32_t dim : {64u, 80u, 128u}) {
        Case c;
        c.n_kv_heads = group == 7 ? 1 : 2;
        c.n_heads = group * c.n_kv_heads;
        c.head_dim = dim;
        c.t_q = tq;
        c.t_kv = tq == 33 ? 65 : 130;
        c.causal = tq != 1;
        c.kv = types[i++ % 3];
        c.seed = ++seed;
        check_case(c);
      }
    }
  }
}

TEST_CASE("attention masks and logits: window, softcap, scale") {
  uint64_t seed = 400;
  for (bool causal : {true, false}) {
    for (uint32_t window : {1u, 5u, 64u, 100u}) {
      for (uint32_t tq : {1u, 40u}) {
        Case c;
        c.causal = causal;
        c.window = window;
        c.t_q = tq;
        c.t_kv = 150;
        c.n_heads = 4;
        c.n_kv_heads = 2;
        c.head_dim = window == 64 ? 128 : 50;
        c.seed = ++seed;
        check_case(c);
      }
    }
  }
  for (float softcap : {0.5f, 5.0f, 50.0f}) {
    for (uint32_t dim : {64u, 96u}) {
      Case c;
      c.softcap = softcap;
      c.t_q = 20;
      c.t_kv = 70;
      c.causal = true;
      c.n_heads = 4;
      c.n_kv_heads = 1;
      c.head_dim = dim;
      c.default_scale = false;
      c.scale = 1.0f;  // large logits, so the cap bites
      c.seed = ++seed;
      check_case(c);
    }
  }
  for (float scale : {0.0f, 0.01f, -0.3f, 1.0f}) {
    Case c;
    c.default_scale = false;
    c.scale = scale;
    c.t_q = 16;
    c.t_kv = 64;
    c.n_heads = 2;
    c.n_kv_heads = 2;
    c.head_dim = 128;
    c.causal = true;
    c.seed = ++seed;
    check_case(c);
  }
}

TEST_CASE("attention KV layouts: cache, ring (wrapping), padded rows, all KV dtypes") {
  uint64_t seed = 500;
  for (hs::KvType kv : {hs::KvType::kF32, hs::KvType::kF16, hs::KvType::kBF16, hs::KvType::kQ8_0, hs::KvType::kQ4_0}) {
    for (uint32_t tq : {1u, 4u, 30u}) {
      Case c;
      c.kv = kv;
      c.layout = Layout::kRing;
      c.ring_rows = 80;
      c.first_row = 70;  // keys 0..9 in rows 70..79, then 10.. wrap to rows 0..
      c.t_kv = 65;
      c.t_q = tq;
      c.window = 40;
      c.causal = true;
      c.n_heads = 8;
      c.n_kv_heads = 2;
      c.head_dim = 128;
      c.pad = 3;
      c.seed = ++seed;
      check_case(c);
      c.layout = Layout::kCache;
      c.window = 0;
      c.head_dim = 96;
      c.seed = ++seed;
      check_case(c);
      c.layout = Layout::kTokens;
      c.head_dim = 64;
      c.pad = 5;
      c.seed = ++seed;
      check_case(c);
    }
  }
}

// A ring whose first rows hold sink tokens (StreamingLLM): keys j < S in rows j, the rest in a ring
// of the rows after them, wrapping among the keys, read by both tilings, split-KV included; the
// window span and the sink span meet in one tile, or tiles apart.
TEST_CASE("attention KV layouts: a ring with sink tokens, every KV dtype and tiling") {
  uint64_t seed = 900;
  for (hs::KvType kv : {hs::KvType::kF32, hs::KvType::kF16, hs::KvType::kBF16, hs::KvType::kQ4_0}) {
    for (uint32_t tq : {1u, 3u, 24u}) {
      for (uint32_t t_kv : {50u, 160u, 1300u}) {
        if (kEmulated && t_kv > 1000) continue;  // split-KV over a ring of 1200: the host's share
        Case c;
        c.kv = kv;
        c.layout = Layout::kRing;
        c.sink_tokens = 4;
        c.window = t_kv > 1000 ? 1200 : t_kv > 100 ? 96 : 20;
        c.ring_rows = c.sink_tokens + c.window + tq + 6;
        if (c.ring_rows < t_kv) c.t_kv = c.ring_rows;  // the ring holds what it can
        else c.t_kv = t_kv;
        c.first_row = (c.ring_rows - c.sink_tokens) - 7;  // wraps 7 keys after the sinks
        c.t_q = tq;
        c.causal = true;
        c.n_heads = 4;
        c.n_kv_heads = 2;
        c.head_dim = tq == 3 ? 80 : 64;
        c.seed = ++seed;
        for (int run = 0; run < 3; ++run) {
          c.tiling = run == 1   ? hs::AttentionTiling::kPrefill
                     : run == 2 ? hs::AttentionTiling::kDecode
                                : hs::AttentionTiling::kAuto;
          check_case(c);
        }
        c.tiling = hs::AttentionTiling::kAuto;
        const Data d = make_data(c);
        INFO(describe(c));
        for (const int64_t target : test_targets()) {
          TargetScope scope(target);
          INFO(target_label(target));
          check_report(compare(d, run_split(d, 64, false)), tolerance(c));
        }
      }
    }
  }
}

// The same keys in every layout (cache, tokens, a ring with and without a wrap among them, padded
// rows) give bitwise the same O: where the kernels find rows differently per layout (decode: one
// base pointer for rows back to back, with whole tiles in a lean loop, else per-tile row pointers;
// prefill: f32 tiles read in place from the cache layout, else widened into scratch), they still
// do the same operations per row.
void check_layouts_agree(const Case& c) {
  INFO(describe(c));
  struct Layouts {
    Layout layout;
    uint32_t ring_rows, first_row, pad;
  };
  const Layouts layouts[] = {
      {Layout::kCache, 0, 0, 0},
      {Layout::kTokens, 0, 0, 0},
      {Layout::kRing, c.t_kv + 5, 2, 0},                 // rows back to back
      {Layout::kRing, c.t_kv + 5, (c.t_kv + 5) / 2, 0},  // wraps after half the keys
      {Layout::kCache, 0, 0, 3},                         // padded rows
  };
  for (const int64_t target : test_targets()) {
    TargetScope scope(target);
    const std::string target_name = target_label(target);
    INFO(target_name);
    std::vector<float> first;
    for (const Layouts& l : layouts) {
      Case lc = c;
      lc.layout = l.layout;
      lc.ring_rows = l.ring_rows;
      lc.first_row = l.first_row;
      lc.pad = l.pad;
      INFO("layout " << static_cast<int>(l.layout) << " ring " << l.ring_rows << "@" << l.first_row << " pad "
                     << l.pad);
      const Data data = make_data(lc);
      const std::vector<float> o = run_full(data);
      check_report(compare(data, o), tolerance(c));
      // Compare the heads' values only: the padded layout's O rows carry canaries after them.
      std::vector<float> packed;
      for (size_t t = 0; t < c.t_q; ++t) {
        packed.insert(packed.end(), o.begin() + t * data.o_stride,
                      o.begin() + t * data.o_stride + size_t{c.n_heads} * c.head_dim);
      }
      if (first.empty()) {
        first = packed;
      } else {
        CHECK(std::memcmp(first.data(), packed.data(), first.size() * sizeof(float)) == 0);
      }
    }
  }
}

// 2 kv heads of `group` query heads each, head_dim d.
Case grouped_case(uint32_t d, uint32_t group, uint64_t seed) {
  Case c;
  c.n_kv_heads = 2;
  c.n_heads = 2 * group;
  c.head_dim = d;
  c.seed = seed;
  return c;
}

TEST_CASE("attention decode: every K/V layout gives bitwise the same O") {
  uint64_t seed = 1200;
  const hs::KvType types[] = {hs::KvType::kF32, hs::KvType::kF16, hs::KvType::kBF16};
  int variant = 0;
  for (uint32_t d : {64u, 128u, 80u}) {
    for (uint32_t group : {1u, 3u, 4u}) {
      for (uint32_t t_kv : {1u, 64u, 65u, 300u}) {
        Case c = grouped_case(d, group, ++seed);
        c.kv = types[variant % 3];
        c.t_q = variant % 2 == 0 ? 1 : 2;
        c.t_kv = t_kv;
        c.causal = true;
        c.window = variant % 4 == 1 ? 100 : 0;
        c.softcap = variant % 5 == 2 ? 30.0f : 0.0f;
        ++variant;
        if (kEmulated && t_kv == 300) continue;  // 64 and 65 cross a tile's end already
        check_layouts_agree(c);
      }
    }
  }
}

// f32 mostly: the in-place tiles are f32 only (f16 and bf16 keep a few cases for contrast). A
// window starts a task's keys inside a tile: with t_q = t_kv, on a key block of 8 for a window of
// 41 (the tile is still read in place, from its first loaded key) and off one for 72 (copied);
// t_q below t_kv is a prefill chunk after earlier tokens; head_dim 50 pads to 64 (copied).
TEST_CASE("attention prefill: every K/V layout gives bitwise the same O") {
  uint64_t seed = 1300;
  int variant = 0;
  for (uint32_t d : {64u, 128u, 80u, 50u}) {
    for (uint32_t group : {1u, 4u}) {
      for (uint32_t t_kv : {16u, 64u, 130u, 300u}) {
        Case c = grouped_case(d, group, ++seed);
        c.tiling = hs::AttentionTiling::kPrefill;
        c.kv = variant % 11 == 3 ? hs::KvType::kF16 : variant % 11 == 7 ? hs::KvType::kBF16 : hs::KvType::kF32;
        c.t_q = variant % 2 == 0 ? t_kv : (t_kv + 1) / 2;
        c.t_kv = t_kv;
        c.causal = variant % 5 != 4;
        c.window = variant % 3 == 1 ? 41 : variant % 3 == 2 ? 72 : 0;
        c.softcap = variant % 7 == 2 ? 30.0f : 0.0f;
        ++variant;
        if (kEmulated && (t_kv == 300 || (t_kv == 130 && (group != 1 || d == 128 || d == 50)))) continue;
        check_layouts_agree(c);
      }
    }
  }
}

TEST_CASE("attention long sequence: T = 1000, f16 cache, GQA, causal window") {
  Case c;
  c.t_q = 1000;
  c.t_kv = 1000;
  c.n_heads = kEmulated ? 2 : 4;
  c.n_kv_heads = 1;
  c.head_dim = kEmulated ? 64 : 128;
  c.kv = hs::KvType::kF16;
  c.causal = true;
  c.window = 700;
  c.layout = Layout::kCache;
  c.seed = 600;
  check_case(c);
}

TEST_CASE("attention tilings: prefill and decode tiling agree with the reference on any shape") {
  uint64_t seed = 700;
  for (hs::AttentionTiling tiling : {hs::AttentionTiling::kPrefill, hs::AttentionTiling::kDecode}) {
    for (uint32_t dim : {8u, 64u, 128u, 256u}) {
      Case c;
      c.tiling = tiling;
      c.head_dim = dim;
      c.t_q = dim == 8 ? 1 : 37;
      c.t_kv = dim == 256 ? 63 : 129;
      c.n_heads = 7;
      c.n_kv_heads = 1;
      c.causal = true;
      c.window = dim == 64 ? 50 : 0;
      c.softcap = dim == 128 ? 3.0f : 0.0f;
      c.kv = dim == 256 ? hs::KvType::kBF16 : hs::KvType::kF32;
      c.seed = ++seed;
      check_case(c);
    }
  }
}

TEST_CASE("attention specialized d64/d128 equal the generic code") {
  uint64_t seed = 800;
  for (uint32_t dim : {64u, 128u}) {
    for (uint32_t tq : {1u, 50u}) {
      Case c;
      c.head_dim = dim;
      c.t_q = tq;
      c.t_kv = 90;
      c.n_heads = 8;
      c.n_kv_heads = 2;
      c.causal = true;
      c.kv = hs::KvType::kF16;
      c.seed = ++seed;
      const Data spec = make_data(c);
      c.generic_only = true;
      const Data gen = make_data(c);
      INFO(describe(c));
      std::vector<float> o(1);
      CHECK(std::string(hs::attention_kernel_name(args_for(spec, o.data()))) ==
            std::string(tq == 1 ? "decode_d" : "prefill_d") + std::to_string(dim));
      CHECK(std::string(hs::attention_kernel_name(args_for(gen, o.data()))) ==
            std::string(tq == 1 ? "decode_generic" : "prefill_generic"));
      for (const int64_t target : test_targets()) {
        TargetScope scope(target);
        const std::string target_name = target_label(target);
        INFO(target_name);
        const std::vector<float> a = run_full(spec), b = run_full(gen);
        check_report(compare(spec, a), tolerance(c));
        double diff = 0.0;
        for (size_t i = 0; i < a.size(); ++i) diff = std::fmax(diff, std::fabs(double{a[i]} - b[i]));
        CHECK(diff <= 1e-6);
      }
    }
  }
}

TEST_CASE("attention partial + merge: equals attention_f32, deterministic in any chunk order") {
  uint64_t seed = 900;
  const hs::KvType types[] = {hs::KvType::kF32, hs::KvType::kF16, hs::KvType::kBF16};
  int i = 0;
  for (uint32_t group : {1u, 4u, 8u}) {
    for (uint32_t tq : {1u, 3u}) {
      Case c;
      c.n_kv_heads = 2;
      c.n_heads = group * 2;
      c.t_q = tq;
      c.t_kv = 1000;
      c.head_dim = group == 4 ? 128 : 64;
      c.causal = true;
      c.window = tq == 3 ? 900 : 0;
      c.kv = types[i++ % 3];
      c.layout = Layout::kCache;
      c.seed = ++seed;
      const Data d = make_data(c);
      INFO(describe(c));
      for (const int64_t target : test_targets()) {
        TargetScope scope(target);
        const std::string target_name = target_label(target);
        INFO(target_name);
        const std::vector<float> full = run_full(d);
        for (uint32_t chunk : {1u, 7u, 64u, 100u, 333u, 1000u, 4096u}) {
          // Slow: one target is enough, and none under qemu (chunk 7 already merges 143 partials).
          if (chunk == 1 && (kEmulated || target != test_targets().front())) continue;
          INFO("chunk " << chunk);
          const std::vector<float> split = run_split(d, chunk, false);
          check_report(compare(d, split), tolerance(c));
          double diff = 0.0;
          for (size_t k = 0; k < full.size(); ++k) diff = std::fmax(diff, std::fabs(double{full[k]} - split[k]));
          CHECK(diff <= 2e-6);
          const std::vector<float> again = run_split(d, chunk, true);
          CHECK(std::memcmp(split.data(), again.data(), split.size() * sizeof(float)) == 0);
        }
      }
    }
  }
}

TEST_CASE("attention sub-ranges: only the asked rows are written, and any split is bitwise equal") {
  uint64_t seed = 1000;
  for (int variant = 0; variant < 8; ++variant) {
    const bool decode = variant % 2 == 1;
    Case c;
    c.n_kv_heads = 4;
    c.n_heads = 8;
    c.t_q = decode ? 2 : 70;
    c.t_kv = variant < 4 ? 150 : kEmulated ? 400 : 1000;  // past the window and several tiles either way
    c.head_dim = variant < 2 ? 80 : variant < 4 ? 64 : variant < 6 ? 128 : 50;
    c.kv = variant < 4 ? hs::KvType::kF32 : hs::KvType::kF16;
    c.causal = true;
    c.window = variant < 6 ? 60 : 0;
    c.softcap = variant == 2 || variant == 3 ? 20.0f : 0.0f;
    c.seed = ++seed;
    const Data d = make_data(c);
    INFO(describe(c));
    const uint32_t group = c.n_heads / c.n_kv_heads;
    for (const int64_t target : test_targets()) {
      TargetScope scope(target);
      const std::string target_name = target_label(target);
      INFO(target_name);
      const std::vector<float> whole = run_full(d);
      // One sub-range: kv heads [1, 3), rows [q0, q1).
      const uint32_t q0 = decode ? 1 : 5, q1 = decode ? 2 : 41;
      std::vector<float> o = fresh_output(d);
      Scratch s(scratch_bytes_for(c));
      hs::attention_f32(args_for(d, o.data()), 1, 3, q0, q1, s.p, s.bytes);
      CHECK(s.canary_intact());
      check_report(compare(d, o, q0, q1, 1 * group, 3 * group), tolerance(c));
      size_t written_outside = 0;
      for (size_t t = 0; t < c.t_q; ++t) {
        for (size_t x = 0; x < size_t{c.n_heads} * c.head_dim; ++x) {
          const size_t h = x / c.head_dim;
          const bool inside = t >= q0 && t < q1 && h >= 1 * group && h < 3 * group;
          if (!inside && !(o[t * d.o_stride + x] == kCanary)) ++written_outside;
        }
      }
      CHECK(written_outside == 0);
      // A ragged split of both ranges gives bitwise the whole result.
      std::vector<float> pieces = fresh_output(d);
      const hs::AttentionArgs a = args_for(d, pieces.data());
      const uint32_t cuts[] = {0, 1, 3, 4};  // kv heads
      const uint32_t qcuts_prefill[] = {0, 5, 6, 23, 40, 70};
      const uint32_t qcuts_decode[] = {0, 1, 2};
      const uint32_t* qcuts = decode ? qcuts_decode : qcuts_prefill;
      const size_t nq = decode ? 3 : 6;
      for (size_t gi = 0; gi + 1 < 4; ++gi) {
        for (size_t qi = 0; qi + 1 < nq; ++qi) {
          hs::attention_f32(a, cuts[gi], cuts[gi + 1], qcuts[qi], qcuts[qi + 1], s.p, s.bytes);
        }
      }
      CHECK(std::memcmp(whole.data(), pieces.data(), whole.size() * sizeof(float)) == 0);
    }
  }
}

TEST_CASE("attention scratch: exact size is enough and not overrun, one byte less writes nothing") {
  for (uint32_t group : {1u, 7u, 33u}) {
    for (uint32_t dim : {1u, 50u, 128u, 512u}) {
      Case c;
      c.n_kv_heads = 1;
      c.n_heads = group;
      c.head_dim = dim;
      c.t_q = group == 33 ? 3 : 40;
      c.t_kv = 70;
      c.causal = true;
      c.seed = 1100 + group * 1000 + dim;
      const Data d = make_data(c);
      INFO(describe(c));
      for (const int64_t target : test_targets()) {
        TargetScope scope(target);
        const std::string target_name = target_label(target);
        INFO(target_name);
        // run_full uses exactly attention_scratch_bytes and checks the canary behind it.
        check_report(compare(d, run_full(d)), tolerance(c));
        std::vector<float> o = fresh_output(d);
        Scratch s(scratch_bytes_for(c) - 1);
        hs::attention_f32(args_for(d, o.data()), 0, 1, 0, c.t_q, s.p, s.bytes);
        size_t written = 0;
        for (const float x : o) written += !(x == kCanary);
        CHECK(written == 0);
        CHECK(s.canary_intact());
      }
    }
  }
}

TEST_CASE("attention NaN: propagates to the rows (and V columns) that see it, nowhere else") {
  uint64_t seed = 1200;
  for (hs::KvType kv : {hs::KvType::kF32, hs::KvType::kF16, hs::KvType::kBF16}) {
    for (bool decode : {false, true}) {
      for (int what = 0; what < 3; ++what) {
        for (bool softcap : {false, true}) {
          Case c;
          c.kv = kv;
          c.t_q = decode ? 1 : 40;
          c.t_kv = 100;
          c.n_heads = 4;
          c.n_kv_heads = 2;
          c.head_dim = 64;
          c.causal = true;
          c.softcap = softcap ? 10.0f : 0.0f;
          c.seed = ++seed;
          if (what == 0) c.nan_k_key = decode ? 50 : 75;  // rows with position >= 75 see it
          if (what == 1) c.nan_v_key = decode ? 50 : 75;
          if (what == 2) {
            c.nan_q_token = decode ? 0 : 20;
            c.nan_q_head = 1;
          }
          const Data d = make_data(c);
          INFO(describe(c));
          for (const int64_t target : test_targets()) {
            TargetScope scope(target);
            const std::string target_name = target_label(target);
            INFO(target_name);
            const Report r = compare(d, run_full(d));
            check_report(r, tolerance(c));
            CHECK(r.nan_values > 0);
          }
        }
      }
    }
  }
}

TEST_CASE("attention invalid arguments: reported, and nothing is written") {
  Case c;
  c.t_q = 4;
  c.t_kv = 8;
  c.n_heads = 4;
  c.n_kv_heads = 2;
  c.head_dim = 64;
  const Data d = make_data(c);
  std::vector<float> o = fresh_output(d);
  Scratch s(hs::attention_scratch_bytes(577, 2));
  const hs::AttentionArgs good = args_for(d, o.data());
  CHECK(hs::attention_args_error(good) == nullptr);
  auto expect_nothing = [&](const hs::AttentionArgs& a, uint32_t g0, uint32_t g1, uint32_t q0, uint32_t q1) {
    hs::attention_f32(a, g0, g1, q0, q1, s.p, s.bytes);
    size_t written = 0;
    for (const float x : o) written += !(x == kCanary);
    CHECK(written == 0);
  };
  hs::AttentionArgs a = good;
  a.head_dim = 0;
  CHECK(hs::attention_args_error(a) != nullptr);
  expect_nothing(a, 0, 2, 0, 4);
  a = good;
  a.head_dim = 577;
  CHECK(hs::attention_args_error(a) != nullptr);
  expect_nothing(a, 0, 2, 0, 4);
  a = good;
  a.n_kv_heads = 3;
  CHECK(std::string(hs::attention_args_error(a)) == "n_heads is not a multiple of n_kv_heads");
  expect_nothing(a, 0, 2, 0, 4);
  a = good;
  a.n_kv_heads = 0;
  CHECK(hs::attention_args_error(a) != nullptr);
  expect_nothing(a, 0, 2, 0, 4);
  a = good;
  a.q_token_stride = 10;
  CHECK(hs::attention_args_error(a) != nullptr);
  expect_nothing(a, 0, 2, 0, 4);
  a = good;
  a.softcap = -1.0f;
  CHECK(hs::attention_args_error(a) != nullptr);
  expect_nothing(a, 0, 2, 0, 4);
  a = good;
  a.kv_type = static_cast<hs::KvType>(7);
  CHECK(hs::attention_args_error(a) != nullptr);
  expect_nothing(a, 0, 2, 0, 4);
  const float inf = std::numeric_limits<float>::infinity();
  for (const float bad : {kNaN, inf, -inf}) {
    const float sinks[4] = {0.5f, -1.0f, bad, 2.0f};
    a = good;
    a.sinks = sinks;
    CHECK(std::string(hs::attention_args_error(a)) == "sinks holds a value that is not finite");
    expect_nothing(a, 0, 2, 0, 4);
  }
  expect_nothing(good, 0, 3, 0, 4);  // kv head past the end
  expect_nothing(good, 1, 1, 0, 4);  // empty
  expect_nothing(good, 0, 2, 2, 5);  // query row past the end
  hs::attention_f32(good, 0, 2, 0, 4, nullptr, 1 << 20);
  size_t written = 0;
  for (const float x : o) written += !(x == kCanary);
  CHECK(written == 0);
}

TEST_CASE("attention T_kv = 0: every row is zero") {
  Case c;
  c.t_q = 3;
  c.t_kv = 0;
  c.n_heads = 2;
  c.n_kv_heads = 1;
  c.head_dim = 64;
  check_case(c);
}

TEST_CASE("attention widening: one key gives O = V exactly (f16 subnormals, Inf, NaN, bf16)") {
  // With a single key p = 1 and l = 1, so O must equal V exactly: this pins the f16/bf16 to f32
  // widening of every target (vector body and scalar tail) to the IEEE values.
  constexpr float kInf = std::numeric_limits<float>::infinity();
  // f16: ±0, ±max, the smallest normal, subnormals (the smallest, one negative, 1.2e-6 rounded),
  // ±Inf and two ordinary values.
  const float f16_values[] = {0.0f,
                              -0.0f,
                              1.0f,
                              -2.5f,
                              65504.0f,
                              -65504.0f,
                              6.103515625e-05f,
                              5.9604644775390625e-08f,
                              -3.0517578125e-05f,
                              1.2e-06f,
                              kInf,
                              -kInf,
                              0.333251953125f,
                              1024.5f};
  // bf16: ±0, the largest finite and smallest normal value, ±Inf. No f32 subnormals: ARMv7 NEON
  // flushes them to zero in any arithmetic.
  const float bf16_values[] = {0.0f, -0.0f, 1.0f,        -2.5f, 3.3895313892515355e+38f, 1.1754943508222875e-38f,
                               kInf, -kInf, 0.333984375f};
  for (hs::KvType kv : {hs::KvType::kF16, hs::KvType::kBF16, hs::KvType::kF32}) {
    for (hs::AttentionTiling tiling : {hs::AttentionTiling::kPrefill, hs::AttentionTiling::kDecode}) {
      for (uint32_t dim : {40u, 64u}) {
        Case c;
        c.kv = kv;
        c.tiling = tiling;
        c.t_q = 3;
        c.t_kv = 1;
        c.n_heads = 2;
        c.n_kv_heads = 1;
        c.head_dim = dim;
        c.v_values = kv == hs::KvType::kBF16 ? std::vector<float>(std::begin(bf16_values), std::end(bf16_values))
                                             : std::vector<float>(std::begin(f16_values), std::end(f16_values));
        c.v_values.push_back(kNaN);
        const Data d = make_data(c);
        INFO(describe(c));
        for (const int64_t target : test_targets()) {
          TargetScope scope(target);
          const std::string target_name = target_label(target);
          INFO(target_name);
          const std::vector<float> o = run_full(d);
          size_t mismatches = 0;
          for (size_t t = 0; t < c.t_q; ++t) {
            for (size_t h = 0; h < c.n_heads; ++h) {
              for (size_t x = 0; x < dim; ++x) {
                const float want = d.vref[x];  // key 0, kv head 0
                const float got = o[t * d.o_stride + h * dim + x];
                // Equal values (the sign of a zero may differ: 0 + 1 · (-0) is +0 in IEEE).
                const bool same = std::isnan(want) ? std::isnan(got) : got == want;
                if (!same) ++mismatches;
              }
            }
          }
          CHECK(mismatches == 0);
        }
      }
    }
  }
}

TEST_CASE("attention Inf in V reaches only the rows that see it") {
  uint64_t seed = 1300;
  for (hs::AttentionTiling tiling : {hs::AttentionTiling::kPrefill, hs::AttentionTiling::kDecode}) {
    Case c;
    c.tiling = tiling;
    c.t_q = 30;
    c.t_kv = 90;
    c.n_heads = 4;
    c.n_kv_heads = 2;
    c.head_dim = 64;
    c.causal = true;
    c.seed = ++seed;
    c.v_values.assign(64, 0.5f);
    c.v_values[7] = std::numeric_limits<float>::infinity();
    // All keys carry Inf in column 7: every row that sees a key has +Inf there, every other
    // column is exactly 0.5 up to rounding; rows 0..29 with position 60.. all see keys.
    const Data d = make_data(c);
    INFO(describe(c));
    for (const int64_t target : test_targets()) {
      TargetScope scope(target);
      const std::string target_name = target_label(target);
      INFO(target_name);
      check_report(compare(d, run_full(d)), tolerance(c));
    }
  }
  // Only key 70 has Inf (in column 3): causal rows before it stay finite.
  for (hs::AttentionTiling tiling : {hs::AttentionTiling::kPrefill, hs::AttentionTiling::kDecode}) {
    Case c;
    c.tiling = tiling;
    c.t_q = 40;
    c.t_kv = 100;
    c.n_heads = 2;
    c.n_kv_heads = 1;
    c.head_dim = 16;
    c.causal = true;
    c.nan_v_key = 70;  // NaN in column 8 of key 70
    c.seed = ++seed;
    const Data d = make_data(c);
    INFO(describe(c));
    for (const int64_t target : test_targets()) {
      TargetScope scope(target);
      const std::string target_name = target_label(target);
      INFO(target_name);
      const Report r = compare(d, run_full(d));
      check_report(r, tolerance(c));
      CHECK(r.nan_values == 30 * 2);  // rows at positions 70..99, both heads, one column
    }
  }
}

TEST_CASE("attention random sweep: every axis mixed (seeded)") {
  // A fixed pseudo-random selection over the whole cross product, with the work per case
  // bounded so the suite stays fast on the SCALAR target too.
  const uint32_t dims[] = {1, 8, 50, 64, 80, 96, 128, 256, 512};
  const uint32_t lengths[] = {1, 2, 15, 16, 17, 63, 64, 65, 1000};
  const uint32_t groups[] = {1, 2, 4, 7, 8};
  const hs::KvType types[] = {hs::KvType::kF32, hs::KvType::kF16, hs::KvType::kBF16};
  Rng pick(4242);
  const int wanted = kEmulated ? 40 : 120;
  const double max_work = kEmulated ? 1e6 : 4e6;
  int run = 0;
  for (int attempt = 0; attempt < 400 && run < wanted; ++attempt) {
    Case c;
    c.head_dim = dims[pick.next() % 9];
    c.t_q = lengths[pick.next() % 9];
    c.t_kv = lengths[pick.next() % 9];
    const uint32_t group = groups[pick.next() % 5];
    c.n_kv_heads = 1 + static_cast<uint32_t>(pick.next() % 3);
    c.n_heads = group * c.n_kv_heads;
    const double work = double(c.t_q) * c.t_kv * c.n_heads * c.head_dim;
    if (work > max_work) continue;
    c.kv = types[pick.next() % 3];
    c.causal = pick.next() % 2 == 0;
    const uint32_t windows[] = {0, 0, 1, 7, 64, 300};
    c.window = windows[pick.next() % 6];
    const float softcaps[] = {0.0f, 0.0f, 0.0f, 1.0f, 30.0f};
    c.softcap = softcaps[pick.next() % 5];
    if (pick.next() % 4 == 0) {
      c.default_scale = false;
      const float scales[] = {0.0f, 0.05f, -0.2f, 0.7f};
      c.scale = scales[pick.next() % 4];
    }
    const uint32_t layout = static_cast<uint32_t>(pick.next() % 3);
    c.layout = static_cast<Layout>(layout);
    if (c.layout == Layout::kRing) {
      c.ring_rows = c.t_kv + static_cast<uint32_t>(pick.next() % 20);
      c.first_row = static_cast<uint32_t>(pick.next() % c.ring_rows);
    }
    c.pad = static_cast<uint32_t>(pick.next() % 3);
    const hs::AttentionTiling tilings[] = {hs::AttentionTiling::kAuto, hs::AttentionTiling::kAuto,
                                           hs::AttentionTiling::kPrefill, hs::AttentionTiling::kDecode};
    c.tiling = tilings[pick.next() % 4];
    c.generic_only = pick.next() % 5 == 0;
    c.seed = 5000 + static_cast<uint64_t>(attempt);
    check_case(c);
    ++run;
  }
  CHECK(run == wanted);
}

TEST_CASE("attention partial + merge on a wrapping ring with the prefill tiling") {
  Case c;
  c.n_kv_heads = 2;
  c.n_heads = 8;
  c.t_q = 5;  // 5 tokens × 4 heads = 20 rows: prefill tiling
  c.t_kv = 300;
  c.head_dim = 96;
  c.causal = true;
  c.window = 250;
  c.kv = hs::KvType::kF16;
  c.layout = Layout::kRing;
  c.ring_rows = 320;
  c.first_row = 100;
  c.seed = 1400;
  const Data d = make_data(c);
  INFO(describe(c));
  for (const int64_t target : test_targets()) {
    TargetScope scope(target);
    const std::string target_name = target_label(target);
    INFO(target_name);
    const std::vector<float> full = run_full(d);
    for (uint32_t chunk : {50u, 64u, 128u}) {
      const std::vector<float> split = run_split(d, chunk, chunk == 64);
      check_report(compare(d, split), tolerance(c));
      double diff = 0.0;
      for (size_t k = 0; k < full.size(); ++k) diff = std::fmax(diff, std::fabs(double{full[k]} - split[k]));
      CHECK(diff <= 2e-6);
    }
  }
}

// The shared case table (tests/reference/attention_cases.hpp), every case on every target: through the
// automatic choice, each tiling forced, the runtime-head_dim code where d64/d128 have their own,
// and split-KV partials + merge in chunks of 16 keys where the rows are few (as the Cortex-M
// harness runs them).
Case table_case(const ht::AttentionCase& t) {
  Case c;
  c.t_q = t.t_q;
  c.t_kv = t.t_kv;
  c.n_heads = t.n_heads;
  c.n_kv_heads = t.n_kv_heads;
  c.head_dim = t.head_dim;
  c.kv = t.kv;
  c.causal = t.causal;
  c.window = t.window;
  c.softcap = t.softcap;
  c.default_scale = t.scale == 0.0f;
  c.scale = t.scale;
  c.seed = t.seed;
  c.table_inputs = true;
  if (ht::case_has_sinks(t)) {
    for (uint32_t h = 0; h < t.n_heads; ++h) c.sinks.push_back(ht::case_sink(t, h));
  }
  c.sink_tokens = t.sink_tokens;
  if (t.alibi) {
    for (uint32_t h = 0; h < t.n_heads; ++h) c.alibi_slopes.push_back(ht::case_alibi_slope(t, h));
  }
  c.prefix = t.prefix;
  c.window_symmetric = t.window_symmetric;
  if (ht::case_has_mask(t)) {
    // Rows 3 entries longer than t_kv, the extra ones NaN / hiding: a kernel that reads past a row
    // or takes t_kv for the stride gets them.
    c.mask_stride = size_t{t.t_kv} + 3;
    for (uint32_t i = 0; i < t.t_q; ++i) {
      for (size_t j = 0; j < c.mask_stride; ++j) {
        const float e = j < t.t_kv ? ht::case_mask_entry(t, i, static_cast<uint32_t>(j)) : kNaN;
        if (t.mask == ht::CaseMask::kBool) {
          c.mask_bool.push_back(j < t.t_kv && e == 0.0f ? 1 : 0);
        } else {
          c.mask_additive.push_back(e);
        }
      }
    }
  }
  return c;
}

TEST_CASE("attention case table: every case on every target, each tiling, generic code, split-KV") {
  for (const ht::AttentionCase& t : ht::kAttentionCases) {
    Case c = table_case(t);
    INFO(t.name);
    Data d = make_data(c);
    INFO(describe(c));
    const bool specialized = c.head_dim == 64 || c.head_dim == 128;
    const bool few_rows = c.t_q * (c.n_heads / c.n_kv_heads) <= 32;
    for (const int64_t target : test_targets()) {
      TargetScope scope(target);
      const std::string target_name = target_label(target);
      INFO(target_name);
      for (int run = 0; run < 4; ++run) {
        if (run == 3 && !specialized) continue;
        d.c.tiling = run == 1   ? hs::AttentionTiling::kPrefill
                     : run == 2 ? hs::AttentionTiling::kDecode
                                : hs::AttentionTiling::kAuto;
        d.c.generic_only = run == 3;
        INFO("run " << run << " (0 auto, 1 prefill tiling, 2 decode tiling, 3 generic code)");
        check_report(compare(d, run_full(d)), tolerance(c));
      }
      d.c.tiling = hs::AttentionTiling::kAuto;
      d.c.generic_only = false;
      if (few_rows) check_report(compare(d, run_split(d, 16, false)), tolerance(c));
    }
  }
}
