#include "runtime/linear/xnnpack_dense.hpp"

#include <xnnpack.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <mutex>

#include "headway/plan.hpp"

namespace headway {

bool xnnpack_built() { return true; }

namespace {

// The region XNNPACK allocates from while an operator is created. Each block carries a 64-byte
// header that holds its size (for reallocate).
struct XnnRegion {
  uint8_t* base = nullptr;
  uint64_t size = 0;
  uint64_t used = 0;
  uint64_t allocations = 0;  // calls through this allocator, to detect a foreign xnn_initialize
};

std::mutex g_mu;                // serializes creates: the region below is global to XNNPACK
XnnRegion* g_region = nullptr;  // open region, guarded by g_mu
bool g_initialized = false;

constexpr uint64_t kHeader = 64;

void* region_alloc(void*, size_t alignment, size_t size) {
  XnnRegion* r = g_region;
  if (r == nullptr) return nullptr;
  ++r->allocations;
  const uint64_t align = alignment > kHeader ? alignment : kHeader;
  const uint64_t start = (reinterpret_cast<uintptr_t>(r->base) + r->used + kHeader + align - 1) / align * align -
                         reinterpret_cast<uintptr_t>(r->base);
  if (start + size > r->size) return nullptr;
  std::memcpy(r->base + start - sizeof(uint64_t), &size, sizeof(uint64_t));
  r->used = start + size;
  return r->base + start;
}
void* region_allocate(void* ctx, size_t size) { return region_alloc(ctx, kHeader, size); }
void* region_reallocate(void* ctx, void* p, size_t size) {
  void* q = region_alloc(ctx, kHeader, size);
  if (q != nullptr && p != nullptr) {
    uint64_t old = 0;
    std::memcpy(&old, static_cast<uint8_t*>(p) - sizeof(uint64_t), sizeof(uint64_t));
    std::memcpy(q, p, old < size ? old : size);
  }
  return q;
}
void region_free(void*, void*) {}

const xnn_allocator kAllocator = {nullptr, region_allocate, region_reallocate, region_free, region_alloc, region_free};

Status init_locked() {
  if (g_initialized) return Status();
  const xnn_status s = xnn_initialize(&kAllocator);
  if (s != xnn_status_success) {
    return Status::error(Code::kUnsupported, "xnnpack: xnn_initialize failed (status %d): this CPU is not supported",
                         static_cast<int>(s));
  }
  g_initialized = true;
  return Status();
}

}  // namespace

Status xnn_dense_create(const DenseMatrix& m, size_t x_stride, size_t y_stride, uint32_t blocks, uint8_t* region,
                        uint64_t bytes, uint64_t* used, void** ops) {
  std::lock_guard<std::mutex> lock(g_mu);
  HEADWAY_RETURN_IF_ERROR(init_locked());
  const uint32_t out = m.w.rows;
  const uint32_t in = m.w.cols;
  if (blocks == 0 || blocks > kXnnMaxBlocks) {
    return Status::error(Code::kInvalidArgument, "xnnpack: %u operator blocks, expected 1..%u", blocks, kXnnMaxBlocks);
  }
  const bool widen_w = m.w.dtype != DType::kF32;
  const bool widen_b = m.bias.present() && m.bias.dtype != DType::kF32;
  const uint32_t max_rows = (out + blocks - 1) / blocks;
  // Init only: f16/bf16 sources widen one block at a time (XNNPACK 2022 packs f32 here).
  float* tmp_w = widen_w ? static_cast<float*>(std::malloc(uint64_t{max_rows} * in * 4)) : nullptr;
  float* tmp_b = widen_b ? static_cast<float*>(std::malloc(uint64_t{max_rows} * 4)) : nullptr;
  if ((widen_w && tmp_w == nullptr) || (widen_b && tmp_b == nullptr)) {
    std::free(tmp_w);
    std::free(tmp_b);
    return Status::error(Code::kOutOfRange, "xnnpack: cannot allocate %llu bytes to widen a weight block at init",
                         static_cast<unsigned long long>(uint64_t{max_rows} * in * 4));
  }
  XnnRegion r;
  r.base = region;
  r.size = bytes;
  r.used = *used;
  g_region = &r;
  Status st;
  for (uint32_t b = 0; b < blocks && st.ok(); ++b) {
    const uint32_t r0 = uint32_t(uint64_t{out} * b / blocks);
    const uint32_t r1 = uint32_t(uint64_t{out} * (b + 1) / blocks);
    const float* w = static_cast<const float*>(m.w.data) + (widen_w ? 0 : uint64_t{r0} * in);
    if (widen_w) {
      for (uint64_t i = 0; i < uint64_t{r1 - r0} * in; ++i) tmp_w[i] = tensor_at(m.w, uint64_t{r0} * in + i);
      w = tmp_w;
    }
    const float* bias = nullptr;
    if (m.bias.present()) {
      bias = static_cast<const float*>(m.bias.data) + r0;
      if (widen_b) {
        for (uint32_t i = 0; i < r1 - r0; ++i) tmp_b[i] = tensor_at(m.bias, r0 + i);
        bias = tmp_b;
      }
    }
    xnn_operator_t op = nullptr;
    const uint64_t before = r.allocations;
    const xnn_status s =
        xnn_create_fully_connected_nc_f32(in, r1 - r0, x_stride, y_stride, w, bias, -INFINITY, INFINITY, 0, &op);
    if (s != xnn_status_success) {
      st = Status::error(Code::kOutOfRange,
                         "xnnpack: creating the fully-connected operator [%u, %u] (block %u of %u) failed (status "
                         "%d); the arena's packed region has %llu of %llu bytes left",
                         r1 - r0, in, b, blocks, static_cast<int>(s), static_cast<unsigned long long>(r.size - r.used),
                         static_cast<unsigned long long>(r.size));
    } else if (r.allocations == before) {
      xnn_delete_operator(op);  // heap memory of the foreign allocator
      st = Status::error(Code::kFailedPrecondition,
                         "xnnpack: was initialized elsewhere in this process with another allocator; headway cannot "
                         "keep its packed weights in the arena");
    } else {
      ops[b] = op;
    }
  }
  g_region = nullptr;
  *used = r.used;
  std::free(tmp_w);
  std::free(tmp_b);
  if (!st.ok()) xnn_dense_delete(ops, blocks);
  return st;
}

namespace {

struct XnnCall {
  void* const* ops;
  uint32_t blocks;
  uint32_t out;
  const float* x;
  float* y;
  uint32_t t;
  xnn_status status[kXnnMaxBlocks];
};

void xnn_task(void* ctx, size_t b) {
  XnnCall& c = *static_cast<XnnCall*>(ctx);
  const uint32_t r0 = uint32_t(uint64_t{c.out} * b / c.blocks);
  xnn_operator_t op = static_cast<xnn_operator_t>(c.ops[b]);
  xnn_status s = xnn_setup_fully_connected_nc_f32(op, c.t, c.x, c.y + r0, nullptr);
  if (s == xnn_status_success) s = xnn_run_operator(op, nullptr);
  c.status[b] = s;
}

}  // namespace

Status xnn_dense_run(void* const* ops, uint32_t blocks, uint32_t out, const float* x, float* y, uint32_t t,
                     ThreadPool* pool) {
  XnnCall c{ops, blocks, out, x, y, t, {}};
  ThreadPool::run_on(pool, blocks, xnn_task, &c);
  for (uint32_t b = 0; b < blocks; ++b) {
    if (c.status[b] != xnn_status_success) {
      return Status::error(Code::kInternal,
                           "xnnpack: running the fully-connected operator (block %u) failed (status %d)", b,
                           static_cast<int>(c.status[b]));
    }
  }
  return Status();
}

// xnn_delete_operator would only hand the operator's memory back to the allocator, which owns
// nothing (the arena does); skipping it also keeps a layer that outlives its arena's buffer from
// reading freed memory when it is destroyed.
void xnn_dense_delete(void** ops, uint32_t blocks) {
  for (uint32_t b = 0; b < blocks; ++b) ops[b] = nullptr;
}

}  // namespace headway
