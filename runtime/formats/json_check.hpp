// One SAX pass over a JSON text before it is parsed for real: nlohmann's parser without
// exceptions only says "discarded", while the SAX error carries "parse error at line L, column
// C: ..." — what a user editing the file needs. Also collects the top-level keys, because a
// duplicate key is silently collapsed by the DOM parse (the last one wins).
#pragma once

#include <algorithm>
#include <cstddef>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace headway::formats {

class JsonCheck final : public nlohmann::json::json_sax_t {
 public:
  // Runs the pass over [text, text + size).
  void run(const char* text, size_t size) { nlohmann::json::sax_parse(text, text + size, this); }

  bool failed() const { return !error_.empty(); }
  // The parse error without nlohmann's "[json.exception.parse_error.101] " tag; empty if none.
  const std::string& error() const { return error_; }
  // The first top-level key that appears twice, or nullptr.
  const std::string* duplicate_key() {
    std::sort(keys_.begin(), keys_.end());
    const auto it = std::adjacent_find(keys_.begin(), keys_.end());
    return it == keys_.end() ? nullptr : &*it;
  }

  bool null() override { return true; }
  bool boolean(bool) override { return true; }
  bool number_integer(number_integer_t) override { return true; }
  bool number_unsigned(number_unsigned_t) override { return true; }
  bool number_float(number_float_t, const string_t&) override { return true; }
  bool string(string_t&) override { return true; }
  bool binary(binary_t&) override { return true; }
  bool start_object(std::size_t) override { return ++depth_, true; }
  bool end_object() override { return --depth_, true; }
  bool start_array(std::size_t) override { return ++depth_, true; }
  bool end_array() override { return --depth_, true; }
  bool key(string_t& k) override {
    if (depth_ == 1) keys_.push_back(k);
    return true;
  }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception& ex) override {
    const std::string what = ex.what();
    const size_t tag_end = what.find("] ");
    error_ = tag_end == std::string::npos ? what : what.substr(tag_end + 2);
    if (error_.empty()) error_ = "parse error";
    return false;
  }

 private:
  int depth_ = 0;
  std::vector<std::string> keys_;
  std::string error_;
};

}  // namespace headway::formats
