// How the layers of a GGUF differ, as llama.cpp applies them per architecture: Gemma 2 (even
// layers slide), Gemma 3 (five of six slide, at base 10000 or rope.freq_base_swa), Cohere2 (its
// full layers have no RoPE), gpt-oss (alternating, with sink logits); each checked layer by layer
// against the same model's config.json; and the errors of malformed per-layer keys.
#include <doctest/doctest.h>

#include <cstring>
#include <string>
#include <vector>

#include "headway/config.hpp"
#include "headway/tools/model_files.hpp"
#include "headway/plan.hpp"
#include "tests/formats/gguf_parse.hpp"
#include "tests/formats/gguf_writer.hpp"

namespace headway {
namespace {

using test::GgufWriter;
using namespace test::gguf_types;

using test::parse_error;
using test::parse_ok;

bool contains(const Status& s, const char* part) { return std::strstr(s.message(), part) != nullptr; }
#define CHECK_HAS(status, part) CHECK_MESSAGE(contains(status, part), std::string((status).message()))

Config hf_config(const char* name) {
  const std::string path = std::string(HEADWAY_TEST_DATA) + "/hf/" + name;
  const Result<Config> c = load_hf_config(path.c_str());
  REQUIRE_MESSAGE(c.ok(), std::string(c.status().message()));
  return *c;
}

// What both readers decide: the shape, scale, biases and sinks, and layer by layer which layers
// slide, at what window, which rotate and at what base. (The RoPE pairing and the q/k norm offset
// are each file's own: a GGUF stores rows as llama.cpp rotates them and has added the offset to
// its weights. RoPE scaling has its own test, gguf_rope_scaling_test.cc.)
void check_same_layers(const Config& gguf, const Config& hf) {
  REQUIRE(gguf.n_layers == hf.n_layers);
  CHECK(gguf.d_model == hf.d_model);
  CHECK(gguf.n_heads == hf.n_heads);
  CHECK(gguf.kv_heads() == hf.kv_heads());
  CHECK(gguf.head_size() == hf.head_size());
  CHECK(gguf.max_seq == hf.max_seq);
  CHECK(gguf.logit_scale() == hf.logit_scale());
  CHECK(gguf.softcap == hf.softcap);
  CHECK(gguf.qkv_bias == hf.qkv_bias);
  CHECK(gguf.o_bias == hf.o_bias);
  CHECK(gguf.qk_norm == hf.qk_norm);
  CHECK(gguf.sinks == hf.sinks);
  for (uint32_t i = 0; i < gguf.n_layers; ++i) {
    INFO("layer " << i);
    const Config g = gguf.layer_alone(i);
    const Config h = hf.layer_alone(i);
    CHECK(g.window == h.window);
    CHECK((g.rope.style == RopeStyle::kNone) == (h.rope.style == RopeStyle::kNone));
    CHECK(g.rope.theta == h.rope.theta);
  }
}

// Gemma 3 1B as llama.cpp's converter writes it (no rope.freq_base_swa).
GgufWriter gemma3_1b() {
  GgufWriter w;
  w.str("general.architecture", "gemma3")
      .u32kv("gemma3.context_length", 32768)
      .u32kv("gemma3.embedding_length", 1152)
      .u32kv("gemma3.block_count", 26)
      .u32kv("gemma3.attention.head_count", 4)
      .u32kv("gemma3.attention.head_count_kv", 1)
      .u32kv("gemma3.attention.key_length", 256)
      .u32kv("gemma3.attention.value_length", 256)
      .f32kv("gemma3.rope.freq_base", 1000000.0f)
      .f32kv("gemma3.attention.layer_norm_rms_epsilon", 1e-6f);
  return w;
}

GgufWriter gemma2_2b() {
  GgufWriter w;
  w.str("general.architecture", "gemma2")
      .u32kv("gemma2.context_length", 8192)
      .u32kv("gemma2.embedding_length", 2304)
      .u32kv("gemma2.block_count", 26)
      .u32kv("gemma2.attention.head_count", 8)
      .u32kv("gemma2.attention.head_count_kv", 4)
      .u32kv("gemma2.attention.key_length", 256)
      .u32kv("gemma2.attention.value_length", 256)
      .f32kv("gemma2.attn_logit_softcapping", 50.0f);
  return w;
}

GgufWriter gpt_oss_20b() {
  GgufWriter w;
  w.str("general.architecture", "gpt-oss")
      .u32kv("gpt-oss.context_length", 131072)
      .u32kv("gpt-oss.embedding_length", 2880)
      .u32kv("gpt-oss.block_count", 24)
      .u32kv("gpt-oss.attention.head_count", 64)
      .u32kv("gpt-oss.attention.head_count_kv", 8)
      .u32kv("gpt-oss.attention.key_length", 64)
      .u32kv("gpt-oss.attention.value_length", 64)
      .f32kv("gpt-oss.rope.freq_base", 150000.0f);
  return w;
}

// Command R7B's attention with 8 layers (the config.json of the Cohere2 case in
// hf_layer_kinds_test.cc).
GgufWriter cohere2_8_layers() {
  GgufWriter w;
  w.str("general.architecture", "cohere2")
      .u32kv("cohere2.context_length", 8192)
      .u32kv("cohere2.embedding_length", 4096)
      .u32kv("cohere2.block_count", 8)
      .u32kv("cohere2.attention.head_count", 32)
      .u32kv("cohere2.attention.head_count_kv", 8)
      .f32kv("cohere2.rope.freq_base", 50000.0f);
  return w;
}

TEST_CASE("gguf layers: Gemma 2 slides on its even layers, with 4096 where the file names no window") {
  GgufWriter w = gemma2_2b();
  w.u32kv("gemma2.attention.sliding_window", 4096);
  const Config c = parse_ok(w);
  CHECK(c.layers.sliding_pattern == 2);
  for (uint32_t i = 0; i < 26; ++i) {
    INFO("layer " << i);
    CHECK(c.layer_slides(i) == (i % 2 == 0));
    CHECK(c.layer_rotates(i));
    CHECK(c.layer_rope_theta(i) == 10000.0f);
  }
  CHECK_FALSE(c.sinks);
  check_same_layers(c, hf_config("gemma-2-2b.json"));
  const Config no_key = parse_ok(gemma2_2b());  // llama.cpp's default window for gemma2
  CHECK(no_key.window == 4096);
  CHECK(no_key.layers.sliding_pattern == 2);
}

TEST_CASE("gguf layers: Gemma 3 1B slides on five of six layers at base 10000") {
  GgufWriter w = gemma3_1b();
  w.u32kv("gemma3.attention.sliding_window", 512);
  const Config c = parse_ok(w);
  CHECK(c.qk_norm);
  CHECK(c.qk_norm_offset == 0.0f);  // the converter stores Gemma's 1 + w
  CHECK(c.rope.style == RopeStyle::kNeox);
  CHECK(c.layers.sliding_pattern == 6);
  CHECK(c.layers.local_rope_theta == 10000.0f);
  for (uint32_t i = 0; i < 26; ++i) {
    INFO("layer " << i);
    const bool full = i % 6 == 5;
    CHECK(c.layer_slides(i) == !full);
    CHECK(c.layer_rope_theta(i) == (full ? 1000000.0f : 10000.0f));
  }
  check_same_layers(c, hf_config("gemma-3-1b.json"));
  const Result<Plan> p = make_plan(c);
  REQUIRE_MESSAGE(p.ok(), std::string(p.status().message()));
  CHECK(p->sliding_layers == 22);  // and 4 full caches
}

TEST_CASE("gguf layers: Gemma 3 reads rope.freq_base_swa and sliding_window_pattern where present") {
  GgufWriter w = gemma3_1b();
  w.u32kv("gemma3.attention.sliding_window", 512)
      .f32kv("gemma3.rope.freq_base_swa", 20000.0f)
      .u32kv("gemma3.attention.sliding_window_pattern", 4);
  const Config c = parse_ok(w);
  CHECK(c.layers.sliding_pattern == 4);
  CHECK(c.layer_slides(2));
  CHECK_FALSE(c.layer_slides(3));
  CHECK(c.layer_rope_theta(2) == 20000.0f);
  CHECK(c.layer_rope_theta(3) == 1000000.0f);
  // A sliding base equal to the full layers' is no separate base.
  GgufWriter same = gemma3_1b();
  same.u32kv("gemma3.attention.sliding_window", 512).f32kv("gemma3.rope.freq_base_swa", 1000000.0f);
  CHECK(parse_ok(same).layers.local_rope_theta == 0.0f);
}

TEST_CASE("gguf layers: Gemma 3 without a window has full layers only") {
  const Config c = parse_ok(gemma3_1b());
  CHECK(c.window == 0);
  CHECK(c.layers.sliding_pattern == 0);
  CHECK(c.layers.local_rope_theta == 0.0f);
  for (uint32_t i = 0; i < 26; ++i) CHECK_FALSE(c.layer_slides(i));
}

TEST_CASE("gguf layers: Gemma 3 27B scales queries by d_model / heads") {
  GgufWriter w;
  w.str("general.architecture", "gemma3")
      .u32kv("gemma3.context_length", 131072)
      .u32kv("gemma3.embedding_length", 5376)
      .u32kv("gemma3.block_count", 62)
      .u32kv("gemma3.attention.head_count", 32)
      .u32kv("gemma3.attention.head_count_kv", 16)
      .u32kv("gemma3.attention.key_length", 128)
      .u32kv("gemma3.attention.sliding_window", 1024);
  CHECK(parse_ok(w).query_pre_attn_scalar == 168.0f);
  CHECK(parse_ok(gemma3_1b()).query_pre_attn_scalar == 0.0f);
}

TEST_CASE("gguf layers: Cohere2 rotates only its sliding layers, adjacent pairs as llama.cpp") {
  GgufWriter w = cohere2_8_layers();
  w.u32kv("cohere2.attention.sliding_window", 4096);
  const Config c = parse_ok(w);
  CHECK(c.layers.sliding_pattern == 4);
  for (uint32_t i = 0; i < 8; ++i) {
    INFO("layer " << i);
    const bool full = (i + 1) % 4 == 0;
    CHECK(c.layer_slides(i) == !full);
    CHECK(c.layer_rope(i).style == (full ? RopeStyle::kNone : RopeStyle::kGptj));
  }
  const std::string text = R"({"model_type": "cohere2", "hidden_size": 4096, "num_attention_heads": 32,
      "num_key_value_heads": 8, "num_hidden_layers": 8, "max_position_embeddings": 8192,
      "sliding_window": 4096, "sliding_window_pattern": 4, "rope_theta": 50000})";
  const Result<Config> hf = parse_hf_config(text.data(), text.size());
  REQUIRE_MESSAGE(hf.ok(), std::string(hf.status().message()));
  check_same_layers(c, *hf);
  CHECK(c.layers.rope.count == hf->layers.rope.count);
  for (uint32_t i = 0; i < 8; ++i) {
    CHECK(c.layers.rope.get(i) == hf->layers.rope.get(i));
    CHECK(c.layer_rope(i).style == hf->layer_rope(i).style);  // adjacent pairs in both
  }
  // llama.cpp needs the window of a Cohere2 file.
  const Status s = parse_error(cohere2_8_layers());
  CHECK(s.code() == Code::kNotFound);
  CHECK_HAS(s, "no cohere2.attention.sliding_window");
}

