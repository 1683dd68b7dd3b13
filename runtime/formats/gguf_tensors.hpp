// GGUF tensors, memory-mapped: the tensor_info table after the kv section (layout in
// gguf_reader.hpp), checked against the file, and f32/f16/bf16 tensors handed out as borrowed
// views. Part of the hosted tools layer.
//
// open()/parse() check the structure: general.alignment (a power of two; default 32), every
// tensor_info inside the file, n_dims 1..4, no duplicate names, offsets multiples of the
// alignment, and the data of each f32/f16/bf16 tensor inside the file and overlapping no other.
// find() of a tensor of another ggml type (q4_K, q8_0, ...) is an error naming the tensor and
// its type, so a quantized tensor headway does not read blocks nothing else.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "headway/config.hpp"
#include "headway/status.hpp"
#include "headway/weights.hpp"
#include "runtime/formats/gguf_reader.hpp"
#include "runtime/formats/mapped_file.hpp"

namespace headway::formats {

class GgufFile {
 public:
  static constexpr uint32_t kDefaultAlignment = 32;

  struct Entry {
    std::string name;
    uint32_t type = 0;  // ggml type
    uint32_t n_dims = 0;
    uint64_t ne[gguf::kMaxDims] = {1, 1, 1, 1};
    uint64_t begin = 0;  // absolute file offset of the data
    uint64_t bytes = 0;  // 0 for types headway does not size (quantized)
  };

  // Maps `path` and reads its tensor table.
  Status open(const char* path);
  // Reads `size` bytes at `data` (borrowed: they must outlive this object).
  Status parse(const uint8_t* data, uint64_t size, const char* source);

  // The tensor `name` as a 2-D view in HF layout: ne = [cols, rows] (trailing dims of 1 allowed);
  // 1-D ne = [n] -> rows 1. *rank (optional) gets n_dims.
  Result<TensorRef> find(const char* name, uint32_t* rank = nullptr) const;
  const Entry* entry(const char* name) const;

  // The attention config from the kv section (parse_gguf_metadata over the same bytes).
  Result<Config> config() const;

  uint32_t alignment() const { return alignment_; }
  uint64_t data_start() const { return data_start_; }
  const std::vector<Entry>& entries() const { return entries_; }  // sorted by name
  const char* source() const { return source_.c_str(); }

 private:
  MappedFile file_;
  const uint8_t* data_ = nullptr;
  uint64_t size_ = 0;
  std::string source_;
  uint32_t alignment_ = kDefaultAlignment;
  uint64_t data_start_ = 0;
  std::vector<Entry> entries_;
};

}  // namespace headway::formats
