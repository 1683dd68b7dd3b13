// The C API's Model (the Arena object and the Model in the caller's memory, the arena's buffer
// the caller's too) over C callbacks, and the Sampler with its scratch after it.
#include "runtime/capi/capi_objects.hpp"

using namespace headway;

namespace {

constexpr size_t kScratchOffset =
    (sizeof(headway_sampler) + HEADWAY_OBJECT_ALIGNMENT - 1) / HEADWAY_OBJECT_ALIGNMENT * HEADWAY_OBJECT_ALIGNMENT;

struct CallbackSource {
  headway_model_source c;
  headway_layer_weights layer;
};

Result<LayerWeights> attention_of(void* ctx, uint32_t l) {
  CallbackSource& s = *static_cast<CallbackSource*>(ctx);
  headway_layer_weights_init(&s.layer);
  const headway_status code = s.c.attention(s.c.ctx, l, &s.layer);
  if (code != HEADWAY_OK) {
    return Status::error(static_cast<Code>(code),
                         "headway_model_create: the source's attention function failed for "
                         "layer %u (status %d)",
                         l, static_cast<int>(code));
  }
  LayerWeights w;
  HEADWAY_RETURN_IF_ERROR(capi::weights_of("headway_model_create", &s.layer, l, &w));
  return w;
}

Status rows_of(void* ctx, ModelTensor t, uint32_t layer, TensorShape shape, uint64_t first, uint64_t n, float* dst) {
  const CallbackSource& s = *static_cast<const CallbackSource*>(ctx);
  const headway_status code = s.c.rows(s.c.ctx, static_cast<int>(t), layer, first, n, shape.cols, dst);
  if (code == HEADWAY_OK) return Status();
  return Status::error(static_cast<Code>(code), "the source's rows function failed (status %d)",
                       static_cast<int>(code));
}

}  // namespace

namespace headway::capi {

// Binds the arena and inits the model in `memory` from `source`; *model on success.
Status create_model(const char* call, void* memory, size_t memory_bytes, const headway_plan* plan, void* arena,
                    size_t arena_bytes, const ModelWeightsSource& source, headway_pool* pool, headway_model** model) {
  Status s = plan == nullptr ? null_argument(call, "plan") : model == nullptr ? null_argument(call, "model") : Status();
  if (s.ok()) s = check_memory(call, memory, memory_bytes, sizeof(headway_model), HEADWAY_OBJECT_ALIGNMENT);
  if (!s.ok()) return s;
  headway_model* h = new (memory) headway_model;
  s = h->arena.bind(plan->plan, arena, arena_bytes);
  LayerOptions options;
  options.pool = pool ? &pool->pool : nullptr;
  if (s.ok()) s = h->model.init(h->arena, source, options);
  if (!s.ok()) {
    h->~headway_model();
    return s;
  }
  *model = h;
  return s;
}

}  // namespace headway::capi

