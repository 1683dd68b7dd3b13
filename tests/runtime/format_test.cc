#include <doctest/doctest.h>

#include <cstring>
#include <string>

#include "runtime/core/format.hpp"

namespace headway {
namespace {

std::string fmt(const char* f, auto... args) {
  char buf[128];
  format_to(buf, sizeof(buf), f, args...);
  return buf;
}

TEST_CASE("format_to prints the conversions messages use") {
  CHECK(fmt("%d %i %u", -12, 7, 4000000000u) == "-12 7 4000000000");
  CHECK(fmt("%ld %lu %lld %llu", -5L, 6UL, -9000000000LL, 18000000000000000000ULL) ==
        "-5 6 -9000000000 18000000000000000000");
  CHECK(fmt("%zu %x %c %s %%", size_t{42}, 255u, 'q', "heads") == "42 ff q heads %");
  CHECK(fmt("%.2f", 800.0 / 12) == "66.67");
  CHECK(fmt("%.0f %f", 2.5, 0.125) == "3 0.125000");
  CHECK(fmt("%.2f", -1.005) == "-1.00");
  CHECK(fmt("%g %g %g %g", 50.0, 10000.0, 0.4, 500000.0) == "50 10000 0.4 500000");
  CHECK(fmt("%g", 0.08838834764) == "0.0883883");
  CHECK(fmt("%g %g", 1.0 / 0.0, 0.0 / 0.0) == "inf nan");
  CHECK(fmt("%s", static_cast<const char*>(nullptr)) == "(null)");
}

TEST_CASE("format_to truncates, terminates and never writes past the buffer") {
  char buf[8];
  std::memset(buf, 'X', sizeof(buf));
  CHECK(format_to(buf, 5, "%s", "abcdefgh") == 4);
  CHECK(std::string(buf) == "abcd");
  CHECK(buf[5] == 'X');
  CHECK(format_to(buf, 0, "%s", "abc") == 0);
  CHECK(buf[0] == 'a');
}

}  // namespace
}  // namespace headway
