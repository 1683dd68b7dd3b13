// GgufWriter: GGUF metadata (little-endian) and, optionally, tensors written the way llama.cpp's
// gguf writer lays them out, for the tests of the GGUF readers; raw pieces for corrupt files.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace headway::test {

namespace gguf_types {  // GGUF's value types
enum : uint32_t {
  kU8 = 0,
  kI8 = 1,
  kU16 = 2,
  kI16 = 3,
  kU32 = 4,
  kI32 = 5,
  kF32 = 6,
  kBool = 7,
  kString = 8,
  kArray = 9,
  kU64 = 10,
  kI64 = 11,
  kF64 = 12,
};
}  // namespace gguf_types
using namespace gguf_types;

// Writes GGUF (little-endian) the way llama.cpp's gguf writer lays it out: header, kv pairs, then
// the tensor infos, padding to 32 bytes and each tensor's bytes at the next multiple of 32.
class GgufWriter {
 public:
  explicit GgufWriter(uint32_t version = 3) : buf_{'G', 'G', 'U', 'F'} {
    u32(version);
    u64(0);  // tensor_count, patched by bytes()
    kv_count_at_ = buf_.size();
    u64(0);  // kv_count, patched by bytes()
  }

  GgufWriter& str(const char* key, const std::string& value) {
    begin(key, kString);
    gguf_string(value);
    return *this;
  }
  GgufWriter& u32kv(const char* key, uint32_t value) {
    begin(key, kU32);
    u32(value);
    return *this;
  }
  GgufWriter& i32kv(const char* key, int32_t value) {
    begin(key, kI32);
    u32(static_cast<uint32_t>(value));
    return *this;
  }
  GgufWriter& u64kv(const char* key, uint64_t value) {
    begin(key, kU64);
    u64(value);
    return *this;
  }
  GgufWriter& f32kv(const char* key, float value) {
    begin(key, kF32);
    uint32_t bits;
    std::memcpy(&bits, &value, 4);
    u32(bits);
    return *this;
  }
  GgufWriter& boolkv(const char* key, bool value) {
    begin(key, kBool);
    buf_.push_back(value ? 1 : 0);
    return *this;
  }
  GgufWriter& u32_array(const char* key, const std::vector<uint32_t>& values) {
    begin(key, kArray);
    u32(kU32);
    u64(values.size());
    for (uint32_t v : values) u32(v);
    return *this;
  }
  GgufWriter& bool_array(const char* key, const std::vector<bool>& values) {
    begin(key, kArray);
    u32(kBool);
    u64(values.size());
    for (bool v : values) buf_.push_back(v ? 1 : 0);
    return *this;
  }
  GgufWriter& f32_array(const char* key, size_t count) {
    begin(key, kArray);
    u32(kF32);
    u64(count);
    for (size_t i = 0; i < count; ++i) u32(0x3f800000u);
    return *this;
  }
  GgufWriter& string_array(const char* key, const std::vector<std::string>& values) {
    begin(key, kArray);
    u32(kString);
    u64(values.size());
    for (const std::string& v : values) gguf_string(v);
    return *this;
  }
  // Raw pieces, for corrupt files.
  GgufWriter& begin(const char* key, uint32_t type) {
    gguf_string(key);
    u32(type);
    ++kv_count_;
    return *this;
  }
  GgufWriter& u32(uint32_t v) {
    for (int i = 0; i < 4; ++i) buf_.push_back(static_cast<uint8_t>(v >> (8 * i)));
    return *this;
  }
  GgufWriter& u64(uint64_t v) {
    for (int i = 0; i < 8; ++i) buf_.push_back(static_cast<uint8_t>(v >> (8 * i)));
    return *this;
  }
  GgufWriter& raw(const void* p, size_t n) {
    const auto* b = static_cast<const uint8_t*>(p);
    buf_.insert(buf_.end(), b, b + n);
    return *this;
  }
  // A tensor: ne as ggml orders it (ne[0] the row length), a ggml type id and its stored bytes.
  GgufWriter& tensor(const std::string& name, std::vector<uint64_t> ne, uint32_t ggml_type, std::vector<uint8_t> data) {
    tensors_.push_back({name, std::move(ne), ggml_type, std::move(data)});
    return *this;
  }
  void gguf_string(const std::string& s) {
    u64(s.size());
    raw(s.data(), s.size());
  }

  std::vector<uint8_t> bytes(uint64_t kv_count_override = ~uint64_t{0}) const {
    std::vector<uint8_t> out = buf_;
    const uint64_t n = kv_count_override == ~uint64_t{0} ? kv_count_ : kv_count_override;
    for (int i = 0; i < 8; ++i) out[kv_count_at_ + i] = static_cast<uint8_t>(n >> (8 * i));
    if (tensors_.empty()) return out;
    for (int i = 0; i < 8; ++i) out[8 + i] = static_cast<uint8_t>(tensors_.size() >> (8 * i));
    std::vector<uint8_t> data;
    for (const Tensor& t : tensors_) {
      data.resize((data.size() + 31) / 32 * 32);
      append_string(out, t.name);
      append(out, t.ne.size(), 4);
      for (uint64_t d : t.ne) append(out, d, 8);
      append(out, t.type, 4);
      append(out, data.size(), 8);
      data.insert(data.end(), t.data.begin(), t.data.end());
    }
    out.resize((out.size() + 31) / 32 * 32);
    out.insert(out.end(), data.begin(), data.end());
    return out;
  }

 private:
  struct Tensor {
    std::string name;
    std::vector<uint64_t> ne;
    uint32_t type;
    std::vector<uint8_t> data;
  };
  static void append(std::vector<uint8_t>& b, uint64_t v, int n) {
    for (int i = 0; i < n; ++i) b.push_back(static_cast<uint8_t>(v >> (8 * i)));
  }
  static void append_string(std::vector<uint8_t>& b, const std::string& s) {
    append(b, s.size(), 8);
    b.insert(b.end(), s.begin(), s.end());
  }

  std::vector<Tensor> tensors_;
  std::vector<uint8_t> buf_;
  size_t kv_count_at_ = 0;
  uint64_t kv_count_ = 0;
};

}  // namespace headway::test
