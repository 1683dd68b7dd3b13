#include "headway/model.hpp"

#include <cmath>
#include <cstring>

#include "runtime/linear/dense.hpp"
#include "runtime/model/model_blocks.hpp"
#include "runtime/model/model_ops.hpp"

namespace headway {

Status Model::init(const Arena& arena, const ModelWeightsSource& source, const LayerOptions& options) {
  arena_ = nullptr;
  n_layers_ = 0;
  if (!arena.bound()) return Status::error(Code::kFailedPrecondition, "model: the arena is not bound to a plan");
  const Plan& p = arena.plan();
  const Config& c = p.config;
  if (c.model.vocab_size == 0) {
    return Status::error(Code::kInvalidArgument,
                         "model: the plan has no model (vocab_size 0): attention blocks alone "
                         "run in a Session");
  }
  if (!c.causal) {
    return Status::error(
        Code::kInvalidArgument,
        "model: the plan is an encoder's (bidirectional): it runs in an Encoder (headway/encoder.hpp)");
  }
  if (c.n_layers > kMaxLayers) {
    return Status::error(Code::kUnsupported, "model: %u layers, a Model holds at most %u", c.n_layers, kMaxLayers);
  }
  arena_ = nullptr;  // until the load succeeds: a failed one leaves layers half made
  HEADWAY_RETURN_IF_ERROR(load_model_weights("model", arena, source, options, true, layers_, &borrowed_));
  arena_ = &arena;
  pool_ = options.pool;
  n_layers_ = c.n_layers;
  last_row_ = 0;
  return Status();
}

const float* Model::logits() const {
  if (arena_ == nullptr) return nullptr;
  return arena_->logits() + size_t{last_row_} * arena_->plan().config.model.vocab_size;
}

void Model::reset() {
  for (uint32_t l = 0; l < n_layers_; ++l) layers_[l].reset();
}

Status Model::prefill(const int32_t* ids, uint32_t n, float* logits) {
  if (arena_ == nullptr) return Status::error(Code::kFailedPrecondition, "model: prefill before init");
  const Plan& p = arena_->plan();
  const Config& c = p.config;
  if (ids == nullptr || n == 0) return Status::error(Code::kInvalidArgument, "model: no token ids (n %u)", n);
  for (uint32_t i = 0; i < n; ++i) {
    if (ids[i] < 0 || static_cast<uint32_t>(ids[i]) >= c.model.vocab_size) {
      return Status::error(Code::kInvalidArgument,
                           "model: token id %d at position %u is outside the vocabulary (0..%u)", ids[i], i,
                           c.model.vocab_size - 1);
    }
  }
  if (uint64_t{position()} + n > c.max_seq) {
    return Status::error(Code::kOutOfRange,
                         "model: %u tokens at position %u go past the context of %u tokens (max_seq)", n, position(),
                         c.max_seq);
  }
  if (logits != nullptr && !p.options.all_logits) {
    return Status::error(Code::kInvalidArgument,
                         "model: every token's logits asked for, but the plan keeps the last token's only (plan "
                         "it with PlanOptions::all_logits)");
  }
  for (uint32_t done = 0; done < n;) {
    const uint32_t t = n - done < p.max_tokens ? n - done : p.max_tokens;
    HEADWAY_RETURN_IF_ERROR(run_chunk(ids + done, t, logits ? logits + size_t{done} * c.model.vocab_size : nullptr));
    done += t;
  }
  return Status();
}

// One chunk of t tokens through every layer (layout of the activations: plan.hpp).
Status Model::run_chunk(const int32_t* ids, uint32_t t, float* logits) {
  const Plan& p = arena_->plan();
  const Config& c = p.config;
  const uint32_t d = c.d_model;
  float* h = arena_->stream();
  float* x = arena_->normed();
  float* out = arena_->block_out();
  float* hidden = arena_->mlp_hidden();
  const size_t n = size_t{t} * d;

  const ModelWeightsView w{&p, arena_->model_weights(), &borrowed_};
  const TensorRef embedding = w.matrix(ModelTensor::kEmbedding, 0);
  for (uint32_t i = 0; i < t; ++i) tensor_row(embedding, ids[i], h + size_t{i} * d);
  if (c.model.scale_embedding) {
    const float normalizer = std::sqrt(static_cast<float>(d));
    for (size_t i = 0; i < n; ++i) h[i] *= normalizer;
  }
  // Norms on each block's output (Gemma 2/3 besides those on its input, OLMo 2 alone): RMSNorm,
  // as validate() requires of them.
  const bool input_norms = !c.model.output_norms_only;
  const bool output_norms = c.model.sandwich_norm || c.model.output_norms_only;
  // Each block's input norm (into x) rides on the residual step before it, but the first layer's.
  if (input_norms) apply_norm(w, ModelTensor::kAttnNorm, ModelTensor::kAttnNormBias, 0, h, x, t);
  for (uint32_t l = 0; l < n_layers_; ++l) {
    HEADWAY_RETURN_IF_ERROR(layers_[l].forward_unchecked(input_norms ? x : h, out, t));
    const BlockNorm post_attn{.present = output_norms, .weight = ModelTensor::kPostAttnNorm, .layer = l};
    const BlockNorm ffn_norm{
        .present = input_norms, .weight = ModelTensor::kFfnNorm, .bias = ModelTensor::kFfnNormBias, .layer = l};
    add_residual(w, post_attn, out, h, ffn_norm, x, t, pool_);
    apply_mlp(w, l, input_norms ? x : h, hidden, out, t, pool_);
    const BlockNorm post_ffn{.present = output_norms, .weight = ModelTensor::kPostFfnNorm, .layer = l};
    const BlockNorm next_attn_norm{.present = input_norms && l + 1 < n_layers_,
                                   .weight = ModelTensor::kAttnNorm,
                                   .bias = ModelTensor::kAttnNormBias,
                                   .layer = l + 1};
    add_residual(w, post_ffn, out, h, next_attn_norm, x, t, pool_);
  }
  // The logits of every token (all_logits) or of the last one alone.
  const uint32_t first = p.options.all_logits ? 0 : t - 1;
  const uint32_t rows = t - first;
  apply_norm(w, ModelTensor::kFinalNorm, ModelTensor::kFinalNormBias, 0, h + size_t{first} * d, x, rows);
  const uint32_t vocab = c.model.vocab_size;
  const ModelTensor head = c.model.tie_word_embeddings ? ModelTensor::kEmbedding : ModelTensor::kLmHead;
  // The logits with x unquantized: sampling and greedy choices read them directly.
  dense_highway({w.matrix(head, 0), {}, true}, x, d, arena_->logits(), vocab, rows, pool_);
  if (c.model.final_softcap > 0.0f) softcap_rows(arena_->logits(), size_t{rows} * vocab, c.model.final_softcap);
  last_row_ = rows - 1;
  if (logits != nullptr) std::memcpy(logits, arena_->logits(), size_t{rows} * vocab * sizeof(float));
  return Status();
}

}  // namespace headway
