// A Session whose layers differ: sliding and full layers, a NoPE layer, two RoPE bases. Each layer
// against the double reference built from that layer's own kind (written out here, not taken
// from the plan); a prompt far past the window run in chunks equals one prefill and then
// token-by-token decode; no heap during either; sink logits are refused at init.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "headway/arena.hpp"
#include "headway/heap_count.hpp"
#include "headway/plan.hpp"
#include "headway/session.hpp"
#include "tests/reference/reference_layer.hpp"
#include "tests/support/test_rng.hpp"

namespace headway {
namespace {

constexpr uint32_t kWindow = 24;

// Layers 0 and 2 slide (window 24, base 100), 1 and 3 are full (base 10000); layer 2 has no RoPE.
Config mixed_config() {
  Config c;
  c.set_name("mixed");
  c.d_model = 64;
  c.n_heads = 4;
  c.n_kv_heads = 2;
  c.head_dim = 16;
  c.max_seq = 256;
  c.n_layers = 4;
  c.rope.style = RopeStyle::kNeox;
  c.rope.theta = 10000.0f;
  c.window = kWindow;
  c.layers.sliding_pattern = 2;
  c.layers.local_rope_theta = 100.0f;
  c.layers.rope.count = 4;
  for (uint32_t l = 0; l < 4; ++l) c.layers.rope.set(l, l != 2);
  c.kv_dtype = DType::kF32;
  return c;
}

// Layer l as the reference runs it: a config whose every layer is alike.
Config reference_config(uint32_t l) {
  Config c = mixed_config();
  c.layers = LayerKinds{};
  const bool slides = l % 2 == 0;
  c.window = slides ? kWindow : 0;
  c.rope.theta = slides ? 100.0f : 10000.0f;
  if (l == 2) c.rope.style = RopeStyle::kNone;
  return c;
}

struct Stack {
  Plan plan;
  uint8_t* buffer = nullptr;
  Arena arena;
  std::vector<test::TestLayerWeights> weights;
  std::vector<LayerWeights> views;
  Session session;
  ~Stack() { std::free(buffer); }
};

Stack* make_stack(const Config& c, const PlanOptions& o) {
  Stack* s = new Stack;  // heap: a Session holds kMaxLayers layer objects
  Result<Plan> plan = make_plan(c, o);
  REQUIRE_MESSAGE(plan.ok(), plan.status().message());
  s->plan = *plan;
  s->buffer = static_cast<uint8_t*>(std::aligned_alloc(64, s->plan.arena_bytes));
  REQUIRE(s->arena.bind(s->plan, s->buffer, s->plan.arena_bytes).ok());
  for (uint32_t l = 0; l < c.n_layers; ++l) {
    s->weights.push_back(test::make_test_weights(c, o.weight_dtype, 31 + l));
    s->views.push_back(s->weights.back().view);
  }
  const Status st = s->session.init(s->arena, s->views.data(), c.n_layers, nullptr);
  REQUIRE_MESSAGE(st.ok(), st.message());
  return s;
}

std::vector<float> random_x(uint32_t t, uint32_t d, uint64_t seed) {
  test::Rng rng(seed);
  std::vector<float> x(size_t{t} * d);
  for (float& v : x) v = rng.normal();
  return x;
}

double max_rel_error(const float* got, const std::vector<double>& want) {
  double scale = 1.0, err = 0.0;
  for (double w : want) scale = std::max(scale, std::fabs(w));
  for (size_t i = 0; i < want.size(); ++i) err = std::max(err, std::fabs(got[i] - want[i]));
  return err / scale;
}

TEST_CASE("Session with mixed layers: each layer's kind, RoPE and base, against the reference") {
  const Config c = mixed_config();
  PlanOptions o;
  o.max_tokens = 8;
  Stack* s = make_stack(c, o);
  // The ring of the sliding layers, the whole context for the full ones.
  CHECK(s->plan.layer(0).kv_rows == kWindow + 7);
  CHECK(s->plan.layer(1).kv_rows == 256);
  CHECK(s->plan.kv_cache_bytes == s->plan.layer(0).kv_bytes * 2 + s->plan.layer(1).kv_bytes * 2);
  std::vector<test::RefLayer> ref;
  for (uint32_t l = 0; l < c.n_layers; ++l) ref.emplace_back(reference_config(l), s->weights[l].ref);
  for (auto& r : ref) r.reset();

  const uint32_t n = 150;  // six windows, in 19 chunks of at most 8
  const std::vector<float> x = random_x(n, c.d_model, 7);
  std::vector<float> y(x.size());
  HeapCount count;
  REQUIRE(s->session.prefill(x.data(), n, y.data()).ok());
  CHECK(count.stop() == 0);
  const std::vector<double> want = test::reference_stack(ref, std::vector<double>(x.begin(), x.end()), n);
  CHECK(max_rel_error(y.data(), want) < 5e-5);
  delete s;
}

TEST_CASE("Session with mixed layers: prefill far past the window equals prefill then decode") {
  const Config c = mixed_config();
  PlanOptions o;
  o.max_tokens = 8;
  Stack* a = make_stack(c, o);
  Stack* b = make_stack(c, o);
  const uint32_t n = 200, head = 90;
  const std::vector<float> x = random_x(n, c.d_model, 13);
  std::vector<float> y_prefill(x.size()), y_steps(x.size());
  REQUIRE(a->session.prefill(x.data(), n, y_prefill.data()).ok());
  REQUIRE(b->session.prefill(x.data(), head, y_steps.data()).ok());
  HeapCount count;
  for (uint32_t i = head; i < n; ++i) {
    REQUIRE(b->session.decode(x.data() + i * c.d_model, y_steps.data() + i * c.d_model).ok());
  }
  CHECK(count.stop() == 0);
  double scale = 1.0, err = 0.0;
  for (size_t i = 0; i < x.size(); ++i) {
    scale = std::max(scale, double(std::fabs(y_prefill[i])));
    err = std::max(err, double(std::fabs(y_prefill[i] - y_steps[i])));
  }
  CHECK(err / scale < 1e-5);
  CHECK(b->session.position() == n);
  delete a;
  delete b;
}

TEST_CASE("Session with mixed layers: learned sink logits are refused at init, naming the layer") {
  Config c = mixed_config();
  c.sinks = true;
  Result<Plan> plan = make_plan(c, {});
  REQUIRE(plan.ok());  // planned
  uint8_t* buf = static_cast<uint8_t*>(std::aligned_alloc(64, plan->arena_bytes));
  Arena arena;
  REQUIRE(arena.bind(*plan, buf, plan->arena_bytes).ok());
  std::vector<test::TestLayerWeights> w;
  std::vector<LayerWeights> views;
  for (uint32_t l = 0; l < c.n_layers; ++l) {
    w.push_back(test::make_test_weights(c, DType::kF32, 3 + l));
    views.push_back(w.back().view);
  }
  Session* s = new Session;
  const Status st = s->init(arena, views.data(), c.n_layers, nullptr);
  CHECK(st.code() == Code::kUnsupported);
  CHECK(std::string(st.message()).find("layer 0: the config has learned sink logits") != std::string::npos);
  delete s;
  std::free(buf);
}

}  // namespace
}  // namespace headway
