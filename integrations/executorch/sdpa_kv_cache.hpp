// Attention over a KV cache, the semantics of ExecuTorch's llama::sdpa_with_kv_cache, on headway's
// attend(): the part of the ExecuTorch kernels (kernels.cc) that knows nothing of ExecuTorch.
//
//   q     [batch, seq_len, n_heads, head_dim] f32                    (ExecuTorch's layout: tokens
//   k, v  [batch, seq_len, n_kv_heads, head_dim] f32                  at dim 1, heads at dim 2)
//   caches [batch, cache_rows, n_kv_heads, row] : f32 rows (row = head_dim floats), or q8_0 /
//          q4_0 rows (row = quantized_row_bytes(head_dim) bytes, as quantize_row writes them:
//          ceil(head_dim / 32) blocks of ggml's layout, scales inline)
//   out   [batch, seq_len, n_heads, head_dim] f32
//
// One call writes k and v into the caches at rows start_pos .. start_pos + seq_len − 1 (quantized
// there for q8_0 / q4_0 caches) and attends each batch row's queries over its cache:
//   no mask: the first start_pos + seq_len rows; causal (bottom-right aligned: query i, at
//            position start_pos + i, sees rows j <= start_pos + i) or not;
//   mask:    every cache row, with an additive f32 mask [seq_len, cache_rows] (−inf hides a row),
//            and then not causal (ExecuTorch's rule: a mask and is_causal never come together).
// scale 0 means 1/sqrt(head_dim); GQA: query head h reads kv head h / (n_heads / n_kv_heads).
//
// Memory: attend()'s workspace comes from the caller (sdpa_kv_cache_workspace_bytes(), 64-byte
// aligned); the ExecuTorch kernels take it from the method's temp allocator. Nothing allocates.
#pragma once

#include <cstddef>
#include <cstdint>

#include "headway/config.hpp"
#include "headway/status.hpp"

namespace headway::executorch {

struct SdpaKvCacheShape {
  uint32_t batch = 0;
  uint32_t seq_len = 0;     // new tokens: rows of q, k and v per batch row
  uint32_t n_heads = 0;     // query heads
  uint32_t n_kv_heads = 0;  // divides n_heads
  uint32_t head_dim = 0;
  uint32_t cache_rows = 0;          // the caches' capacity in tokens
  DType cache_dtype = DType::kF32;  // kF32, kQ8_0 or kQ4_0
};

struct SdpaKvCacheParams {
  uint32_t start_pos = 0;  // cache row of the first new token
  bool causal = false;
  float scale = 0.0f;           // 0: 1/sqrt(head_dim)
  const float* mask = nullptr;  // additive [seq_len, cache_rows], or null
};

// Bytes of one cache row (a token's kv head): head_dim floats, or its quantized row.
size_t cache_row_bytes(DType cache_dtype, uint32_t head_dim);

// Checks the shape and the parameters (the message names the argument and its value). op is the
// operator's name for the messages ("headway::sdpa_with_kv_cache").
Status check_sdpa_kv_cache(const char* op, const SdpaKvCacheShape& shape, const SdpaKvCacheParams& params);

// attend()'s workspace for one batch row of this call (one thread); fails as check_sdpa_kv_cache.
Result<size_t> sdpa_kv_cache_workspace_bytes(const char* op, const SdpaKvCacheShape& shape,
                                             const SdpaKvCacheParams& params);

// Writes new [batch, seq_len, n_kv_heads, head_dim] f32 rows into cache [batch, cache_rows,
// n_kv_heads, row] at row start_pos (quantizing them for q8_0 / q4_0). Checks that they fit.
Status update_kv_cache(const char* op, const float* rows, void* cache, const SdpaKvCacheShape& shape,
                       uint32_t start_pos);

// The whole call (update both caches, then attend); checks first, writes nothing on an error.
Status sdpa_with_kv_cache(const char* op, const float* q, const float* k, const float* v, void* key_cache,
                          void* value_cache, float* out, const SdpaKvCacheShape& shape, const SdpaKvCacheParams& params,
                          void* workspace, size_t workspace_bytes);

}  // namespace headway::executorch
