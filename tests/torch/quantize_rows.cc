// Quantizes rows of raw little-endian f32 with headway's row functions, for quantize_check.py:
//   quantize_rows q8_0|q4_0 N in.f32 out.bin deq.f32
// in.f32 holds R rows of N values; out.bin gets R · quantized_row_bytes(N) bytes (the rows back to
// back), deq.f32 the R · N dequantized values. Exits 2 on bad arguments or I/O errors.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "headway/quantize.hpp"

namespace {

bool read_all(const char* path, std::vector<float>& out) {
  FILE* f = std::fopen(path, "rb");
  if (f == nullptr) return false;
  float buf[1024];
  size_t got = 0;
  while ((got = std::fread(buf, sizeof(float), 1024, f)) > 0) out.insert(out.end(), buf, buf + got);
  const bool ok = std::ferror(f) == 0;
  std::fclose(f);
  return ok;
}

bool write_all(const char* path, const void* data, size_t bytes) {
  FILE* f = std::fopen(path, "wb");
  if (f == nullptr) return false;
  const bool ok = std::fwrite(data, 1, bytes, f) == bytes;
  return std::fclose(f) == 0 && ok;
}

int fail(const char* what) {
  std::fprintf(stderr, "quantize_rows: %s\n", what);
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 6) return fail("usage: quantize_rows q8_0|q4_0 N in.f32 out.bin deq.f32");
  headway::QuantType type;
  if (std::strcmp(argv[1], "q8_0") == 0) {
    type = headway::QuantType::kQ8_0;
  } else if (std::strcmp(argv[1], "q4_0") == 0) {
    type = headway::QuantType::kQ4_0;
  } else {
    return fail("type must be q8_0 or q4_0");
  }
  const size_t n = std::strtoull(argv[2], nullptr, 10);
  std::vector<float> x;
  if (n == 0) return fail("N must be a positive integer");
  if (!read_all(argv[3], x)) return fail("cannot read the input file");
  if (x.size() % n != 0) return fail("the input is not a whole number of rows");
  const size_t rows = x.size() / n;
  const size_t row_bytes = headway::quantized_row_bytes(type, n);
  std::vector<unsigned char> q(rows * row_bytes);
  std::vector<float> y(rows * n);
  for (size_t r = 0; r < rows; ++r) {
    headway::Status s = headway::quantize_row(type, x.data() + r * n, n, q.data() + r * row_bytes, row_bytes);
    if (s.ok()) s = headway::dequantize_row(type, q.data() + r * row_bytes, row_bytes, n, y.data() + r * n);
    if (!s.ok()) return fail(s.message());
  }
  if (!write_all(argv[4], q.data(), q.size())) return fail("cannot write the quantized file");
  if (!write_all(argv[5], y.data(), y.size() * sizeof(float))) return fail("cannot write the dequantized file");
  return 0;
}
