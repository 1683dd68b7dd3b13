// safetensors header parsing; layout and guarantees in safetensors.hpp.
//
// Built with -fno-exceptions and JSON_NOEXCEPTION: values are reached through find() and
// get_ptr<>() after an is_*() check, and parsing uses allow_exceptions=false. A first SAX pass
// finds syntax errors (with their position) and duplicate names, which the DOM would silently
// collapse to the last one.
#include "runtime/formats/safetensors.hpp"

#include <algorithm>
#include <cstdio>
#include <cstring>

#include <nlohmann/json.hpp>

#include "runtime/formats/json_check.hpp"

namespace headway::formats {
namespace {

using json = nlohmann::json;

struct DtypeInfo {
  const char* name;
  uint32_t bytes;
};

// Every dtype of the format with a whole number of bytes per element.
constexpr DtypeInfo kDtypes[] = {
    {"F32", 4}, {"F16", 2}, {"BF16", 2}, {"F64", 8}, {"I64", 8},  {"U64", 8},     {"I32", 4},     {"U32", 4},
    {"I16", 2}, {"U16", 2}, {"I8", 1},   {"U8", 1},  {"BOOL", 1}, {"F8_E5M2", 1}, {"F8_E4M3", 1},
};

// A name from the file made printable for messages: at most 127 bytes, anything outside ASCII
// 0x20..0x7e as '?'.
struct Shown {
  char text[128];
  explicit Shown(const std::string& s) {
    const size_t n = std::min(s.size(), sizeof(text) - 1);
    for (size_t i = 0; i < n; ++i) {
      const unsigned char c = static_cast<unsigned char>(s[i]);
      text[i] = c >= 0x20 && c < 0x7f ? static_cast<char>(c) : '?';
    }
    text[n] = '\0';
  }
};

const char* kind_of(const json& v) {
  if (v.is_string()) return "a string";
  if (v.is_boolean()) return "a boolean";
  if (v.is_array()) return "an array";
  if (v.is_object()) return "an object";
  if (v.is_null()) return "null";
  if (v.is_number_float()) return "a fractional number";
  if (v.is_number_integer() && !v.is_number_unsigned()) return "a negative number";
  return "a number";
}

// A non-negative integer that fits in 64 bits.
bool as_u64(const json& v, uint64_t* out) {
  const auto* u = v.get_ptr<const json::number_unsigned_t*>();
  if (!u) return false;
  *out = *u;
  return true;
}

Status read_entry(const char* source, const std::string& name, const json& v, uint64_t data_start, uint64_t file_size,
                  SafetensorsFile::Entry* e) {
  const Shown n(name);
  if (!v.is_object()) {
    return Status::error(Code::kDataLoss,
                         "%s: tensor '%s' is %s, expected an object with dtype, shape and data_offsets", source, n.text,
                         kind_of(v));
  }
  const auto dtype = v.find("dtype");
  const auto shape = v.find("shape");
  const auto offsets = v.find("data_offsets");
  const char* absent = dtype == v.end()     ? "dtype"
                       : shape == v.end()   ? "shape"
                       : offsets == v.end() ? "data_offsets"
                                            : nullptr;
  if (absent) return Status::error(Code::kDataLoss, "%s: tensor '%s' has no %s", source, n.text, absent);

  if (!dtype->is_string()) {
    return Status::error(Code::kDataLoss, "%s: tensor '%s' has dtype %s, expected a string such as \"F32\"", source,
                         n.text, kind_of(*dtype));
  }
  const std::string& dt = *dtype->get_ptr<const json::string_t*>();
  for (const DtypeInfo& d : kDtypes) {
    if (dt == d.name) e->dtype_name = d.name, e->dtype_bytes = d.bytes;
  }
  if (e->dtype_bytes == 0) {
    return Status::error(Code::kDataLoss,
                         "%s: tensor '%s' has unknown dtype \"%s\" (known: F32, F16, BF16, F64, I64, U64, I32, "
                         "U32, I16, U16, I8, U8, BOOL, F8_E5M2, F8_E4M3)",
                         source, n.text, Shown(dt).text);
  }

  if (!shape->is_array()) {
    return Status::error(Code::kDataLoss, "%s: tensor '%s' has shape %s, expected an array of sizes", source, n.text,
                         kind_of(*shape));
  }
  if (shape->size() > SafetensorsFile::kMaxRank) {
    return Status::error(Code::kDataLoss, "%s: tensor '%s' has rank %zu, more than %u", source, n.text, shape->size(),
                         SafetensorsFile::kMaxRank);
  }
  e->rank = static_cast<uint32_t>(shape->size());
  for (uint32_t i = 0; i < e->rank; ++i) {
    const json& d = (*shape)[i];
    if (!as_u64(d, &e->shape[i])) {
      return Status::error(Code::kDataLoss, "%s: tensor '%s' has shape[%u] %s, expected a non-negative integer", source,
                           n.text, i, kind_of(d));
    }
  }

  uint64_t b = 0, end = 0;
  if (!offsets->is_array() || offsets->size() != 2 || !as_u64((*offsets)[0], &b) || !as_u64((*offsets)[1], &end)) {
    return Status::error(Code::kDataLoss,
                         "%s: tensor '%s' has data_offsets %s, expected [begin, end] (two non-negative integers)",
                         source, n.text, offsets->is_array() ? "of another form" : kind_of(*offsets));
  }
  const uint64_t data_size = file_size - data_start;
  if (b > end) {
    return Status::error(Code::kDataLoss, "%s: tensor '%s' has data_offsets [%llu, %llu]: the end is before the begin",
                         source, n.text, static_cast<unsigned long long>(b), static_cast<unsigned long long>(end));
  }
  if (end > data_size) {
    return Status::error(Code::kDataLoss,
                         "%s: tensor '%s' has data_offsets [%llu, %llu], past the end of the %llu bytes of data "
                         "after the header",
                         source, n.text, static_cast<unsigned long long>(b), static_cast<unsigned long long>(end),
                         static_cast<unsigned long long>(data_size));
  }
  // elements × dtype size, refusing overflow: any product above data_size already fails.
  uint64_t need = e->dtype_bytes;
  bool too_big = false;
  for (uint32_t i = 0; i < e->rank; ++i) {
    if (e->shape[i] == 0) {
      need = 0, too_big = false;
      break;
    }
    if (need > data_size / e->shape[i]) too_big = true;
    else need *= e->shape[i];
  }
  if (too_big || need != end - b) {
    char s[160];
    format_shape(e->shape, e->rank, s, sizeof(s));
    if (too_big) {
      return Status::error(Code::kDataLoss,
                           "%s: tensor '%s' has shape %s of %s, more than the %llu bytes of data in the file", source,
                           n.text, s, e->dtype_name, static_cast<unsigned long long>(data_size));
    }
    return Status::error(Code::kDataLoss,
                         "%s: tensor '%s' has data_offsets [%llu, %llu] (%llu bytes), but shape %s of %s needs %llu "
                         "bytes",
                         source, n.text, static_cast<unsigned long long>(b), static_cast<unsigned long long>(end),
                         static_cast<unsigned long long>(end - b), s, e->dtype_name,
                         static_cast<unsigned long long>(need));
  }
  e->name = name;
  e->begin = data_start + b;
  e->end = data_start + end;
  return Status();
}

}  // namespace

void format_shape(const uint64_t* shape, uint32_t rank, char* out, size_t out_size) {
  if (out_size == 0) return;
  size_t used = static_cast<size_t>(std::snprintf(out, out_size, "["));
  for (uint32_t i = 0; i < rank && used < out_size; ++i) {
    used += static_cast<size_t>(
        std::snprintf(out + used, out_size - used, "%s%llu", i ? ", " : "", static_cast<unsigned long long>(shape[i])));
  }
  if (used < out_size) std::snprintf(out + used, out_size - used, "]");
}

Status SafetensorsFile::open(const char* path) {
  HEADWAY_RETURN_IF_ERROR(file_.open(path));
  return parse(file_.data(), file_.size(), path);
}

Status SafetensorsFile::parse(const uint8_t* data, uint64_t size, const char* source) {
  entries_.clear();
  source_ = source ? source : "model.safetensors";
  const char* src = source_.c_str();
  data_ = data;
  size_ = size;
  if (size < 8) {
    return Status::error(Code::kDataLoss, "%s is %llu bytes, too short for a safetensors header (8-byte length)", src,
                         static_cast<unsigned long long>(size));
  }
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | data[i];
  if (n > kMaxHeaderBytes) {
    return Status::error(Code::kDataLoss, "%s: safetensors header length %llu is more than the %llu bytes allowed", src,
                         static_cast<unsigned long long>(n), static_cast<unsigned long long>(kMaxHeaderBytes));
  }
  if (n > size - 8) {
    return Status::error(Code::kDataLoss,
                         "%s: safetensors header length %llu runs past the end of the file (%llu bytes after the "
                         "length)",
                         src, static_cast<unsigned long long>(n), static_cast<unsigned long long>(size - 8));
  }
  const char* text = reinterpret_cast<const char*>(data + 8);
  JsonCheck sax;
  sax.run(text, n);
  if (sax.failed()) {
    return Status::error(Code::kDataLoss, "%s: the safetensors header is not valid JSON: %s", src, sax.error().c_str());
  }
  const json top = json::parse(text, text + n, nullptr, /*allow_exceptions=*/false);
  if (top.is_discarded()) return Status::error(Code::kDataLoss, "%s: the safetensors header is not valid JSON", src);
  if (!top.is_object()) {
    return Status::error(Code::kDataLoss, "%s: the safetensors header is %s, expected a JSON object", src,
                         kind_of(top));
  }
  if (const std::string* dup = sax.duplicate_key()) {
    return Status::error(Code::kDataLoss, "%s: tensor '%s' appears twice in the safetensors header", src,
                         Shown(*dup).text);
  }

  entries_.reserve(top.size());
  for (auto it = top.begin(); it != top.end(); ++it) {
    if (it.key() == "__metadata__") continue;  // free-form strings; nothing headway uses
    Entry e;
    HEADWAY_RETURN_IF_ERROR(read_entry(src, it.key(), it.value(), 8 + n, size, &e));
    entries_.push_back(std::move(e));
  }

  // No two tensors may share bytes: sort by begin and compare neighbours (empty ones share none).
  std::vector<const Entry*> by_begin;
  by_begin.reserve(entries_.size());
  for (const Entry& e : entries_) {
    if (e.end > e.begin) by_begin.push_back(&e);
  }
  std::sort(by_begin.begin(), by_begin.end(), [](const Entry* a, const Entry* b) { return a->begin < b->begin; });
  for (size_t i = 1; i < by_begin.size(); ++i) {
    const Entry& a = *by_begin[i - 1];
    const Entry& b = *by_begin[i];
    if (a.end > b.begin) {
      const uint64_t base = 8 + n;
      return Status::error(
          Code::kDataLoss, "%s: tensors '%s' (data_offsets [%llu, %llu]) and '%s' (data_offsets [%llu, %llu]) overlap",
          src, Shown(a.name).text, static_cast<unsigned long long>(a.begin - base),
          static_cast<unsigned long long>(a.end - base), Shown(b.name).text,
          static_cast<unsigned long long>(b.begin - base), static_cast<unsigned long long>(b.end - base));
    }
  }
  // top's keys come sorted (std::map), so entries_ is sorted by name for entry()'s binary search.
  return Status();
}

const SafetensorsFile::Entry* SafetensorsFile::entry(const char* name) const {
  const auto it = std::lower_bound(entries_.begin(), entries_.end(), name,
                                   [](const Entry& e, const char* n) { return std::strcmp(e.name.c_str(), n) < 0; });
  return it != entries_.end() && it->name == name ? &*it : nullptr;
}

Result<TensorRef> SafetensorsFile::find(const char* name, uint32_t* rank) const {
  const Entry* e = entry(name);
  const char* src = source_.c_str();
  if (!e) return Status::error(Code::kNotFound, "%s: no tensor '%s'", src, name);
  TensorRef t;
  if (std::strcmp(e->dtype_name, "F32") == 0) t.dtype = DType::kF32;
  else if (std::strcmp(e->dtype_name, "F16") == 0) t.dtype = DType::kF16;
  else if (std::strcmp(e->dtype_name, "BF16") == 0) t.dtype = DType::kBF16;
  else {
    return Status::error(Code::kUnsupported, "%s: tensor '%s' has dtype %s; headway reads F32, F16 and BF16 weights",
                         src, name, e->dtype_name);
  }
  char s[160];
  format_shape(e->shape, e->rank, s, sizeof(s));
  // A depthwise convolution's [channels, 1, taps] (Gated DeltaNet's conv1d) reads as [channels, taps].
  const bool unit_middle = e->rank == 3 && e->shape[1] == 1;
  if (e->rank > 2 && !unit_middle) {
    return Status::error(Code::kUnsupported,
                         "%s: tensor '%s' has rank %u (shape %s); headway reads 1-D and 2-D weights (and "
                         "[channels, 1, taps] convolutions)",
                         src, name, e->rank, s);
  }
  const uint64_t rows = e->rank >= 2 ? e->shape[0] : 1;
  const uint64_t cols = e->rank == 0 ? 1 : e->shape[e->rank - 1];
  if (rows > UINT32_MAX || cols > UINT32_MAX) {
    return Status::error(Code::kUnsupported, "%s: tensor '%s' has shape %s, a dim past %u", src, name, s, UINT32_MAX);
  }
  const uint8_t* p = data_ + e->begin;
  // The format does not promise aligned data; a float read from an unaligned address is UB.
  if (reinterpret_cast<uintptr_t>(p) % e->dtype_bytes != 0) {
    return Status::error(Code::kUnsupported,
                         "%s: tensor '%s' starts at file offset %llu, not a multiple of its %u-byte %s elements", src,
                         name, static_cast<unsigned long long>(e->begin), e->dtype_bytes, e->dtype_name);
  }
  t.data = p;
  t.rows = static_cast<uint32_t>(rows);
  t.cols = static_cast<uint32_t>(cols);
  if (rank) *rank = e->rank;
  return t;
}

Result<SafetensorsIndex> parse_safetensors_index(const char* text, size_t size, const char* source) {
  const char* src = source ? source : "model.safetensors.index.json";
  JsonCheck sax;
  sax.run(text, size);
  if (sax.failed()) return Status::error(Code::kDataLoss, "%s is not valid JSON: %s", src, sax.error().c_str());
  const json top = json::parse(text, text + size, nullptr, /*allow_exceptions=*/false);
  const auto map = top.is_object() ? top.find("weight_map") : top.end();
  if (!top.is_object() || map == top.end() || !map->is_object()) {
    return Status::error(Code::kDataLoss,
                         "%s: no weight_map object (a sharded checkpoint's index maps each tensor to its shard)", src);
  }
  if (map->empty()) return Status::error(Code::kDataLoss, "%s: weight_map names no tensor", src);
  SafetensorsIndex out;
  out.tensors.reserve(map->size());
  for (auto it = map->begin(); it != map->end(); ++it) {  // sorted by key (std::map)
    const std::string* file = it.value().get_ptr<const json::string_t*>();
    if (file == nullptr || file->empty() || (*file)[0] == '/') {
      return Status::error(Code::kDataLoss, "%s: weight_map gives tensor '%s' %s, expected a shard's file name", src,
                           Shown(it.key()).text,
                           file == nullptr ? kind_of(it.value())
                           : file->empty() ? "an empty name"
                                           : "an absolute path");
    }
    const size_t shard =
        static_cast<size_t>(std::find(out.shards.begin(), out.shards.end(), *file) - out.shards.begin());
    if (shard == out.shards.size()) out.shards.push_back(*file);
    out.tensors.push_back({it.key(), static_cast<uint32_t>(shard)});
  }
  return out;
}

}  // namespace headway::formats
