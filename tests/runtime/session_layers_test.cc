// A Session whose layers differ: sliding and full layers, a NoPE layer, two RoPE bases. Each layer
// against the double reference built from that layer's own kind (written out here, not taken
// from the plan); a prompt far past the window run in chunks equals one prefill and then
// token-by-token decode; no heap during either. The same with sink logits on every layer
// (gpt-oss-like: even layers sliding, odd ones full, biases, YaRN for the prefill/decode check).
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
#include "tests/reference/reference_layer.hpp"
#include "tests/runtime/layer_test_support.hpp"

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

using Stack = test::SessionStack;

Stack* make_stack(const Config& c, const PlanOptions& o) {
  Status st;
  const auto weights = [&](uint32_t l) { return test::make_test_weights(c, o.weight_dtype, 31 + l); };
  Stack* s = test::make_session_stack(c, o, weights, &st);
  REQUIRE_MESSAGE(st.ok(), st.message());
  return s;
}

using test::max_rel_error;
using test::random_x;

// The reference stack's output over x [n, d_model]: layer l a RefLayer of layer_config(l) on the
// stack's weights of that layer, from a fresh history.
template <class LayerConfig>
std::vector<double> reference_of(const Stack& s, const std::vector<float>& x, uint32_t n, LayerConfig layer_config) {
  std::vector<test::RefLayer> ref;
  for (uint32_t l = 0; l < s.plan.config.n_layers; ++l) ref.emplace_back(layer_config(l), s.weights[l].ref);
  for (auto& r : ref) r.reset();
  return test::reference_stack(ref, std::vector<double>(x.begin(), x.end()), n);
}

// A stack that prefills n tokens at once against one that prefills `head` and decodes the rest
// token by token, with no heap in the decode steps: the same outputs within 1e-5.
void check_prefill_equals_decode(const Config& c, uint32_t n, uint32_t head, uint64_t seed) {
  PlanOptions o;
  o.max_tokens = 8;
  Stack* a = make_stack(c, o);
  Stack* b = make_stack(c, o);
  const std::vector<float> x = random_x(n, c.d_model, seed);
  std::vector<float> y_prefill(x.size()), y_steps(x.size());
  REQUIRE(a->session.prefill(x.data(), n, y_prefill.data()).ok());
  REQUIRE(b->session.prefill(x.data(), head, y_steps.data()).ok());
  HeapCount count;
  for (uint32_t i = head; i < n; ++i) {
    REQUIRE(b->session.decode(x.data() + i * c.d_model, y_steps.data() + i * c.d_model).ok());
  }
  CHECK(count.stop() == 0);
  CHECK(max_rel_error(y_steps, test::to_double(y_prefill)) < 1e-5);
  CHECK(b->session.position() == n);
  delete a;
  delete b;
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
  const uint32_t n = 150;  // six windows, in 19 chunks of at most 8
  const std::vector<float> x = random_x(n, c.d_model, 7);
  std::vector<float> y(x.size());
  HeapCount count;
  REQUIRE(s->session.prefill(x.data(), n, y.data()).ok());
  CHECK(count.stop() == 0);
  CHECK(max_rel_error(y, reference_of(*s, x, n, reference_config)) < 5e-5);
  delete s;
}

TEST_CASE("Session with mixed layers: prefill far past the window equals prefill then decode") {
  const Config c = mixed_config();
  check_prefill_equals_decode(c, 200, 90, 13);
}

// gpt-oss in small: even layers slide (window 24), odd ones are full; q/k/v and output biases,
// sink logits on every layer.
Config gpt_oss_like() {
  Config c;
  c.set_name("gpt-oss-like");
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
  c.qkv_bias = c.o_bias = true;
  c.sinks = true;
  c.kv_dtype = DType::kF32;
  return c;
}

