// The CPU backend: KvCache and attend() over one caller-owned block, plus dense_plan().
//
// Memory layout (64-byte aligned regions): [K/V cache: plan.kv_bytes_per_layer]
// [RoPE table: plan.rope_bytes_per_layer] [ALiBi slopes: plan.alibi_bytes] [workspace].
// The workspace holds the largest any call within the plan asks for
// (attention_workspace_bytes_bound, headway/detail/attention_policy.hpp).
#include <cstring>

#include "headway/backend.hpp"
#include "runtime/attention/attention_run.hpp"
#include "runtime/attention/kv_append_check.hpp"
#include "runtime/core/format.hpp"
#include "simd/attention/attention.h"

namespace headway {
namespace {

uint64_t workspace_bound(const Plan& plan, uint32_t threads) {
  return attention_workspace_bytes_bound(plan.head_dim, plan.group_size, plan.config.kv_heads(), plan.cache_rows,
                                         plan.max_tokens, threads);
}

}  // namespace

Result<Plan> dense_plan(const AttentionShape& shape, DType kv_dtype) {
  // The same shape checks and messages as attend() (which builds its dense args from the shape).
  HEADWAY_RETURN_IF_ERROR(attention_workspace_bytes(shape, 1).status());
  Config c;
  c.set_name("dense");
  c.n_heads = shape.n_heads;
  c.n_kv_heads = shape.n_kv_heads;
  c.head_dim = shape.head_dim;
  c.d_model = shape.n_heads * shape.head_dim;
  c.max_seq = shape.t_q > shape.t_kv ? shape.t_q : shape.t_kv;
  c.causal = false;  // dense calls give the mask per call
  c.kv_dtype = kv_dtype;
  PlanOptions o;
  o.max_tokens = shape.t_q;
  o.weights_in_arena = false;
  return make_plan(c, o);
}

size_t CpuBackend::memory_bytes(const Plan& plan, uint32_t threads) {
  if (!check_kv_plan("cpu backend", plan).ok()) return 0;
  return align_up(plan.kv_bytes_per_layer) + plan.rope_bytes_per_layer + plan.alibi_bytes +
         align_up(workspace_bound(plan, threads ? threads : 1));
}

Status CpuBackend::create(const Plan& plan, ThreadPool* pool, void* memory, size_t bytes) {
  HEADWAY_RETURN_IF_ERROR(check_kv_plan("cpu backend", plan));
  const uint32_t threads = pool != nullptr ? pool->threads() : 1;
  const size_t need = memory_bytes(plan, threads);
  if (memory == nullptr || bytes < need) {
    return Status::error(Code::kInvalidArgument, "cpu backend: memory is %zu bytes%s, the plan needs %zu (%u threads)",
                         memory ? bytes : size_t{0}, memory ? "" : " (null)", need, threads);
  }
  if (reinterpret_cast<uintptr_t>(memory) % kAlignment != 0) {
    return Status::error(Code::kInvalidArgument, "cpu backend: memory is not %llu-byte aligned",
                         static_cast<unsigned long long>(kAlignment));
  }
  uint8_t* base = static_cast<uint8_t*>(memory);
  const size_t kv_bytes = align_up(plan.kv_bytes_per_layer);
  double* rope = plan.rope_bytes_per_layer ? reinterpret_cast<double*>(base + kv_bytes) : nullptr;
  if (rope != nullptr) KvCache::make_rope_table(plan, rope);
  float* alibi = plan.alibi_bytes ? reinterpret_cast<float*>(base + kv_bytes + plan.rope_bytes_per_layer) : nullptr;
  if (alibi != nullptr) KvCache::make_alibi_slopes(plan, alibi);
  const size_t before_workspace = kv_bytes + plan.rope_bytes_per_layer + plan.alibi_bytes;
  return create(plan, pool, base, plan.kv_bytes_per_layer, rope, base + before_workspace, need - before_workspace,
                alibi);
}

Status CpuBackend::create(const Plan& plan, ThreadPool* pool, void* kv, size_t kv_bytes, const double* rope_table,
                          void* workspace, size_t workspace_bytes, const float* alibi_slopes) {
  HEADWAY_RETURN_IF_ERROR(check_kv_plan("cpu backend", plan));
  const uint32_t threads = pool != nullptr ? pool->threads() : 1;
  const uint64_t need = workspace_bound(plan, threads);
  if (workspace == nullptr || workspace_bytes < need) {
    return Status::error(Code::kInvalidArgument,
                         "cpu backend: workspace is %zu bytes%s, the plan needs %llu (%u threads)",
                         workspace ? workspace_bytes : size_t{0}, workspace ? "" : " (null)",
                         static_cast<unsigned long long>(need), threads);
  }
  if (reinterpret_cast<uintptr_t>(workspace) % kAlignment != 0) {
    return Status::error(Code::kInvalidArgument, "cpu backend: workspace is not %llu-byte aligned",
                         static_cast<unsigned long long>(kAlignment));
  }
  HEADWAY_RETURN_IF_ERROR(cache_.bind(plan, kv, kv_bytes, rope_table, alibi_slopes));
  pool_ = pool;
  workspace_ = static_cast<uint8_t*>(workspace);
  workspace_bytes_ = workspace_bytes;
  format_to(description_, sizeof(description_), "cpu: %s, %u thread%s", simd::attention_target_name(), threads,
            threads == 1 ? "" : "s");
  return Status();
}

Status CpuBackend::append(const float* k, size_t k_token_stride, const float* v, size_t v_token_stride, uint32_t n) {
  return cache_.append(k, k_token_stride, v, v_token_stride, n);
}

Status CpuBackend::attend(const float* q, size_t q_token_stride, float* o, size_t o_token_stride, uint32_t t_q,
                          const float* sinks) {
  if (workspace_ == nullptr) return Status::error(Code::kFailedPrecondition, "cpu backend: attend before create");
  if (t_q > plan().max_tokens) {
    return Status::error(Code::kOutOfRange, "cpu backend: %u queries are more than the plan's max_tokens %u", t_q,
                         plan().max_tokens);
  }
  return cache_.attend(q, q_token_stride, o, o_token_stride, t_q, pool_, workspace_, workspace_bytes_, sinks);
}

Status CpuBackend::attend_dense(const float* q, const void* k, const void* v, DType kv_dtype, float* o,
                                const AttentionShape& shape, const AttentionParams& params) {
  if (workspace_ == nullptr) return Status::error(Code::kFailedPrecondition, "cpu backend: attend before create");
  const Config& c = plan().config;
  if (shape.n_heads != c.n_heads || shape.n_kv_heads != c.kv_heads() || shape.head_dim != plan().head_dim) {
    return Status::error(Code::kInvalidArgument,
                         "cpu backend: shape has %u heads, %u kv heads, head_dim %u; the plan has %u, %u, %u",
                         shape.n_heads, shape.n_kv_heads, shape.head_dim, c.n_heads, c.kv_heads(), plan().head_dim);
  }
  if (shape.t_q > plan().max_tokens || shape.t_kv > plan().cache_rows) {
    return Status::error(Code::kOutOfRange,
                         "cpu backend: t_q %u, t_kv %u are past the plan's max_tokens %u, cache_rows %u", shape.t_q,
                         shape.t_kv, plan().max_tokens, plan().cache_rows);
  }
  if (kv_dtype != c.kv_dtype) {
    return Status::error(Code::kInvalidArgument,
                         "cpu backend: k and v are %s, the plan stores %s (make the plan with dense_plan(shape, %s))",
                         dtype_name(kv_dtype), dtype_name(c.kv_dtype), dtype_name(kv_dtype));
  }
  // The dense call replaces what the cache held, but a rejected call leaves it as it was.
  const Status s = headway::attend(q, k, v, kv_dtype, o, shape, params, pool_, workspace_, workspace_bytes_);
  if (s.ok()) cache_.reset();
  return s;
}

}  // namespace headway
