// The normalized Walsh-Hadamard rotation straight from its definition, in double: Sylvester's
// matrix H_b (H_1 = [1], H_2b = [[H_b, H_b], [H_b, −H_b]]) times 1/sqrt(b), block-diagonal over a
// row with b = hadamard_block(n). Entry (i, j) of the unnormalized H_b is (−1)^popcount(i & j).
#pragma once

#include <cmath>
#include <cstdint>
#include <vector>

#include "headway/hadamard.hpp"

namespace headway::test {

inline double sylvester_entry(uint32_t i, uint32_t j, uint32_t b) {
  return (__builtin_popcount(i & j) & 1 ? -1.0 : 1.0) / std::sqrt(static_cast<double>(b));
}

// y = diag(H_b, …) x for one row of n values (n a multiple of b = hadamard_block(n)).
inline std::vector<double> hadamard_reference(const double* x, uint32_t n) {
  const uint32_t b = hadamard_block(n);
  std::vector<double> y(n, 0.0);
  for (uint32_t base = 0; base < n; base += b) {
    for (uint32_t i = 0; i < b; ++i) {
      double s = 0;
      for (uint32_t j = 0; j < b; ++j) s += sylvester_entry(i, j, b) * x[base + j];
      y[base + i] = s;
    }
  }
  return y;
}

// Every row of head_dim values of x (rows back to back) rotated in double.
inline void hadamard_reference_rows(std::vector<double>* x, uint32_t head_dim) {
  for (size_t r = 0; r + head_dim <= x->size(); r += head_dim) {
    const std::vector<double> y = hadamard_reference(x->data() + r, head_dim);
    for (uint32_t i = 0; i < head_dim; ++i) (*x)[r + i] = y[i];
  }
}

}  // namespace headway::test
