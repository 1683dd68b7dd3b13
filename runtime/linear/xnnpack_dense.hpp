// Dense projections on XNNPACK fully-connected operators (f32), created once at init.
//
// Memory: XNNPACK copies ("packs") the weights when an operator is created and allocates the
// operator object, both through the xnn_allocator given to xnn_initialize. headway initializes
// XNNPACK with an allocator that carves from the arena region the layer opens for it (the
// plan's packed region, sized by xnn_packed_bytes_bound in headway/plan.hpp), so everything
// XNNPACK holds lives in the arena and the plan's byte count stays what is used. An allocation
// with no region open, or past the region's end, fails (XNNPACK reports out-of-memory, the layer
// returns the Status). Frees are no-ops: the arena owns the memory. If another part of the
// process initialized XNNPACK first (its allocator then wins), xnn_dense_create detects it and
// fails rather than let XNNPACK take heap memory the plan does not know.
//
// f16: XNNPACK 2022's f16 fully-connected operator takes f16 activations and needs FP16
// arithmetic (ARMv8.2); the layer's activations are f32 and x86 has none, so f16/bf16 weights are
// widened to f32 at init and packed as f32 (the plan counts f32 packed bytes).
//
// Threads: each matrix is cut into `blocks` operators over contiguous output rows; xnn_dense_run
// runs one operator per pool task (XNNPACK's own pthreadpool is not used).
#pragma once

#include <cstddef>
#include <cstdint>

#include "headway/status.hpp"
#include "headway/thread_pool.hpp"
#include "runtime/linear/dense.hpp"

namespace headway {

// True when this build has XNNPACK (HEADWAY_XNNPACK).
bool xnnpack_built();

// Creates blocks operators for m (W widened to f32 where it is f16/bf16, through a temporary
// buffer freed before returning: init only) with the given input / output row strides. The
// operators' memory comes from region[*used, bytes); *used advances past it.
Status xnn_dense_create(const DenseMatrix& m, size_t x_stride, size_t y_stride, uint32_t blocks, uint8_t* region,
                        uint64_t bytes, uint64_t* used, void** ops);

// y = x · Wᵀ + b for t tokens (x, y: the strides given at create). Never allocates.
Status xnn_dense_run(void* const* ops, uint32_t blocks, uint32_t out, const float* x, float* y, uint32_t t,
                     ThreadPool* pool);

// Forgets the operators: their memory is the arena's, nothing is released.
void xnn_dense_delete(void** ops, uint32_t blocks);

}  // namespace headway
