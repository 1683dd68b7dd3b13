// What Model (decoders) and Encoder share around their attention blocks: the model's weights in
// the arena (loaded once, read as views) and the norm and MLP steps as the config names them.
// No allocation but where AttentionLayer::init may (XNNPACK, the GPU backend).
#pragma once

#include <cstdint>

#include "headway/arena.hpp"
#include "headway/layer.hpp"
#include "headway/model.hpp"
#include "headway/model_tensors.hpp"
#include "headway/plan.hpp"
#include "headway/thread_pool.hpp"
#include "headway/weights.hpp"

namespace headway {

// The model weights region of a bound arena, tensor by tensor, and the borrowed matrices.
struct ModelWeightsView {
  const Plan* plan = nullptr;
  const uint8_t* base = nullptr;               // the region's start
  const BorrowedMatrices* borrowed = nullptr;  // with weights_in_arena false
  // A matrix or an embedding table in the plan's weight dtype, or borrowed in the source's type
  // ([rows, cols] as the table says).
  TensorRef matrix(ModelTensor t, uint32_t layer) const;
  // A norm's weight or a bias, f32; null where the config has none.
  const float* vector(ModelTensor t, uint32_t layer) const;
};

// Copies every model tensor the config has from `source` into the arena (staged in f32 through
// the model activations region, then stored in f32 or the weight dtype) or, with borrowed weights,
// the norms and biases so and the matrices' views into `borrowed`; inits layers[l] with layer l's
// attention weights. A model that `decodes` (token by token) holds the borrowed matrices its
// decode step reads faster in row groups so (runtime/model/row_group_copier.hpp). `who`
// ("model", "encoder") starts each message.
Status load_model_weights(const char* who, const Arena& arena, const ModelWeightsSource& source,
                          const LayerOptions& options, bool decodes, AttentionLayer* layers,
                          BorrowedMatrices* borrowed);

// y = norm(x) over t rows of d_model: RMSNorm or LayerNorm as the config says, with `weight`'s
// (and `bias`'s, for LayerNorm) tensors of `layer`. y may be x.
void apply_norm(const ModelWeightsView& w, ModelTensor weight, ModelTensor bias, uint32_t layer, const float* x,
                float* y, uint32_t t);

// A norm of one layer, as the residual step names it: its weight's tensor (and its bias's, for
// LayerNorm; an output norm is RMSNorm and has none); none where `present` is false.
struct BlockNorm {
  bool present = false;
  ModelTensor weight = ModelTensor::kAttnNorm;
  ModelTensor bias = ModelTensor::kAttnNormBias;
  uint32_t layer = 0;
};

// The residual step after a block, over t rows of d_model: out = RMSNorm(out) with `post` where
// present (the block's output norm: Gemma 2/3, OLMo 2), h += out, then y = norm(h) with `next`
// where present (the next block's input norm, or a post-norm encoder's; y may be h). Each row on
// its own, split over the pool in tasks of rows.
void add_residual(const ModelWeightsView& w, const BlockNorm& post, float* out, float* h, const BlockNorm& next,
                  float* y, uint32_t t, ThreadPool* pool);

// y = mlp(x) over t rows: SwiGLU (gate, up, down) or GELU (up, down), with biases where the config
// has them; hidden [t, 2·ffn] is its scratch. x and y are [t, d_model], y distinct from x.
void apply_mlp(const ModelWeightsView& w, uint32_t layer, const float* x, float* hidden, float* y, uint32_t t,
               ThreadPool* pool);

}  // namespace headway
