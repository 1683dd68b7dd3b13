// attend(), or AttentionOp's reshape and run, with shapes, parameters and data decoded from the
// fuzz bytes. It must return an error
// (and then write nothing) or match the double-precision reference: never crash, never read or
// write outside the buffers (ASan), never hang.
//
// Bytes: [0] t_q, [1..2] t_kv, [3] kv heads, [4] group, [5..6] head_dim, [7] flags, [8] window,
// [9] softcap, [10] scale, [11] special values (bit 2: through AttentionOp; bit 3: sink logits, head h's
// from byte 12 + h; bit 4: sink tokens, byte 8 / 16 of them; bit 5: ALiBi, head h's slope from byte
// 12 + h as well; bit 6: K/V in q8_0 or q4_0 blocks; bit 7: a packed batch, its lengths from the last
// byte: see packed_lengths); the second-last byte, when its top bit is set, a prefix of its low 7
// bits; the third-last's top two bits set, a symmetric window; the rest seeds the data. Work is capped so the reference
// stays fast: the fuzzer explores shapes, not throughput.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <vector>

#include "headway/attention.hpp"
#include "headway/dtype_convert.hpp"
#include "headway/quantize.hpp"
#include "tests/fuzz/fuzz_common.hpp"
#include "tests/reference/reference_args.hpp"
#include "tests/reference/reference_attention.hpp"
#include "tests/support/quantized_query.hpp"
#include "tests/support/quantized_rows.hpp"
#include "tests/support/test_rng.hpp"

namespace {

using namespace headway;

uint8_t byte(const uint8_t* data, size_t size, size_t i) { return i < size ? data[i] : 0; }

float param(uint8_t b) {
  // Mostly ordinary values; some that attend() must reject.
  switch (b % 16) {
    case 0: return std::numeric_limits<float>::quiet_NaN();
    case 1: return std::numeric_limits<float>::infinity();
    case 2: return -1.0f;
    case 3: return 0.0f;
    default: return static_cast<float>(b) / 32.0f;  // 0.125 .. 8
  }
}

float sink_value(uint8_t b) {
  // Mostly ordinary logits, large ones of both signs; some that attend() must reject.
  switch (b % 32) {
    case 0: return std::numeric_limits<float>::quiet_NaN();
    case 1: return std::numeric_limits<float>::infinity();
    case 2: return -std::numeric_limits<float>::infinity();
    default: return (static_cast<float>(b) - 128.0f) / 4.0f;  // -31.25 .. 31.75
  }
}

float slope_value(uint8_t b) {
  // Slopes of 0 .. 1, steep ones up to 8, and some that attend() must reject.
  switch (b % 64) {
    case 0: return std::numeric_limits<float>::quiet_NaN();
    case 1: return -std::numeric_limits<float>::infinity();
    case 2: return 8.0f;
    default: return static_cast<float>(b) / 256.0f;
  }
}

// 1 to 4 sequences over `total` rows: cumulative lengths cut at points drawn from `b` (some
// lengths 0, which attend() must reject).
std::vector<uint32_t> packed_lengths(uint8_t b, uint32_t salt, uint32_t total) {
  const uint32_t n = 1 + b % 4;
  std::vector<uint32_t> cu(n + 1, 0);
  uint32_t x = b * 2654435761u + salt;
  for (uint32_t i = 1; i < n; ++i) {
    x = x * 1664525u + 1013904223u;
    cu[i] = total ? (x >> 8) % (total + 1) : 0;
  }
  cu[n] = total;
  std::sort(cu.begin(), cu.end());
  return cu;
}

ThreadPool* pool() {
  static ThreadPool* p = [] {
    static ThreadPool tp;
    (void)tp.create(3);
    return &tp;
  }();
  return p;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 12) return 0;
  AttentionShape s;
  s.t_q = byte(data, size, 0) % 17;                                  // 0 is rejected
  s.t_kv = (byte(data, size, 1) | byte(data, size, 2) << 8) % 1300;  // > 1024: split-KV
  s.n_kv_heads = byte(data, size, 3) % 5;                            // 0 is rejected
  const uint32_t group = byte(data, size, 4) % 9;
  s.n_heads = s.n_kv_heads * (group ? group : 1) + (group == 0 ? 1 : 0);  // group 0: not a multiple
  s.head_dim = (byte(data, size, 5) | byte(data, size, 6) << 8) % 600;    // 577+ and 0 rejected
  const uint8_t flags = byte(data, size, 7);
  AttentionParams p;
  p.causal = flags & 1;
  p.window = (flags & 2) ? byte(data, size, 8) : 0;
  p.softcap = (flags & 4) ? param(byte(data, size, 9)) : 0.0f;
  p.scale = (flags & 8) ? param(byte(data, size, 10)) : 0.0f;
  // f32, f16, bf16 or a value that is no dtype; with special bit 6, q8_0 and q4_0 for f16 and bf16.
  const uint8_t code = (flags >> 4) % 4;
  const bool blocks = (byte(data, size, 11) & 64) != 0 && (code == 1 || code == 2);
  const DType dtype = blocks      ? (code == 1 ? DType::kQ8_0 : DType::kQ4_0)
                      : code == 3 ? static_cast<DType>(9)
                                  : static_cast<DType>(code);
  const bool threaded = flags & 64;
  const bool short_workspace = flags & 128;
  const uint8_t special = byte(data, size, 11);
  std::vector<float> sinks;
  if (special & 8) {
    sinks.resize(s.n_heads);
    for (uint32_t h = 0; h < s.n_heads; ++h) sinks[h] = sink_value(byte(data, size, 12 + h));
    p.sinks = sinks.data();
  }
  if (special & 16) p.sink_tokens = byte(data, size, 8) / 16;  // 0..15: some not below the window
  std::vector<float> slopes;
  if (special & 32) {
    slopes.resize(s.n_heads);
    for (uint32_t h = 0; h < s.n_heads; ++h) slopes[h] = slope_value(byte(data, size, 12 + h));
    p.alibi_slopes = slopes.data();
  }

