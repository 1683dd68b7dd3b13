// Encoder: a whole post-norm encoder over one Arena (BERT, MiniLM) — a packed batch of token id
// sequences in, their last hidden states out, and sentence embeddings pooled from them. Around
// each layer's AttentionLayer (bidirectional, within each sequence) it runs what Config::model
// names (norm layer, mlp gelu, post_norm, embedding_norm, learned positions, token types):
//
//   h = embedding_norm(embedding[id] + position[p] + token_type[0])   p: the position in its sequence
//   for each layer:  h = attn_norm(h + attn(h));  h = ffn_norm(h + down(gelu(up(h))))
//
// Weights live in the arena's model weights region, copied in at init from a ModelWeightsSource
// (headway/model.hpp), or stay in the source (weights_in_arena false); activations in the arena. encode() never
// allocates; bad lengths or ids are an error naming them, and nothing is cached between calls.
#pragma once

#include <cstdint>

#include "headway/arena.hpp"
#include "headway/layer.hpp"
#include "headway/model.hpp"
#include "headway/status.hpp"

namespace headway {

class Encoder {
 public:
  static constexpr uint32_t kMaxLayers = kMaxModelLayers;

  // Binds the arena (its plan: a bidirectional model with post_norm, Config::model) and copies
  // every weight in, as Model::init does. The Arena and options.pool must outlive the encoder.
  Status init(const Arena& arena, const ModelWeightsSource& source, const LayerOptions& options);

  // n_seqs sequences back to back in ids [cu_seqlens[n_seqs]] (cu_seqlens [n_seqs + 1]: 0, rising
  // strictly; the total at most plan.max_tokens, each at most max_seq and the learned positions):
  // their last hidden states into out [total, d_model] f32.
  Status encode(const int32_t* ids, const uint32_t* cu_seqlens, uint32_t n_seqs, float* out);

  bool initialized() const { return arena_ != nullptr; }

 private:
  const Arena* arena_ = nullptr;
  ThreadPool* pool_ = nullptr;
  uint32_t n_layers_ = 0;
  AttentionLayer layers_[kMaxLayers];
  BorrowedMatrices borrowed_;
};

// How sentence-transformers turns a sequence's hidden states into one embedding (its
// 1_Pooling/config.json): the mean of its rows, or its first row ([CLS]).
enum class Pooling : uint8_t { kMean = 0, kCls };

// out [n_seqs, d] = each sequence's pooled row of hidden [cu_seqlens[n_seqs], d], divided by its
// L2 norm when `normalize` (sentence-transformers' Normalize module). No allocation.
void pool_embeddings(const float* hidden, const uint32_t* cu_seqlens, uint32_t n_seqs, uint32_t d, Pooling pooling,
                     bool normalize, float* out);

}  // namespace headway
