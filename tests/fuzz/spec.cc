// The spec string: parse_spec, then validate and make_plan on what parses; the C API
// (headway_config_from_spec, headway_plan_create, headway_plan_json) answers the same.
#include <cstdint>
#include <cstring>
#include <vector>

#include "headway/config.hpp"
#include "tests/fuzz/fuzz_common.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::vector<char> text(data, data + size);
  text.push_back('\0');  // parse_spec takes a C string: it ends at the first NUL
  const headway::Result<headway::Config> c = headway::parse_spec(text.data());
  alignas(HEADWAY_OBJECT_ALIGNMENT) static unsigned char memory[4096];
  FUZZ_CHECK(headway_config_object_bytes() <= sizeof(memory));
  headway_error error;
  headway_config* cc = nullptr;
  headway::fuzz::check_same_answer(headway_config_from_spec(memory, sizeof(memory), text.data(), &cc, &error), error,
                                   c.status());
  if (!c.ok()) {
    FUZZ_CHECK(std::strlen(c.status().message()) > 0);
    return 0;
  }
  headway::fuzz::check_config(c.value());
  headway::fuzz::check_c_plan(cc, c.value());
  return 0;
}
