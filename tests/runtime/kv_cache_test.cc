// RoPE and the KV cache: stored rows against a direct computation, state unchanged on every
// rejected append, ring wrap-around, and attention over the cache against the double reference.
#include <doctest/doctest.h>

#include <cmath>
#include <algorithm>
#include <cstring>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "headway/arena.hpp"
#include "headway/dtype_convert.hpp"
#include "headway/hadamard.hpp"
#include "headway/tools/heap_count.hpp"
#include "headway/kv_cache.hpp"
#include "headway/plan.hpp"
#include "headway/quantize.hpp"
#include "runtime/attention/rope.hpp"
#include "tests/reference/reference_attention.hpp"
#include "tests/support/hadamard_reference.hpp"
#include "tests/support/quantized_rows.hpp"

namespace headway {
namespace {

std::vector<float> normal(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d;
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  return v;
}

// RoPE straight from its definition, in double.
void rope_reference(std::vector<double>& x, uint32_t head_dim, uint32_t pos, const RopeConfig& r) {
  const uint32_t rot = r.rotary_dim ? r.rotary_dim : head_dim;
  const std::vector<double> in = x;
  for (uint32_t i = 0; i < rot / 2; ++i) {
    const double freq = std::pow(static_cast<double>(r.theta), -2.0 * i / rot);
    const double c = std::cos(pos * freq), s = std::sin(pos * freq);
    const uint32_t a = r.style == RopeStyle::kNeox ? i : 2 * i;
    const uint32_t b = r.style == RopeStyle::kNeox ? i + rot / 2 : 2 * i + 1;
    x[a] = in[a] * c - in[b] * s;
    x[b] = in[b] * c + in[a] * s;
  }
}

TEST_CASE("apply_rope matches the definition: NeoX, GPT-J, partial rotary, long positions") {
  struct Case {
    RopeStyle style;
    uint32_t head_dim, rotary;
    float theta;
    uint32_t pos;
  };
  const Case cases[] = {{RopeStyle::kNeox, 64, 0, 10000.0f, 0},      {RopeStyle::kNeox, 128, 0, 500000.0f, 131000},
                        {RopeStyle::kGptj, 64, 0, 10000.0f, 17},     {RopeStyle::kNeox, 80, 32, 10000.0f, 2047},
                        {RopeStyle::kGptj, 256, 64, 1000000.0f, 40}, {RopeStyle::kNeox, 2, 0, 10000.0f, 5}};
  for (const Case& c : cases) {
    INFO("style " << rope_style_name(c.style) << " head_dim " << c.head_dim << " rotary " << c.rotary << " pos "
                  << c.pos);
    RopeConfig r{c.style, c.theta, c.rotary};
    const uint32_t heads = 3;
    std::vector<float> x = normal(2 * heads * c.head_dim, c.head_dim);
    const std::vector<float> orig = x;
    std::vector<double> freqs(rope_frequency_count(r, c.head_dim));
    rope_frequencies(r, c.head_dim, freqs.data());
    apply_rope(x.data(), 2, heads * c.head_dim, heads, c.head_dim, c.pos, c.pos + 2, r, freqs.data());
    for (uint32_t t = 0; t < 2; ++t) {
      for (uint32_t h = 0; h < heads; ++h) {
        std::vector<double> want(orig.begin() + (t * heads + h) * c.head_dim,
                                 orig.begin() + (t * heads + h + 1) * c.head_dim);
        rope_reference(want, c.head_dim, c.pos + t, r);
        for (uint32_t d = 0; d < c.head_dim; ++d) {
          CHECK(x[(t * heads + h) * c.head_dim + d] == doctest::Approx(want[d]).epsilon(1e-5));
        }
      }
    }
  }
}

Config small_config(uint32_t window, DType kv) {
  Config c;
  c.set_name("kv-test");
  c.d_model = 64;
  c.n_heads = 4;
  c.n_kv_heads = 2;
  c.head_dim = 16;
  c.max_seq = 40;
  c.rope = {RopeStyle::kNeox, 10000.0f, 0};
  c.window = window;
  c.kv_dtype = kv;
  return c;
}

// The plan's RoPE table, as the layer and the backends make it at init.
std::vector<double> rope_table(const Plan& p) {
  std::vector<double> t(rope_frequency_count(p.config.rope, p.head_dim) + 1);
  KvCache::make_rope_table(p, t.data());
  return t;
}

struct Fixture {
  Plan plan;
  std::vector<uint8_t> region;
  std::vector<double> rope;
  std::vector<float> slopes;  // ALiBi's, made as the layer and the backends make them
  KvCache cache;
  Fixture(const Config& c, uint32_t max_tokens) {
    PlanOptions o;
    o.max_tokens = max_tokens;
    plan = make_plan(c, o).value();
    region.assign(plan.kv_bytes_per_layer, 0);
    rope = rope_table(plan);
    if (c.alibi) {
      slopes.resize(c.n_heads);
      KvCache::make_alibi_slopes(plan, slopes.data());
    }
    REQUIRE(cache.bind(plan, region.data(), region.size(), rope.data(), slopes.empty() ? nullptr : slopes.data()).ok());
  }
};

TEST_CASE("append stores RoPE(K) and V in the cache dtype, rejected appends change nothing") {
  for (DType dt : {DType::kF32, DType::kF16, DType::kBF16}) {
    INFO(dtype_name(dt));
    Fixture f(small_config(0, dt), 8);
    const uint32_t kvw = f.plan.kv_width, hd = f.plan.head_dim;
    const std::vector<float> k = normal(40 * kvw, 1), v = normal(40 * kvw, 2);
    REQUIRE(f.cache.append(k.data(), kvw, v.data(), kvw, 7).ok());
    REQUIRE(f.cache.append(k.data() + 7 * kvw, kvw, v.data() + 7 * kvw, kvw, 30).ok());
    CHECK(f.cache.size() == 37);
    const size_t eb = dtype_bytes(dt);
    auto load = [&](const uint8_t* p) {
      if (dt == DType::kF32) {
        float x;
        std::memcpy(&x, p, 4);
        return x;
      }
      uint16_t b;
      std::memcpy(&b, p, 2);
      return dt == DType::kF16 ? f16_bits_to_f32(b) : bf16_bits_to_f32(b);
    };
    auto round = [&](float x) {
      return dt == DType::kF32   ? x
             : dt == DType::kF16 ? f16_bits_to_f32(f32_to_f16_bits(x))
                                 : bf16_bits_to_f32(f32_to_bf16_bits(x));
    };
    for (uint32_t pos : {0u, 6u, 7u, 36u}) {
      for (uint32_t g = 0; g < 2; ++g) {
        std::vector<float> kr(k.begin() + pos * kvw + g * hd, k.begin() + pos * kvw + (g + 1) * hd);
        apply_rope(kr.data(), 1, hd, 1, hd, pos, pos + 1, f.plan.config.rope, f.rope.data());
        const HeadLayout l = f.plan.head(g * f.plan.group_size);
        for (uint32_t d = 0; d < hd; ++d) {
          const size_t off = (size_t{pos} * hd + d) * eb;
          CHECK(load(f.region.data() + l.cache_k_offset + off) == round(kr[d]));
          CHECK(load(f.region.data() + l.cache_v_offset + off) == round(v[pos * kvw + g * hd + d]));
        }
      }
    }
    // Past the context of 40: the cache bytes and size stay as they were.
    const std::vector<uint8_t> before = f.region;
    const Status s = f.cache.append(k.data(), kvw, v.data(), kvw, 4);
    CHECK(s.code() == Code::kOutOfRange);
    CHECK(std::string(s.message()).find("appending 4 tokens at position 37 goes past the context of 40") !=
          std::string::npos);
    CHECK(f.cache.size() == 37);
    CHECK(f.region == before);
    CHECK(f.cache.append(nullptr, kvw, v.data(), kvw, 1).code() == Code::kInvalidArgument);
    CHECK(f.cache.append(k.data(), kvw - 1, v.data(), kvw, 1).code() == Code::kInvalidArgument);
    CHECK(f.region == before);
    CHECK(f.cache.append(k.data(), kvw, v.data(), kvw, 3).ok());
    CHECK(f.cache.size() == 40);
  }
}

TEST_CASE("a window ring rejects chunks larger than planned and keeps its state") {
  Fixture f(small_config(8, DType::kF16), 4);
  CHECK(f.plan.cache_rows == 8 + 4 - 1);
  const std::vector<float> k = normal(6 * f.plan.kv_width, 3);
  const std::vector<uint8_t> before = f.region;
  const Status s = f.cache.append(k.data(), f.plan.kv_width, k.data(), f.plan.kv_width, 5);
  CHECK(s.code() == Code::kOutOfRange);
  CHECK(std::string(s.message()).find("appending 5 tokens at once") != std::string::npos);
  CHECK(f.region == before);
  CHECK(f.cache.size() == 0);
  KvCache unbound;
  CHECK(unbound.append(k.data(), 32, k.data(), 32, 1).code() == Code::kFailedPrecondition);
}

TEST_CASE("reset(start): K rotated once at its absolute position, rows counted from the reset") {
  Fixture f(small_config(0, DType::kF32), 8);
  const uint32_t kvw = f.plan.kv_width, hd = f.plan.head_dim;
  const std::vector<float> k = normal(8 * kvw, 4), v = normal(8 * kvw, 5);
  f.cache.reset(30);
  CHECK(f.cache.position() == 30);
  CHECK(f.cache.start_position() == 30);
  REQUIRE(f.cache.append(k.data(), kvw, v.data(), kvw, 6).ok());
  CHECK(f.cache.size() == 6);
  CHECK(f.cache.position() == 36);
  for (uint32_t i = 0; i < 6; ++i) {
    for (uint32_t g = 0; g < 2; ++g) {
      std::vector<float> kr(k.begin() + i * kvw + g * hd, k.begin() + i * kvw + (g + 1) * hd);
      apply_rope(kr.data(), 1, hd, 1, hd, 30 + i, 31 + i, f.plan.config.rope, f.rope.data());
      const HeadLayout l = f.plan.head(g * f.plan.group_size);
      CHECK(std::memcmp(f.region.data() + l.cache_k_offset + size_t{i} * hd * 4, kr.data(), hd * 4) == 0);
    }
  }
  // The context counts positions, not rows: 36 + 5 > 40, with the same words as from 0.
  const Status s = f.cache.append(k.data(), kvw, v.data(), kvw, 5);
  CHECK(std::string(s.message()).find("appending 5 tokens at position 36 goes past the context of 40") !=
        std::string::npos);
  CHECK(f.cache.position() == 36);
  f.cache.reset(41);  // past the context: nothing fits, and nothing wraps around
  CHECK(f.cache.append(k.data(), kvw, v.data(), kvw, 1).code() == Code::kOutOfRange);
  KvCache needs_table;
  CHECK(needs_table.bind(f.plan, f.region.data(), f.region.size()).code() == Code::kInvalidArgument);
}

TEST_CASE("rotate_queries: the last tokens' positions, RoPE's definition, nothing written on error") {
  for (RopeStyle style : {RopeStyle::kNeox, RopeStyle::kGptj}) {
    INFO(rope_style_name(style));
    Config c = small_config(0, DType::kF32);
    c.rope.style = style;
    Fixture f(c, 8);
    const uint32_t qw = f.plan.q_width, kvw = f.plan.kv_width, hd = f.plan.head_dim;
    const std::vector<float> k = normal(8 * kvw, 6), v = normal(8 * kvw, 7), q0 = normal(3 * qw, 8);
    f.cache.reset(30);
    REQUIRE(f.cache.append(k.data(), kvw, v.data(), kvw, 7).ok());
    std::vector<float> q = q0;
    REQUIRE(f.cache.rotate_queries(q.data(), qw, 3).ok());
    for (uint32_t t = 0; t < 3; ++t) {
      for (uint32_t h = 0; h < c.n_heads; ++h) {
        std::vector<double> want(q0.begin() + t * qw + h * hd, q0.begin() + t * qw + (h + 1) * hd);
        rope_reference(want, hd, 34 + t, c.rope);  // positions 30 + 7 − 3 ..
        for (uint32_t i = 0; i < hd; ++i) CHECK(q[t * qw + h * hd + i] == doctest::Approx(want[i]).epsilon(1e-5));
      }
    }
    q = q0;
    CHECK(f.cache.rotate_queries(q.data(), qw, 8).code() == Code::kInvalidArgument);
    CHECK(f.cache.rotate_queries(q.data(), qw, 0).code() == Code::kInvalidArgument);
    CHECK(std::string(f.cache.rotate_queries(q.data(), qw - 1, 2).message()).find("q_token_stride 63") !=
          std::string::npos);
    CHECK(f.cache.rotate_queries(nullptr, qw, 2).code() == Code::kInvalidArgument);
    CHECK(q == q0);
  }
  Config no_rope = small_config(0, DType::kF32);
  no_rope.rope = RopeConfig{};  // no RoPE: q stays as it was
  Fixture f(no_rope, 8);
  const std::vector<float> k = normal(2 * f.plan.kv_width, 9), q0 = normal(f.plan.q_width, 10);
  REQUIRE(f.cache.append(k.data(), f.plan.kv_width, k.data(), f.plan.kv_width, 2).ok());
  std::vector<float> q = q0;
  REQUIRE(f.cache.rotate_queries(q.data(), f.plan.q_width, 1).ok());
  CHECK(q == q0);
  KvCache unbound;
  CHECK(unbound.rotate_queries(q.data(), f.plan.q_width, 1).code() == Code::kFailedPrecondition);
}

// Appends a sequence in the given chunk sizes and, after each chunk, attends that chunk's
// queries over the cache; every output is held against the double reference over all keys so
// far (roped, rounded to the cache dtype), with the config's causal/window masking.
void check_cache_attention(const Config& c, uint32_t max_tokens, const std::vector<uint32_t>& chunks, double tol,
                           const std::vector<float>& sinks = {}) {
  Fixture f(c, max_tokens);
  const Plan& p = f.plan;
  uint32_t total = 0;
  for (uint32_t n : chunks) total += n;
  const std::vector<float> q = normal(size_t{total} * p.q_width, 11), k = normal(size_t{total} * p.kv_width, 12),
                           v = normal(size_t{total} * p.kv_width, 13);
  // What the cache should hold, densely: RoPE(K) and V rounded to the cache dtype.
  std::vector<float> q_roped = q, k_dense = k, v_dense = v;
  apply_rope(q_roped.data(), total, p.q_width, c.n_heads, p.head_dim, 0, total, c.rope, f.rope.data());
  apply_rope(k_dense.data(), total, p.kv_width, c.kv_heads(), p.head_dim, 0, total, c.rope, f.rope.data());
  // A rotated cache: the queries rotated as the layer rotates them (after RoPE), K and V as append
  // rotates them before quantizing; the reference then runs in the rotated basis and its output is
  // rotated back in double.
  const bool rotated = c.kv_rotation == KvRotation::kHadamard;
  if (rotated) {
    hadamard_rotate_heads(q_roped.data(), total, p.q_width, c.n_heads, p.head_dim);
    hadamard_rotate_heads(k_dense.data(), total, p.kv_width, c.kv_heads(), p.head_dim);
    hadamard_rotate_heads(v_dense.data(), total, p.kv_width, c.kv_heads(), p.head_dim);
  }
  auto round = [&](float x) {
    return c.kv_dtype == DType::kF32   ? x
           : c.kv_dtype == DType::kF16 ? f16_bits_to_f32(f32_to_f16_bits(x))
                                       : bf16_bits_to_f32(f32_to_bf16_bits(x));
  };
  if (dtype_is_block(c.kv_dtype)) {  // each kv head's row quantized on its own, as append does
    REQUIRE(test::quantize_rows_and_back(c.kv_dtype, k_dense, p.head_dim));
    REQUIRE(test::quantize_rows_and_back(c.kv_dtype, v_dense, p.head_dim));
  } else {
    for (float& x : k_dense) x = round(x);
    for (float& x : v_dense) x = round(x);
  }

  ThreadPool pool;
  REQUIRE(pool.create(2).ok());
  std::vector<float> o(size_t{max_tokens} * p.q_width);
  std::vector<uint8_t> workspace;
  uint32_t pos = 0;
  for (uint32_t n : chunks) {
    INFO("chunk of " << n << " at position " << pos);
    REQUIRE(
        f.cache
            .append(k.data() + size_t{pos} * p.kv_width, p.kv_width, v.data() + size_t{pos} * p.kv_width, p.kv_width, n)
            .ok());
    workspace.resize(f.cache.workspace_bytes(n, pool.threads()) + 64);
    void* ws = workspace.data() + (64 - reinterpret_cast<uintptr_t>(workspace.data()) % 64) % 64;
    const Status s =
        f.cache.attend(q_roped.data() + size_t{pos} * p.q_width, p.q_width, o.data(), p.q_width, n, &pool, ws,
                       f.cache.workspace_bytes(n, pool.threads()), sinks.empty() ? nullptr : sinks.data());
    REQUIRE_MESSAGE(s.ok(), s.message());
    test::RefAttention r;
    r.t_q = n;
    r.t_kv = pos + n;
    r.n_heads = c.n_heads;
    r.n_kv_heads = c.kv_heads();
    r.head_dim = p.head_dim;
    r.scale = c.logit_scale();
    r.softcap = c.softcap;
    r.causal = c.causal;
    r.window = c.window;
    r.sinks.assign(sinks.begin(), sinks.end());
    r.sink_tokens = c.sink_tokens;
    r.alibi_slopes.assign(f.slopes.begin(), f.slopes.end());
    std::vector<double> want =
        test::reference_attention(r, q_roped.data() + size_t{pos} * p.q_width, k_dense.data(), v_dense.data());
    if (rotated) test::hadamard_reference_rows(&want, p.head_dim);
    double worst = 0;
    for (size_t i = 0; i < want.size(); ++i) worst = std::max(worst, std::fabs(want[i] - o[i]));
    CHECK(worst <= tol);
    pos += n;
  }
}

TEST_CASE("attention over the cache: chunked prefill then decode, full context") {
  for (DType dt : {DType::kF32, DType::kF16, DType::kBF16}) {
    INFO(dtype_name(dt));
    check_cache_attention(small_config(0, dt), 8, {8, 5, 1, 1, 7, 1, 8, 1, 1, 1, 1, 1, 1, 1, 1, 1}, 1e-4);
  }
}

TEST_CASE("attention over a sliding-window ring that wraps several times") {
  for (DType dt : {DType::kF32, DType::kF16}) {
    INFO(dtype_name(dt));
    check_cache_attention(small_config(8, dt), 4, {4, 4, 3, 1, 1, 4, 2, 4, 4, 1, 1, 1, 4, 2}, 1e-4);
  }
  Config c = small_config(5, DType::kF32);  // GPT-J RoPE, softcap, MQA, a window of 5
  c.rope.style = RopeStyle::kGptj;
  c.softcap = 2.0f;
  c.n_kv_heads = 1;
  check_cache_attention(c, 3, {3, 3, 1, 1, 1, 3, 2, 1, 1, 3, 3, 1, 1, 1, 3, 2, 1, 1, 1, 1, 1, 1, 1, 1}, 1e-4);
}

TEST_CASE("attention over the cache with learned sink logits: full context and a wrapping ring") {
  for (DType dt : {DType::kF32, DType::kBF16}) {
    INFO(dtype_name(dt));
    const Config full = small_config(0, dt);
    std::vector<float> sinks(full.n_heads);
    for (uint32_t h = 0; h < full.n_heads; ++h) sinks[h] = -1.5f + 1.25f * static_cast<float>(h);
    check_cache_attention(full, 8, {8, 5, 1, 1, 7, 1, 1}, 1e-4, sinks);
    check_cache_attention(small_config(8, dt), 4, {4, 4, 3, 1, 1, 4, 2, 4, 4, 1, 1}, 1e-4, sinks);
  }
}

// StreamingLLM: the ring keeps the first S tokens for good while the rest wraps around it many
// times; every chunk's output equals the reference over the whole history with the sink-token
// rule. max_seq 40 with a window of 6 and max_tokens 3: a ring of S + 8 rows.
TEST_CASE("attention over a ring with sink tokens that wraps several times") {
  for (DType dt : {DType::kF32, DType::kF16, DType::kBF16}) {
    for (uint32_t s : {1u, 4u}) {
      INFO(dtype_name(dt) << ", " << s << " sink tokens");
      Config c = small_config(6, dt);
      c.sink_tokens = s;
      check_cache_attention(c, 3, {3, 3, 1, 1, 1, 3, 2, 1, 1, 3, 3, 1, 1, 1, 3, 2, 1, 1, 1, 1, 1, 1, 1, 1},
                            dt == DType::kF32 ? 1e-4 : 1e-2);
    }
  }
  Config c = small_config(6, DType::kF32);  // sink tokens with learned sink logits
  c.sink_tokens = 2;
  const std::vector<float> sinks = {0.5f, -1.0f, 2.0f, 0.0f};
  check_cache_attention(c, 4, {4, 4, 1, 1, 4, 4, 4, 1, 1, 1, 4, 4, 1, 1, 1, 1, 1, 1}, 1e-4, sinks);
}

// ALiBi over the cache: full context, a wrapping ring, and a ring with sink tokens (whose sink
// keys lie further from the queries than their index says: the positions the ring evicted).
TEST_CASE("attention over the cache with ALiBi: full context, a ring, a ring with sink tokens") {
  for (uint32_t heads : {4u, 6u}) {  // standard slopes for a power of two and otherwise
    INFO(heads << " heads");
    Config c = small_config(0, DType::kF32);
    c.rope.style = RopeStyle::kNone;
    c.alibi = true;
    c.n_heads = heads;
    c.n_kv_heads = 2;
    c.d_model = heads * 16;
    check_cache_attention(c, 8, {8, 5, 1, 1, 7, 1, 8, 1, 1, 1, 1, 1}, 1e-4);
    c.window = 6;
    check_cache_attention(c, 3, {3, 3, 1, 1, 1, 3, 2, 1, 1, 3, 3, 1, 1, 1, 3, 2, 1, 1, 1}, 1e-4);
    c.sink_tokens = 3;
    check_cache_attention(c, 3, {3, 3, 1, 1, 1, 3, 2, 1, 1, 3, 3, 1, 1, 1, 3, 2, 1, 1, 1}, 1e-4);
    c.alibi_times_scale = true;  // Falcon's slopes, times 1/sqrt(head_dim)
    check_cache_attention(c, 3, {3, 3, 1, 1, 1, 3, 2, 1, 1, 3, 3, 1, 1}, 1e-4);
  }
}

// The block formats: K quantized after RoPE on append, every row its own blocks (head_dim 16: one
// short block; 80: two whole blocks and a short one), full context and a ring with sink tokens.
TEST_CASE("attention over a q8_0 and a q4_0 cache: full context, a wrapping ring with sink tokens") {
  for (DType dt : {DType::kQ8_0, DType::kQ4_0}) {
    for (uint32_t hd : {16u, 80u}) {
      INFO(dtype_name(dt) << ", head_dim " << hd);
      Config c = small_config(0, dt);
      c.head_dim = hd;
      check_cache_attention(c, 8, {8, 5, 1, 1, 7, 1, 8, 1, 1, 1}, 1e-4);
      c.window = 6;
      c.sink_tokens = 2;
      check_cache_attention(c, 3, {3, 3, 1, 1, 1, 3, 2, 1, 1, 3, 3, 1, 1, 1, 3, 2, 1}, 1e-4);
    }
  }
  const Plan p = make_plan(small_config(0, DType::kQ8_0), {}).value();
  CHECK(p.kv_bytes_per_token == 2u * 2 * 34);  // K and V, 2 kv heads, one block of 16 values each
}

// kv_rotation hadamard: K (after RoPE) and V rotated before they are quantized, the queries as the
// layer rotates them, the output rotated back by attend(): the reference of the rotated rows,
// rotated back, within the same 1e-4 (head_dim 64: one block; 96: three blocks of 32).
TEST_CASE("attention over a Hadamard-rotated q8_0 and q4_0 cache: full context, a wrapping ring") {
  for (DType dt : {DType::kQ8_0, DType::kQ4_0}) {
    for (uint32_t hd : {64u, 96u}) {
      INFO(std::string(dtype_name(dt)) << ", head_dim " << hd);
      Config c = small_config(0, dt);
      c.head_dim = hd;
      c.kv_rotation = KvRotation::kHadamard;
      check_cache_attention(c, 8, {8, 5, 1, 1, 7, 1, 8, 1, 1, 1}, 1e-4);
      c.window = 6;
      c.sink_tokens = 2;
      check_cache_attention(c, 3, {3, 3, 1, 1, 1, 3, 2, 1, 1, 3, 3, 1, 1, 1, 3, 2, 1}, 1e-4);
    }
  }
  // The bytes are the unrotated cache's.
  Config c = small_config(0, DType::kQ4_0);
  c.head_dim = 64;
  const uint64_t plain = make_plan(c, {}).value().arena_bytes;
  c.kv_rotation = KvRotation::kHadamard;
  CHECK(make_plan(c, {}).value().arena_bytes == plain);
}

// Runs T tokens through a rotated cache as one prefill (or chunks of `chunk`) and returns every
// query's output; the queries are rotated by rotate_queries (RoPE, then the Hadamard rotation).
std::vector<float> rotated_cache_outputs(const Config& c, uint32_t total, uint32_t chunk, ThreadPool* pool) {
  Fixture f(c, chunk);
  const Plan& p = f.plan;
  const std::vector<float> q = normal(size_t{total} * p.q_width, 31), k = normal(size_t{total} * p.kv_width, 32),
                           v = normal(size_t{total} * p.kv_width, 33);
  std::vector<float> o(size_t{total} * p.q_width), qr(size_t{chunk} * p.q_width);
  std::vector<uint8_t> workspace;
  for (uint32_t pos = 0; pos < total; pos += chunk) {
    const uint32_t n = std::min(chunk, total - pos);
    REQUIRE(
        f.cache
            .append(k.data() + size_t{pos} * p.kv_width, p.kv_width, v.data() + size_t{pos} * p.kv_width, p.kv_width, n)
            .ok());
    std::copy(q.begin() + size_t{pos} * p.q_width, q.begin() + size_t{pos + n} * p.q_width, qr.begin());
    REQUIRE(f.cache.rotate_queries(qr.data(), p.q_width, n).ok());
    const size_t ws_bytes = f.cache.workspace_bytes(n, pool->threads());
    workspace.resize(ws_bytes + 64);
    void* ws = workspace.data() + (64 - reinterpret_cast<uintptr_t>(workspace.data()) % 64) % 64;
    const Status s =
        f.cache.attend(qr.data(), p.q_width, o.data() + size_t{pos} * p.q_width, p.q_width, n, pool, ws, ws_bytes);
    REQUIRE_MESSAGE(s.ok(), s.message());
  }
  return o;
}

TEST_CASE("a rotated cache: decode equals prefill within rounding, the same bits for every thread count") {
  ThreadPool pools[3];
  for (uint32_t t = 0; t < 3; ++t) REQUIRE(pools[t].create(t + 1).ok());
  for (DType dt : {DType::kQ8_0, DType::kQ4_0}) {
    INFO(std::string(dtype_name(dt)));
    Config c = small_config(0, dt);
    c.head_dim = 64;
    c.kv_rotation = KvRotation::kHadamard;
    const uint32_t total = c.max_seq;
    const std::vector<float> prefill = rotated_cache_outputs(c, total, total, &pools[0]);
    const std::vector<float> decode = rotated_cache_outputs(c, total, 1, &pools[0]);
    double worst = 0;
    for (size_t i = 0; i < prefill.size(); ++i) worst = std::max(worst, double{std::fabs(prefill[i] - decode[i])});
    CHECK(worst < 1e-4);  // the same cache bytes; the tile and the decode kernels round differently
    for (ThreadPool& pool : pools) {
      if (pool.threads() == 1) continue;  // the baseline
      INFO("threads " << pool.threads());
      const std::vector<float> p2 = rotated_cache_outputs(c, total, total, &pool);
      const std::vector<float> d2 = rotated_cache_outputs(c, total, 1, &pool);
      CHECK(std::memcmp(p2.data(), prefill.data(), p2.size() * sizeof(float)) == 0);
      CHECK(std::memcmp(d2.data(), decode.data(), d2.size() * sizeof(float)) == 0);
    }
  }
}

TEST_CASE("rotate_queries of a rotated cache: RoPE, then the Hadamard rotation of each head") {
  Config c = small_config(0, DType::kQ8_0);
  c.head_dim = 32;
  c.kv_rotation = KvRotation::kHadamard;
  Fixture f(c, 4);
  const Plan& p = f.plan;
  const std::vector<float> kv = normal(size_t{3} * p.kv_width, 41);
  REQUIRE(f.cache.append(kv.data(), p.kv_width, kv.data(), p.kv_width, 3).ok());
  const std::vector<float> q = normal(size_t{2} * p.q_width, 42);
  std::vector<float> got = q, want = q;
  REQUIRE(f.cache.rotate_queries(got.data(), p.q_width, 2).ok());
  apply_rope(want.data(), 2, p.q_width, c.n_heads, p.head_dim, 1, 3, c.rope, f.rope.data());
  hadamard_rotate_heads(want.data(), 2, p.q_width, c.n_heads, p.head_dim);
  CHECK(std::memcmp(got.data(), want.data(), got.size() * sizeof(float)) == 0);
}

// truncate(): a cache that appended `total` tokens of one sequence and kept the first `keep`, then
// decodes `steps` tokens of another continuation (one at a time, RoPE'd queries), against a cache
// that only ever saw those `keep` tokens and the continuation. Both caches hold the same rows for
// every key a query sees; a ring that wrapped also shows rows of the dropped tokens as its oldest
// keys, outside every query's window, so the outputs agree to rounding.
void check_truncate_then_decode(const Config& c, uint32_t max_tokens, uint32_t total, uint32_t keep, uint32_t steps) {
  Fixture a(c, max_tokens), b(c, max_tokens);
  const Plan& p = a.plan;
  const std::vector<float> k = normal(size_t{total} * p.kv_width, 31), v = normal(size_t{total} * p.kv_width, 32);
  const std::vector<float> k2 = normal(size_t{steps} * p.kv_width, 33), v2 = normal(size_t{steps} * p.kv_width, 34);
  const std::vector<float> q = normal(size_t{steps} * p.q_width, 35);
  auto append = [&](KvCache& cache, const float* kk, const float* vv, uint32_t n) {
    for (uint32_t at = 0; at < n; at += max_tokens) {
      const uint32_t m = std::min(max_tokens, n - at);
      REQUIRE(cache.append(kk + size_t{at} * p.kv_width, p.kv_width, vv + size_t{at} * p.kv_width, p.kv_width, m).ok());
    }
  };
  append(a.cache, k.data(), v.data(), total);
  const Status s = a.cache.truncate(keep);
  REQUIRE_MESSAGE(s.ok(), s.message());
  CHECK(a.cache.size() == keep);
  CHECK(a.cache.position() == keep);
  append(b.cache, k.data(), v.data(), keep);
  ThreadPool pool;
  REQUIRE(pool.create(2).ok());
  std::vector<uint8_t> workspace(a.cache.workspace_bytes(1, 2) + b.cache.workspace_bytes(1, 2) + 4096 + 64);
  void* ws = workspace.data() + (64 - reinterpret_cast<uintptr_t>(workspace.data()) % 64) % 64;
  const size_t ws_bytes = workspace.size() - 64;
  std::vector<float> oa(p.q_width), ob(p.q_width), qt(p.q_width);
  for (uint32_t t = 0; t < steps; ++t) {
    INFO("decode step " << t << " after truncating " << total << " tokens to " << keep);
    append(a.cache, k2.data() + size_t{t} * p.kv_width, v2.data() + size_t{t} * p.kv_width, 1);
    append(b.cache, k2.data() + size_t{t} * p.kv_width, v2.data() + size_t{t} * p.kv_width, 1);
    std::copy(q.begin() + size_t{t} * p.q_width, q.begin() + size_t{t + 1} * p.q_width, qt.begin());
    REQUIRE(a.cache.rotate_queries(qt.data(), p.q_width, 1).ok());
    REQUIRE(a.cache.attend(qt.data(), p.q_width, oa.data(), p.q_width, 1, &pool, ws, ws_bytes).ok());
    REQUIRE(b.cache.attend(qt.data(), p.q_width, ob.data(), p.q_width, 1, &pool, ws, ws_bytes).ok());
    double worst = 0;
    for (uint32_t i = 0; i < p.q_width; ++i) worst = std::max(worst, double(std::fabs(oa[i] - ob[i])));
    CHECK(worst <= 1e-6);
  }
}

TEST_CASE("truncate: decode after it equals decode of a cache that never had the dropped tokens") {
  for (DType dt : {DType::kF32, DType::kF16, DType::kQ8_0, DType::kQ4_0}) {
    INFO(dtype_name(dt));
    check_truncate_then_decode(small_config(0, dt), 8, 30, 17, 6);  // full attention
    check_truncate_then_decode(small_config(0, dt), 8, 30, 0, 4);   // everything dropped
    // A ring of 8 + 4 − 1 = 11 rows: not wrapped (any length), and wrapped by 6 (at most 11 − 8 + 1 = 4 dropped).
    check_truncate_then_decode(small_config(8, dt), 4, 9, 2, 12);
    check_truncate_then_decode(small_config(8, dt), 4, 17, 13, 12);
    check_truncate_then_decode(small_config(8, dt), 4, 29, 26, 9);
  }
}

TEST_CASE("truncate: past the size, a wrapped ring that lost what it needs, before bind: nothing changes") {
  Fixture f(small_config(8, DType::kF32), 4);  // a ring of 11 rows
  const uint32_t kvw = f.plan.kv_width;
  const std::vector<float> k = normal(20 * kvw, 41);
  for (uint32_t at = 0; at < 17; at += 4) {
    REQUIRE(f.cache.append(k.data() + at * kvw, kvw, k.data() + at * kvw, kvw, std::min(4u, 17 - at)).ok());
  }
  const std::vector<uint8_t> before = f.region;
  Status s = f.cache.truncate(18);
  CHECK(s.code() == Code::kOutOfRange);
  CHECK(std::string(s.message()) ==
        "kv cache: truncate to 18 tokens, but the cache holds 17 (appended since the reset); it can only drop tokens");
  s = f.cache.truncate(12);  // 5 dropped: token 4, which the next query sees, was overwritten
  CHECK(s.code() == Code::kFailedPrecondition);
  CHECK(std::string(s.message()) ==
        "kv cache: a sliding-window ring of 11 rows (window 8) has overwritten tokens 0..5 of the 17 appended since "
        "the reset; truncating to 12 tokens would need them again (it can remove at most 4 tokens now); nothing "
        "changed");
  CHECK(f.cache.size() == 17);
  CHECK(f.region == before);
  CHECK(f.cache.truncate(17).ok());  // nothing dropped
  CHECK(f.cache.truncate(13).ok());
  CHECK(f.cache.position() == 13);
  // A ring with sink tokens keeps no spare window after it wrapped: it refuses any drop.
  Config sinks = small_config(8, DType::kF32);
  sinks.sink_tokens = 2;
  Fixture g(sinks, 4);
  for (uint32_t at = 0; at < 17; at += 4) {
    REQUIRE(g.cache.append(k.data() + at * kvw, kvw, k.data() + at * kvw, kvw, std::min(4u, 17 - at)).ok());
  }
  CHECK(g.cache.truncate(16).code() == Code::kFailedPrecondition);
  CHECK(g.cache.size() == 17);
  KvCache unbound;
  CHECK(unbound.truncate(0).code() == Code::kFailedPrecondition);
}

TEST_CASE("a cache with ALiBi needs its slopes") {
  Config c = small_config(0, DType::kF32);
  c.rope.style = RopeStyle::kNone;
  c.alibi = true;
  const Plan p = make_plan(c, {}).value();
  std::vector<uint8_t> region(p.kv_bytes_per_layer);
  KvCache cache;
  const Status s = cache.bind(p, region.data(), region.size());
  CHECK(s.code() == Code::kInvalidArgument);
  CHECK(std::string(s.message()).find("ALiBi") != std::string::npos);
}

}  // namespace
}  // namespace headway

