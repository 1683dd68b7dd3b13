// safetensors headers: SafetensorsFile::parse over the fuzz bytes, then find() of every entry;
// every view handed out must lie inside the bytes.
#include <cstdint>

#include "runtime/formats/safetensors.hpp"
#include "tests/fuzz/fuzz_common.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace headway;
  formats::SafetensorsFile f;
  if (!f.parse(data, size, "fuzz.safetensors").ok()) return 0;
  for (const formats::SafetensorsFile::Entry& e : f.entries()) {
    FUZZ_CHECK(e.begin <= e.end && e.end <= size);
    const Result<TensorRef> t = f.find(e.name.c_str());
    if (!t.ok()) continue;
    const TensorRef& r = t.value();
    const uint8_t* p = static_cast<const uint8_t*>(r.data);
    FUZZ_CHECK(r.bytes() == 0 || (p >= data && p + r.bytes() <= data + size));
    volatile uint8_t sum = 0;
    for (uint64_t i = 0; i < r.bytes(); ++i) sum = static_cast<uint8_t>(sum + p[i]);
  }
  return 0;
}
