// Multi-head latent attention planned from its files: DeepSeek-V2-Lite's config.json (a
// full-rank query, YaRN with mscale_all_dim) and a deepseek2 GGUF as llama.cpp's converter writes
// it plan the same absorbed attention: one cache row of 576 values a token (the latent and the
// shared RoPE key, K and V at once) against the 5120 of expanded heads; the logit scale from the
// 192-value query head; the errors of a shape that cannot be. PLM-1.8B (config.json's plm,
// GGUF's plm) is the same attention with a full-rank query.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "headway/config.hpp"
#include "headway/tools/model_files.hpp"
#include "headway/plan.hpp"
#include "headway/tools/plan_json.hpp"
#include "tests/formats/gguf_writer.hpp"

namespace headway {
namespace {

using test::GgufWriter;

bool contains(const Status& s, const char* part) { return std::strstr(s.message(), part) != nullptr; }
#define CHECK_HAS(status, part) CHECK_MESSAGE(contains(status, part), std::string((status).message()))

Config deepseek_v2_lite() {
  const std::string path = std::string(HEADWAY_TEST_DATA) + "/hf/deepseek-v2-lite.json";
  const Result<Config> c = load_hf_config(path.c_str());
  REQUIRE_MESSAGE(c.ok(), std::string(c.status().message()));
  return *c;
}

// DeepSeek-V2-Lite's attention as llama.cpp's converter writes it (key_length is the latent row).
GgufWriter deepseek2_lite(bool mla_keys) {
  GgufWriter w;
  w.str("general.architecture", "deepseek2")
      .u32kv("deepseek2.context_length", 163840)
      .u32kv("deepseek2.embedding_length", 2048)
      .u32kv("deepseek2.block_count", 27)
      .u32kv("deepseek2.attention.head_count", 16)
      .u32kv("deepseek2.attention.head_count_kv", 1)
      .u32kv("deepseek2.attention.kv_lora_rank", 512)
      .u32kv("deepseek2.rope.dimension_count", 64)
      .f32kv("deepseek2.rope.freq_base", 10000.0f);
  if (mla_keys) {
    w.u32kv("deepseek2.attention.key_length", 576)
        .u32kv("deepseek2.attention.value_length", 512)
        .u32kv("deepseek2.attention.key_length_mla", 192)
        .u32kv("deepseek2.attention.value_length_mla", 128);
  } else {  // an older converter: the query and value heads themselves
    w.u32kv("deepseek2.attention.key_length", 192).u32kv("deepseek2.attention.value_length", 128);
  }
  return w;
}

void check_v2_lite_shape(const Config& c) {
  CHECK(c.is_mla());
  CHECK(c.mla.kv_lora_rank == 512);
  CHECK(c.mla.q_lora_rank == 0);  // V2-Lite's full-rank q_proj
  CHECK(c.mla.qk_nope_head_dim == 128);
  CHECK(c.mla.qk_rope_head_dim == 64);
  CHECK(c.mla.v_head_dim == 128);
  CHECK(c.head_size() == 576);
  CHECK(c.kv_heads() == 1);
  CHECK(c.rope.style == RopeStyle::kGptj);  // DeepseekV2's complex rotation: adjacent pairs
  CHECK(c.rotary_dims() == 64);
}

TEST_CASE("mla: DeepSeek-V2-Lite plans a 576-value latent row per token, 8.9x under the expanded heads") {
  const Config c = deepseek_v2_lite();
  check_v2_lite_shape(c);
  CHECK(c.rope.scaling == RopeScaling::kYarn);
  // (128 + 64)^-1/2 · mscale(40, 0.707)², as DeepseekV2Attention's yarn_apply_mscale.
  const double mscale = 0.1 * 0.707 * std::log(40.0) + 1.0;
  CHECK(c.logit_scale() == doctest::Approx(mscale * mscale / std::sqrt(192.0)).epsilon(1e-6));
  REQUIRE(validate(c).ok());
  PlanOptions o;
  o.max_tokens = 16;
  const Result<Plan> p = make_plan(c, o);
  REQUIRE(p.ok());
  CHECK(p->kv_bytes_per_token == uint64_t{27} * 576 * 2);  // one f16 row a layer: K and V at once
  CHECK(p->head(5).cache_v_offset == p->head(5).cache_k_offset);
  CHECK(p->q_width == 16 * 576);
  // Wq [16·192, 2048], Wkv_a [576, 2048], Wkv_b [16·256, 512], Wo [2048, 16·128], the latent norm.
  CHECK(p->weight_bytes_per_layer ==
        align_up((uint64_t{3072} * 2048 + 576 * 2048 + 4096 * 512 + 2048 * 2048 + 512) * 4));
  const std::string json = plan_json(*p);
  CHECK(json.find("\"latent_values_per_token\":576") != std::string::npos);
  CHECK(json.find("\"expanded_values_per_token\":5120") != std::string::npos);
}

TEST_CASE("mla: a deepseek2 GGUF plans what its config.json plans") {
  const Config hf = deepseek_v2_lite();
  for (bool mla_keys : {true, false}) {
    INFO(std::string(mla_keys ? "key_length_mla" : "key_length"));
    const std::vector<uint8_t> b = deepseek2_lite(mla_keys).bytes();
    const Result<Config> g = parse_gguf_metadata(b.data(), b.size(), "m.gguf");
    REQUIRE_MESSAGE(g.ok(), std::string(g.status().message()));
    check_v2_lite_shape(*g);
    CHECK(g->logit_scale() == doctest::Approx(1.0 / std::sqrt(192.0)).epsilon(1e-6));  // no YaRN in this file
    CHECK(validate(*g).ok());
    CHECK(make_plan(*g).value().kv_bytes_per_token == make_plan(hf).value().kv_bytes_per_token);
  }
  GgufWriter no_rope = deepseek2_lite(true);
  no_rope.u32kv("deepseek2.attention.q_lora_rank", 1536);
  const std::vector<uint8_t> q = no_rope.bytes();
  const Result<Config> with_q = parse_gguf_metadata(q.data(), q.size(), "m.gguf");
  REQUIRE(with_q.ok());
  CHECK(with_q->mla.q_lora_rank == 1536);
}

TEST_CASE("mla: MiniCPM3 rotates halves, Youtu and DeepSeek-V3 as rope_interleave says") {
  const char* minicpm3 = R"({"model_type": "minicpm3", "hidden_size": 2560, "num_attention_heads": 40,
    "num_key_value_heads": 40, "max_position_embeddings": 32768, "kv_lora_rank": 256, "q_lora_rank": 768,
    "qk_nope_head_dim": 64, "qk_rope_head_dim": 32, "rope_theta": 10000.0})";
  const Result<Config> m = parse_hf_config(minicpm3, std::strlen(minicpm3));
  REQUIRE(m.ok());
  CHECK(m->head_size() == 288);
  CHECK(m->mla.v_head_dim == 64);  // MiniCPM3Config: hidden_size / num_attention_heads where unset
  CHECK(m->rope.style == RopeStyle::kNeox);
  CHECK(m->logit_scale() == doctest::Approx(1.0 / std::sqrt(96.0)).epsilon(1e-6));
  REQUIRE(validate(*m).ok());
  const char* v3 = R"({"model_type": "deepseek_v3", "hidden_size": 512, "num_attention_heads": 4,
    "max_position_embeddings": 4096, "kv_lora_rank": 64, "q_lora_rank": 96, "qk_nope_head_dim": 32,
    "qk_rope_head_dim": 16, "v_head_dim": 24, "rope_interleave": false})";
  const Result<Config> d = parse_hf_config(v3, std::strlen(v3));
  REQUIRE(d.ok());
  CHECK(d->rope.style == RopeStyle::kNeox);
  CHECK(d->mla.q_lora_rank == 96);
  const char* other = R"({"model_type": "kimi_linear", "hidden_size": 512, "num_attention_heads": 4,
    "max_position_embeddings": 4096, "kv_lora_rank": 64, "qk_rope_head_dim": 16})";
  const Result<Config> unknown = parse_hf_config(other, std::strlen(other));
  REQUIRE_FALSE(unknown.ok());
  CHECK_HAS(unknown.status(), "multi-head latent attention (kv_lora_rank) of model_type kimi_linear");
}

