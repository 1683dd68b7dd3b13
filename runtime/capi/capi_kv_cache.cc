// The C API's KV cache: one layer's CpuBackend (its K/V rows, RoPE table, ALiBi slopes and
// workspace) in the caller's memory, after the handle:
//   [headway_kv_cache, rounded up to 64 bytes][CpuBackend::memory_bytes(layer plan, threads)]
#include "runtime/capi/capi_objects.hpp"

using namespace headway;

namespace {

Status layer_of(const char* call, const headway_plan* plan, uint32_t layer, Plan* out) {
  if (plan == nullptr) return capi::null_argument(call, "plan");
  if (layer >= plan->plan.config.n_layers) {
    return Status::error(Code::kOutOfRange, "%s: layer %u is not below n_layers %u", call, layer,
                         plan->plan.config.n_layers);
  }
  *out = layer_plan(plan->plan, layer);
  return Status();
}

size_t memory_need(const Plan& layer, uint32_t threads) {
  return capi::round_up(sizeof(headway_kv_cache)) + CpuBackend::memory_bytes(layer, threads);
}

}  // namespace

extern "C" {

headway_status headway_kv_cache_memory_bytes(const headway_plan* plan, uint32_t layer, uint32_t threads, size_t* bytes,
                                             headway_error* error) {
  constexpr const char* kCall = "headway_kv_cache_memory_bytes";
  Plan p;
  Status s = bytes == nullptr ? capi::null_argument(kCall, "bytes") : layer_of(kCall, plan, layer, &p);
  if (s.ok() && (threads == 0 || threads > ThreadPool::kMaxThreads)) {
    s = Status::error(Code::kInvalidArgument, "%s: threads %u is not in 1..%u", kCall, threads,
                      ThreadPool::kMaxThreads);
  }
  if (s.ok()) *bytes = memory_need(p, threads);
  return capi::report(s, error);
}

headway_status headway_kv_cache_create(void* memory, size_t memory_bytes, const headway_plan* plan, uint32_t layer,
                                       headway_pool* pool, headway_kv_cache** cache, headway_error* error) {
  constexpr const char* kCall = "headway_kv_cache_create";
  Plan p;
  Status s = cache == nullptr ? capi::null_argument(kCall, "cache") : layer_of(kCall, plan, layer, &p);
  const uint32_t threads = pool ? pool->pool.threads() : 1;
  if (s.ok()) s = capi::check_memory(kCall, memory, memory_bytes, memory_need(p, threads), HEADWAY_ARENA_ALIGNMENT);
  if (!s.ok()) return capi::report(s, error);
  headway_kv_cache* c = new (memory) headway_kv_cache;
  const size_t head = capi::round_up(sizeof(headway_kv_cache));
  s = c->backend.create(p, pool ? &pool->pool : nullptr, static_cast<uint8_t*>(memory) + head, memory_bytes - head);
  if (!s.ok()) {
    c->~headway_kv_cache();
    return capi::report(s, error);
  }
  *cache = c;
  return capi::report(s, error);
}

headway_status headway_kv_cache_append(headway_kv_cache* cache, const float* k, const float* v, uint32_t n,
                                       headway_error* error) {
  if (cache == nullptr) return capi::report(capi::null_argument("headway_kv_cache_append", "cache"), error);
  const Plan& p = cache->backend.plan();
  return capi::report(cache->backend.append(k, p.kv_width, v, p.kv_width, n), error);
}

headway_status headway_kv_cache_rotate_queries(const headway_kv_cache* cache, float* q, uint32_t t_q,
                                               headway_error* error) {
  if (cache == nullptr) return capi::report(capi::null_argument("headway_kv_cache_rotate_queries", "cache"), error);
  return capi::report(cache->backend.rotate_queries(q, cache->backend.plan().q_width, t_q), error);
}

headway_status headway_kv_cache_attend(headway_kv_cache* cache, const float* q, float* o, uint32_t t_q,
                                       const float* sinks, headway_error* error) {
  if (cache == nullptr) return capi::report(capi::null_argument("headway_kv_cache_attend", "cache"), error);
  const Plan& p = cache->backend.plan();
  return capi::report(cache->backend.attend(q, p.q_width, o, p.q_width, t_q, sinks), error);
}

void headway_kv_cache_reset(headway_kv_cache* cache, uint32_t start_position) {
  if (cache != nullptr) cache->backend.reset(start_position);
}

uint32_t headway_kv_cache_size(const headway_kv_cache* cache) { return cache ? cache->backend.size() : 0; }

uint32_t headway_kv_cache_position(const headway_kv_cache* cache) { return cache ? cache->backend.position() : 0; }

uint32_t headway_kv_cache_rows(const headway_kv_cache* cache) { return cache ? cache->backend.plan().cache_rows : 0; }

}  // extern "C"
