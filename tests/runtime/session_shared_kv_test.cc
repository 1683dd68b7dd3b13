// A Session shaped as Gemma 4 in small: sliding layers of head_dim 16 with 2 kv heads, full ones
// of head_dim 32 with 1 kv head and V from K, v normed without a weight, and the last three layers
// reading the caches of the last earlier layer of their kind. Against the double reference whose
// layers are written out here (each kind's own config, the sharing layers reading their owner's
// history); prefill in chunks equals prefill then decode; no heap in either.
#include <doctest/doctest.h>

#include <cstdlib>
#include <vector>

#include "headway/arena.hpp"
#include "headway/tools/heap_count.hpp"
#include "headway/plan.hpp"
#include "headway/session.hpp"
#include "tests/reference/reference_layer.hpp"
#include "tests/runtime/layer_test_support.hpp"

namespace headway {
namespace {

constexpr uint32_t kWindow = 12;
constexpr uint32_t kLayers = 6;
// Layers 0, 2, 3 and 5 slide, 1 and 4 are full; 3 and 5 read layer 2's cache, 4 reads layer 1's.
constexpr bool kSlides[kLayers] = {true, false, true, true, false, true};
constexpr uint32_t kOwner[kLayers] = {0, 1, 2, 2, 1, 2};

Config gemma4_like() {
  Config c;
  c.set_name("gemma4-like");
  c.d_model = 64;
  c.n_heads = 4;
  c.n_kv_heads = 2;
  c.head_dim = 16;
  c.max_seq = 256;
  c.n_layers = kLayers;
  c.rope.style = RopeStyle::kNeox;
  c.rope.theta = 10000.0f;
  c.window = kWindow;
  c.layers.sliding.count = kLayers;
  for (uint32_t l = 0; l < kLayers; ++l) c.layers.sliding.set(l, kSlides[l]);
  c.layers.full_head_dim = 32;
  c.layers.full_kv_heads = 1;
  c.layers.full_k_eq_v = true;
  c.layers.kv_shared_layers = 3;
  c.qk_norm = true;
  c.v_norm = true;
  c.scale = 1.0f;
  c.kv_dtype = DType::kF32;
  return c;
}

// Layer l's kind as the reference runs it, written out: a one-kind config.
Config reference_config(uint32_t l) {
  Config c = gemma4_like();
  c.layers = LayerKinds{};
  c.window = kSlides[l] ? kWindow : 0;
  if (!kSlides[l]) {
    c.head_dim = 32;
    c.n_kv_heads = 1;
    c.k_eq_v = true;
  }
  return c;
}

using Stack = test::SessionStack;

Stack* make_stack(const PlanOptions& o) {
  const auto weights = [&](uint32_t l) {
    test::TestLayerWeights w = test::make_test_weights(reference_config(l), o.weight_dtype, 41 + l);
    if (kOwner[l] != l) w.view.wk = w.view.wv = w.view.bk = w.view.bv = w.view.k_norm = TensorRef{};  // none of its own
    return w;
  };
  Status st;
  Stack* s = test::make_session_stack(gemma4_like(), o, weights, &st);
  REQUIRE_MESSAGE(st.ok(), st.message());
  return s;
}

std::vector<double> reference_of(const Stack& s, const std::vector<float>& x, uint32_t n) {
  std::vector<test::RefLayer> ref;
  for (uint32_t l = 0; l < kLayers; ++l) ref.emplace_back(reference_config(l), s.weights[l].ref);
  for (uint32_t l = 0; l < kLayers; ++l) {
    ref[l].reset();
    if (kOwner[l] != l) ref[l].read_kv_of(&ref[kOwner[l]]);
  }
  return test::reference_stack(ref, std::vector<double>(x.begin(), x.end()), n);
}

TEST_CASE("Session with shared KV and two head shapes (Gemma 4-like): against the reference, no heap") {
  for (const DType w : {DType::kF32, DType::kBF16}) {
    CAPTURE(dtype_name(w));
    PlanOptions o;
    o.max_tokens = 8;
    o.weight_dtype = w;
    Stack* s = make_stack(o);
    const Plan& p = s->plan;
    CHECK(p.kv_shared_layers == 3);
    CHECK(p.kv_cache_bytes == 2 * p.kv_bytes_sliding_layer + p.kv_bytes_full_layer);
    CHECK(layer_plan(p, 4).head_dim == 32);
    CHECK(p.layer(5).kv_offset == p.layer(2).kv_offset);
    const uint32_t n = 100;  // past the window, in chunks of at most 8
    const std::vector<float> x = test::random_x(n, 64, 5);
    std::vector<float> y(x.size());
    HeapCount count;
    REQUIRE(s->session.prefill(x.data(), n, y.data()).ok());
    CHECK(count.stop() == 0);
    CHECK(test::max_rel_error(y, reference_of(*s, x, n)) < 5e-5);
    delete s;
  }
}

TEST_CASE("Session with shared KV and two head shapes: prefill equals prefill then decode, threads alike") {
  PlanOptions o;
  o.max_tokens = 8;
  Stack* a = make_stack(o);
  Stack* b = make_stack(o);
  const uint32_t n = 60, head = 21;
  const std::vector<float> x = test::random_x(n, 64, 9);
  std::vector<float> y_prefill(x.size()), y_steps(x.size());
  REQUIRE(a->session.prefill(x.data(), n, y_prefill.data()).ok());
  REQUIRE(b->session.prefill(x.data(), head, y_steps.data()).ok());
  HeapCount count;
  for (uint32_t i = head; i < n; ++i) {
    REQUIRE(b->session.decode(x.data() + i * 64, y_steps.data() + i * 64).ok());
  }
  CHECK(count.stop() == 0);
  CHECK(test::max_rel_error(y_steps, test::to_double(y_prefill)) < 1e-5);
  b->session.reset();
  std::vector<float> again(x.size());
  REQUIRE(b->session.prefill(x.data(), n, again.data()).ok());
  CHECK(again == y_prefill);  // a reset empties the owners' caches the sharing layers read
  delete a;
  delete b;
}

TEST_CASE("Session with shared KV: a sharing layer without its owner is refused by name") {
  PlanOptions o;
  o.max_tokens = 8;
  const Result<Plan> plan = make_plan(gemma4_like(), o);
  REQUIRE(plan.ok());
  std::vector<uint8_t> storage(plan->arena_bytes + 64);
  Arena arena;
  uint8_t* base = storage.data() + (64 - reinterpret_cast<uintptr_t>(storage.data()) % 64) % 64;
  REQUIRE(arena.bind(*plan, base, plan->arena_bytes).ok());
  test::TestLayerWeights w = test::make_test_weights(reference_config(3), DType::kF32, 3);
  AttentionLayer layer;
  const Status s = layer.init(arena, 3, w.view, nullptr);
  CHECK(s.code() == Code::kInvalidArgument);
  CHECK_MESSAGE(
      std::string(s.message()).find("layer 3 has no K/V projections and reads layer 2's cache") != std::string::npos,
      s.message());
  CHECK_FALSE(layer.initialized());
}

}  // namespace
}  // namespace headway
