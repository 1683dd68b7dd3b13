// GpuBackend: one layer's K/V, Q and O on a Vulkan device and the attention pipeline for its
// plan. create() allocates and builds everything; append() converts rows on the host and writes
// them to mapped device memory (unified memory) or to a staging buffer whose rows are copied
// with the next command buffer; attend() records copies, the dispatches and the read-back into
// one reused command buffer, submits it and waits on one fence.
//
// Device buffers:
//   K, V     [n_kv_heads, cache_rows, head_dim] in the storage dtype (row = position mod cache_rows)
//   Q, O     [max_tokens, n_heads, head_dim] f32
//   partials [n_kv_heads, max_splits, rows ≤ kSplitMaxRows, head_dim + 2] f32 (split-KV; ≤ 16 MiB)
//   staging  (unless mapped) [K rows: n_kv_heads, stage_tokens, head_dim][V rows: same][Q][O],
//            stage_tokens = min(cache_rows, max(max_tokens, 1024))
#include <algorithm>
#include <cmath>
#include <cstring>
#include <new>

#include "headway/backend.hpp"
#include "runtime/attention_run.hpp"
#include "runtime/dtype_convert.hpp"
#include "runtime/format.hpp"
#include "runtime/gpu/gpu_internal.hpp"
#include "runtime/gpu/vk_status.hpp"
#include "runtime/rope.hpp"

namespace headway {
namespace {

// Mirrors the shader's push-constant block (shaders/attention.comp).
struct PushConstants {
  uint32_t t_q;
  uint32_t t_kv;
  uint32_t n_heads;
  uint32_t group;
  uint32_t kv_head_stride;
  uint32_t kv_first_row;
  uint32_t kv_ring_rows;
  uint32_t row_tile_base;
  float scale;
  float softcap;
  uint32_t causal;
  uint32_t window;
  uint32_t kv_chunk;
  uint32_t n_splits;
  uint32_t kv_split_lo;
};
static_assert(sizeof(PushConstants) == 60, "push constants must match the shader's block");

// Mirrors shaders/attention_merge.comp's block.
struct MergeConstants {
  uint32_t t_q;
  uint32_t n_heads;
  uint32_t group;
  uint32_t n_splits;
};

constexpr VkDeviceSize kPartialsBudget = VkDeviceSize{16} << 20;
constexpr uint32_t kStageTokens = 1024;

constexpr VkDeviceSize align64(VkDeviceSize n) { return (n + 63) / 64 * 64; }

void decode_row(const void* src, DType t, uint32_t n, float* out) {
  switch (t) {
    case DType::kF32: std::memcpy(out, src, n * sizeof(float)); break;
    case DType::kF16: f16_to_f32(static_cast<const uint16_t*>(src), out, n); break;
    case DType::kBF16: bf16_to_f32(static_cast<const uint16_t*>(src), out, n); break;
  }
}

// x rounded to the plan's dtype (what the CPU cache stores), written in the device's storage.
void encode_row(const float* x, uint32_t n, DType plan_dtype, gpu::Storage storage, uint8_t* dst) {
  uint16_t* d16 = reinterpret_cast<uint16_t*>(dst);
  float* d32 = reinterpret_cast<float*>(dst);
  switch (storage) {
    case gpu::Storage::kF16: f32_to_f16(x, d16, n); return;
    case gpu::Storage::kBF16: f32_to_bf16(x, d16, n); return;
    case gpu::Storage::kF32:
      if (plan_dtype == DType::kF16) {
        for (uint32_t i = 0; i < n; ++i) d32[i] = f16_bits_to_f32(f32_to_f16_bits(x[i]));
      } else if (plan_dtype == DType::kBF16) {
        for (uint32_t i = 0; i < n; ++i) d32[i] = bf16_bits_to_f32(f32_to_bf16_bits(x[i]));
      } else {
        std::memcpy(d32, x, n * sizeof(float));
      }
      return;
  }
}

}  // namespace

struct GpuBackend::Impl {
  GpuContext::Impl* ctx = nullptr;
  const GpuDeviceInfo* info = nullptr;
  Plan plan{};
  gpu::Tiling tiling{};
  gpu::Storage storage = gpu::Storage::kF32;
  bool mapped = false;  // K/V/Q/O are host-visible device memory: no staging, no copies
  uint32_t head_dim = 0;
  uint32_t n_kv = 0;
  uint32_t q_width = 0;
  VkDeviceSize row_bytes = 0;  // one K or V row in storage

