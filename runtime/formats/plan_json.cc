#include "headway/tools/plan_json.hpp"

#include <nlohmann/json.hpp>

namespace headway {
namespace {

std::string layer_list(const LayerBits& bits, char on, char off) {
  std::string s;
  for (uint32_t i = 0; i < bits.count; ++i) s += bits.get(i) ? on : off;
  return s;
}

void add_layers(const Plan& p, nlohmann::ordered_json* j) {
  const Config& c = p.config;
  const LayerKinds& k = c.layers;
  (*j)["layer_kinds"] = {{"sliding_pattern", k.sliding_pattern},
                         {"nope_interval", k.nope_interval},
                         {"rope_local_theta", k.local_rope_theta},
                         {"layer_types", layer_list(k.sliding, 's', 'f')},
                         {"rope_layers", layer_list(k.rope, '1', '0')}};
  (*j)["sinks"] = c.sinks;
  (*j)["sink_tokens"] = c.sink_tokens;
  (*j)["alibi"] = c.alibi;
  (*j)["alibi_max_bias"] = c.alibi_max_bias;
  (*j)["alibi_times_scale"] = c.alibi_times_scale;
  (*j)["sliding_layers"] = p.sliding_layers;
  (*j)["ring_rows"] = p.ring_rows;
  nlohmann::ordered_json layers = nlohmann::ordered_json::array();
  const uint32_t n = listed_layers(p);
  for (uint32_t i = 0; i < n; ++i) {
    const LayerPlan l = p.layer(i);
    const Plan own = l.linear ? p : layer_plan(p, i);
    layers.push_back({{"index", l.index},
                      {"attention", l.linear    ? "linear"
                                    : l.sliding ? "sliding"
                                                : "full"},
                      {"window", l.window},
                      {"rope", rope_style_name(l.rope)},
                      {"rope_theta", l.rope_theta},
                      {"kv_rows", l.kv_rows},
                      {"kv_bytes", l.kv_bytes},
                      {"kv_offset", l.kv_offset},
                      {"sinks", l.sinks},
                      {"sink_tokens", l.sink_tokens},
                      {"alibi", l.alibi},
                      {"head_dim", l.linear ? 0 : own.head_dim},
                      {"kv_heads", l.linear ? 0 : own.config.kv_heads()},
                      {"weight_bytes", l.linear ? p.linear_weight_bytes_per_layer : own.weight_bytes_per_layer},
                      {"kv_owner", l.kv_owner},
                      {"state_bytes", l.linear ? p.linear_state_bytes_per_layer : 0},
                      {"state_offset", l.linear ? l.state_offset : 0}});
  }
  if (n < c.n_layers) (*j)["layers_listed"] = n;
  (*j)["layers"] = layers;
}

nlohmann::ordered_json plan_object(const Plan& p) {
  const Config& c = p.config;
  nlohmann::ordered_json j;
  j["model"] = c.name;
  j["d_model"] = c.d_model;
  j["n_heads"] = c.n_heads;
  j["n_kv_heads"] = c.kv_heads();
  j["head_dim"] = p.head_dim;
  j["group_size"] = p.group_size;
  j["attention"] = attention_kind_name(p);
  j["q_width"] = p.q_width;
  j["q_rows"] = p.q_rows;
  j["kv_width"] = p.kv_width;
  j["qkv_width"] = p.qkv_width;
  j["kernel"] = kernel_name(p.kernel);
  j["max_seq"] = c.max_seq;
  j["n_layers"] = c.n_layers;
  j["causal"] = c.causal;
  j["window"] = c.window;
  j["window_symmetric"] = c.window_symmetric;
  j["softcap"] = c.softcap;
  j["scale"] = c.logit_scale();
  j["rope"] = {{"style", rope_style_name(c.rope.style)},
               {"theta", c.rope.theta},
               {"rotary_dim", c.rotary_dims()},
               {"scaling", rope_scaling_name(c.rope.scaling)}};
  if (c.rope.scaling == RopeScaling::kLlama3 || c.rope.scaling == RopeScaling::kYarn ||
      c.rope.scaling == RopeScaling::kLongRope) {
    j["rope"]["factor"] = c.rope.factor;
    j["rope"]["original_max_seq"] = c.rope.original_max_seq;
  }
  if (c.rope.scaling == RopeScaling::kProportional) {
    j["rope"]["factor"] = c.rope.factor;
    j["rope"]["rotated_pairs"] = c.rope.rotated_pairs;
  }
  j["qk_norm"] = !c.qk_norm ? "none" : c.qk_norm_across_heads ? "across heads" : "per head";
  j["qk_norm_offset"] = c.qk_norm_offset;
  j["output_gate"] = c.output_gate;
  if (c.is_mla()) {
    const MlaShape& m = c.mla;
    j["mla"] = {{"kv_lora_rank", m.kv_lora_rank},
                {"q_lora_rank", m.q_lora_rank},
                {"qk_nope_head_dim", m.qk_nope_head_dim},
                {"qk_rope_head_dim", m.qk_rope_head_dim},
                {"v_head_dim", m.v_head_dim},
                {"latent_values_per_token", m.kv_lora_rank + m.qk_rope_head_dim},
                {"expanded_values_per_token", c.n_heads * (m.qk_nope_head_dim + m.qk_rope_head_dim + m.v_head_dim)}};
  }
  if (p.linear_layers) {
    const GatedDeltaShape& g = c.gated_delta;
    j["gated_delta"] = {{"linear_layers", p.linear_layers},
                        {"key_heads", g.key_heads},
                        {"value_heads", g.value_heads},
                        {"key_head_dim", g.key_head_dim},
                        {"value_head_dim", g.value_head_dim},
                        {"conv_kernel", g.conv_kernel},
                        {"tiled_value_heads", g.tiled_value_heads},
                        {"state_bytes_per_layer", p.linear_state_bytes_per_layer},
                        {"state_bytes", p.linear_state_bytes}};
  }
  j["v_norm"] = c.v_norm;
  j["k_eq_v"] = c.k_eq_v;
  j["kv_dtype"] = dtype_name(c.kv_dtype);
  j["kv_rotation"] = kv_rotation_name(c.kv_rotation);
  j["weight_dtype"] = dtype_name(p.options.weight_dtype);
  j["threads"] = p.options.threads;
  j["max_tokens"] = p.max_tokens;
  j["cache_rows"] = p.cache_rows;
  j["kv_bytes_per_token"] = p.kv_bytes_per_token;
  j["kv_bytes_per_layer"] = p.kv_bytes_per_layer;
  j["kv_cache_bytes"] = p.kv_cache_bytes;
  j["kv_shared_layers"] = p.kv_shared_layers;
  j["kv_shared_saved_bytes"] = p.kv_shared_saved_bytes;
  j["weight_bytes"] = p.weight_bytes;
  j["projection"] = projection_name(p.options.projection);
  j["packed_bytes"] = p.packed_bytes;
  j["activation_bytes"] = p.activation_bytes;
  j["scratch_bytes_per_thread"] = p.scratch_bytes_per_thread;
  j["scratch_bytes"] = p.scratch_bytes;
  const ModelConfig& m = c.model;
  j["vocab_size"] = m.vocab_size;
  j["intermediate_size"] = m.intermediate_size;
  j["mlp"] = mlp_kind_name(m.mlp);
  j["norm"] = norm_kind_name(m.norm);
  j["norm_placement"] = norm_placement_name(m);
  j["gate_up_fused"] = m.gate_up_fused;
  j["tie_word_embeddings"] = m.tie_word_embeddings;
  j["model_weight_bytes"] = p.model_weights_bytes;
  j["model_activation_bytes"] = p.model_activation_bytes;
  j["arena_bytes"] = p.arena_bytes;
  nlohmann::ordered_json regions = nlohmann::ordered_json::object();
  const ArenaRegions all = arena_regions(p);
  for (const ArenaRegion& r : all.region) regions[r.name] = {{"offset", r.offset}, {"bytes", r.bytes}};
  j["regions"] = regions;
  nlohmann::ordered_json heads = nlohmann::ordered_json::array();
  for (uint32_t h = 0; h < c.n_heads; ++h) {
    const HeadLayout l = p.head(h);
    heads.push_back({{"q_head", l.q_head},
                     {"kv_head", l.kv_head},
                     {"qkv_q_offset", l.qkv_q_offset},
                     {"qkv_k_offset", l.qkv_k_offset},
                     {"qkv_v_offset", l.qkv_v_offset},
                     {"cache_k_offset", l.cache_k_offset},
                     {"cache_v_offset", l.cache_v_offset}});
  }
  j["heads"] = heads;
  add_layers(p, &j);
  return j;
}

}  // namespace

// A model name from a spec string or a file need not be UTF-8: its invalid bytes become U+FFFD
// (JSON text is UTF-8; the default handler would abort, exceptions being off).
std::string plan_json(const Plan& plan) {
  return plan_object(plan).dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

}  // namespace headway
