// attend_gpu_once(): one dense attention on a GpuBackend made and released for it.
#include "headway/backend.hpp"
#include "runtime/core/format.hpp"

namespace headway {

Status attend_gpu_once(const float* q, const void* k, const void* v, DType kv_dtype, float* o,
                       const AttentionShape& shape, const AttentionParams& params, char* description,
                       size_t description_size) {
  GpuContext context;
  HEADWAY_RETURN_IF_ERROR(context.create());
  const Result<Plan> plan = dense_plan(shape, kv_dtype);
  if (!plan.ok()) return plan.status();
  GpuBackend gpu;
  const bool masked = params.mask_bool != nullptr || params.mask_additive != nullptr;
  HEADWAY_RETURN_IF_ERROR(gpu.create(&context, plan.value(), masked));
  HEADWAY_RETURN_IF_ERROR(gpu.attend_dense(q, k, v, kv_dtype, o, shape, params));
  if (description != nullptr) format_to(description, description_size, "%s", gpu.description());
  return Status();
}

}  // namespace headway
