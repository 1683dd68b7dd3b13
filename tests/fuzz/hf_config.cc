// Hugging Face config.json text: parse_hf_config, then make_plan on what parses.
#include <cstdint>

#include "headway/model_files.hpp"
#include "tests/fuzz/fuzz_common.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const headway::Result<headway::Config> c =
      headway::parse_hf_config(reinterpret_cast<const char*>(data), size, "fuzz.json");
  if (c.ok()) headway::fuzz::check_config(c.value());
  return 0;
}
