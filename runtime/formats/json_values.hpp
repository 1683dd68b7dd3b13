// Reading values out of a parsed config.json, for messages that name the file, the key and the
// value. Built with -fno-exceptions and JSON_NOEXCEPTION: values are reached only through find()
// and get_ptr<>() after an is_*() check (nlohmann's throwing accessors would abort).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "headway/status.hpp"

namespace headway::formats {

// Counts are stored as uint32_t; 2^31 - 1 leaves every product of two of them in 64 bits and
// keeps them printable as int.
inline constexpr uint64_t kMaxCount = 0x7fffffffu;

// Where a key lives, for messages: "config.json: text_config.hidden_size is ...".
struct Where {
  const char* source;
  const char* prefix;  // "" or "text_config."
};

const char* kind_of(const nlohmann::json& v);
// A short text of a value for messages (containers are shown as [...] and {...}).
std::string shown(const nlohmann::json& v);
// The value of `key` in `obj`; nullptr when absent or null (HF writes null for "not set").
const nlohmann::json* lookup(const nlohmann::json& obj, const char* key);

template <size_t N>
const nlohmann::json* lookup_any(const nlohmann::json& obj, const char* const (&keys)[N], const char** found) {
  for (const char* key : keys) {
    if (const nlohmann::json* v = lookup(obj, key)) {
      *found = key;
      return v;
    }
  }
  return nullptr;
}

template <size_t N>
std::string joined(const char* const (&keys)[N]) {
  std::string s;
  for (const char* key : keys) {
    if (!s.empty()) s += ", ";
    s += key;
  }
  return s;
}

// The numeric value as a double (exact for every integer up to 2^53). Precondition: is_number().
double as_double(const nlohmann::json& v);
// A count: an integer in [min_value, 2^31). An integral float (4096.0) is accepted; a fraction,
// a negative, a string or a boolean is not.
Status read_count(const Where& w, const char* key, const nlohmann::json& v, uint32_t min_value, uint32_t* out);
// A finite positive real that fits a float; with allow_zero, 0 too (0 = "off").
Status read_real(const Where& w, const char* key, const nlohmann::json& v, bool allow_zero, double* out);
// An optional boolean: *out is left alone when the key is absent or null.
Status read_flag(const Where& w, const nlohmann::json& obj, const char* key, bool* out);

}  // namespace headway::formats
