// AttentionLayer with learned sink logits (gpt-oss): against the double reference with the same
// sinks (sliding and full, both projection engines, f32/f16/bf16 sinks, copied or borrowed
// weights, chunked prefill then decode, no heap); the sinks change the result; a missing sinks
// tensor, a wrong shape and a non-finite logit are init errors that write nothing to the arena.
// The GPU backend's layers with sinks: tests/gpu/gpu_session_test.cc.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "headway/arena.hpp"
#include "headway/backend.hpp"
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

// gpt-oss's attention in small: GQA, q/k/v and output biases, NeoX RoPE, sinks on every head.
Config sinks_config(uint32_t window) {
  Config c;
  c.set_name("sinks");
  c.d_model = 64;
  c.n_heads = 4;
  c.n_kv_heads = 2;
  c.head_dim = 16;
  c.max_seq = 64;
  c.n_layers = 1;
  c.rope.style = RopeStyle::kNeox;
  c.rope.theta = 10000.0f;
  c.qkv_bias = c.o_bias = true;
  c.window = window;
  c.sinks = true;
  c.kv_dtype = DType::kF32;
  return c;
}

using test::max_rel_error;
using test::projections;
using test::random_x;
using test::to_double;

struct Bound {
  Plan plan;
  Buffer buf;
  Arena arena;
  explicit Bound(const Plan& p) : plan(p), buf(p.arena_bytes) { REQUIRE(arena.bind(plan, buf.p, buf.bytes).ok()); }
};

Plan plan_of(const Config& c, const PlanOptions& o) {
  Result<Plan> plan = make_plan(c, o);
  REQUIRE_MESSAGE(plan.ok(), plan.status().message());
  return *plan;
}

TEST_CASE("AttentionLayer with sink logits matches the double reference with the same sinks, prefill then decode") {
  ThreadPool pool;
  REQUIRE(pool.create(2).ok());
  for (uint32_t window : {0u, 6u}) {
    for (Projection proj : projections()) {
      for (DType wt : {DType::kF32, DType::kF16, DType::kBF16}) {
        for (bool in_arena : {true, false}) {
          INFO((window ? "sliding 6 " : "full ")
               << projection_name(proj) << " weights " << dtype_name(wt) << (in_arena ? " copied" : " borrowed"));
          const Config c = sinks_config(window);
          PlanOptions o;
          o.threads = 2;
          o.max_tokens = 8;
          o.weight_dtype = wt;
          o.weights_in_arena = in_arena;
          o.projection = proj;
          Bound b(plan_of(c, o));
          CHECK(b.plan.sinks_bytes_per_layer == align_up(4 * 4));
          test::TestLayerWeights w = test::make_test_weights(c, wt, 11);
          AttentionLayer layer;
          Status st = layer.init(b.arena, 0, w.view, &pool);
          REQUIRE_MESSAGE(st.ok(), st.message());
          // The layer reads its own f32 copy: the caller's sinks may go away after init.
          std::memset(const_cast<void*>(w.view.sinks.data), 0xFF, w.view.sinks.bytes());
          test::RefLayer ref(c, w.ref);
          ref.reset();
          uint32_t seed = 200;
          for (uint32_t t : {5u, 8u, 3u, 1u, 1u, 1u, 7u, 1u, 1u}) {
            std::vector<float> x = random_x(t, c.d_model, seed++);
            std::vector<float> y(x.size());
            const uint32_t pos = layer.position();
            HeapCount count;
            st = layer.forward(x.data(), y.data(), t);
            CHECK(count.stop() == 0);
            REQUIRE_MESSAGE(st.ok(), st.message());
            INFO("tokens " << t << " at position " << pos);
            CHECK(max_rel_error(y, ref.forward(to_double(x), t)) < 2e-5);
          }
        }
      }
    }
  }
}

TEST_CASE("AttentionLayer: the sink logits change the result (a layer that dropped them fails here)") {
  for (uint32_t window : {0u, 6u}) {
    INFO("window " << window);
    const Config c = sinks_config(window);
    Config plain = c;
    plain.sinks = false;
    PlanOptions o;
    o.max_tokens = 8;
    Bound b(plan_of(c, o));
    test::TestLayerWeights w = test::make_test_weights(c, DType::kF32, 5);
    AttentionLayer layer;
    REQUIRE(layer.init(b.arena, 0, w.view, nullptr).ok());
    test::RefLayer with(c, w.ref), without(plain, w.ref);
    with.reset();
    without.reset();
    for (uint32_t t : {8u, 4u, 1u}) {
      std::vector<float> x = random_x(t, c.d_model, 40 + t);
      std::vector<float> y(x.size());
      REQUIRE(layer.forward(x.data(), y.data(), t).ok());
      const std::vector<double> xd = to_double(x);
      CHECK(max_rel_error(y, with.forward(xd, t)) < 2e-5);
      CHECK(max_rel_error(y, without.forward(xd, t)) > 1e-2);  // thousands of times the tolerance
    }
  }
}

