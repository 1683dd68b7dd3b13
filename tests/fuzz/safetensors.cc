// safetensors headers: SafetensorsFile::parse over the fuzz bytes, then find() of every entry;
// every view handed out must lie inside the bytes. Then the same bytes as a weights file: the
// naming and prefix it is read in, and one layer of a small decoder and a small encoder config
// loaded from it (names built from a prefix out of the file, shapes checked against the config).
// And the bytes as a sharded checkpoint's model.safetensors.index.json: parsed or refused.
#include <cstdint>
#include <cstring>

#include "runtime/formats/safetensors.hpp"
#include "runtime/formats/weights_loader.hpp"
#include "tests/fuzz/fuzz_common.hpp"

namespace {

bool inside(const headway::TensorRef& r, const uint8_t* data, size_t size) {
  const uint8_t* p = static_cast<const uint8_t*>(r.data);
  return r.bytes() == 0 || (p >= data && p + r.bytes() <= data + size);
}

// d_model 8, 2 heads of 4, 2 layers: a decoder (GQA 2/1, RoPE, causal) and an encoder (MHA,
// bidirectional, q/k/v/o biases).
headway::Config small(bool encoder) {
  headway::Config c;
  c.set_name(encoder ? "bert" : "llama");
  c.d_model = 8;
  c.n_heads = 2;
  c.n_kv_heads = encoder ? 0 : 1;
  c.max_seq = 16;
  c.n_layers = 2;
  c.causal = !encoder;
  c.rope.style = encoder ? headway::RopeStyle::kNone : headway::RopeStyle::kNeox;
  c.qkv_bias = c.o_bias = encoder;
  return c;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace headway;
  const Result<formats::SafetensorsIndex> index =
      formats::parse_safetensors_index(reinterpret_cast<const char*>(data), size, "fuzz.index.json");
  if (index.ok()) {
    FUZZ_CHECK(!index->shards.empty());
    for (const formats::SafetensorsIndex::Tensor& t : index->tensors) FUZZ_CHECK(t.shard < index->shards.size());
  } else {
    FUZZ_CHECK(std::strlen(index.status().message()) > 0);
  }
  formats::SafetensorsFile f;
  if (!f.parse(data, size, "fuzz.safetensors").ok()) return 0;
  for (const formats::SafetensorsFile::Entry& e : f.entries()) {
    FUZZ_CHECK(e.begin <= e.end && e.end <= size);
    const Result<TensorRef> t = f.find(e.name.c_str());
    if (!t.ok()) continue;
    const TensorRef& r = t.value();
    FUZZ_CHECK(inside(r, data, size));
    const uint8_t* p = static_cast<const uint8_t*>(r.data);
    volatile uint8_t sum = 0;
    for (uint64_t i = 0; i < r.bytes(); ++i) sum = static_cast<uint8_t>(sum + p[i]);
  }

  formats::WeightFile w;
  FUZZ_CHECK(w.parse(data, size, "fuzz.safetensors").ok());  // the same parse as above
  FUZZ_CHECK(w.format() == formats::WeightFormat::kSafetensors);
  if (!w.ambiguous_anchor().empty()) FUZZ_CHECK(f.entry(w.ambiguous_anchor().c_str()) != nullptr);
  for (const bool encoder : {false, true}) {
    for (uint32_t layer = 0; layer < 3; ++layer) {
      const Result<LayerWeights> lw = formats::load_layer_weights(w, small(encoder), layer);
      if (!lw.ok()) {
        FUZZ_CHECK(std::strlen(lw.status().message()) > 0);
        continue;
      }
      const LayerWeights& l = lw.value();
      for (const TensorRef* t : {&l.wq, &l.wk, &l.wv, &l.wo, &l.bq, &l.bk, &l.bv, &l.bo}) {
        FUZZ_CHECK(inside(*t, data, size));
      }
      FUZZ_CHECK(l.wq.rows == 8 && l.wq.cols == 8 && l.wo.rows == 8);
    }
  }
  return 0;
}
