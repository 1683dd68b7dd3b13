// Multi-head latent attention's shapes (DeepSeek, MiniCPM3) through attend() and the split-KV
// kernels, on every Highway target this machine supports, against the double reference.
//
// MLA caches one row per token, [rope key | latent] (64 + 512 = 576 or 32 + 256 = 288 values),
// shared by every head (one kv head): K and V at once, as KvCache holds it (V aliases K). The
// kernels attend with head_dim = the whole row and V = the same row, so their O is the whole row
// wide; the MLA layer keeps each head's latent part. The reference computes that part only, from
// its own description: K the whole row, V the latent slice (RefAttention::v_offset, v_head_dim),
// never the rope values as V. The inputs are unit-normal rows rounded to the cache dtype (f32,
// f16, q8_0: each row quantized on its own, as KvCache stores it); the scale is the model's,
// 1/sqrt(qk_nope + qk_rope), not the row's. Tolerances are attention_kernel_test.cc's: 1e-4 (f32,
// q8_0 widened), 2e-3 (f16), and the quantized query's band where decode multiplies int8.
// Every call is bitwise the same for pools of 2 and 3 threads as for none, on every target.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "headway/attention.hpp"
#include "headway/thread_pool.hpp"
#include "simd/attention/attention.h"
#include "tests/kernels/target_scope.hpp"
#include "tests/reference/reference_attention.hpp"
#include "tests/support/quantized_query.hpp"
#include "tests/support/quantized_rows.hpp"
#include "tests/support/test_rng.hpp"

namespace hs = headway::simd;
namespace ht = headway::test;
using headway::DType;

namespace {

#ifdef HEADWAY_TEST_EMULATED
constexpr uint32_t kPrefillTokens = 40;  // qemu-user runs the reference and the kernels tens of times slower
#else
constexpr uint32_t kPrefillTokens = 96;  // past one 64-key tile, within the suite's time
#endif
constexpr uint32_t kDecodeKeys = 300;
// Enough keys that attend() splits a decode step over chunks (attention_split: 2 · kAttnKvChunk).
constexpr uint32_t kSplitKeys = 1100;
// The kernels' own split-KV on the 300-key decode, in chunks shorter than attend() would take.
constexpr uint32_t kKernelChunk = 128;

// A cache row: rope values, then the latent; the model's query head is qk_nope + qk_rope wide.
struct LatentRow {
  const char* model;
  uint32_t rope, latent, qk_head;
  uint32_t width() const { return rope + latent; }
};
constexpr LatentRow kRows[] = {{"DeepSeek", 64, 512, 128 + 64}, {"MiniCPM3", 32, 256, 64 + 32}};

enum class Mode { kPrefill, kDecode, kSplitDecode };
const char* mode_name(Mode m) {
  return m == Mode::kPrefill ? "prefill (causal)" : m == Mode::kDecode ? "decode" : "decode, split-KV";
}

struct Aligned {
  explicit Aligned(size_t bytes) : size((bytes + 63) / 64 * 64), p(std::aligned_alloc(64, size ? size : 64)) {}
  ~Aligned() { std::free(p); }
  Aligned(const Aligned&) = delete;
  Aligned& operator=(const Aligned&) = delete;
  size_t size;
  void* p;
};

struct Problem {
  LatentRow row;
  headway::AttentionShape shape;
  headway::AttentionParams params;
  DType dtype;
  std::vector<float> q;          // [t_q, n_heads, width]
  std::vector<float> rows;       // [t_kv, width] as stored (f32) or as the cache dtype reads back
  std::vector<uint16_t> rows16;  // f16 bit patterns
  std::vector<uint8_t> rows_q;   // q8_0 rows, each quantized on its own
  std::vector<double> ref;       // [t_q, n_heads, latent]
  ht::RefAttention ref_args;