TEST_CASE(
    "AttentionLayer rejects a missing sinks tensor, a wrong shape and a non-finite logit, and the arena is unchanged") {
  const Config c = sinks_config(0);
  PlanOptions o;
  o.max_tokens = 4;
  Bound b(plan_of(c, o));
  test::TestLayerWeights w = test::make_test_weights(c, DType::kF32, 2);
  test::TestLayerWeights w16 = test::make_test_weights(c, DType::kF16, 2);
  std::vector<float> three(3, 0.5f), nan4(4, 0.5f), inf4(4, 0.5f);
  nan4[2] = std::numeric_limits<float>::quiet_NaN();
  inf4[3] = -std::numeric_limits<float>::infinity();
  const uint16_t f16_inf[4] = {0x3800, 0x7C00, 0x3800, 0x3800};  // 0.5, +inf, 0.5, 0.5
  struct Bad {
    TensorRef sinks;
    Code code;
    const char* message;
  };
  const Bad cases[] = {
      {TensorRef{}, Code::kInvalidArgument, "layer 0: tensor sinks is missing; the config needs it [1, 4]"},
      {TensorRef{three.data(), DType::kF32, 1, 3}, Code::kInvalidArgument,
       "layer 0: tensor sinks has shape [1, 3], expected [1, 4]"},
      {TensorRef{nan4.data(), DType::kF32, 4, 1}, Code::kInvalidArgument,
       "layer 0: tensor sinks has shape [4, 1], expected [1, 4]"},
      {TensorRef{nan4.data(), DType::kF32, 1, 4}, Code::kInvalidArgument,
       "layer 0: tensor sinks: sinks[2] = nan is not finite"},
      {TensorRef{inf4.data(), DType::kF32, 1, 4}, Code::kInvalidArgument,
       "layer 0: tensor sinks: sinks[3] = -inf is not finite"},
      {TensorRef{f16_inf, DType::kF16, 1, 4}, Code::kInvalidArgument,
       "layer 0: tensor sinks: sinks[1] = inf is not finite"},
  };
  const std::vector<uint8_t> before(b.buf.p, b.buf.p + b.buf.bytes);
  for (const Bad& bad : cases) {
    INFO(bad.message);
    LayerWeights lw = w.view;
    lw.sinks = bad.sinks;
    AttentionLayer layer;
    const Status st = layer.init(b.arena, 0, lw, nullptr);
    CHECK(st.code() == bad.code);
    CHECK(std::string(st.message()) == bad.message);
    CHECK_FALSE(layer.initialized());
    CHECK(std::memcmp(before.data(), b.buf.p, before.size()) == 0);
  }
  // A layer that ran, re-initialized with bad sinks: uninitialized, its calls refused.
  AttentionLayer layer;
  REQUIRE(layer.init(b.arena, 0, w16.view, nullptr).ok());
  std::vector<float> x = random_x(2, c.d_model, 9);
  REQUIRE(layer.forward(x.data(), x.data(), 2).ok());
  LayerWeights lw = w.view;
  lw.sinks = TensorRef{nan4.data(), DType::kF32, 1, 4};
  const std::vector<uint8_t> ran(b.buf.p, b.buf.p + b.buf.bytes);
  CHECK(layer.init(b.arena, 0, lw, nullptr).code() == Code::kInvalidArgument);
  CHECK(std::memcmp(ran.data(), b.buf.p, ran.size()) == 0);
  CHECK_FALSE(layer.initialized());
  CHECK(layer.forward(x.data(), x.data(), 1).code() == Code::kFailedPrecondition);
  // Without Config::sinks the tensor is not read: sinks the caller passes anyway are ignored.
  Config plain = c;
  plain.sinks = false;
  Bound p(plan_of(plain, o));
  CHECK(p.plan.sinks_bytes == 0);
  CHECK(layer.init(p.arena, 0, lw, nullptr).ok());
}

TEST_CASE("Plan: the sinks region holds every layer's [n_heads] f32 logits after the RoPE tables") {
  Config c = sinks_config(8);
  c.n_layers = 3;
  c.n_heads = 20;  // 80 bytes a layer: aligned to 128
  c.n_kv_heads = 4;
  c.d_model = 320;
  const Plan p = plan_of(c, {});
  CHECK(p.sinks_bytes_per_layer == 128);
  CHECK(p.sinks_bytes == 3 * 128);
  CHECK(p.sinks_offset == p.rope_offset + p.rope_bytes);
  CHECK(p.activations_offset == p.sinks_offset + p.sinks_bytes);
  Config plain = c;
  plain.sinks = false;
  const Plan q = plan_of(plain, {});
  CHECK(q.sinks_bytes == 0);
  CHECK(q.sinks_offset == q.activations_offset);
  CHECK(p.arena_bytes == q.arena_bytes + 3 * 128);
}

}  // namespace
}  // namespace headway
