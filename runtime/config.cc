#include <cmath>

#include "headway/config.hpp"

namespace headway {

const char* dtype_name(DType t) {
  switch (t) {
    case DType::kF32: return "f32";
    case DType::kF16: return "f16";
    case DType::kBF16: return "bf16";
    case DType::kQ8_0: return "q8_0";
    case DType::kQ4_0: return "q4_0";
  }
  return "unknown";
}

bool dtype_from_name(const char* name, DType* out) {
  for (DType t : {DType::kF32, DType::kF16, DType::kBF16, DType::kQ8_0, DType::kQ4_0}) {
    const char* n = dtype_name(t);
    size_t i = 0;
    while (name && name[i] && name[i] == n[i]) ++i;
    if (name && name[i] == '\0' && n[i] == '\0') {
      *out = t;
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
  }
  return "unknown";
}

float Config::logit_scale() const {
  if (scale > 0.0f) return scale;
  const float base = query_pre_attn_scalar > 0.0f ? query_pre_attn_scalar : static_cast<float>(head_size());
  return base > 0.0f ? 1.0f / std::sqrt(base) : 0.0f;
}

}  // namespace headway
