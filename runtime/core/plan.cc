#include "headway/plan.hpp"

#include "headway/thread_pool.hpp"

namespace headway {

Result<Plan> make_plan(const Config& config, const PlanOptions& options) {
  HEADWAY_RETURN_IF_ERROR(validate(config));
  if (options.threads > ThreadPool::kMaxThreads) {
    return Status::error(Code::kInvalidArgument, "threads %u is above the supported maximum %u", options.threads,
                         ThreadPool::kMaxThreads);
  }
  // Borrowed weights may be in any type the kernels read (a GGUF's blocks): the plan only counts them.
  const bool borrowed_blocks = !options.weights_in_arena && dtype_holds_weights(options.weight_dtype);
  if (!dtype_plans_weights(options.weight_dtype) && !borrowed_blocks) {
    return Status::error(Code::kInvalidArgument, "weight dtype %s is not one of %s%s", dtype_name(options.weight_dtype),
                         kPlannedWeightDTypeNames,
                         dtype_is_block(options.weight_dtype)
                             ? " (weights in a block format stay as their file holds them: weights_in_arena false)"
                             : "");
  }
  const Plan plan = plan_for(config, options);
  if (plan.overflow) {
    return Status::error(Code::kOutOfRange,
                         "the memory plan does not fit in 64 bits: hidden_size %u, num_heads %u, head_dim %u, "
                         "max_seq %u, layers %u, max_tokens %u, threads %u",
                         config.d_model, config.n_heads, config.head_size(), config.max_seq, config.n_layers,
                         plan.max_tokens, plan.options.threads);
  }
  return plan;
}

}  // namespace headway