namespace headway {
namespace {

TEST_CASE("rope_scaling: linear divides every frequency, llama3 keeps high and slows low frequencies") {
  RopeConfig r{RopeStyle::kNeox, 500000.0f, 0};
  r.scaling = RopeScaling::kLinear;
  r.factor = 4.0f;
  CHECK(scaled_frequency(0.5, r) == doctest::Approx(0.125));
  r.scaling = RopeScaling::kLlama3;
  r.factor = 32.0f;  // Llama 3.2 1B
  r.low_freq_factor = 1.0f;
  r.high_freq_factor = 4.0f;
  r.original_max_seq = 8192;
  const double pi = 3.14159265358979323846;
  CHECK(scaled_frequency(1.0, r) == doctest::Approx(1.0));                             // wavelength 6.3 < 2048
  CHECK(scaled_frequency(2 * pi / 10000, r) == doctest::Approx(2 * pi / 10000 / 32));  // > 8192
  const double mid = 2 * pi / 4096;  // between: smooth = (8192 / 4096 - 1) / 3 = 1/3
  CHECK(scaled_frequency(mid, r) == doctest::Approx((2.0 / 3) * mid / 32 + (1.0 / 3) * mid));
}

// The values are Hugging Face's (transformers 5.24, ROPE_INIT_FUNCTIONS["yarn"], which computes
// in f32): gpt-oss-20b's rope_scaling, a Qwen2.5-style 4× extension, DeepSeek-V2's mscales.
TEST_CASE("rope_scaling yarn: frequencies and attention factor as Hugging Face computes them") {
  struct Case {
    const char* name;
    uint32_t head_dim;
    float theta, factor, mscale, mscale_all_dim;
    uint32_t original;
    bool truncate;
    double attention_factor;
    std::vector<std::pair<uint32_t, double>> freqs;
  };
  const Case cases[] = {
      {"gpt-oss",
       64,
       150000.0f,
       32.0f,
       0.0f,
       0.0f,
       4096,
       false,
       1.3465735902799727,
       {{0, 1.0},
        {5, 0.15532298386096954},
        {10, 0.019334999844431877},
        {15, 0.00105260219424963},
        {20, 1.818833698052913e-05},
        {31, 3.023511396804679e-07}}},
      {"qwen",
       128,
       1e6f,
       4.0f,
       0.0f,
       0.0f,
       32768,
       true,
       1.138629436111989,
       {{0, 1.0},
        {5, 0.33982083201408386},
        {10, 0.11547820270061493},
        {15, 0.03924189880490303},
        {20, 0.01333521492779255},
        {63, 3.102344408034696e-07}}},
      {"deepseek",
       64,
       10000.0f,
       40.0f,
       1.0f,
       0.707f,
       4096,
       true,
       1.0857263992561355,
       {{0, 1.0},
        {5, 0.23713736236095428},
        {10, 0.05623412877321243},
        {15, 0.0083345090970397},
        {20, 0.0007905694073997438},
        {31, 3.3338035336782923e-06}}},
  };
  for (const Case& k : cases) {
    CAPTURE(k.name);
    RopeConfig r{RopeStyle::kNeox, k.theta, 0};
    r.scaling = RopeScaling::kYarn;
    r.factor = k.factor;
    r.original_max_seq = k.original;
    r.yarn_truncate = k.truncate;
    r.mscale = k.mscale;
    r.mscale_all_dim = k.mscale_all_dim;
    std::vector<double> f(k.head_dim / 2);
    rope_frequencies(r, k.head_dim, f.data());
    for (const auto& [i, want] : k.freqs) {
      CAPTURE(i);
      CHECK(f[i] == doctest::Approx(want).epsilon(2e-6));
    }
    CHECK(rope_attention_factor(r) == doctest::Approx(k.attention_factor).epsilon(1e-6));
    r.attention_factor = 0.5f;  // given: used as it is
    CHECK(rope_attention_factor(r) == doctest::Approx(0.5));
  }
}

TEST_CASE("a rope_scaling type headway cannot apply is planned but not run") {
  Config c = small_config(0, DType::kF16);
  c.rope.scaling = RopeScaling::kOther;
  const Plan p = make_plan(c).value();
  std::vector<uint8_t> region(p.kv_bytes_per_layer);
  KvCache cache;
  CHECK(cache.bind(p, region.data(), region.size()).code() == Code::kUnsupported);
}

}  // namespace
}  // namespace headway

