// One attention call on the device. Q (and the sink logits, a dense call's ALiBi slopes, and the
// call's values) are written to mapped or staged memory; then
//   mapped  the dispatch sizes go to the indirect buffer and the command buffer recorded once at
//           create is resubmitted: a decode step records nothing (what is left on the host is the
//           driver's submission). Only a call with more row tiles than one dispatch takes
//           (maxComputeWorkGroupCount[0]) is recorded, as the staged path does.
//   staged  the K/V and Q copies, the updates of the sinks, a dense call's slopes and the call's
//           values, the dispatches (and the split-KV merge) and O's read-back are recorded per
//           call into one reused command buffer: the copies differ per call, and a discrete GPU's
//           recording is cheap.
// Either is submitted and waited on with one fence; O is copied to the caller.
#include <algorithm>
#include <atomic>
#include <cstring>
#include <limits>
#include <mutex>

#include "runtime/gpu/gpu_backend_impl.hpp"
#include "runtime/gpu/gpu_recording.hpp"
#include "runtime/gpu/vk_status.hpp"

namespace headway {
namespace {

std::atomic<uint64_t> g_recorded{0};

void barrier(VkCommandBuffer cmd, VkPipelineStageFlags from, VkAccessFlags from_access, VkPipelineStageFlags to,
             VkAccessFlags to_access) {
  VkMemoryBarrier m{};
  m.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER;
  m.srcAccessMask = from_access;
  m.dstAccessMask = to_access;
  vkCmdPipelineBarrier(cmd, from, to, 0, 1, &m, 0, nullptr, 0, nullptr);
}

// Attention's writes (O or the partials) before the merge reads them.
void compute_barrier(VkCommandBuffer cmd) {
  barrier(cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_ACCESS_SHADER_WRITE_BIT, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
          VK_ACCESS_SHADER_READ_BIT);
}

}  // namespace

uint64_t gpu::recorded_command_buffers() { return g_recorded.load(std::memory_order_relaxed); }

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
  if (!mapped) return Status();
  HEADWAY_VK(vkAllocateCommandBuffers(device(), &ca, &recorded), "vkAllocateCommandBuffers");
  return record_resubmitted();
}

void GpuBackend::Impl::destroy_commands() {
  VkDevice d = ctx->device;
  if (fence != VK_NULL_HANDLE) vkDestroyFence(d, fence, nullptr);
  if (command_pool != VK_NULL_HANDLE) vkDestroyCommandPool(d, command_pool, nullptr);
  fence = VK_NULL_HANDLE;
  command_pool = VK_NULL_HANDLE;
  cmd = recorded = VK_NULL_HANDLE;
}

Status GpuBackend::Impl::begin(VkCommandBuffer c, VkCommandBufferUsageFlags flags) {
  g_recorded.fetch_add(1, std::memory_order_relaxed);
  VkCommandBufferBeginInfo b{};
  b.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO;
  b.flags = flags;
  HEADWAY_VK(vkBeginCommandBuffer(c, &b), "vkBeginCommandBuffer");
  return Status();
}

// The mapped path's one recording: attention over the indirect buffer's first (tiles, kv heads,
// splits), the merge over its second ((rows, kv heads, 1), or 0 groups where the call does not
// split), O made visible to the host. Everything else a call changes is in `params`.
Status GpuBackend::Impl::record_resubmitted() {
  HEADWAY_RETURN_IF_ERROR(begin(recorded, 0));
  vkCmdBindPipeline(recorded, VK_PIPELINE_BIND_POINT_COMPUTE, pipeline);
  vkCmdBindDescriptorSets(recorded, VK_PIPELINE_BIND_POINT_COMPUTE, layout, 0, 1, &set, 0, nullptr);
  const gpu::DispatchConstants dc{0};
  vkCmdPushConstants(recorded, layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, sizeof(dc), &dc);
  vkCmdDispatchIndirect(recorded, indirect.buffer, 0);
  compute_barrier(recorded);
  vkCmdBindPipeline(recorded, VK_PIPELINE_BIND_POINT_COMPUTE, merge_pipeline);
  vkCmdBindDescriptorSets(recorded, VK_PIPELINE_BIND_POINT_COMPUTE, merge_layout, 0, 1, &merge_set, 0, nullptr);
  vkCmdDispatchIndirect(recorded, indirect.buffer, sizeof(VkDispatchIndirectCommand));
  barrier(recorded, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_ACCESS_SHADER_WRITE_BIT, VK_PIPELINE_STAGE_HOST_BIT,
          VK_ACCESS_HOST_READ_BIT);
  HEADWAY_VK(vkEndCommandBuffer(recorded), "vkEndCommandBuffer");
  return Status();
}

