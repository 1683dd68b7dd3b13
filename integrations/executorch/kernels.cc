// libheadway_executorch.so: ExecuTorch kernels in headway's own namespace, registered with
// ExecuTorch's operator registry when the library is loaded (ctypes.CDLL(path, RTLD_GLOBAL) in
// Python, or linked into an app with --no-as-needed). ExecuTorch's own llama:: ops stay theirs:
// registering a name twice stops the runtime.
//
//   headway::sdpa_with_kv_cache.out(query, key, value, key_cache, value_cache, start_pos, seq_len,
//       attn_mask=None, drpout_p=0.0, is_causal=False, scale=None, *, out)
//     llama::sdpa_with_kv_cache's schema and semantics (sdpa_kv_cache.hpp), float32 caches.
//   headway::sdpa_with_quantized_kv_cache.out(...the same..., *, out)
//     the caches uint8 [B, cache_rows, H_kv, row_bytes] of q8_0 or q4_0 rows (the format follows
//     from row_bytes: 34 or 18 bytes per block of 32 values of head_dim).
//   headway::update_cache.out(value, cache, start_pos, *, out)
//     llama::update_cache: value [B, S, H_kv, D] f32 into cache rows start_pos.. (f32, or a uint8
//     q8_0 / q4_0 cache, quantized there); out is a 1-element placeholder, as there.
//
// Workspace: attend()'s scratch comes from the method's temp allocator (ctx.allocate_temp),
// which ExecuTorch resets after each kernel; a method given no temp allocator fails the call
// with the bytes it needs. A refusal fails the kernel (ctx.fail) after logging headway's message
// with ET_LOG, and keeps it for headway_executorch_last_error() / _last_code().
#include <executorch/extension/kernel_util/make_boxed_from_unboxed_functor.h>
#include <executorch/runtime/kernel/kernel_includes.h>

#include <cstdio>
#include <cstring>
#include <optional>

#include "headway/attention.hpp"
#include "headway/dtype.hpp"
#include "integrations/executorch/sdpa_kv_cache.hpp"

