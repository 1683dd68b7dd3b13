// attend() and attend_strided(): against the double-precision reference for every case of
// tests/reference/attention_cases.hpp in every KV dtype; bitwise the same O for every thread count (tile
// path and split-KV decode path); no heap allocation inside attend(); every rejected argument
// names itself.
#include "headway/attention.hpp"

#include <doctest/doctest.h>

#include <atomic>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <new>
#include <random>
#include <string>
#include <vector>

#include "headway/dtype_convert.hpp"
#include "headway/hadamard.hpp"
#include "headway/tools/heap_count.hpp"
#include "headway/quantize.hpp"
#include "runtime/attention/attention_run.hpp"
#include "simd/attention/attention.h"
#include "tests/reference/attention_cases.hpp"
#include "tests/reference/reference_args.hpp"
#include "tests/reference/reference_attention.hpp"
#include "tests/support/quantized_query.hpp"
#include "tests/support/quantized_rows.hpp"

namespace headway {
namespace {

// ---- Problems ------------------------------------------------------------------------------

struct Aligned {
  explicit Aligned(size_t bytes) : size((bytes + 63) / 64 * 64), p(std::aligned_alloc(64, size ? size : 64)) {}
  ~Aligned() { std::free(p); }
  Aligned(const Aligned&) = delete;
  Aligned& operator=(const Aligned&) = delete;
  size_t size;
  void* p;
};

struct Problem {
  AttentionShape shape;
  AttentionParams params;
  DType kv_dtype = DType::kF32;
  std::vector<float> q, k, v;      // f32 as drawn
  std::vector<uint16_t> k16, v16;  // f16 / bf16 bit patterns for those dtypes
  std::vector<uint8_t> kb, vb;     // q8_0 / q4_0 rows for those dtypes
  std::vector<float> kq, vq;       // K, V as the kernel sees them (after rounding)
  std::vector<float> sinks;        // [n_heads] sink logits of a table case that has them
  std::vector<float> slopes;       // [n_heads] ALiBi slopes of a table case that has them
  std::vector<uint8_t> mask_bool;  // [t_q, t_kv] general mask of a table case that has one
  std::vector<float> mask_additive;

  Problem(AttentionShape s, AttentionParams p, DType dtype, uint32_t seed) : shape(s), params(p), kv_dtype(dtype) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    q.resize(size_t{s.t_q} * s.n_heads * s.head_dim);
    k.resize(size_t{s.t_kv} * s.n_kv_heads * s.head_dim);
    v.resize(k.size());
    for (float& x : q) x = normal(rng);
    for (float& x : k) x = normal(rng);
    for (float& x : v) x = normal(rng);
    round_kv();
  }

  // A case of the shared table, its inputs from the table's generator, K/V stored as `dtype`.
  Problem(const test::AttentionCase& c, DType dtype)
      : shape{c.t_q, c.t_kv, c.n_heads, c.n_kv_heads, c.head_dim},
        params{c.scale, c.softcap, c.causal, c.window},
        kv_dtype(dtype) {
    q.resize(test::case_q_elems(c));
    k.resize(test::case_kv_elems(c));
    v.resize(k.size());
    test::generate_inputs(c, [&](int which, uint64_t i, float x) { (which == 0 ? q : which == 1 ? k : v)[i] = x; });
    if (test::case_has_sinks(c)) {
      for (uint32_t h = 0; h < c.n_heads; ++h) sinks.push_back(test::case_sink(c, h));
    }
    params.sink_tokens = c.sink_tokens;
    params.prefix = c.prefix;
    params.window_symmetric = c.window_symmetric;
    if (c.alibi) {
      for (uint32_t h = 0; h < c.n_heads; ++h) slopes.push_back(test::case_alibi_slope(c, h));
    }
    test::generate_mask(c, [&](uint64_t, float e) {
      if (c.mask == test::CaseMask::kBool) {
        mask_bool.push_back(e == 0.0f ? 1 : 0);
      } else {
        mask_additive.push_back(e);
      }
    });
    round_kv();
  }

  // params, pointing at this problem's sinks where it has them.
  AttentionParams call_params() const {
    AttentionParams p = params;
    if (!sinks.empty()) p.sinks = sinks.data();
    if (!slopes.empty()) p.alibi_slopes = slopes.data();
    if (!mask_bool.empty()) p.mask_bool = mask_bool.data();
    if (!mask_additive.empty()) p.mask_additive = mask_additive.data();
    return p;
  }

  void round_kv() {
    kq = k;
    vq = v;
    if (dtype_is_block(kv_dtype)) {  // each row of head_dim values quantized on its own
      REQUIRE(test::quantize_rows_and_back(kv_dtype, kq, shape.head_dim, &kb));
      REQUIRE(test::quantize_rows_and_back(kv_dtype, vq, shape.head_dim, &vb));
    } else if (kv_dtype != DType::kF32) {
      k16.resize(k.size());
      v16.resize(v.size());
      if (kv_dtype == DType::kF16) {
        f32_to_f16(k.data(), k16.data(), k.size());
        f32_to_f16(v.data(), v16.data(), v.size());
        f16_to_f32(k16.data(), kq.data(), k.size());
        f16_to_f32(v16.data(), vq.data(), v.size());
      } else {
        f32_to_bf16(k.data(), k16.data(), k.size());
        f32_to_bf16(v.data(), v16.data(), v.size());
        bf16_to_f32(k16.data(), kq.data(), k.size());
        bf16_to_f32(v16.data(), vq.data(), v.size());
      }
    }
  }
  const void* kp() const {
    return dtype_is_block(kv_dtype)  ? static_cast<const void*>(kb.data())
           : kv_dtype == DType::kF32 ? static_cast<const void*>(k.data())
                                     : k16.data();
  }
  const void* vp() const {
    return dtype_is_block(kv_dtype)  ? static_cast<const void*>(vb.data())
           : kv_dtype == DType::kF32 ? static_cast<const void*>(v.data())
                                     : v16.data();
  }
  size_t out_size() const { return q.size(); }

