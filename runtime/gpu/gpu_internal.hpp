// What the Vulkan backend's files share: the context's Vulkan objects, device buffers and the
// shader variants. Internal to runtime/gpu.
#pragma once

#include <vulkan/vulkan.h>

#include <cstddef>
#include <cstdint>
#include <mutex>

#include "headway/backend.hpp"
#include "runtime/gpu/gpu_tiling.hpp"

namespace headway {
namespace gpu {

// How K and V sit in device memory; indexes the shader variants (attention_{f32,f16,bf16}.spv).
enum class Storage : uint8_t { kF32 = 0, kF16, kBF16 };
inline constexpr uint32_t kStorageCount = 3;
inline const char* storage_name(Storage s) { return s == Storage::kF32 ? "f32" : s == Storage::kF16 ? "f16" : "bf16"; }
inline uint32_t storage_bytes(Storage s) { return s == Storage::kF32 ? 4u : 2u; }
static_assert(static_cast<int>(Storage::kF32) == static_cast<int>(DType::kF32) &&
              static_cast<int>(Storage::kF16) == static_cast<int>(DType::kF16) &&
              static_cast<int>(Storage::kBF16) == static_cast<int>(DType::kBF16));
// K/V of dtype t as the device keeps them: as they are where it has 16-bit storage, else
// widened to f32 (rounded to t first, so the results match).
constexpr Storage storage_for(DType t, bool storage_16bit) {
  return t == DType::kF32 || !storage_16bit ? Storage::kF32 : static_cast<Storage>(t);
}

// SPIR-V of the variants, embedded at build time (embed_spirv.cmake).
extern const uint32_t kSpirv_attention_f32[];
extern const size_t kSpirv_attention_f32_words;
extern const uint32_t kSpirv_attention_f16[];
extern const size_t kSpirv_attention_f16_words;
extern const uint32_t kSpirv_attention_bf16[];
extern const size_t kSpirv_attention_bf16_words;
extern const uint32_t kSpirv_attention_merge[];
extern const size_t kSpirv_attention_merge_words;

// A buffer and its own memory. mapped: the host's view (host-visible memory), else null.
struct Buffer {
  VkBuffer buffer = VK_NULL_HANDLE;
  VkDeviceMemory memory = VK_NULL_HANDLE;
  VkDeviceSize bytes = 0;
  uint8_t* mapped = nullptr;
};

enum class MemoryUse : uint8_t {
  kDevice,        // read and written by shaders and copies only
  kDeviceMapped,  // device-local and host-visible, coherent (unified memory)
  kStaging,       // host-visible, coherent, cached where the device has it (read-back)
};

}  // namespace gpu

struct GpuContext::Impl {
  VkInstance instance = VK_NULL_HANDLE;
  VkPhysicalDevice physical = VK_NULL_HANDLE;
  VkDevice device = VK_NULL_HANDLE;
  VkQueue queue = VK_NULL_HANDLE;
  uint32_t queue_family = 0;
  VkPhysicalDeviceMemoryProperties memory{};
  VkPipelineCache pipeline_cache = VK_NULL_HANDLE;
  VkShaderModule modules[gpu::kStorageCount] = {};  // null where the variant cannot run
  VkShaderModule merge_module = VK_NULL_HANDLE;     // split-KV merge (attention_merge.comp)
  uint32_t split_kv_min_keys = 0;
  gpu::DeviceLimits limits;
  uint32_t max_workgroup_count_x = 0;
  uint32_t max_workgroup_count_y = 0;
  std::mutex queue_mutex;  // vkQueueSubmit needs the queue externally synchronized

  Status create_buffer(VkDeviceSize bytes, VkBufferUsageFlags usage, gpu::MemoryUse use, const char* what,
                       gpu::Buffer* out);
  void destroy_buffer(gpu::Buffer* b);
  void destroy();
};

}  // namespace headway
