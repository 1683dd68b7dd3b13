// Host program, run by the Cortex-M build: the whole decoder's data for the firmware
// (examples/baremetal/decoder_run.cc) and what it must produce, from the double-precision
// reference (tests/reference/reference_model.cc):
//   - every tensor of tiny_decoder.hpp's model, seeded: matrices W ~ N(0, 1/in) quantized to q8_0
//     by the library's row quantizer (ggml's bytes), norms ~ 1 + 0.1·N and q/k/v biases ~ 0.1·N in
//     f32; the reference reads the q8_0 blocks' values (q · d, exact in double);
//   - the prompt ids, the greedy tokens (argmax, ties to the lowest id) of a prefill and of each
//     decode step fed the token before, and the logits each token was chosen from [steps, vocab].
// A seed whose greedy choice is closer to a tie than kMinGap is refused (the firmware's f32
// logits could then choose otherwise): the build fails, naming the step.
//   decoder_golden_gen OUT.h
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <string>
#include <vector>

#include "examples/baremetal/tiny_decoder.hpp"
#include "headway/quantize.hpp"
#include "tests/reference/reference_model.hpp"
#include "tests/support/test_rng.hpp"

namespace ht = headway::test;
using headway::DType;
using headway::ModelTensor;

namespace {

constexpr headway::Config kConfig = tiny_decoder::config();
static_assert(ht::reference_model_supports(kConfig));
static_assert(tiny_decoder::options().weight_dtype == DType::kQ8_0 && !tiny_decoder::options().weights_in_arena);
// 50 times the firmware's tolerance on a logit (decoder_run.cc): a choice this clear cannot flip.
constexpr double kMinGap = 0.05;

// One tensor as the image holds it (q8_0 blocks or f32 values) and as the reference reads it.
struct Drawn {
  std::string name;  // the C++ array's
  DType dtype = DType::kF32;
  uint32_t rows = 0, cols = 0;
  std::vector<uint8_t> blocks;
  std::vector<float> values;
  std::vector<double> ref;
};

Drawn draw(ht::Rng& rng, const std::string& name, uint32_t rows, uint32_t cols, bool matrix, double scale,
           double offset) {
  Drawn d{name, matrix ? DType::kQ8_0 : DType::kF32, rows, cols, {}, {}, {}};
  std::vector<float> row(cols);
  for (uint32_t r = 0; r < rows; ++r) {
    for (float& v : row) v = static_cast<float>(offset + scale * rng.normal());
    if (!matrix) {
      d.values.insert(d.values.end(), row.begin(), row.end());
      d.ref.insert(d.ref.end(), row.begin(), row.end());
      continue;
    }
    const size_t bytes = headway::quantized_row_bytes(headway::QuantType::kQ8_0, cols);
    std::vector<uint8_t> q(bytes);
    std::vector<float> back(cols);
    if (!headway::quantize_row(headway::QuantType::kQ8_0, row.data(), cols, q.data(), bytes).ok() ||
        !headway::dequantize_row(headway::QuantType::kQ8_0, q.data(), bytes, cols, back.data()).ok()) {
      std::fprintf(stderr, "decoder_golden_gen: q8_0 of %s failed\n", name.c_str());
      std::exit(1);
    }
    d.blocks.insert(d.blocks.end(), q.begin(), q.end());
    d.ref.insert(d.ref.end(), back.begin(), back.end());
  }
  return d;
}

void write_array(std::FILE* f, const Drawn& d) {
  if (d.dtype == DType::kQ8_0) {
    std::fprintf(f, "alignas(64) inline constexpr uint8_t %s[] = {", d.name.c_str());
    for (size_t i = 0; i < d.blocks.size(); ++i)
      std::fprintf(f, "%s0x%02x", i == 0 ? "\n    " : i % 16 ? ", " : ",\n    ", d.blocks[i]);
  } else {
    std::fprintf(f, "alignas(64) inline constexpr float %s[] = {", d.name.c_str());
    for (size_t i = 0; i < d.values.size(); ++i)
      std::fprintf(f, "%s%.9g", i == 0 ? "\n    " : i % 8 ? ", " : ",\n    ", d.values[i]);
  }
  std::fprintf(f, "};\n");
}

std::string ref_of(const Drawn* d) {
  if (d == nullptr) return "{}";
  char s[160];
  std::snprintf(s, sizeof(s), "{%s, headway::DType::%s, %u, %u}", d->name.c_str(),
                d->dtype == DType::kQ8_0 ? "kQ8_0" : "kF32", d->rows, d->cols);
  return s;
}

template <typename T>
void write_values(std::FILE* f, const char* type, const char* name, const std::vector<T>& v, const char* format) {
  std::fprintf(f, "inline constexpr %s %s[] = {", type, name);
  for (size_t i = 0; i < v.size(); ++i) {
    std::fprintf(f, "%s", i == 0 ? "\n    " : i % 8 ? ", " : ",\n    ");
    std::fprintf(f, format, v[i]);
  }
  std::fprintf(f, "};\n\n");
}

// The argmax of a row (ties: the lowest id) and its lead over the runner-up.
int32_t greedy(const double* logits, uint32_t n, double* gap) {
  uint32_t best = 0;
  for (uint32_t i = 1; i < n; ++i) best = logits[i] > logits[best] ? i : best;
  double second = -INFINITY;
  for (uint32_t i = 0; i < n; ++i) second = i != best && logits[i] > second ? logits[i] : second;
  *gap = logits[best] - second;
  return static_cast<int32_t>(best);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: decoder_golden_gen OUT.h\n");
    return 2;
  }
  const headway::Config& c = kConfig;
  const uint32_t d = c.d_model, hd = c.head_size(), qw = c.n_heads * hd, kvw = c.kv_heads() * hd;
  ht::Rng rng(tiny_decoder::kWeightSeed);

