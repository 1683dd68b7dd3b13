// The C API's Session: the Arena object and the Session in the caller's memory; the arena's
// buffer is the caller's too.
#include "runtime/capi/capi_objects.hpp"

using namespace headway;

namespace {

TensorRef tensor_of(const headway_tensor& t) {
  TensorRef r;
  r.data = t.data;
  r.dtype = static_cast<DType>(t.dtype);
  r.rows = t.rows;
  r.cols = t.cols;
  return r;
}

struct WeightsSource {
  const headway_layer_weights* layers;
};

Result<LayerWeights> layer_weights(void* ctx, uint32_t l) {
  LayerWeights w;
  const Status s = capi::weights_of("headway_session_create", &static_cast<WeightsSource*>(ctx)->layers[l], l, &w);
  if (!s.ok()) return s;
  return w;
}

}  // namespace

namespace headway::capi {

Status weights_of(const char* call, const headway_layer_weights* in, uint32_t l, LayerWeights* out) {
  headway_layer_weights w;
  headway_layer_weights_init(&w);
  HEADWAY_RETURN_IF_ERROR(capi::read_struct(call, "layers[l]", in, &w));
  const headway_tensor* all[] = {&w.wq, &w.wk, &w.wv,     &w.wo,     &w.bq,   &w.bk,
                                 &w.bv, &w.bo, &w.q_norm, &w.k_norm, &w.sinks};
  for (const headway_tensor* t : all) {
    if (t->data != nullptr && !dtype_holds_weights(static_cast<DType>(t->dtype))) {
      return Status::error(Code::kInvalidArgument, "%s: layer %u has a tensor of dtype %d (weights are %s)", call, l,
                           static_cast<int>(t->dtype), kWeightDTypeNames);
    }
  }
  // The C API's layer weights are the standard attention's (MLA's latent tensors are not in it).
  LayerWeights lw;
  lw.wq = tensor_of(w.wq);
  lw.wk = tensor_of(w.wk);
  lw.wv = tensor_of(w.wv);
  lw.wo = tensor_of(w.wo);
  lw.bq = tensor_of(w.bq);
  lw.bk = tensor_of(w.bk);
  lw.bv = tensor_of(w.bv);
  lw.bo = tensor_of(w.bo);
  lw.q_norm = tensor_of(w.q_norm);
  lw.k_norm = tensor_of(w.k_norm);
  lw.sinks = tensor_of(w.sinks);
  *out = lw;
  return Status();
}

}  // namespace headway::capi

extern "C" {

void headway_layer_weights_init(headway_layer_weights* weights) {
  if (weights == nullptr) return;
  *weights = headway_layer_weights{};
  weights->struct_size = sizeof(headway_layer_weights);
}

size_t headway_session_object_bytes(void) { return sizeof(headway_session); }

headway_status headway_session_create(void* memory, size_t memory_bytes, const headway_plan* plan, void* arena,
                                      size_t arena_bytes, const headway_layer_weights* layers, uint32_t n_layers,
                                      headway_pool* pool, headway_session** session, headway_error* error) {
  constexpr const char* kCall = "headway_session_create";
  Status s = plan == nullptr      ? capi::null_argument(kCall, "plan")
             : layers == nullptr  ? capi::null_argument(kCall, "layers")
             : session == nullptr ? capi::null_argument(kCall, "session")
                                  : Status();
  if (s.ok() && n_layers != plan->plan.config.n_layers) {
    s = Status::error(Code::kInvalidArgument, "%s: n_layers %u is not the plan's %u", kCall, n_layers,
                      plan->plan.config.n_layers);
  }
  if (s.ok()) s = capi::check_memory(kCall, memory, memory_bytes, sizeof(headway_session), HEADWAY_OBJECT_ALIGNMENT);
  if (!s.ok()) return capi::report(s, error);
  headway_session* h = new (memory) headway_session;
  s = h->arena.bind(plan->plan, arena, arena_bytes);
  WeightsSource source{layers};
  if (s.ok()) s = h->session.init(h->arena, layer_weights, &source, pool ? &pool->pool : nullptr);
  if (!s.ok()) {
    h->~headway_session();
    return capi::report(s, error);
  }
  *session = h;
  return capi::report(s, error);
}

headway_status headway_session_prefill(headway_session* session, const float* x, uint32_t t, float* y,
                                       headway_error* error) {
  if (session == nullptr) return capi::report(capi::null_argument("headway_session_prefill", "session"), error);
  return capi::report(session->session.prefill(x, t, y), error);
}

headway_status headway_session_decode(headway_session* session, const float* x, float* y, headway_error* error) {
  if (session == nullptr) return capi::report(capi::null_argument("headway_session_decode", "session"), error);
  return capi::report(session->session.decode(x, y), error);
}

headway_status headway_session_encode(headway_session* session, const float* x, const uint32_t* cu_seqlens,
                                      uint32_t n_seqs, float* y, headway_error* error) {
  if (session == nullptr) return capi::report(capi::null_argument("headway_session_encode", "session"), error);
  return capi::report(session->session.encode(x, cu_seqlens, n_seqs, y), error);
}

void headway_session_reset(headway_session* session) {
  if (session != nullptr) session->session.reset();
}

uint32_t headway_session_position(const headway_session* session) { return session ? session->session.position() : 0; }

void headway_session_destroy(headway_session* session) {
  if (session != nullptr) session->~headway_session();
}

}  // extern "C"