  Status run(ThreadPool* pool, std::vector<float>* o) const {
    o->assign(out_size(), -7.0f);  // poison: every element must be written
    const Result<size_t> bytes = attention_workspace_bytes(shape, pool ? pool->threads() : 1);
    if (!bytes.ok()) return bytes.status();
    Aligned ws(bytes.value());
    return attend(q.data(), kp(), vp(), kv_dtype, o->data(), shape, call_params(), pool, ws.p, ws.size);
  }

  std::vector<double> reference() const {
    const test::RefAttention p = test::ref_args(shape, call_params());
    return test::reference_attention(p, q.data(), kq.data(), vq.data());
  }
};

simd::AttentionArgs args_of(const Problem& p) {
  simd::AttentionArgs a;
  a.t_q = p.shape.t_q;
  a.t_kv = p.shape.t_kv;
  a.n_heads = p.shape.n_heads;
  a.n_kv_heads = p.shape.n_kv_heads;
  a.head_dim = p.shape.head_dim;
  return a;
}

double max_abs_error(const std::vector<float>& got, const std::vector<double>& want) {
  double e = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    const double d = std::fabs(static_cast<double>(got[i]) - want[i]);
    if (!(d <= e)) e = d;  // NaN propagates
  }
  return e;
}

const char* name_of(DType t) { return dtype_name(t); }

// 1e-4, or where decode quantizes the query for integer Q·Kᵀ its band (quantized_query.hpp).
double tolerance(const Problem& p) {
  const test::RefAttention r = test::ref_args(p.shape, p.call_params());
  return test::decode_quantizes_query(r, static_cast<simd::KvType>(p.kv_dtype)) ? test::kQuantizedQueryTolerance : 1e-4;
}

// The shared table (tests/reference/attention_cases.hpp) in every KV dtype: attend() is cheap enough to
// sweep the dtype over each shape.
TEST_CASE("attend matches the double reference for every case of the table, in every KV dtype") {
  for (const test::AttentionCase& c : test::kAttentionCases) {
    for (DType dtype : {DType::kF32, DType::kF16, DType::kBF16, DType::kQ8_0, DType::kQ4_0}) {
      const Problem p(c, dtype);
      std::vector<float> o;
      const Status s = p.run(nullptr, &o);
      INFO(c.name << ": t_q " << c.t_q << " t_kv " << c.t_kv << " heads " << c.n_heads << "/" << c.n_kv_heads << " d "
                  << c.head_dim << " causal " << c.causal << " window " << c.window << " softcap " << c.softcap
                  << " scale " << c.scale << " sinks " << test::case_has_sinks(c) << " kv " << name_of(dtype));
      REQUIRE_MESSAGE(s.ok(), s.message());
      CHECK(max_abs_error(o, p.reference()) <= tolerance(p));
    }
  }
}

// What a block format costs in accuracy: the same attention with K/V in f32 and quantized, on
// unit-normal inputs whose K and V each have one outlier channel (x8, as LLMs' K caches do),
// prefill and decode at head_dim 128. The figures go to the README's accuracy table; the bounds
// are a little above them, so a change in the formats' rounding shows.
TEST_CASE("q8_0 and q4_0 K/V against f32 K/V: the error the format adds (one outlier channel)") {
  // Bounds on the max abs error, f16 / q8_0 / q4_0: about 1.5x what was measured. Prefill's first
  // rows see a few keys, so they carry a row of V's rounding almost as it is (q4_0 with an outlier
  // of 8 sigma in its block: a scale near 3, steps of it); decode averages 2048 keys.
  // Rotated (kv_rotation hadamard, as a cache does it: q, k and v rotated per head, k and v
  // quantized after, o rotated back) within the same bounds; for q4_0 it must do better than
  // without, the outlier spread over its block instead of setting the block's scale.
  struct Run {
    const char* what;
    AttentionShape shape;
    double bound[3];
  };
  for (const Run& run : {Run{"prefill 256", {256, 256, 8, 2, 128}, {1e-2, 0.3, 3.5}},
                         Run{"decode at 2048", {1, 2048, 8, 2, 128}, {1e-3, 2e-2, 0.6}}}) {
    AttentionParams params;
    params.causal = true;
    const uint32_t hd = run.shape.head_dim;
    auto with_outliers = [&](DType dt, bool rotate) {
      Problem p(run.shape, params, dt, 2024);
      for (std::vector<float>* x : {&p.k, &p.v}) {
        for (size_t i = 7; i < x->size(); i += hd) (*x)[i] *= 8.0f;
      }
      if (rotate) {
        for (std::vector<float>* x : {&p.q, &p.k, &p.v}) {
          for (size_t r = 0; r < x->size(); r += hd) hadamard_rotate(x->data() + r, hd);
        }
      }
      p.round_kv();
      return p;
    };
    std::vector<float> exact;
    REQUIRE(with_outliers(DType::kF32, false).run(nullptr, &exact).ok());
    struct Format {
      DType dtype;
      bool rotate;
      int bound;
    };
    double q4_plain[2] = {0, 0};
    for (const Format& f :
         {Format{DType::kF16, false, 0}, Format{DType::kQ8_0, false, 1}, Format{DType::kQ4_0, false, 2},
          Format{DType::kQ8_0, true, 1}, Format{DType::kQ4_0, true, 2}}) {
      std::vector<float> o;
      REQUIRE(with_outliers(f.dtype, f.rotate).run(nullptr, &o).ok());
      if (f.rotate)
        hadamard_rotate_heads(o.data(), run.shape.t_q, size_t{run.shape.n_heads} * hd, run.shape.n_heads, hd);
      double max_err = 0, sum_err = 0;
      for (size_t i = 0; i < o.size(); ++i) {
        const double e = std::fabs(static_cast<double>(o[i]) - exact[i]);
        max_err = std::max(max_err, e);
        sum_err += e;
      }
      const double mean_err = sum_err / o.size();
      MESSAGE(std::string(run.what) << ", " << std::string(dtype_name(f.dtype))
                                    << std::string(f.rotate ? " rotated" : "") << " K/V against f32: max abs error "
                                    << max_err << ", mean " << mean_err);
      CHECK(max_err < run.bound[f.bound]);
      if (f.dtype == DType::kQ4_0 && !f.rotate) q4_plain[0] = max_err, q4_plain[1] = mean_err;
      if (f.dtype == DType::kQ4_0 && f.rotate) {
        CHECK(max_err < q4_plain[0]);
        CHECK(mean_err < q4_plain[1]);
      }
    }
  }
}

