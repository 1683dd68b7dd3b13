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

// Element l of the caller's array, whose elements are its own headway_layer_weights: as far apart
// as its struct_size says (a caller built before the struct grew has smaller ones).
const headway_layer_weights* layer_at(const headway_layer_weights* layers, uint32_t l) {
  const size_t size = layers[0].struct_size;
  const size_t stride = size >= sizeof(size_t) && size <= sizeof(headway_layer_weights) ? size : sizeof(*layers);
  return reinterpret_cast<const headway_layer_weights*>(reinterpret_cast<const uint8_t*>(layers) + l * stride);
}

Result<LayerWeights> layer_weights(void* ctx, uint32_t l) {
  LayerWeights w;
  const Status s =
      capi::weights_of("headway_session_create", layer_at(static_cast<WeightsSource*>(ctx)->layers, l), l, &w);
  if (!s.ok()) return s;
  return w;
}

}  // namespace

namespace headway::capi {

Status weights_of(const char* call, const headway_layer_weights* in, uint32_t l, LayerWeights* out) {
  headway_layer_weights w;
  headway_layer_weights_init(&w);
  HEADWAY_RETURN_IF_ERROR(capi::read_struct(call, "layers[l]", in, &w));
  // Each C field and the LayerWeights member it fills.
  const struct {
    const headway_tensor* in;
    TensorRef LayerWeights::*member;
  } fields[] = {{&w.wq, &LayerWeights::wq},
                {&w.wk, &LayerWeights::wk},
                {&w.wv, &LayerWeights::wv},
                {&w.wo, &LayerWeights::wo},
                {&w.bq, &LayerWeights::bq},
                {&w.bk, &LayerWeights::bk},
                {&w.bv, &LayerWeights::bv},
                {&w.bo, &LayerWeights::bo},
                {&w.q_norm, &LayerWeights::q_norm},
                {&w.k_norm, &LayerWeights::k_norm},
                {&w.sinks, &LayerWeights::sinks},
                {&w.wq_a, &LayerWeights::wq_a},
                {&w.q_a_norm, &LayerWeights::q_a_norm},
                {&w.wkv_a, &LayerWeights::wkv_a},
                {&w.kv_a_norm, &LayerWeights::kv_a_norm},
                {&w.wkv_b, &LayerWeights::wkv_b},
                {&w.w_qkv, &LayerWeights::w_qkv},
                {&w.w_z, &LayerWeights::w_z},
                {&w.w_b, &LayerWeights::w_b},
                {&w.w_a, &LayerWeights::w_a},
                {&w.conv, &LayerWeights::conv},
                {&w.a_log, &LayerWeights::a_log},
                {&w.a_neg, &LayerWeights::a_neg},
                {&w.dt_bias, &LayerWeights::dt_bias},
                {&w.out_norm, &LayerWeights::out_norm}};
  LayerWeights lw;
  for (const auto& f : fields) {
    if (f.in->data != nullptr && !dtype_holds_weights(static_cast<DType>(f.in->dtype))) {
      return Status::error(Code::kInvalidArgument, "%s: layer %u has a tensor of dtype %d (weights are %s)", call, l,
                           static_cast<int>(f.in->dtype), kWeightDTypeNames);
    }
    lw.*f.member = tensor_of(*f.in);
  }
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
