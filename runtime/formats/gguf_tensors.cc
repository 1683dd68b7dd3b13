// The GGUF tensor table; layout in gguf_reader.hpp, guarantees in gguf_tensors.hpp.
#include "runtime/formats/gguf_tensors.hpp"

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "headway/tools/model_files.hpp"
#include "runtime/core/format.hpp"
#include "runtime/formats/safetensors.hpp"  // format_shape

namespace headway::formats {
namespace {

// The smallest tensor_info that parses as far as its n_dims check: an empty name (8), n_dims
// (4), type (4), offset (8).
constexpr uint64_t kMinTensorInfoBytes = 24;

// a · b, false when it overflows 64 bits.
bool mul_ok(uint64_t a, uint64_t b, uint64_t* out) { return !__builtin_mul_overflow(a, b, out); }

bool is_power_of_two(uint32_t v) { return v && (v & (v - 1)) == 0; }

// The bytes of a tensor of a table type: ne[1] · ne[2] · ne[3] rows of ne[0] / block_values
// blocks, each row whole blocks, all of it inside the data section after the tensor's offset.
Status size_tensor(const gguf::TensorInfo& info, const GgmlTypeInfo& type, uint64_t data_size, const char* name,
                   const char* src, uint64_t* bytes) {
  char s[128];
  format_shape(info.ne, info.n_dims, s, sizeof(s));
  if (info.ne[0] % type.block_values != 0) {
    return Status::error(Code::kDataLoss,
                         "%s: tensor '%s' (%s, ne %s) has rows of %llu values, not a whole number of %s's %u-value "
                         "blocks",
                         src, name, type.name, s, static_cast<unsigned long long>(info.ne[0]), type.name,
                         type.block_values);
  }
  const uint64_t blocks = info.ne[0] / type.block_values;
  uint64_t rows = 1, row_bytes = 0, need = 0;
  bool fits = true;
  for (uint32_t d = 1; d < gguf::kMaxDims; ++d) fits = fits && mul_ok(rows, info.ne[d], &rows);
  fits = fits && mul_ok(blocks, type.block_bytes, &row_bytes) && mul_ok(rows, row_bytes, &need);
  if (std::find(info.ne, info.ne + gguf::kMaxDims, uint64_t{0}) != info.ne + gguf::kMaxDims) {
    fits = true, rows = 0, need = 0;  // an empty tensor takes no bytes
  }
  const uint64_t left = data_size - info.offset;
  if (!fits || need > left) {
    char numbers[160];
    if (fits) {
      format_to(numbers, sizeof(numbers),
                "it needs %llu bytes (%llu rows, each %llu block%s of %u bytes), %llu are left",
                static_cast<unsigned long long>(need), static_cast<unsigned long long>(rows),
                static_cast<unsigned long long>(blocks), blocks == 1 ? "" : "s", type.block_bytes,
                static_cast<unsigned long long>(left));
    } else {
      format_to(numbers, sizeof(numbers), "its bytes (ne %s, %u-byte blocks of %u values) overflow 64 bits", s,
                type.block_bytes, type.block_values);
    }
    return Status::error(Code::kDataLoss,
                         "%s: tensor '%s' (%s, ne %s) at offset %llu runs past the end of the %llu-byte data section: "
                         "%s",
                         src, name, type.name, s, static_cast<unsigned long long>(info.offset),
                         static_cast<unsigned long long>(data_size), numbers);
  }
  *bytes = need;
  return Status();
}

}  // namespace

Status GgufFile::open(const char* path) {
  HEADWAY_RETURN_IF_ERROR(file_.open(path));
  return parse(file_.data(), file_.size(), path);
}

Status GgufFile::parse(const uint8_t* data, uint64_t size, const char* source) {
  entries_.clear();
  source_ = source ? source : "model.gguf";
  const char* src = source_.c_str();
  static const uint8_t kEmpty[1] = {0};
  data_ = data ? data : kEmpty;
  size_ = data ? size : 0;
  gguf::Reader r{data_, static_cast<size_t>(size_), size_, src};

  gguf::Kv align_kv;
  HEADWAY_RETURN_IF_ERROR(gguf::for_each_kv(r, [&](const gguf::Kv& kv) {
    if (kv.is("general.alignment")) align_kv = kv;
    return Status();
  }));
  alignment_ = kDefaultAlignment;
  if (align_kv.present()) {
    HEADWAY_RETURN_IF_ERROR(gguf::read_count(r, align_kv, 1, &alignment_));
    if (!is_power_of_two(alignment_)) {
      return Status::error(Code::kDataLoss, "%s: general.alignment is %u, expected a power of two", src, alignment_);
    }
  }

  // for_each_kv left pos after the last kv pair: the tensor infos start there.
  const uint64_t count = r.tensor_count;
  if (count > r.file_left() / kMinTensorInfoBytes) {
    return Status::error(Code::kDataLoss, "%s: tensor_count %llu cannot fit in the %llu bytes after the kv section",
                         src, static_cast<unsigned long long>(count), static_cast<unsigned long long>(r.file_left()));
  }
  std::vector<gguf::TensorInfo> infos(static_cast<size_t>(count));
  for (uint64_t i = 0; i < count; ++i) HEADWAY_RETURN_IF_ERROR(gguf::next_tensor_info(r, i, count, &infos[i]));
  const uint64_t start = (r.pos + alignment_ - 1) / alignment_ * alignment_;
  data_start_ = start;
  if (count > 0 && start > size_) {
    return Status::error(Code::kDataLoss,
                         "%s: the data section would start at offset %llu (tensor infos end at %zu, alignment %u), "
                         "past the end of the %llu-byte file",
                         src, static_cast<unsigned long long>(start), r.pos, alignment_,
                         static_cast<unsigned long long>(size_));
  }
  const uint64_t data_size = start <= size_ ? size_ - start : 0;

  entries_.reserve(infos.size());
  for (const gguf::TensorInfo& info : infos) {
    const gguf::KeyText name(info.name, info.name_len);
    Entry e;
    e.name.assign(reinterpret_cast<const char*>(info.name), static_cast<size_t>(info.name_len));
    e.type = info.type;
    e.n_dims = info.n_dims;
    std::copy(info.ne, info.ne + gguf::kMaxDims, e.ne);
    if (info.offset % alignment_ != 0) {
      return Status::error(Code::kDataLoss, "%s: tensor '%s' has offset %llu, not a multiple of the alignment %u", src,
                           name.text, static_cast<unsigned long long>(info.offset), alignment_);
    }
    if (info.offset > data_size) {
      return Status::error(
          Code::kDataLoss, "%s: tensor '%s' has offset %llu, past the end of the %llu-byte data section", src,
          name.text, static_cast<unsigned long long>(info.offset), static_cast<unsigned long long>(data_size));
    }
    const GgmlTypeInfo* type = ggml_type_info(info.type);
    if (type == nullptr && std::strcmp(gguf::ggml_type_name(info.type), "unknown") == 0) {
      return Status::error(Code::kUnsupported,
                           "%s: tensor '%s' has ggml type %u, which is not a ggml type (headway reads %s)", src,
                           name.text, info.type, kGgmlTypeNames);
    }
    if (type != nullptr) {
      HEADWAY_RETURN_IF_ERROR(size_tensor(info, *type, data_size, name.text, src, &e.bytes));
    }
    e.begin = start + info.offset;
    entries_.push_back(std::move(e));
  }

  std::sort(entries_.begin(), entries_.end(), [](const Entry& a, const Entry& b) { return a.name < b.name; });
  const auto dup = std::adjacent_find(entries_.begin(), entries_.end(),
                                      [](const Entry& a, const Entry& b) { return a.name == b.name; });
  if (dup != entries_.end()) {
    return Status::error(Code::kDataLoss, "%s: tensor '%s' appears twice in the tensor infos", src,
                         gguf::KeyText(reinterpret_cast<const uint8_t*>(dup->name.data()), dup->name.size()).text);
  }

  std::vector<const Entry*> by_begin;
  for (const Entry& e : entries_) {
    if (e.bytes > 0) by_begin.push_back(&e);
  }
  std::sort(by_begin.begin(), by_begin.end(), [](const Entry* a, const Entry* b) { return a->begin < b->begin; });
  for (size_t i = 1; i < by_begin.size(); ++i) {
    const Entry& a = *by_begin[i - 1];
    const Entry& b = *by_begin[i];
    if (a.begin + a.bytes > b.begin) {
      return Status::error(Code::kDataLoss, "%s: tensors '%s' (offset %llu, %llu bytes) and '%s' (offset %llu) overlap",
                           src, gguf::KeyText(reinterpret_cast<const uint8_t*>(a.name.data()), a.name.size()).text,
                           static_cast<unsigned long long>(a.begin - start), static_cast<unsigned long long>(a.bytes),
                           gguf::KeyText(reinterpret_cast<const uint8_t*>(b.name.data()), b.name.size()).text,
                           static_cast<unsigned long long>(b.begin - start));
    }
  }
  return Status();
}

const GgufFile::Entry* GgufFile::entry(const char* name) const {
  const auto it = std::lower_bound(entries_.begin(), entries_.end(), name,
                                   [](const Entry& e, const char* n) { return std::strcmp(e.name.c_str(), n) < 0; });
  return it != entries_.end() && it->name == name ? &*it : nullptr;
}

Result<TensorRef> GgufFile::find(const char* name, uint32_t* rank) const {
  const Entry* e = entry(name);
  const char* src = source_.c_str();
  if (!e) return Status::error(Code::kNotFound, "%s: no tensor '%s'", src, name);
  TensorRef t;
  if (!dtype_from_ggml(e->type, &t.dtype) || !dtype_holds_weights(t.dtype)) {
    return Status::error(Code::kUnsupported, "%s: tensor '%s' has ggml type %s (%u); headway reads %s tensors in place",
                         src, name, gguf::ggml_type_name(e->type), e->type, kWeightDTypeNames);
  }
  char s[128];
  format_shape(e->ne, e->n_dims, s, sizeof(s));
  for (uint32_t d = 2; d < gguf::kMaxDims; ++d) {
    if (e->ne[d] != 1) {
      return Status::error(Code::kUnsupported, "%s: tensor '%s' has ne %s (%u dims); headway reads 1-D and 2-D weights",
                           src, name, s, e->n_dims);
    }
  }
  if (e->ne[0] > UINT32_MAX || e->ne[1] > UINT32_MAX) {
    return Status::error(Code::kUnsupported, "%s: tensor '%s' has ne %s, a dim past %u", src, name, s, UINT32_MAX);
  }
  const uint8_t* p = data_ + e->begin;
  // A value type's elements are read in place, aligned; blocks are read byte by byte.
  const uint32_t element_bytes = dtype_is_block(t.dtype) ? 1 : dtype_bytes(t.dtype);
  if (reinterpret_cast<uintptr_t>(p) % element_bytes != 0) {
    return Status::error(Code::kUnsupported, "%s: tensor '%s' starts at file offset %llu, not a multiple of %u bytes",
                         src, name, static_cast<unsigned long long>(e->begin), element_bytes);
  }
  if (e->ne[0] % dtype_traits(t.dtype).block_values != 0) {  // parse() refuses such rows; said here for the kernels
    return Status::error(Code::kInvalidArgument, "%s: tensor '%s' has rows of %llu values, not whole %s blocks", src,
                         name, static_cast<unsigned long long>(e->ne[0]), dtype_name(t.dtype));
  }
  t.data = p;
  t.cols = static_cast<uint32_t>(e->ne[0]);
  t.rows = static_cast<uint32_t>(e->ne[1]);
  if (rank) *rank = e->n_dims;
  return t;
}

Result<GgufFile::Stored> GgufFile::stored(const char* name) const {
  const Entry* e = entry(name);
  const char* src = source_.c_str();
  if (!e) return Status::error(Code::kNotFound, "%s: no tensor '%s'", src, name);
  Stored t;
  t.type = ggml_type_info(e->type);
  if (t.type == nullptr) {
    return Status::error(Code::kUnsupported, "%s: tensor '%s' has ggml type %s (%u); headway reads %s", src, name,
                         gguf::ggml_type_name(e->type), e->type, kGgmlTypeNames);
  }
  // parse() checked that these products fit in the tensor's bytes; a tensor with a dim of 0 has
  // no values and no rows.
  const bool empty = std::find(e->ne, e->ne + gguf::kMaxDims, uint64_t{0}) != e->ne + gguf::kMaxDims;
  t.data = data_ + e->begin;
  t.row_values = e->ne[0];
  t.rows = empty ? 0 : e->ne[1] * e->ne[2] * e->ne[3];
  t.row_bytes = empty ? 0 : e->ne[0] / t.type->block_values * t.type->block_bytes;
  return t;
}

Status GgufFile::dequantize_rows(const char* name, uint64_t first_row, uint64_t row_count, float* out,
                                 uint64_t out_values) const {
  const Result<Stored> st = stored(name);
  if (!st.ok()) return st.status();
  const Stored& t = st.value();
  const char* src = source_.c_str();
  if (first_row > t.rows || row_count > t.rows - first_row) {
    return Status::error(Code::kOutOfRange, "%s: tensor '%s' (%s) has %llu rows; rows %llu to %llu were asked for", src,
                         name, t.type->name, static_cast<unsigned long long>(t.rows),
                         static_cast<unsigned long long>(first_row),
                         static_cast<unsigned long long>(first_row + row_count));
  }
  uint64_t need = 0;
  if (!mul_ok(row_count, t.row_values, &need) || need > out_values || t.row_values > SIZE_MAX) {
    return Status::error(Code::kInvalidArgument,
                         "%s: tensor '%s' (%s): %llu rows of %llu values do not fit in the %llu floats given", src,
                         name, t.type->name, static_cast<unsigned long long>(row_count),
                         static_cast<unsigned long long>(t.row_values), static_cast<unsigned long long>(out_values));
  }
  if (need > 0 && out == nullptr) {
    return Status::error(Code::kInvalidArgument, "%s: tensor '%s': the output is null", src, name);
  }
  const size_t n = static_cast<size_t>(t.row_values);
  for (uint64_t r = 0; r < row_count; ++r) {
    const uint8_t* row = t.data + (first_row + r) * t.row_bytes;
    HEADWAY_RETURN_IF_ERROR(dequantize_ggml_row(t.type->type, row, static_cast<size_t>(t.row_bytes), n, out + r * n));
  }
  return Status();
}

Result<std::string> GgufFile::text(const char* key) const {
  gguf::Reader r{data_, static_cast<size_t>(size_), size_, source_.c_str()};
  std::string value;
  bool found = false;
  HEADWAY_RETURN_IF_ERROR(gguf::for_each_kv(r, [&](const gguf::Kv& kv) {
    if (!kv.is(key)) return Status();
    const uint8_t* text = nullptr;
    uint64_t len = 0;
    HEADWAY_RETURN_IF_ERROR(gguf::read_string(r, kv, &text, &len));
    value.assign(reinterpret_cast<const char*>(text), static_cast<size_t>(len));
    found = true;
    return Status();
  }));
  if (!found) return Status::error(Code::kNotFound, "%s: no %s key", source_.c_str(), key);
  return value;
}

Result<Config> GgufFile::config() const {
  Result<Config> parsed = parse_gguf_metadata(data_, static_cast<size_t>(size_), source_.c_str());
  if (!parsed.ok()) return parsed;
  Config c = parsed.value();
  // The qk_norm epsilon: {arch}.attention.layer_norm_rms_epsilon (general.architecture was
  // checked by the metadata parse; any arch prefix is accepted here).
  static constexpr char kSuffix[] = ".attention.layer_norm_rms_epsilon";
  constexpr uint64_t n = sizeof(kSuffix) - 1;
  gguf::Reader r{data_, static_cast<size_t>(size_), size_, source_.c_str()};
  HEADWAY_RETURN_IF_ERROR(gguf::for_each_kv(r, [&](const gguf::Kv& kv) {
    if (kv.key_len > n && std::memcmp(kv.key + kv.key_len - n, kSuffix, n) == 0) {
      return gguf::read_real(r, kv, false, &c.rms_norm_eps);
    }
    return Status();
  }));
  return c;
}

}  // namespace headway::formats
