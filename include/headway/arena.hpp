// Arena: the one block of memory a Plan asks for, carved into its regions once at init.
// The caller owns the memory: a buffer of its own, StaticArena<plan.arena_bytes> on bare metal,
// or OwnedArena (hosted tools layer) which allocates it once and touches every page up front.
#pragma once

#include <cstddef>
#include <cstdint>

#include "headway/plan.hpp"
#include "headway/status.hpp"

namespace headway {

template <uint64_t kBytes>
struct StaticArena {
  alignas(kAlignment) uint8_t bytes[kBytes];
  static constexpr uint64_t size() { return kBytes; }
};

class Arena {
 public:
  // Binds `buffer` (64-byte aligned, at least plan.arena_bytes) to the plan's regions.
  Status bind(const Plan& plan, void* buffer, size_t bytes);

  bool bound() const { return base_ != nullptr; }
  const Plan& plan() const { return plan_; }
  uint8_t* weights() const { return base_ + plan_.weights_offset; }  // null-sized when borrowed
  uint8_t* layer_weights(uint32_t layer) const {  // layer's slot of the weights region: Plan::layer_weights_offset
    return base_ + plan_.layer_weights_offset(layer);
  }
  float* linear_state(uint32_t layer) const {  // a linear layer's state and window: plan.linear_state_bytes_per_layer
    return reinterpret_cast<float*>(base_ + plan_.layer(layer).state_offset);
  }
  uint8_t* kv_layer(uint32_t layer) const {  // [K | V] of one layer: plan.layer(layer).kv_bytes
    return base_ + plan_.layer(layer).kv_offset;
  }
  double* rope_layer(uint32_t layer) const {  // one layer's RoPE frequencies: plan.rope_bytes_per_layer
    return reinterpret_cast<double*>(base_ + plan_.rope_offset + uint64_t{layer} * plan_.rope_bytes_per_layer);
  }
  float* sinks_layer(uint32_t layer) const {  // one layer's [n_heads] sink logits: plan.sinks_bytes_per_layer
    return reinterpret_cast<float*>(base_ + plan_.sinks_offset + uint64_t{layer} * plan_.sinks_bytes_per_layer);
  }
  float* alibi_slopes() const {  // the [n_heads] ALiBi slopes: plan.alibi_bytes (absent without ALiBi)
    return reinterpret_cast<float*>(base_ + plan_.alibi_offset);
  }
  float* qkv() const { return reinterpret_cast<float*>(base_ + plan_.activations_offset); }
  float* attention_out() const { return reinterpret_cast<float*>(base_ + plan_.attention_out_offset); }
  float* block_out() const {
    return reinterpret_cast<float*>(base_ + plan_.block_out_offset);
  }  // [max_tokens, d_model]
  float* stream() const {
    return reinterpret_cast<float*>(base_ + plan_.stream_offset);
  }                                                                  // residual [max_tokens, d_model]
  uint8_t* scratch() const { return base_ + plan_.scratch_offset; }  // threads × per-thread scratch
  // The model's regions (empty without a model): its weights, then its activations.
  uint8_t* model_weights() const { return base_ + plan_.model_weights_offset; }
  float* normed() const {
    return reinterpret_cast<float*>(base_ + plan_.model_activations_offset);
  }  // [max_tokens, d_model]
  float* mlp_hidden() const {
    return reinterpret_cast<float*>(base_ + plan_.mlp_hidden_offset);
  }                                                                                        // [max_tokens, 2·ffn]
  float* logits() const { return reinterpret_cast<float*>(base_ + plan_.logits_offset); }  // [logits_rows, vocab]
  uint8_t* sampler_scratch() const { return base_ + plan_.sampler_offset; }  // Sampler::scratch_bytes(vocab)

 private:
  Plan plan_{};
  uint8_t* base_ = nullptr;
};

}  // namespace headway
