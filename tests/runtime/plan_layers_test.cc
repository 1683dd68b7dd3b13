// Per-layer plans: which layers slide and rotate (LayerKinds), each layer's KV rows, bytes and
// offset, their sum, the spec keys that say it, and validate()'s messages for bad kinds.
#include <doctest/doctest.h>

#include <cstring>
#include <string>

#include "headway/config.hpp"
#include "headway/plan.hpp"
#include "headway/presets.hpp"

namespace headway {
namespace {

// A Gemma-3-shaped config as a constexpr value: 12 layers, every 6th full, base 10000 sliding.
constexpr Config gemma3_like() {
  Config c;
  c.d_model = 1152;
  c.n_heads = 4;
  c.n_kv_heads = 1;
  c.head_dim = 256;
  c.max_seq = 32768;
  c.n_layers = 12;
  c.rope.style = RopeStyle::kNeox;
  c.rope.theta = 1000000.0f;
  c.window = 512;
  c.layers.sliding_pattern = 6;
  c.layers.local_rope_theta = 10000.0f;
  return c;
}

constexpr Plan kGemma3 = plan_for(gemma3_like(), {});
static_assert(kGemma3.sliding_layers == 10);
static_assert(kGemma3.layer(0).sliding && !kGemma3.layer(5).sliding && !kGemma3.layer(11).sliding);
static_assert(kGemma3.layer(5).rope_theta == 1000000.0f && kGemma3.layer(4).rope_theta == 10000.0f);
static_assert(kGemma3.layer(5).kv_rows == 32768 && kGemma3.layer(4).kv_rows == 512 + 511);
static_assert(kGemma3.kv_cache_bytes == 2ull * 32768 * 1024 + 10ull * 1023 * 1024);

// The same with 4 sink tokens on its sliding layers and ALiBi: each ring holds 4 rows more, the
// full layers none; the slopes take one region of n_heads floats after the sinks.
constexpr Config streaming_like() {
  Config c = gemma3_like();
  c.sink_tokens = 4;
  c.alibi = true;
  return c;
}
constexpr Plan kStreaming = plan_for(streaming_like(), {});
static_assert(kStreaming.layer(4).kv_rows == 4 + 512 + 511 && kStreaming.layer(4).sink_tokens == 4);
static_assert(kStreaming.layer(5).kv_rows == 32768 && kStreaming.layer(5).sink_tokens == 0);
static_assert(kStreaming.kv_cache_bytes == 2ull * 32768 * 1024 + 10ull * 1027 * 1024);
static_assert(kStreaming.layer(0).alibi && kStreaming.alibi_bytes == 64);
static_assert(kStreaming.alibi_offset == kStreaming.sinks_offset + kStreaming.sinks_bytes);
static_assert(kStreaming.activations_offset == kStreaming.alibi_offset + 64);
static_assert(layer_plan(kStreaming, 4).config.sink_tokens == 4 && layer_plan(kStreaming, 5).config.sink_tokens == 0);
static_assert(kGemma3.alibi_bytes == 0 && kGemma3.activations_offset == kGemma3.alibi_offset);

uint64_t sum_of_layers(const Plan& p) {
  uint64_t s = 0;
  for (uint32_t i = 0; i < p.config.n_layers; ++i) s += p.layer(i).kv_bytes;
  return s;
}

TEST_CASE("plan layers: offsets follow each other and sum to the KV region") {
  const Plan& p = kGemma3;
  uint64_t next = p.kv_offset;
  for (uint32_t i = 0; i < p.config.n_layers; ++i) {
    INFO("layer " << i);
    const LayerPlan l = p.layer(i);
    CHECK(l.kv_offset == next);
    CHECK(l.kv_offset % kAlignment == 0);
    next += l.kv_bytes;
  }
  CHECK(next == p.rope_offset);
  CHECK(sum_of_layers(p) == p.kv_cache_bytes);
  CHECK(p.cache_rows == 32768);  // the largest layer's
  CHECK(p.kv_bytes_per_layer == p.kv_bytes_full_layer);
}

TEST_CASE("plan layers: a layer's plan narrows the config to that layer") {
  const Plan l0 = layer_plan(kGemma3, 0);
  CHECK(l0.config.window == 512);
  CHECK(l0.config.rope.theta == 10000.0f);
  CHECK(l0.cache_rows == 1023);
  CHECK(l0.kv_bytes_per_layer == kGemma3.layer(0).kv_bytes);
  CHECK(l0.config.layers.sliding_pattern == 0);
  const Plan l5 = layer_plan(kGemma3, 5);
  CHECK(l5.config.window == 0);
  CHECK(l5.config.rope.theta == 1000000.0f);
  CHECK(l5.cache_rows == 32768);
}

TEST_CASE("plan layers: a layer alone keeps its own kind (what `headway layer` plans)") {
  const Config full = gemma3_like().layer_alone(5);
  CHECK(full.n_layers == 1);
  CHECK(full.window == 0);
  CHECK(full.rope.theta == 1000000.0f);
  const Config sliding = gemma3_like().layer_alone(4);
  CHECK(sliding.window == 512);
  CHECK(sliding.rope.theta == 10000.0f);
  CHECK(sliding.layers.sliding_pattern == 0);
  Config nope = gemma3_like();
  nope.layers.nope_interval = 3;
  CHECK(nope.layer_alone(2).rope.style == RopeStyle::kNone);
  CHECK(nope.layer_alone(1).rope.style == RopeStyle::kNeox);
  CHECK(validate(nope.layer_alone(2)).ok());
  // The first n layers: the lists shortened with them.
  Config listed = gemma3_like();
  listed.layers.sliding_pattern = 0;
  listed.layers.sliding.count = 12;
  listed.layers.sliding.set(1, true);
  listed.keep_first_layers(4);
  CHECK(listed.n_layers == 4);
  CHECK(listed.layers.sliding.count == 4);
  CHECK(validate(listed).ok());
}

TEST_CASE("plan layers: models whose layers are alike keep every figure, and each layer's plan is the plan") {
  for (const Config& c : {presets::llama2_7b(), presets::mistral_7b(), presets::phi3_mini(), presets::gpt2_small()}) {
    INFO(c.name);
    const Plan p = plan_for(c, {});
    CHECK(p.kv_cache_bytes == uint64_t{c.n_layers} * p.kv_bytes_per_layer);
    for (uint32_t i : {0u, c.n_layers - 1}) {
      const Plan q = layer_plan(p, i);
      CHECK(q.cache_rows == p.cache_rows);
      CHECK(q.kv_bytes_per_layer == p.kv_bytes_per_layer);
      CHECK(q.config.window == c.window);
      CHECK(q.config.rope.theta == c.rope.theta);
      CHECK(p.layer(i).kv_offset == p.kv_offset + uint64_t{i} * p.kv_bytes_per_layer);
    }
  }
}

TEST_CASE("plan layers: NoPE interval and explicit lists") {
  Result<Config> c = parse_spec("d_model=256 heads=4 ctx=2048 layers=8 rope_theta=10000 nope_interval=4");
  REQUIRE(c.ok());
  Plan p = plan_for(*c, {});
  for (uint32_t i = 0; i < 8; ++i) CHECK(p.layer(i).rope == ((i + 1) % 4 == 0 ? RopeStyle::kNone : RopeStyle::kNeox));
  CHECK(layer_plan(p, 3).rope_bytes_per_layer == 0);
  CHECK(layer_plan(p, 3).config.rope.style == RopeStyle::kNone);

  c = parse_spec("d_model=256 heads=4 ctx=2048 layers=4 window=64 rope=gptj layer_types=sffs rope_layers=1101 sinks=1");
  REQUIRE_MESSAGE(c.ok(), std::string(c.status().message()));
  CHECK(validate(*c).ok());
  p = plan_for(*c, {});
  CHECK(p.layer(0).sliding);
  CHECK_FALSE(p.layer(1).sliding);
  CHECK_FALSE(p.layer(2).sliding);
  CHECK(p.layer(3).sliding);
  CHECK(p.layer(2).rope == RopeStyle::kNone);
  CHECK(p.layer(3).rope == RopeStyle::kGptj);
  CHECK(p.layer(0).sinks);
  CHECK(p.sliding_layers == 2);
  CHECK(sum_of_layers(p) == p.kv_cache_bytes);

  c = parse_spec(
      "d_model=256 heads=4 ctx=2048 layers=4 window=64 rope_theta=1e6 sliding_pattern=2 rope_local_theta=1e4");
  REQUIRE(c.ok());
  p = plan_for(*c, {});
  CHECK(p.layer(0).rope_theta == 10000.0f);
  CHECK(p.layer(1).rope_theta == 1000000.0f);
}

TEST_CASE("plan layers: spec errors name the key and the value") {
  Result<Config> c = parse_spec("d_model=256 heads=4 ctx=64 layers=4 sliding_pattern=0");
  REQUIRE_FALSE(c.ok());
  CHECK(std::string(c.status().message()).find("sliding_pattern=0") != std::string::npos);
  c = parse_spec("d_model=256 heads=4 ctx=64 layers=4 layer_types=sfxs");
  REQUIRE_FALSE(c.ok());
  CHECK(std::string(c.status().message()).find("character 3 is 'x'") != std::string::npos);
  // A list of 128 letters is one value; 129 is too long.
  const std::string list(kMaxConfigLayers, 'f');
  CHECK(parse_spec(("d_model=256 heads=4 ctx=64 layers=128 layer_types=" + list).c_str()).ok());
  c = parse_spec(("d_model=256 heads=4 ctx=64 layers=129 layer_types=f" + list).c_str());
  REQUIRE_FALSE(c.ok());
  CHECK(std::string(c.status().message()).find("longer than 128") != std::string::npos);
}

TEST_CASE("plan layers: validate() names the field and the value") {
  struct Case {
    const char* spec;
    const char* part;
  };
  const Case cases[] = {
      {"layers=4 window=64 layer_types=sff", "layer_types has 3 entries, num_hidden_layers is 4"},
      {"layers=4 rope_theta=1e4 rope_layers=11111", "rope_layers has 5 entries"},
      {"layers=4 layer_types=sfsf", "sliding_window is 0"},
      {"layers=4 sliding_pattern=2", "sliding_window is 0"},
      {"layers=4 window=64 sliding_pattern=2 layer_types=sfsf", "give one"},
      {"layers=4 rope_theta=1e4 nope_interval=2 rope_layers=1010", "give one"},
      {"layers=4 rope=none nope_interval=2", "has none"},
  };
  for (const Case& k : cases) {
    INFO(k.spec);
    const Result<Config> c = parse_spec((std::string("d_model=256 heads=4 ctx=2048 ") + k.spec).c_str());
    REQUIRE_MESSAGE(c.ok(), std::string(c.status().message()));
    const Status s = validate(*c);
    CHECK(s.code() == Code::kInvalidArgument);
    CHECK_MESSAGE(std::strstr(s.message(), k.part) != nullptr, std::string(s.message()));
  }
}

}  // namespace
}  // namespace headway