TEST_CASE("Session with sink logits on sliding and full layers (gpt-oss-like): against the reference") {
  const Config c = gpt_oss_like();
  PlanOptions o;
  o.max_tokens = 8;
  Stack* s = make_stack(c, o);
  CHECK(s->plan.layer(0).sliding);
  CHECK_FALSE(s->plan.layer(1).sliding);
  CHECK(s->plan.layer(1).sinks);
  auto layer_config = [&](uint32_t l, bool sinks) {
    Config lc = c;
    lc.layers = LayerKinds{};
    lc.window = l % 2 == 0 ? kWindow : 0;
    lc.sinks = sinks;
    return lc;
  };
  const uint32_t n = 100;  // four windows, in 13 chunks of at most 8
  const std::vector<float> x = random_x(n, c.d_model, 17);
  std::vector<float> y(x.size());
  HeapCount count;
  REQUIRE(s->session.prefill(x.data(), n, y.data()).ok());
  CHECK(count.stop() == 0);
  CHECK(max_rel_error(y, reference_of(*s, x, n, [&](uint32_t l) { return layer_config(l, true); })) < 5e-5);
  // Without the sinks the same weights give another result: the reference that drops them is far off.
  CHECK(max_rel_error(y, reference_of(*s, x, n, [&](uint32_t l) { return layer_config(l, false); })) > 1e-2);
  delete s;
}

// StreamingLLM in small: the mixed stack's sliding layers keep 3 sink tokens through a window of
// 24, and every layer adds ALiBi (two of them also rotate): 500 tokens, the sliding layers'
// rings wrapping ~15 times, each layer against the reference that keeps the whole history (whose
// cost grows with the square of the length: under qemu 1500 tokens took 80 s).
Config streaming_config() {
  Config c = mixed_config();
  c.max_seq = 2048;
  c.sink_tokens = 3;
  c.alibi = true;
  return c;
}

TEST_CASE("Session with sink tokens and ALiBi: 500 tokens past the window, against the reference") {
  const Config c = streaming_config();
  PlanOptions o;
  o.max_tokens = 8;
  Stack* s = make_stack(c, o);
  CHECK(s->plan.layer(0).kv_rows == 3 + kWindow + 7);  // the sink tokens' rows, then the ring
  CHECK(s->plan.layer(1).kv_rows == 2048);
  auto layer_config = [&](uint32_t l, uint32_t sink_tokens) {
    Config lc = reference_config(l);
    lc.max_seq = c.max_seq;
    lc.sink_tokens = l % 2 == 0 ? sink_tokens : 0;
    lc.alibi = true;
    return lc;
  };
  const uint32_t n = 500;
  const std::vector<float> x = random_x(n, c.d_model, 29);
  std::vector<float> y(x.size());
  HeapCount count;
  REQUIRE(s->session.prefill(x.data(), n, y.data()).ok());
  CHECK(count.stop() == 0);
  CHECK(max_rel_error(y, reference_of(*s, x, n, [&](uint32_t l) { return layer_config(l, 3); })) < 5e-5);
  // The same stack without sink tokens is another model: the sink keys carry weight.
  CHECK(max_rel_error(y, reference_of(*s, x, n, [&](uint32_t l) { return layer_config(l, 0); })) > 1e-3);
  delete s;
}

TEST_CASE("Session with sink tokens and ALiBi: prefill in chunks equals token-by-token decode past the wrap") {
  check_prefill_equals_decode(streaming_config(), 400, 37, 31);
}

TEST_CASE("Session with sink logits (gpt-oss-like, YaRN): prefill in chunks equals token-by-token decode") {
  Config c = gpt_oss_like();
  c.rope.theta = 150000.0f;
  c.rope.scaling = RopeScaling::kYarn;
  c.rope.factor = 32.0f;
  c.rope.original_max_seq = 64;
  c.rope.yarn_truncate = false;
  check_prefill_equals_decode(c, 200, 5, 23);
}

}  // namespace
}  // namespace headway
