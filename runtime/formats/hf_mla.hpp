// Multi-head latent attention from config.json (Config::mla): DeepSeek-V2/V3, MiniCPM3, Youtu-LLM, PLM.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "headway/config.hpp"
#include "runtime/formats/json_values.hpp"

namespace headway::formats {

// When obj has kv_lora_rank or qk_rope_head_dim, after the RoPE and its scaling are read: the
// head sizes (kv_lora_rank, q_lora_rank (null: a full-rank q_proj), qk_nope_head_dim,
// qk_rope_head_dim, v_head_dim; the family's config defaults where absent), the attention shape
// they make (one kv head of kv_lora_rank + qk_rope_head_dim, RoPE on the first
// qk_rope_head_dim values: DeepSeek's, Youtu's and PLM's interleaved pairs unless rope_interleave is
// false, MiniCPM3's halves); the logit scale follows from them (Config::logit_scale). A model
// type whose module headway does not know is refused by name.
Status read_mla(const Where& w, const nlohmann::json& obj, const std::string& model_type, Config* cfg);

}  // namespace headway::formats