TEST_CASE("a query row that sees no key gives zeros") {
  const Problem p({6, 2, 2, 1, 16}, {0.0f, 0.0f, true, 0}, DType::kF32, 3);
  std::vector<float> o;
  REQUIRE(p.run(nullptr, &o).ok());
  // Rows 0..3 sit before the first key (bottom-right alignment): all zeros, not NaN.
  for (size_t i = 0; i < 4 * 2 * 16; ++i) CHECK(o[i] == 0.0f);
  for (size_t i = 4 * 2 * 16; i < o.size(); ++i) CHECK(std::isfinite(o[i]));
}

TEST_CASE("the same bits for every thread count, tile path and split-KV path") {
  ThreadPool pools[4];
  for (uint32_t t = 0; t < 4; ++t) REQUIRE(pools[t].create(t + 1).ok());
  if (!ThreadPool::threading_available()) MESSAGE("this build has no threads: every pool runs on the caller");
  bool saw_split = false, saw_tiles = false;
  for (const test::AttentionCase& c : test::kAttentionCases) {
    for (DType dtype : {DType::kF32, DType::kBF16}) {
      const Problem p(c, dtype);
      (attention_split(args_of(p), 1).n_chunks > 0 ? saw_split : saw_tiles) = true;
      std::vector<float> base, o;
      REQUIRE(p.run(nullptr, &base).ok());
      for (ThreadPool& pool : pools) {
        INFO(c.name << ": threads " << pool.threads() << " kv " << name_of(dtype));
        REQUIRE(p.run(&pool, &o).ok());
        CHECK(std::memcmp(o.data(), base.data(), o.size() * sizeof(float)) == 0);
      }
    }
  }
  CHECK(saw_split);
  CHECK(saw_tiles);
}

TEST_CASE("the split is a function of the shape, never of the thread count") {
  const Problem decode({1, 4096, 32, 8, 128}, {}, DType::kF32, 1);
  const AttentionSplit one = attention_split(args_of(decode), 1);
  const AttentionSplit eight = attention_split(args_of(decode), 8);
  // 8 kv heads: 4 chunks of 1024 keys make kAttnSplitTasks tasks.
  CHECK(one.chunk == 1024);
  CHECK(one.n_chunks == 4);
  CHECK(one.n_chunks == eight.n_chunks);
  CHECK(one.q_tile == eight.q_tile);
  CHECK(one.scratch_bytes == eight.scratch_bytes);
  CHECK(eight.workspace_bytes - one.workspace_bytes == 7 * one.scratch_bytes);
  const Problem prefill({512, 512, 32, 8, 128}, {}, DType::kF32, 1);
  CHECK(attention_split(args_of(prefill), 4).n_chunks == 0);
}

TEST_CASE("attend allocates nothing") {
  ThreadPool pool;
  REQUIRE(pool.create(4).ok());
  const Problem tiles({40, 50, 8, 2, 64}, {0.0f, 0.0f, true, 0}, DType::kF16, 5);
  const Problem split({1, 3000, 8, 2, 128}, {}, DType::kBF16, 6);
  REQUIRE(attention_split(args_of(split), 4).n_chunks > 0);
  Aligned ws(1 << 22);
  std::vector<float> o1(tiles.out_size()), o2(split.out_size());
  REQUIRE(attention_workspace_bytes(tiles.shape, 4).value() <= ws.size);
  REQUIRE(attention_workspace_bytes(split.shape, 4).value() <= ws.size);
  const float sinks[8] = {-2.0f, -1.0f, 0.0f, 0.5f, 1.0f, 2.0f, 4.0f, 8.0f};
  const float bad_sinks[8] = {0.0f, 0.0f, 0.0f, std::numeric_limits<float>::quiet_NaN()};
  AttentionParams tiles_sinks = tiles.params, split_sinks = split.params, split_bad = split.params;
  tiles_sinks.sinks = sinks;
  split_sinks.sinks = sinks;
  split_bad.sinks = bad_sinks;

  // The counter sees allocations at all (volatile: the compiler may not drop the pair).
  HeapCount probe_count;
  void* volatile probe = std::malloc(16);
  std::free(probe);
  int* volatile probe2 = new int(3);
  delete probe2;
  CHECK(probe_count.stop() >= 2);

  Status s1, s2, s3, s4;
  HeapCount count;
  s1 = attend(tiles.q.data(), tiles.kp(), tiles.vp(), tiles.kv_dtype, o1.data(), tiles.shape, tiles.params, &pool, ws.p,
              ws.size);
  s2 = attend(split.q.data(), split.kp(), split.vp(), split.kv_dtype, o2.data(), split.shape, split.params, &pool, ws.p,
              ws.size);
  s3 = attend(tiles.q.data(), tiles.kp(), tiles.vp(), tiles.kv_dtype, o1.data(), tiles.shape, tiles.params, nullptr,
              ws.p, ws.size);
  s4 = attend(split.q.data(), split.kp(), split.vp(), split.kv_dtype, o2.data(), split.shape, split.params, nullptr,
              ws.p, 64);  // an error is built without the heap too
  const Status s5 = attend(tiles.q.data(), tiles.kp(), tiles.vp(), tiles.kv_dtype, o1.data(), tiles.shape, tiles_sinks,
                           &pool, ws.p, ws.size);
  const Status s6 = attend(split.q.data(), split.kp(), split.vp(), split.kv_dtype, o2.data(), split.shape, split_sinks,
                           &pool, ws.p, ws.size);
  const Status s7 = attend(split.q.data(), split.kp(), split.vp(), split.kv_dtype, o2.data(), split.shape, split_bad,
                           &pool, ws.p, ws.size);
  const long allocations = count.stop();
  CHECK(s1.ok());
  CHECK(s2.ok());
  CHECK(s3.ok());
  CHECK(!s4.ok());
  CHECK(s5.ok());
  CHECK(s6.ok());
  CHECK(!s7.ok());
  CHECK(allocations == 0);
}

