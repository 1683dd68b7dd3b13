// Replacements of operator new and delete that count while a NewCount is alive (new_counter.hpp).
#include "tests/gpu/new_counter.hpp"

#include <atomic>
#include <cstddef>
#include <cstdlib>
#include <new>

namespace {
std::atomic<bool> g_counting{false};
std::atomic<long> g_news{0};
void* counted_new(size_t n, size_t align) {
  if (g_counting.load(std::memory_order_relaxed)) g_news.fetch_add(1, std::memory_order_relaxed);
  if (n == 0) n = 1;
  void* p =
      align > alignof(std::max_align_t) ? std::aligned_alloc(align, (n + align - 1) / align * align) : std::malloc(n);
  if (p == nullptr) std::abort();
  return p;
}
}  // namespace

namespace headway {
namespace test {
NewCount::NewCount() {
  g_news = 0;
  g_counting = true;
}
NewCount::~NewCount() { g_counting = false; }
long NewCount::stop() {
  g_counting = false;
  return g_news.load();
}
}  // namespace test
}  // namespace headway

// Every form, so that memory from any operator new reaches free() (libLLVM, which lavapipe
// loads, uses the nothrow forms).
void* operator new(size_t n) { return counted_new(n, 0); }
void* operator new[](size_t n) { return counted_new(n, 0); }
void* operator new(size_t n, const std::nothrow_t&) noexcept { return counted_new(n, 0); }
void* operator new[](size_t n, const std::nothrow_t&) noexcept { return counted_new(n, 0); }
void* operator new(size_t n, std::align_val_t a) { return counted_new(n, static_cast<size_t>(a)); }
void* operator new[](size_t n, std::align_val_t a) { return counted_new(n, static_cast<size_t>(a)); }
void* operator new(size_t n, std::align_val_t a, const std::nothrow_t&) noexcept {
  return counted_new(n, static_cast<size_t>(a));
}
void* operator new[](size_t n, std::align_val_t a, const std::nothrow_t&) noexcept {
  return counted_new(n, static_cast<size_t>(a));
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, size_t) noexcept { std::free(p); }
void operator delete[](void* p, size_t) noexcept { std::free(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, size_t, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, size_t, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p, std::align_val_t, const std::nothrow_t&) noexcept { std::free(p); }
