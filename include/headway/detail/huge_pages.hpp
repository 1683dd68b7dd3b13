// Memory that a hosted build streams from end to end (the matrices in row groups, a tool's arena,
// the bench's buffers), in 2 MiB transparent huge pages where Linux gives them on request (its
// "madvise" mode): with 4 KiB pages every page of a stream is a TLB miss and a new start for the
// hardware prefetchers, which stop at page ends. The advice comes before the first touch, which
// is when the pages are made. A hint only: where it is refused, or off Linux, the memory is the
// same in small pages. Free it with std::free.
#pragma once

#include <cstdint>
#include <cstdlib>

#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace headway::detail {

inline constexpr uint64_t kHugePageBytes = uint64_t{2} << 20;

// `bytes` (at least 1) rounded up to whole huge pages, at a huge page's alignment; null where the
// allocation fails. *allocated: the rounded size.
inline void* allocate_huge_pages(uint64_t bytes, uint64_t* allocated) {
  const uint64_t rounded = (bytes == 0 ? 1 : bytes + kHugePageBytes - 1) / kHugePageBytes * kHugePageBytes;
  *allocated = rounded;
  void* p = std::aligned_alloc(kHugePageBytes, rounded);
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  if (p != nullptr) (void)madvise(p, rounded, MADV_HUGEPAGE);
#endif
  return p;
}

}  // namespace headway::detail
