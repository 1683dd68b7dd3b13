// Session: a residual stack of attention blocks in one arena, against the double reference
// stack; token-by-token decode equals one prefill; prompts longer than max_tokens run in chunks;
// a prompt past the context changes no cache byte; no heap during prefill and decode.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "headway/arena.hpp"
#include "headway/tools/heap_count.hpp"
#include "headway/plan.hpp"
#include "headway/session.hpp"
#include "headway/thread_pool.hpp"
#include "runtime/linear/xnnpack_dense.hpp"
#include "tests/reference/reference_layer.hpp"
#include "tests/support/test_rng.hpp"

namespace headway {
namespace {

struct Stack {
  Plan plan;
  uint8_t* buffer = nullptr;
  Arena arena;
  std::vector<test::TestLayerWeights> weights;
  std::vector<LayerWeights> views;
  Session session;
  ~Stack() { std::free(buffer); }
};

Config stack_config() {
  Config c;
  c.set_name("stack");
  c.d_model = 64;
  c.n_heads = 4;
  c.n_kv_heads = 2;
  c.head_dim = 16;
  c.max_seq = 48;
  c.n_layers = 3;
  c.rope.style = RopeStyle::kNeox;
  c.qkv_bias = true;
  c.kv_dtype = DType::kF32;
  return c;
}

// Heap-allocated: a Session holds kMaxLayers layer objects.
Stack* make_stack(const Config& c, const PlanOptions& o, ThreadPool* pool) {
  Stack* s = new Stack;
  Result<Plan> plan = make_plan(c, o);
  REQUIRE_MESSAGE(plan.ok(), plan.status().message());
  s->plan = *plan;
  s->buffer = static_cast<uint8_t*>(std::aligned_alloc(64, s->plan.arena_bytes));
  REQUIRE(s->arena.bind(s->plan, s->buffer, s->plan.arena_bytes).ok());
  for (uint32_t l = 0; l < c.n_layers; ++l) {
    s->weights.push_back(test::make_test_weights(c, o.weight_dtype, 11 + l));
    s->views.push_back(s->weights.back().view);
  }
  Status st = s->session.init(s->arena, s->views.data(), c.n_layers, pool);
  REQUIRE_MESSAGE(st.ok(), st.message());
  return s;
}

std::vector<float> random_x(uint32_t t, uint32_t d, uint64_t seed) {
  test::Rng rng(seed);
  std::vector<float> x(size_t{t} * d);
  for (float& v : x) v = rng.normal();
  return x;
}

double max_rel_error(const std::vector<float>& got, const std::vector<double>& want) {
  double scale = 1.0, err = 0.0;
  for (double w : want) scale = std::max(scale, std::fabs(w));
  for (size_t i = 0; i < want.size(); ++i) err = std::max(err, std::fabs(got[i] - want[i]));
  return err / scale;
}

std::vector<Projection> projections() {
  std::vector<Projection> p{Projection::kHighway};
  if (xnnpack_built()) p.push_back(Projection::kXnnpack);
  return p;
}

TEST_CASE("Session: the residual stack matches the reference, a long prompt runs in max_tokens chunks") {
  ThreadPool pool;
  REQUIRE(pool.create(2).ok());
  const Config c = stack_config();
  for (Projection proj : projections()) {
    for (DType wt : {DType::kF32, DType::kBF16}) {
      INFO(projection_name(proj) << " " << dtype_name(wt));
      PlanOptions o;
      o.threads = 2;
      o.max_tokens = 8;
      o.weight_dtype = wt;
      o.projection = proj;
      Stack* s = make_stack(c, o, &pool);
      std::vector<test::RefLayer> ref;
      for (uint32_t l = 0; l < c.n_layers; ++l) ref.emplace_back(c, s->weights[l].ref);
      for (auto& r : ref) r.reset();
      std::vector<float> x = random_x(19, c.d_model, 5);  // 3 chunks: 8, 8, 3
      std::vector<float> y(x.size());
      HeapCount count;
      REQUIRE(s->session.prefill(x.data(), 19, y.data()).ok());
      CHECK(count.stop() == 0);
      CHECK(s->session.position() == 19);
      CHECK(max_rel_error(y, test::reference_stack(ref, std::vector<double>(x.begin(), x.end()), 19)) < 5e-5);
      for (int i = 0; i < 4; ++i) {
        std::vector<float> xt = random_x(1, c.d_model, 50 + i);
        std::vector<float> yt(xt.size());
        HeapCount count2;
        REQUIRE(s->session.decode(xt.data(), yt.data()).ok());
        CHECK(count2.stop() == 0);
        CHECK(max_rel_error(yt, test::reference_stack(ref, std::vector<double>(xt.begin(), xt.end()), 1)) < 5e-5);
      }
      delete s;
    }
  }
}

// An encoder's batch: bidirectional, layer 0 full at the global base, layers 1 and 2 with a
// symmetric window of 5 at a local base (ModernBERT's kinds). Four sentences packed in one call
// of 25 tokens, more than the context of 12 (max_tokens may pass max_seq in a bidirectional
// model): each matches the reference stack over it alone from position 0, and is bitwise what a
// prefill of it alone gives; no heap; nothing stays cached.
TEST_CASE("Session::encode: a packed batch of sentences, each as alone through every block") {
  ThreadPool pool;
  REQUIRE(pool.create(2).ok());
  Config c = stack_config();
  c.causal = false;
  c.max_seq = 12;
  c.window = 5;
  c.window_symmetric = true;
  c.layers.sliding.count = 3;
  c.layers.sliding.set(1, true);
  c.layers.sliding.set(2, true);
  c.layers.local_rope_theta = 100.0f;
  REQUIRE(validate(c).ok());
  const std::vector<uint32_t> cu = {0, 7, 8, 20, 25};
  for (Projection proj : projections()) {
    INFO(projection_name(proj));
    PlanOptions o;
    o.threads = 2;
    o.max_tokens = 25;
    o.projection = proj;
    Stack* s = make_stack(c, o, &pool);
    CHECK(s->plan.max_tokens == 25);
    const std::vector<float> x = random_x(25, c.d_model, 9);
    std::vector<float> y(x.size());
    HeapCount count;
    REQUIRE(s->session.encode(x.data(), cu.data(), 4, y.data()).ok());
    CHECK(count.stop() == 0);
    CHECK(s->session.position() == 0);
    for (size_t b = 0; b + 1 < cu.size(); ++b) {
      INFO("sentence " << b);
      const uint32_t t = cu[b + 1] - cu[b];
      const size_t at = size_t{cu[b]} * c.d_model, n = size_t{t} * c.d_model;
      std::vector<test::RefLayer> ref;
      for (uint32_t l = 0; l < c.n_layers; ++l) ref.emplace_back(c.layer_alone(l), s->weights[l].ref);
      const std::vector<double> want =
          test::reference_stack(ref, std::vector<double>(x.begin() + at, x.begin() + at + n), t);
      CHECK(max_rel_error(std::vector<float>(y.begin() + at, y.begin() + at + n), want) < 5e-5);
      std::vector<float> alone(n);
      s->session.reset();
      REQUIRE(s->session.prefill(x.data() + at, t, alone.data()).ok());
      CHECK(std::memcmp(alone.data(), y.data() + at, n * sizeof(float)) == 0);
    }
    // A symmetric window looks ahead: dropping it (or the sentence boundaries) changes the result.
    std::vector<test::RefLayer> one_sided;
    Config causal_view = c;
    causal_view.window_symmetric = false;
    for (uint32_t l = 0; l < c.n_layers; ++l) one_sided.emplace_back(causal_view.layer_alone(l), s->weights[l].ref);
    const std::vector<double> wrong = test::reference_stack(
        one_sided, std::vector<double>(x.begin() + 8 * c.d_model, x.begin() + 20 * c.d_model), 12);
    CHECK(max_rel_error(std::vector<float>(y.begin() + 8 * c.d_model, y.begin() + 20 * c.d_model), wrong) > 1e-3);
    // Bad batches: an empty sentence, one past the context, more tokens than the plan's; y unchanged.
    const auto message = [](const Status& st) { return std::string(st.ok() ? "ok" : st.message()); };
    const std::vector<float> before = y;
    const std::vector<uint32_t> empty = {0, 7, 7, 25}, too_long = {0, 13, 25}, too_many = {0, 10, 20, 26};
    const std::vector<float> big(26 * c.d_model, 0.5f);
    CHECK(message(s->session.encode(x.data(), empty.data(), 3, y.data())).find("sequence 1 is empty") !=
          std::string::npos);
    CHECK(message(s->session.encode(x.data(), too_long.data(), 2, y.data()))
              .find("sequence 0 has 13 tokens, past the context of 12") != std::string::npos);
    CHECK(message(s->session.encode(big.data(), too_many.data(), 3, y.data()))
              .find("26 tokens in one call, expected 1..25") != std::string::npos);
    CHECK(y == before);
    delete s;
  }
}

// A bidirectional model's queries see later keys: its tokens never run in chunks.
TEST_CASE("Session: a bidirectional prefill longer than max_tokens is refused, nothing run") {
  Config c = stack_config();
  c.causal = false;
  PlanOptions o;
  o.max_tokens = 4;
  Stack* s = make_stack(c, o, nullptr);
  const std::vector<float> x = random_x(9, c.d_model, 3);
  std::vector<float> y(x.size(), 7.0f);
  const Status st = s->session.prefill(x.data(), 9, y.data());
  REQUIRE_FALSE(st.ok());
  CHECK(std::string(st.message()).find("its tokens cannot run in chunks; plan max_tokens >= 9") != std::string::npos);
  CHECK(s->session.position() == 0);
  CHECK(y[0] == 7.0f);
  delete s;
}

TEST_CASE("Session: decoding token by token equals one prefill of the same tokens") {
  const Config c = stack_config();
  for (Projection proj : projections()) {
    INFO(projection_name(proj));
    PlanOptions o;
    o.max_tokens = 16;
    o.projection = proj;
    Stack* a = make_stack(c, o, nullptr);
    Stack* b = make_stack(c, o, nullptr);
    const uint32_t n = 20;
    std::vector<float> x = random_x(n, c.d_model, 9);
    std::vector<float> y_prefill(x.size()), y_decode(x.size());
    REQUIRE(a->session.prefill(x.data(), n, y_prefill.data()).ok());
    for (uint32_t i = 0; i < n; ++i) {
      REQUIRE(b->session.decode(x.data() + i * c.d_model, y_decode.data() + i * c.d_model).ok());
    }
    double scale = 1.0, err = 0.0;
    for (size_t i = 0; i < x.size(); ++i) {
      scale = std::max(scale, double(std::fabs(y_prefill[i])));
      err = std::max(err, double(std::fabs(y_prefill[i] - y_decode[i])));
    }
    CHECK(err / scale < 1e-5);
    // reset(): the same prompt again gives the same output.
    a->session.reset();
    CHECK(a->session.position() == 0);
    std::vector<float> again(x.size());
    REQUIRE(a->session.prefill(x.data(), n, again.data()).ok());
    CHECK(std::memcmp(again.data(), y_prefill.data(), again.size() * 4) == 0);
    delete a;
    delete b;
  }
}

// kv_rotation hadamard through the whole stack (the layer rotates Q after RoPE, the cache K and V
// before quantizing, attend() the output back): decode equals prefill within the rounding of
// different kernels (which can move a quantization code in the next layer), near the f32 cache
// within the format's error, the same bits for every thread count, no heap.
TEST_CASE("Session with kv_rotation hadamard: decode equals prefill, near f32 K/V, any thread count, no heap") {
  Config exact_c = stack_config();
  exact_c.head_dim = 32;
  const uint32_t n = 20;
  const std::vector<float> x = random_x(n, exact_c.d_model, 9);
  auto rel = [](const std::vector<float>& a, const std::vector<float>& b) {
    double scale = 1.0, err = 0.0;
    for (size_t i = 0; i < a.size(); ++i) {
      scale = std::max(scale, double(std::fabs(a[i])));
      err = std::max(err, double(std::fabs(a[i] - b[i])));
    }
    return err / scale;
  };
  PlanOptions o;
  o.max_tokens = 8;
  std::vector<float> exact(x.size());
  {
    Stack* e = make_stack(exact_c, o, nullptr);
    REQUIRE(e->session.prefill(x.data(), n, exact.data()).ok());
    delete e;
  }
  struct Format {
    DType dtype;
    double near_exact, decode;  // bounds: about 3x what was measured (decode: 3e-7)
  };
  for (const Format& f : {Format{DType::kQ8_0, 3e-2, 1e-5}, Format{DType::kQ4_0, 0.5, 1e-5}}) {
    Config c = exact_c;
    c.kv_dtype = f.dtype;
    c.kv_rotation = KvRotation::kHadamard;
    std::vector<float> y_prefill(x.size()), y_decode(x.size());
    for (uint32_t threads : {1u, 3u}) {
      INFO(std::string(dtype_name(f.dtype)) << ", threads " << threads);
      ThreadPool pool;
      REQUIRE(pool.create(threads).ok());
      o.threads = threads;
      Stack* a = make_stack(c, o, &pool);
      Stack* b = make_stack(c, o, &pool);
      std::vector<float> yp(x.size()), yd(x.size());
      HeapCount count;
      const Status sp = a->session.prefill(x.data(), n, yp.data());
      Status sd;
      for (uint32_t i = 0; i < n && sd.ok(); ++i) {
        sd = b->session.decode(x.data() + i * c.d_model, yd.data() + i * c.d_model);
      }
      CHECK(count.stop() == 0);
      REQUIRE_MESSAGE(sp.ok(), sp.message());
      REQUIRE_MESSAGE(sd.ok(), sd.message());
      if (threads == 1) {
        y_prefill = yp;
        y_decode = yd;
        MESSAGE(std::string(dtype_name(f.dtype))
                << " rotated: decode against prefill " << rel(yp, yd) << ", against f32 K/V " << rel(yp, exact)
                << " (max abs error over the largest output)");
        CHECK(rel(yp, yd) < f.decode);
        CHECK(rel(yp, exact) < f.near_exact);
      } else {
        CHECK(std::memcmp(yp.data(), y_prefill.data(), yp.size() * 4) == 0);
        CHECK(std::memcmp(yd.data(), y_decode.data(), yd.size() * 4) == 0);
      }
      delete a;
      delete b;
    }
  }
}

TEST_CASE("Session: a prompt past the context is an error and leaves every cache byte unchanged") {
  const Config c = stack_config();
  PlanOptions o;
  o.max_tokens = 8;
  Stack* s = make_stack(c, o, nullptr);
  std::vector<float> x = random_x(c.max_seq + 1, c.d_model, 3);
  std::vector<float> y(x.size());
  REQUIRE(s->session.prefill(x.data(), 10, y.data()).ok());
  const uint8_t* kv = s->arena.kv_layer(0);
  std::vector<uint8_t> before(kv, kv + s->plan.kv_cache_bytes);
  Status st = s->session.prefill(x.data(), c.max_seq - 9, y.data());
  CHECK(st.code() == Code::kOutOfRange);
  CHECK(std::string(st.message()) ==
        "session: 39 tokens at position 10 go past the context of 48 tokens (max_seq); nothing was run");
  CHECK(std::memcmp(before.data(), kv, before.size()) == 0);
  CHECK(s->session.position() == 10);
  REQUIRE(s->session.prefill(x.data(), c.max_seq - 10, y.data()).ok());
  CHECK(s->session.position() == c.max_seq);
  CHECK(s->session.decode(x.data(), y.data()).code() == Code::kOutOfRange);
  delete s;
}

TEST_CASE("Session: init errors name the problem") {
  Config c = stack_config();
  PlanOptions o;
  o.max_tokens = 4;
  Result<Plan> plan = make_plan(c, o);
  REQUIRE(plan.ok());
  Session* s = new Session;
  Arena unbound;
  CHECK(s->init(unbound, nullptr, 3, nullptr).code() == Code::kFailedPrecondition);
  float x[64] = {};
  CHECK(s->decode(x, x).code() == Code::kFailedPrecondition);
  uint8_t* buf = static_cast<uint8_t*>(std::aligned_alloc(64, plan->arena_bytes));
  Arena arena;
  REQUIRE(arena.bind(*plan, buf, plan->arena_bytes).ok());
  Status st = s->init(arena, nullptr, 2, nullptr);
  CHECK(std::string(st.message()) == "session: 2 layers of weights, the plan has 3");
  std::free(buf);
  delete s;
}

}  // namespace
}  // namespace headway
