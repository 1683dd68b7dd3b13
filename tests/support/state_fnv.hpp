// The hash of a model's state bytes (include/headway/model.hpp: its checksum and its weights
// fingerprint), written out apart from runtime/model/model_state.cc's so that tests and the state
// fuzzer check the library's against it: FNV-1a over 8-byte words, then the tail's bytes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace headway::test {

inline constexpr uint64_t kStateFnvOffset = 14695981039346656037ull;

inline uint64_t state_fnv(const void* data, size_t n, uint64_t h = kStateFnvOffset) {
  const uint8_t* p = static_cast<const uint8_t*>(data);
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    uint64_t w = 0;
    std::memcpy(&w, p + i, 8);
    h = (h ^ w) * 1099511628211ull;
  }
  for (; i < n; ++i) h = (h ^ p[i]) * 1099511628211ull;
  return h;
}

}  // namespace headway::test
