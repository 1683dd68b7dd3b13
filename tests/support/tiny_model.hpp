// A tiny decoder with seeded random weights held in memory, behind a ModelWeightsSource: what the
// model, state-file, bad-input and fuzz tests run a whole Model on (no doctest here: the fuzz
// targets use it too). Two layers at most; 50 ids of vocabulary.
#pragma once

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <vector>

#include "headway/arena.hpp"
#include "headway/model.hpp"
#include "headway/plan.hpp"
#include "headway/thread_pool.hpp"
#include "tests/reference/reference_layer.hpp"
#include "tests/support/test_rng.hpp"

namespace headway::test {

// d_model 32, 4 heads over 2 kv heads of 8, 2 layers, max_seq 24, NeoX RoPE, f32 K/V, vocab 50.
inline Config tiny_model_config(bool tied) {
  Config c;
  c.set_name("tiny-decoder");
  c.d_model = 32;
  c.n_heads = 4;
  c.n_kv_heads = 2;
  c.head_dim = 8;
  c.max_seq = 24;
  c.n_layers = 2;
  c.rope.style = RopeStyle::kNeox;
  c.kv_dtype = DType::kF32;
  c.model.vocab_size = 50;
  c.model.intermediate_size = 48;
  c.model.norm = NormKind::kRms;
  c.model.norm_eps = 1e-5f;
  c.model.mlp = MlpKind::kSwiGlu;
  c.model.tie_word_embeddings = tied;
  return c;
}

// The model's own tensors as f32 values (the runtime's weights and the reference's alike).
struct TinyWeights {
  Config config;
  std::vector<float> tensor[kModelTensorCount][2];  // [ModelTensor][layer] (the whole-model ones at layer 0)
  std::vector<TestLayerWeights> attention;

  TinyWeights(const Config& c, uint64_t seed) : config(c) {
    Rng rng(seed);
    for (uint32_t t = 0; t < kModelTensorCount; ++t) {
      if (!model_has_tensor(c, static_cast<ModelTensor>(t))) continue;
      for (uint32_t l = 0; l < c.n_layers; ++l) {
        const TensorShape s = model_tensor_shape(c, static_cast<ModelTensor>(t));
        std::vector<float>& v = tensor[t][l];
        v.resize(size_t{s.rows} * s.cols);
        const bool norm = s.rows == 1;
        for (float& x : v) x = static_cast<float>(norm ? 1.0 + 0.1 * rng.normal() : rng.normal() / std::sqrt(s.cols));
      }
    }
    for (uint32_t l = 0; l < c.n_layers; ++l) attention.push_back(make_test_weights(c, DType::kF32, 31 + l));
  }
  const std::vector<float>& of(ModelTensor t, uint32_t layer) const {
    return tensor[static_cast<uint32_t>(t)][model_tensor_info(t).per_layer ? layer : 0];
  }
  ModelWeightsSource source() {
    return {this,
            [](void* ctx, uint32_t layer) -> Result<LayerWeights> {
              return static_cast<TinyWeights*>(ctx)->attention[layer].view;
            },
            [](void* ctx, ModelTensor t, uint32_t layer, TensorShape shape, uint64_t first, uint64_t n,
               float* dst) -> Status {
              const std::vector<float>& v = static_cast<TinyWeights*>(ctx)->of(t, layer);
              std::memcpy(dst, v.data() + first * shape.cols, n * shape.cols * sizeof(float));
              return Status();
            }};
  }
};

// A Model over its own arena.
struct TinyModel {
  Plan plan;
  void* buffer = nullptr;
  Arena arena;
  Model model;
  ~TinyModel() { std::free(buffer); }

  // The CPU backend on `pool` (may be null), or the GPU backend on `gpu` when it is not null.
  Status init(TinyWeights& w, const PlanOptions& o, ThreadPool* pool, GpuContext* gpu = nullptr) {
    Result<Plan> p = make_plan(w.config, o);
    if (!p.ok()) return p.status();
    plan = p.value();
    buffer = std::aligned_alloc(kAlignment, align_up(plan.arena_bytes));
    HEADWAY_RETURN_IF_ERROR(arena.bind(plan, buffer, align_up(plan.arena_bytes)));
    LayerOptions lo;
    lo.pool = pool;
    if (gpu != nullptr) {
      lo.backend = BackendKind::kGpu;
      lo.gpu = gpu;
    }
    return model.init(arena, w.source(), lo);
  }
};

// n ids in [0, 50), seeded.
inline std::vector<int32_t> tiny_prompt(uint32_t n, uint64_t seed) {
  Rng rng(seed);
  std::vector<int32_t> ids(n);
  for (int32_t& id : ids) id = static_cast<int32_t>(rng.uniform() * 50) % 50;
  return ids;
}

}  // namespace headway::test