Status GpuBackend::Impl::submit_and_wait(VkCommandBuffer c) {
  VkSubmitInfo si{};
  si.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO;
  si.commandBufferCount = 1;
  si.pCommandBuffers = &c;
  {
    std::lock_guard<std::mutex> lock(ctx->queue_mutex);
    HEADWAY_VK(vkQueueSubmit(ctx->queue, 1, &si, fence), "vkQueueSubmit");
  }
  HEADWAY_VK(vkWaitForFences(device(), 1, &fence, VK_TRUE, UINT64_MAX), "vkWaitForFences");
  HEADWAY_VK(vkResetFences(device(), 1, &fence), "vkResetFences");
  return Status();
}

// One call recorded into `cmd`: the staged copies and updates, the attention dispatches over
// (row tiles, kv heads, splits) in runs of at most maxComputeWorkGroupCount[0] tiles, the merge
// where it splits (tiles ≤ kSplitMaxRows then: one run), O's read-back.
Status GpuBackend::Impl::record_call(const gpu::CallParams& cp, const float* sinks_in, const float* call_slopes,
                                     uint32_t tiles, uint32_t n_splits) {
  HEADWAY_RETURN_IF_ERROR(begin(cmd, VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT));
  const VkDeviceSize row = VkDeviceSize{q_width} * sizeof(float);
  if (!mapped) {
    record_pending_copies();
    const VkDeviceSize head_bytes = VkDeviceSize{cp.n_heads} * 4;
    if (sinks_in != nullptr) vkCmdUpdateBuffer(cmd, sinks.buffer, 0, head_bytes, sinks_in);
    if (call_slopes != nullptr) vkCmdUpdateBuffer(cmd, alibi.buffer, head_bytes, head_bytes, call_slopes);
    vkCmdUpdateBuffer(cmd, params.buffer, 0, sizeof(cp), &cp);
    VkBufferCopy qc{stage_q, 0, cp.t_q * row};
    vkCmdCopyBuffer(cmd, staging.buffer, q.buffer, 1, &qc);
    if (cp.has_mask != 0) {
      VkBufferCopy mc{stage_mask, 0, VkDeviceSize{cp.t_q} * cp.t_kv * sizeof(float)};
      vkCmdCopyBuffer(cmd, staging.buffer, mask.buffer, 1, &mc);
    }
    barrier(cmd, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_WRITE_BIT, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
            VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_UNIFORM_READ_BIT);
  }
  vkCmdBindPipeline(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, pipeline);
  vkCmdBindDescriptorSets(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, layout, 0, 1, &set, 0, nullptr);
  const uint32_t max_x = ctx->max_workgroup_count_x ? ctx->max_workgroup_count_x : 65535;
  for (uint32_t base = 0; base < tiles; base += max_x) {
    const gpu::DispatchConstants dc{base};
    vkCmdPushConstants(cmd, layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, sizeof(dc), &dc);
    vkCmdDispatch(cmd, tiles - base < max_x ? tiles - base : max_x, n_kv, n_splits);
  }
  if (n_splits > 1) {
    compute_barrier(cmd);
    vkCmdBindPipeline(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, merge_pipeline);
    vkCmdBindDescriptorSets(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, merge_layout, 0, 1, &merge_set, 0, nullptr);
    vkCmdDispatch(cmd, cp.t_q * cp.group, n_kv, 1);
  }
  if (!mapped) {
    barrier(cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_ACCESS_SHADER_WRITE_BIT, VK_PIPELINE_STAGE_TRANSFER_BIT,
            VK_ACCESS_TRANSFER_READ_BIT);
    VkBufferCopy oc{0, stage_o, cp.t_q * row};
    vkCmdCopyBuffer(cmd, o.buffer, staging.buffer, 1, &oc);
    barrier(cmd, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_WRITE_BIT, VK_PIPELINE_STAGE_HOST_BIT,
            VK_ACCESS_HOST_READ_BIT);
  } else {
    barrier(cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_ACCESS_SHADER_WRITE_BIT, VK_PIPELINE_STAGE_HOST_BIT,
            VK_ACCESS_HOST_READ_BIT);
  }
  HEADWAY_VK(vkEndCommandBuffer(cmd), "vkEndCommandBuffer");
  return Status();
}

