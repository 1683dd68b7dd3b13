// A large buffer for benchmarks: 2 MiB aligned, asking Linux for transparent huge pages (a
// first touch of 4 KiB pages can cost ~16 µs each on a virtual machine: 4 s for 1 GiB; huge pages
// cut that several times), and touched once at allocation, so no page fault lands in a timing.
#pragma once

#include <cstddef>
#include <cstdint>

#include "headway/status.hpp"

namespace headway::bench {

class BenchBuffer {
 public:
  BenchBuffer() = default;
  ~BenchBuffer();
  BenchBuffer(const BenchBuffer&) = delete;
  BenchBuffer& operator=(const BenchBuffer&) = delete;

  // Allocates `bytes` (rounded up to 2 MiB) and fills it by repeating `pattern` (pattern_bytes,
  // a multiple of 64), which also touches every page. `what` names the buffer in the error.
  Status allocate(const char* what, size_t bytes, const void* pattern, size_t pattern_bytes);

  uint8_t* data() const { return data_; }
  size_t size() const { return size_; }

 private:
  uint8_t* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace headway::bench
