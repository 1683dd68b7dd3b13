// How the layers of real config.json files differ, read and planned: Gemma 2 (even layers
// slide), Gemma 3 (five of six slide, at their own RoPE base), SmolLM3 (every fourth layer has no
// RoPE), gpt-oss (alternating, with sink logits), Qwen2/Qwen3 (layers from max_window_layers,
// default 28, slide; Qwen2-MoE's even layers below it),
// Cohere2 (its full layers have no RoPE); and the errors of malformed per-layer keys.
#include <doctest/doctest.h>

#include <cstring>
#include <string>

#include "headway/config.hpp"
#include "headway/tools/model_files.hpp"
#include "headway/plan.hpp"

namespace headway {
namespace {

Plan plan_of(const char* name) {
  const std::string path = std::string(HEADWAY_TEST_DATA) + "/hf/" + name;
  INFO(path);
  const Result<Config> c = load_hf_config(path.c_str());
  REQUIRE_MESSAGE(c.ok(), std::string(c.status().message()));
  const Result<Plan> p = make_plan(*c);
  REQUIRE_MESSAGE(p.ok(), std::string(p.status().message()));
  return *p;
}

Status parse_error(const std::string& text) {
  const Result<Config> r = parse_hf_config(text.data(), text.size());
  if (r.ok()) return validate(*r);
  return r.status();
}

bool contains(const Status& s, const char* part) { return std::strstr(s.message(), part) != nullptr; }
#define CHECK_HAS(status, part) CHECK_MESSAGE(contains(status, part), std::string((status).message()))

// A small Gemma-2-like config with `extra` spliced in (beginning with a comma).
std::string with(const std::string& extra) {
  return R"({"model_type": "llama", "hidden_size": 512, "num_attention_heads": 8, "num_hidden_layers": 4,
             "max_position_embeddings": 4096, "sliding_window": 256)" +
         extra + "}";
}

uint64_t sum_of_layers(const Plan& p) {
  uint64_t s = 0;
  for (uint32_t i = 0; i < p.config.n_layers; ++i) s += p.layer(i).kv_bytes;
  return s;
}

TEST_CASE("hf layers: Gemma 2 2B slides on its even layers only") {
  const Plan p = plan_of("gemma-2-2b.json");
  CHECK(p.config.layers.sliding_pattern == 2);
  CHECK(p.sliding_layers == 13);
  for (uint32_t i = 0; i < 26; ++i) {
    INFO("layer " << i);
    const LayerPlan l = p.layer(i);
    CHECK(l.sliding == (i % 2 == 0));
    CHECK(l.window == (i % 2 == 0 ? 4096u : 0u));
    CHECK(l.rope == RopeStyle::kNeox);
    CHECK(l.rope_theta == 10000.0f);
    // 8192 positions; the ring of 4096 + 511 rows for the sliding ones; 4 kv heads × 256 × f16 × K,V
    CHECK(l.kv_rows == (i % 2 == 0 ? 4096u + 511u : 8192u));
    CHECK(l.kv_bytes == uint64_t{l.kv_rows} * 4 * 256 * 2 * 2);
  }
  CHECK(p.kv_cache_bytes == sum_of_layers(p));
  CHECK(p.cache_rows == 8192);
}

TEST_CASE("hf layers: Gemma 3 1B slides 5 of every 6 layers at base 10000, full ones at 1e6") {
  const Plan p = plan_of("gemma-3-1b.json");
  CHECK(p.sliding_layers == 22);
  for (uint32_t i = 0; i < 26; ++i) {
    INFO("layer " << i);
    const LayerPlan l = p.layer(i);
    const bool full = (i + 1) % 6 == 0;
    CHECK(l.sliding == !full);
    CHECK(l.window == (full ? 0u : 512u));
    CHECK(l.rope_theta == (full ? 1000000.0f : 10000.0f));
    CHECK(l.kv_rows == (full ? 32768u : 512u + 511u));
  }
  // 4 full caches and 22 rings: 1 kv head × 256 dims × f16 × K,V.
  CHECK(p.kv_cache_bytes == 4ull * 32768 * 1024 + 22ull * 1023 * 1024);
  CHECK(p.kv_cache_bytes == sum_of_layers(p));
}

TEST_CASE("hf layers: Gemma 3 270M's layer_types list says the same as the pattern") {
  const Plan p = plan_of("gemma-3-270m.json");
  CHECK(p.config.layers.sliding.count == 18);
  CHECK(p.sliding_layers == 15);
  for (uint32_t i = 0; i < 18; ++i) {
    INFO("layer " << i);
    CHECK(p.layer(i).sliding == ((i + 1) % 6 != 0));
    CHECK(p.layer(i).rope_theta == ((i + 1) % 6 != 0 ? 10000.0f : 1000000.0f));
  }
}

TEST_CASE("hf layers: SmolLM3 3B has no RoPE on every fourth layer and no window") {
  const Plan p = plan_of("smollm3-3b.json");
  CHECK(p.config.window == 0);
  CHECK(p.sliding_layers == 0);
  for (uint32_t i = 0; i < 36; ++i) {
    INFO("layer " << i);
    const LayerPlan l = p.layer(i);
    CHECK_FALSE(l.sliding);
    CHECK(l.rope == ((i + 1) % 4 == 0 ? RopeStyle::kNone : RopeStyle::kNeox));
    CHECK(l.rope_theta == ((i + 1) % 4 == 0 ? 0.0f : 5000000.0f));
    CHECK(l.kv_rows == 65536);
  }
}

TEST_CASE("hf layers: gpt-oss-20b alternates sliding 128 and full, and has sink logits") {
  const Plan p = plan_of("gpt-oss-20b.json");
  CHECK(p.config.sinks);
  CHECK(p.config.rope.scaling == RopeScaling::kYarn);
  CHECK(p.config.rope.factor == 32.0f);
  CHECK(p.config.rope.original_max_seq == 4096);
  CHECK_FALSE(p.config.rope.yarn_truncate);
  CHECK(p.sliding_layers == 12);
  for (uint32_t i = 0; i < 24; ++i) {
    INFO("layer " << i);
    const LayerPlan l = p.layer(i);
    CHECK(l.sliding == (i % 2 == 0));
    CHECK(l.window == (i % 2 == 0 ? 128u : 0u));
    CHECK(l.sinks);
    CHECK(l.kv_rows == (i % 2 == 0 ? 128u + 511u : 131072u));
  }
}

TEST_CASE("hf layers: Qwen2 slides from max_window_layers on, and not at all with the flag off") {
  const Plan p = plan_of("qwen2-0.5b-sliding.json");
  for (uint32_t i = 0; i < 24; ++i) {
    INFO("layer " << i);
    CHECK(p.layer(i).sliding == (i >= 21));
  }
  CHECK(plan_of("qwen2.5-0.5b.json").sliding_layers == 0);
  // max_window_layers at or past the layer count: none slides.
  const std::string text = with(R"(, "use_sliding_window": true, "max_window_layers": 4)");
  const Result<Config> all_full = parse_hf_config(text.data(), text.size());
  REQUIRE(all_full.ok());
  CHECK(all_full->window == 0);
}

// A Qwen-family config of `layers` layers with a window switched on, `extra` spliced in.
Config qwen(const char* model_type, uint32_t layers, const std::string& extra) {
  const std::string text =
      std::string(R"({"model_type": ")") + model_type +
      R"(", "hidden_size": 512, "num_attention_heads": 8, "num_hidden_layers": )" + std::to_string(layers) +
      R"(, "max_position_embeddings": 32768, "sliding_window": 4096, "use_sliding_window": true)" + extra + "}";
  const Result<Config> c = parse_hf_config(text.data(), text.size());
  REQUIRE_MESSAGE(c.ok(), std::string(c.status().message()));
  return *c;
}

