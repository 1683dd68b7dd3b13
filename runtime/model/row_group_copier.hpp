// A decoder's borrowed matrices in row groups (headway/detail/row_groups.hpp): where this
// machine's decode GEMV reads a matrix's block type faster so (simd::matmul_reads_row_groups),
// the model holds a copy of its bytes in that layout, made once at init, and the views it runs on
// point there. Which matrices: the model's own (the MLP's, the embedding, the LM head) and a
// plain attention layer's Q/K/V/O when its projections run on the Highway kernels. MLA and
// linear layers read row slices of theirs and keep them as lent. All the copies share one
// allocation (BorrowedMatrices::row_grouped); the source's pages of each copied matrix are then
// offered back to the system (they are read again only if something else reads them).
#pragma once

#include <cstdint>

#include "headway/layer.hpp"
#include "headway/model.hpp"
#include "headway/plan.hpp"
#include "headway/status.hpp"
#include "headway/weights.hpp"

namespace headway {

class RowGroupCopier {
 public:
  // Sizes the copies of the borrowed matrices and of every layer's attention matrices (through
  // source.attention), allocates them into borrowed->row_grouped, and copies the borrowed ones
  // (their views in `borrowed` then point at the copies). Nothing to do, no allocation, where
  // no matrix pays. `who` starts the message of a failed allocation.
  Status start(const char* who, const Plan& p, const ModelWeightsSource& source, BorrowedMatrices* borrowed);
  // Layer `layer`'s attention matrices that pay, copied (after start; none before it).
  void copy_attention(const Plan& p, uint32_t layer, LayerWeights* w);

 private:
  void copy(TensorRef* t);
  uint8_t* next_ = nullptr;  // null: nothing is copied
};

}  // namespace headway
