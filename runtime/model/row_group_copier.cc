#include "runtime/model/row_group_copier.hpp"

#include <cstdlib>

#include "headway/detail/row_groups.hpp"
#include "simd/matmul/matmul.h"

#if HEADWAY_MATMUL_ROW_GROUPS  // hosted x86 alone: bare metal has no aligned_alloc, and allocates nothing
#include "headway/detail/huge_pages.hpp"
#endif

#if defined(__linux__)
#include <sys/mman.h>
#include <unistd.h>
#endif

namespace headway {

namespace {

constexpr uint64_t kAlign = 64;
constexpr uint64_t aligned(uint64_t n) { return (n + kAlign - 1) / kAlign * kAlign; }

// Whether the decode step reads t faster in row groups (a group's worth of rows at least).
bool pays(const TensorRef& t) {
  return t.present() && !t.row_groups && t.rows >= row_groups::kRows && row_groups::holds(t.dtype) &&
         simd::matmul_reads_row_groups(t.dtype);
}

// Whether layer l's Q/K/V/O run through the Highway kernels as lent (not MLA's or a linear layer's
// sliced matrices, not XNNPACK's packed copies).
bool attention_pays(const Plan& p, uint32_t l) {
  return !p.config.layer_is_linear(l) && !p.config.is_mla() && p.options.projection == Projection::kHighway;
}

// The source's whole pages in [data, data + bytes) offered back: a mapped file's are read again
// from the file if touched, other memory keeps its contents (MADV_PAGEOUT never discards data).
void offer_pages(const void* data, uint64_t bytes) {
#if defined(__linux__) && defined(MADV_PAGEOUT)
  const uintptr_t page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  const uintptr_t begin = (reinterpret_cast<uintptr_t>(data) + page - 1) / page * page;
  const uintptr_t end = (reinterpret_cast<uintptr_t>(data) + bytes) / page * page;
  if (end > begin) (void)madvise(reinterpret_cast<void*>(begin), end - begin, MADV_PAGEOUT);
#else
  (void)data;
  (void)bytes;
#endif
}

}  // namespace

void BorrowedMatrices::FreeBytes::operator()(uint8_t* p) const {
#if HEADWAY_MATMUL_ROW_GROUPS
  std::free(p);
#else
  (void)p;
#endif
}

Status RowGroupCopier::start(const char* who, const Plan& p, const ModelWeightsSource& source,
                             BorrowedMatrices* borrowed) {
  const Config& c = p.config;
  uint64_t bytes = 0;
  const auto count = [&bytes](const TensorRef& t) {
    if (pays(t)) bytes += aligned(t.bytes());
  };
  for (const TensorRef& t : borrowed->whole) count(t);
  for (uint32_t l = 0; l < c.n_layers; ++l) {
    for (const TensorRef& t : borrowed->layer[l]) count(t);
    if (!attention_pays(p, l)) continue;
    const Result<LayerWeights> w = source.attention(source.ctx, l);
    if (!w.ok()) return w.status();
    for (const TensorRef* t : {&w.value().wq, &w.value().wk, &w.value().wv, &w.value().wo}) count(*t);
  }
  if (bytes == 0) return Status();
#if HEADWAY_MATMUL_ROW_GROUPS
  uint64_t allocated = 0;
  uint8_t* region = static_cast<uint8_t*>(detail::allocate_huge_pages(bytes, &allocated));
#else
  uint8_t* region = nullptr;  // unreachable: no matrix pays where no target reads row groups
#endif
  if (region == nullptr) {
    return Status::error(Code::kInternal, "%s: out of memory for the matrices in row groups (%llu bytes)", who,
                         static_cast<unsigned long long>(bytes));
  }
  borrowed->row_grouped.reset(region);
  borrowed->row_grouped_bytes = bytes;
  next_ = region;
  for (TensorRef& t : borrowed->whole) copy(&t);
  for (uint32_t l = 0; l < c.n_layers; ++l) {
    for (TensorRef& t : borrowed->layer[l]) copy(&t);
  }
  return Status();
}

void RowGroupCopier::copy_attention(const Plan& p, uint32_t layer, LayerWeights* w) {
  if (next_ == nullptr || !attention_pays(p, layer)) return;
  for (TensorRef* t : {&w->wq, &w->wk, &w->wv, &w->wo}) copy(t);
}

void RowGroupCopier::copy(TensorRef* t) {
  if (!pays(*t)) return;
  row_groups::group(t->dtype, static_cast<const uint8_t*>(t->data), next_, t->rows, t->cols);
  offer_pages(t->data, t->bytes());
  t->data = next_;
  t->row_groups = true;
  next_ += aligned(t->bytes());
}

}  // namespace headway
