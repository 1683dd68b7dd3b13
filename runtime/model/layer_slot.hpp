// A layer's slot of the arena's weights region, filled at init: tensors copied back to back in
// the order the layer reads them, each converted to the plan's weight dtype. What the standard,
// MLA and Gated DeltaNet layers' inits share (layer.cc, mla_layer.cc, gated_delta_layer.cc).
#pragma once

#include <cstdint>

#include "headway/weights.hpp"
#include "runtime/linear/dense.hpp"

namespace headway {

struct LayerSlotWriter {
  uint8_t* dst;  // where the next tensor goes
  DType dtype;
  // src copied at dst in `dtype`; its view there (absent for an absent src, which takes no room).
  TensorRef put(const TensorRef& src) {
    if (!src.present()) return TensorRef{};
    const TensorRef out{dst, dtype, src.rows, src.cols};
    convert_tensor(src, dst, dtype);
    dst += src.elements() * dtype_bytes(dtype);
    return out;
  }
};

}  // namespace headway
