// GGUF tensors, memory-mapped: the tensor_info table after the kv section (layout in
// gguf_reader.hpp), checked against the file, tensors of the types headway reads in place (every
// DType that dtype_holds_weights admits: every type of headway/ggml_types.hpp) handed out as
// borrowed views, or dequantized into a caller's f32 rows. Part of the hosted tools layer.
//
// open()/parse() check the structure: general.alignment (a power of two; default 32), every
// tensor_info inside the file, n_dims 1..4, no duplicate names, offsets multiples of the
// alignment, a type id that ggml has, and for every type of the table: rows (ne[0]) of whole
// blocks, and the rows · blocks · block bytes of the tensor inside the file and overlapping no
// other tensor. A ggml type headway does not read (iq2_xxs, q8_K, i32, ...) is accepted unsized,
// so that such a file still gives its config; reading that tensor is the error.
// find() of a tensor of another ggml type (iq2_xxs, i32, ...) is an error naming it and its type.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "headway/config.hpp"
#include "headway/ggml_types.hpp"
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
    uint64_t bytes = 0;  // 0 for types outside headway/ggml_types.hpp's table (unsized)
  };

  // A tensor as the file stores it, any type of the table: rows = ne[1] · ne[2] · ne[3] rows of
  // row_values = ne[0] values, row_bytes bytes each, back to back from data (borrowed).
  struct Stored {
    const GgmlTypeInfo* type = nullptr;
    const uint8_t* data = nullptr;
    uint64_t row_values = 0;
    uint64_t rows = 0;
    uint64_t row_bytes = 0;
  };

  // Maps `path` and reads its tensor table.
  Status open(const char* path);
  // Reads `size` bytes at `data` (borrowed: they must outlive this object).
  Status parse(const uint8_t* data, uint64_t size, const char* source);

  // The tensor `name` as a 2-D view in HF layout: ne = [cols, rows] (trailing dims of 1 allowed);
  // 1-D ne = [n] -> rows 1. *rank (optional) gets n_dims.
  Result<TensorRef> find(const char* name, uint32_t* rank = nullptr) const;
  const Entry* entry(const char* name) const;

  // The tensor `name` of any type of the table; a type outside it is an error naming the tensor
  // and its type.
  Result<Stored> stored(const char* name) const;
  // Dequantizes rows [first_row, first_row + row_count) of tensor `name` into out, row after row
  // (out_values floats there: at least row_count · ne[0]), bit-exact with ggml's dequantizers.
  // On error nothing is written.
  Status dequantize_rows(const char* name, uint64_t first_row, uint64_t row_count, float* out,
                         uint64_t out_values) const;

  // The attention config from the kv section (parse_gguf_metadata over the same bytes).
  Result<Config> config() const;
  // The string value of `key` (general.architecture, tokenizer.chat_template, ...); kNotFound
  // naming the file and the key when it has none.
  Result<std::string> text(const char* key) const;

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
