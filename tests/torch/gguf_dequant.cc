// Dequantizes tensors of a GGUF file with headway's reader, for gguf_dequant_check.py:
//   gguf_dequant FILE OUT.f32 NAME[:FIRST:COUNT]...
// opens FILE (every tensor descriptor checked), then writes the f32 rows of each named tensor
// (all of its rows, or COUNT rows from row FIRST) to OUT.f32, little-endian, one tensor after
// the other, and prints "NAME TYPE ROWS ROW_VALUES" per tensor. Exits 2 with the Status message
// on any error.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "runtime/formats/gguf_tensors.hpp"

namespace {

int fail(const char* what) {
  std::fprintf(stderr, "gguf_dequant: %s\n", what);
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 4) return fail("usage: gguf_dequant FILE OUT.f32 NAME[:FIRST:COUNT]...");
  headway::formats::GgufFile file;
  const headway::Status opened = file.open(argv[1]);
  if (!opened.ok()) return fail(opened.message());
  std::FILE* out = std::fopen(argv[2], "wb");
  if (out == nullptr) return fail("cannot write the output file");
  for (int i = 3; i < argc; ++i) {
    std::string name = argv[i];
    uint64_t first = 0, count = ~uint64_t{0};
    const size_t colon = name.find(':');
    if (colon != std::string::npos) {
      char* end = nullptr;
      first = std::strtoull(name.c_str() + colon + 1, &end, 10);
      if (*end != ':') return fail("a tensor is NAME or NAME:FIRST:COUNT");
      count = std::strtoull(end + 1, nullptr, 10);
      name.resize(colon);
    }
    const headway::Result<headway::formats::GgufFile::Stored> t = file.stored(name.c_str());
    if (!t.ok()) return fail(t.status().message());
    if (count == ~uint64_t{0}) count = t->rows - first;
    std::vector<float> values(static_cast<size_t>(count * t->row_values));
    const headway::Status s = file.dequantize_rows(name.c_str(), first, count, values.data(), values.size());
    if (!s.ok()) return fail(s.message());
    if (std::fwrite(values.data(), sizeof(float), values.size(), out) != values.size()) {
      return fail("cannot write the output file");
    }
    std::printf("%s %s %llu %llu\n", name.c_str(), t->type->name, static_cast<unsigned long long>(t->rows),
                static_cast<unsigned long long>(t->row_values));
  }
  return std::fclose(out) == 0 ? 0 : fail("cannot write the output file");
}