TEST_CASE("hf layers: Qwen2 and Qwen3 without max_window_layers take Qwen2Config's 28") {
  for (const char* type : {"qwen2", "qwen3"}) {
    INFO(type);
    const Config c = qwen(type, 36, "");
    CHECK(c.window == 4096);
    for (uint32_t i = 0; i < 36; ++i) CHECK(c.layer_slides(i) == (i >= 28));
    CHECK(qwen(type, 24, "").window == 0);  // 28 is past the last layer: all full
  }
  // Model types without the key slide everywhere, as before.
  const Config other = qwen("mistral", 36, "");
  for (uint32_t i = 0; i < 36; ++i) CHECK(other.layer_slides(i));
}

TEST_CASE("hf layers: Qwen2-VL and Qwen2.5-VL default max_window_layers to 80 and the window off") {
  for (const char* type : {"qwen2_vl", "qwen2_vl_text", "qwen2_5_vl", "qwen2_5_vl_text"}) {
    INFO(type);
    const Config c = qwen(type, 84, "");
    CHECK(c.window == 4096);
    for (uint32_t i = 0; i < 84; ++i) CHECK(c.layer_slides(i) == (i >= 80));
    CHECK(qwen(type, 36, "").window == 0);  // 80 is past the last layer: all full
    CHECK(c.qkv_bias);
    // Qwen2-VL-2B's config.json: a sliding_window written, use_sliding_window false.
    const std::string text = std::string(R"({"model_type": ")") + type +
                             R"(", "hidden_size": 1536, "num_attention_heads": 12, "num_hidden_layers": 28,
        "num_key_value_heads": 2, "max_position_embeddings": 32768, "sliding_window": 32768})";
    const Result<Config> off = parse_hf_config(text.data(), text.size());
    REQUIRE_MESSAGE(off.ok(), std::string(off.status().message()));
    CHECK(off->window == 0);
  }
  // In a wrapper's text_config, the text model's type decides.
  const std::string wrapped = R"({"model_type": "qwen2_5_vl", "text_config": {"model_type": "qwen2_5_vl_text",
      "hidden_size": 2048, "num_attention_heads": 16, "num_hidden_layers": 36, "num_key_value_heads": 2,
      "max_position_embeddings": 128000, "sliding_window": 32768, "use_sliding_window": true}})";
  const Result<Config> w = parse_hf_config(wrapped.data(), wrapped.size());
  REQUIRE_MESSAGE(w.ok(), std::string(w.status().message()));
  CHECK(w->window == 0);  // 80 >= 36 layers: none slides
  CHECK(w->qkv_bias);
}

