// How many command buffers this process's GpuBackends have recorded (vkBeginCommandBuffer ..
// vkEndCommandBuffer), counted so that a test can hold a decode step on mapped memory to
// recording nothing. Internal to runtime/gpu and its tests.
#pragma once

#include <cstdint>

namespace headway {
namespace gpu {

uint64_t recorded_command_buffers();

}  // namespace gpu
}  // namespace headway
