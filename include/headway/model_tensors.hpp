// The tensors of a model around its attention blocks, as one table: for each, when a config has
// it, its shape, whether it is kept in f32 or the plan's weight dtype, and its names in GGUF
// (llama.cpp's) and safetensors (Hugging Face's: decoders, BERT encoders, DistilBERT). The plan
// sizes the model weights region from it, Model and Encoder copy each present tensor into its
// slot, and the loaders find the file's tensor by these names. A new norm, bias or matrix is one
// row here.
//
// The attention blocks' own tensors (Q/K/V/O, their biases, q/k norms, sinks) are LayerWeights
// (headway/weights.hpp), loaded per layer by AttentionLayer.
#pragma once

#include <cstdint>

#include "headway/config.hpp"

namespace headway {

enum class ModelTensor : uint8_t {
  kEmbedding = 0,       // token embedding [vocab, d_model]
  kPositionEmbedding,   // learned absolute positions [max_positions, d_model] (BERT)
  kTokenTypeEmbedding,  // [type_vocab_size, d_model] (BERT; token type 0 is added)
  kEmbeddingNorm,       // the norm after the embeddings [d_model] (BERT)
  kEmbeddingNormBias,   // its bias (LayerNorm)
  kAttnNorm,            // per layer: before attention (pre-norm) or after its residual add (post-norm)
  kAttnNormBias,
  kFfnNorm,  // per layer: before the MLP (pre-norm) or after its residual add (post-norm)
  kFfnNormBias,
  kGate,       // per layer: SwiGLU's gate [ffn, d_model]
  kUp,         // per layer: [ffn, d_model]
  kUpBias,     // [ffn]
  kDown,       // per layer: [d_model, ffn]
  kDownBias,   // [d_model]
  kFinalNorm,  // pre-norm models: the norm before the head [d_model]
  kFinalNormBias,
  kLmHead,        // [vocab, d_model]; absent when tied to the embedding, and in an encoder
  kPostAttnNorm,  // per layer (Gemma 2/3): on the attention's output, before its residual add
  kPostFfnNorm,   // per layer (Gemma 2/3): on the MLP's output, before its residual add
};
inline constexpr uint32_t kModelTensorCount = 19;

struct TensorShape {
  uint32_t rows = 0;
  uint32_t cols = 0;
};

struct ModelTensorInfo {
  ModelTensor tensor;
  const char* name;  // for messages
  bool per_layer;
  bool f32;          // kept in f32 (norms, biases); else in the plan's weight dtype
  const char* gguf;  // llama.cpp's name (%u: the layer); null where GGUF has none
  const char* hf;    // Hugging Face decoders' name (%u: the layer)
  const char* bert;  // Hugging Face BERT-family encoders' name, after the model's prefix
  // DistilBERT's, after its prefix ("distilbert." in a task model's checkpoint, none in a bare
  // DistilBertModel's or a sentence-transformers folder's); null where it has none.
  const char* distilbert = nullptr;
};

// clang-format off
inline constexpr ModelTensorInfo kModelTensors[kModelTensorCount] = {
    {ModelTensor::kEmbedding, "embedding", false, false, "token_embd.weight", "model.embed_tokens.weight",
     "embeddings.word_embeddings.weight", "embeddings.word_embeddings.weight"},
    {ModelTensor::kPositionEmbedding, "position_embedding", false, false, "position_embd.weight", nullptr,
     "embeddings.position_embeddings.weight", "embeddings.position_embeddings.weight"},
    {ModelTensor::kTokenTypeEmbedding, "token_type_embedding", false, false, "token_types.weight", nullptr,
     "embeddings.token_type_embeddings.weight"},
    {ModelTensor::kEmbeddingNorm, "embedding_norm", false, true, "token_embd_norm.weight", nullptr,
     "embeddings.LayerNorm.weight", "embeddings.LayerNorm.weight"},
    {ModelTensor::kEmbeddingNormBias, "embedding_norm_bias", false, true, "token_embd_norm.bias", nullptr,
     "embeddings.LayerNorm.bias", "embeddings.LayerNorm.bias"},
    {ModelTensor::kAttnNorm, "attn_norm", true, true, "blk.%u.attn_norm.weight", "model.layers.%u.input_layernorm.weight",
     "encoder.layer.%u.attention.output.LayerNorm.weight",
     "transformer.layer.%u.sa_layer_norm.weight"},
    {ModelTensor::kAttnNormBias, "attn_norm_bias", true, true, "blk.%u.attn_norm.bias", nullptr,
     "encoder.layer.%u.attention.output.LayerNorm.bias", "transformer.layer.%u.sa_layer_norm.bias"},
    {ModelTensor::kFfnNorm, "ffn_norm", true, true, "blk.%u.ffn_norm.weight",
     "model.layers.%u.post_attention_layernorm.weight", "encoder.layer.%u.output.LayerNorm.weight",
     "transformer.layer.%u.output_layer_norm.weight"},
    {ModelTensor::kFfnNormBias, "ffn_norm_bias", true, true, "blk.%u.ffn_norm.bias", nullptr,
     "encoder.layer.%u.output.LayerNorm.bias", "transformer.layer.%u.output_layer_norm.bias"},
    {ModelTensor::kGate, "ffn_gate", true, false, "blk.%u.ffn_gate.weight", "model.layers.%u.mlp.gate_proj.weight",
     nullptr},
    {ModelTensor::kUp, "ffn_up", true, false, "blk.%u.ffn_up.weight", "model.layers.%u.mlp.up_proj.weight",
     "encoder.layer.%u.intermediate.dense.weight", "transformer.layer.%u.ffn.lin1.weight"},
    {ModelTensor::kUpBias, "ffn_up_bias", true, true, "blk.%u.ffn_up.bias", nullptr,
     "encoder.layer.%u.intermediate.dense.bias", "transformer.layer.%u.ffn.lin1.bias"},
    {ModelTensor::kDown, "ffn_down", true, false, "blk.%u.ffn_down.weight", "model.layers.%u.mlp.down_proj.weight",
     "encoder.layer.%u.output.dense.weight", "transformer.layer.%u.ffn.lin2.weight"},
    {ModelTensor::kDownBias, "ffn_down_bias", true, true, "blk.%u.ffn_down.bias", nullptr,
     "encoder.layer.%u.output.dense.bias", "transformer.layer.%u.ffn.lin2.bias"},
    {ModelTensor::kFinalNorm, "final_norm", false, true, "output_norm.weight", "model.norm.weight", nullptr},
    {ModelTensor::kFinalNormBias, "final_norm_bias", false, true, "output_norm.bias", nullptr, nullptr},
    {ModelTensor::kLmHead, "lm_head", false, false, "output.weight", "lm_head.weight", nullptr},
    {ModelTensor::kPostAttnNorm, "post_attn_norm", true, true, "blk.%u.post_attention_norm.weight",
     "model.layers.%u.post_attention_layernorm.weight", nullptr},
    {ModelTensor::kPostFfnNorm, "post_ffn_norm", true, true, "blk.%u.post_ffw_norm.weight",
     "model.layers.%u.post_feedforward_layernorm.weight", nullptr},
};
// clang-format on

namespace detail {
constexpr bool model_tensors_in_order() {
  for (uint32_t i = 0; i < kModelTensorCount; ++i) {
    if (static_cast<uint32_t>(kModelTensors[i].tensor) != i) return false;
  }
  return true;
}
}  // namespace detail
static_assert(detail::model_tensors_in_order(), "kModelTensors lists the ModelTensors in enum order");

constexpr const ModelTensorInfo& model_tensor_info(ModelTensor t) { return kModelTensors[static_cast<uint32_t>(t)]; }
constexpr const char* model_tensor_name(ModelTensor t) { return model_tensor_info(t).name; }

// Whether a config's model has tensor t.
constexpr bool model_has_tensor(const Config& c, ModelTensor t) {
  const ModelConfig& m = c.model;
  if (m.vocab_size == 0) return false;
  const bool layer_norm = m.norm == NormKind::kLayer;
  switch (t) {
    case ModelTensor::kEmbedding: return true;
    case ModelTensor::kPositionEmbedding: return m.max_positions > 0;
    case ModelTensor::kTokenTypeEmbedding: return m.type_vocab_size > 0;
    case ModelTensor::kEmbeddingNorm: return m.embedding_norm;
    case ModelTensor::kEmbeddingNormBias: return m.embedding_norm && layer_norm;
    case ModelTensor::kAttnNorm:
    case ModelTensor::kFfnNorm: return !m.output_norms_only;
    case ModelTensor::kAttnNormBias:
    case ModelTensor::kFfnNormBias: return layer_norm;
    case ModelTensor::kGate: return m.mlp == MlpKind::kSwiGlu || m.mlp == MlpKind::kGeGlu;
    case ModelTensor::kUp:
    case ModelTensor::kDown: return true;
    case ModelTensor::kUpBias:
    case ModelTensor::kDownBias: return m.mlp_bias;
    case ModelTensor::kFinalNorm: return !m.post_norm;
    case ModelTensor::kFinalNormBias: return !m.post_norm && layer_norm;
    case ModelTensor::kLmHead: return c.causal && !m.tie_word_embeddings;
    case ModelTensor::kPostAttnNorm:
    case ModelTensor::kPostFfnNorm: return m.sandwich_norm || m.output_norms_only;
  }
  return false;
}

// Tensor t's Hugging Face decoder name: the table's, but for the pre-MLP norm of the models with
// four norms a layer, which Gemma 2/3 call pre_feedforward_layernorm (their
// post_attention_layernorm is kPostAttnNorm).
constexpr const char* model_tensor_hf_name(const Config& c, ModelTensor t) {
  if (t == ModelTensor::kFfnNorm && c.model.sandwich_norm) return "model.layers.%u.pre_feedforward_layernorm.weight";
  return model_tensor_info(t).hf;
}

// Where ModelConfig::gate_up_fused's one tensor is: [2·ffn, d_model], kGate its first ffn rows and
// kUp the rest (%u: the layer).
inline constexpr const char* kGateUpGguf = "blk.%u.ffn_up.weight";
inline constexpr const char* kGateUpHf = "model.layers.%u.mlp.gate_up_proj.weight";

// Whether t is a norm's weight (what ModelConfig::norm_offset is added to).
constexpr bool model_tensor_is_norm_weight(ModelTensor t) {
  return t == ModelTensor::kEmbeddingNorm || t == ModelTensor::kAttnNorm || t == ModelTensor::kFfnNorm ||
         t == ModelTensor::kFinalNorm || t == ModelTensor::kPostAttnNorm || t == ModelTensor::kPostFfnNorm;
}

// [rows, cols] of tensor t in a config's model (a norm or a bias: [1, n]).
constexpr TensorShape model_tensor_shape(const Config& c, ModelTensor t) {
  const ModelConfig& m = c.model;
  switch (t) {
    case ModelTensor::kEmbedding:
    case ModelTensor::kLmHead: return {m.vocab_size, c.d_model};
    case ModelTensor::kPositionEmbedding: return {m.max_positions, c.d_model};
    case ModelTensor::kTokenTypeEmbedding: return {m.type_vocab_size, c.d_model};
    case ModelTensor::kGate:
    case ModelTensor::kUp: return {m.intermediate_size, c.d_model};
    case ModelTensor::kUpBias: return {1, m.intermediate_size};
    case ModelTensor::kDown: return {c.d_model, m.intermediate_size};
    default: return {1, c.d_model};
  }
}

}  // namespace headway
