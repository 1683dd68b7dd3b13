// .npy layout: "\x93NUMPY", major, minor, header length (u16 LE for 1.0, u32 LE for 2.0 / 3.0),
// then the header: a Python dict literal such as
//   {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }
// padded with spaces and a final '\n', then the raw array bytes.
#include "headway/tools/npy.hpp"

#include <bit>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <utility>

#include "runtime/core/format.hpp"
#include "runtime/formats/file_bytes.hpp"

namespace headway::formats {

// The array bytes are used as they lie in the file (little-endian), on little-endian hosts.
static_assert(std::endian::native == std::endian::little, "npy.cc assumes a little-endian host");

namespace {

constexpr uint8_t kMagic[6] = {0x93, 'N', 'U', 'M', 'P', 'Y'};
constexpr uint64_t kMaxNpyBytes = uint64_t{1} << 40;

// A cursor over the header text with the small grammar np.save writes: a dict of string keys
// whose values are strings, True/False, or tuples of integers.
class HeaderParser {
 public:
  HeaderParser(const char* text, size_t size, const char* source) : p_(text), end_(text + size), source_(source) {}

  void skip_ws() {
    while (p_ < end_ && (*p_ == ' ' || *p_ == '\t' || *p_ == '\n' || *p_ == '\r')) ++p_;
  }
  bool at_end() const { return p_ >= end_; }
  char peek() const { return p_ < end_ ? *p_ : '\0'; }
  bool accept(char c) {
    skip_ws();
    if (p_ < end_ && *p_ == c) {
      ++p_;
      return true;
    }
    return false;
  }
  size_t offset(const char* begin) const { return static_cast<size_t>(p_ - begin); }

  // A quoted string ('...' or "...") into out (NUL-terminated, at most out_size - 1 chars).
  Status string(char* out, size_t out_size, const char* what) {
    skip_ws();
    const char quote = peek();
    if (quote != '\'' && quote != '"') return expected("a quoted string", what);
    ++p_;
    size_t n = 0;
    while (p_ < end_ && *p_ != quote && *p_ != '\n') {
      if (*p_ == '\\') return expected("a string without escapes", what);
      if (n + 1 < out_size) out[n++] = *p_;
      ++p_;
    }
    if (p_ >= end_ || *p_ != quote)
      return Status::error(Code::kDataLoss, "npy file %s: header: %s: the string is not closed", source_, what);
    ++p_;
    out[n] = '\0';
    return Status();
  }

  Status boolean(bool* out, const char* what) {
    skip_ws();
    if (match_word("True")) *out = true;
    else if (match_word("False")) *out = false;
    else return expected("True or False", what);
    return Status();
  }

  // A tuple of integers, each checked: negative, zero and too-large dims are errors.
  Status shape(uint64_t* dims, uint32_t* ndim) {
    skip_ws();
    if (!accept('(')) return expected("a tuple of integers", "shape");
    *ndim = 0;
    for (;;) {
      skip_ws();
      if (accept(')')) return Status();
      if (*ndim == kNpyMaxDims) {
        return Status::error(Code::kUnsupported, "npy file %s: shape has more than %u dims", source_, kNpyMaxDims);
      }
      bool negative = false;
      if (peek() == '-') {
        negative = true;
        ++p_;
      }
      if (!(peek() >= '0' && peek() <= '9')) return expected("an integer", "shape");
      uint64_t v = 0;
      bool overflow = false;
      while (peek() >= '0' && peek() <= '9') {
        overflow |= __builtin_mul_overflow(v, uint64_t{10}, &v) || __builtin_add_overflow(v, uint64_t(*p_ - '0'), &v);
        ++p_;
      }
      if (peek() == 'L') ++p_;  // Python 2 wrote longs as 3L
      if (negative && (v != 0 || overflow)) {
        return Status::error(Code::kDataLoss, "npy file %s: shape: dim %u is negative", source_, *ndim);
      }
      if (overflow) {
        return Status::error(Code::kDataLoss, "npy file %s: shape: dim %u does not fit in 64 bits", source_, *ndim);
      }
      if (v == 0) {
        return Status::error(Code::kUnsupported, "npy file %s: shape: dim %u is 0 (an empty array)", source_, *ndim);
      }
      dims[(*ndim)++] = v;
      skip_ws();
      if (accept(')')) return Status();
      if (!accept(',')) return expected("',' or ')'", "shape");
    }
  }

