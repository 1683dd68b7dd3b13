// AttentionLayer against the double reference of the whole block (tests/reference_layer): GQA,
// MQA, partial rotary, biases, q/k norm, an output gate, V from K, sliding window; chunked prefill and
// decode after it; both projection engines (Highway, XNNPACK where built), f32/f16/bf16 weights,
// copied or borrowed; a cache that starts mid-sequence; errors that leave the cache unchanged; no
// heap.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "headway/arena.hpp"
#include "headway/tools/heap_count.hpp"
#include "headway/layer.hpp"
#include "headway/plan.hpp"
#include "headway/thread_pool.hpp"
#include "runtime/linear/xnnpack_dense.hpp"
#include "tests/reference/reference_layer.hpp"
#include "tests/runtime/layer_test_support.hpp"

namespace headway {
namespace {

using Buffer = test::ArenaBuffer;

Config base_config() {
  Config c;
  c.set_name("test");
  c.d_model = 48;
  c.n_heads = 4;
  c.n_kv_heads = 2;
  c.head_dim = 16;
  c.max_seq = 64;
  c.n_layers = 1;
  c.rope.style = RopeStyle::kNeox;
  c.rope.theta = 10000.0f;
  c.kv_dtype = DType::kF32;
  return c;
}

struct Variant {
  const char* name;
  Config config;
};

std::vector<Variant> variants() {
  std::vector<Variant> v;
  v.push_back({"gqa", base_config()});
  Config mqa = base_config();
  mqa.n_kv_heads = 1;
  v.push_back({"mqa", mqa});
  Config partial = base_config();
  partial.rope.style = RopeStyle::kGptj;
  partial.rope.rotary_dim = 8;
  v.push_back({"partial rotary gptj", partial});
  Config bias = base_config();
  bias.qkv_bias = bias.o_bias = true;
  bias.head_dim = 12;  // q_width 48: the generic kernel, d_model == q_width
  v.push_back({"biases", bias});
  Config qkn = base_config();
  qkn.qk_norm = true;
  qkn.rms_norm_eps = 1e-5f;
  qkn.d_model = 40;  // head_dim given explicitly, d_model != q_width
  v.push_back({"qk norm", qkn});
  Config gated = base_config();  // Qwen3.5's attention: gate, 1 + w norms, a quarter of the dims rotated
  gated.output_gate = gated.qk_norm = true;
  gated.qk_norm_offset = 1.0f;
  gated.rope.rotary_dim = 4;
  v.push_back({"output gate", gated});
  Config gemma4 = base_config();  // Gemma 4's full layers: V from K, normed without a weight, scale 1
  gemma4.k_eq_v = gemma4.v_norm = gemma4.qk_norm = gemma4.qkv_bias = true;
  gemma4.scale = 1.0f;
  v.push_back({"V from K, v norm", gemma4});
  Config win = base_config();
  win.window = 6;
  v.push_back({"sliding window", win});
  Config mha = base_config();
  mha.n_kv_heads = 0;
  mha.rope.style = RopeStyle::kNone;
  mha.causal = true;
  mha.kv_dtype = DType::kF16;
  v.push_back({"mha no rope f16 cache", mha});
  return v;
}

using test::max_rel_error;
using test::projections;
using test::random_x;
using test::to_double;

TEST_CASE(
    "AttentionLayer matches the double reference: variants x projections x weight dtypes, chunked prefill then "
    "decode") {
  ThreadPool pool;
  REQUIRE(pool.create(2).ok());
  for (const Variant& var : variants()) {
    for (Projection proj : projections()) {
      for (DType wt : {DType::kF32, DType::kF16, DType::kBF16}) {
        for (bool in_arena : {true, false}) {
          INFO(var.name << " " << projection_name(proj) << " weights " << dtype_name(wt)
                        << (in_arena ? " copied" : " borrowed"));
          const Config& c = var.config;
          REQUIRE(validate(c).ok());
          PlanOptions o;
          o.threads = 2;
          o.max_tokens = 8;
          o.weight_dtype = wt;
          o.weights_in_arena = in_arena;
          o.projection = proj;
          Result<Plan> plan = make_plan(c, o);
          REQUIRE(plan.ok());
          Buffer buf(plan->arena_bytes);
          Arena arena;
          REQUIRE(arena.bind(*plan, buf.p, plan->arena_bytes).ok());
          test::TestLayerWeights w = test::make_test_weights(c, wt, 7);
          AttentionLayer layer;
          Status st = layer.init(arena, 0, w.view, &pool);
          REQUIRE_MESSAGE(st.ok(), st.message());
          if (proj == Projection::kXnnpack) {
            CHECK(layer.packed_bytes_used() > 0);
            CHECK(layer.packed_bytes_used() <= plan->packed_bytes_per_layer);
          }
          test::RefLayer ref(c, w.ref);
          ref.reset();
          // f16/bf16 K/V storage rounds values the runtime and the reference computed in
          // slightly different orders: a rounding step apart now and then.
          const double tol = c.kv_dtype == DType::kF32 ? 2e-5 : 4e-3;
          uint32_t seed = 100;
          for (uint32_t t : {5u, 8u, 3u, 1u, 1u, 1u, 7u, 1u}) {
            std::vector<float> x = random_x(t, c.d_model, seed++);
            std::vector<float> y(x.size());
            const uint32_t pos = layer.position();
            HeapCount count;
            st = layer.forward(x.data(), y.data(), t);
            CHECK(count.stop() == 0);
            REQUIRE_MESSAGE(st.ok(), st.message());
            const std::vector<double> want = ref.forward(to_double(x), t);
            INFO("tokens " << t << " at position " << pos);
            CHECK(max_rel_error(y, want) < tol);
          }
        }
      }
    }
  }
}

TEST_CASE("AttentionLayer in place (x == y), and a fresh cache that starts at position P") {
  Config c = base_config();
  c.max_seq = 40;
  for (Projection proj : projections()) {
    INFO(projection_name(proj));
    PlanOptions o;
    o.max_tokens = 8;
    o.projection = proj;
    Result<Plan> plan = make_plan(c, o);
    REQUIRE(plan.ok());
    Buffer buf(plan->arena_bytes);
    Arena arena;
    REQUIRE(arena.bind(*plan, buf.p, plan->arena_bytes).ok());
    test::TestLayerWeights w = test::make_test_weights(c, DType::kF32, 3);
    AttentionLayer layer;
    REQUIRE(layer.init(arena, 0, w.view, nullptr).ok());
    test::RefLayer ref(c, w.ref);
    for (uint32_t start : {0u, 17u, 30u}) {
      INFO("start " << start);
      layer.reset(start);
      ref.reset(start);
      CHECK(layer.position() == start);
      for (uint32_t t : {6u, 1u, 2u}) {
        std::vector<float> x = random_x(t, c.d_model, start + t);
        const std::vector<double> want = ref.forward(to_double(x), t);
        REQUIRE(layer.forward(x.data(), x.data(), t).ok());
        CHECK(max_rel_error(x, want) < 2e-5);
      }
      CHECK(layer.position() == start + 9);
    }
    // Past the context: 31 + 9 = 40 fits exactly; one more does not, and changes nothing.
    layer.reset(31);
    std::vector<float> x = random_x(8, c.d_model, 1);
    REQUIRE(layer.forward(x.data(), x.data(), 8).ok());
    std::vector<uint8_t> before(arena.kv_layer(0), arena.kv_layer(0) + plan->kv_bytes_per_layer);
    x = random_x(2, c.d_model, 2);
    Status st = layer.forward(x.data(), x.data(), 2);
    CHECK(st.code() == Code::kOutOfRange);
    CHECK(std::string(st.message()).find("context of 40") != std::string::npos);
    CHECK(layer.position() == 39);
    CHECK(std::memcmp(before.data(), arena.kv_layer(0), before.size()) == 0);
    REQUIRE(layer.forward(x.data(), x.data(), 1).ok());
  }
}

TEST_CASE("AttentionLayer rejects weights of the wrong shape, missing tensors, bad calls") {
  Config c = base_config();
  c.qkv_bias = true;
  PlanOptions o;
  o.max_tokens = 4;
  Result<Plan> plan = make_plan(c, o);
  REQUIRE(plan.ok());
  Buffer buf(plan->arena_bytes);
  Arena arena;
  REQUIRE(arena.bind(*plan, buf.p, plan->arena_bytes).ok());
  test::TestLayerWeights w = test::make_test_weights(c, DType::kF32, 1);
  AttentionLayer layer;
  float x[4 * 48] = {};
  CHECK(layer.forward(x, x, 1).code() == Code::kFailedPrecondition);

  LayerWeights bad = w.view;
  std::swap(bad.wk.rows, bad.wk.cols);
  Status st = layer.init(arena, 0, bad, nullptr);
  CHECK(st.code() == Code::kInvalidArgument);
  CHECK(std::string(st.message()) == "layer 0: tensor wk has shape [48, 32], expected [32, 48]");

  bad = w.view;
  bad.bv = TensorRef{};
  st = layer.init(arena, 0, bad, nullptr);
  CHECK(std::string(st.message()) == "layer 0: tensor bv is missing; the config needs it [1, 32]");

  CHECK(layer.init(arena, 1, w.view, nullptr).code() == Code::kInvalidArgument);
  REQUIRE(layer.init(arena, 0, w.view, nullptr).ok());
  CHECK(layer.forward(x, x, 0).code() == Code::kInvalidArgument);
  CHECK(layer.forward(x, x, 5).code() == Code::kInvalidArgument);
  CHECK(layer.forward(nullptr, x, 1).code() == Code::kInvalidArgument);
  CHECK(layer.position() == 0);
}

TEST_CASE("AttentionLayer::forward_packed: each sequence is bitwise what forward gives it alone, with no heap") {
  const std::vector<uint32_t> cu = {0, 7, 8, 25, 40};  // lengths 7, 1, 17, 15
  for (const Variant& v : variants()) {
    for (Projection proj : projections()) {
      const std::string what = std::string(v.name) + " " + projection_name(proj);
      INFO(what);
      Config c = v.config;
      c.max_seq = 40;
      PlanOptions o;
      o.max_tokens = 40;
      o.threads = 2;
      o.projection = proj;
      Result<Plan> plan = make_plan(c, o);
      REQUIRE_MESSAGE(plan.ok(), plan.status().message());
      Buffer buf(plan->arena_bytes);
      Arena arena;
      REQUIRE(arena.bind(*plan, buf.p, plan->arena_bytes).ok());
      test::TestLayerWeights w = test::make_test_weights(c, DType::kF32, 5);
      ThreadPool pool;
      REQUIRE(pool.create(2).ok());
      AttentionLayer layer;
      REQUIRE(layer.init(arena, 0, w.view, &pool).ok());
      const std::vector<float> x = random_x(40, c.d_model, 77);
      std::vector<float> packed(x.size()), alone(x.size());
      layer.reset(5);  // a cache in use: the packed call starts each sequence afresh
      REQUIRE(layer.forward(x.data(), packed.data(), 3).ok());
      HeapCount count;
      const Status st = layer.forward_packed(x.data(), packed.data(), cu.data(), 4);
      CHECK(count.stop() == 0);
      REQUIRE_MESSAGE(st.ok(), st.message());
      CHECK(layer.position() == 0);
      test::RefLayer ref(c, w.ref);
      for (size_t s = 0; s + 1 < cu.size(); ++s) {
        const uint32_t n = cu[s + 1] - cu[s];
        const size_t at = size_t{cu[s]} * c.d_model;
        layer.reset(0);
        REQUIRE(layer.forward(x.data() + at, alone.data() + at, n).ok());
        ref.reset(0);
        const std::vector<float> xs(x.begin() + at, x.begin() + at + size_t{n} * c.d_model);
        const std::vector<float> ys(packed.begin() + at, packed.begin() + at + size_t{n} * c.d_model);
        CHECK(max_rel_error(ys, ref.forward(to_double(xs), n)) < 2e-5);
      }
      CHECK(std::memcmp(packed.data(), alone.data(), packed.size() * sizeof(float)) == 0);
    }
  }
}

TEST_CASE("AttentionLayer::forward_packed rejects bad lengths by name and changes nothing") {
  Config c = base_config();
  c.max_seq = 16;
  PlanOptions o;
  o.max_tokens = 16;
  Result<Plan> plan = make_plan(c, o);
  REQUIRE(plan.ok());
  Buffer buf(plan->arena_bytes);
  Arena arena;
  REQUIRE(arena.bind(*plan, buf.p, plan->arena_bytes).ok());
  test::TestLayerWeights w = test::make_test_weights(c, DType::kF32, 1);
  AttentionLayer layer;
  std::vector<float> x = random_x(20, c.d_model, 3), y(x.size(), 0.0f);
  const uint32_t ok[3] = {0, 4, 9};
  CHECK(layer.forward_packed(x.data(), y.data(), ok, 2).code() == Code::kFailedPrecondition);
  REQUIRE(layer.init(arena, 0, w.view, nullptr).ok());
  layer.reset(3);
  REQUIRE(layer.forward(x.data(), y.data(), 2).ok());
  const std::vector<uint8_t> kv_before(arena.kv_layer(0), arena.kv_layer(0) + plan->kv_bytes_per_layer);
  std::fill(y.begin(), y.end(), 0.0f);
  auto message = [&](const uint32_t* cu, uint32_t n) {
    const Status s = layer.forward_packed(x.data(), y.data(), cu, n);
    return std::string(s.ok() ? "(ok)" : s.message());
  };
  const uint32_t from_one[3] = {1, 4, 9}, empty[3] = {0, 4, 4}, too_many[3] = {0, 8, 17};
  CHECK(message(nullptr, 1) == "layer 0: a packed batch needs cu_seqlens and n_seqs >= 1");
  CHECK(message(ok, 0) == "layer 0: a packed batch needs cu_seqlens and n_seqs >= 1");
  CHECK(message(from_one, 2) == "layer 0: cu_seqlens[0] is 1, expected 0");
  CHECK(message(empty, 2) == "layer 0: cu_seqlens[2] = 4 is not above cu_seqlens[1] = 4 (sequence 1 is empty)");
  CHECK(message(too_many, 2) == "layer 0: 17 tokens in one call, expected 1..16 (max_tokens)");
  const uint32_t past_context[2] = {0, 17};
  CHECK(message(past_context, 1) == "layer 0: sequence 0 has 17 tokens, past the context of 16");
  CHECK(std::string(layer.forward_packed(nullptr, y.data(), ok, 2).message()) == "layer 0: x or y is null");
  CHECK(layer.position() == 5);
  CHECK(std::memcmp(kv_before.data(), arena.kv_layer(0), kv_before.size()) == 0);
  for (float v : y) CHECK(v == 0.0f);
}

TEST_CASE("XNNPACK: the packed weights live in the arena, within the plan's bound, for every block count") {
  if (!xnnpack_built()) return;
  for (uint32_t threads : {1u, 3u, 16u}) {
    for (uint32_t d : {64u, 200u, 576u}) {
      Config c = base_config();
      c.d_model = d;
      c.n_heads = d / 32;
      c.n_kv_heads = 1;
      c.head_dim = 32;
      c.qkv_bias = c.o_bias = true;
      c.qk_norm = true;
      PlanOptions o;
      o.max_tokens = 4;
      o.threads = threads;
      o.projection = Projection::kXnnpack;
      Result<Plan> plan = make_plan(c, o);
      REQUIRE(plan.ok());
      CHECK(plan->weights_region_bytes == 0);
      CHECK(plan->packed_offset == 0);
      CHECK(plan->kv_offset == plan->packed_bytes);
      Buffer buf(plan->arena_bytes);
      Arena arena;
      REQUIRE(arena.bind(*plan, buf.p, plan->arena_bytes).ok());
      test::TestLayerWeights w = test::make_test_weights(c, DType::kF16, 1);
      AttentionLayer layer;
      REQUIRE(layer.init(arena, 0, w.view, nullptr).ok());
      INFO("threads " << threads << " d_model " << d << ": used " << layer.packed_bytes_used() << " of "
                      << plan->packed_bytes_per_layer);
      CHECK(layer.packed_bytes_used() <= plan->packed_bytes_per_layer);
      // An upper bound, not a guess far above: with one block per matrix, within 1.5× + 16 KiB.
      if (threads == 1) CHECK(plan->packed_bytes_per_layer < layer.packed_bytes_used() * 3 / 2 + 16384);
    }
  }
}

}  // namespace
}  // namespace headway
