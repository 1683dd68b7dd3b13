#include "headway/kv_cache.hpp"

#include <cstring>

#include "headway/dtype_convert.hpp"
#include "headway/hadamard.hpp"
#include "headway/quantize.hpp"
#include "runtime/attention/attention_run.hpp"
#include "runtime/attention/kv_append_check.hpp"
#include "runtime/attention/kv_ring.hpp"
#include "runtime/attention/rope.hpp"
#include "runtime/core/debug_check.hpp"

namespace headway {

struct KvCache::View {
  simd::AttentionArgs args;
};

void KvCache::make_rope_table(const Plan& plan, double* table) {
  rope_frequencies(plan.config.rope, plan.head_dim, table);
}

void KvCache::make_alibi_slopes(const Plan& plan, float* slopes) {
  const Config& c = plan.config;
  // The plan's config passed validate(): n_heads and the bias are in range.
  (void)alibi_slopes(c.n_heads, slopes, c.alibi_max_bias);
  if (!c.alibi_times_scale) return;
  const float scale = c.logit_scale();
  for (uint32_t h = 0; h < c.n_heads; ++h) slopes[h] *= scale;
}

Status KvCache::bind(const Plan& plan, void* region, size_t bytes, const double* rope_table,
                     const float* alibi_slopes) {
  if (region == nullptr) return Status::error(Code::kInvalidArgument, "kv cache: region is null");
  HEADWAY_RETURN_IF_ERROR(check_kv_plan("kv cache", plan));
  if (bytes < plan.kv_bytes_per_layer) {
    return Status::error(Code::kInvalidArgument, "kv cache: region is %llu bytes, one layer needs %llu",
                         static_cast<unsigned long long>(bytes),
                         static_cast<unsigned long long>(plan.kv_bytes_per_layer));
  }
  if (!rope_rotations_known(plan.config.rope)) {
    return Status::error(Code::kUnsupported,
                         "kv cache: this config's RoPE scaling is not one headway applies (linear, llama3, yarn or "
                         "longrope, from their parameters); its plan is exact, but attention with it would be wrong");
  }
  if (plan.config.rope.style != RopeStyle::kNone && rope_table == nullptr) {
    return Status::error(Code::kInvalidArgument,
                         "kv cache: the config has RoPE and the frequency table is null (KvCache::make_rope_table)");
  }
  if (plan.config.alibi && alibi_slopes == nullptr) {
    return Status::error(Code::kInvalidArgument,
                         "kv cache: the config has ALiBi and the slopes are null (KvCache::make_alibi_slopes)");
  }
  plan_ = plan;
  rope_ = rope_table;
  alibi_ = plan.config.alibi ? alibi_slopes : nullptr;
  k_ = static_cast<uint8_t*>(region);
  v_ = k_ + uint64_t{plan.config.kv_heads()} * plan.cache_rows * dtype_row_bytes(plan.config.kv_dtype, plan.head_dim);
  if (plan.config.is_mla()) v_ = k_;  // MLA's V is its K row (the latent read as values)
  start_ = 0;
  size_ = 0;
  return Status();
}

namespace {

// Stores one head's row of head_dim floats in the cache dtype (dtype_row_bytes(t, n) bytes; the
// block formats as quantize_row writes them, a NaN or infinity making its block NaN).
void store_row(const float* src, uint8_t* dst, uint32_t n, DType t) {
  switch (t) {
    case DType::kQ8_0:
    case DType::kQ4_0:
      // The arguments are the cache's own (a valid type, dst holding the row): cannot fail.
      (void)quantize_row(quant_type_of(t), src, n, dst, dtype_row_bytes(t, n));
      break;
    case DType::kF32: std::memcpy(dst, src, n * sizeof(float)); break;
    case DType::kF16: {
      uint16_t* d = reinterpret_cast<uint16_t*>(dst);
      for (uint32_t i = 0; i < n; ++i) d[i] = f32_to_f16_bits(src[i]);
      break;
    }
    case DType::kBF16: {
      uint16_t* d = reinterpret_cast<uint16_t*>(dst);
      for (uint32_t i = 0; i < n; ++i) d[i] = f32_to_bf16_bits(src[i]);
      break;
    }
    default: break;  // weight formats: no cache stores them (validate refuses them as kv_dtype)
  }
}

}  // namespace

Status KvCache::check_append(const float* k, size_t k_token_stride, const float* v, size_t v_token_stride,
                             uint32_t n) const {
  if (k_ == nullptr) return Status::error(Code::kFailedPrecondition, "kv cache: append before bind");
  return check_kv_append("kv cache", plan_, position(), k, k_token_stride, v, v_token_stride, n,
                         KvStrides::kEachAtLeastWidth);
}

Status KvCache::append(const float* k, size_t k_token_stride, const float* v, size_t v_token_stride, uint32_t n) {
  HEADWAY_RETURN_IF_ERROR(check_append(k, k_token_stride, v, v_token_stride, n));
  append_unchecked(k, k_token_stride, v, v_token_stride, n, nullptr);
  return Status();
}

namespace {

// Tokens per task where an append or a query rotation splits over the pool.
constexpr uint32_t kTokensPerTask = 16;

// The tasks over [0, n) tokens, kTokensPerTask each.
void run_token_tasks(ThreadPool* pool, uint32_t n, ThreadPool::TaskFn fn, void* ctx) {
  ThreadPool::run_on(pool, ThreadPool::tasks_of(n, kTokensPerTask), fn, ctx);
}

}  // namespace

struct KvCache::AppendCall {
  KvCache* cache;
  const float* k;
  size_t k_token_stride;
  const float* v;
  size_t v_token_stride;
  const double* freqs;  // the call's RoPE frequencies (null without RoPE)
  uint32_t n;
};

void KvCache::append_task(void* ctx, size_t task) {
  const AppendCall& a = *static_cast<const AppendCall*>(ctx);
  const ThreadPool::Items tokens = ThreadPool::items_of(task, a.n, kTokensPerTask);
  a.cache->append_tokens(a, tokens.first, tokens.first + tokens.count);
}

void KvCache::append_tokens(const AppendCall& a, uint32_t first, uint32_t end) {
  const Config& c = plan_.config;
  const uint32_t kvh = c.kv_heads();
  const uint32_t hd = plan_.head_dim;
  const size_t row_bytes = dtype_row_bytes(c.kv_dtype, hd);
  const size_t head_bytes = size_t{plan_.cache_rows} * row_bytes;
  const bool hadamard = c.kv_rotation == KvRotation::kHadamard;
  float rotated[kMaxHeadDim];  // one head's K (RoPE, then Hadamard) or V (Hadamard)
  TokenRotation rotation;      // the token's, for each of its kv heads
  const KvRing ring(plan_);
  for (uint32_t t = first; t < end; ++t) {
    const uint32_t row = ring.row(size_ + t);  // rows count from the reset
    if (a.freqs != nullptr) rope_token_rotation(c.rope, hd, position() + t, a.freqs, &rotation);
    for (uint32_t g = 0; g < kvh; ++g) {
      std::memcpy(rotated, a.k + t * a.k_token_stride + size_t{g} * hd, hd * sizeof(float));
      if (a.freqs != nullptr) rope_rotate_head(rotation, rotated);
      if (hadamard) hadamard_rotate(rotated, hd);
      store_row(rotated, k_ + g * head_bytes + row * row_bytes, hd, c.kv_dtype);
      if (c.is_mla()) continue;  // V is the row just stored
      const float* v_row = a.v + t * a.v_token_stride + size_t{g} * hd;
      if (hadamard) {
        std::memcpy(rotated, v_row, hd * sizeof(float));
        hadamard_rotate(rotated, hd);
        v_row = rotated;
      }
      store_row(v_row, v_ + g * head_bytes + row * row_bytes, hd, c.kv_dtype);
    }
  }
}

void KvCache::append_unchecked(const float* k, size_t k_token_stride, const float* v, size_t v_token_stride, uint32_t n,
                               ThreadPool* pool) {
  HEADWAY_DEBUG_CHECK(check_append(k, k_token_stride, v, v_token_stride, n));
  const Config& c = plan_.config;
  double dynamic[kMaxHeadDim / 2];
  const double* freqs = c.rope.style != RopeStyle::kNone
                            ? rope_call_frequencies(c.rope, plan_.head_dim, position() + n, rope_, dynamic)
                            : nullptr;
  AppendCall call{this, k, k_token_stride, v, v_token_stride, freqs, n};
  // Tokens go to distinct rows unless a ring wraps within the call, where the later token's row
  // must win: that call stays in order on the caller.
  const KvRing ring(plan_);
  const bool distinct_rows = !ring.ring || n <= ring.rows - ring.fixed;
  run_token_tasks(distinct_rows ? pool : nullptr, n, &append_task, &call);
  size_ += n;
}

Status KvCache::truncate(uint32_t tokens) {
  if (k_ == nullptr) return Status::error(Code::kFailedPrecondition, "kv cache: truncate before bind");
  HEADWAY_RETURN_IF_ERROR(check_kv_truncate("kv cache", plan_, size_, tokens));
  size_ = tokens;  // the dropped tokens' rows are overwritten by the next appends
  return Status();
}

Status KvCache::rotate_queries(float* q, size_t q_token_stride, uint32_t t_q) const {
  if (k_ == nullptr) return Status::error(Code::kFailedPrecondition, "kv cache: rotate_queries before bind");
  return rotate_last_queries("kv cache", plan_, rope_, position(), size_, q, q_token_stride, t_q);
}

KvCache::View KvCache::view(uint32_t t_q) const {
  const Config& c = plan_.config;
  View w;
  simd::AttentionArgs& a = w.args;
  const KvRingKeys keys = KvRing(plan_).keys(size_);
  a.t_q = t_q;
  a.t_kv = keys.t_kv;
  a.n_heads = c.n_heads;
  a.n_kv_heads = c.kv_heads();
  a.head_dim = plan_.head_dim;
  a.k = k_;
  a.v = v_;
  a.kv_type = c.kv_dtype;
  a.kv_row_stride = dtype_row_values(c.kv_dtype, plan_.head_dim);  // values; block formats whole blocks
  a.kv_head_stride = size_t{plan_.cache_rows} * a.kv_row_stride;
  a.window = c.window;
  a.window_symmetric = c.window != 0 && c.window_symmetric;
  a.sink_tokens = keys.sink_tokens;
  a.kv_ring_rows = keys.ring_rows;
  a.kv_first_row = keys.first_row;
  a.sink_gap = keys.sink_gap;
  a.alibi_slopes = alibi_;
  a.scale = c.logit_scale();
  a.softcap = c.softcap;
  a.causal = c.causal;
  return w;
}

size_t KvCache::workspace_bytes(uint32_t t_q, uint32_t threads) const {
  const View w = view(t_q);
  return attention_split(w.args, threads ? threads : 1).workspace_bytes;
}

Status KvCache::check_queries(uint32_t t_q) const {
  if (k_ == nullptr) return Status::error(Code::kFailedPrecondition, "kv cache: attend before bind");
  if (t_q == 0 || t_q > size_) {
    return Status::error(Code::kInvalidArgument,
                         "kv cache: attend for %u queries, but the cache holds %u tokens: queries are the last "
                         "tokens appended",
                         t_q, size_);
  }
  if (KvRing(plan_).ring && t_q > plan_.max_tokens) {
    return Status::error(Code::kInvalidArgument, "kv cache: %u queries are more than the ring's %u per call", t_q,
                         plan_.max_tokens);
  }
  return Status();
}

KvCache::View KvCache::call(const float* q, size_t q_token_stride, float* o, size_t o_token_stride, uint32_t t_q,
                            const float* sinks) const {
  View w = view(t_q);
  w.args.q = q;
  w.args.q_token_stride = q_token_stride;
  w.args.o = o;
  w.args.o_token_stride = o_token_stride;
  w.args.sinks = sinks;
  return w;
}

// A rotated cache's output is H · Σ p (Hv): rotated back per head (H · H = I).
void KvCache::unrotate_output(float* o, size_t o_token_stride, uint32_t t_q) const {
  if (plan_.config.kv_rotation == KvRotation::kHadamard) {
    hadamard_rotate_heads(o, t_q, o_token_stride, plan_.config.n_heads, plan_.head_dim);
  }
}

Status KvCache::attend(const float* q, size_t q_token_stride, float* o, size_t o_token_stride, uint32_t t_q,
                       ThreadPool* pool, void* workspace, size_t workspace_bytes, const float* sinks) const {
  HEADWAY_RETURN_IF_ERROR(check_queries(t_q));
  // Every argument attention takes, checked (attend_strided validates what the caller gave: q, o,
  // their strides, the sinks, the pool and the workspace).
  const View w = call(q, q_token_stride, o, o_token_stride, t_q, sinks);
  HEADWAY_RETURN_IF_ERROR(attend_strided(w.args, pool, workspace, workspace_bytes));
  unrotate_output(o, o_token_stride, t_q);
  return Status();
}

void KvCache::attend_unchecked(const float* q, size_t q_token_stride, float* o, size_t o_token_stride, uint32_t t_q,
                               ThreadPool* pool, void* workspace, size_t workspace_bytes, const float* sinks) const {
  HEADWAY_DEBUG_CHECK(check_queries(t_q));
  attend_strided_unchecked(call(q, q_token_stride, o, o_token_stride, t_q, sinks).args, pool, workspace,
                           workspace_bytes);
  unrotate_output(o, o_token_stride, t_q);
}

namespace {

struct RotateCall {
  const Plan* plan;
  const double* rope;
  uint32_t position;
  float* q;
  size_t q_token_stride;
  uint32_t t_q;
};

// Queries [first, first + kTokensPerTask) of the call's t_q, at positions position − t_q + first ..
// with the whole call's frequencies.
void rotate_task(void* ctx, size_t task) {
  const RotateCall& r = *static_cast<const RotateCall*>(ctx);
  const ThreadPool::Items q = ThreadPool::items_of(task, r.t_q, kTokensPerTask);
  rotate_queries_unchecked(*r.plan, r.rope, r.position - r.t_q + q.first, r.position, r.q + q.first * r.q_token_stride,
                           r.q_token_stride, q.count);
}

}  // namespace

void KvCache::rotate_queries_unchecked(float* q, size_t q_token_stride, uint32_t t_q, ThreadPool* pool) const {
  HEADWAY_DEBUG_CHECK(check_last_queries("kv cache", plan_, size_, q, q_token_stride, t_q));
  RotateCall call{&plan_, rope_, position(), q, q_token_stride, t_q};
  run_token_tasks(pool, t_q, &rotate_task, &call);
}

}  // namespace headway
