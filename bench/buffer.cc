#include "bench/buffer.hpp"

#include <cstdlib>
#include <cstring>

#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace headway::bench {

BenchBuffer::~BenchBuffer() { std::free(data_); }

Status BenchBuffer::allocate(const char* what, size_t bytes, const void* pattern, size_t pattern_bytes) {
  std::free(data_);
  data_ = nullptr;
  size_ = 0;
  if (pattern == nullptr || pattern_bytes == 0 || pattern_bytes % 64 != 0) {
    return Status::error(Code::kInvalidArgument, "bench buffer %s: the fill pattern is %zu bytes, not a multiple of 64",
                         what, pattern_bytes);
  }
  const size_t rounded = (bytes + kBenchBufferAlignment - 1) / kBenchBufferAlignment * kBenchBufferAlignment;
  data_ = static_cast<uint8_t*>(std::aligned_alloc(kBenchBufferAlignment, rounded ? rounded : kBenchBufferAlignment));
  if (data_ == nullptr) {
    return Status::error(Code::kInternal, "bench buffer %s: cannot allocate %zu bytes", what, rounded);
  }
  size_ = rounded ? rounded : kBenchBufferAlignment;
#if defined(MADV_HUGEPAGE)
  madvise(data_, size_, MADV_HUGEPAGE);  // a hint: without huge pages the fill is only slower
#endif
  for (size_t at = 0; at < size_; at += pattern_bytes) {
    std::memcpy(data_ + at, pattern, size_ - at < pattern_bytes ? size_ - at : pattern_bytes);
  }
  return Status();
}

}  // namespace headway::bench
