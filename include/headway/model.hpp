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
// a ModelWeightsSource in the plan's weight_dtype (norms in f32), or, with weights_in_arena false,
// the matrices stay in the source in its own types (a GGUF's quantized blocks, read in place);
// every activation is in the arena.
//
//   headway::Arena arena;  arena.bind(plan, buffer, plan.arena_bytes);
//   headway::Model m;      m.init(arena, source, options);
//   m.prefill(ids, n, nullptr, false);    const float* next = m.logits();   // [vocab]
//   m.decode(id);                         next = m.logits();
//
// prefill() and decode() never allocate. A call with an id outside the vocabulary or past the
// context returns an error naming it and changes nothing. A Model (its layers, caches and the
// arena's activations) belongs to one thread at a time; the pool runs its work.
#pragma once

#include <cstdint>
#include <memory>

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
// dequantized there; a tensor whose shape is not `shape` is an error naming both. tensor(ctx, t,
// layer, shape): tensor t as the source keeps it (a GGUF's blocks, a safetensors' f16), borrowed
// for as long as the model runs — what a plan with weights_in_arena false reads the matrices
// through (and the attention weights: then attention()'s must live as long too).
struct ModelWeightsSource {
  void* ctx = nullptr;
  Result<LayerWeights> (*attention)(void* ctx, uint32_t layer) = nullptr;
  Status (*rows)(void* ctx, ModelTensor t, uint32_t layer, TensorShape shape, uint64_t first, uint64_t n,
                 float* dst) = nullptr;
  Result<TensorRef> (*tensor)(void* ctx, ModelTensor t, uint32_t layer, TensorShape shape) = nullptr;
};

// The deepest model a Model or an Encoder holds (its layer objects are members, not heap).
inline constexpr uint32_t kMaxModelLayers = 128;

// The matrices a plan with borrowed weights (PlanOptions::weights_in_arena false) leaves in the
// source, as views in the source's own types (a GGUF's blocks), taken at init: the whole-model
// ones by ModelTensor, and per layer the per-layer matrices of the table (the MLP's) in its order.
constexpr uint32_t borrowed_layer_slot(ModelTensor t) {
  uint32_t slot = 0;
  for (const ModelTensorInfo& info : kModelTensors) {
    if (info.tensor == t) break;
    if (info.per_layer && !info.f32) ++slot;
  }
  return slot;
}
inline constexpr uint32_t kBorrowedLayerTensors = borrowed_layer_slot(ModelTensor::kLmHead);
struct BorrowedMatrices {
  TensorRef whole[kModelTensorCount];
  TensorRef layer[kMaxModelLayers][kBorrowedLayerTensors];
  // The matrices a decoder holds in row groups (TensorRef::row_groups), copied there at init from
  // the source: one allocation of their bytes, which these views and the layers' point into.
  struct FreeBytes {
    void operator()(uint8_t* p) const;  // runtime/model/row_group_copier.cc
  };
  std::unique_ptr<uint8_t, FreeBytes> row_grouped;
  uint64_t row_grouped_bytes = 0;
};

class Model {
 public:
  static constexpr uint32_t kMaxLayers = kMaxModelLayers;

  // Binds the arena (its plan must have a model: Config::model.vocab_size > 0) and copies every
  // weight in: the model's through source.rows (staged in f32 through the arena's model
  // activations, then stored in the plan's weight_dtype), each layer's attention through
  // AttentionLayer::init. With weights_in_arena false only the norms are copied: the matrices
  // are borrowed through source.tensor and source.attention in the source's own types (a
  // GGUF's blocks), and the source's memory must outlive the model too. The Arena and
  // options.pool must outlive the model. Init-time only: may allocate where AttentionLayer::init
  // does (XNNPACK, the GPU backend), and once for the matrices it holds in row groups
  // (row_grouped_bytes()). A failed init leaves the model uninitialized.
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
  // The bytes of the borrowed matrices the model holds in row groups (its one allocation of init,
  // outside the arena: runtime/model/row_group_copier.hpp); 0 where it holds none.
  uint64_t row_grouped_bytes() const { return borrowed_.row_grouped_bytes; }

  // ---- State: what a prefill leaves behind, saved and restored (a long system prompt prefilled
  // once; llama.cpp's llama_state_*). The bytes, in the machine's byte order (little-endian on
  // every target headway builds for), fields u32 unless said:
  //
  //   header   "HWST", version (kStateVersion), d_model, n_heads, n_kv_heads, head_dim, n_layers,
  //            max_seq, vocab_size, kv_dtype, weight_dtype (DType values), position, has_logits,
  //            kv_rotation (KvRotation: 0 none, 1 hadamard; states written before it was recorded
  //            hold 0 there),
  //            weights fingerprint (u64: a hash of the norms and the embedding's first row, so a
  //            state of other weights with the same shapes is refused too)
  //   layers   n_layers × (kind: 0 full, 1 sliding, 2 Gated DeltaNet; window, kv rows, sink tokens)
  //   K, V     per attention layer, per kv head: K's rows in use, then per kv head V's: min(position,
  //            kv rows) rows of dtype_row_bytes(kv_dtype, head_dim) bytes, as they sit in the arena
  //            (a sliding layer's ring in ring order, K already rotated at its positions; with
  //            kv_rotation hadamard, K and V rows rotated before they were quantized); a Gated
  //            DeltaNet layer's state and convolution window instead, as the arena holds them
  //            (plan.linear_state_bytes_per_layer bytes)
  //   logits   [vocab_size] f32, the last token's (when has_logits: position > 0)
  //   checksum u64, FNV-1a of every byte before it
  //
  // A state loads into a model whose plan has the same shapes, dtypes, kv_rotation, weights and layer kinds
  // (each sliding layer the same window and ring rows); max_seq may differ where the position
  // fits (full layers store only the rows in use). After load_state, logits() are the saved
  // ones: generation goes on with the next decode as if it had never stopped (bitwise, with the
  // same threads). The CPU backend only (the GPU backend's rows live on the device: kUnsupported).

  static constexpr uint32_t kStateVersion = 1;
  // The exact size of save_state's bytes at the current position (0 before init).
  uint64_t state_bytes() const;
  // Writes the state to out [capacity]; *written (when not null) gets its size. A capacity short
  // of state_bytes() is kOutOfRange, and nothing is written. No allocation.
  Status save_state(void* out, size_t capacity, size_t* written) const;
  // Restores a state save_state wrote (any Model's, of a plan as said above). Every byte is
  // checked before anything is written: a truncated, corrupt or foreign buffer is an error whose
  // message names the first difference ("state: kv_dtype q8_0, this plan's f16"), and the
  // model is unchanged. No allocation.
  Status load_state(const void* in, size_t size);

 private:
  uint64_t weights_fingerprint() const;
  Status check_state_backend() const;
  Status run_chunk(const int32_t* ids, uint32_t t, float* logits);

  const Arena* arena_ = nullptr;
  ThreadPool* pool_ = nullptr;
  uint32_t n_layers_ = 0;
  uint32_t last_row_ = 0;  // the logits region's row that holds the last token's logits
  AttentionLayer layers_[kMaxLayers];
  BorrowedMatrices borrowed_;
};

}  // namespace headway