Status GpuBackend::Impl::run(const float* q_in, size_t q_stride, float* o_out, size_t o_stride, const float* sinks_in,
                             const float* slopes, gpu::CallParams cp, const gpu::MaskRows* mask_in) {
  const size_t row = size_t{q_width} * sizeof(float);
  uint8_t* q_dst = mapped ? q.mapped : staging.mapped + stage_q;
  for (uint32_t t = 0; t < cp.t_q; ++t) std::memcpy(q_dst + t * row, q_in + t * q_stride, row);
  // The mask's rows, t_kv entries apart, as f32: a bool entry is 0 or −inf.
  cp.has_mask = mask_in != nullptr && (mask_in->bools != nullptr || mask_in->additive != nullptr) ? 1u : 0u;
  if (cp.has_mask != 0) {
    float* m_dst = reinterpret_cast<float*>(mapped ? mask.mapped : staging.mapped + stage_mask);
    for (uint32_t t = 0; t < cp.t_q; ++t) {
      const size_t from = t * mask_in->row_stride;
      float* dst = m_dst + size_t{t} * cp.t_kv;
      if (mask_in->additive != nullptr) {
        std::memcpy(dst, mask_in->additive + from, size_t{cp.t_kv} * sizeof(float));
      } else {
        for (uint32_t j = 0; j < cp.t_kv; ++j) {
          dst[j] = mask_in->bools[from + j] != 0 ? 0.0f : -std::numeric_limits<float>::infinity();
        }
      }
    }
  }

  // The keys the call's rows see altogether, in the two spans of the shader: the sink keys up to
  // the last query's highest, and the window keys from the first query's lowest to the last
  // one's highest. Split-KV cuts them in that order (the keys between the spans are no one's).
  const uint32_t rows_total = cp.t_q * cp.group;
  const uint32_t tiles = (rows_total + tiling.rows - 1) / tiling.rows;
  const int64_t shift = int64_t{cp.t_kv} - cp.t_q;
  const int64_t last_position = cp.t_q - 1 + shift;
  const int64_t last = std::max<int64_t>(last_position, int64_t{cp.prefix_keys} - 1);  // its causal bound
  const int64_t sink_hi = cp.causal ? std::min<int64_t>(int64_t{cp.sink_keys} - 1, last) : int64_t{cp.sink_keys} - 1;
  const int64_t sink_count = sink_hi + 1 > 0 ? sink_hi + 1 : 0;
  const int64_t key_lo = cp.window ? std::max<int64_t>(cp.sink_keys, shift - cp.window + 1) : 0;
  const int64_t key_hi = cp.causal             ? std::min<int64_t>(cp.t_kv - 1, last)
                         : cp.window_symmetric ? std::min<int64_t>(cp.t_kv - 1, last_position + cp.window - 1)
                                               : cp.t_kv - 1;
  const int64_t window_count = key_hi >= key_lo ? key_hi - key_lo + 1 : 0;
  const gpu::Split split =
      gpu::choose_split(0, sink_count + window_count - 1, rows_total, n_kv, tiling, max_splits, ctx->split_kv_min_keys);
  cp.n_splits = split.n_splits;
  cp.kv_chunk = split.chunk;
  cp.split_sink_keys = static_cast<uint32_t>(sink_count);
  cp.kv_split_lo = window_count > 0 ? static_cast<uint32_t>(key_lo) : 0;
  cp.has_sinks = sinks_in != nullptr ? 1u : 0u;
  cp.has_alibi = slopes != nullptr ? 1u : 0u;
  const float* call_slopes = slopes != nullptr && slopes != plan_slopes ? slopes : nullptr;
  cp.alibi_base = call_slopes != nullptr ? cp.n_heads : 0;  // a dense call's: the buffer's second half

  const uint32_t max_x = ctx->max_workgroup_count_x ? ctx->max_workgroup_count_x : 65535;
  VkCommandBuffer submitted = recorded;
  if (mapped) {
    if (sinks_in != nullptr) std::memcpy(sinks.mapped, sinks_in, size_t{cp.n_heads} * sizeof(float));
    if (call_slopes != nullptr) {
      std::memcpy(alibi.mapped + size_t{cp.n_heads} * sizeof(float), call_slopes, size_t{cp.n_heads} * sizeof(float));
    }
    std::memcpy(params.mapped, &cp, sizeof(cp));
    const VkDispatchIndirectCommand sizes[2] = {
        {tiles, n_kv, split.n_splits},
        split.n_splits > 1 ? VkDispatchIndirectCommand{rows_total, n_kv, 1} : VkDispatchIndirectCommand{0, 0, 0}};
    std::memcpy(indirect.mapped, sizes, sizeof(sizes));
  }
  if (!mapped || tiles > max_x) {
    HEADWAY_RETURN_IF_ERROR(record_call(cp, sinks_in, call_slopes, tiles, split.n_splits));
    submitted = cmd;
  }
  HEADWAY_RETURN_IF_ERROR(submit_and_wait(submitted));

  const uint8_t* o_src = mapped ? o.mapped : staging.mapped + stage_o;
  for (uint32_t t = 0; t < cp.t_q; ++t) std::memcpy(o_out + t * o_stride, o_src + t * row, row);
  return Status();
}

}  // namespace headway