TEST_CASE("workspace too small, misaligned or missing") {
  const Problem p({4, 8, 4, 2, 64}, {}, DType::kF32, 9);
  std::vector<float> o(p.out_size());
  const size_t need = attention_workspace_bytes(p.shape, 1).value();
  Aligned ws(need + 64);
  Status s = attend(p.q.data(), p.kp(), p.vp(), p.kv_dtype, o.data(), p.shape, p.params, nullptr, ws.p, need - 1);
  CHECK(s.code() == Code::kInvalidArgument);
  CHECK(std::string(s.message())
            .find("attention: workspace is " + std::to_string(need - 1) + " bytes, attention needs " +
                  std::to_string(need) + " (t_q 4, t_kv 8") == 0);
  s = attend(p.q.data(), p.kp(), p.vp(), p.kv_dtype, o.data(), p.shape, p.params, nullptr,
             static_cast<char*>(ws.p) + 16, ws.size - 16);
  CHECK(std::string(s.message()).find("workspace is not 64-byte aligned (its address is 16 bytes past") !=
        std::string::npos);
  s = attend(p.q.data(), p.kp(), p.vp(), p.kv_dtype, o.data(), p.shape, p.params, nullptr, nullptr, need);
  CHECK(std::string(s.message()).find("workspace is null") != std::string::npos);

  // A workspace sized for one thread is too small for a pool of four.
  ThreadPool pool;
  REQUIRE(pool.create(4).ok());
  if (pool.threads() == 4) {
    s = attend(p.q.data(), p.kp(), p.vp(), p.kv_dtype, o.data(), p.shape, p.params, &pool, ws.p, need);
    CHECK(std::string(s.message()).find("4 threads") != std::string::npos);
  }
}

TEST_CASE("bad shapes, parameters and pointers are rejected by name") {
  const Problem p({4, 8, 4, 2, 64}, {}, DType::kF32, 9);
  std::vector<float> o(p.out_size());
  Aligned ws(1 << 20);
  auto attempt = [&](AttentionShape shape, AttentionParams params, const float* q = nullptr, const void* k = nullptr,
                     const void* v = nullptr, float* out = nullptr, DType dtype = DType::kF32) {
    const Status s = attend(q, k, v, dtype, out, shape, params, nullptr, ws.p, ws.size);
    return std::string(s.ok() ? "(ok)" : s.message());
  };
  const float* q = p.q.data();
  const void* k = p.kp();
  const void* v = p.vp();
  float* out = o.data();
  const AttentionShape good = p.shape;
  const AttentionParams none;
  auto shape_with = [&](auto edit) {
    AttentionShape s = good;
    edit(s);
    return s;
  };
  CHECK(attempt(good, none, q, k, v, out) == "(ok)");
  CHECK(attempt(shape_with([](auto& s) { s.head_dim = 0; }), none, q, k, v, out) ==
        "attention: head_dim 0 is not in 1..576");
  CHECK(attempt(shape_with([](auto& s) { s.head_dim = 577; }), none, q, k, v, out) ==
        "attention: head_dim 577 is not in 1..576");
  CHECK(attempt(shape_with([](auto& s) { s.n_kv_heads = 3; }), none, q, k, v, out)
            .find("attention: n_heads 4 is not divisible by n_kv_heads 3") == 0);
  CHECK(attempt(shape_with([](auto& s) { s.n_kv_heads = 0; }), none, q, k, v, out)
            .find("n_heads 4 is not divisible by n_kv_heads 0") != std::string::npos);
  CHECK(attempt(shape_with([](auto& s) { s.n_heads = 0; }), none, q, k, v, out) ==
        "attention: n_heads 0 is not in 1..1024");
  CHECK(attempt(shape_with([](auto& s) { s.t_q = 0; }), none, q, k, v, out) == "attention: t_q is 0 (no query tokens)");
  CHECK(attempt(shape_with([](auto& s) { s.t_kv = 0; }), none, q, k, v, out) == "attention: t_kv is 0 (no keys)");
  CHECK(attempt(good, {NAN, 0.0f, false, 0}, q, k, v, out).find("attention: scale nan is not a finite number >= 0") ==
        0);
  CHECK(attempt(good, {-1.0f, 0.0f, false, 0}, q, k, v, out).find("attention: scale -1 is not") == 0);
  CHECK(attempt(good, {INFINITY, 0.0f, false, 0}, q, k, v, out).find("attention: scale inf is not") == 0);
  CHECK(attempt(good, {0.0f, NAN, false, 0}, q, k, v, out).find("attention: softcap nan is not a finite number >= 0") ==
        0);
  CHECK(attempt(good, {0.0f, -2.5f, false, 0}, q, k, v, out).find("attention: softcap -2.5 is not") == 0);
  CHECK(attempt(good, none, nullptr, k, v, out) == "attention: q is null");
  CHECK(attempt(good, none, q, nullptr, v, out) == "attention: k is null");
  CHECK(attempt(good, none, q, k, nullptr, out) == "attention: v is null");
  CHECK(attempt(good, none, q, k, v, nullptr) == "attention: o is null");
  CHECK(attempt(good, none, q, k, v, out, static_cast<DType>(9)) ==
        "attention: kv dtype q5_K (9) is not one of f32, f16, bf16, q8_0, q4_0");
  CHECK(attempt(good, {0.0f, 0.0f, true, 1000}, q, k, v, out) == "(ok)");  // window > t_kv is fine
  AttentionParams sink_tokens;
  sink_tokens.sink_tokens = 2;
  CHECK(attempt(good, sink_tokens, q, k, v, out) ==
        "attention: sink_tokens 2 needs a sliding window larger than it (window 0)");
  sink_tokens.window = 2;
  CHECK(attempt(good, sink_tokens, q, k, v, out) ==
        "attention: sink_tokens 2 needs a sliding window larger than it (window 2)");
  sink_tokens.window = 3;
  CHECK(attempt(good, sink_tokens, q, k, v, out) == "(ok)");
  const float slopes[4] = {0.5f, 0.25f, NAN, 0.125f};
  AttentionParams alibi;
  alibi.alibi_slopes = slopes;
  CHECK(attempt(good, alibi, q, k, v, out) == "attention: alibi_slopes[2] = nan is not finite");

  CHECK(!attention_workspace_bytes(good, 0).ok());
  CHECK(std::string(attention_workspace_bytes(good, 0).status().message()) == "attention: threads 0 is not in 1..256");
  CHECK(std::string(attention_workspace_bytes(shape_with([](auto& s) { s.head_dim = 0; }), 1).status().message()) ==
        "attention: head_dim 0 is not in 1..576");
}

