// NaN and Inf in Q, K and V through the public entries (attend(), KvCache), on every SIMD target
// this machine supports. The contract (attention.hpp, README "Guarantees"): a non-finite input
// reaches exactly the output rows whose computation reads it, with the value IEEE arithmetic
// gives there (the double reference's); every other row is bitwise the row of the same call
// without it; nothing crashes and no error is returned (inputs are data, not arguments).
// The kernel suite (attention_kernel_test) holds NaN placement against the reference per
// kernel; this suite holds "other rows untouched" bitwise at the API, through the threaded
// driver, the split-KV decode path and a sliding-window cache.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "headway/attention.hpp"
#include "headway/dtype_convert.hpp"
#include "headway/kv_cache.hpp"
#include "headway/plan.hpp"
#include "hwy/targets.h"
#include "simd/attention/attention.h"
#include "tests/reference/reference_args.hpp"
#include "tests/reference/reference_attention.hpp"
#include "tests/kernels/target_scope.hpp"
#include "tests/support/test_rng.hpp"

namespace headway {
namespace {

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();

using test::TargetScope;
using test::test_targets;

struct Aligned {
  explicit Aligned(size_t bytes) : size((bytes + 63) / 64 * 64), p(std::aligned_alloc(64, size ? size : 64)) {}
  ~Aligned() { std::free(p); }
  size_t size;
  void* p;
};

struct Problem {
  AttentionShape s;
  AttentionParams p;
  DType dtype;
  std::vector<float> q, k, v;  // f32 as drawn (K/V narrowed per run for f16)

  Problem(AttentionShape shape, AttentionParams params, DType d, uint64_t seed) : s(shape), p(params), dtype(d) {
    test::Rng rng(seed);
    q.resize(size_t{s.t_q} * s.n_heads * s.head_dim);
    k.resize(size_t{s.t_kv} * s.n_kv_heads * s.head_dim);
    v.resize(k.size());
    for (float& x : q) x = rng.normal();
    for (float& x : k) x = rng.normal();
    for (float& x : v) x = rng.normal();
  }
  size_t kv_at(uint32_t key, uint32_t g, uint32_t x) const { return (size_t{key} * s.n_kv_heads + g) * s.head_dim + x; }
  size_t row_at(uint32_t t, uint32_t h) const { return (size_t{t} * s.n_heads + h) * s.head_dim; }

  std::vector<float> run(ThreadPool* pool) const {
    std::vector<uint16_t> k16(k.size()), v16(v.size());
    f32_to_f16(k.data(), k16.data(), k.size());
    f32_to_f16(v.data(), v16.data(), v.size());
    const bool f32 = dtype == DType::kF32;
    Aligned ws(attention_workspace_bytes(s, pool ? pool->threads() : 1).value());
    std::vector<float> o(q.size(), -7.0f);
    const Status st =
        attend(q.data(), f32 ? static_cast<const void*>(k.data()) : k16.data(),
               f32 ? static_cast<const void*>(v.data()) : v16.data(), dtype, o.data(), s, p, pool, ws.p, ws.size);
    REQUIRE_MESSAGE(st.ok(), st.message());
    return o;
  }

  std::vector<double> reference() const {
    std::vector<float> kq = k, vq = v;
    if (dtype == DType::kF16) {
      for (float& x : kq) x = f16_bits_to_f32(f32_to_f16_bits(x));
      for (float& x : vq) x = f16_bits_to_f32(f32_to_f16_bits(x));
    }
    const test::RefAttention r = test::ref_args(s, p);
    return test::reference_attention(r, q.data(), kq.data(), vq.data());
  }