  gpu::Buffer k, v, q, o, staging, partials;
  uint32_t max_splits = 0;  // what `partials` holds; < 2: calls never split
  VkDeviceSize stage_k = 0, stage_v = 0, stage_q = 0, stage_o = 0;
  uint32_t stage_tokens = 0;

  VkDescriptorSetLayout set_layout = VK_NULL_HANDLE;
  VkDescriptorPool descriptor_pool = VK_NULL_HANDLE;
  VkDescriptorSet set = VK_NULL_HANDLE;
  VkPipelineLayout layout = VK_NULL_HANDLE;
  VkPipeline pipeline = VK_NULL_HANDLE;
  VkDescriptorSetLayout merge_set_layout = VK_NULL_HANDLE;
  VkDescriptorSet merge_set = VK_NULL_HANDLE;
  VkPipelineLayout merge_layout = VK_NULL_HANDLE;
  VkPipeline merge_pipeline = VK_NULL_HANDLE;
  VkCommandPool command_pool = VK_NULL_HANDLE;
  VkCommandBuffer cmd = VK_NULL_HANDLE;
  VkFence fence = VK_NULL_HANDLE;
  VkBufferCopy* k_regions = nullptr;  // 2 · n_kv_heads each: a ring run may wrap once
  VkBufferCopy* v_regions = nullptr;

  uint32_t size = 0;         // tokens appended
  uint32_t pending_pos = 0;  // staging holds positions pending_pos .. + pending_n − 1, not yet copied
  uint32_t pending_n = 0;
  float row[kMaxHeadDim];    // one row widened to f32 (RoPE, rounding)
  char kernel[64] = {};
  char description[400] = {};

