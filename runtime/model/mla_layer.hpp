// Multi-head latent attention's weights (Config::mla): the check AttentionLayer::init runs on them.
#pragma once

#include <cstdint>

#include "headway/plan.hpp"
#include "headway/status.hpp"
#include "headway/weights.hpp"

namespace headway {

// The MLA tensors of LayerWeights (weights.hpp) against the plan's shapes: present, in a type the
// kernels read, whole blocks, the right shape; each error names the layer and the tensor.
Status check_mla_weights(const Plan& plan, const LayerWeights& w, uint32_t layer);

}  // namespace headway
