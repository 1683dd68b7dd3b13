#include "headway/encoder.hpp"

#include <cmath>
#include <cstring>

#include "runtime/linear/dense.hpp"
#include "runtime/model/model_blocks.hpp"
#include "runtime/model/model_ops.hpp"

namespace headway {

Status Encoder::init(const Arena& arena, const ModelWeightsSource& source, const LayerOptions& options) {
  arena_ = nullptr;
  n_layers_ = 0;
  if (!arena.bound()) return Status::error(Code::kFailedPrecondition, "encoder: the arena is not bound to a plan");
  const Config& c = arena.plan().config;
  if (c.model.vocab_size == 0 || c.causal || !c.model.post_norm) {
    return Status::error(Code::kInvalidArgument,
                         "encoder: the plan is not a post-norm encoder's (vocab_size %u, %s, %s norms): a decoder "
                         "runs in a Model (headway/model.hpp)",
                         c.model.vocab_size, c.causal ? "causal" : "bidirectional", c.model.post_norm ? "post" : "pre");
  }
  if (c.n_layers > kMaxLayers) {
    return Status::error(Code::kUnsupported, "encoder: %u layers, an Encoder holds at most %u", c.n_layers, kMaxLayers);
  }
  HEADWAY_RETURN_IF_ERROR(load_model_weights("encoder", arena, source, options, false, layers_, &borrowed_));
  arena_ = &arena;
  pool_ = options.pool;
  n_layers_ = c.n_layers;
  return Status();
}

Status Encoder::encode(const int32_t* ids, const uint32_t* cu_seqlens, uint32_t n_seqs, float* out) {
  if (arena_ == nullptr) return Status::error(Code::kFailedPrecondition, "encoder: encode before init");
  const Plan& p = arena_->plan();
  const Config& c = p.config;
  const ModelConfig& m = c.model;
  if (ids == nullptr || out == nullptr) return Status::error(Code::kInvalidArgument, "encoder: ids or out is null");
  HEADWAY_RETURN_IF_ERROR(layers_[0].check_packed(cu_seqlens, n_seqs));
  const uint32_t t = cu_seqlens[n_seqs];
  // Positions past the padding index (RoBERTa) are not a sequence's to use.
  const uint32_t first_position = m.padding_idx >= 0 ? static_cast<uint32_t>(m.padding_idx) + 1 : 0;
  for (uint32_t s = 0; s < n_seqs; ++s) {
    const uint32_t len = cu_seqlens[s + 1] - cu_seqlens[s];
    if (m.max_positions && len > m.max_positions - first_position) {
      return Status::error(Code::kOutOfRange, "encoder: sequence %u has %u tokens, the model has %u positions", s, len,
                           m.max_positions - first_position);
    }
  }
  for (uint32_t i = 0; i < t; ++i) {
    if (ids[i] < 0 || static_cast<uint32_t>(ids[i]) >= m.vocab_size) {
      return Status::error(Code::kInvalidArgument, "encoder: token id %d at %u is outside the vocabulary (0..%u)",
                           ids[i], i, m.vocab_size - 1);
    }
  }
  const uint32_t d = c.d_model;
  const size_t n = size_t{t} * d;
  float* h = arena_->stream();
  float* a = arena_->block_out();
  float* row = arena_->normed();
  float* hidden = arena_->mlp_hidden();
  const ModelWeightsView w{&p, arena_->model_weights(), &borrowed_};
  const TensorRef words = w.matrix(ModelTensor::kEmbedding, 0);
  const bool positions = model_has_tensor(c, ModelTensor::kPositionEmbedding);
  const bool types = model_has_tensor(c, ModelTensor::kTokenTypeEmbedding);
  const TensorRef position = positions ? w.matrix(ModelTensor::kPositionEmbedding, 0) : TensorRef{};
  const TensorRef type = types ? w.matrix(ModelTensor::kTokenTypeEmbedding, 0) : TensorRef{};
  for (uint32_t s = 0; s < n_seqs; ++s) {
    uint32_t counted = 0;  // RoBERTa: the sequence's non-padding tokens so far
    for (uint32_t i = cu_seqlens[s]; i < cu_seqlens[s + 1]; ++i) {
      float* hi = h + size_t{i} * d;
      tensor_row(words, ids[i], hi);
      if (positions) {
        uint32_t at = i - cu_seqlens[s];
        if (m.padding_idx >= 0) at = ids[i] == m.padding_idx ? first_position - 1 : first_position - 1 + ++counted;
        tensor_row(position, at, row);
        add_rows(hi, row, d);
      }
      if (types) {
        tensor_row(type, 0, row);
        add_rows(hi, row, d);
      }
    }
  }
  if (m.embedding_norm) apply_norm(w, ModelTensor::kEmbeddingNorm, ModelTensor::kEmbeddingNormBias, 0, h, h, t);
  for (uint32_t l = 0; l < n_layers_; ++l) {
    HEADWAY_RETURN_IF_ERROR(layers_[l].forward_packed(h, a, cu_seqlens, n_seqs));
    const BlockNorm attn_norm{
        .present = true, .weight = ModelTensor::kAttnNorm, .bias = ModelTensor::kAttnNormBias, .layer = l};
    add_residual(w, BlockNorm{}, a, h, attn_norm, h, t, pool_);
    apply_mlp(w, l, h, hidden, a, t, pool_);
    const BlockNorm ffn_norm{
        .present = true, .weight = ModelTensor::kFfnNorm, .bias = ModelTensor::kFfnNormBias, .layer = l};
    add_residual(w, BlockNorm{}, a, h, ffn_norm, h, t, pool_);
  }
  std::memcpy(out, h, n * sizeof(float));
  return Status();
}

void pool_embeddings(const float* hidden, const uint32_t* cu_seqlens, uint32_t n_seqs, uint32_t d, Pooling pooling,
                     bool normalize, float* out) {
  for (uint32_t s = 0; s < n_seqs; ++s) {
    float* o = out + size_t{s} * d;
    const uint32_t first = cu_seqlens[s];
    const uint32_t rows = pooling == Pooling::kCls ? 1 : cu_seqlens[s + 1] - first;
    for (uint32_t j = 0; j < d; ++j) o[j] = 0.0f;
    for (uint32_t i = first; i < first + rows; ++i) add_rows(o, hidden + size_t{i} * d, d);
    for (uint32_t j = 0; j < d; ++j) o[j] /= static_cast<float>(rows);
    if (!normalize) continue;
    float sum = 0.0f;
    for (uint32_t j = 0; j < d; ++j) sum += o[j] * o[j];
    // sentence-transformers' Normalize: x / max(‖x‖, 1e-12).
    const float norm = std::fmax(std::sqrt(sum), 1e-12f);
    for (uint32_t j = 0; j < d; ++j) o[j] /= norm;
  }
}

}  // namespace headway
