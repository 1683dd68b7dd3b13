// GpuBackend's device buffers, made once at create (layouts: gpu_backend_impl.hpp): K, V (none
// for MLA, whose V is the K row), Q and O, the sink logits, the ALiBi slopes, the general mask
// and the call's values (and the indirect dispatch sizes where mapped), the staging buffer and its
// copy regions where memory is not host-mapped, and the split-KV partials.
#include <cstring>
#include <new>

#include "headway/kv_cache.hpp"
#include "runtime/gpu/gpu_backend_impl.hpp"
#include "runtime/gpu/vk_status.hpp"

namespace headway {
namespace {

constexpr VkDeviceSize kPartialsBudget = VkDeviceSize{16} << 20;
constexpr uint32_t kStageTokens = 1024;

constexpr VkDeviceSize align64(VkDeviceSize n) { return (n + 63) / 64 * 64; }

}  // namespace

Status GpuBackend::Impl::create_buffers() {
  const Plan& p = plan;
  const VkDeviceSize kv_bytes = this->kv_bytes();
  const VkDeviceSize qo_bytes = VkDeviceSize{p.max_tokens} * q_width * sizeof(float);
  const gpu::MemoryUse use = mapped ? gpu::MemoryUse::kDeviceMapped : gpu::MemoryUse::kDevice;
  const VkBufferUsageFlags in = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT;
  HEADWAY_RETURN_IF_ERROR(ctx->create_buffer(kv_bytes, in, use, "K", &k));
  if (!shared_kv) HEADWAY_RETURN_IF_ERROR(ctx->create_buffer(kv_bytes, in, use, "V", &v));
  HEADWAY_RETURN_IF_ERROR(ctx->create_buffer(qo_bytes, in, use, "Q", &q));
  HEADWAY_RETURN_IF_ERROR(ctx->create_buffer(
      qo_bytes, VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT, use, "O", &o));
  HEADWAY_RETURN_IF_ERROR(ctx->create_buffer(VkDeviceSize{p.config.n_heads} * sizeof(float), in, use, "sinks", &sinks));
  HEADWAY_RETURN_IF_ERROR(
      ctx->create_buffer(VkDeviceSize{2} * p.config.n_heads * sizeof(float), in, use, "ALiBi slopes", &alibi));
  if (p.config.alibi) {
    plan_slopes = new (std::nothrow) float[p.config.n_heads];
    if (plan_slopes == nullptr) return Status::error(Code::kInternal, "gpu: cannot allocate the ALiBi slopes");
    KvCache::make_alibi_slopes(p, plan_slopes);
  }
  HEADWAY_RETURN_IF_ERROR(ctx->create_buffer(mask_bytes(), in, use, "general mask", &mask));
  HEADWAY_RETURN_IF_ERROR(ctx->create_buffer(align64(sizeof(gpu::CallParams)),
                                             VK_BUFFER_USAGE_UNIFORM_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT, use,
                                             "call parameters", &params));
  if (mapped) {
    return ctx->create_buffer(2 * sizeof(VkDispatchIndirectCommand), VK_BUFFER_USAGE_INDIRECT_BUFFER_BIT,
                              gpu::MemoryUse::kDeviceMapped, "indirect dispatch sizes", &indirect);
  }
  // Rows staged before a copy: at least kStageTokens (a dense call's keys, a long append would
  // otherwise flush every max_tokens rows), at most the ring after its sink rows (a staged run
  // must not overlap itself). The ring holds at least max_tokens rows after them.
  stage_tokens = p.max_tokens > kStageTokens ? p.max_tokens : kStageTokens;
  if (stage_tokens > p.cache_rows - ring.fixed) stage_tokens = p.cache_rows - ring.fixed;
  const VkDeviceSize kv_stage = align64(VkDeviceSize{n_kv} * stage_tokens * row_bytes);
  stage_k = 0;
  stage_v = kv_stage;  // unused where shared_kv
  stage_q = (shared_kv ? 1 : 2) * kv_stage;
  stage_o = stage_q + align64(qo_bytes);
  stage_mask = stage_o + align64(qo_bytes);
  HEADWAY_RETURN_IF_ERROR(ctx->create_buffer(stage_mask + (dense_masks ? mask_bytes() : 0),
                                             VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT,
                                             gpu::MemoryUse::kStaging, "staging", &staging));
  k_regions = new (std::nothrow) VkBufferCopy[3 * n_kv];
  if (!shared_kv) v_regions = new (std::nothrow) VkBufferCopy[3 * n_kv];
  if (k_regions == nullptr || (!shared_kv && v_regions == nullptr)) {
    return Status::error(Code::kInternal, "gpu: cannot allocate %u copy regions", 6 * n_kv);
  }
  return Status();
}

// The plan's ALiBi slopes into the alibi buffer's first half, once: a store where it is mapped,
// else an update in a submission of its own (the command buffers exist by now), which the
// transfer-to-compute barrier every staged call records makes visible to its shaders.
Status GpuBackend::Impl::write_plan_alibi_slopes() {
  if (plan_slopes == nullptr) return Status();
  const VkDeviceSize bytes = VkDeviceSize{plan.config.n_heads} * sizeof(float);
  if (mapped) {
    std::memcpy(alibi.mapped, plan_slopes, bytes);
    return Status();
  }
  HEADWAY_RETURN_IF_ERROR(begin(cmd, VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT));
  vkCmdUpdateBuffer(cmd, alibi.buffer, 0, bytes, plan_slopes);
  HEADWAY_VK(vkEndCommandBuffer(cmd), "vkEndCommandBuffer");
  return submit_and_wait(cmd);
}

// As many splits as 16 MiB (and the longest context) allow; a 256-byte stand-in keeps binding 4
// valid where none fit.
Status GpuBackend::Impl::create_split_partials() {
  const Plan& p = plan;
  const uint32_t split_rows =
      p.max_tokens * p.group_size < gpu::kSplitMaxRows ? p.max_tokens * p.group_size : gpu::kSplitMaxRows;
  const VkDeviceSize per_split = VkDeviceSize{n_kv} * split_rows * (head_dim + 2) * sizeof(float);
  VkDeviceSize splits = kPartialsBudget / per_split;
  const uint32_t min_keys = ctx->split_kv_min_keys;
  if (min_keys == 0) splits = 0;
  else if (splits > p.cache_rows / min_keys) splits = p.cache_rows / min_keys;
  if (splits > gpu::kSplitMaxSplits) splits = gpu::kSplitMaxSplits;
  if (splits * per_split > info->max_storage_buffer_bytes) splits = info->max_storage_buffer_bytes / per_split;
  max_splits = splits >= 2 ? static_cast<uint32_t>(splits) : 0;
  return ctx->create_buffer(max_splits ? max_splits * per_split : 256, VK_BUFFER_USAGE_STORAGE_BUFFER_BIT,
                            gpu::MemoryUse::kDevice, "split-KV partials", &partials);
}

void GpuBackend::Impl::destroy_buffers() {
  ctx->destroy_buffer(&k);
  ctx->destroy_buffer(&v);
  ctx->destroy_buffer(&q);
  ctx->destroy_buffer(&o);
  ctx->destroy_buffer(&staging);
  ctx->destroy_buffer(&partials);
  ctx->destroy_buffer(&sinks);
  ctx->destroy_buffer(&alibi);
  ctx->destroy_buffer(&params);
  ctx->destroy_buffer(&indirect);
  ctx->destroy_buffer(&mask);
  delete[] k_regions;
  delete[] v_regions;
  delete[] plan_slopes;
  k_regions = v_regions = nullptr;
  plan_slopes = nullptr;
}

}  // namespace headway
