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

// How K and V sit in device memory; indexes the shader variants (attention_{f32,f16,bf16,q8_0,
// q4_0}.spv). The values are DType's.
enum class Storage : uint8_t { kF32 = 0, kF16, kBF16, kQ8_0, kQ4_0 };
inline constexpr uint32_t kStorageCount = 5;
inline const char* storage_name(Storage s) { return dtype_name(static_cast<DType>(s)); }
// Bytes of a K or V row of n values: n values, or ceil(n / 32) blocks (dtype_row_bytes).
inline uint64_t storage_row_bytes(Storage s, uint32_t n) { return dtype_row_bytes(static_cast<DType>(s), n); }
// The f16 and bf16 variants declare StorageBuffer16BitAccess; the block formats read uint words.
constexpr bool storage_needs_16bit(Storage s) { return s == Storage::kF16 || s == Storage::kBF16; }
static_assert(static_cast<int>(Storage::kF32) == static_cast<int>(DType::kF32) &&
              static_cast<int>(Storage::kF16) == static_cast<int>(DType::kF16) &&
              static_cast<int>(Storage::kBF16) == static_cast<int>(DType::kBF16) &&
              static_cast<int>(Storage::kQ8_0) == static_cast<int>(DType::kQ8_0) &&
              static_cast<int>(Storage::kQ4_0) == static_cast<int>(DType::kQ4_0));
// K/V of dtype t as the device keeps them: as they are where the device reads them (f32 and the
// block formats always, f16 and bf16 with 16-bit storage), else widened to f32 (rounded to t
// first, so the results match).
constexpr Storage storage_for(DType t, bool storage_16bit) {
  const Storage s = static_cast<Storage>(t);
  return storage_needs_16bit(s) && !storage_16bit ? Storage::kF32 : s;
}

// SPIR-V of the variants, embedded at build time (embed_spirv.cmake).
extern const uint32_t kSpirv_attention_f32[];
extern const size_t kSpirv_attention_f32_words;
extern const uint32_t kSpirv_attention_f16[];
extern const size_t kSpirv_attention_f16_words;
extern const uint32_t kSpirv_attention_bf16[];
extern const size_t kSpirv_attention_bf16_words;
extern const uint32_t kSpirv_attention_q8_0[];
extern const size_t kSpirv_attention_q8_0_words;
extern const uint32_t kSpirv_attention_q4_0[];
extern const size_t kSpirv_attention_q4_0_words;
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