  // A packed batch: lengths of q (and of k where t_kv differs, or bit 4 of the last byte says so);
  // bit 7 of the last byte moves one boundary, which must then be rejected or still be valid.
  std::vector<uint32_t> cu_q, cu_k;
  if (special & 128) {
    const uint8_t b = data[size - 1];
    cu_q = packed_lengths(b, 1, s.t_q);
    if (s.t_kv != s.t_q || (b & 16)) cu_k = packed_lengths(b, 2, s.t_kv);
    if (b & 128) cu_q[b % cu_q.size()] += 1 + (b >> 5) % 2;
    p.cu_seqlens_q = cu_q.data();
    p.cu_seqlens_k = cu_k.empty() ? nullptr : cu_k.data();
    p.n_seqs = static_cast<uint32_t>(cu_q.size() - 1);
  }

  if (byte(data, size, size - 2) & 128) p.prefix = byte(data, size, size - 2) & 127;  // some past t_kv
  p.window_symmetric = (byte(data, size, size - 3) & 0xC0) == 0xC0;  // often without a window, or causal

  // A general mask: bool, additive or (rejected) both; rows of t_kv entries, 2 more, or (rejected
  // where there are keys) 1 fewer.
  const uint8_t mask_bits = byte(data, size, size - 4);
  const uint32_t mask_kind = mask_bits & 3;
  const size_t mask_stride = (mask_bits & 4) && s.t_kv > 0 ? s.t_kv - 1 : s.t_kv + ((mask_bits & 8) ? 2 : 0);

  const uint64_t work = uint64_t{s.t_q} * s.t_kv * s.n_heads * s.head_dim;
  if (work > (uint64_t{1} << 21)) return 0;

  uint64_t seed = 0;
  for (size_t i = 12; i < size; ++i) seed = seed * 131 + data[i];
  test::Rng rng(seed);
  std::vector<float> q(size_t{s.t_q} * s.n_heads * s.head_dim);
  std::vector<float> k(size_t{s.t_kv} * s.n_kv_heads * s.head_dim), v(k.size());
  for (float& x : q) x = rng.normal();
  for (float& x : k) x = rng.normal();
  for (float& x : v) x = rng.normal();
  // One NaN in Q or V at a chosen place: it must reach exactly the rows the reference says.
  if ((special & 3) == 1 && !q.empty()) q[special % q.size()] = std::numeric_limits<float>::quiet_NaN();
  // (Not with a mask: a key only the mask hides still enters as 0 · V, where the reference skips it.)
  if ((special & 3) == 2 && !v.empty() && mask_kind == 0) {
    v[(special * 7u) % v.size()] = std::numeric_limits<float>::quiet_NaN();
  }
  std::vector<uint8_t> mask_bool;
  std::vector<float> mask_additive;
  if (mask_kind != 0) {
    // About one entry in three hidden, the rest in [−2, 2); a row in seven hidden entirely.
    const size_t entries = size_t{s.t_q} * mask_stride;
    for (size_t e = 0; e < entries; ++e) {
      const uint64_t x = rng.next();
      const bool hidden = x % 3 == 0 || e / (mask_stride ? mask_stride : 1) % 7 == 3;
      if (mask_kind & 1) mask_bool.push_back(hidden ? 0 : 1);
      if (mask_kind & 2) {
        mask_additive.push_back(hidden ? -std::numeric_limits<float>::infinity()
                                       : static_cast<float>(static_cast<int>(x >> 40 & 31) - 16) * 0.125f);
      }
    }
    p.mask_bool = mask_kind & 1 ? mask_bool.data() : nullptr;
    p.mask_additive = mask_kind & 2 ? mask_additive.data() : nullptr;
    if (entries == 0) {
      p.mask_bool = nullptr;
      p.mask_additive = nullptr;
    }
    p.mask_row_stride = mask_stride;
  }