  Problem(const LatentRow& r, uint32_t n_heads, DType t, Mode mode, uint64_t seed) : row(r), dtype(t) {
    const uint32_t t_kv = mode == Mode::kPrefill ? kPrefillTokens : mode == Mode::kDecode ? kDecodeKeys : kSplitKeys;
    shape = {mode == Mode::kPrefill ? t_kv : 1u, t_kv, n_heads, 1, r.width()};
    params.scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(r.qk_head)));
    params.causal = mode == Mode::kPrefill;
    ht::Rng rng(seed);
    q.resize(size_t{shape.t_q} * n_heads * r.width());
    for (float& x : q) x = rng.normal();
    rows.resize(size_t{t_kv} * r.width());
    for (float& x : rows) x = rng.normal();
    if (t == DType::kF16) {
      rows16.resize(rows.size());
      for (size_t i = 0; i < rows.size(); ++i) {
        rows16[i] = ht::f32_to_f16_bits(rows[i]);
        rows[i] = ht::f16_bits_to_f32(rows16[i]);
      }
    } else if (t == DType::kQ8_0) {
      REQUIRE(ht::quantize_rows_and_back(t, rows, r.width(), &rows_q));
    }
    ref_args.t_q = shape.t_q;
    ref_args.t_kv = t_kv;
    ref_args.n_heads = n_heads;
    ref_args.n_kv_heads = 1;
    ref_args.head_dim = r.width();
    ref_args.v_head_dim = r.latent;
    ref_args.v_row_stride = r.width();
    ref_args.v_offset = r.rope;
    ref_args.scale = params.scale;  // the f32 value the kernels get
    ref_args.causal = params.causal;
    ref = ht::reference_attention(ref_args, q.data(), rows.data(), rows.data());
  }

  const void* cache() const {
    return dtype == DType::kF16    ? static_cast<const void*>(rows16.data())
           : dtype == DType::kQ8_0 ? static_cast<const void*>(rows_q.data())
                                   : rows.data();
  }
  size_t out_size() const { return q.size(); }

  // attend() with V = K, as KvCache hands MLA's rows to the kernels.
  std::vector<float> attend(headway::ThreadPool* pool) const {
    std::vector<float> o(out_size(), -7.0f);
    const headway::Result<size_t> bytes = headway::attention_workspace_bytes(shape, params, pool ? pool->threads() : 1);
    REQUIRE(bytes.ok());
    Aligned ws(bytes.value());
    const headway::Status s =
        headway::attend(q.data(), cache(), cache(), dtype, o.data(), shape, params, pool, ws.p, ws.size);
    REQUIRE_MESSAGE(s.ok(), s.message());
    return o;
  }

  // The kernels' partial softmax over chunks of kKernelChunk keys (first to last, or last to
  // first), then their merge: the split-KV path below attend()'s threshold.
  std::vector<float> kernel_split(bool reverse) const {
    std::vector<float> o(out_size(), -7.0f);
    hs::AttentionArgs a;
    a.q = q.data();
    a.q_token_stride = size_t{shape.n_heads} * shape.head_dim;
    a.o = o.data();
    a.o_token_stride = a.q_token_stride;
    a.k = cache();
    a.v = cache();
    a.kv_type = dtype;
    a.kv_head_stride = shape.head_dim;
    a.kv_row_stride = shape.head_dim;
    a.t_q = shape.t_q;
    a.t_kv = shape.t_kv;
    a.n_heads = shape.n_heads;
    a.n_kv_heads = 1;
    a.head_dim = shape.head_dim;
    a.scale = params.scale;
    a.causal = params.causal;
    const uint32_t n_chunks = (shape.t_kv + kKernelChunk - 1) / kKernelChunk;
    const size_t query_rows = size_t{shape.t_q} * shape.n_heads;
    std::vector<float> m(n_chunks * query_rows), l(m.size()), po(m.size() * shape.head_dim);
    Aligned scratch(hs::attention_scratch_bytes(shape.head_dim, shape.n_heads));
    const hs::AttentionPartials p{m.data(), l.data(), po.data()};
    for (uint32_t i = 0; i < n_chunks; ++i) {
      hs::attention_partial_f32(a, 0, reverse ? n_chunks - 1 - i : i, kKernelChunk, p, scratch.p, scratch.size);
    }
    hs::attention_merge_f32(a, 0, n_chunks, p);
    return o;
  }

  double tolerance() const {
    if (ht::decode_quantizes_query(ref_args, dtype)) return ht::kQuantizedQueryTolerance;
    return dtype == DType::kF16 ? 2e-3 : 1e-4;
  }

  // Largest |kernel − reference| over every head's latent part (NaN counts as infinitely wrong).
  double latent_error(const std::vector<float>& o) const {
    double worst = 0.0;
    for (size_t t = 0; t < shape.t_q; ++t) {
      for (size_t h = 0; h < shape.n_heads; ++h) {
        const float* got = &o[(t * shape.n_heads + h) * row.width() + row.rope];
        const double* want = &ref[(t * shape.n_heads + h) * row.latent];
        for (size_t x = 0; x < row.latent; ++x) {
          const double e = std::fabs(double{got[x]} - want[x]);
          if (!(e <= worst)) worst = std::isnan(e) ? HUGE_VAL : e;
        }
      }
    }
    return worst;
  }
};

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

// The worst error of a dtype, where the kernels widen K and where decode quantizes the query.
struct Worst {
  double err[2] = {0.0, 0.0};
};

}  // namespace

