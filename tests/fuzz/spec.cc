// The spec string: parse_spec, then validate and make_plan on what parses.
#include <cstdint>
#include <cstring>
#include <vector>

#include "headway/config.hpp"
#include "tests/fuzz/fuzz_common.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::vector<char> text(data, data + size);
  text.push_back('\0');  // parse_spec takes a C string: it ends at the first NUL
  const headway::Result<headway::Config> c = headway::parse_spec(text.data());
  if (!c.ok()) {
    FUZZ_CHECK(std::strlen(c.status().message()) > 0);
    return 0;
  }
  headway::fuzz::check_config(c.value());
  return 0;
}