TEST_CASE("hf layers: Qwen2-MoE slides on its even layers below max_window_layers, Qwen3-MoE on all") {
  const Config c = qwen("qwen2_moe", 8, R"(, "max_window_layers": 5)");
  for (uint32_t i = 0; i < 8; ++i) CHECK(c.layer_slides(i) == (i % 2 == 0 && i < 5));
  const Config all_even = qwen("qwen2_moe", 24, "");  // the default 28 reaches every layer
  CHECK(all_even.layers.sliding_pattern == 2);
  for (uint32_t i = 0; i < 24; ++i) CHECK(all_even.layer_slides(i) == (i % 2 == 0));
  CHECK(qwen("qwen2_moe", 8, R"(, "max_window_layers": 0)").window == 0);
  const Config moe3 = qwen("qwen3_moe", 8, R"(, "max_window_layers": 4)");  // Qwen3MoeConfig has no such key
  for (uint32_t i = 0; i < 8; ++i) CHECK(moe3.layer_slides(i));
}

TEST_CASE("hf layers: Qwen2, Qwen3 and SmolLM3 without use_sliding_window keep every layer full") {
  for (const char* type : {"qwen2", "qwen3", "qwen2_moe", "qwen3_moe", "smollm3"}) {
    INFO(type);
    const std::string text = std::string(R"({"model_type": ")") + type +
                             R"(", "hidden_size": 512, "num_attention_heads": 8, "num_hidden_layers": 8,
        "max_position_embeddings": 32768, "sliding_window": 4096})";
    const Result<Config> c = parse_hf_config(text.data(), text.size());
    REQUIRE_MESSAGE(c.ok(), std::string(c.status().message()));
    CHECK(c->window == 0);  // their configs default the flag to false
  }
  CHECK(qwen("mistral", 8, "").window == 4096);  // no such flag: the window applies as written
}

TEST_CASE("hf layers: SmolLM3 with use_sliding_window slides its NoPE layers only") {
  const Config c = qwen("smollm3", 8, R"(, "no_rope_layer_interval": 4)");
  CHECK(c.window == 4096);
  for (uint32_t i = 0; i < 8; ++i) {
    INFO("layer " << i);
    const bool nope = (i + 1) % 4 == 0;
    CHECK(c.layer_slides(i) == nope);
    CHECK(c.layer_rotates(i) == !nope);
  }
  // Every layer rotating: none slides.
  CHECK(qwen("smollm3", 8, R"(, "no_rope_layers": [1, 1, 1, 1, 1, 1, 1, 1])").window == 0);
  // layer_types, where written, decides.
  const Config listed = qwen("smollm3", 4, R"(, "no_rope_layer_interval": 4,
      "layer_types": ["sliding_attention", "full_attention", "full_attention", "full_attention"])");
  CHECK(listed.layer_slides(0));
  CHECK_FALSE(listed.layer_slides(3));
}