  // Whether query row t sees key j (the mask only).
  bool sees(uint32_t t, uint32_t j) const {
    test::RefAttention r;
    r.t_q = s.t_q;
    r.t_kv = s.t_kv;
    r.causal = p.causal;
    r.window = p.window;
    return test::reference_key_visible(r, t, j);
  }
};

struct Tally {
  size_t untouched_rows = 0, affected_rows = 0, nan_values = 0, bad_rows = 0;
};

// Rows that read the poisoned element (`affected(t, h)`) must match the reference (NaN where
// it is NaN, the same infinity, else within tolerance); every other row is bitwise `clean`'s.
template <class Affected>
Tally compare(const Problem& pr, const std::vector<float>& got, const std::vector<float>& clean, Affected affected) {
  const std::vector<double> want = pr.reference();
  const double tol = pr.dtype == DType::kF32 ? 1e-4 : 2e-3;
  Tally t;
  for (uint32_t tok = 0; tok < pr.s.t_q; ++tok) {
    for (uint32_t h = 0; h < pr.s.n_heads; ++h) {
      const size_t at = pr.row_at(tok, h);
      bool ok = true;
      if (!affected(tok, h)) {
        ++t.untouched_rows;
        ok = std::memcmp(&got[at], &clean[at], pr.s.head_dim * sizeof(float)) == 0;
      } else {
        ++t.affected_rows;
        for (uint32_t x = 0; x < pr.s.head_dim; ++x) {
          const double w = want[at + x], g = got[at + x];
          if (std::isnan(w)) {
            ok &= std::isnan(g);
            t.nan_values += std::isnan(g);
          } else if (std::isinf(w)) {
            ok &= g == w;
          } else {
            ok &= std::fabs(g - w) <= tol;
          }
        }
      }
      t.bad_rows += !ok;
    }
  }
  return t;
}

struct Shape {
  const char* name;
  AttentionShape s;
  AttentionParams p;
};

// Prefill with query tiles (d64, GQA), a generic head_dim with a window and softcap, and a
// decode that takes the split-KV path (1100 keys: three chunks).
// Learned sink logits for up to 8 query heads.
constexpr float kSinks[8] = {-3.0f, 0.5f, 1.0f, 2.5f, -0.25f, 6.0f, 0.0f, 12.0f};

const Shape kShapes[] = {
    {"prefill d64 GQA causal", {40, 100, 4, 2, 64}, {0.0f, 0.0f, true, 0}},
    {"prefill d80 window softcap", {24, 60, 6, 3, 80}, {0.0f, 30.0f, true, 16}},
    {"split-KV decode d128", {1, 1100, 8, 2, 128}, {0.0f, 0.0f, true, 0}},
    {"prefill d64 GQA causal, sinks", {40, 100, 4, 2, 64}, {0.0f, 0.0f, true, 0, kSinks}},
    // The last 300 keys: chunk 0, which holds the sink, sees none of them.
    {"split-KV decode d128 window 300, sinks", {1, 1100, 8, 2, 128}, {0.0f, 0.0f, true, 300, kSinks}},
};

void each_target_and_pool(const std::function<void(ThreadPool*)>& body) {
  ThreadPool pool;
  REQUIRE(pool.create(3).ok());
  for (const int64_t target : test_targets()) {
    TargetScope scope(target);
    INFO("target " << (target ? hwy::TargetName(target) : simd::attention_target_name()));
    body(nullptr);
    body(&pool);
  }
}

TEST_CASE("NaN in one query row: that row is NaN, every other row is bitwise the clean run's") {
  for (const Shape& sh : kShapes) {
    for (DType dt : {DType::kF32, DType::kF16}) {
      INFO(sh.name << (dt == DType::kF32 ? " f32" : " f16"));
      Problem pr(sh.s, sh.p, dt, 11);
      const uint32_t tok = sh.s.t_q - 1, head = 1;
      each_target_and_pool([&](ThreadPool* pool) {
        const std::vector<float> clean = pr.run(pool);
        Problem bad = pr;
        bad.q[bad.row_at(tok, head) + 3] = kNaN;
        const Tally t =
            compare(bad, bad.run(pool), clean, [&](uint32_t t_, uint32_t h) { return t_ == tok && h == head; });
        CHECK(t.bad_rows == 0);
        CHECK(t.affected_rows == 1);
        CHECK(t.nan_values == sh.s.head_dim);  // the whole row: its logits are all NaN
      });
    }
  }
}

// K poisoned at (key, kv head 0, element 0): rows of heads in group 0 that see the key.
void check_poisoned_key(float value, bool in_v) {
  for (const Shape& sh : kShapes) {
    for (DType dt : {DType::kF32, DType::kF16}) {
      INFO(sh.name << (dt == DType::kF32 ? " f32" : " f16") << " value " << value << (in_v ? " in V" : " in K"));
      Problem pr(sh.s, sh.p, dt, 23);
      const uint32_t key = sh.s.t_kv - 10;  // seen by the last rows only (causal)
      const uint32_t group = sh.s.n_heads / sh.s.n_kv_heads;
      Problem bad = pr;
      (in_v ? bad.v : bad.k)[bad.kv_at(key, 0, 5)] = value;
      auto affected = [&](uint32_t t, uint32_t h) { return h / group == 0 && pr.sees(t, key); };
      each_target_and_pool([&](ThreadPool* pool) {
        const std::vector<float> clean = pr.run(pool);
        const Tally t = compare(bad, bad.run(pool), clean, affected);
        CHECK(t.bad_rows == 0);
        CHECK(t.affected_rows > 0);
        CHECK(t.untouched_rows > 0);
        if (std::isnan(value)) CHECK(t.nan_values > 0);
      });
    }
  }
}

TEST_CASE("NaN in one key: the rows that see it are NaN, rows that do not (causal, other groups) are untouched") {
  check_poisoned_key(kNaN, false);
}

TEST_CASE("+Inf and -Inf in one key: IEEE results in the rows that see it, other rows untouched") {
  check_poisoned_key(kInf, false);
  check_poisoned_key(-kInf, false);
}

TEST_CASE("NaN and Inf in one value: only the rows that see it change") {
  check_poisoned_key(kNaN, true);
  check_poisoned_key(kInf, true);
}

TEST_CASE("a NaN key in a sliding-window cache poisons rows until it leaves the window, then none") {
  Config c;
  c.d_model = 64;
  c.n_heads = 4;
  c.n_kv_heads = 2;
  c.max_seq = 200;
  c.window = 16;
  c.kv_dtype = DType::kF16;
  PlanOptions o;
  o.max_tokens = 4;
  const Plan p = make_plan(c, o).value();
  const uint32_t poisoned = 5;
  std::vector<float> outs[2];
  for (int run = 0; run < 2; ++run) {
    Aligned region(p.kv_bytes_per_layer);
    KvCache cache;
    REQUIRE(cache.bind(p, region.p, region.size).ok());
    Aligned ws(p.scratch_bytes);
    test::Rng rng(77);
    for (uint32_t pos = 0; pos < 60; ++pos) {
      std::vector<float> qkv(p.qkv_width);
      for (float& x : qkv) x = rng.normal();
      if (run == 1 && pos == poisoned) qkv[p.q_width] = kNaN;  // K of kv head 0, element 0
      REQUIRE(
          cache.append(qkv.data() + p.q_width, p.qkv_width, qkv.data() + p.q_width + p.kv_width, p.qkv_width, 1).ok());
      std::vector<float> out(p.q_width);
      REQUIRE(cache.attend(qkv.data(), p.qkv_width, out.data(), p.q_width, 1, nullptr, ws.p, ws.size).ok());
      outs[run].insert(outs[run].end(), out.begin(), out.end());
    }
  }
  const uint32_t group = c.n_heads / c.n_kv_heads;
  const uint32_t d = p.head_dim;
  for (uint32_t pos = 0; pos < 60; ++pos) {
    for (uint32_t h = 0; h < c.n_heads; ++h) {
      INFO("position " << pos << " head " << h);
      const size_t at = size_t{pos} * p.q_width + size_t{h} * d;
      const bool sees = h / group == 0 && pos >= poisoned && pos < poisoned + c.window;
      if (sees) {
        for (uint32_t x = 0; x < d; ++x) CHECK(std::isnan(outs[1][at + x]));
      } else {
        CHECK(std::memcmp(&outs[1][at], &outs[0][at], d * sizeof(float)) == 0);
      }
    }
  }
}

}  // namespace
}  // namespace headway