  // The model's tensors in the table's order, layer by layer for the per-layer ones.
  std::deque<Drawn> drawn;  // the pointers below stay valid as it grows
  const Drawn* model_tensor[headway::kModelTensorCount][2] = {};
  static_assert(kConfig.n_layers <= 2);
  ht::RefModelWeights ref;
  for (const headway::ModelTensorInfo& info : headway::kModelTensors) {
    if (!headway::model_has_tensor(c, info.tensor)) continue;
    const headway::TensorShape s = headway::model_tensor_shape(c, info.tensor);
    const uint32_t layers = info.per_layer ? c.n_layers : 1;
    for (uint32_t l = 0; l < layers; ++l) {
      std::string name = std::string("k_") + info.name + (info.per_layer ? std::to_string(l) : "");
      const bool norm = headway::model_tensor_is_norm_weight(info.tensor);
      drawn.push_back(draw(rng, name, s.rows, s.cols, !info.f32, norm ? 0.1 : 1.0 / std::sqrt(s.cols), norm ? 1 : 0));
      model_tensor[static_cast<uint32_t>(info.tensor)][l] = &drawn.back();
      ref.tensor[static_cast<uint32_t>(info.tensor)].push_back(drawn.back().ref);
    }
  }
  // Each layer's attention: Wq, Wk, Wv, Wo in q8_0, the q/k/v biases in f32.
  const Drawn* attention[2][7] = {};
  const char* kAttentionNames[] = {"wq", "wk", "wv", "wo", "bq", "bk", "bv"};
  for (uint32_t l = 0; l < c.n_layers; ++l) {
    const uint32_t rows[] = {qw, kvw, kvw, d, 1, 1, 1};
    const uint32_t cols[] = {d, d, d, qw, qw, kvw, kvw};
    ht::RefWeights r;
    std::vector<double>* into[] = {&r.wq, &r.wk, &r.wv, &r.wo, &r.bq, &r.bk, &r.bv};
    for (int i = 0; i < 7; ++i) {
      const bool matrix = i < 4;
      const std::string name = std::string("k_") + kAttentionNames[i] + std::to_string(l);
      drawn.push_back(draw(rng, name, rows[i], cols[i], matrix, matrix ? 1.0 / std::sqrt(cols[i]) : 0.1, 0.0));
      attention[l][i] = &drawn.back();
      *into[i] = drawn.back().ref;
    }
    ref.attention.push_back(r);
  }