// ---- Packed batches ------------------------------------------------------------------------

std::vector<uint32_t> cumulative(const std::vector<uint32_t>& lengths) {
  std::vector<uint32_t> cu(1, 0);
  for (uint32_t n : lengths) cu.push_back(cu.back() + n);
  return cu;
}

struct PackedCase {
  const char* name;
  std::vector<uint32_t> q_lens, k_lens;  // k_lens empty: the queries'
  uint32_t n_heads, n_kv_heads, head_dim;
  AttentionParams params;
  bool sinks = false, alibi = false;
  test::CaseMask mask = test::CaseMask::kNone;  // a general mask over the whole batch
};

// Lengths of 1, just off the vector widths and the 32-row tile, GQA groups, every mask rule, and
// sequences of one query over long keys (their own split-KV decode).
std::vector<PackedCase> packed_cases() {
  AttentionParams causal, window, sink_tokens, plain, capped, prefix;
  causal.causal = true;
  window.causal = true;
  window.window = 9;
  sink_tokens.causal = true;
  sink_tokens.window = 6;
  sink_tokens.sink_tokens = 2;
  capped.softcap = 2.0f;
  capped.scale = 0.3f;
  prefix.causal = true;
  prefix.prefix = 5;
  return {
      {"bidirectional MiniLM shape", {12, 40, 7, 1, 33}, {}, 12, 12, 32, plain},
      {"causal GQA 8/2 d64, lengths off the widths", {15, 16, 17, 1, 63, 64, 65}, {}, 8, 2, 64, causal},
      {"window 9 d80", {1, 30, 8, 31}, {}, 4, 1, 80, window},
      {"sink tokens 2, window 6, d128", {20, 3, 9}, {}, 4, 2, 128, sink_tokens},
      {"softcap and scale, MQA d50", {5, 17, 2}, {}, 6, 1, 50, capped},
      {"sink logits and ALiBi, causal", {10, 1, 26}, {}, 4, 4, 64, causal, true, true},
      {"one sequence", {37}, {}, 4, 2, 64, causal},
      {"single tokens", {1, 1, 1, 1}, {}, 4, 2, 32, plain},
      {"decode rows over their own keys (split-KV)", {1, 2, 1}, {1500, 40, 1100}, 8, 2, 128, causal},
      {"prefill chunks over longer keys", {16, 5}, {80, 5}, 4, 2, 64, window},
      {"prefix 5 from each sequence's start", {12, 5, 40}, {}, 4, 2, 64, prefix},
      {"prefix 5 over longer keys, decode rows", {1, 3}, {70, 5}, 8, 2, 128, prefix, true},
      {"bool mask, bidirectional MiniLM shape",
       {12, 40, 7, 1, 33},
       {},
       12,
       12,
       32,
       plain,
       false,
       false,
       test::CaseMask::kBool},
      {"additive mask, causal, decode rows over longer keys",
       {1, 20, 2},
       {1300, 20, 70},
       8,
       2,
       64,
       causal,
       false,
       false,
       test::CaseMask::kAdditive},
  };
}

// A case as a Problem: its inputs, the lengths it points at, and the same case split into its
// sequences (each a Problem of its own over the same rows).
struct PackedProblem {
  std::vector<uint32_t> cu_q, cu_k;
  Problem whole;
  PackedProblem(const PackedCase& c, DType dtype, uint32_t seed)
      : cu_q(cumulative(c.q_lens)),
        cu_k(c.k_lens.empty() ? std::vector<uint32_t>{} : cumulative(c.k_lens)),
        whole({cu_q.back(), (cu_k.empty() ? cu_q : cu_k).back(), c.n_heads, c.n_kv_heads, c.head_dim}, c.params, dtype,
              seed) {
    whole.params.cu_seqlens_q = cu_q.data();
    whole.params.cu_seqlens_k = cu_k.empty() ? nullptr : cu_k.data();
    whole.params.n_seqs = static_cast<uint32_t>(c.q_lens.size());
    for (uint32_t h = 0; c.sinks && h < c.n_heads; ++h) whole.sinks.push_back(0.5f * static_cast<float>(h) - 1.0f);
    if (c.alibi) {
      whole.slopes.resize(c.n_heads);
      REQUIRE(alibi_slopes(c.n_heads, whole.slopes.data()).ok());
    }
    if (c.mask != test::CaseMask::kNone) make_mask(c.mask == test::CaseMask::kBool, seed);
  }

  // A mask over the whole batch: on each sequence's diagonal block about one entry in four and
  // every row i % 11 == 4 hidden, the rest visible (additive: in [−2, 2]); off the blocks NaN or
  // hidden, which no sequence may read.
  void make_mask(bool boolean, uint32_t seed) {
    std::mt19937 rng(seed);
    const std::vector<uint32_t>& ck = cu_k.empty() ? cu_q : cu_k;
    for (size_t b = 0; b + 1 < cu_q.size(); ++b) {
      for (uint32_t i = cu_q[b]; i < cu_q[b + 1]; ++i) {
        for (uint32_t j = 0; j < ck.back(); ++j) {
          const bool mine = j >= ck[b] && j < ck[b + 1];
          const bool hidden = rng() % 4 == 0 || i % 11 == 4;
          if (boolean) {
            whole.mask_bool.push_back(mine && !hidden ? 1 : 0);
          } else {
            whole.mask_additive.push_back(!mine    ? std::nanf("")
                                          : hidden ? -std::numeric_limits<float>::infinity()
                                                   : static_cast<float>(static_cast<int>(rng() % 33) - 16) * 0.125f);
          }
        }
      }
    }
  }

