// VkResult → Status: every Vulkan call the backend makes is checked, and a failure names the
// call and the result ("vkCreateComputePipelines failed: VK_ERROR_OUT_OF_DEVICE_MEMORY").
#pragma once

#include <vulkan/vulkan.h>

#include "headway/status.hpp"

namespace headway {
namespace gpu {

const char* vk_result_name(VkResult r);

// kUnsupported for results that say the machine cannot do it (no driver, no device, a missing
// feature or extension), kInternal otherwise (out of memory, device lost, a bug).
Status vk_error(const char* call, VkResult r);

}  // namespace gpu
}  // namespace headway

// Returns a Status naming `call` from the enclosing function when it does not give VK_SUCCESS.
#define HEADWAY_VK(call_expr, call_name)                              \
  do {                                                                \
    const VkResult headway_vk_result_ = (call_expr);                  \
    if (headway_vk_result_ != VK_SUCCESS) {                           \
      return ::headway::gpu::vk_error(call_name, headway_vk_result_); \
    }                                                                 \
  } while (0)
