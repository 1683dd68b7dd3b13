#include "runtime/formats/json_values.hpp"

#include <cfloat>
#include <cmath>

namespace headway::formats {

using json = nlohmann::json;

const char* kind_of(const json& v) {
  if (v.is_string()) return "a string";
  if (v.is_boolean()) return "a boolean";
  if (v.is_array()) return "an array";
  if (v.is_object()) return "an object";
  if (v.is_null()) return "null";
  return "a number";
}

// A short text of a value for messages. Containers are never dumped: dump() recurses, and a
// hostile file can nest a million levels deep.
std::string shown(const json& v) {
  if (v.is_array()) return "[...]";
  if (v.is_object()) return "{...}";
  std::string s = v.dump(-1, ' ', false, json::error_handler_t::replace);
  if (s.size() > 48) {
    s.resize(45);
    s += "...";
  }
  return s;
}

// The value of `key` in `obj`; nullptr when absent or null (HF writes null for "not set").
const json* lookup(const json& obj, const char* key) {
  if (!obj.is_object()) return nullptr;
  const auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return nullptr;
  return &*it;
}

// The numeric value as a double (exact for every integer up to 2^53). Precondition: is_number().
double as_double(const json& v) {
  if (const auto* u = v.get_ptr<const json::number_unsigned_t*>()) return static_cast<double>(*u);
  if (v.is_number_float()) return *v.get_ptr<const json::number_float_t*>();
  return static_cast<double>(*v.get_ptr<const json::number_integer_t*>());
}

// A count: an integer in [min_value, 2^31). An integral float (4096.0) is accepted; a fraction,
// a negative, a string or a boolean is not.
Status read_count(const Where& w, const char* key, const json& v, uint32_t min_value, uint32_t* out) {
  const char* expected = min_value > 0 ? "a positive integer" : "a non-negative integer";
  if (!v.is_number()) {
    return Status::error(Code::kInvalidArgument, "%s: %s%s is %s (%s), expected %s", w.source, w.prefix, key,
                         shown(v).c_str(), kind_of(v), expected);
  }
  uint64_t value = 0;
  bool bad = false;
  bool too_large = false;
  if (const auto* u = v.get_ptr<const json::number_unsigned_t*>()) {
    too_large = *u > kMaxCount;
    value = *u;
  } else if (v.is_number_float()) {
    const double d = *v.get_ptr<const json::number_float_t*>();
    if (!(d >= 0.0) || d != std::floor(d)) {
      bad = true;
    } else if (d > static_cast<double>(kMaxCount)) {
      too_large = true;
    } else {
      value = static_cast<uint64_t>(d);
    }
  } else {
    const auto i = *v.get_ptr<const json::number_integer_t*>();
    bad = i < 0;
    value = bad ? 0 : static_cast<uint64_t>(i);
  }
  if (too_large) {
    return Status::error(Code::kInvalidArgument, "%s: %s%s is %s, more than %llu, the largest count headway stores",
                         w.source, w.prefix, key, shown(v).c_str(), static_cast<unsigned long long>(kMaxCount));
  }
  if (bad || value < min_value) {
    return Status::error(Code::kInvalidArgument, "%s: %s%s is %s, expected %s", w.source, w.prefix, key,
                         shown(v).c_str(), expected);
  }
  *out = static_cast<uint32_t>(value);
  return Status();
}

// A finite positive real that fits a float; with allow_zero, 0 too (0 = "off").
Status read_real(const Where& w, const char* key, const json& v, bool allow_zero, double* out) {
  const char* expected = allow_zero ? "a non-negative number" : "a positive number";
  if (!v.is_number()) {
    return Status::error(Code::kInvalidArgument, "%s: %s%s is %s (%s), expected %s", w.source, w.prefix, key,
                         shown(v).c_str(), kind_of(v), expected);
  }
  const double d = as_double(v);
  if (!(d > 0.0 || (allow_zero && d == 0.0))) {
    return Status::error(Code::kInvalidArgument, "%s: %s%s is %s, expected %s", w.source, w.prefix, key,
                         shown(v).c_str(), expected);
  }
  if (d > static_cast<double>(FLT_MAX)) {
    return Status::error(Code::kInvalidArgument, "%s: %s%s is %s, too large for the 32-bit float headway stores it in",
                         w.source, w.prefix, key, shown(v).c_str());
  }
  *out = d;
  return Status();
}

// An optional boolean: *out is left alone when the key is absent or null.
Status read_flag(const Where& w, const json& obj, const char* key, bool* out) {
  const json* v = lookup(obj, key);
  if (!v) return Status();
  if (!v->is_boolean()) {
    return Status::error(Code::kInvalidArgument, "%s: %s%s is %s (%s), expected true or false", w.source, w.prefix, key,
                         shown(*v).c_str(), kind_of(*v));
  }
  *out = *v->get_ptr<const json::boolean_t*>();
  return Status();
}

}  // namespace headway::formats
