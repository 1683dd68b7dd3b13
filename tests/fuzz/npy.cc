// .npy files: parse_npy, refusing and accepting bool arrays; what parses must hold exactly its
// elements' bytes, and a bool array parses only where bools are accepted.
#include <cstdint>

#include "headway/tools/npy.hpp"
#include "tests/fuzz/fuzz_common.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace headway;
  for (const formats::NpyBool bools : {formats::NpyBool::kRefuse, formats::NpyBool::kAccept}) {
    const Result<formats::NpyArray> a = formats::parse_npy(data, size, "fuzz.npy", bools);
    if (!a.ok()) continue;
    const formats::NpyArray& arr = a.value();
    FUZZ_CHECK(!arr.boolean || bools == formats::NpyBool::kAccept);
    FUZZ_CHECK(arr.ndim <= formats::kNpyMaxDims);
    uint64_t elements = 1;
    for (uint32_t i = 0; i < arr.ndim; ++i) elements *= arr.shape[i];
    FUZZ_CHECK(elements == arr.elements);
    FUZZ_CHECK(arr.data.size() == arr.elements * (arr.boolean ? 1 : dtype_bytes(arr.dtype)));
    // Every element is readable (ASan checks the reads).
    volatile uint8_t sum = 0;
    for (const uint8_t b : arr.data) sum = static_cast<uint8_t>(sum + b);
  }
  return 0;
}