  Status run(ThreadPool* pool, std::vector<float>* o) const {
    const AttentionParams params = whole.call_params();
    o->assign(whole.out_size(), -7.0f);
    const Result<size_t> bytes = attention_workspace_bytes(whole.shape, params, pool ? pool->threads() : 1);
    if (!bytes.ok()) return bytes.status();
    Aligned ws(bytes.value());
    return attend(whole.q.data(), whole.kp(), whole.vp(), whole.kv_dtype, o->data(), whole.shape, params, pool, ws.p,
                  ws.size);
  }

  // Each sequence through attend() alone, its O rows written where the packed call writes them.
  Status run_alone(std::vector<float>* o) const {
    const AttentionShape& s = whole.shape;
    const size_t q_width = size_t{s.n_heads} * s.head_dim;
    const size_t kv_bytes = size_t{s.n_kv_heads} * dtype_row_bytes(whole.kv_dtype, s.head_dim);
    const std::vector<uint32_t>& ck = cu_k.empty() ? cu_q : cu_k;
    o->assign(whole.out_size(), -7.0f);
    for (size_t b = 0; b + 1 < cu_q.size(); ++b) {
      const AttentionShape one{cu_q[b + 1] - cu_q[b], ck[b + 1] - ck[b], s.n_heads, s.n_kv_heads, s.head_dim};
      AttentionParams params = whole.call_params();
      params.cu_seqlens_q = params.cu_seqlens_k = nullptr;
      params.n_seqs = 0;
      // The sequence's block of the batch's mask: its rows, its keys, the batch's row stride.
      const size_t mask_at = size_t{cu_q[b]} * s.t_kv + ck[b];
      if (params.mask_bool != nullptr) params.mask_bool += mask_at;
      if (params.mask_additive != nullptr) params.mask_additive += mask_at;
      params.mask_row_stride = s.t_kv;
      const Result<size_t> bytes = attention_workspace_bytes(one, 1);
      if (!bytes.ok()) return bytes.status();
      Aligned ws(bytes.value());
      const auto* kb = static_cast<const uint8_t*>(whole.kp()) + ck[b] * kv_bytes;
      const auto* vb = static_cast<const uint8_t*>(whole.vp()) + ck[b] * kv_bytes;
      HEADWAY_RETURN_IF_ERROR(attend(whole.q.data() + cu_q[b] * q_width, kb, vb, whole.kv_dtype,
                                     o->data() + cu_q[b] * q_width, one, params, nullptr, ws.p, ws.size));
    }
    return Status();
  }
};

TEST_CASE("packed batches: each sequence matches the reference and is bitwise what it gets alone") {
  ThreadPool pool;
  REQUIRE(pool.create(3).ok());
  uint32_t seed = 100;
  for (const PackedCase& c : packed_cases()) {
    for (DType dtype : {DType::kF32, DType::kF16, DType::kQ8_0}) {
      INFO(c.name << " kv " << name_of(dtype));
      const PackedProblem p(c, dtype, seed++);
      std::vector<float> o, o_pool, alone;
      const Status s = p.run(nullptr, &o);
      REQUIRE_MESSAGE(s.ok(), s.message());
      CHECK(max_abs_error(o, p.whole.reference()) <= tolerance(p.whole));
      REQUIRE(p.run_alone(&alone).ok());
      CHECK(std::memcmp(o.data(), alone.data(), o.size() * sizeof(float)) == 0);
      REQUIRE(p.run(&pool, &o_pool).ok());
      CHECK(std::memcmp(o.data(), o_pool.data(), o.size() * sizeof(float)) == 0);
    }
  }
}

TEST_CASE("packed batches: a sequence never sees another's keys, and the reference knows it") {
  // Two sequences of 3, bidirectional: row 0 (sequence 0) sees keys 0..2 only, row 3 keys 3..5.
  const std::vector<uint32_t> cu = {0, 3, 6};
  test::RefAttention r;
  r.t_q = r.t_kv = 6;
  r.n_heads = r.n_kv_heads = 1;
  r.head_dim = 4;
  r.cu_q = cu;
  CHECK(test::reference_key_visible(r, 0, 2));
  CHECK_FALSE(test::reference_key_visible(r, 0, 3));
  CHECK(test::reference_key_visible(r, 3, 5));
  CHECK_FALSE(test::reference_key_visible(r, 3, 2));
  r.causal = true;  // positions count from each sequence's start
  CHECK(test::reference_key_visible(r, 3, 3));
  CHECK_FALSE(test::reference_key_visible(r, 3, 4));
  // Changing another sequence's K/V leaves a sequence's O bitwise as it was.
  PackedCase c{"", {7, 9}, {}, 4, 2, 64, AttentionParams{}};
  PackedProblem p(c, DType::kF32, 7);
  std::vector<float> before, after;
  REQUIRE(p.run(nullptr, &before).ok());
  const size_t kv_width = size_t{2} * 64;
  for (size_t i = 7 * kv_width; i < p.whole.k.size(); ++i) p.whole.k[i] = p.whole.v[i] = 1e3f;
  REQUIRE(p.run(nullptr, &after).ok());
  const size_t q_rows0 = size_t{7} * 4 * 64;
  CHECK(std::memcmp(before.data(), after.data(), q_rows0 * sizeof(float)) == 0);
  CHECK(std::memcmp(before.data() + q_rows0, after.data() + q_rows0, (before.size() - q_rows0) * sizeof(float)) != 0);
}

