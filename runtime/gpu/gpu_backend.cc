// GpuBackend: one layer's K/V, Q and O on a Vulkan device and the attention pipeline for its
// plan. create() allocates and builds everything (buffers, pipelines, the command buffers: the
// steps in gpu_backend_impl.hpp); append() writes rows to the device cache (gpu_kv_upload.cc);
// attend() writes the call's values and resubmits the command buffer recorded at create (mapped
// memory), or records copies, the dispatches and the read-back (staged), and waits on one fence
// (gpu_dispatch.cc). This file checks the arguments and ties the steps together. Multi-head
// latent attention (Config::mla) runs as KvCache does: one latent row per token, K and V at once,
// in one device buffer.
#include <cmath>
#include <new>

#include "headway/backend.hpp"
#include "runtime/attention/attention_run.hpp"
#include "runtime/core/format.hpp"
#include "runtime/gpu/gpu_backend_impl.hpp"
#include "runtime/attention/kv_append_check.hpp"
#include "runtime/attention/kv_ring.hpp"
#include "runtime/attention/rope.hpp"
#include "runtime/core/debug_check.hpp"

namespace headway {

Status GpuBackend::Impl::build(const Plan& p) {
  choose_storage(p);
  Result<gpu::Tiling> t = gpu::choose_tiling(head_dim, p.max_tokens * p.group_size, ctx->limits);
  if (!t.ok()) return t.status();
  tiling = t.value();
  HEADWAY_RETURN_IF_ERROR(check_device_limits());
  HEADWAY_RETURN_IF_ERROR(create_buffers());
  HEADWAY_RETURN_IF_ERROR(create_split_partials());
  HEADWAY_RETURN_IF_ERROR(create_layouts());
  HEADWAY_RETURN_IF_ERROR(create_descriptor_sets());
  HEADWAY_RETURN_IF_ERROR(create_pipelines());
  HEADWAY_RETURN_IF_ERROR(create_commands());
  HEADWAY_RETURN_IF_ERROR(write_plan_alibi_slopes());
  describe();
  return Status();
}

// K/V in the plan's dtype (f16 and bf16 where the device has 16-bit storage, else widened to
// f32, rounded to the plan's dtype first, so the results match; q8_0 and q4_0 in KvCache's bytes).
void GpuBackend::Impl::choose_storage(const Plan& p) {
  plan = p;
  rope_frequencies(p.config.rope, p.head_dim, rope);
  head_dim = p.head_dim;
  n_kv = p.config.kv_heads();
  q_width = p.q_width;
  const DType dt = p.config.kv_dtype;
  storage = gpu::storage_for(dt, info->storage_16bit);
  mapped = info->host_mapped;
  row_bytes = gpu::storage_row_bytes(storage, head_dim);
  shared_kv = p.config.is_mla();
  ring = KvRing(p);
}

Status GpuBackend::Impl::check_device_limits() const {
  const Plan& p = plan;
  const VkDeviceSize kv_bytes = this->kv_bytes();
  const VkDeviceSize qo_bytes = VkDeviceSize{p.max_tokens} * q_width * sizeof(float);
  const VkDeviceSize largest = kv_bytes > qo_bytes ? kv_bytes : qo_bytes;
  if (largest > info->max_storage_buffer_bytes) {
    return Status::error(Code::kUnsupported,
                         "gpu: the plan needs a %llu-byte buffer (K or V: %u kv heads × %u rows × head_dim %u, %s; "
                         "Q/O: %u tokens × %u), the device binds at most %llu (maxStorageBufferRange); lower "
                         "max_seq or max_tokens",
                         static_cast<unsigned long long>(largest), n_kv, p.cache_rows, head_dim,
                         gpu::storage_name(storage), p.max_tokens, q_width,
                         static_cast<unsigned long long>(info->max_storage_buffer_bytes));
  }
  if (n_kv > ctx->max_workgroup_count_y) {
    return Status::error(Code::kUnsupported, "gpu: %u kv heads are more than maxComputeWorkGroupCount[1] = %u", n_kv,
                         ctx->max_workgroup_count_y);
  }
  return Status();
}

void GpuBackend::Impl::describe() {
  format_to(kernel, sizeof(kernel), "attn_%s_%s_r%ut%uk%u", gpu::storage_name(storage),
            headway::kernel_name(plan.kernel), tiling.rows, tiling.tpr, tiling.kv_tile);
  format_to(description, sizeof(description), "gpu: %s (%s); kernel %s, %u threads, K/V %s%s%s, %s, split-KV up to %u",
            info->name, info->type, kernel, tiling.threads, gpu::storage_name(storage),
            storage == gpu::Storage::kF32 && plan.config.kv_dtype != DType::kF32 ? " (widened: no 16-bit storage)" : "",
            shared_kv ? " (MLA: V is the K row)" : "", mapped ? "host-mapped" : "staged", max_splits);
}

void GpuBackend::Impl::destroy() {
  if (ctx == nullptr || ctx->device == VK_NULL_HANDLE) return;
  destroy_commands();
  destroy_pipelines();
  destroy_buffers();
}

// ---- GpuBackend --------------------------------------------------------------------------------

GpuBackend::~GpuBackend() { destroy(); }

void GpuBackend::destroy() {
  if (impl_ != nullptr) {
    impl_->destroy();
    delete impl_;
    impl_ = nullptr;
  }
}

Status GpuBackend::create(GpuContext* context, const Plan& plan, bool dense_masks) {
  if (context == nullptr || !context->created()) {
    return Status::error(Code::kFailedPrecondition, "gpu backend: the GpuContext is %s (create it first)",
                         context == nullptr ? "null" : "not created");
  }
  HEADWAY_RETURN_IF_ERROR(check_kv_plan("gpu backend", plan));
  if (!rope_rotations_known(plan.config.rope)) {
    return Status::error(Code::kUnsupported,
                         "gpu backend: this config's RoPE scaling is not one headway applies (linear, llama3, yarn or "
                         "longrope, from their parameters)");
  }
  if (!dtype_stores_kv(plan.config.kv_dtype)) {
    return Status::error(Code::kInvalidArgument,
                         "gpu backend: the plan's kv dtype %s (%u) is not one of %s (make the plan with make_plan(), "
                         "which checks the config)",
                         dtype_name(plan.config.kv_dtype), static_cast<unsigned>(plan.config.kv_dtype), kKvDTypeNames);
  }
  if (plan.config.kv_rotation != KvRotation::kNone) {
    return Status::error(Code::kUnsupported,
                         "gpu backend: kv_rotation %s is not supported on the GPU (its cache and shaders do not "
                         "rotate rows); use the cpu backend or kv_rotation none",
                         kv_rotation_name(plan.config.kv_rotation));
  }
  destroy();
  Impl* x = new (std::nothrow) Impl;
  if (x == nullptr) return Status::error(Code::kInternal, "gpu backend: cannot allocate its state");
  x->ctx = context->impl();
  x->dense_masks = dense_masks;
  x->info = &context->info();
  const Status s = x->build(plan);
  if (!s.ok()) {
    x->destroy();
    delete x;
    return s;
  }
  impl_ = x;
  return Status();
}

const char* GpuBackend::kernel_name() const { return impl_ ? impl_->kernel : "none"; }
const char* GpuBackend::description() const { return impl_ ? impl_->description : "gpu: not created"; }

const Plan& GpuBackend::plan() const {
  static constexpr Plan kNone{};
  return impl_ ? impl_->plan : kNone;
}
uint32_t GpuBackend::size() const { return impl_ ? impl_->size : 0; }
uint32_t GpuBackend::position() const { return impl_ ? impl_->start + impl_->size : 0; }

Status GpuBackend::rotate_queries(float* q, size_t q_token_stride, uint32_t t_q) const {
  if (impl_ == nullptr) return Status::error(Code::kFailedPrecondition, "gpu backend: rotate_queries before create");
  return rotate_last_queries("gpu backend", impl_->plan, impl_->rope, position(), impl_->size, q, q_token_stride, t_q);
}

void GpuBackend::rotate_queries_unchecked(float* q, size_t q_token_stride, uint32_t t_q) const {
  HEADWAY_DEBUG_CHECK(impl_ == nullptr
                          ? Status::error(Code::kFailedPrecondition, "gpu backend: not created")
                          : check_last_queries("gpu backend", impl_->plan, impl_->size, q, q_token_stride, t_q));
  headway::rotate_queries_unchecked(impl_->plan, impl_->rope, position() - t_q, position(), q, q_token_stride, t_q);
}

void GpuBackend::reset(uint32_t start_position) {
  if (impl_ == nullptr) return;
  impl_->start = start_position;
  impl_->size = 0;
  impl_->pending_n = 0;
}

Status GpuBackend::truncate(uint32_t tokens) {
  if (impl_ == nullptr) return Status::error(Code::kFailedPrecondition, "gpu backend: truncate before create");
  Impl& x = *impl_;
  HEADWAY_RETURN_IF_ERROR(check_kv_truncate("gpu backend", x.plan, x.size, tokens));
  // Staged rows of dropped tokens are never copied (staging holds a run of consecutive tokens).
  if (x.pending_n != 0 && x.pending_pos + x.pending_n > tokens) {
    x.pending_n = tokens <= x.pending_pos ? 0 : tokens - x.pending_pos;
  }
  x.size = tokens;
  return Status();
}

namespace {

Status check_append(const GpuBackend::Impl* x, const float* k, size_t k_token_stride, const float* v,
                    size_t v_token_stride, uint32_t n) {
  if (x == nullptr) return Status::error(Code::kFailedPrecondition, "gpu backend: append before create");
  return check_kv_append("gpu backend", x->plan, x->start + x->size, k, k_token_stride, v, v_token_stride, n,
                         KvStrides::kEqualAndAtLeastWidth);
}

Status check_attend(const GpuBackend::Impl* x, const float* q, size_t q_token_stride, const float* o,
                    size_t o_token_stride, uint32_t t_q, const float* sinks) {
  if (x == nullptr) return Status::error(Code::kFailedPrecondition, "gpu backend: attend before create");
  if (t_q == 0 || t_q > x->size) {
    return Status::error(Code::kInvalidArgument,
                         "gpu backend: attend for %u queries, but the cache holds %u tokens: queries are the last "
                         "tokens appended",
                         t_q, x->size);
  }
  if (t_q > x->plan.max_tokens) {
    return Status::error(Code::kOutOfRange, "gpu backend: %u queries are more than the plan's max_tokens %u", t_q,
                         x->plan.max_tokens);
  }
  if (q == nullptr || o == nullptr) return Status::error(Code::kInvalidArgument, "gpu backend: q or o is null");
  if (q_token_stride < x->q_width || o_token_stride < x->q_width) {
    return Status::error(Code::kInvalidArgument,
                         "gpu backend: token strides %zu (q), %zu (o) are below n_heads · head_dim = %u",
                         q_token_stride, o_token_stride, x->q_width);
  }
  return check_sink_logits(sinks, x->plan.config.n_heads);  // KvCache::attend's check and message
}

}  // namespace

Status GpuBackend::append(const float* k, size_t k_token_stride, const float* v, size_t v_token_stride, uint32_t n) {
  HEADWAY_RETURN_IF_ERROR(check_append(impl_, k, k_token_stride, v, v_token_stride, n));
  return append_unchecked(k, k_token_stride, v, v_token_stride, n);
}

Status GpuBackend::append_unchecked(const float* k, size_t k_token_stride, const float* v, size_t v_token_stride,
                                    uint32_t n) {
  HEADWAY_DEBUG_CHECK(check_append(impl_, k, k_token_stride, v, v_token_stride, n));
  static_cast<void>(v_token_stride);  // checked equal to k's: the row writer steps both by one
  Impl& x = *impl_;
  const Status s = x.write_rows(k, v, k_token_stride, DType::kF32, n, x.size, true);
  if (!s.ok()) {  // a failed flush: the device state is unknown, start over
    x.size = 0;
    x.pending_n = 0;
    return s;
  }
  x.size += n;
  return Status();
}

Status GpuBackend::attend(const float* q, size_t q_token_stride, float* o, size_t o_token_stride, uint32_t t_q,
                          const float* sinks) {
  HEADWAY_RETURN_IF_ERROR(check_attend(impl_, q, q_token_stride, o, o_token_stride, t_q, sinks));
  return attend_unchecked(q, q_token_stride, o, o_token_stride, t_q, sinks);
}

Status GpuBackend::attend_unchecked(const float* q, size_t q_token_stride, float* o, size_t o_token_stride,
                                    uint32_t t_q, const float* sinks) {
  HEADWAY_DEBUG_CHECK(check_attend(impl_, q, q_token_stride, o, o_token_stride, t_q, sinks));
  Impl& x = *impl_;
  const Config& c = x.plan.config;
  // KvCache::view over the rows append wrote.
  const KvRingKeys keys = x.ring.keys(x.size);
  gpu::CallParams pc{};
  pc.t_q = t_q;
  pc.t_kv = keys.t_kv;
  pc.n_heads = c.n_heads;
  pc.group = x.plan.group_size;
  pc.kv_head_stride = x.plan.cache_rows * x.head_dim;
  pc.scale = c.logit_scale();
  pc.softcap = c.softcap;
  pc.causal = c.causal ? 1u : 0u;
  pc.window = c.window;
  pc.window_symmetric = c.window != 0 && c.window_symmetric ? 1u : 0u;
  pc.sink_keys = keys.sink_tokens < keys.t_kv ? keys.sink_tokens : keys.t_kv;
  pc.kv_ring_rows = keys.ring_rows;
  pc.kv_first_row = keys.first_row;
  pc.sink_gap = keys.sink_gap;
  return x.run(q, q_token_stride, o, o_token_stride, sinks, x.plan_slopes, pc);
}

Status GpuBackend::attend_dense(const float* q, const void* k, const void* v, DType kv_dtype, float* o,
                                const AttentionShape& shape, const AttentionParams& params) {
  if (impl_ == nullptr) return Status::error(Code::kFailedPrecondition, "gpu backend: attend before create");
  Impl& x = *impl_;
  const Config& c = x.plan.config;
  if (shape.n_heads != c.n_heads || shape.n_kv_heads != x.n_kv || shape.head_dim != x.head_dim) {
    return Status::error(Code::kInvalidArgument,
                         "gpu backend: shape has %u heads, %u kv heads, head_dim %u; the plan has %u, %u, %u",
                         shape.n_heads, shape.n_kv_heads, shape.head_dim, c.n_heads, x.n_kv, x.head_dim);
  }
  if (shape.t_q > x.plan.max_tokens || shape.t_kv > x.plan.cache_rows) {
    return Status::error(Code::kOutOfRange,
                         "gpu backend: t_q %u, t_kv %u are past the plan's max_tokens %u, cache_rows %u", shape.t_q,
                         shape.t_kv, x.plan.max_tokens, x.plan.cache_rows);
  }
  if (x.shared_kv && v != k) {
    return Status::error(Code::kInvalidArgument,
                         "gpu backend: the plan is multi-head latent attention (kv_lora_rank %u), whose V is the K "
                         "row (one buffer): attend_dense takes v == k",
                         c.mla.kv_lora_rank);
  }
  if (kv_dtype != c.kv_dtype) {
    return Status::error(Code::kInvalidArgument,
                         "gpu backend: k and v are %s, the plan stores %s (make the plan with dense_plan(shape, %s))",
                         dtype_name(kv_dtype), dtype_name(c.kv_dtype), dtype_name(kv_dtype));
  }
  // attend()'s checks and messages, over the same token-major tensors (a block format's rows are
  // whole blocks).
  const size_t row_values = dtype_row_values(kv_dtype, x.head_dim);
  const Result<simd::AttentionArgs> args =
      strided_attention_args(q, k, v, kv_dtype, o, shape, params, row_values, size_t{x.n_kv} * row_values);
  if (!args.ok()) return args.status();
  const simd::AttentionArgs& a = args.value();
  HEADWAY_RETURN_IF_ERROR(validate_attention_args(a));
  HEADWAY_RETURN_IF_ERROR(check_packed_batch(shape, params));
  const bool masked = params.mask_bool != nullptr || params.mask_additive != nullptr;
  if (masked && !x.dense_masks) {
    return Status::error(Code::kFailedPrecondition,
                         "gpu backend: a general mask (mask_bool or mask_additive) needs the backend created with "
                         "dense_masks (create(context, plan, true))");
  }

  x.start = 0;  // the dense K/V replace the cache; it is empty afterwards
  x.size = 0;
  x.pending_n = 0;
  gpu::CallParams pc{};
  pc.n_heads = shape.n_heads;
  pc.group = shape.n_heads / shape.n_kv_heads;
  pc.kv_head_stride = x.plan.cache_rows * x.head_dim;
  pc.scale = params.scale != 0.0f ? params.scale : 1.0f / std::sqrt(static_cast<float>(shape.head_dim));
  pc.softcap = params.softcap;
  pc.causal = params.causal ? 1u : 0u;
  pc.window = params.window;
  pc.prefix_keys = params.prefix;
  pc.window_symmetric = params.window_symmetric ? 1u : 0u;
  // A packed batch runs one sequence at a time, its K/V in the cache's first rows.
  const uint32_t* cu_q = params.cu_seqlens_q;
  const uint32_t* cu_k = params.cu_seqlens_k != nullptr ? params.cu_seqlens_k : cu_q;
  const bool packed = cu_q != nullptr;
  const uint32_t n_seqs = packed ? params.n_seqs : 1;
  const size_t kv_token_bytes = size_t{x.n_kv} * dtype_row_bytes(kv_dtype, x.head_dim);
  Status s;
  for (uint32_t b = 0; b < n_seqs; ++b) {
    const uint32_t q_row = packed ? cu_q[b] : 0, kv_row = packed ? cu_k[b] : 0;
    pc.t_q = packed ? cu_q[b + 1] - q_row : shape.t_q;
    pc.t_kv = packed ? cu_k[b + 1] - kv_row : shape.t_kv;
    const size_t kv_offset = size_t{kv_row} * kv_token_bytes;
    s = x.write_rows(static_cast<const uint8_t*>(k) + kv_offset, static_cast<const uint8_t*>(v) + kv_offset,
                     a.kv_row_stride, kv_dtype, pc.t_kv, 0, false);
    if (!s.ok()) break;
    // validate_attention_args: sink tokens come with a window larger than them.
    const uint32_t s_tokens = params.window != 0 ? params.sink_tokens : 0;
    pc.sink_keys = s_tokens < pc.t_kv ? s_tokens : pc.t_kv;
    const size_t q_offset = size_t{q_row} * x.q_width;
    // The sequence's block of the mask: its rows, its keys, the whole call's row stride.
    gpu::MaskRows mask{params.mask_bool, params.mask_additive, a.mask_row_stride};
    const size_t mask_at = size_t{q_row} * mask.row_stride + kv_row;
    if (mask.bools != nullptr) mask.bools += mask_at;
    if (mask.additive != nullptr) mask.additive += mask_at;
    s = x.run(q + q_offset, x.q_width, o + q_offset, x.q_width, params.sinks, params.alibi_slopes, pc, &mask);
    if (!s.ok()) break;
  }
  x.pending_n = 0;
  return s;
}

}  // namespace headway