namespace headway {
namespace {

TEST_CASE("the plan's scratch holds the workspace of every attend over the cache") {
  struct Shape {
    uint32_t heads, kv_heads, head_dim, max_seq, window, max_tokens;
  };
  const Shape shapes[] = {{4, 4, 16, 2100, 0, 8},   {8, 2, 64, 1500, 0, 3},  {16, 1, 8, 1100, 0, 64},
                          {6, 3, 32, 3000, 700, 5}, {2, 1, 128, 1030, 0, 1}, {70, 1, 8, 1200, 0, 2}};
  for (const Shape& sh : shapes) {
    Config c;
    c.d_model = sh.heads * sh.head_dim;
    c.n_heads = sh.heads;
    c.n_kv_heads = sh.kv_heads;
    c.max_seq = sh.max_seq;
    c.window = sh.window;
    c.kv_dtype = DType::kF16;
    for (uint32_t threads : {1u, 2u, 3u}) {
      INFO("heads " << sh.heads << "/" << sh.kv_heads << " head_dim " << sh.head_dim << " threads " << threads);
      PlanOptions o;
      o.threads = threads;
      o.max_tokens = sh.max_tokens;
      const Plan p = make_plan(c, o).value();
      std::vector<uint8_t> region(p.kv_bytes_per_layer);
      KvCache cache;
      REQUIRE(cache.bind(p, region.data(), region.size()).ok());
      const std::vector<float> zeros(size_t{p.max_tokens} * p.kv_width, 0.0f);
      uint64_t most = 0;
      while (cache.size() < c.max_seq) {
        const uint32_t n = std::min(p.max_tokens, c.max_seq - cache.size());
        REQUIRE(cache.append(zeros.data(), p.kv_width, zeros.data(), p.kv_width, n).ok());
        for (uint32_t t_q = 1; t_q <= std::min(p.max_tokens, cache.size()); ++t_q) {
          most = std::max<uint64_t>(most, cache.workspace_bytes(t_q, threads));
        }
      }
      CHECK(most <= p.scratch_bytes);
      CHECK(most > 0);
    }
  }
}

}  // namespace
}  // namespace headway

