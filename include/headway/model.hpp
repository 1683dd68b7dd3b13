// Model: a whole decoder over one Arena — token ids in, next-token logits out. Around each
// layer's AttentionLayer it runs what Config::model names (ModelConfig: pre-norm RMSNorm blocks
// with a SwiGLU MLP, as Llama, SmolLM2, Mistral and Qwen2 do):
//
//   h = embedding[ids]                                           h [t, d_model] f32 (arena stream)
//   for each layer:  h += attn(rms_norm(h, attn_norm))
//                    h += down(silu(gate(x)) · up(x)),  x = rms_norm(h, ffn_norm)
//   logits = rms_norm(h, final_norm) · headᵀ                      head: the LM head, or the embedding when tied
//
// rms_norm(x, w) = x / sqrt(mean(x²) + eps) · w, in f32, as transformers' LlamaRMSNorm computes it.
// Every weight lives in the arena's model weights region (Plan: plan.hpp), copied in at init from
// a ModelWeightsSource in the plan's weight_dtype (norms in f32); every activation in the arena.
//
//   headway::Arena arena;  arena.bind(plan, buffer, plan.arena_bytes);
//   headway::Model m;      m.init(arena, source, options);
//   m.prefill(ids, n, nullptr, false);    const float* next = m.logits();   // [vocab]
//   m.decode(id);                         next = m.logits();
//
// prefill() and decode() never allocate. A call with an id outside the vocabulary or past the
// context returns an error naming it and changes nothing.
#pragma once

#include <cstdint>

#include "headway/arena.hpp"
#include "headway/layer.hpp"
#include "headway/model_tensors.hpp"
#include "headway/plan.hpp"
#include "headway/status.hpp"
#include "headway/weights.hpp"

namespace headway {

// Where a Model's weights come from, at init only. attention(ctx, layer): that layer's attention
// weights (as Session's LayerWeightsFn: with weights in the arena they need only live until the
// next call). rows(ctx, t, layer, shape, first, n, dst): rows [first, first + n) of tensor t (of
// that layer, for the per-layer ones) as f32 into dst [n, shape.cols] — a file's blocks
// dequantized there; a tensor whose shape is not `shape` is an error naming both.
struct ModelWeightsSource {
  void* ctx = nullptr;
  Result<LayerWeights> (*attention)(void* ctx, uint32_t layer) = nullptr;
  Status (*rows)(void* ctx, ModelTensor t, uint32_t layer, TensorShape shape, uint64_t first, uint64_t n,
                 float* dst) = nullptr;
};

class Model {
 public:
  // The deepest model a Model holds (its layer objects are members, not heap).
  static constexpr uint32_t kMaxLayers = 128;

  // Binds the arena (its plan must have a model: Config::model.vocab_size > 0) and copies every
  // weight in: the model's through source.rows (staged in f32 through the arena's model
  // activations, then stored in the plan's weight_dtype), each layer's attention through
  // AttentionLayer::init. The Arena and options.pool must outlive the model. Init-time only: may
  // allocate where AttentionLayer::init does (XNNPACK, the GPU backend).
  Status init(const Arena& arena, const ModelWeightsSource& source, const LayerOptions& options);

  // ids [n] at positions position()..position()+n-1, run in chunks of plan.max_tokens. Afterwards
  // logits() holds the last token's next-token logits. With `logits` set, every token's logits
  // go there too ([n, vocab] f32; the plan needs PlanOptions::all_logits). An id outside
  // [0, vocab_size) or position() + n past max_seq: an error, and nothing changes.
  Status prefill(const int32_t* ids, uint32_t n, float* logits = nullptr);
  Status decode(int32_t id) { return prefill(&id, 1); }
  // The last token's next-token logits [vocab_size] f32, in the arena (valid after a prefill or
  // decode, until the next one).
  const float* logits() const;
  // Empties every layer's cache; the next token sits at position 0.
  void reset();

  uint32_t position() const { return n_layers_ ? layers_[0].position() : 0; }
  bool initialized() const { return arena_ != nullptr; }

 private:
  Status run_chunk(const int32_t* ids, uint32_t t, float* logits);

  const Arena* arena_ = nullptr;
  ThreadPool* pool_ = nullptr;
  uint32_t n_layers_ = 0;
  uint32_t last_row_ = 0;  // the logits region's row that holds the last token's logits
  AttentionLayer layers_[kMaxLayers];
};

}  // namespace headway
