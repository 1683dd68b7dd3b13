// Hugging Face config.json text: parse_hf_config, then make_plan on what parses; the C API
// (headway_config_from_hf_json, headway_plan_create, headway_plan_json) answers the same.
#include <cstdint>

#include "headway/tools/model_files.hpp"
#include "tests/fuzz/fuzz_common.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const char* text = size ? reinterpret_cast<const char*>(data) : "";  // libFuzzer may pass null for no bytes
  const headway::Result<headway::Config> c = headway::parse_hf_config(text, size, "config.json");
  alignas(HEADWAY_OBJECT_ALIGNMENT) static unsigned char memory[4096];
  FUZZ_CHECK(headway_config_object_bytes() <= sizeof(memory));
  headway_error error;
  headway_config* cc = nullptr;
  headway::fuzz::check_same_answer(headway_config_from_hf_json(memory, sizeof(memory), text, size, &cc, &error), error,
                                   c.status());
  if (!c.ok()) return 0;
  headway::fuzz::check_config(c.value());
  headway::fuzz::check_c_plan(cc, c.value());
  return 0;
}