namespace headway {
namespace {

// Prefill chunks while the cache holds fewer than kHeapCheckPrefill tokens, then decode to the
// context. Under qemu-user (HEADWAY_TEST_EMULATED), where over a thousand decode steps per layer
// take minutes: 2 threads only (the cross presets' ThreadPool runs every task on the caller), the
// first of the two layers driven, and chunks to 1008 tokens, then decode steps to 1100, past the
// 1024 keys of the split-KV path.
#ifdef HEADWAY_TEST_EMULATED
constexpr uint32_t kHeapCheckThreads[] = {2};
constexpr uint32_t kHeapCheckContext = 1100;
constexpr uint32_t kHeapCheckPrefill = 1000;
constexpr uint32_t kHeapCheckLayersRun = 1;
#else
constexpr uint32_t kHeapCheckThreads[] = {1, 2};
constexpr uint32_t kHeapCheckContext = 1200;
constexpr uint32_t kHeapCheckPrefill = 1;  // one chunk
constexpr uint32_t kHeapCheckLayersRun = 2;
#endif

TEST_CASE("no heap during append, prefill and decode over an arena (threads 1 and 2)") {
  for (uint32_t threads : kHeapCheckThreads) {
    for (bool rotate : {false, true}) {
      // The rotation adds no allocation of its own (single-threaded, stack only): one pass, one layer.
      if (rotate && threads != 2) continue;
      INFO("threads " << threads << std::string(rotate ? ", q4_0 Hadamard-rotated" : ""));
      Config c = small_config(0, rotate ? DType::kQ4_0 : DType::kF16);
      if (rotate) {
        c.head_dim = 32;
        c.kv_rotation = KvRotation::kHadamard;
      }
      c.max_seq = kHeapCheckContext;  // long enough for the split-KV decode path
      c.n_layers = 2;
      PlanOptions o;
      o.threads = threads;
      o.max_tokens = 16;
      const Plan p = make_plan(c, o).value();
      std::vector<uint8_t> memory(p.arena_bytes + kAlignment);
      void* base = memory.data() + (kAlignment - reinterpret_cast<uintptr_t>(memory.data()) % kAlignment) % kAlignment;
      Arena arena;
      REQUIRE(arena.bind(p, base, p.arena_bytes).ok());
      const std::vector<double> rope = rope_table(p);
      KvCache caches[2];
      for (uint32_t l = 0; l < 2; ++l) {
        REQUIRE(caches[l].bind(p, arena.kv_layer(l), p.kv_bytes_per_layer, rope.data()).ok());
      }
      ThreadPool pool;
      REQUIRE(pool.create(threads).ok());
      const std::vector<float> x = normal(size_t{p.max_tokens} * p.qkv_width, 21);
      float* qkv = arena.qkv();
      float* out = arena.attention_out();
      std::copy(x.begin(), x.end(), qkv);

      HeapCount count;
      Status status;
      uint32_t steps = 0;
      while (caches[0].size() < c.max_seq && status.ok()) {
        const uint32_t n = caches[0].size() < kHeapCheckPrefill ? p.max_tokens : 1;
        for (uint32_t l = 0; l < (rotate ? 1 : kHeapCheckLayersRun) && status.ok(); ++l) {
          apply_rope(qkv, n, p.qkv_width, c.n_heads, p.head_dim, caches[l].position(), caches[l].position() + n, c.rope,
                     rope.data());
          if (rotate) hadamard_rotate_heads(qkv, n, p.qkv_width, c.n_heads, p.head_dim);  // as the layer does
          status = caches[l].append(qkv + p.q_width, p.qkv_width, qkv + p.q_width + p.kv_width, p.qkv_width, n);
          if (status.ok()) {
            status = caches[l].attend(qkv, p.qkv_width, out, p.q_width, n, &pool, arena.scratch(), p.scratch_bytes);
          }
        }
        ++steps;
      }
      const Status past = caches[0].append(qkv + p.q_width, p.qkv_width, qkv + p.q_width, p.qkv_width, 1);
      const long allocations = count.stop();
      REQUIRE_MESSAGE(status.ok(), status.message());
      CHECK(past.code() == Code::kOutOfRange);
      const uint32_t chunks = (kHeapCheckPrefill + p.max_tokens - 1) / p.max_tokens;
      CHECK(steps == chunks + c.max_seq - chunks * p.max_tokens);
      CHECK(allocations == 0);
    }
  }
}

}  // namespace
}  // namespace headway
