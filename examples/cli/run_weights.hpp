// The two weight sources of `headway run`, each a Session::LayerWeightsFn over its context:
// seeded random values made one layer at a time, or tensors borrowed from a mapped model file.
#pragma once

#include <cstdint>
#include <vector>

#include "headway/config.hpp"
#include "headway/plan.hpp"
#include "headway/status.hpp"
#include "headway/weights.hpp"
#include "headway/tools/weights_file.hpp"

namespace headway::cli {

// Random weights of one layer, regenerated for each layer into the same buffers, in `dtype`:
// uniform, with variance 1/fan_in for the matrices, standard deviation 0.1 for the biases, around
// 1 for the q/k norms and standard deviation 1 for the sink logits. The same seed gives the same
// values on every machine.
struct RandomWeights {
  const Plan* plan = nullptr;
  DType dtype = DType::kF16;
  uint64_t seed = 1;
  std::vector<uint8_t> buf[12];  // one per tensor of layer_tensor_shapes (headway/layer_tensors.hpp)

  static Result<LayerWeights> layer(void* ctx, uint32_t l);
  void release();  // frees the buffers once the session has copied the last layer

 private:
  TensorRef make(int slot, uint32_t rows, uint32_t cols, float scale, float offset, uint64_t stream);
};

// A model file's layers, borrowed from its mapping.
struct FileWeights {
  const WeightsFile* file = nullptr;
  Config config;  // the file's config (all its layers), for the loader's checks

  static Result<LayerWeights> layer(void* ctx, uint32_t l);
};

}  // namespace headway::cli