  Status expected(const char* what_kind, const char* field) const {
    char near[16] = {};
    size_t n = 0;
    for (const char* q = p_; q < end_ && n < sizeof(near) - 1 && *q != '\n'; ++q) {
      near[n++] = (*q >= 32 && *q < 127) ? *q : '?';
    }
    return Status::error(Code::kDataLoss, "npy file %s: header: %s: expected %s, found '%s'", source_, field, what_kind,
                         near);
  }

 private:
  bool match_word(const char* w) {
    const size_t n = std::strlen(w);
    if (static_cast<size_t>(end_ - p_) < n || std::memcmp(p_, w, n) != 0) return false;
    p_ += n;
    return true;
  }

  const char* p_;
  const char* end_;
  const char* source_;
};

Status parse_header(const char* text, size_t size, const char* source, NpyBool bools, NpyArray* out) {
  HeaderParser h(text, size, source);
  h.skip_ws();
  if (!h.accept('{')) {
    return Status::error(Code::kDataLoss, "npy file %s: the header is not a Python dict literal ('{...}')", source);
  }
  bool have_descr = false, have_fortran = false, have_shape = false, fortran = false;
  char descr[16] = {};
  for (;;) {
    if (h.accept('}')) break;
    char key[32] = {};
    HEADWAY_RETURN_IF_ERROR(h.string(key, sizeof(key), "key"));
    if (!h.accept(':')) {
      char field[48];
      format_to(field, sizeof(field), "key '%s'", key);
      return h.expected("':'", field);
    }
    if (std::strcmp(key, "descr") == 0 && !have_descr) {
      HEADWAY_RETURN_IF_ERROR(h.string(descr, sizeof(descr), "descr"));
      have_descr = true;
    } else if (std::strcmp(key, "fortran_order") == 0 && !have_fortran) {
      HEADWAY_RETURN_IF_ERROR(h.boolean(&fortran, "fortran_order"));
      have_fortran = true;
    } else if (std::strcmp(key, "shape") == 0 && !have_shape) {
      HEADWAY_RETURN_IF_ERROR(h.shape(out->shape, &out->ndim));
      have_shape = true;
    } else if (std::strcmp(key, "descr") == 0 || std::strcmp(key, "fortran_order") == 0 ||
               std::strcmp(key, "shape") == 0) {
      return Status::error(Code::kDataLoss, "npy file %s: header: key '%s' appears twice", source, key);
    } else {
      return Status::error(Code::kDataLoss,
                           "npy file %s: header: unknown key '%s' (expected descr, fortran_order, shape)", source, key);
    }
    if (h.accept('}')) break;
    if (!h.accept(',')) return h.expected("',' or '}'", "header");
  }
  h.skip_ws();
  if (!h.at_end()) return h.expected("the end of the header", "header");
  if (!have_descr) return Status::error(Code::kDataLoss, "npy file %s: header has no 'descr' key", source);
  if (!have_fortran) return Status::error(Code::kDataLoss, "npy file %s: header has no 'fortran_order' key", source);
  if (!have_shape) return Status::error(Code::kDataLoss, "npy file %s: header has no 'shape' key", source);

  if (std::strcmp(descr, "|b1") == 0) {
    if (bools != NpyBool::kAccept) {
      return Status::error(Code::kUnsupported,
                           "npy file %s: descr '|b1' (bool) is not supported here: this input is f32 ('<f4') or f16 "
                           "('<f2'); convert with arr.astype(np.float32)",
                           source);
    }
    out->boolean = true;
  } else if (std::strcmp(descr, "<f4") == 0) {
    out->dtype = DType::kF32;
  } else if (std::strcmp(descr, "<f2") == 0) {
    out->dtype = DType::kF16;
  } else if (descr[0] == '>' && (std::strcmp(descr + 1, "f4") == 0 || std::strcmp(descr + 1, "f2") == 0)) {
    return Status::error(Code::kUnsupported,
                         "npy file %s: descr '%s' is big-endian; save it little-endian (arr.astype('<%s'))", source,
                         descr, descr + 1);
  } else {
    return Status::error(Code::kUnsupported,
                         "npy file %s: descr '%s' is not supported: headway reads f32 ('<f4') and f16 ('<f2'); "
                         "convert with arr.astype(np.float32)",
                         source, descr);
  }
  if (fortran) {
    return Status::error(Code::kUnsupported,
                         "npy file %s is in Fortran order; save it C-ordered (np.ascontiguousarray)", source);
  }
  return Status();
}

uint32_t read_le(const uint8_t* p, size_t n) {
  uint32_t v = 0;
  for (size_t i = 0; i < n; ++i) v |= static_cast<uint32_t>(p[i]) << (8 * i);
  return v;
}

}  // namespace

void format_npy_shape(const uint64_t* shape, uint32_t ndim, char* out, size_t out_size) {
  size_t n = format_to(out, out_size, "(");
  for (uint32_t i = 0; i < ndim && n < out_size; ++i) {
    n += format_to(out + n, out_size - n, i ? ", %llu" : "%llu", static_cast<unsigned long long>(shape[i]));
  }
  if (n < out_size) format_to(out + n, out_size - n, ndim == 1 ? ",)" : ")");
}

// Checks the whole file and fills everything but array->data; *data_start is where the array
// bytes begin.
static Status parse_npy_header(const uint8_t* bytes, size_t size, const char* source, NpyBool bools, NpyArray* out,
                               size_t* data_start) {
  if (size == 0) return Status::error(Code::kDataLoss, "npy file %s is empty", source);
  const size_t magic_seen = size < sizeof(kMagic) ? size : sizeof(kMagic);
  if (std::memcmp(bytes, kMagic, magic_seen) != 0) {
    return Status::error(Code::kDataLoss, "%s is not an .npy file (it does not start with \\x93NUMPY)", source);
  }
  if (size < 8) {
    return Status::error(Code::kDataLoss, "npy file %s is truncated: %zu bytes, the format version ends at byte 8",
                         source, size);
  }
  const uint8_t major = bytes[6], minor = bytes[7];
  if (major < 1 || major > 3 || minor != 0) {
    return Status::error(Code::kUnsupported, "npy file %s: format version %u.%u is not supported (1.0, 2.0, 3.0)",
                         source, major, minor);
  }
  const size_t len_bytes = major == 1 ? 2 : 4;
  const size_t header_start = 8 + len_bytes;
  if (size < header_start) {
    return Status::error(Code::kDataLoss, "npy file %s is truncated: %zu bytes, the header length ends at byte %zu",
                         source, size, header_start);
  }
  const size_t header_len = read_le(bytes + 8, len_bytes);
  if (header_len > size - header_start) {
    return Status::error(Code::kDataLoss,
                         "npy file %s is truncated: the header is %zu bytes, the file has %zu after byte %zu", source,
                         header_len, size - header_start, header_start);
  }
  NpyArray& array = *out;
  HEADWAY_RETURN_IF_ERROR(
      parse_header(reinterpret_cast<const char*>(bytes + header_start), header_len, source, bools, &array));

  char shape_text[256];
  format_npy_shape(array.shape, array.ndim, shape_text, sizeof(shape_text));
  uint64_t elements = 1, need = 0;
  for (uint32_t i = 0; i < array.ndim; ++i) {
    if (__builtin_mul_overflow(elements, array.shape[i], &elements)) elements = UINT64_MAX;
  }
  const uint64_t item_bytes = array.boolean ? 1 : dtype_bytes(array.dtype);
  if (elements == UINT64_MAX || __builtin_mul_overflow(elements, item_bytes, &need) || need > kMaxNpyBytes) {
    return Status::error(Code::kDataLoss, "npy file %s: shape %s is too large (more than %llu bytes of data)", source,
                         shape_text, static_cast<unsigned long long>(kMaxNpyBytes));
  }
  *data_start = header_start + header_len;
  const size_t have = size - *data_start;
  if (have != need) {
    return Status::error(Code::kDataLoss, "npy file %s %s: shape %s of %s needs %llu bytes of data, the file has %zu",
                         source, have < need ? "is truncated" : "has extra bytes", shape_text,
                         array.boolean ? "bool" : dtype_name(array.dtype), static_cast<unsigned long long>(need), have);
  }
  array.elements = elements;
  return Status();
}

Result<NpyArray> parse_npy(const uint8_t* bytes, size_t size, const char* source, NpyBool bools) {
  NpyArray array;
  size_t data_start = 0;
  HEADWAY_RETURN_IF_ERROR(parse_npy_header(bytes, size, source, bools, &array, &data_start));
  array.data.assign(bytes + data_start, bytes + size);
  return array;
}

Result<NpyArray> load_npy(const char* path, NpyBool bools) {
  // 2^40 does not fit a 32-bit size_t (armv7: it would cast to 0); there SIZE_MAX is the limit.
  constexpr size_t kMaxRead = kMaxNpyBytes < SIZE_MAX ? static_cast<size_t>(kMaxNpyBytes) : SIZE_MAX;
  Result<FileBytes> file = read_file(path, kMaxRead, "an .npy file");
  if (!file.ok()) return file.status();
  std::vector<uint8_t>& bytes = file.value().bytes;
  NpyArray array;
  size_t data_start = 0;
  HEADWAY_RETURN_IF_ERROR(parse_npy_header(bytes.data(), bytes.size(), path, bools, &array, &data_start));
  // Move the array bytes to the front of the buffer (aligned for float) instead of copying.
  bytes.erase(bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(data_start));
  array.data = std::move(bytes);
  return array;
}

namespace {

// A version 1.0 file of `descr` elements of item_bytes each.
std::vector<uint8_t> encode_npy_descr(const char* descr, size_t item_bytes, const void* data, const uint64_t* shape,
                                      uint32_t ndim) {
  char shape_text[256];
  format_npy_shape(shape, ndim, shape_text, sizeof(shape_text));
  char dict[384];
  size_t n = format_to(dict, sizeof(dict), "{'descr': '%s', 'fortran_order': False, 'shape': %s, }", descr, shape_text);
  // Pad with spaces so that 10 + header ends on a 64-byte boundary, the last byte a newline.
  const size_t total = (10 + n + 1 + 63) / 64 * 64;
  const size_t header_len = total - 10;
  uint64_t elements = 1;
  for (uint32_t i = 0; i < ndim; ++i) elements *= shape[i];
  const size_t data_bytes = static_cast<size_t>(elements) * item_bytes;
  std::vector<uint8_t> out(total + data_bytes, ' ');
  std::memcpy(out.data(), kMagic, sizeof(kMagic));
  out[6] = 1;
  out[7] = 0;
  out[8] = static_cast<uint8_t>(header_len & 0xff);
  out[9] = static_cast<uint8_t>(header_len >> 8);
  std::memcpy(out.data() + 10, dict, n);
  out[total - 1] = '\n';
  if (data_bytes > 0) std::memcpy(out.data() + total, data, data_bytes);
  return out;
}

}  // namespace

std::vector<uint8_t> encode_npy(DType dtype, const void* data, const uint64_t* shape, uint32_t ndim) {
  return dtype == DType::kF16 ? encode_npy_descr("<f2", 2, data, shape, ndim)
                              : encode_npy_descr("<f4", 4, data, shape, ndim);
}

std::vector<uint8_t> encode_npy_bool(const uint8_t* data, const uint64_t* shape, uint32_t ndim) {
  return encode_npy_descr("|b1", 1, data, shape, ndim);
}

Status save_npy(const char* path, DType dtype, const void* data, const uint64_t* shape, uint32_t ndim) {
  if (dtype != DType::kF32 && dtype != DType::kF16) {
    return Status::error(Code::kInvalidArgument, "npy file %s: cannot write dtype %s (f32 or f16 only)", path,
                         dtype_name(dtype));
  }
  if (ndim > kNpyMaxDims) {
    return Status::error(Code::kInvalidArgument, "npy file %s: %u dims, at most %u", path, ndim, kNpyMaxDims);
  }
  const std::vector<uint8_t> bytes = encode_npy(dtype, data, shape, ndim);
  std::FILE* f = std::fopen(path, "wb");
  if (f == nullptr) {
    const int err = errno;
    return Status::error(Code::kInvalidArgument, "cannot write %s: %s", path, std::strerror(err));
  }
  const size_t wrote = std::fwrite(bytes.data(), 1, bytes.size(), f);
  const int err = errno;
  const bool closed = std::fclose(f) == 0;
  if (wrote != bytes.size() || !closed) {
    return Status::error(Code::kInvalidArgument, "cannot write %s: %s", path,
                         std::strerror(wrote != bytes.size() ? err : errno));
  }
  return Status();
}

}  // namespace headway::formats
