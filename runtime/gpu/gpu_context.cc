// GpuContext: the Vulkan instance, the chosen physical device, one compute queue, the shader
// modules and a pipeline cache, shared by every GpuBackend of the process.
#include <cstring>

#include "headway/backend.hpp"
#include "runtime/core/format.hpp"
#include "runtime/gpu/gpu_internal.hpp"
#include "runtime/gpu/vk_status.hpp"

namespace headway {
namespace {

const char* device_type_name(VkPhysicalDeviceType t) {
  switch (t) {
    case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU: return "discrete";
    case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU: return "integrated";
    case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU: return "virtual";
    case VK_PHYSICAL_DEVICE_TYPE_CPU: return "cpu";
    default: return "other";
  }
}

int type_rank(VkPhysicalDeviceType t) {  // lower is preferred
  switch (t) {
    case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU: return 0;
    case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU: return 1;
    case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU: return 2;
    case VK_PHYSICAL_DEVICE_TYPE_CPU: return 3;
    default: return 4;
  }
}

constexpr uint32_t kMaxDevices = 16;

// The first queue family with compute, or UINT32_MAX.
uint32_t compute_family(VkPhysicalDevice d) {
  VkQueueFamilyProperties families[32];
  uint32_t n = 32;
  vkGetPhysicalDeviceQueueFamilyProperties(d, &n, families);
  for (uint32_t i = 0; i < n; ++i) {
    if ((families[i].queueFlags & VK_QUEUE_COMPUTE_BIT) && families[i].queueCount > 0) return i;
  }
  return UINT32_MAX;
}

// Device-local memory the host can map coherently, on a device that shares the host's memory.
bool has_unified_memory(const VkPhysicalDeviceMemoryProperties& m, VkPhysicalDeviceType type) {
  if (type != VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU && type != VK_PHYSICAL_DEVICE_TYPE_CPU) return false;
  const VkMemoryPropertyFlags want =
      VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT | VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
  for (uint32_t i = 0; i < m.memoryTypeCount; ++i) {
    if ((m.memoryTypes[i].propertyFlags & want) == want) return true;
  }
  return false;
}

}  // namespace

bool GpuContext::compiled() { return true; }

GpuContext::~GpuContext() {
  if (impl_ != nullptr) {
    impl_->destroy();
    delete impl_;
  }
}

void GpuContext::Impl::destroy() {
  if (device != VK_NULL_HANDLE) {
    vkDeviceWaitIdle(device);
    for (VkShaderModule& m : modules) {
      if (m != VK_NULL_HANDLE) vkDestroyShaderModule(device, m, nullptr);
      m = VK_NULL_HANDLE;
    }
    if (merge_module != VK_NULL_HANDLE) vkDestroyShaderModule(device, merge_module, nullptr);
    merge_module = VK_NULL_HANDLE;
    if (pipeline_cache != VK_NULL_HANDLE) vkDestroyPipelineCache(device, pipeline_cache, nullptr);
    vkDestroyDevice(device, nullptr);
  }
  if (instance != VK_NULL_HANDLE) vkDestroyInstance(instance, nullptr);
  device = VK_NULL_HANDLE;
  instance = VK_NULL_HANDLE;
}

Status GpuContext::Impl::create_buffer(VkDeviceSize bytes, VkBufferUsageFlags usage, gpu::MemoryUse use,
                                       const char* what, gpu::Buffer* out) {
  VkBufferCreateInfo bi{};
  bi.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO;
  bi.size = bytes;
  bi.usage = usage;
  bi.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
  HEADWAY_VK(vkCreateBuffer(device, &bi, nullptr, &out->buffer), "vkCreateBuffer");
  out->bytes = bytes;
  VkMemoryRequirements req;
  vkGetBufferMemoryRequirements(device, out->buffer, &req);

  VkMemoryPropertyFlags need = 0, prefer = 0;
  switch (use) {
    case gpu::MemoryUse::kDevice: prefer = VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT; break;
    case gpu::MemoryUse::kDeviceMapped:
      need = VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT | VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT |
             VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
      prefer = VK_MEMORY_PROPERTY_HOST_CACHED_BIT;
      break;
    case gpu::MemoryUse::kStaging:
      need = VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
      prefer = VK_MEMORY_PROPERTY_HOST_CACHED_BIT;
      break;
  }
  uint32_t chosen = UINT32_MAX;
  for (int pass = 0; pass < 2 && chosen == UINT32_MAX; ++pass) {
    const VkMemoryPropertyFlags want = pass == 0 ? need | prefer : need;
    for (uint32_t i = 0; i < memory.memoryTypeCount; ++i) {
      if ((req.memoryTypeBits & (1u << i)) && (memory.memoryTypes[i].propertyFlags & want) == want) {
        chosen = i;
        break;
      }
    }
  }
  if (chosen == UINT32_MAX) {
    return Status::error(Code::kUnsupported, "gpu: no memory type for the %s buffer (%llu bytes, flags 0x%x)", what,
                         static_cast<unsigned long long>(bytes), static_cast<unsigned>(need));
  }
  VkMemoryAllocateInfo ai{};
  ai.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO;
  ai.allocationSize = req.size;
  ai.memoryTypeIndex = chosen;
  const VkResult r = vkAllocateMemory(device, &ai, nullptr, &out->memory);
  if (r != VK_SUCCESS) {
    const Status s = gpu::vk_error("vkAllocateMemory", r);
    return Status::error(s.code(), "gpu: %s buffer of %llu bytes: %s", what, static_cast<unsigned long long>(bytes),
                         s.message());
  }
  HEADWAY_VK(vkBindBufferMemory(device, out->buffer, out->memory, 0), "vkBindBufferMemory");
  if (use != gpu::MemoryUse::kDevice) {
    void* p = nullptr;
    HEADWAY_VK(vkMapMemory(device, out->memory, 0, VK_WHOLE_SIZE, 0, &p), "vkMapMemory");
    out->mapped = static_cast<uint8_t*>(p);
  }
  return Status();
}

void GpuContext::Impl::destroy_buffer(gpu::Buffer* b) {
  if (b->mapped != nullptr) vkUnmapMemory(device, b->memory);
  if (b->buffer != VK_NULL_HANDLE) vkDestroyBuffer(device, b->buffer, nullptr);
  if (b->memory != VK_NULL_HANDLE) vkFreeMemory(device, b->memory, nullptr);
  *b = gpu::Buffer{};
}

namespace {

Status no_device(const char* why, const Status& cause) {
  return Status::error(Code::kUnsupported,
                       "no Vulkan device: %s: %s (a GPU driver with Vulkan, or Mesa's lavapipe on the CPU: "
                       "toolchains/install-deps.sh gpu)",
                       why, cause.message());
}

Status create_instance(GpuContext::Impl* x) {
  auto enumerate_version =
      reinterpret_cast<PFN_vkEnumerateInstanceVersion>(vkGetInstanceProcAddr(nullptr, "vkEnumerateInstanceVersion"));
  uint32_t loader = VK_API_VERSION_1_0;
  if (enumerate_version != nullptr) enumerate_version(&loader);
  if (loader < VK_API_VERSION_1_1) {
    return Status::error(Code::kUnsupported, "no Vulkan device: the Vulkan loader is version %u.%u, headway needs 1.1",
                         VK_API_VERSION_MAJOR(loader), VK_API_VERSION_MINOR(loader));
  }
  VkApplicationInfo app{};
  app.sType = VK_STRUCTURE_TYPE_APPLICATION_INFO;
  app.pApplicationName = "headway";
  app.pEngineName = "headway";
  app.apiVersion = VK_API_VERSION_1_1;
  VkInstanceCreateInfo ci{};
  ci.sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO;
  ci.pApplicationInfo = &app;
  const VkResult r = vkCreateInstance(&ci, nullptr, &x->instance);
  if (r != VK_SUCCESS) return no_device("no usable Vulkan driver", gpu::vk_error("vkCreateInstance", r));
  return Status();
}

// The device: the options' index, else the best type among those with Vulkan 1.1 and a compute
// queue; its compute queue family.
Status pick_device(GpuContext::Impl* x, const GpuOptions& options) {
  VkPhysicalDevice devices[kMaxDevices];
  uint32_t n = kMaxDevices;
  const VkResult r = vkEnumeratePhysicalDevices(x->instance, &n, devices);
  if (r != VK_SUCCESS && r != VK_INCOMPLETE) {
    return no_device("cannot list devices", gpu::vk_error("vkEnumeratePhysicalDevices", r));
  }
  if (n == 0) {
    return Status::error(Code::kUnsupported,
                         "no Vulkan device: the Vulkan loader found a driver but no device (VK_DRIVER_FILES / "
                         "VK_ICD_FILENAMES may point at a driver for hardware this machine lacks)");
  }
  int best = -1;
  for (uint32_t i = 0; i < n; ++i) {
    VkPhysicalDeviceProperties p;
    vkGetPhysicalDeviceProperties(devices[i], &p);
    const bool usable = p.apiVersion >= VK_API_VERSION_1_1 && compute_family(devices[i]) != UINT32_MAX;
    if (options.device_index >= 0) {
      if (static_cast<uint32_t>(options.device_index) != i) continue;
      if (!usable) {
        return Status::error(Code::kUnsupported,
                             "no Vulkan device: device %u (%s) has no compute queue or is older than Vulkan 1.1", i,
                             p.deviceName);
      }
      best = static_cast<int>(i);
      break;
    }
    if (!usable) continue;
    VkPhysicalDeviceProperties bp{};
    if (best >= 0) vkGetPhysicalDeviceProperties(devices[best], &bp);
    if (best < 0 || type_rank(p.deviceType) < type_rank(bp.deviceType)) best = static_cast<int>(i);
  }
  if (best < 0) {
    if (options.device_index >= 0) {
      return Status::error(Code::kUnsupported, "no Vulkan device: device index %d, the loader lists %u device%s",
                           options.device_index, n, n == 1 ? "" : "s");
    }
    return Status::error(Code::kUnsupported,
                         "no Vulkan device: none of the %u device%s has Vulkan 1.1 and a compute queue", n,
                         n == 1 ? "" : "s");
  }
  x->physical = devices[best];
  x->queue_family = compute_family(x->physical);
  return Status();
}

// What the device offers (info, and the limits the tiling reads), within what the options allow.
void read_device_info(GpuContext::Impl* x, const GpuOptions& options, GpuDeviceInfo& info) {
  VkPhysicalDeviceSubgroupProperties subgroup{};
  subgroup.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES;
  VkPhysicalDeviceProperties2 props{};
  props.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2;
  props.pNext = &subgroup;
  vkGetPhysicalDeviceProperties2(x->physical, &props);
  VkPhysicalDevice16BitStorageFeatures storage16{};
  storage16.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_16BIT_STORAGE_FEATURES;
  VkPhysicalDeviceFeatures2 features{};
  features.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2;
  features.pNext = &storage16;
  vkGetPhysicalDeviceFeatures2(x->physical, &features);
  vkGetPhysicalDeviceMemoryProperties(x->physical, &x->memory);

  const VkPhysicalDeviceLimits& lim = props.properties.limits;
  format_to(info.name, sizeof(info.name), "%s", props.properties.deviceName);
  info.type = device_type_name(props.properties.deviceType);
  info.api_version = props.properties.apiVersion;
  info.subgroup_size = subgroup.subgroupSize;
  info.max_shared_bytes = lim.maxComputeSharedMemorySize;
  info.max_invocations = lim.maxComputeWorkGroupInvocations;
  info.max_workgroup_size_x = lim.maxComputeWorkGroupSize[0];
  info.max_workgroup_count_x = lim.maxComputeWorkGroupCount[0];
  info.max_storage_buffer_bytes = lim.maxStorageBufferRange;
  info.storage_16bit = options.allow_16bit_storage && storage16.storageBuffer16BitAccess == VK_TRUE;
  info.host_mapped = options.allow_host_mapped && has_unified_memory(x->memory, props.properties.deviceType);
  x->limits.subgroup_size = info.subgroup_size;
  x->limits.max_shared_bytes = info.max_shared_bytes;
  x->limits.max_invocations = info.max_invocations;
  x->limits.max_workgroup_size_x = info.max_workgroup_size_x;
  x->max_workgroup_count_x = lim.maxComputeWorkGroupCount[0];
  x->max_workgroup_count_y = lim.maxComputeWorkGroupCount[1];
}

// The logical device, its queue and the pipeline cache.
Status create_device(GpuContext::Impl* x, const GpuDeviceInfo& info) {
  // One compute queue; 16-bit storage buffers where the device has them (f16 and bf16 K/V).
  const float priority = 1.0f;
  VkDeviceQueueCreateInfo qi{};
  qi.sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO;
  qi.queueFamilyIndex = x->queue_family;
  qi.queueCount = 1;
  qi.pQueuePriorities = &priority;
  VkPhysicalDevice16BitStorageFeatures enable16{};
  enable16.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_16BIT_STORAGE_FEATURES;
  enable16.storageBuffer16BitAccess = info.storage_16bit ? VK_TRUE : VK_FALSE;
  VkDeviceCreateInfo di{};
  di.sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO;
  di.pNext = &enable16;
  di.queueCreateInfoCount = 1;
  di.pQueueCreateInfos = &qi;
  const VkResult r = vkCreateDevice(x->physical, &di, nullptr, &x->device);
  if (r != VK_SUCCESS) return no_device(info.name, gpu::vk_error("vkCreateDevice", r));
  vkGetDeviceQueue(x->device, x->queue_family, 0, &x->queue);

  VkPipelineCacheCreateInfo pc{};
  pc.sType = VK_STRUCTURE_TYPE_PIPELINE_CACHE_CREATE_INFO;
  HEADWAY_VK(vkCreatePipelineCache(x->device, &pc, nullptr, &x->pipeline_cache), "vkCreatePipelineCache");
  return Status();
}

// The attention variants (f32, q8_0 and q4_0 K/V always, f16 and bf16 where the device has
// 16-bit storage) and the split-KV merge.
Status create_shader_modules(GpuContext::Impl* x, const GpuDeviceInfo& info) {
  const uint32_t* code[gpu::kStorageCount] = {gpu::kSpirv_attention_f32, gpu::kSpirv_attention_f16,
                                              gpu::kSpirv_attention_bf16, gpu::kSpirv_attention_q8_0,
                                              gpu::kSpirv_attention_q4_0};
  const size_t words[gpu::kStorageCount] = {gpu::kSpirv_attention_f32_words, gpu::kSpirv_attention_f16_words,
                                            gpu::kSpirv_attention_bf16_words, gpu::kSpirv_attention_q8_0_words,
                                            gpu::kSpirv_attention_q4_0_words};
  for (uint32_t i = 0; i < gpu::kStorageCount; ++i) {
    if (gpu::storage_needs_16bit(static_cast<gpu::Storage>(i)) && !info.storage_16bit) continue;
    VkShaderModuleCreateInfo mi{};
    mi.sType = VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO;
    mi.codeSize = words[i] * sizeof(uint32_t);
    mi.pCode = code[i];
    HEADWAY_VK(vkCreateShaderModule(x->device, &mi, nullptr, &x->modules[i]), "vkCreateShaderModule");
  }
  VkShaderModuleCreateInfo mm{};
  mm.sType = VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO;
  mm.codeSize = gpu::kSpirv_attention_merge_words * sizeof(uint32_t);
  mm.pCode = gpu::kSpirv_attention_merge;
  HEADWAY_VK(vkCreateShaderModule(x->device, &mm, nullptr, &x->merge_module), "vkCreateShaderModule");
  return Status();
}

}  // namespace

Status GpuContext::create(const GpuOptions& options) {
  if (impl_ != nullptr) return Status::error(Code::kFailedPrecondition, "gpu context: create called twice");
  Impl* x = new Impl;
  const Status s = [&]() -> Status {
    HEADWAY_RETURN_IF_ERROR(create_instance(x));
    HEADWAY_RETURN_IF_ERROR(pick_device(x, options));
    read_device_info(x, options, info_);
    HEADWAY_RETURN_IF_ERROR(create_device(x, info_));
    HEADWAY_RETURN_IF_ERROR(create_shader_modules(x, info_));
    x->split_kv_min_keys = options.split_kv_min_keys;
    return Status();
  }();
  if (!s.ok()) {
    x->destroy();
    delete x;
    info_ = GpuDeviceInfo{};
    return s;
  }
  impl_ = x;
  return Status();
}

}  // namespace headway
