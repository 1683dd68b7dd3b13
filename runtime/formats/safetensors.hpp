// safetensors files (Hugging Face's weight format), memory-mapped: tensors are borrowed from the
// mapping, never copied.
//
// Layout: u64 N (little-endian) | N bytes of JSON header | data. The header is one object:
//   {"__metadata__": {...}, "NAME": {"dtype": "F32", "shape": [r, c], "data_offsets": [b, e]}, ...}
// where [b, e) is relative to the first byte after the header, and row-major (C order).
//
// open()/parse() check every entry against the file before anything is handed out: the header
// length (at most 100 MiB, inside the file), JSON syntax, duplicate names, the dtype (one of the
// format's 15), the shape, offsets in range, e - b == elements × dtype size, and no two tensors
// overlapping. What headway cannot use is an error only when that tensor is asked for: find() of
// a tensor with dtype other than F32/F16/BF16, or of rank above 2, says so with its name. Every
// message names the file, the tensor and the value at fault.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "headway/status.hpp"
#include "headway/weights.hpp"
#include "runtime/formats/mapped_file.hpp"

namespace headway::formats {

class SafetensorsFile {
 public:
  static constexpr uint64_t kMaxHeaderBytes = uint64_t{100} << 20;
  static constexpr uint32_t kMaxRank = 8;

  struct Entry {
    std::string name;
    const char* dtype_name = "";  // "F32", "I64", ... (a static string)
    uint32_t dtype_bytes = 0;
    uint32_t rank = 0;
    uint64_t shape[kMaxRank] = {};
    uint64_t begin = 0;  // absolute file offsets of the data: [begin, end)
    uint64_t end = 0;
  };

  // Maps `path` and parses its header.
  Status open(const char* path);
  // Parses `size` bytes at `data` (borrowed: they must outlive this object); `source` names them
  // in messages.
  Status parse(const uint8_t* data, uint64_t size, const char* source);

  // The tensor `name` as a 2-D view: rank 2 [r, c] -> rows r, cols c; rank 1 [n] and rank 0 ->
  // rows 1. *rank (optional) gets the tensor's rank, for messages about shapes.
  Result<TensorRef> find(const char* name, uint32_t* rank = nullptr) const;
  const Entry* entry(const char* name) const;  // nullptr when absent

  size_t tensor_count() const { return entries_.size(); }
  const std::vector<Entry>& entries() const { return entries_; }  // sorted by name
  const char* source() const { return source_.c_str(); }

 private:
  MappedFile file_;
  const uint8_t* data_ = nullptr;
  uint64_t size_ = 0;
  std::string source_;
  std::vector<Entry> entries_;
};

// "[64, 96]", "[5]", "[]": a shape for messages.
void format_shape(const uint64_t* shape, uint32_t rank, char* out, size_t out_size);

// A sharded checkpoint's model.safetensors.index.json, as transformers' save_pretrained writes it:
//   {"metadata": {"total_size": ...}, "weight_map": {"NAME": "model-00001-of-00002.safetensors", ...}}
// Each shard is a file name relative to the index's folder.
struct SafetensorsIndex {
  std::vector<std::string> shards;  // each file once, in the order first named
  struct Tensor {
    std::string name;
    uint32_t shard = 0;  // into shards
  };
  std::vector<Tensor> tensors;  // sorted by name
};

// Parses an index's text. Errors (kDataLoss) name `source` and what is wrong: not JSON, no
// weight_map object, an empty one, a shard that is not a relative file name (a string, not empty,
// not starting with '/').
Result<SafetensorsIndex> parse_safetensors_index(const char* text, size_t size, const char* source);

}  // namespace headway::formats
