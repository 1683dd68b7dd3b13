// GpuBackend's pipelines: the descriptor set and pipeline layouts, one descriptor set each for
// attention and the split-KV merge, and the two compute pipelines specialized for the plan's
// head_dim and tiling (shader modules: the context's, one per K/V storage).
#include "runtime/gpu/gpu_backend_impl.hpp"
#include "runtime/gpu/vk_status.hpp"

namespace headway {

// Attention binds Q, K, V, O, partials, sinks (storage, 0..5), the call's values (uniform, 6),
// the ALiBi slopes and the general mask (storage, 7, 8) and pushes its row_tile_base; the merge
// binds partials, O (storage, 0, 1) and the call's values (uniform, 2).
Status GpuBackend::Impl::create_layouts() {
  VkDescriptorSetLayoutBinding bindings[9]{};
  for (uint32_t i = 0; i < 9; ++i) {
    bindings[i].binding = i;
    bindings[i].descriptorType = i == 6 ? VK_DESCRIPTOR_TYPE_UNIFORM_BUFFER : VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
    bindings[i].descriptorCount = 1;
    bindings[i].stageFlags = VK_SHADER_STAGE_COMPUTE_BIT;
  }
  VkDescriptorSetLayoutCreateInfo sl{};
  sl.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO;
  sl.bindingCount = 9;
  sl.pBindings = bindings;
  HEADWAY_VK(vkCreateDescriptorSetLayout(device(), &sl, nullptr, &set_layout), "vkCreateDescriptorSetLayout");
  VkDescriptorSetLayoutBinding merge_bindings[3] = {bindings[0], bindings[1], bindings[6]};
  merge_bindings[2].binding = 2;
  sl.bindingCount = 3;
  sl.pBindings = merge_bindings;
  HEADWAY_VK(vkCreateDescriptorSetLayout(device(), &sl, nullptr, &merge_set_layout), "vkCreateDescriptorSetLayout");
  VkPushConstantRange range{};
  range.stageFlags = VK_SHADER_STAGE_COMPUTE_BIT;
  range.size = sizeof(gpu::DispatchConstants);
  VkPipelineLayoutCreateInfo pl{};
  pl.sType = VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO;
  pl.setLayoutCount = 1;
  pl.pSetLayouts = &set_layout;
  pl.pushConstantRangeCount = 1;
  pl.pPushConstantRanges = &range;
  HEADWAY_VK(vkCreatePipelineLayout(device(), &pl, nullptr, &layout), "vkCreatePipelineLayout");
  pl.pSetLayouts = &merge_set_layout;
  pl.pushConstantRangeCount = 0;
  pl.pPushConstantRanges = nullptr;
  HEADWAY_VK(vkCreatePipelineLayout(device(), &pl, nullptr, &merge_layout), "vkCreatePipelineLayout");
  return Status();
}

// The buffers are made once, so the sets are written once and never change.
Status GpuBackend::Impl::create_descriptor_sets() {
  VkDescriptorPoolSize ps[2]{};
  ps[0].type = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
  ps[0].descriptorCount = 10;
  ps[1].type = VK_DESCRIPTOR_TYPE_UNIFORM_BUFFER;
  ps[1].descriptorCount = 2;
  VkDescriptorPoolCreateInfo dp{};
  dp.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO;
  dp.maxSets = 2;
  dp.poolSizeCount = 2;
  dp.pPoolSizes = ps;
  HEADWAY_VK(vkCreateDescriptorPool(device(), &dp, nullptr, &descriptor_pool), "vkCreateDescriptorPool");
  VkDescriptorSetAllocateInfo da{};
  da.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO;
  da.descriptorPool = descriptor_pool;
  da.descriptorSetCount = 1;
  da.pSetLayouts = &set_layout;
  HEADWAY_VK(vkAllocateDescriptorSets(device(), &da, &set), "vkAllocateDescriptorSets");
  da.pSetLayouts = &merge_set_layout;
  HEADWAY_VK(vkAllocateDescriptorSets(device(), &da, &merge_set), "vkAllocateDescriptorSets");
  // Attention: Q, K, V, O, partials, sinks, params, ALiBi slopes, mask at bindings 0..8 (MLA: K
  // at 1 and 2); the merge: partials, O, params at 0..2.
  const gpu::Buffer* vb = &v_buffer();
  const gpu::Buffer* bufs[12] = {&q, &k, vb, &o, &partials, &sinks, &params, &alibi, &mask, &partials, &o, &params};
  VkDescriptorBufferInfo bi[12]{};
  VkWriteDescriptorSet writes[12]{};
  for (uint32_t i = 0; i < 12; ++i) {
    const bool uniform = i == 6 || i == 11;
    bi[i].buffer = bufs[i]->buffer;
    bi[i].range = VK_WHOLE_SIZE;
    writes[i].sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET;
    writes[i].dstSet = i < 9 ? set : merge_set;
    writes[i].dstBinding = i < 9 ? i : i - 9;
    writes[i].descriptorCount = 1;
    writes[i].descriptorType = uniform ? VK_DESCRIPTOR_TYPE_UNIFORM_BUFFER : VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
    writes[i].pBufferInfo = &bi[i];
  }
  vkUpdateDescriptorSets(device(), 12, writes, 0, nullptr);
  return Status();
}

Status GpuBackend::Impl::create_pipelines() {
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
  return Status();
}

void GpuBackend::Impl::destroy_pipelines() {
  VkDevice d = ctx->device;
  if (pipeline != VK_NULL_HANDLE) vkDestroyPipeline(d, pipeline, nullptr);
  if (layout != VK_NULL_HANDLE) vkDestroyPipelineLayout(d, layout, nullptr);
  if (merge_pipeline != VK_NULL_HANDLE) vkDestroyPipeline(d, merge_pipeline, nullptr);
  if (merge_layout != VK_NULL_HANDLE) vkDestroyPipelineLayout(d, merge_layout, nullptr);
  if (merge_set_layout != VK_NULL_HANDLE) vkDestroyDescriptorSetLayout(d, merge_set_layout, nullptr);
  if (descriptor_pool != VK_NULL_HANDLE) vkDestroyDescriptorPool(d, descriptor_pool, nullptr);
  if (set_layout != VK_NULL_HANDLE) vkDestroyDescriptorSetLayout(d, set_layout, nullptr);
  pipeline = VK_NULL_HANDLE;
  layout = VK_NULL_HANDLE;
  merge_pipeline = VK_NULL_HANDLE;
  merge_layout = VK_NULL_HANDLE;
  merge_set_layout = VK_NULL_HANDLE;
  descriptor_pool = VK_NULL_HANDLE;
  set_layout = VK_NULL_HANDLE;
}

}  // namespace headway