// PLM-1.8B's attention as llama.cpp's plm converter writes it: key_length the query head (nope +
// rope), value_length the value head, no q_lora_rank, head_count_kv the config's 16.
GgufWriter plm_1_8b() {
  GgufWriter w;
  w.str("general.architecture", "plm")
      .u32kv("plm.context_length", 4096)
      .u32kv("plm.embedding_length", 2048)
      .u32kv("plm.block_count", 32)
      .u32kv("plm.attention.head_count", 16)
      .u32kv("plm.attention.head_count_kv", 16)
      .u32kv("plm.attention.kv_lora_rank", 512)
      .u32kv("plm.attention.key_length", 192)
      .u32kv("plm.attention.value_length", 128)
      .u32kv("plm.rope.dimension_count", 64)
      .f32kv("plm.rope.freq_base", 100000.0f);
  return w;
}

TEST_CASE("mla: PLM-1.8B's config.json and its plm GGUF plan the same DeepSeek-style latent attention") {
  const std::string path = std::string(HEADWAY_TEST_DATA) + "/hf/plm-1.8b.json";
  const Result<Config> hf = load_hf_config(path.c_str());
  REQUIRE_MESSAGE(hf.ok(), std::string(hf.status().message()));
  const std::vector<uint8_t> b = plm_1_8b().bytes();
  const Result<Config> g = parse_gguf_metadata(b.data(), b.size(), "plm.gguf");
  REQUIRE_MESSAGE(g.ok(), std::string(g.status().message()));
  for (const Config* c : {&*hf, &*g}) {
    CHECK(c->is_mla());
    CHECK(c->mla.kv_lora_rank == 512);
    CHECK(c->mla.q_lora_rank == 0);  // PLMConfig's q_lora_rank None: a full-rank q_proj
    CHECK(c->mla.qk_nope_head_dim == 128);
    CHECK(c->mla.qk_rope_head_dim == 64);
    CHECK(c->mla.v_head_dim == 128);
    CHECK(c->n_heads == 16);
    CHECK(c->kv_heads() == 1);
    CHECK(c->head_size() == 576);
    CHECK(c->rope.style == RopeStyle::kGptj);  // rope_interleave; llama.cpp's normal RoPE
    CHECK(c->rotary_dims() == 64);
    CHECK(c->rope.theta == 100000.0f);
    CHECK(c->rope.scaling == RopeScaling::kNone);
    CHECK(c->logit_scale() == doctest::Approx(1.0 / std::sqrt(192.0)).epsilon(1e-6));  // PLMAttention.scaling
    REQUIRE(validate(*c).ok());
  }
  const Result<Plan> hp = make_plan(*hf), gp = make_plan(*g);
  REQUIRE(hp.ok());
  REQUIRE(gp.ok());
  CHECK(hp->kv_bytes_per_token == uint64_t{32} * 576 * 2);
  CHECK(gp->kv_bytes_per_token == hp->kv_bytes_per_token);
  CHECK(gp->q_width == hp->q_width);
  CHECK(gp->weight_bytes_per_layer == hp->weight_bytes_per_layer);
  CHECK(plan_json(*gp) == plan_json(*hp));

  // rope_interleave false rotates halves, as PLMAttention's apply_rotary_pos_emb.
  const char* halves = R"({"model_type": "plm", "hidden_size": 512, "num_attention_heads": 4,
    "max_position_embeddings": 4096, "kv_lora_rank": 64, "qk_rope_head_dim": 16, "rope_interleave": false})";
  const Result<Config> h = parse_hf_config(halves, std::strlen(halves));
  REQUIRE(h.ok());
  CHECK(h->rope.style == RopeStyle::kNeox);
  CHECK(h->mla.qk_nope_head_dim == 128);  // PLMConfig's defaults where absent
  CHECK(h->mla.v_head_dim == 128);
  const char* mscale = R"({"model_type": "plm", "hidden_size": 512, "num_attention_heads": 4,
    "max_position_embeddings": 4096, "kv_lora_rank": 64, "qk_rope_head_dim": 16, "rope_scaling": {"type": "yarn",
    "factor": 4.0, "original_max_position_embeddings": 1024, "mscale_all_dim": 1.0}})";
  const Result<Config> m = parse_hf_config(mscale, std::strlen(mscale));
  REQUIRE_FALSE(m.ok());
  CHECK_HAS(m.status(), "rope_scaling's mscale_all_dim 1 with model_type plm");
}

}  // namespace
}  // namespace headway
