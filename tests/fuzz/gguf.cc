// GGUF files: parse_gguf_metadata (the bounds-checked kv walk of gguf_reader), then make_plan; and
// the same bytes as a tensor table (GgufFile::parse): every tensor a view or a dequantization
// hands out must lie inside the bytes, and the first rows of every tensor of a ggml type in
// headway's table (q4_0 ... q6_K, f32/f16/bf16) are dequantized; and as a whole model (ModelFile):
// its config, when it reads one, validates or is refused, and the first row of every model
// tensor it has comes out of the source or is refused by name.
#include <cstdint>
#include <vector>

#include "headway/tools/model_file.hpp"
#include "headway/tools/model_files.hpp"
#include "runtime/formats/gguf_tensors.hpp"
#include "tests/fuzz/fuzz_common.hpp"

namespace {

// Rows dequantized per tensor, and the most values a row may have to be dequantized here.
constexpr uint64_t kRows = 2;
constexpr uint64_t kMaxRowValues = 1 << 16;

void check_tensors(const uint8_t* data, size_t size) {
  using headway::formats::GgufFile;
  GgufFile f;
  if (!f.parse(data, size, "fuzz.gguf").ok()) return;
  static std::vector<float> out(kRows * kMaxRowValues);
  for (const GgufFile::Entry& e : f.entries()) {
    FUZZ_CHECK(e.bytes == 0 || (e.begin <= size && e.bytes <= size - e.begin));
    const headway::Result<headway::TensorRef> view = f.find(e.name.c_str());
    if (view.ok()) {
      const uint8_t* p = static_cast<const uint8_t*>(view->data);
      FUZZ_CHECK(p >= data && p + view->bytes() <= data + size);
    }
    const headway::Result<GgufFile::Stored> t = f.stored(e.name.c_str());
    if (!t.ok()) continue;
    FUZZ_CHECK(t->data >= data && t->data <= data + size);
    FUZZ_CHECK(t->rows == 0 || t->row_bytes <= static_cast<uint64_t>(data + size - t->data) / t->rows);
    if (t->row_values > kMaxRowValues) continue;
    const uint64_t rows = t->rows < kRows ? t->rows : kRows;
    const headway::Status s = f.dequantize_rows(e.name.c_str(), 0, rows, out.data(), out.size());
    FUZZ_CHECK(s.ok());
    FUZZ_CHECK(!f.dequantize_rows(e.name.c_str(), t->rows, 1, out.data(), out.size()).ok());
  }
}

void check_model(const uint8_t* data, size_t size) {
  headway::ModelFile m;
  if (!m.parse(data, size, "fuzz.gguf").ok()) return;
  const headway::Result<headway::Config> c = m.config();
  if (!c.ok()) return;
  const headway::Config& config = c.value();
  if (!headway::validate(config).ok()) return;
  const headway::ModelWeightsSource source = m.source();
  static std::vector<float> row(kMaxRowValues);
  for (const headway::ModelTensorInfo& info : headway::kModelTensors) {
    if (!headway::model_has_tensor(config, info.tensor)) continue;
    const headway::TensorShape shape = headway::model_tensor_shape(config, info.tensor);
    if (shape.cols > kMaxRowValues || shape.rows == 0) continue;
    (void)source.rows(source.ctx, info.tensor, 0, shape, 0, 1, row.data());
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const headway::Result<headway::Config> c = headway::parse_gguf_metadata(data, size, "fuzz.gguf");
  if (c.ok()) headway::fuzz::check_config(c.value());
  check_tensors(data, size);
  check_model(data, size);
  return 0;
}
