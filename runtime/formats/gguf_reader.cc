// The checked walk over GGUF's kv section; layout and guarantees in gguf_reader.hpp.
#include "runtime/formats/gguf_reader.hpp"

namespace headway::formats::gguf {
namespace {

// The smallest encoding of one kv pair: an empty key (8), the type (4), a one-byte value.
constexpr uint64_t kMinKvBytes = 13;
// GGUF keys are at most 65535 bytes by the specification.
constexpr uint64_t kMaxKeyBytes = 65535;
// Arrays of arrays are legal; real files use none. The cap bounds the recursion.
constexpr int kMaxArrayDepth = 4;

// Checks that `count` elements of at least `min_bytes` each fit in the rest of the file: the
// guard that turns a count of 2^63 into an error before any loop or multiplication.
Status check_count(Reader& p, uint64_t count, uint64_t min_bytes, const char* elem, const char* key) {
  if (count <= p.file_left() / min_bytes) return p.require(count * min_bytes, "the elements", key);
  return Status::error(Code::kDataLoss,
                       "%s: key %s holds an array of %llu %s, more than the %llu bytes left in "
                       "the file can hold",
                       p.source, key, static_cast<unsigned long long>(count), elem,
                       static_cast<unsigned long long>(p.file_left()));
}

Status skip_value(Reader& p, uint32_t type, const char* key, int depth);

Status skip_string(Reader& p, const char* key) {
  HEADWAY_RETURN_IF_ERROR(p.require(8, "a string length", key));
  const uint64_t len = p.take(8);
  if (len > p.file_left()) {
    return Status::error(Code::kDataLoss,
                         "%s: key %s has a string of %llu bytes at offset %zu, but only %llu "
                         "bytes are left in the file",
                         p.source, key, static_cast<unsigned long long>(len), p.pos,
                         static_cast<unsigned long long>(p.file_left()));
  }
  HEADWAY_RETURN_IF_ERROR(p.require(len, "a string", key));
  p.pos += static_cast<size_t>(len);
  return Status();
}

// Skips an array without allocating per element: fixed-size elements in one step, strings and
// nested arrays one by one (each consumes at least 8 bytes, so the loop is bounded by the data).
Status skip_array(Reader& p, const char* key, int depth) {
  if (depth >= kMaxArrayDepth) {
    return Status::error(Code::kDataLoss, "%s: key %s nests arrays more than %d deep", p.source, key, kMaxArrayDepth);
  }
  HEADWAY_RETURN_IF_ERROR(p.require(12, "an array header", key));
  const uint32_t elem = static_cast<uint32_t>(p.take(4));
  const uint64_t count = p.take(8);
  if (elem >= kTypeCount) {
    return Status::error(Code::kDataLoss, "%s: key %s is an array of unknown type %u", p.source, key, elem);
  }
  if (const uint64_t size = fixed_size(elem)) {
    HEADWAY_RETURN_IF_ERROR(check_count(p, count, size, type_name(elem), key));
    p.pos += static_cast<size_t>(count * size);
    return Status();
  }
  const bool strings = elem == kString;
  HEADWAY_RETURN_IF_ERROR(check_count(p, count, strings ? 8 : 12, strings ? "strings" : "arrays", key));
  for (uint64_t i = 0; i < count; ++i) HEADWAY_RETURN_IF_ERROR(skip_value(p, elem, key, depth + 1));
  return Status();
}

Status skip_value(Reader& p, uint32_t type, const char* key, int depth) {
  if (const uint64_t size = fixed_size(type)) {
    HEADWAY_RETURN_IF_ERROR(p.require(size, "a value", key));
    p.pos += static_cast<size_t>(size);
    return Status();
  }
  if (type == kString) return skip_string(p, key);
  if (type == kArray) return skip_array(p, key, depth);
  return Status::error(Code::kDataLoss, "%s: key %s has unknown value type %u at offset %zu", p.source, key, type,
                       p.pos - 4);
}

struct Typed {
  const Reader& p;
  const Kv& kv;
  KeyText key;
  Typed(const Reader& parse, const Kv& k) : p(parse), kv(k), key(k.key, k.key_len) {}

