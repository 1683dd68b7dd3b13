#include <cmath>

#include "headway/config.hpp"

namespace headway {

const char* norm_kind_name(NormKind k) {
  return k == NormKind::kRms ? "rms" : k == NormKind::kLayer ? "layer" : "none";
}
const char* mlp_kind_name(MlpKind k) {
  return k == MlpKind::kSwiGlu ? "swiglu" : k == MlpKind::kGelu ? "gelu" : k == MlpKind::kGeGlu ? "geglu" : "none";
}

const char* norm_placement_name(const ModelConfig& m) {
  return m.post_norm ? "post" : m.sandwich_norm ? "pre and output" : m.output_norms_only ? "output" : "pre";
}

const char* kv_rotation_name(KvRotation r) {
  switch (r) {
    case KvRotation::kNone: return "none";
    case KvRotation::kHadamard: return "hadamard";
  }
  return "unknown";
}

bool kv_rotation_from_name(const char* s, KvRotation* out) {
  if (s == nullptr) return false;
  for (KvRotation r : {KvRotation::kNone, KvRotation::kHadamard}) {
    const char* n = kv_rotation_name(r);
    uint32_t i = 0;
    while (n[i] != '\0' && s[i] == n[i]) ++i;
    if (n[i] == '\0' && s[i] == '\0') {
      *out = r;
      return true;
    }
  }
  return false;
}

const char* rope_style_name(RopeStyle s) {
  switch (s) {
    case RopeStyle::kNone: return "none";
    case RopeStyle::kNeox: return "neox";
    case RopeStyle::kGptj: return "gptj";
  }
  return "unknown";
}

const char* rope_scaling_name(RopeScaling s) {
  switch (s) {
    case RopeScaling::kNone: return "none";
    case RopeScaling::kLinear: return "linear";
    case RopeScaling::kLlama3: return "llama3";
    case RopeScaling::kYarn: return "yarn";
    case RopeScaling::kOther: return "other";
    case RopeScaling::kLongRope: return "longrope";
    case RopeScaling::kDynamic: return "dynamic";
    case RopeScaling::kProportional: return "proportional";
  }
  return "unknown";
}

double yarn_mscale(double factor, double m) { return factor <= 1 ? 1.0 : 0.1 * m * std::log(factor) + 1.0; }

float Config::logit_scale() const {
  if (scale > 0.0f) return scale;
  if (is_mla() && query_pre_attn_scalar <= 0.0f && rope.mscale_all_dim > 0.0f) {
    // DeepSeek's YaRN: (nope + rope)^-1/2 · mscale(factor, mscale_all_dim)².
    const double m = yarn_mscale(rope.factor, rope.mscale_all_dim);
    return static_cast<float>(m * m / std::sqrt(static_cast<double>(mla.qk_nope_head_dim + mla.qk_rope_head_dim)));
  }
  // MLA: the model's query head (nope + rope), not the absorbed one the kernels run.
  const float head =
      is_mla() ? static_cast<float>(mla.qk_nope_head_dim + mla.qk_rope_head_dim) : static_cast<float>(head_size());
  const float base = query_pre_attn_scalar > 0.0f ? query_pre_attn_scalar : head;
  return base > 0.0f ? 1.0f / std::sqrt(base) : 0.0f;
}

}  // namespace headway
