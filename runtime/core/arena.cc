#include "headway/arena.hpp"

namespace headway {

Status Arena::bind(const Plan& plan, void* buffer, size_t bytes) {
  if (buffer == nullptr) return Status::error(Code::kInvalidArgument, "arena: buffer is null");
  if (plan.overflow || plan.arena_bytes == 0) {
    return Status::error(Code::kInvalidArgument,
                         "arena: the plan is not valid (make it with make_plan(), which checks the config)");
  }
  if (reinterpret_cast<uintptr_t>(buffer) % kAlignment != 0) {
    return Status::error(Code::kInvalidArgument, "arena: buffer at 0x%llx is not %llu-byte aligned",
                         static_cast<unsigned long long>(reinterpret_cast<uintptr_t>(buffer)),
                         static_cast<unsigned long long>(kAlignment));
  }
  if (bytes < plan.arena_bytes) {
    return Status::error(Code::kInvalidArgument, "arena: buffer is %llu bytes, the plan needs %llu",
                         static_cast<unsigned long long>(bytes), static_cast<unsigned long long>(plan.arena_bytes));
  }
  plan_ = plan;
  base_ = static_cast<uint8_t*>(buffer);
  return Status();
}

}  // namespace headway