namespace headway::executorch {
namespace {

namespace et = ::executorch::runtime;
using ::executorch::aten::ScalarType;
using ::executorch::aten::Tensor;

// The last refusal of this thread, for Python (the runtime's exception carries only ExecuTorch's
// error code): headway's code and message.
thread_local char g_last_error[Status::kMaxMessage] = "";
thread_local int g_last_code = 0;

void set_last_error(const Status& status) {
  std::snprintf(g_last_error, sizeof(g_last_error), "%s", status.message());
  g_last_code = static_cast<int>(status.code());
}

et::Error et_error(Code code) {
  switch (code) {
    case Code::kOutOfRange:
    case Code::kInvalidArgument: return et::Error::InvalidArgument;
    case Code::kUnsupported: return et::Error::NotSupported;
    default: return et::Error::Internal;
  }
}

// Fails the kernel with headway's message; returns false so that a check reads `if (!ok(...)) return`.
bool ok(et::KernelRuntimeContext& ctx, const Status& status) {
  if (status.ok()) return true;
  set_last_error(status);
  ET_LOG(Error, "%s", status.message());
  ctx.fail(et_error(status.code()));
  return false;
}

constexpr const char* kFallback =
    "to run it without headway, export with ExecuTorch's llama::sdpa_with_kv_cache "
    "(executorch.extension.llm.custom_ops) instead";

// A dense (contiguous) tensor of `dims` dims and this dtype, else a Status naming it.
Status check_tensor(const char* op, const char* name, const Tensor& t, ScalarType dtype, const char* dtype_text,
                    const char* layout, ssize_t dims = 4) {
  if (t.dim() != dims) {
    return Status::error(Code::kInvalidArgument, "%s: %s has %zd dims, expected %zd %s", op, name,
                         static_cast<ssize_t>(t.dim()), dims, layout);
  }
  if (t.scalar_type() != dtype) {
    return Status::error(Code::kUnsupported, "%s: %s has dtype %s; headway takes %s here (%s)", op, name,
                         ::executorch::runtime::toString(t.scalar_type()), dtype_text, kFallback);
  }
  int64_t stride = 1;
  for (ssize_t d = t.dim() - 1; d >= 0; --d) {
    if (t.size(d) != 1 && t.strides()[d] != stride) {
      return Status::error(Code::kUnsupported, "%s: %s is not contiguous %s", op, name, layout);
    }
    stride *= t.size(d);
  }
  return Status();
}

uint32_t u32(ssize_t v) { return static_cast<uint32_t>(v); }

// The storage of a cache from its row: f32 (head_dim floats) or q8_0 / q4_0 (their row bytes).
Status cache_storage(const char* op, const char* name, size_t row, bool quantized, uint32_t head_dim, DType* out) {
  if (!quantized) {
    *out = DType::kF32;
    if (row == head_dim) return Status();
    return Status::error(Code::kInvalidArgument, "%s: %s rows hold %zu values; head_dim is %u", op, name, row,
                         head_dim);
  }
  for (DType t : {DType::kQ8_0, DType::kQ4_0}) {
    if (row == cache_row_bytes(t, head_dim)) {
      *out = t;
      return Status();
    }
  }
  return Status::error(Code::kInvalidArgument,
                       "%s: %s rows of %zu bytes are neither q8_0 (%zu bytes) nor q4_0 (%zu bytes) rows of head_dim %u",
                       op, name, row, cache_row_bytes(DType::kQ8_0, head_dim), cache_row_bytes(DType::kQ4_0, head_dim),
                       head_dim);
}

// The shape of a call from its tensors: q [B, S, H, D], k and v [B, S, H_kv, D], caches [B,
// cache_rows, H_kv, D] f32 or [B, cache_rows, H_kv, row_bytes] uint8.
Status call_shape(const char* op, const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& kc, const Tensor& vc,
                  bool quantized, SdpaKvCacheShape* s) {
  HEADWAY_RETURN_IF_ERROR(
      check_tensor(op, "query", q, ScalarType::Float, "float32", "[B, seq_len, n_heads, head_dim]"));
  HEADWAY_RETURN_IF_ERROR(
      check_tensor(op, "key", k, ScalarType::Float, "float32", "[B, seq_len, n_kv_heads, head_dim]"));
  HEADWAY_RETURN_IF_ERROR(
      check_tensor(op, "value", v, ScalarType::Float, "float32", "[B, seq_len, n_kv_heads, head_dim]"));
  const ScalarType cache_type = quantized ? ScalarType::Byte : ScalarType::Float;
  const char* cache_text = quantized ? "uint8 (q8_0 or q4_0 rows; float32 caches go to headway::sdpa_with_kv_cache)"
                                     : "float32 (q8_0 / q4_0 caches go to headway::sdpa_with_quantized_kv_cache)";
  HEADWAY_RETURN_IF_ERROR(
      check_tensor(op, "key_cache", kc, cache_type, cache_text, "[B, cache_rows, n_kv_heads, row]"));
  HEADWAY_RETURN_IF_ERROR(
      check_tensor(op, "value_cache", vc, cache_type, cache_text, "[B, cache_rows, n_kv_heads, row]"));
  s->batch = u32(q.size(0));
  s->seq_len = u32(q.size(1));
  s->n_heads = u32(q.size(2));
  s->head_dim = u32(q.size(3));
  s->n_kv_heads = u32(k.size(2));
  s->cache_rows = u32(kc.size(1));
  for (int d = 0; d < 4; ++d) {
    if (k.size(d) != v.size(d) || kc.size(d) != vc.size(d)) {
      return Status::error(Code::kInvalidArgument, "%s: key and value (and their caches) must have one shape", op);
    }
  }
  if (k.size(0) != q.size(0) || k.size(1) != q.size(1) || k.size(3) != q.size(3)) {
    return Status::error(Code::kInvalidArgument,
                         "%s: key [%zd, %zd, %zd, %zd] does not match query [%zd, %zd, %zd, %zd] in batch, seq_len "
                         "or head_dim",
                         op, static_cast<ssize_t>(k.size(0)), static_cast<ssize_t>(k.size(1)),
                         static_cast<ssize_t>(k.size(2)), static_cast<ssize_t>(k.size(3)),
                         static_cast<ssize_t>(q.size(0)), static_cast<ssize_t>(q.size(1)),
                         static_cast<ssize_t>(q.size(2)), static_cast<ssize_t>(q.size(3)));
  }
  if (kc.size(0) != q.size(0) || kc.size(2) != k.size(2)) {
    return Status::error(Code::kInvalidArgument,
                         "%s: key_cache [%zd, %zd, %zd, %zd] does not match key's batch %zd "
                         "and %zd kv heads",
                         op, static_cast<ssize_t>(kc.size(0)), static_cast<ssize_t>(kc.size(1)),
                         static_cast<ssize_t>(kc.size(2)), static_cast<ssize_t>(kc.size(3)),
                         static_cast<ssize_t>(k.size(0)), static_cast<ssize_t>(k.size(2)));
  }
  return cache_storage(op, "key_cache", static_cast<size_t>(kc.size(3)), quantized, s->head_dim, &s->cache_dtype);
}

Status check_start(const char* op, int64_t start_pos, int64_t seq_len, const SdpaKvCacheShape& s) {
  if (start_pos < 0 || start_pos > INT32_MAX) {
    return Status::error(Code::kOutOfRange, "%s: start_pos %lld is negative or too large", op,
                         static_cast<long long>(start_pos));
  }
  if (seq_len != s.seq_len) {
    return Status::error(Code::kInvalidArgument, "%s: seq_len %lld differs from query.size(1) = %u", op,
                         static_cast<long long>(seq_len), s.seq_len);
  }
  return Status();
}

Tensor& sdpa(const char* op, bool quantized, et::KernelRuntimeContext& ctx, const Tensor& q, const Tensor& k,
             const Tensor& v, Tensor& key_cache, Tensor& value_cache, int64_t start_pos, int64_t seq_len,
             const std::optional<Tensor>& attn_mask, double dropout_p, bool is_causal,
             const std::optional<double> scale, Tensor& out) {
  SdpaKvCacheShape s;
  if (!ok(ctx, call_shape(op, q, k, v, key_cache, value_cache, quantized, &s))) return out;
  if (!ok(ctx, check_start(op, start_pos, seq_len, s))) return out;
  if (dropout_p != 0.0) {
    ok(ctx, Status::error(Code::kUnsupported, "%s: drpout_p %g: headway runs inference only (%s)", op, dropout_p,
                          kFallback));
    return out;
  }
  SdpaKvCacheParams p;
  p.start_pos = static_cast<uint32_t>(start_pos);
  p.causal = is_causal;
  p.scale = scale.has_value() ? static_cast<float>(*scale) : 0.0f;
  if (attn_mask.has_value()) {
    const Tensor& m = *attn_mask;
    if (m.dim() != 2 || m.size(0) != s.seq_len || m.size(1) != s.cache_rows) {
      ok(ctx, Status::error(Code::kInvalidArgument, "%s: attn_mask must be [seq_len %u, cache_rows %u]", op, s.seq_len,
                            s.cache_rows));
      return out;
    }
    if (!ok(ctx,
            check_tensor(op, "attn_mask", m, ScalarType::Float, "float32 (additive)", "[seq_len, cache_rows]", 2))) {
      return out;
    }
    p.mask = m.const_data_ptr<float>();
  }
  if (et::resize_tensor(out, q.sizes()) != et::Error::Ok) {
    ok(ctx, Status::error(Code::kInvalidArgument, "%s: out cannot take query's shape", op));
    return out;
  }
  const Result<size_t> bytes = sdpa_kv_cache_workspace_bytes(op, s, p);
  if (!ok(ctx, bytes.status())) return out;
  void* workspace = nullptr;
  if (*bytes > 0) {
    et::Result<void*> temp = ctx.allocate_temp(*bytes, kWorkspaceAlignment);
    if (!temp.ok()) {
      ok(ctx, Status::error(Code::kInternal,
                            "%s: the method's temp allocator cannot give attend()'s workspace of %zu bytes (give "
                            "the Method a temp allocator of at least that much)",
                            op, *bytes));
      return out;
    }
    workspace = *temp;
  }
  ok(ctx, sdpa_with_kv_cache(op, q.const_data_ptr<float>(), k.const_data_ptr<float>(), v.const_data_ptr<float>(),
                             key_cache.mutable_data_ptr(), value_cache.mutable_data_ptr(),
                             out.mutable_data_ptr<float>(), s, p, workspace, *bytes));
  return out;
}

Tensor& sdpa_with_kv_cache_out(et::KernelRuntimeContext& ctx, const Tensor& q, const Tensor& k, const Tensor& v,
                               Tensor& key_cache, Tensor& value_cache, const int64_t start_pos, const int64_t seq_len,
                               const std::optional<Tensor>& attn_mask, const double dropout_p, const bool is_causal,
                               const std::optional<double> scale, Tensor& out) {
  return sdpa("headway::sdpa_with_kv_cache", false, ctx, q, k, v, key_cache, value_cache, start_pos, seq_len, attn_mask,
              dropout_p, is_causal, scale, out);
}

Tensor& sdpa_with_quantized_kv_cache_out(et::KernelRuntimeContext& ctx, const Tensor& q, const Tensor& k,
                                         const Tensor& v, Tensor& key_cache, Tensor& value_cache,
                                         const int64_t start_pos, const int64_t seq_len,
                                         const std::optional<Tensor>& attn_mask, const double dropout_p,
                                         const bool is_causal, const std::optional<double> scale, Tensor& out) {
  return sdpa("headway::sdpa_with_quantized_kv_cache", true, ctx, q, k, v, key_cache, value_cache, start_pos, seq_len,
              attn_mask, dropout_p, is_causal, scale, out);
}

Tensor& update_cache_out(et::KernelRuntimeContext& ctx, const Tensor& value, Tensor& cache, const int64_t start_pos,
                         Tensor& out) {
  constexpr const char* op = "headway::update_cache";
  const bool quantized = cache.scalar_type() == ScalarType::Byte;
  SdpaKvCacheShape s;
  if (!ok(ctx, check_tensor(op, "value", value, ScalarType::Float, "float32", "[B, seq_len, n_kv_heads, head_dim]"))) {
    return out;
  }
  if (!ok(ctx, check_tensor(op, "cache", cache, quantized ? ScalarType::Byte : ScalarType::Float,
                            "float32 or uint8 (q8_0 / q4_0 rows)", "[B, cache_rows, n_kv_heads, row]"))) {
    return out;
  }
  s.batch = u32(value.size(0));
  s.seq_len = u32(value.size(1));
  s.n_kv_heads = s.n_heads = u32(value.size(2));
  s.head_dim = u32(value.size(3));
  s.cache_rows = u32(cache.size(1));
  if (cache.size(0) != value.size(0) || cache.size(2) != value.size(2)) {
    ok(ctx,
       Status::error(Code::kInvalidArgument,
                     "%s: cache [%zd, %zd, %zd, %zd] does not match value's batch %u and "
                     "%u kv heads",
                     op, static_cast<ssize_t>(cache.size(0)), static_cast<ssize_t>(cache.size(1)),
                     static_cast<ssize_t>(cache.size(2)), static_cast<ssize_t>(cache.size(3)), s.batch, s.n_kv_heads));
    return out;
  }
  if (!ok(ctx, cache_storage(op, "cache", static_cast<size_t>(cache.size(3)), quantized, s.head_dim, &s.cache_dtype))) {
    return out;
  }
  if (!ok(ctx, check_start(op, start_pos, s.seq_len, s))) return out;
  ok(ctx,
     update_kv_cache(op, value.const_data_ptr<float>(), cache.mutable_data_ptr(), s, static_cast<uint32_t>(start_pos)));
  return out;
}

}  // namespace
}  // namespace headway::executorch

// The last refusal of the calling thread: headway's message ("" if none) and its Code (0 if none).
// headway_executorch_clear_error() forgets it (headway.executorch.execute() does before each run).
extern "C" __attribute__((visibility("default"))) const char* headway_executorch_last_error() {
  return headway::executorch::g_last_error;
}
extern "C" __attribute__((visibility("default"))) int headway_executorch_last_code() {
  return headway::executorch::g_last_code;
}
extern "C" __attribute__((visibility("default"))) void headway_executorch_clear_error() {
  headway::executorch::g_last_error[0] = '\0';
  headway::executorch::g_last_code = 0;
}

EXECUTORCH_LIBRARY(headway, "sdpa_with_kv_cache.out", headway::executorch::sdpa_with_kv_cache_out);
EXECUTORCH_LIBRARY(headway, "sdpa_with_quantized_kv_cache.out", headway::executorch::sdpa_with_quantized_kv_cache_out);
EXECUTORCH_LIBRARY(headway, "update_cache.out", headway::executorch::update_cache_out);