TEST_CASE("hf layers: Gemma 3 without RoPE keys takes Gemma3TextConfig's bases, 1e6 full and 10000 sliding") {
  const std::string text = R"({"model_type": "gemma3_text", "hidden_size": 1152, "num_attention_heads": 4,
      "num_key_value_heads": 1, "head_dim": 256, "num_hidden_layers": 12, "max_position_embeddings": 32768,
      "sliding_window": 512})";
  const Result<Config> c = parse_hf_config(text.data(), text.size());
  REQUIRE_MESSAGE(c.ok(), std::string(c.status().message()));
  for (uint32_t i = 0; i < 12; ++i) {
    INFO("layer " << i);
    const bool full = (i + 1) % 6 == 0;
    CHECK(c->layer_slides(i) == !full);
    CHECK(c->layer_rope_theta(i) == (full ? 1000000.0f : 10000.0f));
  }
}

TEST_CASE("hf layers: Cohere2 rotates only its sliding layers, adjacent pairs (its rotate_half interleaves)") {
  const std::string text = R"({"model_type": "cohere2", "hidden_size": 4096, "num_attention_heads": 32,
      "num_key_value_heads": 8, "num_hidden_layers": 8, "max_position_embeddings": 8192,
      "sliding_window": 4096, "sliding_window_pattern": 4, "rope_theta": 50000})";
  const Result<Config> c = parse_hf_config(text.data(), text.size());
  REQUIRE_MESSAGE(c.ok(), std::string(c.status().message()));
  const Result<Plan> p = make_plan(*c);
  REQUIRE_MESSAGE(p.ok(), std::string(p.status().message()));
  for (uint32_t i = 0; i < 8; ++i) {
    INFO("layer " << i);
    const bool full = (i + 1) % 4 == 0;
    CHECK(p->layer(i).sliding == !full);
    CHECK(p->layer(i).rope == (full ? RopeStyle::kNone : RopeStyle::kGptj));
  }
}

TEST_CASE("hf layers: malformed per-layer keys name the key and the value") {
  Status s = parse_error(with(R"(, "layer_types": ["sliding_attention", "full_attention"])"));
  CHECK(s.code() == Code::kInvalidArgument);
  CHECK_HAS(s, "layer_types has 2 entries, num_hidden_layers is 4");
  s = parse_error(with(R"(, "layer_types": ["sliding_attention", "full_attention", "local", "full_attention"])"));
  CHECK_HAS(s, "layer_types[2] is \"local\"");
  s = parse_error(
      with(R"(, "layer_types": ["chunked_attention", "full_attention", "full_attention", "full_attention"])"));
  CHECK(s.code() == Code::kUnsupported);
  CHECK_HAS(s, "chunked_attention");
  s = parse_error(with(R"(, "sliding_window_pattern": 0)"));
  CHECK_HAS(s, "sliding_window_pattern is 0");
  s = parse_error(with(R"(, "no_rope_layers": [1, 1, 2, 1])"));
  CHECK_HAS(s, "no_rope_layers[2] is 2");
  s = parse_error(with(R"(, "no_rope_layers": [1, 1, 1])"));
  CHECK_HAS(s, "no_rope_layers has 3 entries");
  s = parse_error(with(R"(, "layer_types": "sliding_attention")"));
  CHECK_HAS(s, "layer_types is \"sliding_attention\" (a string)");
  s = parse_error(with(R"(, "rope_local_base_freq": -1)"));
  CHECK_HAS(s, "rope_local_base_freq is -1");
  // Sliding layers with no window to slide with.
  s = parse_error(R"({"model_type": "llama", "hidden_size": 512, "num_attention_heads": 8, "num_hidden_layers": 2,
      "max_position_embeddings": 4096, "layer_types": ["sliding_attention", "full_attention"]})");
  CHECK_HAS(s, "sliding_window is 0");
}

}  // namespace
}  // namespace headway
