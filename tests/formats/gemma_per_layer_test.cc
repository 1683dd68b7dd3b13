// Gemma 3n's and Gemma 4's attention as config.json gives it: v normed without a weight, q/k
// norms times their weight, a logit scale of 1; Gemma 4's full layers with their own head_dim,
// kv heads, V from K and proportional RoPE, each layer alone planning its own shape; the last
// num_kv_shared_layers layers reading an earlier layer's cache. A whole plan holds a cache for the
// layers that own one only, and gives each layer its own head shape.
#include <doctest/doctest.h>

#include <cstring>
#include <string>

#include "headway/config.hpp"
#include "headway/tools/model_files.hpp"
#include "headway/plan.hpp"

namespace headway {
namespace {

bool contains(const Status& s, const char* part) { return std::strstr(s.message(), part) != nullptr; }
#define CHECK_HAS(status, part) CHECK_MESSAGE(contains(status, part), std::string((status).message()))

Config parse_json(const std::string& text) {
  const Result<Config> c = parse_hf_config(text.data(), text.size());
  REQUIRE_MESSAGE(c.ok(), std::string(c.status().message()));
  return *c;
}

// Gemma 4's layout at a small size: four sliding layers then a full one, twice; the last four
// layers read earlier caches; full layers of head_dim 512 with one kv head and V from K.
std::string gemma4(const std::string& extra = "") {
  return R"({"model_type": "gemma4", "text_config": {"model_type": "gemma4_text", "hidden_size": 1536,
    "num_attention_heads": 8, "num_key_value_heads": 2, "head_dim": 256, "global_head_dim": 512,
    "num_global_key_value_heads": 1, "attention_k_eq_v": true, "num_hidden_layers": 10,
    "max_position_embeddings": 131072, "sliding_window": 512, "rms_norm_eps": 1e-6,
    "layer_types": ["sliding_attention", "sliding_attention", "sliding_attention", "sliding_attention",
      "full_attention", "sliding_attention", "sliding_attention", "sliding_attention", "sliding_attention",
      "full_attention"],
    "rope_parameters": {"full_attention": {"rope_type": "proportional", "partial_rotary_factor": 0.25,
      "rope_theta": 1000000.0}, "sliding_attention": {"rope_type": "default", "rope_theta": 10000.0}})" +
         extra + "}}";
}

TEST_CASE("gemma per layer: Gemma 4's full and sliding layers each plan their own shape") {
  const Config c = parse_json(gemma4(R"(, "num_kv_shared_layers": 4)"));
  CHECK(c.v_norm);
  CHECK(c.qk_norm);
  CHECK(c.qk_norm_offset == 0.0f);  // Gemma4RMSNorm scales by its weight as it is
  CHECK(c.logit_scale() == 1.0f);
  CHECK(c.layers.kv_shared_layers == 4);

  REQUIRE(validate(c).ok());
  REQUIRE(validate_layer(c, 4).ok());
  const Config full = c.layer_alone(4);
  CHECK(full.head_size() == 512);
  CHECK(full.kv_heads() == 1);
  CHECK(full.k_eq_v);
  CHECK(full.rope.scaling == RopeScaling::kProportional);
  CHECK(full.rope.rotated_pairs == 64);  // a quarter of 512 dims
  CHECK(full.rope.theta == 1000000.0f);
  const Result<Plan> fp = make_plan(full, PlanOptions{});
  REQUIRE(fp.ok());
  CHECK(fp->kv_bytes_per_token == 2 * 512 * 2);  // one kv head, K and V in f16
  // Wq [4096, 1536] and Wk [512, 1536] (no Wv), Wo [1536, 4096], the two norms of 512, in f32.
  CHECK(fp->weight_bytes_per_layer == align_up((uint64_t{4096 + 512 + 4096} * 1536 + 1024) * 4));

  REQUIRE(validate_layer(c, 5).ok());
  const Config sliding = c.layer_alone(5);
  CHECK(sliding.head_size() == 256);
  CHECK(sliding.kv_heads() == 2);
  CHECK_FALSE(sliding.k_eq_v);
  CHECK(sliding.window == 512);
  CHECK(sliding.rope.scaling == RopeScaling::kNone);
  CHECK(sliding.rope.theta == 10000.0f);

  // Layers 6 to 9 read the last earlier cache of their kind; alone, each runs after that layer.
  CHECK(c.kv_owner(7) == 5);
  CHECK(c.kv_owner(9) == 4);
  CHECK(c.kv_owner(3) == 3);
  REQUIRE(validate_layer(c, 7).ok());
  const Config pair = c.layer_with_owner(9);
  CHECK(pair.n_layers == 2);
  CHECK(pair.head_size() == 512);
  CHECK(pair.kv_owner(1) == 0);
}

TEST_CASE("gemma per layer: a whole Gemma 4 plan holds the owners' caches and each layer's own shape") {
  const Config c = parse_json(gemma4(R"(, "num_kv_shared_layers": 4)"));
  const Result<Plan> made = make_plan(c, PlanOptions{});
  REQUIRE_MESSAGE(made.ok(), std::string(made.status().message()));
  const Plan& p = *made;
  // Owners: sliding 0-3 and 5, full 4; sharing: sliding 6-8 (reading 5), full 9 (reading 4).
  CHECK(p.kv_shared_layers == 4);
  const uint64_t token = 2 * 2 * 256 * 2;  // K and V, 2 kv heads of 256 in f16 (a full layer: 1 of 512)
  CHECK(p.kv_bytes_per_token == 6 * token);
  const uint64_t ring = align_up(token * (512 + 512 - 1));
  const uint64_t full = align_up(token * 131072);
  CHECK(p.kv_bytes_sliding_layer == ring);
  CHECK(p.kv_bytes_full_layer == full);
  CHECK(p.kv_cache_bytes == 5 * ring + full);
  CHECK(p.kv_shared_saved_bytes == 3 * ring + full);
  for (uint32_t i : {6u, 7u, 8u}) {
    CHECK(p.layer(i).shares_kv);
    CHECK(p.layer(i).kv_owner == 5);
    CHECK(p.layer(i).kv_bytes == 0);
    CHECK(p.layer(i).kv_offset == p.layer(5).kv_offset);
  }
  CHECK(p.layer(9).kv_offset == p.layer(4).kv_offset);
  CHECK_FALSE(p.layer(5).shares_kv);
  CHECK(p.layer(5).kv_offset == p.layer(4).kv_offset + full);
  // Each layer runs its own head shape; the shared regions fit the larger.
  const Plan sliding = layer_plan(p, 0), global = layer_plan(p, 9);
  CHECK(sliding.head_dim == 256);
  CHECK(sliding.kv_width == 512);
  CHECK(global.head_dim == 512);
  CHECK(global.group_size == 8);
  CHECK(global.q_width == 4096);
  CHECK(global.kernel == KernelKind::kGeneric);
  CHECK(global.cache_rows == 131072);
  CHECK(layer_plan(p, 7).cache_rows == 512 + 512 - 1);
  CHECK(p.activation_bytes >= uint64_t{512} * (4096 + 2 * 512) * 4);
  // Weights (f32): Wq, Wk, Wv (not on full layers: V from K), Wo and the q/k norms; the sharing
  // layers have no Wk, Wv or k norm.
  const uint64_t owning_sliding = align_up((uint64_t{2048 + 512 + 512 + 2048} * 1536 + 512) * 4);
  const uint64_t sharing_sliding = align_up((uint64_t{2048 + 2048} * 1536 + 256) * 4);
  const uint64_t owning_full = align_up((uint64_t{4096 + 512 + 4096} * 1536 + 1024) * 4);
  const uint64_t sharing_full = align_up((uint64_t{4096 + 4096} * 1536 + 512) * 4);
  CHECK(p.weight_bytes == 5 * owning_sliding + owning_full + 3 * sharing_sliding + sharing_full);
  CHECK(p.weights_region_bytes == p.weight_bytes);
  CHECK(p.layer_weights_offset(5) == p.weights_offset + 4 * owning_sliding + owning_full);
  CHECK(layer_plan(p, 9).weight_bytes_per_layer == sharing_full);
}

TEST_CASE("gemma per layer: Gemma 4's defaults and its errors") {
  const Config d = parse_json(R"({"model_type": "gemma4_text", "hidden_size": 512, "num_attention_heads": 4,
    "num_key_value_heads": 2, "num_hidden_layers": 6, "max_position_embeddings": 4096, "sliding_window": 64})");
  CHECK(d.head_size() == 256);
  CHECK(d.layers.full_head_dim == 512);
  CHECK(d.layers.full_kv_heads == 0);  // num_global_key_value_heads applies with attention_k_eq_v only
  CHECK(d.rope.scaling == RopeScaling::kProportional);
  CHECK(d.rope.rotated_pairs == 64);
  CHECK(d.layer_alone(0).rope.theta == 10000.0f);
  CHECK(d.layer_alone(5).rope.theta == 1000000.0f);
  CHECK(d.layer_slides(4));
  CHECK_FALSE(d.layer_slides(5));

