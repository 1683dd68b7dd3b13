// The weights of one attention layer, as borrowed views: the layer engineer's AttentionLayer and
// Session read them; the weight-file loaders (runtime/formats/) produce them. Nothing here owns
// memory: a TensorRef points into a memory-mapped file, a caller's buffer or the arena.
#pragma once

#include <cstdint>

#include "headway/config.hpp"

namespace headway {

// A borrowed, row-major 2-D tensor (1-D tensors: rows = 1). Weights use the Hugging Face layout
// W [out_features, in_features] (GGUF's ggml tensors have the same memory layout).
struct TensorRef {
  const void* data = nullptr;
  DType dtype = DType::kF32;  // one dtype_holds_weights admits (headway/dtype.hpp)
  uint32_t rows = 0;
  uint32_t cols = 0;
  // A q8_0, q4_0, q4_1, q5_0, q5_1, q4_K or q6_K matrix with its rows interleaved in groups of 16 (headway/detail/
  // row_groups.hpp): how a Model holds the borrowed matrices its decode step reads so
  // (simd::matmul_reads_row_groups). Sources lend tensors as their files hold them (false).
  bool row_groups = false;
  bool present() const { return data != nullptr; }
  uint64_t elements() const { return uint64_t{rows} * cols; }
  uint64_t bytes() const { return rows * dtype_row_bytes(dtype, cols); }  // a block format's rows: whole blocks
};

// One layer's attention weights. wq [n_heads*head_dim, d_model], wk/wv [n_kv_heads*head_dim, d_model],
// wo [d_model, n_heads*head_dim]; biases bq/bk/bv/bo (1-D) when config.qkv_bias / o_bias;
// q_norm/k_norm [head_dim] (per-head RMSNorm weights, Qwen3) when config.qk_norm; sinks
// [n_heads] (learned sink logits, one per query head, gpt-oss) when config.sinks.
struct LayerWeights {
  TensorRef wq, wk, wv, wo;
  TensorRef bq, bk, bv, bo;
  TensorRef q_norm, k_norm;
  TensorRef sinks;
  // Multi-head latent attention (Config::mla): wq is q_proj [n_heads·(nope + rope), d_model], or
  // with a q_lora_rank q_b_proj [n_heads·(nope + rope), q_lora_rank] after wq_a (q_a_proj
  // [q_lora_rank, d_model]) and its RMS norm q_a_norm [q_lora_rank]; wkv_a is kv_a_proj_with_mqa
  // [kv_lora_rank + rope, d_model] (the latent, then the shared RoPE key), kv_a_norm the latent's
  // RMS norm [kv_lora_rank], wkv_b kv_b_proj [n_heads·(nope + v_head_dim), kv_lora_rank] (each
  // head's W_UK rows, then its W_UV rows); wo is [d_model, n_heads·v_head_dim].
  TensorRef wq_a, q_a_norm, wkv_a, kv_a_norm, wkv_b;
  // A Gated DeltaNet layer (LayerKinds::linear; shapes from Config::gated_delta): in_proj_qkv
  // [conv_width, d_model], in_proj_z [value_width, d_model], in_proj_b and in_proj_a
  // [value_heads, d_model], the convolution's taps conv1d [conv_width, conv_kernel], A_log (or
  // a_neg: A = −exp(A_log) itself, as llama.cpp's ssm_a holds it; one of the two) and dt_bias
  // [value_heads], the gated output norm's weight [value_head_dim]; wo is out_proj [d_model,
  // value_width].
  TensorRef w_qkv, w_z, w_b, w_a, conv, a_log, a_neg, dt_bias, out_norm;
};

}  // namespace headway
