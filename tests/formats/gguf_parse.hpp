// The GGUF metadata tests' two outcomes of parsing a written file: a Config that also validates,
// or the error.
#pragma once

#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "headway/config.hpp"
#include "headway/tools/model_files.hpp"
#include "tests/formats/gguf_writer.hpp"

namespace headway {
namespace test {

inline Config parse_ok(const GgufWriter& w) {
  const std::vector<uint8_t> b = w.bytes();
  const Result<Config> r = parse_gguf_metadata(b.data(), b.size(), "m.gguf");
  REQUIRE_MESSAGE(r.ok(), std::string(r.status().message()));
  const Status v = validate(*r);
  CHECK_MESSAGE(v.ok(), std::string(v.message()));
  return *r;
}

inline Status parse_error(const GgufWriter& w) {
  const std::vector<uint8_t> b = w.bytes();
  const Result<Config> r = parse_gguf_metadata(b.data(), b.size(), "m.gguf");
  REQUIRE_FALSE(r.ok());
  return r.status();
}

}  // namespace test
}  // namespace headway
