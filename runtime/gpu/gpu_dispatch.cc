// One attention call on the device: Q (and the sink logits) written to mapped or staged memory;
// the staged K/V and Q copies (and the sinks' update), the attention dispatches (and the split-KV merge), and O's
// read-back recorded into one reused command buffer; submitted, waited on with one fence; O copied to the caller.
#include <algorithm>
#include <cstring>
#include <mutex>

#include "runtime/gpu/gpu_backend_impl.hpp"
#include "runtime/gpu/vk_status.hpp"

namespace headway {
namespace {

void barrier(VkCommandBuffer cmd, VkPipelineStageFlags from, VkAccessFlags from_access, VkPipelineStageFlags to,
             VkAccessFlags to_access) {
  VkMemoryBarrier m{};
  m.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER;
  m.srcAccessMask = from_access;
  m.dstAccessMask = to_access;
  vkCmdPipelineBarrier(cmd, from, to, 0, 1, &m, 0, nullptr, 0, nullptr);
}

}  // namespace

Status GpuBackend::Impl::create_commands() {
  VkCommandPoolCreateInfo cp{};
  cp.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO;
  cp.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT;
  cp.queueFamilyIndex = ctx->queue_family;
  HEADWAY_VK(vkCreateCommandPool(device(), &cp, nullptr, &command_pool), "vkCreateCommandPool");
  VkCommandBufferAllocateInfo ca{};
  ca.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO;
  ca.commandPool = command_pool;
  ca.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
  ca.commandBufferCount = 1;
  HEADWAY_VK(vkAllocateCommandBuffers(device(), &ca, &cmd), "vkAllocateCommandBuffers");
  VkFenceCreateInfo fi{};
  fi.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO;
  HEADWAY_VK(vkCreateFence(device(), &fi, nullptr, &fence), "vkCreateFence");
  return Status();
}

void GpuBackend::Impl::destroy_commands() {
  VkDevice d = ctx->device;
  if (fence != VK_NULL_HANDLE) vkDestroyFence(d, fence, nullptr);
  if (command_pool != VK_NULL_HANDLE) vkDestroyCommandPool(d, command_pool, nullptr);
  fence = VK_NULL_HANDLE;
  command_pool = VK_NULL_HANDLE;
}

Status GpuBackend::Impl::begin() {
  VkCommandBufferBeginInfo b{};
  b.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO;
  b.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
  HEADWAY_VK(vkBeginCommandBuffer(cmd, &b), "vkBeginCommandBuffer");
  return Status();
}

Status GpuBackend::Impl::submit_and_wait() {
  HEADWAY_VK(vkEndCommandBuffer(cmd), "vkEndCommandBuffer");
  VkSubmitInfo si{};
  si.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO;
  si.commandBufferCount = 1;
  si.pCommandBuffers = &cmd;
  {
    std::lock_guard<std::mutex> lock(ctx->queue_mutex);
    HEADWAY_VK(vkQueueSubmit(ctx->queue, 1, &si, fence), "vkQueueSubmit");
  }
  HEADWAY_VK(vkWaitForFences(device(), 1, &fence, VK_TRUE, UINT64_MAX), "vkWaitForFences");
  HEADWAY_VK(vkResetFences(device(), 1, &fence), "vkResetFences");
  return Status();
}

// The attention dispatches over (row tiles, kv heads, splits), in runs of at most
// maxComputeWorkGroupCount[0] tiles, then the merge of the splits' partials where it split.
void GpuBackend::Impl::record_attention(const gpu::PushConstants& pc_in) {
  vkCmdBindPipeline(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, pipeline);
  vkCmdBindDescriptorSets(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, layout, 0, 1, &set, 0, nullptr);
  const uint32_t rows_total = pc_in.t_q * pc_in.group;
  const uint32_t tiles = (rows_total + tiling.rows - 1) / tiling.rows;
  const uint32_t max_x = ctx->max_workgroup_count_x ? ctx->max_workgroup_count_x : 65535;
  // The keys the call's rows see altogether: the first query's lowest, the last one's highest.
  const int64_t shift = int64_t{pc_in.t_kv} - pc_in.t_q;
  const int64_t key_lo = pc_in.window ? std::max<int64_t>(0, shift - pc_in.window + 1) : 0;
  const int64_t key_hi = pc_in.causal ? std::min<int64_t>(pc_in.t_kv - 1, pc_in.t_q - 1 + shift) : pc_in.t_kv - 1;
  const gpu::Split split =
      gpu::choose_split(key_lo, key_hi, rows_total, n_kv, tiling, max_splits, ctx->split_kv_min_keys);
  for (uint32_t base = 0; base < tiles; base += max_x) {
    gpu::PushConstants pc = pc_in;
    pc.row_tile_base = base;
    pc.n_splits = split.n_splits;
    pc.kv_chunk = split.chunk;
    pc.kv_split_lo = split.key_lo;
    vkCmdPushConstants(cmd, layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, sizeof(pc), &pc);
    vkCmdDispatch(cmd, tiles - base < max_x ? tiles - base : max_x, n_kv, split.n_splits);
  }
  if (split.n_splits > 1) {  // tiles ≤ kSplitMaxRows here: one dispatch above
    barrier(cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_ACCESS_SHADER_WRITE_BIT, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
            VK_ACCESS_SHADER_READ_BIT);
    vkCmdBindPipeline(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, merge_pipeline);
    vkCmdBindDescriptorSets(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, merge_layout, 0, 1, &merge_set, 0, nullptr);
    const gpu::MergeConstants mc{pc_in.t_q, pc_in.n_heads, pc_in.group, split.n_splits};
    vkCmdPushConstants(cmd, merge_layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, sizeof(mc), &mc);
    vkCmdDispatch(cmd, rows_total, n_kv, 1);
  }
}

Status GpuBackend::Impl::run(const float* q_in, size_t q_stride, float* o_out, size_t o_stride, const float* sinks_in,
                             gpu::PushConstants pc) {
  const size_t row = size_t{q_width} * sizeof(float);
  uint8_t* q_dst = mapped ? q.mapped : staging.mapped + stage_q;
  for (uint32_t t = 0; t < pc.t_q; ++t) std::memcpy(q_dst + t * row, q_in + t * q_stride, row);
  const size_t sink_bytes = size_t{pc.n_heads} * sizeof(float);
  pc.has_sinks = sinks_in != nullptr ? 1u : 0u;
  if (sinks_in != nullptr && mapped) std::memcpy(sinks.mapped, sinks_in, sink_bytes);

  HEADWAY_RETURN_IF_ERROR(begin());
  if (!mapped) {
    record_pending_copies();
    if (sinks_in != nullptr) vkCmdUpdateBuffer(cmd, sinks.buffer, 0, sink_bytes, sinks_in);
    VkBufferCopy qc{stage_q, 0, VkDeviceSize{pc.t_q} * row};
    vkCmdCopyBuffer(cmd, staging.buffer, q.buffer, 1, &qc);
    barrier(cmd, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_WRITE_BIT, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
            VK_ACCESS_SHADER_READ_BIT);
  }
  record_attention(pc);
  if (!mapped) {
    barrier(cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_ACCESS_SHADER_WRITE_BIT, VK_PIPELINE_STAGE_TRANSFER_BIT,
            VK_ACCESS_TRANSFER_READ_BIT);
    VkBufferCopy oc{0, stage_o, VkDeviceSize{pc.t_q} * row};
    vkCmdCopyBuffer(cmd, o.buffer, staging.buffer, 1, &oc);
    barrier(cmd, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_WRITE_BIT, VK_PIPELINE_STAGE_HOST_BIT,
            VK_ACCESS_HOST_READ_BIT);
  } else {
    barrier(cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_ACCESS_SHADER_WRITE_BIT, VK_PIPELINE_STAGE_HOST_BIT,
            VK_ACCESS_HOST_READ_BIT);
  }
  HEADWAY_RETURN_IF_ERROR(submit_and_wait());

  const uint8_t* o_src = mapped ? o.mapped : staging.mapped + stage_o;
  for (uint32_t t = 0; t < pc.t_q; ++t) std::memcpy(o_out + t * o_stride, o_src + t * row, row);
  return Status();
}

}  // namespace headway
