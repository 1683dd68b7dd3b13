// What the layer and session tests share: random inputs, the error measure against the double
// reference, and the projection engines this build has.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "headway/arena.hpp"
#include "headway/layer.hpp"
#include "headway/plan.hpp"
#include "headway/session.hpp"
#include "runtime/linear/xnnpack_dense.hpp"
#include "tests/reference/reference_layer.hpp"
#include "tests/support/test_rng.hpp"

namespace headway {
namespace test {

inline std::vector<double> to_double(const std::vector<float>& v) { return std::vector<double>(v.begin(), v.end()); }

// max |got − want| over the larger of 1 and max |want|.
inline double max_rel_error(const std::vector<float>& got, const std::vector<double>& want) {
  double scale = 1.0, err = 0.0;
  for (double w : want) scale = std::max(scale, std::fabs(w));
  for (size_t i = 0; i < want.size(); ++i) err = std::max(err, std::fabs(got[i] - want[i]));
  return err / scale;
}

// t rows of d unit-normal values.
inline std::vector<float> random_x(uint32_t t, uint32_t d, uint64_t seed) {
  Rng rng(seed);
  std::vector<float> x(size_t{t} * d);
  for (float& v : x) v = rng.normal();
  return x;
}

// An arena's memory: 64-byte aligned, at least n bytes (whole cache lines), filled with 0xCD so
// that what a layer reads before writing shows.
struct ArenaBuffer {
  explicit ArenaBuffer(uint64_t n)
      : bytes(align_up(n ? n : 64)), p(static_cast<uint8_t*>(std::aligned_alloc(64, bytes))) {
    std::memset(p, 0xCD, bytes);
  }
  ~ArenaBuffer() { std::free(p); }
  ArenaBuffer(const ArenaBuffer&) = delete;
  ArenaBuffer& operator=(const ArenaBuffer&) = delete;
  uint64_t bytes;
  uint8_t* p;
};

// A Session over its own arena and each layer's test weights (weights[l]; views[l] what the
// Session was given). Make it with make_session_stack; on the heap: a Session holds kMaxLayers
// layer objects.
struct SessionStack {
  Plan plan;
  ArenaBuffer* buffer = nullptr;
  Arena arena;
  std::vector<TestLayerWeights> weights;
  std::vector<LayerWeights> views;
  Session session;
  ~SessionStack() { delete buffer; }
};

// The plan of c and o, its arena, and a Session over layer_weights(l) for each layer l; null
// (with the reason in *status) when any step fails.
template <class LayerWeightsFn>
SessionStack* make_session_stack(const Config& c, const PlanOptions& o, LayerWeightsFn layer_weights, Status* status) {
  SessionStack* s = new SessionStack;
  const Result<Plan> plan = make_plan(c, o);
  *status = plan.status();
  if (status->ok()) {
    s->plan = *plan;
    s->buffer = new ArenaBuffer(s->plan.arena_bytes);
    *status = s->arena.bind(s->plan, s->buffer->p, s->buffer->bytes);
  }
  for (uint32_t l = 0; status->ok() && l < c.n_layers; ++l) {
    s->weights.push_back(layer_weights(l));
    s->views.push_back(s->weights.back().view);
  }
  if (status->ok()) *status = s->session.init(s->arena, s->views.data(), c.n_layers, nullptr);
  if (status->ok()) return s;
  delete s;
  return nullptr;
}

inline std::vector<Projection> projections() {
  std::vector<Projection> p{Projection::kHighway};
  if (xnnpack_built()) p.push_back(Projection::kXnnpack);
  return p;
}

}  // namespace test
}  // namespace headway