  const Config none = parse_json(gemma4(R"(, "num_kv_shared_layers": 0)"));
  CHECK(none.layers.kv_shared_layers == 0);
  const Config over = parse_json(gemma4(R"(, "num_kv_shared_layers": 11)"));
  CHECK_HAS(validate(over), "num_kv_shared_layers 11 is more than the 10 layers");
  const std::string all = gemma4(R"(, "use_bidirectional_attention": "all")");
  const Result<Config> bi = parse_hf_config(all.data(), all.size());
  REQUIRE_FALSE(bi.ok());
  CHECK_HAS(bi.status(), "text_config.use_bidirectional_attention \"all\"");
  Config no_pairs = parse_json(gemma4());
  no_pairs.rope.rotated_pairs = 0;
  CHECK_HAS(validate(no_pairs.layer_alone(4)), "proportional RoPE rotates 0 pairs; head_dim 512 has 256");
}

TEST_CASE("gemma per layer: Gemma 3n shares caches with one head shape") {
  const Config c = parse_json(R"({"model_type": "gemma3n_text", "hidden_size": 2048, "num_attention_heads": 8,
    "num_key_value_heads": 2, "head_dim": 256, "num_hidden_layers": 5, "max_position_embeddings": 32768,
    "sliding_window": 512, "num_kv_shared_layers": 2, "rope_theta": 1000000.0, "rope_local_base_freq": 10000.0,
    "layer_types": ["sliding_attention", "sliding_attention", "full_attention", "sliding_attention",
      "full_attention"]})");
  CHECK(c.v_norm);
  CHECK_FALSE(c.layers.full_k_eq_v);
  CHECK(c.layers.full_head_dim == 0);
  CHECK(c.logit_scale() == 1.0f);
  REQUIRE(validate(c).ok());
  REQUIRE(validate_layer(c, 2).ok());
  CHECK(c.layer_alone(2).rope.theta == 1000000.0f);
  CHECK(c.layer_alone(1).rope.theta == 10000.0f);
  CHECK(c.kv_owner(3) == 1);
  CHECK(c.kv_owner(4) == 2);
  const Result<Plan> p = make_plan(c, PlanOptions{});
  REQUIRE(p.ok());
  CHECK(p->kv_shared_layers == 2);
  CHECK(p->kv_cache_bytes == 2 * p->kv_bytes_sliding_layer + p->kv_bytes_full_layer);
}

TEST_CASE("gemma per layer: the spec's v_norm and k_eq_v") {
  const Result<Config> c = parse_spec("d_model=256 heads=4 kv_heads=2 head_dim=64 ctx=64 v_norm=1 k_eq_v=1 scale=1");
  REQUIRE(c.ok());
  CHECK(c->v_norm);
  CHECK(c->k_eq_v);
  const Result<Plan> p = make_plan(*c, PlanOptions{});
  REQUIRE(p.ok());
  // Wq [256, 256], Wk [128, 256] and no Wv, Wo [256, 256], f32.
  CHECK(p->weight_bytes_per_layer == align_up(uint64_t{256 + 128 + 256} * 256 * 4));
}

}  // namespace
}  // namespace headway
