// Host program, run by the Cortex-M build: the firmware's data (examples/baremetal/main.cc) and
// its expected outputs from the double-precision reference (tests/reference/reference_layer.cc):
//   - each layer's weights as make_test_weights draws them, f16 bit patterns, with their shapes;
//   - the input rows x [kTokens, d_model] f32;
//   - the reference stack's output y [kTokens, d_model]: a prefill of kPromptTokens, then one
//     token at a time, as the firmware runs them.
//   firmware_golden_gen OUT.h
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <vector>

#include "examples/baremetal/tiny_model.hpp"
#include "tests/reference/reference_layer.hpp"
#include "tests/support/test_rng.hpp"

namespace ht = headway::test;

namespace {

void write_floats(std::FILE* f, const char* name, const std::vector<float>& v) {
  std::fprintf(f, "inline constexpr float %s[] = {", name);
  for (size_t i = 0; i < v.size(); ++i) std::fprintf(f, "%s%.9g", i == 0 ? "\n    " : i % 8 ? ", " : ",\n    ", v[i]);
  std::fprintf(f, "};\n\n");
}

const char* kNames[] = {"wq", "wk", "wv", "wo", "bq", "bk", "bv", "bo", "q_norm", "k_norm"};

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: firmware_golden_gen OUT.h\n");
    return 2;
  }
  constexpr headway::Config c = tiny::config();
  constexpr headway::PlanOptions o = tiny::options();
  std::vector<ht::TestLayerWeights> weights;
  std::vector<ht::RefLayer> ref;
  for (uint32_t l = 0; l < c.n_layers; ++l) {
    weights.push_back(ht::make_test_weights(c, o.weight_dtype, tiny::kWeightSeed + l));
    ref.emplace_back(c, weights.back().ref);
  }
  std::vector<float> x(size_t{tiny::kTokens} * c.d_model);
  ht::Rng rng(tiny::kInputSeed);
  for (float& v : x) v = rng.normal();

  std::vector<float> y;
  auto run = [&](uint32_t first, uint32_t n) {
    const std::vector<double> in(x.begin() + size_t{first} * c.d_model, x.begin() + size_t{first + n} * c.d_model);
    const std::vector<double> out = ht::reference_stack(ref, in, n);
    y.insert(y.end(), out.begin(), out.end());
  };
  run(0, tiny::kPromptTokens);
  for (uint32_t i = 0; i < tiny::kDecodeSteps; ++i) run(tiny::kPromptTokens + i, 1);

  std::FILE* f = std::fopen(argv[1], "w");
  if (f == nullptr) {
    std::fprintf(stderr, "firmware_golden_gen: cannot write %s\n", argv[1]);
    return 1;
  }
  std::fprintf(f,
               "// Generated at build time by tests/baremetal/firmware_golden_gen.cc: the weights of\n"
               "// tiny_model.hpp's layers (f16), its input rows and the double-precision reference's\n"
               "// output rows.\n#pragma once\n\n#include <cstdint>\n\n#include \"headway/weights.hpp\"\n\n"
               "namespace tiny {\n\n");
  for (uint32_t l = 0; l < c.n_layers; ++l) {
    const headway::LayerWeights& w = weights[l].view;
    const headway::TensorRef* t[] = {&w.wq, &w.wk, &w.wv, &w.wo, &w.bq, &w.bk, &w.bv, &w.bo, &w.q_norm, &w.k_norm};
    for (int i = 0; i < 10; ++i) {
      if (!t[i]->present()) continue;
      const uint16_t* bits = static_cast<const uint16_t*>(t[i]->data);
      std::fprintf(f, "alignas(64) inline constexpr uint16_t kLayer%u_%s[] = {", l, kNames[i]);
      for (uint64_t j = 0; j < t[i]->elements(); ++j) {
        std::fprintf(f, "%s0x%04x", j == 0 ? "\n    " : j % 12 ? ", " : ",\n    ", bits[j]);
      }
      std::fprintf(f, "};\n");
    }
    std::fprintf(f, "\n");
  }
  std::fprintf(f, "inline constexpr headway::LayerWeights kLayerWeights[] = {\n");
  for (uint32_t l = 0; l < c.n_layers; ++l) {
    const headway::LayerWeights& w = weights[l].view;
    const headway::TensorRef* t[] = {&w.wq, &w.wk, &w.wv, &w.wo, &w.bq, &w.bk, &w.bv, &w.bo, &w.q_norm, &w.k_norm};
    std::fprintf(f, "    {");
    for (int i = 0; i < 10; ++i) {
      if (t[i]->present()) {
        std::fprintf(f, "%s{kLayer%u_%s, headway::DType::kF16, %u, %u}", i ? ", " : "", l, kNames[i], t[i]->rows,
                     t[i]->cols);
      } else {
        std::fprintf(f, "%s{}", i ? ", " : "");
      }
    }
    std::fprintf(f, "},\n");
  }
  std::fprintf(f, "};\n\n");
  write_floats(f, "kInput", x);
  write_floats(f, "kGoldenOut", y);
  std::fprintf(f, "}  // namespace tiny\n");
  return std::fclose(f) == 0 ? 0 : 1;
}
