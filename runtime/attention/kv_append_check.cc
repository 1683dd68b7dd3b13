#include "runtime/attention/kv_append_check.hpp"

#include "runtime/attention/kv_ring.hpp"

namespace headway {

Status check_kv_plan(const char* who, const Plan& plan) {
  if (!plan_is_made(plan) || !KvRing(plan).holdable()) {
    return Status::error(Code::kInvalidArgument,
                         "%s: the plan is not valid (make it with make_plan(), which checks the config)", who);
  }
  return Status();
}

Status check_kv_append(const char* who, const Plan& plan, uint32_t position, const float* k, size_t k_token_stride,
                       const float* v, size_t v_token_stride, uint32_t n, KvStrides strides) {
  if (n == 0) return Status();
  if (k == nullptr || v == nullptr) return Status::error(Code::kInvalidArgument, "%s: append of null k or v", who);
  const Config& c = plan.config;
  const uint32_t kv_width = c.kv_heads() * plan.head_dim;
  if (strides == KvStrides::kEqualAndAtLeastWidth) {
    if (k_token_stride != v_token_stride || k_token_stride < kv_width) {
      return Status::error(Code::kInvalidArgument,
                           "%s: token strides %zu (k), %zu (v) must be equal and at least kv_width %u", who,
                           k_token_stride, v_token_stride, kv_width);
    }
  } else if (k_token_stride < kv_width || v_token_stride < kv_width) {
    return Status::error(Code::kInvalidArgument, "%s: token strides %zu (k), %zu (v) are below kv_width %u", who,
                         k_token_stride, v_token_stride, kv_width);
  }
  if (uint64_t{position} + n > c.max_seq) {
    return Status::error(Code::kOutOfRange, "%s: appending %u tokens at position %u goes past the context of %u tokens",
                         who, n, position, c.max_seq);
  }
  if (KvRing(plan).ring && n > plan.max_tokens) {
    return Status::error(Code::kOutOfRange,
                         "%s: appending %u tokens at once is more than the %u the sliding-window ring (%u rows) was "
                         "planned for; append in chunks of at most max_tokens",
                         who, n, plan.max_tokens, plan.cache_rows);
  }
  return Status();
}

Status check_kv_truncate(const char* who, const Plan& plan, uint32_t size, uint32_t tokens) {
  if (tokens > size) {
    return Status::error(Code::kOutOfRange,
                         "%s: truncate to %u tokens, but the cache holds %u (appended since the reset); it can only "
                         "drop tokens",
                         who, tokens, size);
  }
  const Config& c = plan.config;
  const KvRing ring(plan);
  const uint32_t rows = ring.rows;
  if (tokens == size || !ring.ring || size <= rows) return Status();  // full attention, or nothing evicted
  // A wrapped ring holds the last rows − S tokens (S sink tokens in its first rows for good).
  const uint32_t sinks = ring.fixed;
  const uint32_t evicted_end = size - (rows - sinks);  // tokens S .. evicted_end − 1 are overwritten
  const bool window_hides = c.causal && !c.window_symmetric && sinks == 0 && c.window != 0 && c.window <= rows;
  // At most this many tokens can go: the next query must still find the window − 1 tokens before it.
  const uint32_t removable = window_hides ? rows - c.window + 1 : 0;
  if (size - tokens <= removable) return Status();
  return Status::error(Code::kFailedPrecondition,
                       "%s: a sliding-window ring of %u rows (window %u) has overwritten tokens %u..%u of the %u "
                       "appended since the reset; truncating to %u tokens would need them again (it can remove at "
                       "most %u tokens now); nothing changed",
                       who, rows, c.window, sinks, evicted_end - 1, size, tokens, removable);
}

}  // namespace headway
