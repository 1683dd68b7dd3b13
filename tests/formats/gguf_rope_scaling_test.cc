// RoPE scaling from GGUF metadata, under llama.cpp's keys ({arch}.rope.scaling.*): YaRN (gpt-oss,
// Qwen 3 long context) read into the same RopeConfig as the model's config.json gives, linear
// (and the older rope.scale_linear), variants headway does not reproduce kept as kOther, and the
// errors of malformed keys.
#include <doctest/doctest.h>

#include <cstring>
#include <string>
#include <vector>

#include "headway/config.hpp"
#include "headway/tools/model_files.hpp"
#include "tests/formats/gguf_parse.hpp"
#include "tests/formats/gguf_writer.hpp"

namespace headway {
namespace {

using test::GgufWriter;

using test::parse_error;
using test::parse_ok;

// gpt-oss-20b as llama.cpp's converter writes it: YaRN factor 32 over an original 4096 positions,
// no betas (llama.cpp's defaults are gpt-oss's).
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
      .u32kv("gpt-oss.attention.sliding_window", 128)
      .f32kv("gpt-oss.rope.freq_base", 150000.0f)
      .str("gpt-oss.rope.scaling.type", "yarn")
      .f32kv("gpt-oss.rope.scaling.factor", 32.0f)
      .u32kv("gpt-oss.rope.scaling.original_context_length", 4096);
  return w;
}

GgufWriter qwen3(const char* scaling_type) {
  GgufWriter w;
  w.str("general.architecture", "qwen3")
      .u32kv("qwen3.context_length", 131072)
      .u32kv("qwen3.embedding_length", 1024)
      .u32kv("qwen3.block_count", 28)
      .u32kv("qwen3.attention.head_count", 16)
      .u32kv("qwen3.attention.head_count_kv", 8)
      .u32kv("qwen3.attention.key_length", 128)
      .u32kv("qwen3.attention.value_length", 128)
      .f32kv("qwen3.rope.freq_base", 1000000.0f);
  if (scaling_type != nullptr) w.str("qwen3.rope.scaling.type", scaling_type);
  return w;
}

void check_same_rope(const RopeConfig& g, const RopeConfig& h) {
  CHECK(g.style == h.style);
  CHECK(g.theta == h.theta);
  CHECK(g.rotary_dim == h.rotary_dim);
  CHECK(g.scaling == h.scaling);
  CHECK(g.factor == h.factor);
  CHECK(g.original_max_seq == h.original_max_seq);
  CHECK(g.beta_fast == h.beta_fast);
  CHECK(g.beta_slow == h.beta_slow);
  CHECK(g.attention_factor == h.attention_factor);
  CHECK(g.mscale == h.mscale);
  CHECK(g.mscale_all_dim == h.mscale_all_dim);
  CHECK(g.yarn_truncate == h.yarn_truncate);
}

TEST_CASE("gguf rope scaling: gpt-oss's YaRN equals its config.json's, on every layer") {
  const Config c = parse_ok(gpt_oss_20b());
  CHECK(c.rope.scaling == RopeScaling::kYarn);
  CHECK(c.rope.factor == 32.0f);
  CHECK(c.rope.original_max_seq == 4096);
  CHECK_FALSE(c.rope.yarn_truncate);  // gpt-oss's ramp is not rounded
  const std::string path = std::string(HEADWAY_TEST_DATA) + "/hf/gpt-oss-20b.json";
  const Result<Config> hf = load_hf_config(path.c_str());
  REQUIRE_MESSAGE(hf.ok(), std::string(hf.status().message()));
  for (uint32_t i = 0; i < c.n_layers; ++i) {
    INFO("layer " << i);
    check_same_rope(c.layer_rope(i), hf->layer_rope(i));
  }
}

TEST_CASE("gguf rope scaling: YaRN with betas, and the original context of the file by default") {
  GgufWriter w = qwen3("yarn");
  w.f32kv("qwen3.rope.scaling.factor", 4.0f)
      .f32kv("qwen3.rope.scaling.yarn_beta_fast", 16.0f)
      .f32kv("qwen3.rope.scaling.yarn_beta_slow", 2.0f);
  SUBCASE("with original_context_length") {
    w.u32kv("qwen3.rope.scaling.original_context_length", 32768);
    const Config c = parse_ok(w);
    CHECK(c.rope.original_max_seq == 32768);
  }
  SUBCASE("without") {
    const Config c = parse_ok(w);
    CHECK(c.rope.original_max_seq == 131072);
  }
  const Config c = parse_ok(w);
  CHECK(c.rope.scaling == RopeScaling::kYarn);
  CHECK(c.rope.factor == 4.0f);
  CHECK(c.rope.beta_fast == 16.0f);
  CHECK(c.rope.beta_slow == 2.0f);
  CHECK(c.rope.attention_factor == 0.0f);  // 0.1 ln(factor) + 1, as ggml and Hugging Face
  CHECK(c.rope.yarn_truncate);
}

TEST_CASE("gguf rope scaling: linear, the older rope.scale_linear, and none") {
  SUBCASE("linear") {
    GgufWriter w = qwen3("linear");
    w.f32kv("qwen3.rope.scaling.factor", 2.0f);
    const Config c = parse_ok(w);
    CHECK(c.rope.scaling == RopeScaling::kLinear);
    CHECK(c.rope.factor == 2.0f);
  }
  SUBCASE("rope.scale_linear") {
    GgufWriter w = qwen3(nullptr);
    w.f32kv("qwen3.rope.scale_linear", 4.0f);
    const Config c = parse_ok(w);
    CHECK(c.rope.scaling == RopeScaling::kLinear);
    CHECK(c.rope.factor == 4.0f);
  }
  SUBCASE("rope.scale_linear of 1 and type none") {
    GgufWriter w = qwen3("none");
    w.f32kv("qwen3.rope.scale_linear", 1.0f).f32kv("qwen3.rope.scaling.factor", 8.0f);
    const Config c = parse_ok(w);
    CHECK(c.rope.scaling == RopeScaling::kNone);
    CHECK(c.rope.factor == 1.0f);
  }
}

TEST_CASE("gguf rope scaling: schemes headway does not reproduce are planned as other") {
  SUBCASE("longrope") {
    const Config c = parse_ok(qwen3("longrope"));
    CHECK(c.rope.scaling == RopeScaling::kOther);
  }
  for (const char* key : {"qwen3.rope.scaling.yarn_log_multiplier", "qwen3.rope.scaling.yarn_attn_factor",
                          "qwen3.rope.scaling.yarn_ext_factor", "qwen3.rope.scaling.attn_factor"}) {
    INFO(key);
    GgufWriter w = qwen3("yarn");
    w.f32kv("qwen3.rope.scaling.factor", 4.0f).f32kv(key, 0.5f);
    const Config c = parse_ok(w);
    CHECK(c.rope.scaling == RopeScaling::kOther);
  }
}

TEST_CASE("gguf rope scaling: malformed keys name the key and the value") {
  SUBCASE("yarn without a factor") {
    const Status s = parse_error(qwen3("yarn"));
    CHECK(s.code() == Code::kNotFound);
    CHECK(std::string(s.message()) ==
          "m.gguf: qwen3.rope.scaling.type is yarn but there is no qwen3.rope.scaling.factor");
  }
  SUBCASE("a factor of 0") {
    GgufWriter w = qwen3("linear");
    w.f32kv("qwen3.rope.scaling.factor", 0.0f);
    const Status s = parse_error(w);
    CHECK(s.code() == Code::kInvalidArgument);
    CHECK_MESSAGE(std::strstr(s.message(), "qwen3.rope.scaling.factor") != nullptr, std::string(s.message()));
  }
  SUBCASE("a type that is not a string") {
    GgufWriter w = qwen3(nullptr);
    w.u32kv("qwen3.rope.scaling.type", 2);
    const Status s = parse_error(w);
    CHECK(s.code() == Code::kInvalidArgument);
    CHECK_MESSAGE(std::strstr(s.message(), "qwen3.rope.scaling.type") != nullptr, std::string(s.message()));
  }
  SUBCASE("an original context of 0") {
    GgufWriter w = qwen3("yarn");
    w.f32kv("qwen3.rope.scaling.factor", 4.0f).u32kv("qwen3.rope.scaling.original_context_length", 0);
    const Status s = parse_error(w);
    CHECK(s.code() == Code::kInvalidArgument);
    CHECK_MESSAGE(std::strstr(s.message(), "qwen3.rope.scaling.original_context_length") != nullptr,
                  std::string(s.message()));
  }
}

}  // namespace
}  // namespace headway