namespace headway {
namespace {

// Every layer's own plan fits the regions the layers use in turn: its fused row and its
// attention output in the activations, its scratch, its weight slot inside the weights region
// and before the next layer's, its cache inside the KV region. Kinds where each layer's own
// shape differs from the plan's first: MLA's latent rows, the output gate's doubled queries,
// Gemma 4's full layers, shared KV, Gated DeltaNet among attention.
TEST_CASE("plan layers: each layer's own shape fits the shared regions") {
  const char* specs[] = {
      "d_model=256 heads=4 ctx=64 layers=2 kv_lora_rank=512 qk_nope_head_dim=32 qk_rope_head_dim=64 v_head_dim=32",
      "d_model=256 heads=4 kv_heads=2 head_dim=64 ctx=64 layers=2 output_gate=1 qk_norm=1",
      "d_model=64 heads=4 kv_heads=2 head_dim=16 ctx=64 layers=6 window=8 layer_types=sfssfs kv_shared_layers=3 "
      "full_head_dim=32 full_kv_heads=1 full_k_eq_v=1 qk_norm=1 v_norm=1 rope_theta=10000",
      "d_model=64 heads=4 kv_heads=2 head_dim=16 ctx=64 layers=4 window=8 layer_types=fssf full_head_dim=64",
      "d_model=128 heads=4 kv_heads=2 head_dim=32 ctx=64 layers=4 linear_layers=1101 linear_key_heads=2 "
      "linear_value_heads=4 linear_key_head_dim=32 linear_value_head_dim=32 linear_conv_kernel=4",
  };
  for (const char* spec : specs) {
    CAPTURE(spec);
    const Result<Config> c = parse_spec(spec);
    REQUIRE_MESSAGE(c.ok(), c.status().message());
    for (const uint32_t max_tokens : {1u, 8u}) {
      PlanOptions o;
      o.max_tokens = max_tokens;
      const Result<Plan> made = make_plan(*c, o);
      REQUIRE_MESSAGE(made.ok(), made.status().message());
      const Plan& p = *made;
      uint64_t kv_end = p.kv_offset;
      for (uint32_t i = 0; i < c->n_layers; ++i) {
        CAPTURE(i);
        const LayerPlan l = p.layer(i);
        CHECK(p.layer_weights_offset(i) + p.layer_weights_slot(i) <= p.weights_offset + p.weights_region_bytes);
        if (l.linear) continue;
        const Plan own = layer_plan(p, i);
        CHECK(uint64_t{p.max_tokens} * own.qkv_width * 4 <= p.attention_out_offset - p.activations_offset);
        CHECK(uint64_t{p.max_tokens} * own.q_width * 4 <= p.block_out_offset - p.attention_out_offset);
        CHECK(attention_scratch_bytes(own.head_dim, own.group_size) <= p.scratch_bytes_per_thread);
        CHECK(l.kv_offset + own.kv_bytes_per_layer <= p.kv_offset + p.kv_cache_bytes);
        if (!l.shares_kv) kv_end = l.kv_offset + l.kv_bytes;
      }
      CHECK(kv_end == p.kv_offset + p.kv_cache_bytes);
    }
  }
}

}  // namespace
}  // namespace headway