TEST_CASE("gguf layers: gpt-oss alternates sliding and full layers and has sink logits") {
  GgufWriter w = gpt_oss_20b();
  w.u32kv("gpt-oss.attention.sliding_window", 128);
  const Config c = parse_ok(w);
  CHECK(c.sinks);
  CHECK(c.qkv_bias);
  CHECK(c.o_bias);
  CHECK(c.rope.style == RopeStyle::kNeox);
  for (uint32_t i = 0; i < 24; ++i) {
    INFO("layer " << i);
    CHECK(c.layer_slides(i) == (i % 2 == 0));
    CHECK(c.layer_rope_theta(i) == 150000.0f);
  }
  check_same_layers(c, hf_config("gpt-oss-20b.json"));
  const Result<Plan> p = make_plan(c);
  REQUIRE_MESSAGE(p.ok(), std::string(p.status().message()));
  CHECK(p->layer(0).sinks);
  CHECK(p->layer(0).window == 128);
  CHECK(p->layer(1).window == 0);
  const Status s = parse_error(gpt_oss_20b());
  CHECK_HAS(s, "no gpt-oss.attention.sliding_window");
}

TEST_CASE("gguf layers: architectures without sliding layers ignore the per-layer keys") {
  GgufWriter w;
  w.str("general.architecture", "qwen2")
      .u32kv("qwen2.context_length", 32768)
      .u32kv("qwen2.embedding_length", 896)
      .u32kv("qwen2.block_count", 24)
      .u32kv("qwen2.attention.head_count", 14)
      .u32kv("qwen2.attention.head_count_kv", 2)
      .f32kv("qwen2.rope.freq_base_swa", 20000.0f)
      .u32kv("qwen2.attention.sliding_window_pattern", 0);
  const Config c = parse_ok(w);
  CHECK(c.window == 0);
  CHECK(c.layers.sliding_pattern == 0);
  CHECK(c.layers.local_rope_theta == 0.0f);
  CHECK(c.layers.sliding.count == 0);
  CHECK(c.layers.rope.count == 0);
  CHECK_FALSE(c.sinks);
}

