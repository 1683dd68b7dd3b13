// Gemma 4 from a GGUF as llama.cpp's converter writes it (architecture gemma4): the same Config,
// field by field, as the model's config.json (Gemma 4 E2B's layout in its text_config): sliding layers
// from the per-layer sliding_window_pattern, the sliding head (key_length_swa) and the full one
// (key_length), the shared-cache layers, each kind's RoPE; the full layers' proportional RoPE and
// V from K read from the tensors (rope_freqs, a missing attn_v) when the file holds them; an
// owning layer's weights by llama.cpp's names.
#include <doctest/doctest.h>

#include <cstring>
#include <string>
#include <vector>

#include "headway/config.hpp"
#include "headway/tools/model_files.hpp"
#include "headway/plan.hpp"
#include "runtime/formats/weights_loader.hpp"
#include "tests/formats/gguf_writer.hpp"

namespace headway {
namespace {

using test::GgufWriter;

bool contains(const Status& s, const char* part) { return std::strstr(s.message(), part) != nullptr; }
#define CHECK_HAS(status, part) CHECK_MESSAGE(contains(status, part), std::string((status).message()))

constexpr uint32_t kLayers = 35;
bool e2b_slides(uint32_t i) { return i % 5 != 4; }  // four sliding layers, then a full one

// Gemma 4 E2B's layout as its config.json's text_config gives the attention keys: 35 layers, the
// last 20 sharing, full layers of head_dim 512.
std::string e2b_json() {
  std::string types;
  for (uint32_t i = 0; i < kLayers; ++i) {
    types += std::string(i ? ", " : "") + (e2b_slides(i) ? "\"sliding_attention\"" : "\"full_attention\"");
  }
  return R"({"model_type": "gemma4", "text_config": {"model_type": "gemma4_text", "hidden_size": 1536,
    "num_hidden_layers": 35, "num_attention_heads": 8, "num_key_value_heads": 1, "head_dim": 256,
    "global_head_dim": 512, "num_global_key_value_heads": null, "attention_k_eq_v": false,
    "sliding_window": 512, "num_kv_shared_layers": 20, "hidden_size_per_layer_input": 256,
    "max_position_embeddings": 131072, "rms_norm_eps": 1e-6, "final_logit_softcapping": 30.0,
    "rope_parameters": {"full_attention": {"partial_rotary_factor": 0.25, "rope_theta": 1000000.0,
      "rope_type": "proportional"}, "sliding_attention": {"rope_theta": 10000.0, "rope_type": "default"}},
    "layer_types": [)" +
         types + "]}}";
}

// What Gemma4Model.set_gguf_parameters writes for it.
GgufWriter e2b_gguf() {
  std::vector<bool> swa;
  for (uint32_t i = 0; i < kLayers; ++i) swa.push_back(e2b_slides(i));
  GgufWriter w;
  w.str("general.architecture", "gemma4")
      .u32kv("gemma4.context_length", 131072)
      .u32kv("gemma4.embedding_length", 1536)
      .u32kv("gemma4.block_count", kLayers)
      .u32kv("gemma4.attention.head_count", 8)
      .u32kv("gemma4.attention.head_count_kv", 1)
      .f32kv("gemma4.attention.layer_norm_rms_epsilon", 1e-6f)
      .u32kv("gemma4.attention.key_length", 512)
      .u32kv("gemma4.attention.value_length", 512)
      .u32kv("gemma4.attention.key_length_swa", 256)
      .u32kv("gemma4.attention.value_length_swa", 256)
      .f32kv("gemma4.rope.freq_base", 1000000.0f)
      .f32kv("gemma4.rope.freq_base_swa", 10000.0f)
      .f32kv("gemma4.final_logit_softcapping", 30.0f)
      .u32kv("gemma4.attention.sliding_window", 512)
      .u32kv("gemma4.attention.shared_kv_layers", 20)
      .u32kv("gemma4.embedding_length_per_layer_input", 256)
      .bool_array("gemma4.attention.sliding_window_pattern", swa)
      .u32kv("gemma4.rope.dimension_count", 512)
      .u32kv("gemma4.rope.dimension_count_swa", 256);
  return w;
}

Config parse_json(const std::string& text) {
  const Result<Config> c = parse_hf_config(text.data(), text.size());
  REQUIRE_MESSAGE(c.ok(), std::string(c.status().message()));
  return *c;
}

Result<Config> parse_gguf(const GgufWriter& w) {
  const std::vector<uint8_t> b = w.bytes();
  return parse_gguf_metadata(b.data(), b.size(), "e2b.gguf");
}

void check_same(const Config& hf, const Config& g) {
  CHECK(g.d_model == hf.d_model);
  CHECK(g.n_heads == hf.n_heads);
  CHECK(g.n_kv_heads == hf.n_kv_heads);
  CHECK(g.head_dim == hf.head_dim);
  CHECK(g.n_layers == hf.n_layers);
  CHECK(g.max_seq == hf.max_seq);
  CHECK(g.window == hf.window);
  CHECK(g.causal == hf.causal);
  CHECK(g.qk_norm == hf.qk_norm);
  CHECK(g.qk_norm_offset == hf.qk_norm_offset);
  CHECK(g.v_norm == hf.v_norm);
  CHECK(g.k_eq_v == hf.k_eq_v);
  CHECK(g.qkv_bias == hf.qkv_bias);
  CHECK(g.o_bias == hf.o_bias);
  CHECK(g.scale == hf.scale);
  CHECK(g.softcap == hf.softcap);
  CHECK(g.logit_scale() == hf.logit_scale());
  CHECK(g.rope.style == hf.rope.style);
  CHECK(g.rope.theta == hf.rope.theta);
  CHECK(g.rope.rotary_dim == hf.rope.rotary_dim);
  CHECK(g.rope.scaling == hf.rope.scaling);
  CHECK(g.rope.factor == hf.rope.factor);
  CHECK(g.rope.rotated_pairs == hf.rope.rotated_pairs);
  const LayerKinds &a = hf.layers, &b = g.layers;
  CHECK(b.sliding_pattern == a.sliding_pattern);
  CHECK(b.sliding.count == a.sliding.count);
  CHECK(b.local_rope_theta == a.local_rope_theta);
  CHECK(b.full_head_dim == a.full_head_dim);
  CHECK(b.full_kv_heads == a.full_kv_heads);
  CHECK(b.full_k_eq_v == a.full_k_eq_v);
  CHECK(b.kv_shared_layers == a.kv_shared_layers);
  for (uint32_t i = 0; i < hf.n_layers; ++i) {
    INFO("layer " << i);
    CHECK(g.layer_slides(i) == hf.layer_slides(i));
    const Config x = hf.layer_alone(i), y = g.layer_alone(i);
    CHECK(y.head_size() == x.head_size());
    CHECK(y.kv_heads() == x.kv_heads());
    CHECK(y.k_eq_v == x.k_eq_v);
    CHECK(y.window == x.window);
    CHECK(y.rope.theta == x.rope.theta);
    CHECK(y.rope.scaling == x.rope.scaling);
    CHECK(y.rope.rotated_pairs == x.rope.rotated_pairs);
    const Status hs = validate_layer(hf, i), gs = validate_layer(g, i);
    CHECK(gs.code() == hs.code());
    CHECK(std::string(gs.message()) == hs.message());
  }
}

TEST_CASE("gguf gemma4: an E2B GGUF reads into its config.json's Config") {
  const Config hf = parse_json(e2b_json());
  const Result<Config> g = parse_gguf(e2b_gguf());
  REQUIRE_MESSAGE(g.ok(), std::string(g.status().message()));
  check_same(hf, *g);
  CHECK(g->model.final_softcap == 30.0f);
  CHECK(g->head_size() == 256);
  CHECK(g->layers.full_head_dim == 512);
  CHECK(g->layers.kv_shared_layers == 20);
  CHECK(g->logit_scale() == 1.0f);

  // Layers 0-14 own their caches: each plans alone with its kind's shape.
  REQUIRE(validate_layer(*g, 4).ok());
  const Config full = g->layer_alone(4);
  CHECK(full.head_size() == 512);
  CHECK(full.kv_heads() == 1);
  CHECK(full.rope.theta == 1000000.0f);
  CHECK(full.rope.scaling == RopeScaling::kProportional);
  CHECK(full.rope.rotated_pairs == 64);  // a quarter of 512
  const Result<Plan> fp = make_plan(full, PlanOptions{});
  REQUIRE(fp.ok());
  CHECK(fp->kv_bytes_per_token == 2 * 512 * 2);  // one kv head, K and V in f16
  REQUIRE(validate_layer(*g, 13).ok());
  const Config sliding = g->layer_alone(13);
  CHECK(sliding.head_size() == 256);
  CHECK(sliding.window == 512);
  CHECK(sliding.rope.theta == 10000.0f);
  CHECK(sliding.rope.scaling == RopeScaling::kNone);
  // The last 20 layers read the caches of layers 13 (sliding) and 14 (full); the whole plans alike.
  CHECK(g->kv_owner(15) == 13);
  CHECK(g->kv_owner(34) == 14);
  REQUIRE(validate_layer(*g, 34).ok());
  const Result<Plan> from_gguf = make_plan(*g, PlanOptions{});
  const Result<Plan> from_json = make_plan(hf, PlanOptions{});
  REQUIRE(from_gguf.ok());
  REQUIRE(from_json.ok());
  CHECK(from_gguf->kv_shared_layers == 20);
  CHECK(from_gguf->kv_cache_bytes == from_json->kv_cache_bytes);
  CHECK(from_gguf->weight_bytes == from_json->weight_bytes);
  CHECK(from_gguf->arena_bytes == from_json->arena_bytes);
}

// A 31B-like layout at a small size: five sliding layers then a full one, twice; the full layers'
// kv heads (num_global_key_value_heads) in head_count_kv's full-layer entries.
bool small_slides(uint32_t i) { return i % 6 != 5; }
GgufWriter small_gguf(const std::vector<uint32_t>& heads) {
  std::vector<bool> swa;
  for (uint32_t i = 0; i < 12; ++i) swa.push_back(small_slides(i));
  GgufWriter w;
  w.str("general.architecture", "gemma4")
      .u32kv("gemma4.context_length", 262144)
      .u32kv("gemma4.embedding_length", 1024)
      .u32kv("gemma4.block_count", 12)
      .u32kv("gemma4.attention.head_count", 16)
      .u32_array("gemma4.attention.head_count_kv", heads)
      .u32kv("gemma4.attention.key_length", 128)
      .u32kv("gemma4.attention.value_length", 128)
      .u32kv("gemma4.attention.key_length_swa", 64)
      .f32kv("gemma4.rope.freq_base", 1000000.0f)
      .u32kv("gemma4.attention.sliding_window", 1024)
      .bool_array("gemma4.attention.sliding_window_pattern", swa)
      .u32kv("gemma4.rope.dimension_count", 128);
  return w;
}

TEST_CASE("gguf gemma4: per-layer kv heads, as the converter writes num_global_key_value_heads") {
  std::string types;
  std::vector<uint32_t> heads;
  for (uint32_t i = 0; i < 12; ++i) {
    heads.push_back(small_slides(i) ? 8 : 2);
    types += std::string(i ? ", " : "") + (small_slides(i) ? "\"sliding_attention\"" : "\"full_attention\"");
  }
  const Config hf = parse_json(R"({"model_type": "gemma4_text", "hidden_size": 1024, "num_hidden_layers": 12,
    "num_attention_heads": 16, "num_key_value_heads": 8, "head_dim": 64, "global_head_dim": 128,
    "num_global_key_value_heads": 2, "attention_k_eq_v": true, "sliding_window": 1024,
    "max_position_embeddings": 262144, "layer_types": [)" +
                               types + "]}");
  const Result<Config> g = parse_gguf(small_gguf(heads));
  REQUIRE_MESSAGE(g.ok(), std::string(g.status().message()));
  CHECK(g->n_kv_heads == 8);
  CHECK(g->layers.full_kv_heads == 2);
  CHECK(g->layers.local_rope_theta == 10000.0f);  // llama.cpp's and Gemma4TextConfig's default
  CHECK_FALSE(g->layers.full_k_eq_v);             // no key says it; the tensors do (WeightFile::gguf_config)
  Config with_tensors = *g;
  with_tensors.layers.full_k_eq_v = true;
  check_same(hf, with_tensors);

  heads[11] = 4;
  const Result<Config> odd = parse_gguf(small_gguf(heads));
  REQUIRE_FALSE(odd.ok());
  CHECK_HAS(odd.status(), "gemma4.attention.head_count_kv[11] is 4 where the earlier full layers have 2");
  heads.pop_back();
  const Result<Config> short_list = parse_gguf(small_gguf(heads));
  REQUIRE_FALSE(short_list.ok());
  CHECK_HAS(short_list.status(), "gemma4.attention.head_count_kv is an array of 11 u32, expected 12 integers");
}

TEST_CASE("gguf gemma4: keys that are missing or a shape headway does not hold") {
  const struct {
    const char* key;
    uint32_t value;
    const char* message;
  } cases[] = {
      {"gemma4.attention.value_length_swa", 32,
       "gemma4.attention.value_length_swa is 32, attention.key_length_swa 64: headway's sliding layers"},
      {"gemma4.rope.dimension_count_swa", 16, "gemma4.rope.dimension_count_swa is 16, attention.key_length_swa 64"},
  };
  for (const auto& c : cases) {
    INFO(c.key);
    GgufWriter w = small_gguf(std::vector<uint32_t>(12, 8));
    w.u32kv(c.key, c.value);
    const Result<Config> r = parse_gguf(w);
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().code() == Code::kUnsupported);
    CHECK_HAS(r.status(), c.message);
  }
  GgufWriter w;
  w.str("general.architecture", "gemma4")
      .u32kv("gemma4.context_length", 4096)
      .u32kv("gemma4.embedding_length", 256)
      .u32kv("gemma4.attention.head_count", 4)
      .u32kv("gemma4.attention.key_length", 128)
      .u32kv("gemma4.attention.sliding_window", 512);
  const Result<Config> none = parse_gguf(w);
  REQUIRE_FALSE(none.ok());
  CHECK_HAS(none.status(), "no gemma4.attention.key_length_swa");
  w.u32kv("gemma4.attention.key_length_swa", 64).u32kv("gemma4.rope.dimension_count", 32);
  CHECK_HAS(parse_gguf(w).status(), "gemma4.rope.dimension_count is 32, attention.key_length 128");
  GgufWriter no_window;
  no_window.str("general.architecture", "gemma4")
      .u32kv("gemma4.context_length", 4096)
      .u32kv("gemma4.embedding_length", 256)
      .u32kv("gemma4.attention.head_count", 4);
  CHECK_HAS(parse_gguf(no_window).status(), "no gemma4.attention.sliding_window");
}

// Two layers, sliding then full (d_model 64, 2 heads, 1 kv head; heads of 16 and 32), with
// llama.cpp's tensors: the full layer has no attn_v (V from K) and rope_freqs masks all but its
// first `rotated` pairs.
std::vector<uint8_t> f32_bytes(const std::vector<float>& v) {
  std::vector<uint8_t> b(v.size() * 4);
  std::memcpy(b.data(), v.data(), b.size());
  return b;
}
GgufWriter tiny_with_tensors(const std::vector<float>& freqs) {
  GgufWriter w;
  w.str("general.architecture", "gemma4")
      .u32kv("gemma4.context_length", 64)
      .u32kv("gemma4.embedding_length", 64)
      .u32kv("gemma4.block_count", 2)
      .u32kv("gemma4.attention.head_count", 2)
      .u32kv("gemma4.attention.head_count_kv", 1)
      .u32kv("gemma4.attention.key_length", 32)
      .u32kv("gemma4.attention.value_length", 32)
      .u32kv("gemma4.attention.key_length_swa", 16)
      .u32kv("gemma4.attention.value_length_swa", 16)
      .u32kv("gemma4.attention.sliding_window", 8)
      .bool_array("gemma4.attention.sliding_window_pattern", {true, false})
      .u32kv("gemma4.rope.dimension_count", 32)
      .u32kv("gemma4.rope.dimension_count_swa", 16);
  const auto matrix = [&](const char* name, uint64_t in, uint64_t out) {
    w.tensor(name, {in, out}, 0, f32_bytes(std::vector<float>(in * out, 0.01f)));
  };
  const auto vec = [&](const char* name, uint64_t n) {
    w.tensor(name, {n}, 0, f32_bytes(std::vector<float>(n, 1.0f)));
  };
  matrix("blk.0.attn_q.weight", 64, 32);
  matrix("blk.0.attn_k.weight", 64, 16);
  matrix("blk.0.attn_v.weight", 64, 16);
  matrix("blk.0.attn_output.weight", 32, 64);
  vec("blk.0.attn_q_norm.weight", 16);
  vec("blk.0.attn_k_norm.weight", 16);
  matrix("blk.1.attn_q.weight", 64, 64);
  matrix("blk.1.attn_k.weight", 64, 32);
  matrix("blk.1.attn_output.weight", 64, 64);
  vec("blk.1.attn_q_norm.weight", 32);
  vec("blk.1.attn_k_norm.weight", 32);
  w.tensor("rope_freqs.weight", {freqs.size()}, 0, f32_bytes(freqs));
  return w;
}

TEST_CASE(
    "gguf gemma4: rope_freqs and a missing attn_v say what the metadata cannot, and layers load by llama.cpp's names") {
  std::vector<float> freqs(16, 1e30f);
  for (int i = 0; i < 4; ++i) freqs[i] = 1.0f;  // a quarter of the 16 pairs
  const std::vector<uint8_t> b = tiny_with_tensors(freqs).bytes();
  formats::WeightFile file;
  REQUIRE(file.parse(b.data(), b.size(), "tiny.gguf").ok());
  const Result<Config> c = file.gguf_config();
  REQUIRE_MESSAGE(c.ok(), std::string(c.status().message()));
  CHECK(c->rope.scaling == RopeScaling::kProportional);
  CHECK(c->rope.rotated_pairs == 4);
  CHECK(c->layers.full_k_eq_v);
  CHECK(c->qk_norm);
  CHECK(c->v_norm);
  const Config full = c->layer_alone(1);
  CHECK(full.k_eq_v);
  CHECK(full.head_size() == 32);
  REQUIRE(validate_layer(*c, 1).ok());
  const Result<LayerWeights> w1 = formats::load_layer_weights(file, *c, 1);
  REQUIRE_MESSAGE(w1.ok(), std::string(w1.status().message()));
  CHECK_FALSE(w1->wv.present());
  CHECK(w1->wk.rows == 32);
  CHECK(w1->q_norm.cols == 32);
  REQUIRE(validate_layer(*c, 0).ok());
  const Result<LayerWeights> w0 = formats::load_layer_weights(file, *c, 0);
  REQUIRE_MESSAGE(w0.ok(), std::string(w0.status().message()));
  CHECK(w0->wv.rows == 16);
  CHECK(w0->wq.rows == 32);

  freqs[6] = 0.5f;  // a factor that neither rotates as the config says nor stops the rotation
  const std::vector<uint8_t> bad = tiny_with_tensors(freqs).bytes();
  formats::WeightFile bad_file;
  REQUIRE(bad_file.parse(bad.data(), bad.size(), "bad.gguf").ok());
  CHECK_HAS(bad_file.gguf_config().status(),
            "tensor 'rope_freqs.weight' factor 6 is 0.5: proportional RoPE's factors are 1 for the rotated pairs (4 "
            "here), then at least 1e30");
}

}  // namespace
}  // namespace headway
