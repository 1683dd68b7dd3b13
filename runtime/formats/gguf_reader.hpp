// GGUF's key-value section, walked with every read bounds-checked.
//
// Layout (versions 2 and 3, little-endian):
//   "GGUF" | u32 version | u64 tensor_count | u64 kv_count | kv_count × kv
//   kv     = string key | u32 type | value
//   string = u64 length | length bytes (no NUL)
//   array  = u32 element type | u64 count | count × element (arrays may nest)
//   then tensor_count × tensor_info, padding to the alignment, the data section:
//   tensor_info = string name | u32 n_dims | n_dims × u64 ne | u32 ggml type | u64 offset
//   ne[0] varies fastest (ne = [in, out] is row-major [out, in]); offset is relative to the
//   data section, which starts at the first multiple of general.alignment (default 32) after
//   the last tensor_info, and is itself a multiple of it.
//
// Every read is checked against the bytes present before it happens, and every count against
// the bytes that could hold it, so a length of 2^63 is a DataLoss error naming its key rather
// than an overflow or a huge allocation. Nothing here allocates: values are located, not copied.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "headway/config.hpp"
#include "headway/status.hpp"

namespace headway::formats::gguf {

enum ValueType : uint32_t {
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
  kTypeCount = 13,
};

const char* type_name(uint32_t type);  // "u32", "string", ...; "unknown" past kF64
uint64_t fixed_size(uint32_t type);    // bytes of one value; 0 for string, array and unknown

// Counts headway stores are below 2^31 (uint32_t fields, printable as int).
inline constexpr uint64_t kMaxCount = 0x7fffffffu;

inline uint64_t load_le(const uint8_t* p, int bytes) {
  uint64_t v = 0;
  for (int i = bytes - 1; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

// A key or string made printable for messages: at most 63 bytes, anything outside ASCII
// 0x20..0x7e as '?'.
struct KeyText {
  char text[64];
  KeyText(const uint8_t* key, uint64_t len) {
    const uint64_t n = len < sizeof(text) - 1 ? len : sizeof(text) - 1;
    for (uint64_t i = 0; i < n; ++i) {
      text[i] = key[i] >= 0x20 && key[i] < 0x7f ? static_cast<char>(key[i]) : '?';
    }
    text[n] = '\0';
  }
};

// One kv pair, located and bounds-checked: the value occupies [value_pos, value_end).
struct Kv {
  const uint8_t* key = nullptr;
  uint64_t key_len = 0;
  uint32_t type = 0;
  size_t value_pos = 0;
  size_t value_end = 0;

  bool present() const { return key != nullptr; }
  bool is(const char* name) const { return key_len == std::strlen(name) && std::memcmp(key, name, key_len) == 0; }
};

// The walk state. `size` bytes are present; the file has `file_size` (== size for a buffer in
// memory). A read past `size` that the file could satisfy sets `needed`, so that a loader can
// read more and walk again; a read past `file_size` is corruption.
struct Reader {
  const uint8_t* data;
  size_t size;
  uint64_t file_size;
  const char* source;  // the file name in messages
  size_t pos = 0;
  uint64_t needed = 0;
  uint64_t tensor_count = 0;  // set by read_header

  uint64_t file_left() const { return file_size - pos; }
  // Checks that `n` bytes can be read at pos; `what` and `key` (empty: the header) name them.
  Status require(uint64_t n, const char* what, const char* key);
  // Reads a little-endian integer of `bytes` bytes; require() first.
  uint64_t take(int bytes) {
    const uint64_t v = load_le(data + pos, bytes);
    pos += static_cast<size_t>(bytes);
    return v;
  }
};

// Checks magic and version and reads the counts (tensor_count into r), leaving pos at the first
// kv pair.
Status read_header(Reader& r, uint64_t* kv_count);

// Reads kv pair `index` of `count` at pos and skips its value, checking every length in it.
Status next_kv(Reader& r, uint64_t index, uint64_t count, Kv* kv);

// Walks every kv pair from the start and calls visit(const Kv&) -> Status on each.
template <class Visit>
Status for_each_kv(Reader& r, Visit&& visit) {
  r.pos = 0;
  uint64_t count = 0;
  HEADWAY_RETURN_IF_ERROR(read_header(r, &count));
  for (uint64_t i = 0; i < count; ++i) {
    Kv kv;
    HEADWAY_RETURN_IF_ERROR(next_kv(r, i, count, &kv));
    HEADWAY_RETURN_IF_ERROR(visit(kv));
  }
  return Status();
}

// Typed reads of a located value; a value of another type is an error naming the key.
// A count in [min_value, 2^31); an array of counts (per-layer head counts) when all are equal.
Status read_count(const Reader& r, const Kv& kv, uint32_t min_value, uint32_t* out);
// Layer `layer`'s count of a key that is one count for all n layers or an array of n, one a layer
// (Gemma 4's attention.head_count_kv).
Status read_count_at(const Reader& r, const Kv& kv, uint32_t layer, uint32_t n, uint32_t min_value, uint32_t* out);
// f32, f64 or any integer type; finite and > 0 (>= 0 with allow_zero).
Status read_real(const Reader& r, const Kv& kv, bool allow_zero, float* out);
Status read_bool(const Reader& r, const Kv& kv, bool* out);
// An array of exactly n bools (n <= kMaxConfigLayers), one per layer, into out's bits.
Status read_bools(const Reader& r, const Kv& kv, uint32_t n, LayerBits* out);
// *text points into the data (not NUL-terminated), *len is its length.
Status read_string(const Reader& r, const Kv& kv, const uint8_t** text, uint64_t* len);

// ggml's tensor types as GGUF stores them (the ones headway maps; ggml_type_name knows more).
enum GgmlType : uint32_t { kGgmlF32 = 0, kGgmlF16 = 1, kGgmlBF16 = 30 };
const char* ggml_type_name(uint32_t type);  // "f32", "q4_K", ...; "unknown" when not a ggml type

inline constexpr uint32_t kMaxDims = 4;  // GGML_MAX_DIMS

// One tensor_info, located and bounds-checked (not yet against the data section).
struct TensorInfo {
  const uint8_t* name = nullptr;
  uint64_t name_len = 0;
  uint32_t n_dims = 0;
  uint64_t ne[kMaxDims] = {1, 1, 1, 1};  // dims past n_dims are 1
  uint32_t type = 0;
  uint64_t offset = 0;  // relative to the data section
};

// Reads tensor_info `index` of `count` at pos. n_dims must be 1..4.
Status next_tensor_info(Reader& r, uint64_t index, uint64_t count, TensorInfo* info);

}  // namespace headway::formats::gguf
