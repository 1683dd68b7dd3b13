// The checks AttentionLayer::init runs on a layer's weights (runtime/model/layer.cc, mla_layer.cc).
#pragma once

#include <cstdint>

#include "headway/plan.hpp"
#include "headway/status.hpp"
#include "headway/weights.hpp"

namespace headway {

// One tensor when `required`: present, a matrix (rows > 1) in a type the kernels read (ggml's
// blocks too, its rows whole blocks) or a bias, norm or sinks vector in a value type, of shape
// [rows, cols]; each error names the layer and the tensor.
Status check_layer_tensor(const TensorRef& t, const char* name, uint32_t layer, bool required, uint32_t rows,
                          uint32_t cols);

// Every value of tensor t (a vector of the layer's) finite, else an error naming the layer, the
// tensor and the first value that is not.
Status check_layer_tensor_finite(const TensorRef& t, const char* name, uint32_t layer);

// The MLA tensors of LayerWeights (weights.hpp) against the plan's shapes: present, in a type the
// kernels read, whole blocks, the right shape; each error names the layer and the tensor.
Status check_mla_weights(const Plan& plan, const LayerWeights& w, uint32_t layer);
// The Gated DeltaNet tensors of a linear layer (runtime/model/gated_delta_layer.cc), likewise, and
// its vectors finite.
Status check_gated_delta_weights(const Plan& plan, const LayerWeights& w, uint32_t layer);

}  // namespace headway
