// The C API's plans: create from a config, their figures and head layouts.
#include "runtime/capi/capi_objects.hpp"

using namespace headway;

extern "C" {

void headway_plan_options_init(headway_plan_options* options) {
  if (options == nullptr) return;
  const PlanOptions d;
  *options = headway_plan_options{};
  options->struct_size = sizeof(headway_plan_options);
  options->threads = d.threads;
  options->max_tokens = d.max_tokens;
  options->weight_dtype = static_cast<headway_dtype>(d.weight_dtype);
  options->weights_in_arena = d.weights_in_arena ? 1 : 0;
  options->projection = static_cast<int>(d.projection);
}

size_t headway_plan_object_bytes(void) { return sizeof(headway_plan); }

headway_status headway_plan_create(void* memory, size_t memory_bytes, const headway_config* config,
                                   const headway_plan_options* options, headway_plan** plan, headway_error* error) {
  constexpr const char* kCall = "headway_plan_create";
  headway_plan_options o;
  headway_plan_options_init(&o);
  Status s = config == nullptr ? capi::null_argument(kCall, "config")
             : plan == nullptr ? capi::null_argument(kCall, "plan")
                               : capi::read_struct(kCall, "options", options, &o);
  if (s.ok()) s = capi::check_memory(kCall, memory, memory_bytes, sizeof(headway_plan), HEADWAY_OBJECT_ALIGNMENT);
  if (s.ok()) s = capi::check_dtype(kCall, "options->weight_dtype", o.weight_dtype);
  if (s.ok() && o.projection != static_cast<int>(Projection::kHighway) &&
      o.projection != static_cast<int>(Projection::kXnnpack)) {
    s = Status::error(Code::kInvalidArgument, "%s: options->projection %d is not 0 (highway) or 1 (xnnpack)", kCall,
                      o.projection);
  }
  if (!s.ok()) return capi::report(s, error);
  PlanOptions po;
  po.threads = o.threads;
  po.max_tokens = o.max_tokens;
  po.weight_dtype = static_cast<DType>(o.weight_dtype);
  po.weights_in_arena = o.weights_in_arena != 0;
  po.projection = static_cast<Projection>(o.projection);
  const Result<Plan> p = make_plan(config->config, po);
  if (!p.ok()) return capi::report(p.status(), error);
  *plan = new (memory) headway_plan{p.value()};
  return capi::report(Status(), error);
}

headway_status headway_plan_get_info(const headway_plan* plan, headway_plan_info* info, headway_error* error) {
  constexpr const char* kCall = "headway_plan_get_info";
  Status s = plan == nullptr   ? capi::null_argument(kCall, "plan")
             : info == nullptr ? capi::null_argument(kCall, "info")
                               : Status();
  if (s.ok() && (info->struct_size < sizeof(size_t) || info->struct_size > sizeof(headway_plan_info))) {
    s = Status::error(Code::kInvalidArgument, "%s: info->struct_size %zu is not in %zu..%zu", kCall, info->struct_size,
                      sizeof(size_t), sizeof(headway_plan_info));
  }
  if (!s.ok()) return capi::report(s, error);
  const Plan& p = plan->plan;
  const Config& c = p.config;
  headway_plan_info v{};
  v.struct_size = info->struct_size;
  v.d_model = c.d_model;
  v.n_heads = c.n_heads;
  v.n_kv_heads = c.kv_heads();
  v.head_dim = p.head_dim;
  v.group_size = p.group_size;
  v.q_width = p.q_width;
  v.kv_width = p.kv_width;
  v.max_seq = c.max_seq;
  v.n_layers = c.n_layers;
  v.max_tokens = p.max_tokens;
  v.cache_rows = p.cache_rows;
  v.threads = p.options.threads;
  v.kv_dtype = static_cast<headway_dtype>(c.kv_dtype);
  v.causal = c.causal ? 1 : 0;
  v.kv_bytes_per_token = p.kv_bytes_per_token;
  v.kv_bytes_per_layer = p.kv_bytes_per_layer;
  v.kv_cache_bytes = p.kv_cache_bytes;
  v.weight_bytes = p.weight_bytes;
  v.scratch_bytes = p.scratch_bytes;
  v.arena_bytes = p.arena_bytes;
  std::memcpy(static_cast<void*>(info), &v, info->struct_size);
  return capi::report(s, error);
}

headway_status headway_plan_head(const headway_plan* plan, uint32_t head, headway_head_layout* layout,
                                 headway_error* error) {
  constexpr const char* kCall = "headway_plan_head";
  Status s = plan == nullptr     ? capi::null_argument(kCall, "plan")
             : layout == nullptr ? capi::null_argument(kCall, "layout")
                                 : Status();
  if (s.ok() && head >= plan->plan.config.n_heads) {
    s = Status::error(Code::kOutOfRange, "%s: head %u is not below n_heads %u", kCall, head, plan->plan.config.n_heads);
  }
  if (!s.ok()) return capi::report(s, error);
  const HeadLayout l = plan->plan.head(head);
  *layout = headway_head_layout{l.q_head,       l.kv_head,        l.qkv_q_offset,  l.qkv_k_offset,
                                l.qkv_v_offset, l.cache_k_offset, l.cache_v_offset};
  return capi::report(s, error);
}

}  // extern "C"
