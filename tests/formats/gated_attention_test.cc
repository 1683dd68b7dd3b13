// Qwen3.5's and Qwen3-Next's attention as their files give it: config.json (Qwen3.5-0.8B's, its
// text_config; the config classes' defaults where keys are missing) and GGUF (as llama.cpp's
// converter writes qwen35: recurrent_layers or full_attention_interval, MTP blocks counted in
// block_count, the Gated DeltaNet shape in its ssm.* keys) plan the same layers: the linear
// attention layers with their fixed state, the full ones with their output gate, 1 + w q/k norms
// and partial RoPE.
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

bool contains(const Status& s, const char* part) { return std::strstr(s.message(), part) != nullptr; }
#define CHECK_HAS(status, part) CHECK_MESSAGE(contains(status, part), std::string((status).message()))

Config qwen35_08b() {
  const std::string path = std::string(HEADWAY_TEST_DATA) + "/hf/qwen3.5-0.8b.json";
  const Result<Config> c = load_hf_config(path.c_str());
  REQUIRE_MESSAGE(c.ok(), std::string(c.status().message()));
  return *c;
}

Config parse_json(const std::string& text) {
  const Result<Config> c = parse_hf_config(text.data(), text.size());
  REQUIRE_MESSAGE(c.ok(), std::string(c.status().message()));
  return *c;
}

// Qwen3.5-0.8B's attention as llama.cpp's converter writes its GGUF (the MTP block included in
// block_count: nextn); `recurrent`: with attention.recurrent_layers, else full_attention_interval
// only; `state_size` false: without ssm.state_size.
GgufWriter qwen35_gguf(bool recurrent, uint32_t nextn = 1, bool state_size = true) {
  GgufWriter w;
  w.str("general.architecture", "qwen35")
      .u32kv("qwen35.context_length", 262144)
      .u32kv("qwen35.embedding_length", 1024)
      .u32kv("qwen35.block_count", 25)
      .u32kv("qwen35.nextn_predict_layers", nextn)
      .u32kv("qwen35.attention.head_count", 8)
      .u32kv("qwen35.attention.head_count_kv", 2)
      .u32kv("qwen35.attention.key_length", 256)
      .u32kv("qwen35.attention.value_length", 256)
      .u32kv("qwen35.rope.dimension_count", 64)
      .f32kv("qwen35.rope.freq_base", 10000000.0f)
      .f32kv("qwen35.attention.layer_norm_rms_epsilon", 1e-6f)
      .u32kv("qwen35.full_attention_interval", 4)
      .u32kv("qwen35.ssm.conv_kernel", 4)
      .u32kv("qwen35.ssm.group_count", 16)
      .u32kv("qwen35.ssm.time_step_rank", 16)
      .u32kv("qwen35.ssm.inner_size", 2048);
  if (state_size) w.u32kv("qwen35.ssm.state_size", 128);
  if (recurrent) {
    std::vector<bool> bits;
    for (uint32_t i = 0; i < 25; ++i) bits.push_back(i < 24 && (i + 1) % 4 != 0);
    w.bool_array("qwen35.attention.recurrent_layers", bits);
  }
  return w;
}

TEST_CASE("gated: Qwen3.5-0.8B plans 6 gated attention layers among 18 Gated DeltaNet layers and their state") {
  const Config c = qwen35_08b();
  CHECK(c.n_layers == 24);
  CHECK(c.d_model == 1024);
  CHECK(c.n_heads == 8);
  CHECK(c.kv_heads() == 2);
  CHECK(c.head_size() == 256);
  CHECK(c.rotary_dims() == 64);  // partial_rotary_factor 0.25
  CHECK(c.rope.theta == 10000000.0f);
  CHECK(c.output_gate);
  CHECK(c.qk_norm);
  CHECK(c.qk_norm_offset == 1.0f);
  for (uint32_t i = 0; i < 24; ++i) CHECK(c.layer_is_linear(i) == ((i + 1) % 4 != 0));
  const GatedDeltaShape& g = c.gated_delta;
  CHECK(g.key_heads == 16);
  CHECK(g.value_heads == 16);
  CHECK(g.key_head_dim == 128);
  CHECK(g.value_head_dim == 128);
  CHECK(g.conv_kernel == 4);

  REQUIRE(validate(c).ok());
  CHECK(validate_layer(c, 5).ok());
  CHECK(validate_layer(c, 24).code() == Code::kOutOfRange);
  const Plan whole = plan_for(c, PlanOptions{});
  CHECK(whole.linear_layers == 18);
  // 16 heads' states of 128 x 128 f32, and the last 3 inputs of [q | k | v] (2·2048 + 2048).
  CHECK(whole.linear_state_bytes_per_layer == uint64_t{16} * 128 * 128 * 4 + 3 * 6144 * 4);
  CHECK(whole.linear_state_bytes == 18 * whole.linear_state_bytes_per_layer);
  CHECK(whole.kv_cache_bytes == 6 * whole.kv_bytes_full_layer);

  REQUIRE(validate_layer(c, 7).ok());
  const Result<Plan> p = make_plan(c.layer_alone(7), PlanOptions{});
  REQUIRE(p.ok());
  CHECK(p->q_width == 2048);
  CHECK(p->q_rows == 4096);  // each head's query and gate
  CHECK(p->qkv_width == 4096 + 2 * 512);
  // Wq [4096, 1024], Wk and Wv [512, 1024], Wo [1024, 2048] and the two norms of 256, in f32.
  CHECK(p->weight_bytes_per_layer == align_up((uint64_t{4096 + 1024 + 2048} * 1024 + 512) * 4));
  CHECK(p->head(4).qkv_k_offset == uint64_t{4096 + 256} * 4);  // kv head 1, after the gates
}