TEST_CASE("packed batches: the workspace is the largest sequence's, and attend allocates nothing") {
  // One query over 3000 keys splits its keys (partials in the workspace) where the whole shape,
  // 33 queries over 3032 keys, would not.
  const std::vector<uint32_t> cu_q = {0, 1, 33}, cu_k = {0, 3000, 3032};
  const AttentionShape shape{33, 3032, 8, 2, 128};
  AttentionParams p;
  p.cu_seqlens_q = cu_q.data();
  p.cu_seqlens_k = cu_k.data();
  p.n_seqs = 2;
  // Sized for the pool's threads (a build without threads gives a pool of one).
  ThreadPool pool;
  REQUIRE(pool.create(2).ok());
  const uint32_t threads = pool.threads();
  const size_t packed = attention_workspace_bytes(shape, p, threads).value();
  const size_t whole = attention_workspace_bytes(shape, threads).value();
  const size_t alone = attention_workspace_bytes({1, 3000, 8, 2, 128}, threads).value();
  CHECK(packed == alone);
  CHECK(packed > whole);
  const Problem problem(shape, p, DType::kF16, 3);
  std::vector<float> o(problem.out_size());
  Aligned ws(packed);
  HeapCount count;
  const Status ok =
      attend(problem.q.data(), problem.kp(), problem.vp(), problem.kv_dtype, o.data(), shape, p, &pool, ws.p, ws.size);
  const Status small =
      attend(problem.q.data(), problem.kp(), problem.vp(), problem.kv_dtype, o.data(), shape, p, &pool, ws.p, whole);
  CHECK(count.stop() == 0);
  CHECK_MESSAGE(ok.ok(), ok.message());
  CHECK(std::string(small.message()).find("attention: workspace is") == 0);
}

TEST_CASE("packed batches: bad lengths are rejected by name, and a rejected reshape keeps the op") {
  const Problem p({6, 6, 4, 2, 64}, {}, DType::kF32, 9);
  std::vector<float> o(p.out_size());
  Aligned ws(1 << 20);
  auto attempt = [&](std::vector<uint32_t> cu_q, std::vector<uint32_t> cu_k, uint32_t n_seqs,
                     AttentionShape shape = {6, 6, 4, 2, 64}) {
    AttentionParams params;
    params.cu_seqlens_q = cu_q.empty() ? nullptr : cu_q.data();
    params.cu_seqlens_k = cu_k.empty() ? nullptr : cu_k.data();
    params.n_seqs = n_seqs;
    const Status s = attend(p.q.data(), p.kp(), p.vp(), DType::kF32, o.data(), shape, params, nullptr, ws.p, ws.size);
    return std::string(s.ok() ? "(ok)" : s.message());
  };
  CHECK(attempt({0, 2, 6}, {}, 2) == "(ok)");
  CHECK(attempt({0, 2, 6}, {0, 5, 6}, 2) == "(ok)");
  CHECK(attempt({1, 2, 6}, {}, 2) == "attention: cu_seqlens_q[0] is 1, expected 0 (the first sequence's start)");
  CHECK(attempt({0, 2, 2, 6}, {}, 3) ==
        "attention: cu_seqlens_q[2] = 2 is not above cu_seqlens_q[1] = 2: sequence 1 has length 0 (each needs at "
        "least 1)");
  CHECK(attempt({0, 4, 2}, {}, 2)
            .find("attention: cu_seqlens_q[2] = 2 is not above cu_seqlens_q[1] = 4: sequence "
                  "1 has length -2") == 0);
  CHECK(attempt({0, 2, 5}, {}, 2) ==
        "attention: cu_seqlens_q[n_seqs = 2] is 5, but t_q is 6 (the lengths must cover every row)");
  CHECK(attempt({0, 2, 6}, {0, 2, 7}, 2) ==
        "attention: cu_seqlens_k[n_seqs = 2] is 7, but t_kv is 6 (the lengths must cover every row)");
  CHECK(attempt({0, 6}, {}, 0).find("cu_seqlens_q is given with n_seqs 0") != std::string::npos);
  CHECK(attempt({}, {0, 6}, 1) ==
        "attention: cu_seqlens_k without cu_seqlens_q (a packed batch gives the query lengths first)");
  CHECK(attempt({}, {}, 2) == "attention: n_seqs without cu_seqlens_q (a packed batch gives the query lengths first)");
  CHECK(attempt({0, 2, 4}, {}, 2, {4, 6, 4, 2, 64}) ==
        "attention: a packed batch without cu_seqlens_k needs t_kv == t_q, got t_kv 6 and t_q 4");

  // A rejected reshape leaves the op as it was; lengths changed after reshape fail at run().
  std::vector<uint32_t> cu = {0, 2, 6};
  AttentionParams good;
  good.cu_seqlens_q = cu.data();
  good.n_seqs = 2;
  AttentionOp op;
  REQUIRE(op.reshape(p.shape, good, DType::kF32, 1).ok());
  const size_t bytes = op.workspace_bytes();
  std::vector<uint32_t> bad = {0, 0, 6};
  AttentionParams rejected = good;
  rejected.cu_seqlens_q = bad.data();
  CHECK_FALSE(op.reshape(p.shape, rejected, DType::kF32, 1).ok());
  CHECK(op.workspace_bytes() == bytes);
  CHECK(op.run(p.q.data(), p.kp(), p.vp(), o.data(), nullptr, ws.p, ws.size).ok());
  cu[1] = 7;
  CHECK(std::string(op.run(p.q.data(), p.kp(), p.vp(), o.data(), nullptr, ws.p, ws.size).message()) ==
        "attention: cu_seqlens_q[2] = 6 is not above cu_seqlens_q[1] = 7: sequence 1 has length -1 (each needs at "
        "least 1)");
}

