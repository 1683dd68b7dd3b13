// The C API's attend() over the caller's tensors, and its thread pool.
#include "headway/attention.hpp"
#include "runtime/capi/capi_objects.hpp"

using namespace headway;

namespace {

AttentionShape shape_of(const headway_attention_shape& s) {
  return AttentionShape{s.t_q, s.t_kv, s.n_heads, s.n_kv_heads, s.head_dim};
}

// The caller's params (struct_size bytes of them) as AttentionParams.
Status params_of(const char* call, const headway_attention_params* in, AttentionParams* out) {
  headway_attention_params p;
  headway_attention_params_init(&p);
  HEADWAY_RETURN_IF_ERROR(capi::read_struct(call, "params", in, &p));
  out->scale = p.scale;
  out->softcap = p.softcap;
  out->causal = p.causal != 0;
  out->window = p.window;
  out->sinks = p.sinks;
  out->sink_tokens = p.sink_tokens;
  out->alibi_slopes = p.alibi_slopes;
  out->prefix = p.prefix;
  out->window_symmetric = p.window_symmetric != 0;
  out->cu_seqlens_q = p.cu_seqlens_q;
  out->cu_seqlens_k = p.cu_seqlens_k;
  out->n_seqs = p.n_seqs;
  out->mask_bool = p.mask_bool;
  out->mask_additive = p.mask_additive;
  out->mask_row_stride = p.mask_row_stride;
  return Status();
}

}  // namespace

extern "C" {

void headway_attention_params_init(headway_attention_params* params) {
  if (params == nullptr) return;
  *params = headway_attention_params{};
  params->struct_size = sizeof(headway_attention_params);
}

headway_status headway_attention_workspace_bytes(const headway_attention_shape* shape,
                                                 const headway_attention_params* params, uint32_t threads,
                                                 size_t* bytes, headway_error* error) {
  constexpr const char* kCall = "headway_attention_workspace_bytes";
  AttentionParams p;
  Status s = shape == nullptr   ? capi::null_argument(kCall, "shape")
             : bytes == nullptr ? capi::null_argument(kCall, "bytes")
                                : params_of(kCall, params, &p);
  if (!s.ok()) return capi::report(s, error);
  const Result<size_t> need = attention_workspace_bytes(shape_of(*shape), p, threads);
  if (!need.ok()) return capi::report(need.status(), error);
  *bytes = need.value();
  return capi::report(s, error);
}

headway_status headway_attend(const float* q, const void* k, const void* v, headway_dtype kv_dtype, float* o,
                              const headway_attention_shape* shape, const headway_attention_params* params,
                              headway_pool* pool, void* workspace, size_t workspace_bytes, headway_error* error) {
  constexpr const char* kCall = "headway_attend";
  AttentionParams p;
  Status s = shape == nullptr ? capi::null_argument(kCall, "shape") : capi::check_dtype(kCall, "kv_dtype", kv_dtype);
  if (s.ok()) s = params_of(kCall, params, &p);
  if (s.ok()) {
    s = attend(q, k, v, static_cast<DType>(kv_dtype), o, shape_of(*shape), p, pool ? &pool->pool : nullptr, workspace,
               workspace_bytes);
  }
  return capi::report(s, error);
}

size_t headway_pool_object_bytes(void) { return sizeof(headway_pool); }

headway_status headway_pool_create(void* memory, size_t memory_bytes, uint32_t threads, headway_pool** pool,
                                   headway_error* error) {
  constexpr const char* kCall = "headway_pool_create";
  Status s = pool == nullptr
                 ? capi::null_argument(kCall, "pool")
                 : capi::check_memory(kCall, memory, memory_bytes, sizeof(headway_pool), HEADWAY_OBJECT_ALIGNMENT);
  if (!s.ok()) return capi::report(s, error);
  headway_pool* p = new (memory) headway_pool;
  s = p->pool.create(threads);
  if (!s.ok()) {
    p->~headway_pool();
    return capi::report(s, error);
  }
  *pool = p;
  return capi::report(s, error);
}

uint32_t headway_pool_threads(const headway_pool* pool) { return pool ? pool->pool.threads() : 0; }

void headway_pool_destroy(headway_pool* pool) {
  if (pool != nullptr) pool->~headway_pool();
}

}  // extern "C"
