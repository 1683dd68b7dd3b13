#include "runtime/formats/hf_mla.hpp"

namespace headway::formats {
namespace {

using json = nlohmann::json;

// Each family's config class defaults: DeepseekV2Config, DeepseekV3Config, YoutuConfig,
// MiniCPM3Config (whose v_head_dim is hidden_size / num_attention_heads where unset), PLMConfig
// (PLM-1.8B: a full-rank q_proj; PLMAttention is DeepseekV3Attention's MLA with
// rope_interleave, true by default, and a logit scale of qk_head_dim^-1/2 with no YaRN mscale).
struct MlaFamily {
  const char* model_type;
  MlaShape defaults;
  bool interleaved;       // RoPE on adjacent pairs (unless rope_interleave says false)
  bool reads_interleave;  // the config's rope_interleave decides (DeepSeek-V3, Youtu)
  // YaRN's mscale_all_dim scales the logits by mscale² (DeepseekV2Attention's yarn_apply_mscale,
  // Config::logit_scale); PLMAttention keeps qk_head_dim^-1/2, so there it is refused.
  bool mscale_logits;
};
constexpr MlaFamily kFamilies[] = {
    {"deepseek_v2", {512, 1536, 128, 64, 128}, true, false, true},
    {"deepseek_v3", {512, 1536, 128, 64, 128}, true, true, true},
    {"youtu", {512, 1536, 128, 64, 128}, true, true, true},
    {"minicpm3", {256, 768, 64, 32, 0}, false, false, true},
    {"plm", {512, 0, 128, 64, 128}, true, true, false},
};

Status read_size(const Where& w, const json& obj, const char* key, uint32_t min_value, uint32_t* out) {
  if (const json* v = lookup(obj, key)) return read_count(w, key, *v, min_value, out);
  return Status();
}

}  // namespace

Status read_mla(const Where& w, const json& obj, const std::string& model_type, Config* cfg) {
  if (lookup(obj, "kv_lora_rank") == nullptr && lookup(obj, "qk_rope_head_dim") == nullptr) return Status();
  const MlaFamily* family = nullptr;
  for (const MlaFamily& f : kFamilies) family = model_type == f.model_type ? &f : family;
  if (family == nullptr) {
    return Status::error(Code::kUnsupported,
                         "%s: multi-head latent attention (%skv_lora_rank) of model_type %s: headway runs MLA as "
                         "deepseek_v2, deepseek_v3, minicpm3, youtu and plm compute it (their RoPE pairing and scale)",
                         w.source, w.prefix, model_type.empty() ? "unset" : model_type.c_str());
  }
  if (!family->mscale_logits && cfg->rope.mscale_all_dim > 0.0f) {
    return Status::error(Code::kUnsupported,
                         "%s: %srope_scaling's mscale_all_dim %g with model_type %s: its attention does not scale the "
                         "logits by YaRN's mscale as DeepSeek's does, and headway computes DeepSeek's",
                         w.source, w.prefix, static_cast<double>(cfg->rope.mscale_all_dim), model_type.c_str());
  }
  MlaShape m = family->defaults;
  if (m.v_head_dim == 0 && cfg->n_heads != 0) m.v_head_dim = cfg->d_model / cfg->n_heads;
  HEADWAY_RETURN_IF_ERROR(read_size(w, obj, "kv_lora_rank", 1, &m.kv_lora_rank));
  HEADWAY_RETURN_IF_ERROR(read_size(w, obj, "qk_nope_head_dim", 1, &m.qk_nope_head_dim));
  HEADWAY_RETURN_IF_ERROR(read_size(w, obj, "qk_rope_head_dim", 1, &m.qk_rope_head_dim));
  HEADWAY_RETURN_IF_ERROR(read_size(w, obj, "v_head_dim", 1, &m.v_head_dim));
  if (obj.contains("q_lora_rank")) {  // null: a full-rank q_proj (DeepSeek-V2-Lite)
    m.q_lora_rank = 0;
    HEADWAY_RETURN_IF_ERROR(read_size(w, obj, "q_lora_rank", 1, &m.q_lora_rank));
  }
  cfg->mla = m;
  cfg->head_dim = m.kv_lora_rank + m.qk_rope_head_dim;
  cfg->n_kv_heads = 1;
  bool interleaved = family->interleaved;
  if (family->reads_interleave) HEADWAY_RETURN_IF_ERROR(read_flag(w, obj, "rope_interleave", &interleaved));
  if (cfg->rope.style != RopeStyle::kNone) {
    cfg->rope.style = interleaved ? RopeStyle::kGptj : RopeStyle::kNeox;
    cfg->rope.rotary_dim = m.qk_rope_head_dim;
  }
  return Status();
}

}  // namespace headway::formats
