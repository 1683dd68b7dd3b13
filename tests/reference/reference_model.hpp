// The double-precision reference of a whole pre-norm decoder with RMSNorm and a SwiGLU MLP (the
// Llama shape Model runs, headway/model.hpp), over the reference attention block:
//
//   h = embedding[ids]
//   for each layer:  h += attn(rms_norm(h, attn_norm))                      (RefLayer, its own kind)
//                    h += down(silu(gate(x)) · up(x)),  x = rms_norm(h, ffn_norm)
//   logits = rms_norm(h, final_norm) · headᵀ                                head: lm_head or the embedding when tied
//
// rms_norm(x, w) = x / sqrt(mean(x²) + eps) · w. Weights come as the values the runtime reads (a
// q8_0 block's q · d, an f16's value), in double; K/V are rounded to the cache's kv_dtype as
// RefLayer rounds them. Stateful like RefLayer: each forward() continues the sequence.
#pragma once

#include <cstdint>
#include <vector>

#include "headway/config.hpp"
#include "headway/model_tensors.hpp"
#include "tests/reference/reference_layer.hpp"

namespace headway {
namespace test {

struct RefModelWeights {
  // [ModelTensor][layer] row-major (the whole-model tensors at layer 0); empty: absent.
  std::vector<std::vector<double>> tensor[kModelTensorCount];
  std::vector<RefWeights> attention;  // per layer
  const std::vector<double>& of(ModelTensor t, uint32_t layer) const {
    return tensor[static_cast<uint32_t>(t)][model_tensor_info(t).per_layer ? layer : 0];
  }
};

class RefModel {
 public:
  // The config must be a causal decoder with RMSNorm, SwiGLU, no embedding scale, sandwich
  // norms or logit softcap (reference_model_supports).
  RefModel(const Config& config, RefModelWeights weights);
  // ids [t] at the next t positions → each one's next-token logits [t, vocab].
  std::vector<double> forward(const std::vector<int32_t>& ids);

 private:
  Config c_;
  RefModelWeights w_;
  std::vector<RefLayer> layers_;
};

// Whether RefModel computes what Model computes for this config.
constexpr bool reference_model_supports(const Config& c) {
  const ModelConfig& m = c.model;
  return c.causal && m.vocab_size > 0 && m.norm == NormKind::kRms && m.mlp == MlpKind::kSwiGlu && !m.mlp_bias &&
         !m.post_norm && !m.embedding_norm && m.max_positions == 0 && m.type_vocab_size == 0 && m.norm_offset == 0.0f &&
         !m.scale_embedding && !m.sandwich_norm && m.final_softcap == 0.0f;
}

}  // namespace test
}  // namespace headway