TEST_CASE("alibi_slopes: the standard rule for every head count, MPT's max bias, bad arguments write nothing") {
  for (uint32_t n = 1; n <= 70; ++n) {
    INFO("n_heads " << n);
    std::vector<float> got(n);
    REQUIRE(alibi_slopes(n, got.data()).ok());
    const std::vector<double> want = test::reference_alibi_slopes(n);
    for (uint32_t h = 0; h < n; ++h) CHECK(got[h] == static_cast<float>(want[h]));
  }
  // Published values: 8 heads 1/2, 1/4, ..; 12 heads (BLOOM's rule) 2^-1..2^-8, then 2^-0.5, 2^-1.5, ..
  float s8[8], s12[12], s4[4];
  REQUIRE(alibi_slopes(8, s8).ok());
  CHECK(s8[0] == 0.5f);
  CHECK(s8[7] == 1.0f / 256);
  REQUIRE(alibi_slopes(12, s12).ok());
  CHECK(s12[7] == 1.0f / 256);
  CHECK(s12[8] == static_cast<float>(std::sqrt(0.5)));
  CHECK(s12[11] == static_cast<float>(std::pow(2.0, -3.5)));
  REQUIRE(alibi_slopes(4, s4, 16.0f).ok());  // MPT's alibi_bias_max 16: 2^(-16(h+1)/4)
  CHECK(s4[0] == 1.0f / 16);
  CHECK(s4[3] == 1.0f / 65536);
  float untouched[2] = {7.0f, 7.0f};
  CHECK(std::string(alibi_slopes(0, untouched).message()) == "alibi slopes: n_heads 0 is not in 1..1024");
  CHECK(std::string(alibi_slopes(2, untouched, 0.0f).message()) ==
        "alibi slopes: max_bias 0 is not a finite number > 0");
  CHECK(std::string(alibi_slopes(2, untouched, NAN).message()) ==
        "alibi slopes: max_bias nan is not a finite number > 0");
  CHECK(std::string(alibi_slopes(2, nullptr).message()) == "alibi slopes: the output is null");
  CHECK(untouched[0] == 7.0f);
  CHECK(untouched[1] == 7.0f);
}

TEST_CASE("attend_strided reads a ring-buffer cache layout") {
  // The KV cache's layout: [n_kv_heads, rows, head_dim] per tensor, a ring of `rows` rows whose
  // logical key 0 sits at row `first`. Its O must match the dense problem's reference.
  const uint32_t rows = 37, first = 29;
  const Problem p({3, 30, 4, 2, 64}, {0.0f, 0.0f, true, 20}, DType::kF16, 11);
  const uint32_t d = p.shape.head_dim, g_n = p.shape.n_kv_heads;
  std::vector<uint16_t> kc(size_t{g_n} * rows * d, 0x7e00), vc(kc.size(), 0x7e00);  // NaN where no key lives
  for (uint32_t g = 0; g < g_n; ++g) {
    for (uint32_t j = 0; j < p.shape.t_kv; ++j) {
      const uint32_t row = (first + j) % rows;
      for (uint32_t x = 0; x < d; ++x) {
        kc[(size_t{g} * rows + row) * d + x] = p.k16[(size_t{j} * g_n + g) * d + x];
        vc[(size_t{g} * rows + row) * d + x] = p.v16[(size_t{j} * g_n + g) * d + x];
      }
    }
  }
  simd::AttentionArgs a = args_of(p);
  std::vector<float> o(p.out_size(), -7.0f);
  a.q = p.q.data();
  a.q_token_stride = size_t{p.shape.n_heads} * d;
  a.o = o.data();
  a.o_token_stride = a.q_token_stride;
  a.k = kc.data();
  a.v = vc.data();
  a.kv_type = simd::KvType::kF16;
  a.kv_head_stride = size_t{rows} * d;
  a.kv_row_stride = d;
  a.kv_first_row = first;
  a.kv_ring_rows = rows;
  a.causal = true;
  a.window = 20;
  ThreadPool pool;
  REQUIRE(pool.create(3).ok());
  Aligned ws(attention_split(a, pool.threads()).workspace_bytes);
  const Status s = attend_strided(a, &pool, ws.p, ws.size);
  REQUIRE_MESSAGE(s.ok(), s.message());
  CHECK(max_abs_error(o, p.reference()) <= 1e-4);

  a.kv_first_row = rows;
  CHECK(std::string(attend_strided(a, &pool, ws.p, ws.size).message()) ==
        "attention: a ring of 37 rows cannot hold t_kv 30 keys starting at row 37");
  a.kv_first_row = first;
  a.q_token_stride = 10;
  CHECK(std::string(attend_strided(a, &pool, ws.p, ws.size).message()) ==
        "attention: q_token_stride 10 is less than n_heads · head_dim = 256");
}

TEST_CASE("thread pool: every task runs once, slots are never shared") {
  ThreadPool pool;
  CHECK(pool.threads() == 1);
  CHECK(!pool.create(0).ok());
  CHECK(std::string(pool.create(0).message()) == "thread pool: threads 0 is not in 1..256");
  CHECK(!pool.create(257).ok());
  REQUIRE(pool.create(4).ok());
  CHECK(pool.threads() == (ThreadPool::threading_available() ? 4u : 1u));
  struct Ctx {
    std::atomic<int> runs[1000];
    std::atomic<int> in_slot[ThreadPool::kMaxThreads];
    std::atomic<bool> shared{false}, out_of_range{false};
    uint32_t threads;
  };
  static Ctx ctx;
  for (auto& r : ctx.runs) r = 0;
  for (auto& s : ctx.in_slot) s = 0;
  ctx.threads = pool.threads();
  pool.run(
      1000,
      [](void* c, uint32_t slot, size_t task) {
        Ctx& x = *static_cast<Ctx*>(c);
        if (slot >= x.threads) {
          x.out_of_range = true;
          return;
        }
        if (x.in_slot[slot].fetch_add(1) != 0) x.shared = true;
        volatile double sink = 0;
        for (int i = 0; i < 2000; ++i) sink = sink + i;
        x.runs[task].fetch_add(1);
        x.in_slot[slot].fetch_sub(1);
      },
      &ctx);
  CHECK(!ctx.shared);
  CHECK(!ctx.out_of_range);
  int once = 0;
  for (auto& r : ctx.runs) once += r.load() == 1;
  CHECK(once == 1000);
  static std::atomic<int> plain{0};
  pool.run(
      77, [](void*, size_t task) { plain.fetch_add(static_cast<int>(task)); }, nullptr);
  CHECK(plain.load() == 77 * 76 / 2);
  pool.run(
      0, [](void*, size_t) { plain = -1; }, nullptr);
  CHECK(plain.load() == 77 * 76 / 2);
}

}  // namespace
}  // namespace headway
