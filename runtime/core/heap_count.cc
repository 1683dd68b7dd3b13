// The headway_heap_count library: replacements of the allocation functions that count while a
// HeapCount is alive (headway/tools/heap_count.hpp), for the binaries that opt in by linking it. The
// replacements and the counter query share this one object file, so a binary that asks for
// the count gets the counting functions with it from the static library.
#include "headway/tools/heap_count.hpp"

#include <atomic>
#include <cerrno>
#include <cstddef>
#include <cstdlib>
#include <new>

namespace {
constinit std::atomic<bool> g_counting{false};
constinit std::atomic<long> g_allocations{0};
void note_allocation() {
  if (g_counting.load(std::memory_order_relaxed)) g_allocations.fetch_add(1, std::memory_order_relaxed);
}
}  // namespace

#if !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
extern "C" {
void* __libc_malloc(size_t);
void* __libc_calloc(size_t, size_t);
void* __libc_realloc(void*, size_t);
void* __libc_memalign(size_t, size_t);
void __libc_free(void*);

void* malloc(size_t n) {
  note_allocation();
  return __libc_malloc(n);
}
void* calloc(size_t n, size_t size) {
  note_allocation();
  return __libc_calloc(n, size);
}
void* realloc(void* p, size_t n) {
  note_allocation();
  return __libc_realloc(p, n);
}
void* aligned_alloc(size_t alignment, size_t n) {
  note_allocation();
  return __libc_memalign(alignment, n);
}
void* memalign(size_t alignment, size_t n) {
  note_allocation();
  return __libc_memalign(alignment, n);
}
int posix_memalign(void** out, size_t alignment, size_t n) {
  note_allocation();
  if (alignment < sizeof(void*) || (alignment & (alignment - 1)) != 0) return EINVAL;
  void* p = __libc_memalign(alignment, n);
  if (p == nullptr) return ENOMEM;
  *out = p;
  return 0;
}
void free(void* p) {
  if (p != nullptr) note_allocation();
  __libc_free(p);
}
}  // extern "C"
#endif

namespace {
void* counted_new(size_t n, size_t alignment) {
  note_allocation();
  void* p = nullptr;
  if (alignment <= alignof(std::max_align_t)) p = std::malloc(n ? n : 1);
  else if (posix_memalign(&p, alignment, n ? n : 1) != 0) p = nullptr;
  if (p == nullptr) std::abort();  // the binaries that count have no use for bad_alloc
  return p;
}
void counted_delete(void* p) {
  if (p != nullptr) note_allocation();
  std::free(p);
}
}  // namespace

void* operator new(size_t n) { return counted_new(n, 0); }
void* operator new[](size_t n) { return counted_new(n, 0); }
void* operator new(size_t n, std::align_val_t a) { return counted_new(n, static_cast<size_t>(a)); }
void* operator new[](size_t n, std::align_val_t a) { return counted_new(n, static_cast<size_t>(a)); }
void* operator new(size_t n, const std::nothrow_t&) noexcept { return counted_new(n, 0); }
void* operator new[](size_t n, const std::nothrow_t&) noexcept { return counted_new(n, 0); }
void operator delete(void* p) noexcept { counted_delete(p); }
void operator delete[](void* p) noexcept { counted_delete(p); }
void operator delete(void* p, size_t) noexcept { counted_delete(p); }
void operator delete[](void* p, size_t) noexcept { counted_delete(p); }
void operator delete(void* p, std::align_val_t) noexcept { counted_delete(p); }
void operator delete[](void* p, std::align_val_t) noexcept { counted_delete(p); }
void operator delete(void* p, size_t, std::align_val_t) noexcept { counted_delete(p); }
void operator delete[](void* p, size_t, std::align_val_t) noexcept { counted_delete(p); }

namespace headway {

HeapCount::HeapCount() {
  g_allocations = 0;
  g_counting = true;
}
HeapCount::~HeapCount() { g_counting = false; }
long HeapCount::stop() {
  g_counting = false;
  return g_allocations.load();
}

}  // namespace headway
