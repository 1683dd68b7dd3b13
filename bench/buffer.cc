#include "bench/buffer.hpp"

#include <cstdlib>
#include <cstring>

#include "headway/detail/huge_pages.hpp"

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
  uint64_t rounded = 0;
  data_ = static_cast<uint8_t*>(detail::allocate_huge_pages(bytes, &rounded));
  if (data_ == nullptr) {
    return Status::error(Code::kInternal, "bench buffer %s: cannot allocate %llu bytes", what,
                         static_cast<unsigned long long>(rounded));
  }
  size_ = static_cast<size_t>(rounded);
  for (size_t at = 0; at < size_; at += pattern_bytes) {
    std::memcpy(data_ + at, pattern, size_ - at < pattern_bytes ? size_ - at : pattern_bytes);
  }
  return Status();
}

}  // namespace headway::bench