extern "C" {

void headway_model_source_init(headway_model_source* source) {
  if (source == nullptr) return;
  *source = headway_model_source{};
  source->struct_size = sizeof(headway_model_source);
}

size_t headway_model_object_bytes(void) { return sizeof(headway_model); }

headway_status headway_model_create(void* memory, size_t memory_bytes, const headway_plan* plan, void* arena,
                                    size_t arena_bytes, const headway_model_source* source, headway_pool* pool,
                                    headway_model** model, headway_error* error) {
  constexpr const char* kCall = "headway_model_create";
  CallbackSource cb{};
  headway_model_source_init(&cb.c);
  Status s =
      source == nullptr ? capi::null_argument(kCall, "source") : capi::read_struct(kCall, "source", source, &cb.c);
  if (s.ok() && (cb.c.attention == nullptr || cb.c.rows == nullptr)) {
    s = Status::error(Code::kInvalidArgument, "%s: source->%s is null", kCall,
                      cb.c.attention == nullptr ? "attention" : "rows");
  }
  if (s.ok()) {
    s = capi::create_model(kCall, memory, memory_bytes, plan, arena, arena_bytes,
                           ModelWeightsSource{&cb, attention_of, rows_of}, pool, model);
  }
  return capi::report(s, error);
}

headway_status headway_model_prefill(headway_model* model, const int32_t* ids, uint32_t n, headway_error* error) {
  if (model == nullptr) return capi::report(capi::null_argument("headway_model_prefill", "model"), error);
  return capi::report(model->model.prefill(ids, n), error);
}

headway_status headway_model_decode(headway_model* model, int32_t id, headway_error* error) {
  if (model == nullptr) return capi::report(capi::null_argument("headway_model_decode", "model"), error);
  return capi::report(model->model.decode(id), error);
}

const float* headway_model_logits(const headway_model* model) {
  return model != nullptr && model->model.position() > 0 ? model->model.logits() : nullptr;
}

uint32_t headway_model_vocab_size(const headway_model* model) {
  return model != nullptr ? model->arena.plan().config.model.vocab_size : 0;
}

uint32_t headway_model_position(const headway_model* model) { return model ? model->model.position() : 0; }

void headway_model_reset(headway_model* model) {
  if (model != nullptr) model->model.reset();
}

void headway_model_destroy(headway_model* model) {
  if (model != nullptr) model->~headway_model();
}

void headway_sampler_params_init(headway_sampler_params* params) {
  if (params == nullptr) return;
  const SamplerParams d;
  *params =
      headway_sampler_params{sizeof(headway_sampler_params), d.temperature,      d.top_k,          d.top_p, d.min_p,
                             d.repetition_penalty,           d.presence_penalty, d.penalty_window, d.seed};
}

size_t headway_sampler_memory_bytes(uint32_t n_vocab) { return kScratchOffset + Sampler::scratch_bytes(n_vocab); }

headway_status headway_sampler_create(void* memory, size_t memory_bytes, const headway_sampler_params* params,
                                      uint32_t n_vocab, headway_sampler** sampler, headway_error* error) {
  constexpr const char* kCall = "headway_sampler_create";
  headway_sampler_params p;
  headway_sampler_params_init(&p);
  Status s = params == nullptr    ? capi::null_argument(kCall, "params")
             : sampler == nullptr ? capi::null_argument(kCall, "sampler")
                                  : capi::read_struct(kCall, "params", params, &p);
  if (s.ok())
    s = capi::check_memory(kCall, memory, memory_bytes, headway_sampler_memory_bytes(n_vocab),
                           HEADWAY_OBJECT_ALIGNMENT);
  if (!s.ok()) return capi::report(s, error);
  headway_sampler* h = new (memory) headway_sampler;
  const SamplerParams sp{p.temperature,      p.top_k,          p.top_p, p.min_p, p.repetition_penalty,
                         p.presence_penalty, p.penalty_window, p.seed};
  s = h->sampler.init(sp, n_vocab, static_cast<uint8_t*>(memory) + kScratchOffset, memory_bytes - kScratchOffset);
  if (!s.ok()) {
    h->~headway_sampler();
    return capi::report(Status::error(s.code(), "%s: %s", kCall, s.message()), error);
  }
  *sampler = h;
  return capi::report(s, error);
}

headway_status headway_sampler_sample(headway_sampler* sampler, const float* logits, const int32_t* recent,
                                      size_t n_recent, int32_t* id, headway_error* error) {
  constexpr const char* kCall = "headway_sampler_sample";
  if (sampler == nullptr) return capi::report(capi::null_argument(kCall, "sampler"), error);
  if (logits == nullptr) return capi::report(capi::null_argument(kCall, "logits"), error);
  if (id == nullptr) return capi::report(capi::null_argument(kCall, "id"), error);
  if (recent == nullptr && n_recent > 0) return capi::report(capi::null_argument(kCall, "recent"), error);
  const Result<int32_t> next = sampler->sampler.sample(logits, recent, n_recent);
  if (!next.ok()) return capi::report(next.status(), error);
  *id = next.value();
  return capi::report(Status(), error);
}

}  // extern "C"
