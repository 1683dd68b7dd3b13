// Gated DeltaNet layers (LayerKinds::linear): the layer against its double reference
// (tests/reference/reference_gated_delta) in one call, in calls of any size and token by token, on
// 1 and 2 threads (bitwise alike), with no heap; bad input that changes nothing; the plan that
// holds their fixed state; a hybrid Model's state saved and restored.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "headway/arena.hpp"
#include "headway/tools/heap_count.hpp"
#include "headway/layer.hpp"
#include "headway/model.hpp"
#include "headway/plan.hpp"
#include "headway/thread_pool.hpp"
#include "tests/reference/reference_gated_delta.hpp"
#include "tests/reference/reference_layer.hpp"
#include "tests/runtime/layer_test_support.hpp"

namespace headway {
namespace {

using Buffer = test::ArenaBuffer;

// A plan of `c` and an arena of its own, bound.
struct Planned {
  Plan plan;
  Buffer memory;
  Arena arena;
  Planned(const Config& c, const PlanOptions& o) : plan(planned(c, o)), memory(plan.arena_bytes) {
    REQUIRE(arena.bind(plan, memory.p, plan.arena_bytes).ok());
  }
  static Plan planned(const Config& c, const PlanOptions& o) {
    const Result<Plan> p = make_plan(c, o);
    REQUIRE_MESSAGE(p.ok(), std::string(p.status().message()));
    return p.value();
  }
};

// Two layers: a Gated DeltaNet layer (2 key heads of 8, 4 value heads of 12, 4 taps), then a full
// attention layer.
Config hybrid_config() {
  Config c;
  c.set_name("tiny-hybrid");
  c.d_model = 32;
  c.n_heads = 2;
  c.n_kv_heads = 1;
  c.head_dim = 16;
  c.max_seq = 256;
  c.n_layers = 2;
  c.rope.style = RopeStyle::kNeox;
  c.kv_dtype = DType::kF32;
  c.layers.linear.count = 2;
  c.layers.linear.set(0, true);
  c.gated_delta = {2, 4, 8, 12, 4, false};
  return c;
}

// The layer's output for x in calls of `chunk` tokens into y; false on a failed call.
bool run_layer(AttentionLayer& layer, const std::vector<float>& x, uint32_t t, uint32_t d, uint32_t chunk,
               std::vector<float>* y) {
  for (uint32_t done = 0; done < t; done += chunk) {
    const uint32_t n = t - done < chunk ? t - done : chunk;
    if (!layer.forward(x.data() + size_t{done} * d, y->data() + size_t{done} * d, n).ok()) return false;
  }
  return true;
}

TEST_CASE("Gated DeltaNet layer: one call, calls of any size and decode equal the double reference, threads alike") {
  const Config c = hybrid_config().layer_alone(0);
  const test::GatedDeltaTensors w = test::random_gated_delta(c, 7);
  const uint32_t d = c.d_model;
  for (const uint32_t t : {1u, 5u, 64u, 150u}) {
    const std::vector<float> x = test::random_x(t, d, 100 + t);
    test::RefGatedDelta ref(c, w);
    const std::vector<double> want = ref.forward(test::to_double(x), t);
    std::vector<float> first;
    for (const uint32_t threads : {1u, 2u}) {
      PlanOptions o;
      o.threads = threads;
      o.max_tokens = 128;
      Planned planned(c, o);
      ThreadPool pool;
      REQUIRE(pool.create(threads).ok());
      AttentionLayer layer;
      REQUIRE(layer.init(planned.arena, 0, w.view(), &pool).ok());
      for (const uint32_t chunk : {128u, 1u, 7u, 64u}) {
        CAPTURE(t);
        CAPTURE(threads);
        CAPTURE(chunk);
        layer.reset();
        std::vector<float> y(size_t{t} * d);
        HeapCount heap;
        const bool ran = run_layer(layer, x, t, d, chunk, &y);
        CHECK(heap.stop() == 0);
        REQUIRE(ran);
        CHECK(test::max_rel_error(y, want) < 2e-5);
        CHECK(layer.position() == t);
        if (chunk != 128) continue;
        if (threads == 1) first = y;
        else CHECK(std::memcmp(first.data(), y.data(), y.size() * sizeof(float)) == 0);
      }
    }
  }
}

TEST_CASE("Gated DeltaNet layer: decode steps after a prefill of 1, 63, 64, 65 and 300 tokens equal the reference") {
  Config hybrid = hybrid_config();
  hybrid.max_seq = 512;
  const Config c = hybrid.layer_alone(0);
  const test::GatedDeltaTensors w = test::random_gated_delta(c, 11);
  const uint32_t d = c.d_model;
  PlanOptions o;
  o.max_tokens = 300;
  Planned planned(c, o);
  AttentionLayer layer;
  REQUIRE(layer.init(planned.arena, 0, w.view()).ok());
  for (const uint32_t t : {1u, 63u, 64u, 65u, 300u}) {
    CAPTURE(t);
    const uint32_t n = t + 3;
    const std::vector<float> x = test::random_x(n, d, 200 + t);
    test::RefGatedDelta ref(c, w);
    const std::vector<double> want = ref.forward(test::to_double(x), n);
    std::vector<float> y(size_t{n} * d);
    layer.reset();
    REQUIRE(layer.forward(x.data(), y.data(), t).ok());
    for (uint32_t i = t; i < n; ++i) {
      REQUIRE(layer.forward(x.data() + size_t{i} * d, y.data() + size_t{i} * d, 1).ok());
    }
    CHECK(test::max_rel_error(y, want) < 2e-5);
  }
}

TEST_CASE("Gated DeltaNet layer: x with NaN is refused by name, and the state, window and position stay") {
  const Config c = hybrid_config().layer_alone(0);
  const test::GatedDeltaTensors w = test::random_gated_delta(c, 8);
  Planned planned(c, {});
  const Plan& p = planned.plan;
  AttentionLayer layer;
  REQUIRE(layer.init(planned.arena, 0, w.view()).ok());
  std::vector<float> x = test::random_x(3, c.d_model, 9), y(x.size());
  REQUIRE(layer.forward(x.data(), y.data(), 3).ok());
  const std::vector<uint8_t> before(reinterpret_cast<uint8_t*>(layer.linear_state()),
                                    reinterpret_cast<uint8_t*>(layer.linear_state()) + p.linear_state_bytes_per_layer);
  x[c.d_model + 3] = std::nanf("");
  const Status s = layer.forward(x.data(), y.data(), 3);
  CHECK(s.code() == Code::kInvalidArgument);
  CHECK(std::string(s.message()).find("token 1's gates") != std::string::npos);
  CHECK(layer.position() == 3);
  CHECK(std::memcmp(before.data(), layer.linear_state(), before.size()) == 0);
}

TEST_CASE("Gated DeltaNet layer: weights of the wrong shape or with a non-finite A_log are named") {
  const Config c = hybrid_config().layer_alone(0);
  const Result<Plan> plan = make_plan(c, {});
  REQUIRE(plan.ok());
  test::GatedDeltaTensors w = test::random_gated_delta(c, 10);
  LayerWeights v = w.view();
  v.w_z.rows -= 1;
  Status s = check_layer_weights(plan.value(), v, 0);
  CHECK(std::string(s.message()).find("in_proj_z") != std::string::npos);
  w.a_log[2] = INFINITY;
  s = check_layer_weights(plan.value(), w.view(), 0);
  CHECK(std::string(s.message()).find("A_log[2]") != std::string::npos);
}

TEST_CASE("Gated DeltaNet plan: the state is fixed and counted per linear layer, attention layers alone hold KV") {
  Config c = hybrid_config();
  const Plan p = plan_for(c, {});
  const GatedDeltaShape& g = c.gated_delta;
  CHECK(p.linear_layers == 1);
  CHECK(p.linear_row == g.conv_width() + g.value_width() + 2 * g.value_heads);
  CHECK(p.linear_state_bytes_per_layer == align_up(uint64_t{g.value_heads} * g.key_head_dim * g.value_head_dim * 4) +
                                              align_up(uint64_t{g.conv_kernel - 1} * g.conv_width() * 4));
  CHECK(p.kv_cache_bytes == p.kv_bytes_full_layer);  // layer 1's only
  CHECK(p.layer(0).linear);
  CHECK(p.layer(0).kv_bytes == 0);
  CHECK(p.layer(1).kv_offset == p.kv_offset);
  CHECK(p.layer_weights_offset(1) == p.weights_offset + p.linear_weight_bytes_per_layer);
  CHECK(p.weights_region_bytes == p.linear_weight_bytes_per_layer + p.weight_bytes_per_layer);
  // Twice the context: the same state.
  c.max_seq *= 2;
  CHECK(plan_for(c, {}).linear_state_bytes == p.linear_state_bytes);
}

TEST_CASE("Gated DeltaNet config: shapes that cannot run are refused by name") {
  Config c = hybrid_config();
  CHECK(validate(c).ok());
  c.gated_delta.value_heads = 3;
  CHECK(std::string(validate(c).message()).find("linear_num_value_heads 3 is not a multiple of") != std::string::npos);
  c = hybrid_config();
  c.gated_delta.conv_kernel = 0;
  CHECK(std::string(validate(c).message()).find("linear_conv_kernel_dim 0") != std::string::npos);
  c = hybrid_config();
  c.window = 16;
  CHECK(validate(c).code() == Code::kUnsupported);
  c = hybrid_config();
  c.gated_delta.key_head_dim = kMaxHeadDim + 1;
  CHECK(validate(c).code() == Code::kUnsupported);
  CHECK(validate_layer(hybrid_config(), 0).ok());
}

TEST_CASE("Gated DeltaNet spec: linear_layers and the linear_* keys make the config's layers and shape") {
  const Result<Config> c = parse_spec(
      "d_model=32 heads=2 kv_heads=1 head_dim=16 ctx=256 layers=2 linear_layers=10 linear_key_heads=2 "
      "linear_value_heads=4 linear_key_head_dim=8 linear_value_head_dim=12 linear_conv_kernel=4");
  REQUIRE(c.ok());
  const Config want = hybrid_config();
  CHECK(c->layer_is_linear(0));
  CHECK_FALSE(c->layer_is_linear(1));
  CHECK(std::memcmp(&c->gated_delta, &want.gated_delta, sizeof(GatedDeltaShape)) == 0);
  CHECK(validate(*c).ok());
  const Result<Config> bad = parse_spec("d_model=32 heads=2 layers=2 linear_layers=1x");
  REQUIRE_FALSE(bad.ok());
  CHECK(std::string(bad.status().message()).find("linear_layers=1x: character 2 is 'x'") != std::string::npos);
}

// A whole hybrid decoder over in-memory weights: its Gated DeltaNet layer's and its attention
// layer's, norms and MLP.
struct HybridWeights {
  Config config;
  test::GatedDeltaTensors linear;
  test::TestLayerWeights attention;
  std::vector<float> tensor[kModelTensorCount][2];
  explicit HybridWeights(const Config& c)
      : config(c), linear(test::random_gated_delta(c, 21)), attention(test::make_test_weights(c, DType::kF32, 22)) {
    test::Rng rng(23);
    for (uint32_t t = 0; t < kModelTensorCount; ++t) {
      if (!model_has_tensor(c, static_cast<ModelTensor>(t))) continue;
      const TensorShape s = model_tensor_shape(c, static_cast<ModelTensor>(t));
      for (uint32_t l = 0; l < 2; ++l) {
        tensor[t][l].resize(size_t{s.rows} * s.cols);
        for (float& v : tensor[t][l]) v = s.rows == 1 ? 1.0f + 0.1f * rng.normal() : rng.normal() / std::sqrt(s.cols);
      }
    }
  }
  ModelWeightsSource source() {
    return {this,
            [](void* ctx, uint32_t layer) -> Result<LayerWeights> {
              HybridWeights& w = *static_cast<HybridWeights*>(ctx);
              return layer == 0 ? w.linear.view() : w.attention.view;
            },
            [](void* ctx, ModelTensor t, uint32_t layer, TensorShape shape, uint64_t first, uint64_t n,
               float* dst) -> Status {
              const std::vector<float>& v =
                  static_cast<HybridWeights*>(ctx)
                      ->tensor[static_cast<uint32_t>(t)][model_tensor_info(t).per_layer ? layer : 0];
              std::memcpy(dst, v.data() + first * shape.cols, n * shape.cols * sizeof(float));
              return Status();
            }};
  }
};

TEST_CASE("Gated DeltaNet model: a restored state goes on bitwise, another kind of layer's state is refused") {
  Config c = hybrid_config();
  c.model.vocab_size = 40;
  c.model.intermediate_size = 48;
  c.model.norm = NormKind::kRms;
  c.model.mlp = MlpKind::kSwiGlu;
  HybridWeights weights(c);
  PlanOptions o;
  o.max_tokens = 16;
  Planned a(c, o), b(c, o);
  Model first, second;
  REQUIRE(first.init(a.arena, weights.source(), {}).ok());
  REQUIRE(second.init(b.arena, weights.source(), {}).ok());
  const int32_t prompt[20] = {1, 5, 9, 2, 33, 7, 7, 0, 12, 39, 4, 4, 18, 21, 3, 8, 30, 2, 11, 6};
  REQUIRE(first.prefill(prompt, 20).ok());
  std::vector<uint8_t> state(first.state_bytes());
  REQUIRE(first.save_state(state.data(), state.size(), nullptr).ok());
  REQUIRE(second.load_state(state.data(), state.size()).ok());
  CHECK(second.position() == 20);
  for (const int32_t id : {3, 17, 25}) {
    REQUIRE(first.decode(id).ok());
    HeapCount heap;
    const Status s = second.decode(id);
    CHECK(heap.stop() == 0);
    REQUIRE(s.ok());
    CHECK(std::memcmp(first.logits(), second.logits(), c.model.vocab_size * sizeof(float)) == 0);
  }
  // The same shapes with both layers attention: the layer record differs, nothing is written.
  Config other = c;
  other.layers.linear = LayerBits{};
  Planned oa(other, o);
  Model third;
  const ModelWeightsSource src{
      &weights,
      [](void* ctx, uint32_t) -> Result<LayerWeights> { return static_cast<HybridWeights*>(ctx)->attention.view; },
      weights.source().rows};
  REQUIRE(third.init(oa.arena, src, {}).ok());
  const Status s = third.load_state(state.data(), state.size());
  CHECK(std::string(s.message()).find("layer 0 is linear, this plan's is full") != std::string::npos);
  CHECK(third.position() == 0);
  // Another conv kernel: the linear layer's record differs.
  Config taps = c;
  taps.gated_delta.conv_kernel = 3;
  HybridWeights taps_weights(taps);
  Planned ta(taps, o);
  Model fourth;
  REQUIRE(fourth.init(ta.arena, taps_weights.source(), {}).ok());
  const Status t = fourth.load_state(state.data(), state.size());
  CHECK(std::string(t.message()).find("layer 0's Gated DeltaNet state is") != std::string::npos);
  CHECK(std::string(t.message()).find("with a conv kernel of 4; this plan's") != std::string::npos);
}

}  // namespace
}  // namespace headway
