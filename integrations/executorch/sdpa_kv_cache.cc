// Attention over a KV cache on headway's attend(): see sdpa_kv_cache.hpp.
#include "integrations/executorch/sdpa_kv_cache.hpp"

#include <cstring>

#include "headway/attention.hpp"
#include "headway/dtype.hpp"
#include "headway/quantize.hpp"

namespace headway::executorch {
namespace {

// The fallback every refusal names: ExecuTorch's own operator computes the same thing.
constexpr const char* kFallback =
    "to run it without headway, export with ExecuTorch's llama::sdpa_with_kv_cache "
    "(executorch.extension.llm.custom_ops) instead";

bool is_cache_dtype(DType t) { return t == DType::kF32 || t == DType::kQ8_0 || t == DType::kQ4_0; }

AttentionShape batch_row_shape(const SdpaKvCacheShape& s, const SdpaKvCacheParams& p) {
  AttentionShape a;
  a.t_q = s.seq_len;
  a.t_kv = p.mask != nullptr ? s.cache_rows : p.start_pos + s.seq_len;
  a.n_heads = s.n_heads;
  a.n_kv_heads = s.n_kv_heads;
  a.head_dim = s.head_dim;
  return a;
}

AttentionParams attention_params(const SdpaKvCacheParams& p) {
  AttentionParams a;
  a.scale = p.scale;
  a.causal = p.causal;
  a.mask_additive = p.mask;  // [seq_len, cache_rows]: row stride t_kv = cache_rows
  return a;
}

}  // namespace

size_t cache_row_bytes(DType cache_dtype, uint32_t head_dim) {
  return static_cast<size_t>(dtype_row_bytes(cache_dtype, head_dim));
}

Status check_sdpa_kv_cache(const char* op, const SdpaKvCacheShape& s, const SdpaKvCacheParams& p) {
  if (!is_cache_dtype(s.cache_dtype)) {
    return Status::error(Code::kUnsupported, "%s: cache dtype %s is not supported (f32, q8_0 or q4_0; %s)", op,
                         dtype_name(s.cache_dtype), kFallback);
  }
  if (s.n_kv_heads == 0 || s.n_heads % s.n_kv_heads != 0) {
    return Status::error(Code::kInvalidArgument,
                         "%s: query has %u heads and key %u kv heads: %u is not divisible by %u (GQA needs "
                         "n_kv_heads to divide n_heads)",
                         op, s.n_heads, s.n_kv_heads, s.n_heads, s.n_kv_heads);
  }
  if (s.head_dim == 0 || s.head_dim > kMaxHeadDim) {
    return Status::error(Code::kUnsupported, "%s: head_dim %u is not in 1..%u (%s)", op, s.head_dim, kMaxHeadDim,
                         kFallback);
  }
  if (static_cast<uint64_t>(p.start_pos) + s.seq_len > s.cache_rows) {
    return Status::error(Code::kOutOfRange,
                         "%s: start_pos %u + seq_len %u = %u goes past the cache's %u rows (key_cache.size(1))", op,
                         p.start_pos, s.seq_len, p.start_pos + s.seq_len, s.cache_rows);
  }
  if (p.mask != nullptr && p.causal) {
    return Status::error(Code::kInvalidArgument,
                         "%s: attn_mask and is_causal = True together; give one (as llama::sdpa_with_kv_cache)", op);
  }
  if (!(p.scale >= 0.0f) || p.scale > 3.4e38f) {
    return Status::error(Code::kInvalidArgument, "%s: scale %g is not a finite positive number", op,
                         static_cast<double>(p.scale));
  }
  return Status();
}

Result<size_t> sdpa_kv_cache_workspace_bytes(const char* op, const SdpaKvCacheShape& s, const SdpaKvCacheParams& p) {
  HEADWAY_RETURN_IF_ERROR(check_sdpa_kv_cache(op, s, p));
  if (s.seq_len == 0) return size_t{0};
  return attention_workspace_bytes(batch_row_shape(s, p), attention_params(p), 1);
}

Status update_kv_cache(const char* op, const float* rows, void* cache, const SdpaKvCacheShape& s, uint32_t start_pos) {
  if (!is_cache_dtype(s.cache_dtype)) {
    return Status::error(Code::kUnsupported, "%s: cache dtype %s is not supported (f32, q8_0 or q4_0; %s)", op,
                         dtype_name(s.cache_dtype), kFallback);
  }
  if (static_cast<uint64_t>(start_pos) + s.seq_len > s.cache_rows) {
    return Status::error(Code::kOutOfRange,
                         "%s: start_pos %u + seq_len %u = %u goes past the cache's %u rows (cache.size(1))", op,
                         start_pos, s.seq_len, start_pos + s.seq_len, s.cache_rows);
  }
  const size_t row_bytes = cache_row_bytes(s.cache_dtype, s.head_dim);
  const size_t token_rows = s.n_kv_heads;  // one row per kv head
  auto* base = static_cast<uint8_t*>(cache);
  for (uint32_t b = 0; b < s.batch; ++b) {
    const float* src = rows + static_cast<size_t>(b) * s.seq_len * token_rows * s.head_dim;
    uint8_t* dst = base + (static_cast<size_t>(b) * s.cache_rows + start_pos) * token_rows * row_bytes;
    const size_t n_rows = static_cast<size_t>(s.seq_len) * token_rows;
    if (s.cache_dtype == DType::kF32) {
      std::memcpy(dst, src, n_rows * row_bytes);
      continue;
    }
    const QuantType type = quant_type_of(s.cache_dtype);
    for (size_t r = 0; r < n_rows; ++r) {
      HEADWAY_RETURN_IF_ERROR(quantize_row(type, src + r * s.head_dim, s.head_dim, dst + r * row_bytes, row_bytes));
    }
  }
  return Status();
}

Status sdpa_with_kv_cache(const char* op, const float* q, const float* k, const float* v, void* key_cache,
                          void* value_cache, float* out, const SdpaKvCacheShape& s, const SdpaKvCacheParams& p,
                          void* workspace, size_t workspace_bytes) {
  const Result<size_t> need = sdpa_kv_cache_workspace_bytes(op, s, p);
  if (!need.ok()) return need.status();
  if (s.seq_len == 0 || s.batch == 0) return Status();
  if (workspace_bytes < *need || reinterpret_cast<uintptr_t>(workspace) % kWorkspaceAlignment != 0) {
    return Status::error(Code::kInvalidArgument, "%s: workspace of %zu bytes; needs %zu bytes, %zu-byte aligned", op,
                         workspace_bytes, *need, kWorkspaceAlignment);
  }
  HEADWAY_RETURN_IF_ERROR(update_kv_cache(op, k, key_cache, s, p.start_pos));
  HEADWAY_RETURN_IF_ERROR(update_kv_cache(op, v, value_cache, s, p.start_pos));

  const AttentionShape shape = batch_row_shape(s, p);
  const AttentionParams params = attention_params(p);
  const size_t q_batch = static_cast<size_t>(s.seq_len) * s.n_heads * s.head_dim;
  const size_t cache_batch =
      static_cast<size_t>(s.cache_rows) * s.n_kv_heads * cache_row_bytes(s.cache_dtype, s.head_dim);
  for (uint32_t b = 0; b < s.batch; ++b) {
    // Batch rows run one after another over one workspace: each is attend() over its own cache.
    HEADWAY_RETURN_IF_ERROR(attend(q + b * q_batch, static_cast<const uint8_t*>(key_cache) + b * cache_batch,
                                   static_cast<const uint8_t*>(value_cache) + b * cache_batch, s.cache_dtype,
                                   out + b * q_batch, shape, params, nullptr, workspace, workspace_bytes));
  }
  return Status();
}

}  // namespace headway::executorch