  std::vector<uint16_t> k16(k.size()), v16(v.size());
  std::vector<float> kq = k, vq = v;  // K, V as stored
  if (dtype == DType::kF16) {
    f32_to_f16(k.data(), k16.data(), k.size());
    f32_to_f16(v.data(), v16.data(), v.size());
    f16_to_f32(k16.data(), kq.data(), k.size());
    f16_to_f32(v16.data(), vq.data(), v.size());
  } else if (dtype == DType::kBF16) {
    f32_to_bf16(k.data(), k16.data(), k.size());
    f32_to_bf16(v.data(), v16.data(), v.size());
    bf16_to_f32(k16.data(), kq.data(), k.size());
    bf16_to_f32(v16.data(), vq.data(), v.size());
  }
  // Block formats: each row of head_dim values quantized as ggml does; exactly the row bytes, so
  // ASan sees a kernel read past them.
  std::vector<uint8_t> kb, vb;
  if (blocks && s.head_dim > 0 && s.head_dim <= kMaxHeadDim) {
    FUZZ_CHECK(test::quantize_rows_and_back(dtype, kq, s.head_dim, &kb));
    FUZZ_CHECK(test::quantize_rows_and_back(dtype, vq, s.head_dim, &vb));
  }
  const void* kp = blocks                 ? static_cast<const void*>(kb.data())
                   : dtype == DType::kF32 ? static_cast<const void*>(k.data())
                                          : k16.data();
  const void* vp = blocks                 ? static_cast<const void*>(vb.data())
                   : dtype == DType::kF32 ? static_cast<const void*>(v.data())
                                          : v16.data();

  ThreadPool* tp = threaded ? pool() : nullptr;
  const uint32_t threads = tp ? tp->threads() : 1;
  const Result<size_t> need = attention_workspace_bytes(s, p, threads);
  // Exactly the bytes asked for (rounded to the alignment), so ASan sees any overrun.
  const size_t ws_bytes = need.ok() ? (short_workspace && need.value() > 0 ? need.value() - 1 : need.value()) : 64;
  void* ws = std::aligned_alloc(64, (ws_bytes + 63) / 64 * 64 + 64);
  constexpr float kPoison = -12345.0f;
  std::vector<float> o(q.size() + 1, kPoison);  // +1: a canary after the last row
  const float* qp = q.empty() ? nullptr : q.data();
  const void* kpp = k.empty() ? nullptr : kp;
  const void* vpp = v.empty() ? nullptr : vp;
  Status st;
  if (special & 4) {  // the same call through AttentionOp: reshape agrees with the workspace query
    AttentionOp op;
    st = op.reshape(s, p, dtype, threads);
    if (!need.ok()) FUZZ_CHECK(!st.ok());  // it also checks the parameters and the dtype
    if (st.ok()) {
      FUZZ_CHECK(need.ok() && op.workspace_bytes() == need.value());
      st = op.run(qp, kpp, vpp, o.data(), tp, ws, ws_bytes);
    }
  } else {
    st = attend(qp, kpp, vpp, dtype, o.data(), s, p, tp, ws, ws_bytes);
  }
  std::free(ws);
  FUZZ_CHECK(o.back() == kPoison);
  if (!need.ok() || short_workspace || !st.ok()) {
    // A shape attention_workspace_bytes rejects, attend rejects too; a rejected call writes nothing.
    if (!need.ok() || (short_workspace && need.value() > 0)) FUZZ_CHECK(!st.ok());
    if (!st.ok()) {
      for (const float x : o) FUZZ_CHECK(x == kPoison);
      return 0;
    }
  }

  const test::RefAttention r = test::ref_args(s, p);
  const std::vector<double> want = test::reference_attention(r, q.data(), kq.data(), vq.data());
  // The suites' tolerances hold for logits of unit scale (scale 1/sqrt(head_dim) over unit-normal
  // data); f32 rounding in a dot product grows with the logits, so larger scales get a
  // proportionally wider band (found: scale 3.2, head_dim 465, error 1.1e-4). Where decode
  // quantizes the query for integer Q·Kᵀ, the suites' band (quantized_query.hpp).
  const double logit_scale = r.scale * std::sqrt(static_cast<double>(s.head_dim));
  const bool query_quantized = blocks && test::decode_quantizes_query(r, static_cast<simd::KvType>(dtype));
  const double tol = (query_quantized                  ? test::kQuantizedQueryTolerance
                      : dtype == DType::kF32 || blocks ? 1e-4
                      : dtype == DType::kF16           ? 2e-3
                                                       : 3e-2) *
                     (logit_scale > 1.0 ? logit_scale : 1.0);
  for (size_t i = 0; i < want.size(); ++i) {
    if (std::isnan(want[i])) {
      FUZZ_CHECK(std::isnan(o[i]));
    } else {
      FUZZ_CHECK(std::fabs(o[i] - want[i]) <= tol * (1.0 + std::fabs(want[i])));
    }
  }
  return 0;
}