TEST_CASE("gated: the config classes' defaults where config.json says nothing") {
  const Config c = parse_json(R"({"model_type": "qwen3_5_text", "hidden_size": 512, "num_attention_heads": 4,
    "num_key_value_heads": 1, "num_hidden_layers": 8, "max_position_embeddings": 4096})");
  CHECK(c.head_size() == 256);   // Qwen3_5TextConfig's head_dim
  CHECK(c.rotary_dims() == 64);  // its partial_rotary_factor 0.25
  for (uint32_t i = 0; i < 8; ++i) CHECK(c.layer_is_linear(i) == (i != 3 && i != 7));
  const Config every_other = parse_json(R"({"model_type": "qwen3_next", "hidden_size": 512,
    "num_attention_heads": 4, "num_hidden_layers": 4, "max_position_embeddings": 4096,
    "full_attention_interval": 2, "head_dim": 128, "partial_rotary_factor": 0.5})");
  CHECK(every_other.output_gate);
  CHECK(every_other.rotary_dims() == 64);
  for (uint32_t i = 0; i < 4; ++i) CHECK(every_other.layer_is_linear(i) == (i % 2 == 0));
  const Config all_full = parse_json(R"({"model_type": "qwen3_5_text", "hidden_size": 512, "num_attention_heads": 4,
    "num_hidden_layers": 2, "max_position_embeddings": 4096, "layer_types": ["full_attention", "full_attention"]})");
  CHECK(all_full.layers.linear.count == 0);
  CHECK(validate(all_full).ok());
  const char* bad = R"({"model_type": "qwen3_5_text", "hidden_size": 512, "num_attention_heads": 4,
    "num_hidden_layers": 2, "max_position_embeddings": 4096, "layer_types": ["mamba", "full_attention"]})";
  const Result<Config> r = parse_hf_config(bad, std::strlen(bad));
  REQUIRE_FALSE(r.ok());
  CHECK_HAS(r.status(), "layer_types[0] is \"mamba\", expected \"sliding_attention\", \"full_attention\" or");
}

TEST_CASE("gated: a qwen35 GGUF plans what its config.json plans, without its MTP block") {
  const Config hf = qwen35_08b();
  for (bool recurrent : {true, false}) {
    INFO((recurrent ? "recurrent_layers" : "full_attention_interval"));
    const GgufWriter w = qwen35_gguf(recurrent);
    const std::vector<uint8_t> b = w.bytes();
    const Result<Config> g = parse_gguf_metadata(b.data(), b.size(), "m.gguf");
    REQUIRE_MESSAGE(g.ok(), std::string(g.status().message()));
    CHECK(g->n_layers == 24);
    CHECK(g->output_gate);
    CHECK(g->qk_norm);
    CHECK(g->qk_norm_offset == 0.0f);  // the converter added the 1
    CHECK(g->head_size() == hf.head_size());
    CHECK(g->rotary_dims() == hf.rotary_dims());
    CHECK(g->kv_heads() == hf.kv_heads());
    for (uint32_t i = 0; i < 24; ++i) CHECK(g->layer_is_linear(i) == hf.layer_is_linear(i));
    CHECK(g->gated_delta.key_heads == hf.gated_delta.key_heads);
    CHECK(g->gated_delta.value_heads == hf.gated_delta.value_heads);
    CHECK(g->gated_delta.key_head_dim == hf.gated_delta.key_head_dim);
    CHECK(g->gated_delta.value_head_dim == hf.gated_delta.value_head_dim);
    CHECK(g->gated_delta.conv_kernel == hf.gated_delta.conv_kernel);
    CHECK(g->gated_delta.tiled_value_heads);  // the converter's order of the value heads
    CHECK_FALSE(hf.gated_delta.tiled_value_heads);
    CHECK(validate_layer(*g, 3).ok());
    CHECK(validate(*g).ok());
  }
  const GgufWriter no_state = qwen35_gguf(false, 1, false);
  CHECK_HAS(test::parse_error(no_state), "qwen35.ssm.state_size");
  GgufWriter short_list = qwen35_gguf(false);
  short_list.bool_array("qwen35.attention.recurrent_layers", {true, false});
  CHECK_HAS(test::parse_error(short_list),
            "qwen35.attention.recurrent_layers is an array of 2 bool, expected 25 bools");
  const GgufWriter no_layers = qwen35_gguf(false, 25);
  CHECK_HAS(test::parse_error(no_layers), "nextn_predict_layers is 25, block_count 25: no layers left");
}

TEST_CASE("gated: the spec's output_gate") {
  const Result<Config> c = parse_spec("d_model=256 heads=4 kv_heads=2 head_dim=64 ctx=64 output_gate=1 qk_norm=1");
  REQUIRE(c.ok());
  CHECK(c->output_gate);
  const Result<Plan> p = make_plan(*c, PlanOptions{});
  REQUIRE(p.ok());
  CHECK(p->q_rows == 2 * p->q_width);
  const Result<Config> bad = parse_spec("d_model=256 heads=4 output_gate=2");
  REQUIRE_FALSE(bad.ok());
  CHECK_HAS(bad.status(), "output_gate");
}

}  // namespace
}  // namespace headway