  VkDevice device() const { return ctx->device; }
  Status build(const Plan& p);
  void destroy();
  uint8_t* kv_destination(bool is_k, uint32_t g, uint32_t pos);
  Status write_rows(const void* k, const void* v, size_t token_stride, DType src, uint32_t n, uint32_t pos0,
                    bool rope);
  void record_pending_copies();
  Status begin();
  Status submit_and_wait();
  Status flush();
  Status run(const float* q_in, size_t q_stride, float* o_out, size_t o_stride, const PushConstants& pc);
};

void GpuBackend::Impl::destroy() {
  if (ctx == nullptr || ctx->device == VK_NULL_HANDLE) return;
  VkDevice d = ctx->device;
  if (fence != VK_NULL_HANDLE) vkDestroyFence(d, fence, nullptr);
  if (command_pool != VK_NULL_HANDLE) vkDestroyCommandPool(d, command_pool, nullptr);
  if (pipeline != VK_NULL_HANDLE) vkDestroyPipeline(d, pipeline, nullptr);
  if (layout != VK_NULL_HANDLE) vkDestroyPipelineLayout(d, layout, nullptr);
  if (merge_pipeline != VK_NULL_HANDLE) vkDestroyPipeline(d, merge_pipeline, nullptr);
  if (merge_layout != VK_NULL_HANDLE) vkDestroyPipelineLayout(d, merge_layout, nullptr);
  if (merge_set_layout != VK_NULL_HANDLE) vkDestroyDescriptorSetLayout(d, merge_set_layout, nullptr);
  if (descriptor_pool != VK_NULL_HANDLE) vkDestroyDescriptorPool(d, descriptor_pool, nullptr);
  if (set_layout != VK_NULL_HANDLE) vkDestroyDescriptorSetLayout(d, set_layout, nullptr);
  ctx->destroy_buffer(&k);
  ctx->destroy_buffer(&v);
  ctx->destroy_buffer(&q);
  ctx->destroy_buffer(&o);
  ctx->destroy_buffer(&staging);
  ctx->destroy_buffer(&partials);
  delete[] k_regions;
  delete[] v_regions;
  k_regions = v_regions = nullptr;
  fence = VK_NULL_HANDLE;
  command_pool = VK_NULL_HANDLE;
  pipeline = VK_NULL_HANDLE;
  layout = VK_NULL_HANDLE;
  merge_pipeline = VK_NULL_HANDLE;
  merge_layout = VK_NULL_HANDLE;
  merge_set_layout = VK_NULL_HANDLE;
  descriptor_pool = VK_NULL_HANDLE;
  set_layout = VK_NULL_HANDLE;
}

Status GpuBackend::Impl::build(const Plan& p) {
  plan = p;
  head_dim = p.head_dim;
  n_kv = p.config.kv_heads();
  q_width = p.q_width;
  const DType dt = p.config.kv_dtype;
  storage = dt == DType::kF32 ? gpu::Storage::kF32
            : !info->storage_16bit ? gpu::Storage::kF32
            : dt == DType::kF16 ? gpu::Storage::kF16
                                : gpu::Storage::kBF16;
  mapped = info->host_mapped;
  row_bytes = VkDeviceSize{head_dim} * gpu::storage_bytes(storage);

  Result<gpu::Tiling> t = gpu::choose_tiling(head_dim, p.max_tokens * p.group_size, ctx->limits);
  if (!t.ok()) return t.status();
  tiling = t.value();

  const VkDeviceSize kv_bytes = VkDeviceSize{n_kv} * p.cache_rows * row_bytes;
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

  const gpu::MemoryUse use = mapped ? gpu::MemoryUse::kDeviceMapped : gpu::MemoryUse::kDevice;
  const VkBufferUsageFlags in = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT;
  HEADWAY_RETURN_IF_ERROR(ctx->create_buffer(kv_bytes, in, use, "K", &k));
  HEADWAY_RETURN_IF_ERROR(ctx->create_buffer(kv_bytes, in, use, "V", &v));
  HEADWAY_RETURN_IF_ERROR(ctx->create_buffer(qo_bytes, in, use, "Q", &q));
  HEADWAY_RETURN_IF_ERROR(ctx->create_buffer(
      qo_bytes, VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT, use, "O", &o));
  if (!mapped) {
    // Rows staged before a copy: at least kStageTokens (a dense call's keys, a long append would
    // otherwise flush every max_tokens rows), at most the ring (a staged run must not overlap itself).
    stage_tokens = p.max_tokens > kStageTokens ? p.max_tokens : kStageTokens;
    if (stage_tokens > p.cache_rows) stage_tokens = p.cache_rows;
    const VkDeviceSize kv_stage = align64(VkDeviceSize{n_kv} * stage_tokens * row_bytes);
    stage_k = 0;
    stage_v = kv_stage;
    stage_q = 2 * kv_stage;
    stage_o = stage_q + align64(qo_bytes);
    HEADWAY_RETURN_IF_ERROR(ctx->create_buffer(stage_o + qo_bytes,
                                               VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT,
                                               gpu::MemoryUse::kStaging, "staging", &staging));
    k_regions = new (std::nothrow) VkBufferCopy[2 * n_kv];
    v_regions = new (std::nothrow) VkBufferCopy[2 * n_kv];
    if (k_regions == nullptr || v_regions == nullptr) {
      return Status::error(Code::kInternal, "gpu: cannot allocate %u copy regions", 4 * n_kv);
    }
  }

  // Split-KV partials: as many splits as 16 MiB (and the longest context) allow; a 256-byte
  // stand-in keeps binding 4 valid where none fit.
  const uint32_t split_rows = p.max_tokens * p.group_size < gpu::kSplitMaxRows ? p.max_tokens * p.group_size
                                                                                 : gpu::kSplitMaxRows;
  const VkDeviceSize per_split = VkDeviceSize{n_kv} * split_rows * (head_dim + 2) * sizeof(float);
  VkDeviceSize splits = kPartialsBudget / per_split;
  const uint32_t min_keys = ctx->split_kv_min_keys;
  if (min_keys == 0) splits = 0;
  else if (splits > p.cache_rows / min_keys) splits = p.cache_rows / min_keys;
  if (splits > gpu::kSplitMaxSplits) splits = gpu::kSplitMaxSplits;
  if (splits * per_split > info->max_storage_buffer_bytes) splits = info->max_storage_buffer_bytes / per_split;
  max_splits = splits >= 2 ? static_cast<uint32_t>(splits) : 0;
  HEADWAY_RETURN_IF_ERROR(ctx->create_buffer(max_splits ? max_splits * per_split : 256,
                                             VK_BUFFER_USAGE_STORAGE_BUFFER_BIT, gpu::MemoryUse::kDevice,
                                             "split-KV partials", &partials));

  VkDescriptorSetLayoutBinding bindings[5]{};
  for (uint32_t i = 0; i < 5; ++i) {
    bindings[i].binding = i;
    bindings[i].descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
    bindings[i].descriptorCount = 1;
    bindings[i].stageFlags = VK_SHADER_STAGE_COMPUTE_BIT;
  }
  VkDescriptorSetLayoutCreateInfo sl{};
  sl.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO;
  sl.bindingCount = 5;
  sl.pBindings = bindings;
  HEADWAY_VK(vkCreateDescriptorSetLayout(device(), &sl, nullptr, &set_layout), "vkCreateDescriptorSetLayout");
  sl.bindingCount = 2;  // the merge: partials, O
  HEADWAY_VK(vkCreateDescriptorSetLayout(device(), &sl, nullptr, &merge_set_layout), "vkCreateDescriptorSetLayout");
  VkPushConstantRange range{};
  range.stageFlags = VK_SHADER_STAGE_COMPUTE_BIT;
  range.size = sizeof(PushConstants);
  VkPipelineLayoutCreateInfo pl{};
  pl.sType = VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO;
  pl.setLayoutCount = 1;
  pl.pSetLayouts = &set_layout;
  pl.pushConstantRangeCount = 1;
  pl.pPushConstantRanges = &range;
  HEADWAY_VK(vkCreatePipelineLayout(device(), &pl, nullptr, &layout), "vkCreatePipelineLayout");
  VkPushConstantRange merge_range = range;
  merge_range.size = sizeof(MergeConstants);
  pl.pSetLayouts = &merge_set_layout;
  pl.pPushConstantRanges = &merge_range;
  HEADWAY_VK(vkCreatePipelineLayout(device(), &pl, nullptr, &merge_layout), "vkCreatePipelineLayout");
  VkDescriptorPoolSize ps{};
  ps.type = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
  ps.descriptorCount = 7;
  VkDescriptorPoolCreateInfo dp{};
  dp.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO;
  dp.maxSets = 2;
  dp.poolSizeCount = 1;
  dp.pPoolSizes = &ps;
  HEADWAY_VK(vkCreateDescriptorPool(device(), &dp, nullptr, &descriptor_pool), "vkCreateDescriptorPool");
  VkDescriptorSetAllocateInfo da{};
  da.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO;
  da.descriptorPool = descriptor_pool;
  da.descriptorSetCount = 1;
  da.pSetLayouts = &set_layout;
  HEADWAY_VK(vkAllocateDescriptorSets(device(), &da, &set), "vkAllocateDescriptorSets");
  da.pSetLayouts = &merge_set_layout;
  HEADWAY_VK(vkAllocateDescriptorSets(device(), &da, &merge_set), "vkAllocateDescriptorSets");
  // Attention: Q, K, V, O, partials at bindings 0..4; the merge: partials, O at 0, 1.
  const gpu::Buffer* bufs[7] = {&q, &k, &v, &o, &partials, &partials, &o};
  VkDescriptorBufferInfo bi[7]{};
  VkWriteDescriptorSet writes[7]{};
  for (uint32_t i = 0; i < 7; ++i) {
    bi[i].buffer = bufs[i]->buffer;
    bi[i].range = VK_WHOLE_SIZE;
    writes[i].sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET;
    writes[i].dstSet = i < 5 ? set : merge_set;
    writes[i].dstBinding = i < 5 ? i : i - 5;
    writes[i].descriptorCount = 1;
    writes[i].descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
    writes[i].pBufferInfo = &bi[i];
  }
  vkUpdateDescriptorSets(device(), 7, writes, 0, nullptr);

  // Specialization: ids 0..5 of the shader (local size, HEAD_DIM, ROWS, TPR, KV_TILE, DPT).
  const uint32_t spec[6] = {tiling.threads, head_dim, tiling.rows, tiling.tpr, tiling.kv_tile, tiling.dpt};
  VkSpecializationMapEntry entries[6];
  for (uint32_t i = 0; i < 6; ++i) entries[i] = VkSpecializationMapEntry{i, i * 4u, 4u};
  VkSpecializationInfo si{};
  si.mapEntryCount = 6;
  si.pMapEntries = entries;
  si.dataSize = sizeof(spec);
  si.pData = spec;
  VkComputePipelineCreateInfo ci{};
  ci.sType = VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO;
  ci.stage.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO;
  ci.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
  ci.stage.module = ctx->modules[static_cast<uint32_t>(storage)];
  ci.stage.pName = "main";
  ci.stage.pSpecializationInfo = &si;
  ci.layout = layout;
  HEADWAY_VK(vkCreateComputePipelines(device(), ctx->pipeline_cache, 1, &ci, nullptr, &pipeline),
             "vkCreateComputePipelines");
  // The merge: threads over head_dim (at most 64, a power of two).
  uint32_t merge_threads = 1;
  while (merge_threads < head_dim && merge_threads < 64) merge_threads *= 2;
  const uint32_t merge_spec[2] = {merge_threads, head_dim};
  si.mapEntryCount = 2;
  si.dataSize = sizeof(merge_spec);
  si.pData = merge_spec;
  ci.stage.module = ctx->merge_module;
  ci.layout = merge_layout;
  HEADWAY_VK(vkCreateComputePipelines(device(), ctx->pipeline_cache, 1, &ci, nullptr, &merge_pipeline),
             "vkCreateComputePipelines");

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

  format_to(kernel, sizeof(kernel), "attn_%s_%s_r%ut%uk%u", gpu::storage_name(storage), headway::kernel_name(p.kernel),
            tiling.rows, tiling.tpr, tiling.kv_tile);
  format_to(description, sizeof(description), "gpu: %s (%s); kernel %s, %u threads, K/V %s%s, %s, split-KV up to %u",
            info->name, info->type, kernel, tiling.threads, gpu::storage_name(storage),
            storage == gpu::Storage::kF32 && dt != DType::kF32 ? " (widened: no 16-bit storage)" : "",
            mapped ? "host-mapped" : "staged", max_splits);
  return Status();
}

uint8_t* GpuBackend::Impl::kv_destination(bool is_k, uint32_t g, uint32_t pos) {
  if (mapped) {
    const uint32_t r = pos % plan.cache_rows;
    return (is_k ? k : v).mapped + (VkDeviceSize{g} * plan.cache_rows + r) * row_bytes;
  }
  const uint32_t slot = pos - pending_pos;
  return staging.mapped + (is_k ? stage_k : stage_v) + (VkDeviceSize{g} * stage_tokens + slot) * row_bytes;
}

// Rows of positions pos0 .. pos0 + n − 1; k and v are [n, n_kv_heads, head_dim] in `src`, token t
// at t · token_stride elements. rope: RoPE K at its position (cache use).
Status GpuBackend::Impl::write_rows(const void* k_in, const void* v_in, size_t token_stride, DType src, uint32_t n,
                                    uint32_t pos0, bool rope) {
  const size_t es = dtype_bytes(src);
  const DType dt = plan.config.kv_dtype;
  for (uint32_t t = 0; t < n; ++t) {
    const uint32_t pos = pos0 + t;
    if (!mapped) {
      if (pending_n == stage_tokens) HEADWAY_RETURN_IF_ERROR(flush());
      if (pending_n == 0) pending_pos = pos;
    }
    const uint8_t* kt = static_cast<const uint8_t*>(k_in) + t * token_stride * es;
    const uint8_t* vt = static_cast<const uint8_t*>(v_in) + t * token_stride * es;
    for (uint32_t g = 0; g < n_kv; ++g) {
      decode_row(kt + size_t{g} * head_dim * es, src, head_dim, row);
      if (rope) apply_rope(row, 1, head_dim, 1, head_dim, pos, plan.config.rope);
      encode_row(row, head_dim, dt, storage, kv_destination(true, g, pos));
      decode_row(vt + size_t{g} * head_dim * es, src, head_dim, row);
      encode_row(row, head_dim, dt, storage, kv_destination(false, g, pos));
    }
    if (!mapped) ++pending_n;
  }
  return Status();
}

// Copies the staged rows to their ring rows: per kv head one run, two where the ring wraps.
void GpuBackend::Impl::record_pending_copies() {
  if (mapped || pending_n == 0) return;
  const uint32_t rows = plan.cache_rows;
  const uint32_t r0 = pending_pos % rows;
  const uint32_t first = pending_n < rows - r0 ? pending_n : rows - r0;
  uint32_t n = 0;
  for (uint32_t g = 0; g < n_kv; ++g) {
    const VkDeviceSize src = VkDeviceSize{g} * stage_tokens * row_bytes;
    const VkDeviceSize dst = VkDeviceSize{g} * rows * row_bytes;
    k_regions[n] = VkBufferCopy{stage_k + src, dst + r0 * row_bytes, first * row_bytes};
    v_regions[n] = VkBufferCopy{stage_v + src, dst + r0 * row_bytes, first * row_bytes};
    ++n;
    if (first < pending_n) {
      k_regions[n] = VkBufferCopy{stage_k + src + first * row_bytes, dst, (pending_n - first) * row_bytes};
      v_regions[n] = VkBufferCopy{stage_v + src + first * row_bytes, dst, (pending_n - first) * row_bytes};
      ++n;
    }
  }
  vkCmdCopyBuffer(cmd, staging.buffer, k.buffer, n, k_regions);
  vkCmdCopyBuffer(cmd, staging.buffer, v.buffer, n, v_regions);
  pending_n = 0;
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

Status GpuBackend::Impl::flush() {
  if (mapped || pending_n == 0) return Status();
  HEADWAY_RETURN_IF_ERROR(begin());
  record_pending_copies();
  return submit_and_wait();
}

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

Status GpuBackend::Impl::run(const float* q_in, size_t q_stride, float* o_out, size_t o_stride,
                             const PushConstants& pc_in) {
  const size_t row = size_t{q_width} * sizeof(float);
  uint8_t* q_dst = mapped ? q.mapped : staging.mapped + stage_q;
  for (uint32_t t = 0; t < pc_in.t_q; ++t) std::memcpy(q_dst + t * row, q_in + t * q_stride, row);

  HEADWAY_RETURN_IF_ERROR(begin());
  if (!mapped) {
    record_pending_copies();
    VkBufferCopy qc{stage_q, 0, VkDeviceSize{pc_in.t_q} * row};
    vkCmdCopyBuffer(cmd, staging.buffer, q.buffer, 1, &qc);
    barrier(cmd, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_WRITE_BIT, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
            VK_ACCESS_SHADER_READ_BIT);
  }
  vkCmdBindPipeline(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, pipeline);
  vkCmdBindDescriptorSets(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, layout, 0, 1, &set, 0, nullptr);
  const uint32_t rows_total = pc_in.t_q * pc_in.group;
  const uint32_t tiles = (rows_total + tiling.rows - 1) / tiling.rows;
  const uint32_t max_x = ctx->max_workgroup_count_x ? ctx->max_workgroup_count_x : 65535;
  // The keys the call's rows see altogether: the first query's lowest, the last one's highest.
  const int64_t shift = int64_t{pc_in.t_kv} - pc_in.t_q;
  const int64_t key_lo = pc_in.window ? std::max<int64_t>(0, shift - pc_in.window + 1) : 0;
  const int64_t key_hi = pc_in.causal ? std::min<int64_t>(pc_in.t_kv - 1, pc_in.t_q - 1 + shift) : pc_in.t_kv - 1;
  const gpu::Split split = gpu::choose_split(key_lo, key_hi, rows_total, n_kv, tiling, max_splits,
                                             ctx->split_kv_min_keys);
  for (uint32_t base = 0; base < tiles; base += max_x) {
    PushConstants pc = pc_in;
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
    const MergeConstants mc{pc_in.t_q, pc_in.n_heads, pc_in.group, split.n_splits};
    vkCmdPushConstants(cmd, merge_layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, sizeof(mc), &mc);
    vkCmdDispatch(cmd, rows_total, n_kv, 1);
  }
  if (!mapped) {
    barrier(cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_ACCESS_SHADER_WRITE_BIT, VK_PIPELINE_STAGE_TRANSFER_BIT,
            VK_ACCESS_TRANSFER_READ_BIT);
    VkBufferCopy oc{0, stage_o, VkDeviceSize{pc_in.t_q} * row};
    vkCmdCopyBuffer(cmd, o.buffer, staging.buffer, 1, &oc);
    barrier(cmd, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_WRITE_BIT, VK_PIPELINE_STAGE_HOST_BIT,
            VK_ACCESS_HOST_READ_BIT);
  } else {
    barrier(cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_ACCESS_SHADER_WRITE_BIT, VK_PIPELINE_STAGE_HOST_BIT,
            VK_ACCESS_HOST_READ_BIT);
  }
  HEADWAY_RETURN_IF_ERROR(submit_and_wait());

  const uint8_t* o_src = mapped ? o.mapped : staging.mapped + stage_o;
  for (uint32_t t = 0; t < pc_in.t_q; ++t) std::memcpy(o_out + t * o_stride, o_src + t * row, row);
  return Status();
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

Status GpuBackend::create(GpuContext* context, const Plan& plan) {
  if (context == nullptr || !context->created()) {
    return Status::error(Code::kFailedPrecondition, "gpu backend: the GpuContext is %s (create it first)",
                         context == nullptr ? "null" : "not created");
  }
  if (plan.overflow || plan.group_size == 0 || plan.head_dim == 0 || plan.head_dim > kMaxHeadDim ||
      plan.max_tokens == 0 || plan.cache_rows == 0) {
    return Status::error(Code::kInvalidArgument,
                         "gpu backend: the plan is not valid (make it with make_plan(), which checks the config)");
  }
  if (plan.config.rope.style != RopeStyle::kNone && plan.config.rope.scaling == RopeScaling::kOther) {
    return Status::error(Code::kUnsupported,
                         "gpu backend: this config's rope_scaling type is not one headway applies (linear, llama3)");
  }
  destroy();
  Impl* x = new (std::nothrow) Impl;
  if (x == nullptr) return Status::error(Code::kInternal, "gpu backend: cannot allocate its state");
  x->ctx = context->impl();
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
uint32_t GpuBackend::size() const { return impl_ ? impl_->size : 0; }

void GpuBackend::reset() {
  if (impl_ == nullptr) return;
  impl_->size = 0;
  impl_->pending_n = 0;
}

Status GpuBackend::append(const float* k, size_t k_token_stride, const float* v, size_t v_token_stride, uint32_t n) {
  if (impl_ == nullptr) return Status::error(Code::kFailedPrecondition, "gpu backend: append before create");
  Impl& x = *impl_;
  if (n == 0) return Status();
  if (k == nullptr || v == nullptr) return Status::error(Code::kInvalidArgument, "gpu backend: append of null k or v");
  const Config& c = x.plan.config;
  const uint32_t kv_width = x.n_kv * x.head_dim;
  if (k_token_stride != v_token_stride || k_token_stride < kv_width) {
    return Status::error(Code::kInvalidArgument,
                         "gpu backend: token strides %zu (k), %zu (v) must be equal and at least kv_width %u",
                         k_token_stride, v_token_stride, kv_width);
  }
  if (n > c.max_seq - x.size) {
    return Status::error(Code::kOutOfRange,
                         "gpu backend: appending %u tokens at position %u goes past the context of %u tokens", n,
                         x.size, c.max_seq);
  }
  if (x.plan.cache_rows < c.max_seq && n > x.plan.max_tokens) {
    return Status::error(Code::kOutOfRange,
                         "gpu backend: appending %u tokens at once is more than the %u the sliding-window ring (%u "
                         "rows) was planned for; append in chunks of at most max_tokens",
                         n, x.plan.max_tokens, x.plan.cache_rows);
  }
  const Status s = x.write_rows(k, v, k_token_stride, DType::kF32, n, x.size, true);
  if (!s.ok()) {  // a failed flush: the device state is unknown, start over
    x.size = 0;
    x.pending_n = 0;
    return s;
  }
  x.size += n;
  return Status();
}

Status GpuBackend::attend(const float* q, size_t q_token_stride, float* o, size_t o_token_stride, uint32_t t_q) {
  if (impl_ == nullptr) return Status::error(Code::kFailedPrecondition, "gpu backend: attend before create");
  Impl& x = *impl_;
  const Config& c = x.plan.config;
  if (t_q == 0 || t_q > x.size) {
    return Status::error(Code::kInvalidArgument,
                         "gpu backend: attend for %u queries, but the cache holds %u tokens: queries are the last "
                         "tokens appended",
                         t_q, x.size);
  }
  if (t_q > x.plan.max_tokens) {
    return Status::error(Code::kOutOfRange, "gpu backend: %u queries are more than the plan's max_tokens %u", t_q,
                         x.plan.max_tokens);
  }
  if (q == nullptr || o == nullptr) return Status::error(Code::kInvalidArgument, "gpu backend: q or o is null");
  if (q_token_stride < x.q_width || o_token_stride < x.q_width) {
    return Status::error(Code::kInvalidArgument,
                         "gpu backend: token strides %zu (q), %zu (o) are below n_heads · head_dim = %u",
                         q_token_stride, o_token_stride, x.q_width);
  }
  PushConstants pc{};
  pc.t_q = t_q;
  pc.t_kv = x.size < x.plan.cache_rows ? x.size : x.plan.cache_rows;
  pc.n_heads = c.n_heads;
  pc.group = x.plan.group_size;
  pc.kv_head_stride = x.plan.cache_rows * x.head_dim;
  pc.kv_ring_rows = x.plan.cache_rows;  // row = position mod cache_rows, as append wrote it
  pc.kv_first_row = (x.size - pc.t_kv) % x.plan.cache_rows;
  pc.scale = c.logit_scale();
  pc.softcap = c.softcap;
  pc.causal = c.causal ? 1u : 0u;
  pc.window = c.window;
  return x.run(q, q_token_stride, o, o_token_stride, pc);
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
  if (kv_dtype != c.kv_dtype) {
    return Status::error(Code::kInvalidArgument,
                         "gpu backend: k and v are %s, the plan stores %s (make the plan with dense_plan(shape, %s))",
                         dtype_name(kv_dtype), dtype_name(c.kv_dtype), dtype_name(kv_dtype));
  }
  simd::AttentionArgs a;
  a.q = q;
  a.k = k;
  a.v = v;
  a.o = o;
  a.q_token_stride = a.o_token_stride = x.q_width;
  a.kv_row_stride = size_t{x.n_kv} * x.head_dim;
  a.kv_head_stride = x.head_dim;
  a.t_q = shape.t_q;
  a.t_kv = shape.t_kv;
  a.n_heads = shape.n_heads;
  a.n_kv_heads = shape.n_kv_heads;
  a.head_dim = shape.head_dim;
  a.scale = params.scale;
  a.softcap = params.softcap;
  a.causal = params.causal;
  a.window = params.window;
  a.kv_type = kv_dtype == DType::kF32 ? simd::KvType::kF32
              : kv_dtype == DType::kF16 ? simd::KvType::kF16
                                        : simd::KvType::kBF16;
  HEADWAY_RETURN_IF_ERROR(validate_attention_args(a));

  x.size = 0;  // the dense K/V replace the cache; it is empty afterwards
  x.pending_n = 0;
  Status s = x.write_rows(k, v, a.kv_row_stride, kv_dtype, shape.t_kv, 0, false);
  if (!s.ok()) return s;
  PushConstants pc{};
  pc.t_q = shape.t_q;
  pc.t_kv = shape.t_kv;
  pc.n_heads = shape.n_heads;
  pc.group = shape.n_heads / shape.n_kv_heads;
  pc.kv_head_stride = x.plan.cache_rows * x.head_dim;
  pc.scale = params.scale != 0.0f ? params.scale : 1.0f / std::sqrt(static_cast<float>(shape.head_dim));
  pc.softcap = params.softcap;
  pc.causal = params.causal ? 1u : 0u;
  pc.window = params.window;
  s = x.run(q, x.q_width, o, x.q_width, pc);
  x.pending_n = 0;
  return s;
}

}  // namespace headway
