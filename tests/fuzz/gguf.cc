// GGUF metadata: parse_gguf_metadata (the bounds-checked kv walk of gguf_reader), then make_plan.
#include <cstdint>

#include "headway/model_files.hpp"
#include "tests/fuzz/fuzz_common.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const headway::Result<headway::Config> c = headway::parse_gguf_metadata(data, size, "fuzz.gguf");
  if (c.ok()) headway::fuzz::check_config(c.value());
  return 0;
}