TEST_CASE("MLA: the latent part of O matches the reference with V the row's latent slice, every target") {
  headway::ThreadPool pools[2];
  for (uint32_t t = 0; t < 2; ++t) REQUIRE(pools[t].create(t + 2).ok());
  if (!headway::ThreadPool::threading_available()) MESSAGE("this build has no threads: every pool runs on the caller");
  const DType dtypes[] = {DType::kF32, DType::kF16, DType::kQ8_0};
  Worst worst[3];
  uint64_t seed = 5760;
  for (const LatentRow& r : kRows) {
    for (uint32_t heads : {4u, 16u}) {
      for (int di = 0; di < 3; ++di) {
        for (Mode mode : {Mode::kPrefill, Mode::kDecode, Mode::kSplitDecode}) {
          if (mode == Mode::kPrefill && heads > 4) continue;  // 16 heads: decode's query rows per kv head
          const Problem p(r, heads, dtypes[di], mode, ++seed);
          INFO(std::string(r.model) << " row " << r.rope << " + " << r.latent << ", heads " << heads << "/1, "
                                    << std::string(headway::dtype_name(dtypes[di])) << ", "
                                    << std::string(mode_name(mode)) << ", t_q " << p.shape.t_q << " t_kv "
                                    << p.shape.t_kv);
          const bool split = headway::attention_split(p.shape.t_q, p.shape.t_kv, heads, 1, r.width(), 1).n_chunks > 0;
          CHECK(split == (mode == Mode::kSplitDecode));
          for (const int64_t target : ht::test_targets()) {
            ht::TargetScope scope(target);
            INFO(ht::target_label(target));
            const std::vector<float> base = p.attend(nullptr);
            const double tol = p.tolerance(), err = p.latent_error(base);
            CHECK(err <= tol);
            double& w = worst[di].err[tol == ht::kQuantizedQueryTolerance];
            w = std::max(w, err);
            for (headway::ThreadPool& pool : pools) {
              INFO("threads " << pool.threads());
              CHECK(same_bits(p.attend(&pool), base));
            }
            if (mode != Mode::kDecode) continue;
            const std::vector<float> chunks = p.kernel_split(false);
            INFO("kernel split-KV, chunks of " << kKernelChunk);
            CHECK(p.latent_error(chunks) <= tol);
            CHECK(same_bits(p.kernel_split(true), chunks));
          }
        }
      }
    }
  }
  for (int di = 0; di < 3; ++di) {
    MESSAGE(std::string(headway::dtype_name(dtypes[di])) << ": worst |O_latent − reference| " << worst[di].err[0]
                                                         << ", with the query quantized " << worst[di].err[1]);
  }
}

TEST_CASE("reference: V as a slice of K's rows is V as its own array, and the defaults are V = K's width") {
  ht::RefAttention a;
  a.t_q = 5;
  a.t_kv = 9;
  a.n_heads = 4;
  a.n_kv_heads = 2;
  a.head_dim = 12;
  a.scale = 0.3;
  a.causal = true;
  ht::Rng rng(42);
  std::vector<float> q(size_t{a.t_q} * a.n_heads * a.head_dim), k(size_t{a.t_kv} * a.n_kv_heads * a.head_dim);
  for (float& x : q) x = rng.normal();
  for (float& x : k) x = rng.normal();
  // V the last 8 values of each K row, sliced in place or copied out to [t_kv, n_kv_heads, 8].
  constexpr uint32_t kOffset = 4, kWidth = 8;
  std::vector<float> v;
  for (size_t r = 0; r < k.size() / a.head_dim; ++r) {
    v.insert(v.end(), k.begin() + r * a.head_dim + kOffset, k.begin() + (r + 1) * a.head_dim);
  }
  ht::RefAttention sliced = a, separate = a;
  sliced.v_head_dim = separate.v_head_dim = kWidth;
  sliced.v_row_stride = a.head_dim;
  sliced.v_offset = kOffset;
  const std::vector<double> from_slice = ht::reference_attention(sliced, q.data(), k.data(), k.data());
  const std::vector<double> from_array = ht::reference_attention(separate, q.data(), k.data(), v.data());
  REQUIRE(from_slice.size() == size_t{a.t_q} * a.n_heads * kWidth);
  CHECK(std::memcmp(from_slice.data(), from_array.data(), from_slice.size() * sizeof(double)) == 0);
  ht::RefAttention spelled = a;
  spelled.v_head_dim = spelled.v_row_stride = a.head_dim;
  const std::vector<double> by_default = ht::reference_attention(a, q.data(), k.data(), k.data());
  const std::vector<double> explicit_width = ht::reference_attention(spelled, q.data(), k.data(), k.data());
  REQUIRE(by_default.size() == size_t{a.t_q} * a.n_heads * a.head_dim);
  CHECK(std::memcmp(by_default.data(), explicit_width.data(), by_default.size() * sizeof(double)) == 0);
}