  // The prompt, then greedy decoding fed back, in the reference.
  const uint32_t vocab = c.model.vocab_size;
  ht::Rng prompt_rng(tiny_decoder::kPromptSeed);
  std::vector<int32_t> prompt(tiny_decoder::kPromptTokens);
  for (int32_t& id : prompt) id = static_cast<int32_t>(prompt_rng.next() % vocab);
  ht::RefModel model(c, ref);
  std::vector<int32_t> tokens;
  std::vector<float> logits;
  double min_gap = INFINITY;
  std::vector<double> out = model.forward(prompt);
  for (uint32_t step = 0; step < tiny_decoder::kGreedyTokens; ++step) {
    const double* last = out.data() + out.size() - vocab;
    double gap = 0.0;
    tokens.push_back(greedy(last, vocab, &gap));
    logits.insert(logits.end(), last, last + vocab);
    if (gap < kMinGap) {
      std::fprintf(stderr, "decoder_golden_gen: greedy step %u is a near-tie (gap %.3g < %.3g): change the seed\n",
                   step, gap, kMinGap);
      return 1;
    }
    min_gap = gap < min_gap ? gap : min_gap;
    if (step + 1 < tiny_decoder::kGreedyTokens) out = model.forward({tokens.back()});
  }

  std::FILE* f = std::fopen(argv[1], "w");
  if (f == nullptr) {
    std::fprintf(stderr, "decoder_golden_gen: cannot write %s\n", argv[1]);
    return 1;
  }
  std::fprintf(f,
               "// Generated at build time by tests/baremetal/decoder_golden_gen.cc: tiny_decoder.hpp's\n"
               "// weights (q8_0 matrices, f32 norms and biases), its prompt, and the double-precision\n"
               "// reference's greedy tokens and the logits they were chosen from.\n#pragma once\n\n"
               "#include <cstdint>\n\n#include \"headway/model_tensors.hpp\"\n#include \"headway/weights.hpp\"\n\n"
               "namespace tiny_decoder {\n\n");
  for (const Drawn& t : drawn) write_array(f, t);
  std::fprintf(f, "\n// [ModelTensor][layer] (the whole-model tensors at layer 0); {}: absent.\n");
  std::fprintf(f, "inline constexpr headway::TensorRef kTensors[headway::kModelTensorCount][%u] = {\n", c.n_layers);
  for (uint32_t t = 0; t < headway::kModelTensorCount; ++t) {
    std::fprintf(f, "    {");
    for (uint32_t l = 0; l < c.n_layers; ++l)
      std::fprintf(f, "%s%s", l ? ", " : "", ref_of(model_tensor[t][l]).c_str());
    std::fprintf(f, "},\n");
  }
  std::fprintf(f, "};\ninline constexpr headway::LayerWeights kAttention[] = {\n");
  for (uint32_t l = 0; l < c.n_layers; ++l) {
    std::fprintf(f, "    {");
    for (int i = 0; i < 7; ++i) std::fprintf(f, "%s%s", i ? ", " : "", ref_of(attention[l][i]).c_str());
    std::fprintf(f, ", {}, {}, {}, {}},\n");  // no bo, q/k norms or sinks
  }
  std::fprintf(f, "};\n\n");
  write_values(f, "int32_t", "kPrompt", prompt, "%d");
  write_values(f, "int32_t", "kGreedy", tokens, "%d");
  write_values(f, "float", "kLogits", logits, "%.9g");
  std::fprintf(f, "// The smallest lead of a greedy choice over the runner-up, in the reference.\n");
  std::fprintf(f, "inline constexpr double kMinGreedyGap = %.9g;\n\n}  // namespace tiny_decoder\n", min_gap);
  return std::fclose(f) == 0 ? 0 : 1;
}