TEST_CASE("gguf layers: malformed per-layer keys name the key and the value") {
  GgufWriter w = gemma3_1b();
  w.u32kv("gemma3.attention.sliding_window", 512);
  SUBCASE("a pattern of 0") {
    w.u32kv("gemma3.attention.sliding_window_pattern", 0);
    const Status s = parse_error(w);
    CHECK(s.code() == Code::kInvalidArgument);
    CHECK_HAS(s, "gemma3.attention.sliding_window_pattern is 0, expected a positive integer");
  }
  SUBCASE("a pattern given per layer") {
    w.u32_array("gemma3.attention.sliding_window_pattern", std::vector<uint32_t>(26, 1));
    const Status s = parse_error(w);
    CHECK(s.code() == Code::kUnsupported);
    CHECK_HAS(s, "gemma3.attention.sliding_window_pattern is an array");
  }
  SUBCASE("a string freq_base_swa") {
    w.str("gemma3.rope.freq_base_swa", "10000");
    const Status s = parse_error(w);
    CHECK(s.code() == Code::kInvalidArgument);
    CHECK_HAS(s, "gemma3.rope.freq_base_swa has type string, expected a number");
  }
  SUBCASE("a negative freq_base_swa") {
    w.f32kv("gemma3.rope.freq_base_swa", -1.0f);
    CHECK_HAS(parse_error(w), "gemma3.rope.freq_base_swa is -1, expected a positive finite number");
  }
  SUBCASE("Cohere2 deeper than a per-layer list holds") {
    GgufWriter deep;
    deep.str("general.architecture", "cohere2")
        .u32kv("cohere2.context_length", 8192)
        .u32kv("cohere2.embedding_length", 4096)
        .u32kv("cohere2.block_count", kMaxConfigLayers + 4)
        .u32kv("cohere2.attention.head_count", 32)
        .u32kv("cohere2.attention.sliding_window", 4096);
    const Status s = parse_error(deep);
    CHECK(s.code() == Code::kUnsupported);
    CHECK_HAS(s, "cohere2.block_count is 132");
  }
}

}  // namespace
}  // namespace headway