  Status wrong_type(const char* expected) const {
    return Status::error(Code::kInvalidArgument, "%s: %s has type %s, expected %s", p.source, key.text,
                         type_name(kv.type), expected);
  }
};

bool is_integer_type(uint32_t t) {
  return t == kU8 || t == kI8 || t == kU16 || t == kI16 || t == kU32 || t == kI32 || t == kU64 || t == kI64;
}
bool is_signed_type(uint32_t t) { return t == kI8 || t == kI16 || t == kI32 || t == kI64; }

// An integer element of type `t` at `at`: its raw bits, and whether a signed value is below 0.
uint64_t integer_at(const uint8_t* at, uint32_t t, bool* negative) {
  const int bytes = static_cast<int>(fixed_size(t));
  const uint64_t v = load_le(at, bytes);
  *negative = is_signed_type(t) && ((v >> (bytes * 8 - 1)) & 1) != 0;
  return v;
}

// The value of negative raw bits of a signed type, for messages.
long long sign_extended(uint64_t v, uint32_t t) {
  const int bits = static_cast<int>(fixed_size(t) * 8);
  return bits == 64 ? static_cast<long long>(v) : static_cast<long long>(v) - (1ll << bits);
}

}  // namespace

const char* type_name(uint32_t t) {
  static constexpr const char* kNames[kTypeCount] = {"u8",   "i8",     "u16",   "i16", "u32", "i32", "f32",
                                                     "bool", "string", "array", "u64", "i64", "f64"};
  return t < kTypeCount ? kNames[t] : "unknown";
}

// Bytes of one value of a fixed-size type; 0 for string, array and unknown types.
uint64_t fixed_size(uint32_t t) {
  switch (t) {
    case kU8:
    case kI8:
    case kBool: return 1;
    case kU16:
    case kI16: return 2;
    case kU32:
    case kI32:
    case kF32: return 4;
    case kU64:
    case kI64:
    case kF64: return 8;
    default: return 0;
  }
}

Status Reader::require(uint64_t n, const char* what, const char* key) {
  if (n <= size - pos) return Status();
  if (n <= file_left()) needed = pos + n;
  return Status::error(Code::kDataLoss,
                       "%s: truncated in %s%s: %s needs %llu bytes at offset %zu, the data ends "
                       "at %llu",
                       source, key[0] ? "key " : "the header", key, what, static_cast<unsigned long long>(n), pos,
                       static_cast<unsigned long long>(needed ? size : file_size));
}

// Reads the header up to the first kv pair; *kv_count gets the number of pairs.
Status read_header(Reader& p, uint64_t* kv_count) {
  if (p.size < 4) {
    if (p.file_size >= 4) p.needed = 4;
    return Status::error(Code::kDataLoss, "%s is %llu bytes, too short for a GGUF header", p.source,
                         static_cast<unsigned long long>(p.size));
  }
  if (std::memcmp(p.data, "GGUF", 4) != 0) {
    const uint8_t* m = p.data;
    return Status::error(Code::kInvalidArgument,
                         "%s is not a GGUF file (magic %x %x %x %x, expected 47 47 55 46 \"GGUF\")", p.source, m[0],
                         m[1], m[2], m[3]);
  }
  p.pos = 4;
  HEADWAY_RETURN_IF_ERROR(p.require(20, "the version and counts", ""));
  const uint32_t version = static_cast<uint32_t>(p.take(4));
  if (version == 1) {
    return Status::error(Code::kUnsupported,
                         "%s: GGUF version 1 is not supported (versions 2 and 3 are); convert it "
                         "again with a current llama.cpp",
                         p.source);
  }
  if (version != 2 && version != 3) {
    const uint32_t swapped =
        (version >> 24) | ((version >> 8) & 0xff00u) | ((version << 8) & 0xff0000u) | (version << 24);
    if (swapped >= 1 && swapped <= 3) {
      return Status::error(Code::kUnsupported, "%s: big-endian GGUF (version %u) is not supported", p.source, swapped);
    }
    return Status::error(Code::kUnsupported, "%s: GGUF version %u is not supported (versions 2 and 3 are)", p.source,
                         version);
  }
  p.tensor_count = p.take(8);
  *kv_count = p.take(8);
  if (*kv_count > p.file_left() / kMinKvBytes) {
    return Status::error(Code::kDataLoss, "%s: kv_count %llu cannot fit in the %llu bytes after the header", p.source,
                         static_cast<unsigned long long>(*kv_count), static_cast<unsigned long long>(p.file_left()));
  }
  return Status();
}

Status next_kv(Reader& p, uint64_t i, uint64_t kv_count, Kv* out) {
  // The pair is named by its index until its key has been read.
  if (!p.require(8, "the key length", "").ok()) {
    return Status::error(Code::kDataLoss,
                         "%s: truncated in kv pair %llu of %llu: its key length needs 8 bytes at "
                         "offset %zu, the data ends at %llu",
                         p.source, static_cast<unsigned long long>(i), static_cast<unsigned long long>(kv_count), p.pos,
                         static_cast<unsigned long long>(p.size));
  }
  Kv kv;
  kv.key_len = p.take(8);
  if (kv.key_len > kMaxKeyBytes || kv.key_len > p.file_left()) {
    return Status::error(Code::kDataLoss,
                         "%s: kv pair %llu of %llu has a key of %llu bytes at offset %zu (at most "
                         "%llu, and %llu bytes are left in the file)",
                         p.source, static_cast<unsigned long long>(i), static_cast<unsigned long long>(kv_count),
                         static_cast<unsigned long long>(kv.key_len), p.pos,
                         static_cast<unsigned long long>(kMaxKeyBytes), static_cast<unsigned long long>(p.file_left()));
  }
  if (!p.require(kv.key_len + 4, "the key and type", "").ok()) {
    return Status::error(Code::kDataLoss,
                         "%s: truncated in kv pair %llu of %llu: its key and type need %llu bytes "
                         "at offset %zu, the data ends at %llu",
                         p.source, static_cast<unsigned long long>(i), static_cast<unsigned long long>(kv_count),
                         static_cast<unsigned long long>(kv.key_len + 4), p.pos,
                         static_cast<unsigned long long>(p.size));
  }
  kv.key = p.data + p.pos;
  p.pos += static_cast<size_t>(kv.key_len);
  const KeyText key(kv.key, kv.key_len);
  kv.type = static_cast<uint32_t>(p.take(4));
  kv.value_pos = p.pos;
  HEADWAY_RETURN_IF_ERROR(skip_value(p, kv.type, key.text, 0));
  kv.value_end = p.pos;
  *out = kv;
  return Status();
}

// A count in [min_value, 2^31). An array of counts (per-layer head counts) is accepted when all
// its elements are equal.
Status read_count(const Reader& p, const Kv& kv, uint32_t min_value, uint32_t* out) {
  const Typed t(p, kv);
  const uint8_t* at = p.data + kv.value_pos;
  uint32_t elem = kv.type;
  uint64_t count = 1;
  if (kv.type == kArray) {
    elem = static_cast<uint32_t>(load_le(at, 4));
    count = load_le(at + 4, 8);
    at += 12;
    if (!is_integer_type(elem) || count == 0) {
      return Status::error(Code::kInvalidArgument,
                           "%s: %s is an array of %llu %s, expected an integer or an array of "
                           "integers",
                           p.source, t.key.text, static_cast<unsigned long long>(count), type_name(elem));
    }
  } else if (!is_integer_type(kv.type)) {
    return t.wrong_type("an integer");
  }
  const uint64_t step = fixed_size(elem);
  bool negative = false;
  const uint64_t first = integer_at(at, elem, &negative);
  for (uint64_t i = 1; i < count; ++i) {
    bool neg_i = false;
    const uint64_t v = integer_at(at + i * step, elem, &neg_i);
    if (v != first || neg_i != negative) {
      return Status::error(Code::kUnsupported,
                           "%s: %s differs per layer (layer 0: %lld, layer %llu: %lld); per-layer "
                           "head counts are not supported",
                           p.source, t.key.text, negative ? sign_extended(first, elem) : static_cast<long long>(first),
                           static_cast<unsigned long long>(i),
                           neg_i ? sign_extended(v, elem) : static_cast<long long>(v));
    }
  }
  if (negative) {
    return Status::error(Code::kInvalidArgument, "%s: %s is %lld, expected %s", p.source, t.key.text,
                         sign_extended(first, elem), min_value ? "a positive integer" : "a non-negative integer");
  }
  if (first > kMaxCount) {
    return Status::error(Code::kInvalidArgument, "%s: %s is %llu, more than %llu, the largest count headway stores",
                         p.source, t.key.text, static_cast<unsigned long long>(first),
                         static_cast<unsigned long long>(kMaxCount));
  }
  if (first < min_value) {
    return Status::error(Code::kInvalidArgument, "%s: %s is %llu, expected a positive integer", p.source, t.key.text,
                         static_cast<unsigned long long>(first));
  }
  *out = static_cast<uint32_t>(first);
  return Status();
}

Status read_count_at(const Reader& p, const Kv& kv, uint32_t layer, uint32_t n, uint32_t min_value, uint32_t* out) {
  if (kv.type != kArray) return read_count(p, kv, min_value, out);
  const uint8_t* at = p.data + kv.value_pos;
  const uint32_t elem = static_cast<uint32_t>(load_le(at, 4));
  const uint64_t count = load_le(at + 4, 8);
  if (!is_integer_type(elem) || count != n) {
    return Status::error(Code::kInvalidArgument, "%s: %s is an array of %llu %s, expected %u integers (one per layer)",
                         p.source, Typed(p, kv).key.text, static_cast<unsigned long long>(count), type_name(elem), n);
  }
  Kv one = kv;  // the entry alone, read as a count (its errors name the key)
  one.type = elem;
  one.value_pos = kv.value_pos + 12 + layer * fixed_size(elem);
  return read_count(p, one, min_value, out);
}

// A real number: f32, f64, or any integer type. Must be finite and >= 0 (> 0 unless allow_zero).
Status read_real(const Reader& p, const Kv& kv, bool allow_zero, float* out) {
  const Typed t(p, kv);
  const uint8_t* at = p.data + kv.value_pos;
  double d = 0.0;
  if (kv.type == kF32) {
    const uint32_t bits = static_cast<uint32_t>(load_le(at, 4));
    float f;
    std::memcpy(&f, &bits, 4);
    d = f;
  } else if (kv.type == kF64) {
    const uint64_t bits = load_le(at, 8);
    std::memcpy(&d, &bits, 8);
  } else if (is_integer_type(kv.type)) {
    bool negative = false;
    const uint64_t v = integer_at(at, kv.type, &negative);
    d = negative ? static_cast<double>(sign_extended(v, kv.type)) : static_cast<double>(v);
  } else {
    return t.wrong_type("a number");
  }
  if (!(d > 0.0 || (allow_zero && d == 0.0)) || !(d <= 3.4e38)) {
    return Status::error(Code::kInvalidArgument, "%s: %s is %g, expected a %s finite number", p.source, t.key.text, d,
                         allow_zero ? "non-negative" : "positive");
  }
  *out = static_cast<float>(d);
  return Status();
}

Status read_bool(const Reader& p, const Kv& kv, bool* out) {
  if (kv.type != kBool) return Typed(p, kv).wrong_type("a bool");
  *out = p.data[kv.value_pos] != 0;
  return Status();
}

Status read_bools(const Reader& p, const Kv& kv, uint32_t n, LayerBits* out) {
  const Typed t(p, kv);
  if (kv.type != kArray) return t.wrong_type("an array of bools");
  const uint8_t* at = p.data + kv.value_pos;
  const uint32_t elem = static_cast<uint32_t>(load_le(at, 4));
  const uint64_t count = load_le(at + 4, 8);
  if (elem != kBool || count != n) {
    return Status::error(Code::kInvalidArgument, "%s: %s is an array of %llu %s, expected %u bools (one per layer)",
                         p.source, t.key.text, static_cast<unsigned long long>(count), type_name(elem), n);
  }
  for (uint32_t i = 0; i < n; ++i) out->set(i, at[12 + i] != 0);
  return Status();
}

// A string value: *text points into the data (not NUL-terminated), *len its length.
Status read_string(const Reader& p, const Kv& kv, const uint8_t** text, uint64_t* len) {
  if (kv.type != kString) return Typed(p, kv).wrong_type("a string");
  *len = load_le(p.data + kv.value_pos, 8);
  *text = p.data + kv.value_pos + 8;
  return Status();
}

const char* ggml_type_name(uint32_t t) {
  // ggml.h's enum ggml_type; 4, 5 and 31..33 were removed from ggml and are unknown here.
  static constexpr const char* kNames[] = {
      "f32",     "f16",   "q4_0",   "q4_1",  "unknown", "unknown", "q5_0",    "q5_1",    "q8_0",
      "q8_1",    "q2_K",  "q3_K",   "q4_K",  "q5_K",    "q6_K",    "q8_K",    "iq2_xxs", "iq2_xs",
      "iq3_xxs", "iq1_s", "iq4_nl", "iq3_s", "iq2_s",   "iq4_xs",  "i8",      "i16",     "i32",
      "i64",     "f64",   "iq1_m",  "bf16",  "unknown", "unknown", "unknown", "tq1_0",   "tq2_0"};
  return t < sizeof(kNames) / sizeof(kNames[0]) ? kNames[t] : "unknown";
}

Status next_tensor_info(Reader& p, uint64_t i, uint64_t count, TensorInfo* out) {
  TensorInfo info;
  if (!p.require(8, "a tensor name length", "").ok()) {
    return Status::error(Code::kDataLoss,
                         "%s: truncated in tensor info %llu of %llu: its name length needs 8 bytes at offset %zu, "
                         "the data ends at %llu",
                         p.source, static_cast<unsigned long long>(i), static_cast<unsigned long long>(count), p.pos,
                         static_cast<unsigned long long>(p.size));
  }
  info.name_len = p.take(8);
  if (info.name_len > kMaxKeyBytes || info.name_len > p.file_left()) {
    return Status::error(Code::kDataLoss,
                         "%s: tensor info %llu of %llu has a name of %llu bytes at offset %zu (at most %llu, and "
                         "%llu bytes are left in the file)",
                         p.source, static_cast<unsigned long long>(i), static_cast<unsigned long long>(count),
                         static_cast<unsigned long long>(info.name_len), p.pos,
                         static_cast<unsigned long long>(kMaxKeyBytes), static_cast<unsigned long long>(p.file_left()));
  }
  if (!p.require(info.name_len + 4, "the name and n_dims", "").ok()) {
    return Status::error(Code::kDataLoss,
                         "%s: truncated in tensor info %llu of %llu: its name and n_dims need %llu bytes at offset "
                         "%zu, the data ends at %llu",
                         p.source, static_cast<unsigned long long>(i), static_cast<unsigned long long>(count),
                         static_cast<unsigned long long>(info.name_len + 4), p.pos,
                         static_cast<unsigned long long>(p.size));
  }
  info.name = p.data + p.pos;
  p.pos += static_cast<size_t>(info.name_len);
  const KeyText name(info.name, info.name_len);
  info.n_dims = static_cast<uint32_t>(p.take(4));
  if (info.n_dims < 1 || info.n_dims > kMaxDims) {
    return Status::error(Code::kDataLoss, "%s: tensor '%s' has n_dims %u, expected 1 to %u", p.source, name.text,
                         info.n_dims, kMaxDims);
  }
  const uint64_t rest = uint64_t{8} * info.n_dims + 12;
  if (!p.require(rest, "the dims, type and offset", "").ok()) {
    return Status::error(Code::kDataLoss,
                         "%s: truncated in tensor '%s': its ne, type and offset need %llu bytes at offset %zu, the "
                         "data ends at %llu",
                         p.source, name.text, static_cast<unsigned long long>(rest), p.pos,
                         static_cast<unsigned long long>(p.size));
  }
  for (uint32_t d = 0; d < info.n_dims; ++d) info.ne[d] = p.take(8);
  info.type = static_cast<uint32_t>(p.take(4));
  info.offset = p.take(8);
  *out = info;
  return Status();
}

}  // namespace headway::formats::gguf
