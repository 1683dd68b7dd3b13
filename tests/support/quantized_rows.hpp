// K/V rows in a block format (q8_0, q4_0) as the KV cache and attend() hold them: each row of d
// values quantized on its own by the library's row functions, and the values those bytes
// dequantize to, which the double reference reads. Shared by the suites, the fuzzer and the
// bare-metal golden generator.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "headway/config.hpp"
#include "headway/quantize.hpp"

namespace headway {
namespace test {

// Row x[0, d) of block dtype t quantized into out (dtype_row_bytes(t, d) bytes), its dequantized
// values into back (which may be x). False where a row function fails.
inline bool quantize_row_and_back(DType t, const float* x, size_t d, uint8_t* out, float* back) {
  const QuantType q = quant_type_of(t);
  const size_t bytes = dtype_row_bytes(t, d);
  return quantize_row(q, x, d, out, bytes).ok() && dequantize_row(q, out, bytes, d, back).ok();
}

// x [rows, d] replaced, row by row, by its dequantized values; the rows' bytes (rows ·
// dtype_row_bytes(t, d)) in *bytes where given.
inline bool quantize_rows_and_back(DType t, std::vector<float>& x, size_t d, std::vector<uint8_t>* bytes = nullptr) {
  const size_t row_bytes = dtype_row_bytes(t, d), rows = d ? x.size() / d : 0;
  std::vector<uint8_t> one_row;
  std::vector<uint8_t>& out = bytes ? *bytes : one_row;
  out.resize(bytes ? rows * row_bytes : row_bytes);
  for (size_t r = 0; r < rows; ++r) {
    uint8_t* dst = out.data() + (bytes ? r * row_bytes : 0);
    if (!quantize_row_and_back(t, x.data() + r * d, d, dst, x.data() + r * d)) return false;
  }
  return true;
}

}  // namespace test
}  // namespace headway
