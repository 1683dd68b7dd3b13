// Host program, run by the Cortex-M build: the data of the firmware's multi-head latent attention
// stack (examples/baremetal/tiny_mla.hpp, run by mla_run.cc) and its expected outputs, from a
// double-precision reference written here in the expanded form, as DeepseekV3Attention computes
// it, not in the absorbed form the runtime runs (runtime/model/mla_layer.cc), so the two meet
// only in the mathematics:
//   q_a = RMS(x·Wq_aᵀ)·q_a_norm;  q = q_a·Wqᵀ, per head [q_nope (32) | q_rope (16)]
//   [c | r] = x·Wkv_aᵀ (c the 64-value latent, r the shared 16-value RoPE key); c = RMS(c)·kv_a_norm
//   per head h: k_nope = W_UK[h]·c, v = W_UV[h]·c (Wkv_b's rows [h·64, h·64 + 32) and the next 32)
//   logits = (q_nope·k_nope + rope(q_rope)·rope(r)) / √(32 + 16), causal; o_h = softmax · v
//   y = [o_0 … o_3]·Woᵀ, and the stack adds it to the residual stream.
// The cache keeps c and rope(r) rounded to f16 (the config's kv_dtype), as KvCache stores the
// latent row; the reference expands the rounded values. Weights are f16 (W ~ N(0, 1/in), norms
// 1 + 0.1·N), the inputs N(0, 1).
//   mla_golden_gen OUT.h
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <vector>

#include "examples/baremetal/tiny_mla.hpp"
#include "tests/reference/reference_attention.hpp"
#include "tests/support/test_rng.hpp"

namespace ht = headway::test;

namespace {

constexpr headway::Config kConfig = tiny_mla::config();
constexpr headway::MlaShape kM = kConfig.mla;
constexpr uint32_t kD = kConfig.d_model, kHeads = kConfig.n_heads;
constexpr uint32_t kNope = kM.qk_nope_head_dim, kRope = kM.qk_rope_head_dim, kLatent = kM.kv_lora_rank;
constexpr uint32_t kQHead = kNope + kRope, kV = kM.v_head_dim;

// One tensor: its f16 bits (what the firmware reads) and the same values for the reference.
struct Tensor {
  const char* name;
  uint32_t rows, cols;
  std::vector<uint16_t> bits;
  std::vector<double> v;
};

Tensor draw(ht::Rng& rng, const char* name, uint32_t rows, uint32_t cols, bool norm) {
  Tensor t{name, rows, cols, {}, {}};
  for (uint64_t i = 0; i < uint64_t{rows} * cols; ++i) {
    const float x = norm ? 1.0f + 0.1f * rng.normal() : rng.normal() / std::sqrt(static_cast<float>(cols));
    t.bits.push_back(ht::f32_to_f16_bits(x));
    t.v.push_back(ht::f16_bits_to_f32(t.bits.back()));
  }
  return t;
}

// A layer's tensors in LayerWeights' MLA order.
struct Layer {
  Tensor wq_a, q_a_norm, wq, wkv_a, kv_a_norm, wkv_b, wo;
  std::vector<double> rope_k, latent;  // the cache: [n, rope] and [n, latent], rounded to f16
  uint32_t n = 0;
};

// y [out] = W [out, in] · x [in]
std::vector<double> matvec(const Tensor& w, const double* x, uint32_t first_row = 0, uint32_t rows = 0) {
  std::vector<double> y(rows ? rows : w.rows);
  for (uint32_t o = 0; o < y.size(); ++o) {
    double s = 0.0;
    for (uint32_t k = 0; k < w.cols; ++k) s += w.v[size_t{first_row + o} * w.cols + k] * x[k];
    y[o] = s;
  }
  return y;
}

void rms_norm(double* v, uint32_t n, const Tensor& w, double eps) {
  double ss = 0.0;
  for (uint32_t i = 0; i < n; ++i) ss += v[i] * v[i];
  const double r = 1.0 / std::sqrt(ss / n + eps);
  for (uint32_t i = 0; i < n; ++i) v[i] *= r * w.v[i];
}

// GPT-J (interleaved) RoPE over n values at position pos: pairs (2i, 2i + 1), θ^(−2i/n).
void rope(double* x, uint32_t n, uint32_t pos) {
  for (uint32_t i = 0; i < n / 2; ++i) {
    const double f = pos * std::pow(static_cast<double>(kConfig.rope.theta), -2.0 * i / n);
    const double a = x[2 * i], b = x[2 * i + 1];
    x[2 * i] = a * std::cos(f) - b * std::sin(f);
    x[2 * i + 1] = b * std::cos(f) + a * std::sin(f);
  }
}

double f16(double x) { return ht::f16_bits_to_f32(ht::f32_to_f16_bits(static_cast<float>(x))); }

// One token through layer l at position l.n (its cache grows by one row first): y [d_model].
std::vector<double> forward(Layer& l, const double* x) {
  const uint32_t pos = l.n;
  std::vector<double> q_a = matvec(l.wq_a, x);
  rms_norm(q_a.data(), kM.q_lora_rank, l.q_a_norm, kM.q_a_norm_eps);
  std::vector<double> q = matvec(l.wq, q_a.data());
  std::vector<double> kv = matvec(l.wkv_a, x);
  rms_norm(kv.data(), kLatent, l.kv_a_norm, kM.kv_a_norm_eps);
  rope(kv.data() + kLatent, kRope, pos);
  for (uint32_t e = 0; e < kRope; ++e) l.rope_k.push_back(f16(kv[kLatent + e]));
  for (uint32_t e = 0; e < kLatent; ++e) l.latent.push_back(f16(kv[e]));
  ++l.n;

  const double scale = 1.0 / std::sqrt(static_cast<double>(kQHead));
  std::vector<double> o(size_t{kHeads} * kV);
  for (uint32_t h = 0; h < kHeads; ++h) {
    double* qh = q.data() + size_t{h} * kQHead;
    rope(qh + kNope, kRope, pos);
    std::vector<double> logit(l.n);
    std::vector<std::vector<double>> v(l.n);
    for (uint32_t j = 0; j < l.n; ++j) {  // causal: every cached token is at or before pos
      const double* c = l.latent.data() + size_t{j} * kLatent;
      const std::vector<double> k_nope = matvec(l.wkv_b, c, h * (kNope + kV), kNope);
      v[j] = matvec(l.wkv_b, c, h * (kNope + kV) + kNope, kV);
      double s = 0.0;
      for (uint32_t e = 0; e < kNope; ++e) s += qh[e] * k_nope[e];
      for (uint32_t e = 0; e < kRope; ++e) s += qh[kNope + e] * l.rope_k[size_t{j} * kRope + e];
      logit[j] = s * scale;
    }
    double m = logit[0], sum = 0.0;
    for (double s : logit) m = s > m ? s : m;
    for (double& s : logit) sum += (s = std::exp(s - m));
    for (uint32_t j = 0; j < l.n; ++j) {
      for (uint32_t e = 0; e < kV; ++e) o[size_t{h} * kV + e] += logit[j] / sum * v[j][e];
    }
  }
  return matvec(l.wo, o.data());
}

void write_floats(std::FILE* f, const char* name, const std::vector<float>& v) {
  std::fprintf(f, "inline constexpr float %s[] = {", name);
  for (size_t i = 0; i < v.size(); ++i) std::fprintf(f, "%s%.9g", i == 0 ? "\n    " : i % 8 ? ", " : ",\n    ", v[i]);
  std::fprintf(f, "};\n\n");
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: mla_golden_gen OUT.h\n");
    return 2;
  }
  static_assert(kConfig.rope.style == headway::RopeStyle::kGptj && kConfig.kv_dtype == headway::DType::kF16 &&
                kM.q_lora_rank != 0);
  std::vector<Layer> layers;
  for (uint32_t i = 0; i < kConfig.n_layers; ++i) {
    ht::Rng rng(tiny_mla::kWeightSeed + i);
    layers.push_back(Layer{draw(rng, "wq_a", kM.q_lora_rank, kD, false),
                           draw(rng, "q_a_norm", 1, kM.q_lora_rank, true),
                           draw(rng, "wq", kHeads * kQHead, kM.q_lora_rank, false),
                           draw(rng, "wkv_a", kLatent + kRope, kD, false),
                           draw(rng, "kv_a_norm", 1, kLatent, true),
                           draw(rng, "wkv_b", kHeads * (kNope + kV), kLatent, false),
                           draw(rng, "wo", kD, kHeads * kV, false),
                           {},
                           {},
                           0});
  }
  std::vector<float> x(size_t{tiny_mla::kTokens} * kD), y;
  ht::Rng rng(tiny_mla::kInputSeed);
  for (float& v : x) v = rng.normal();
  // Token by token: the reference's result does not depend on how the firmware splits its calls.
  for (uint32_t t = 0; t < tiny_mla::kTokens; ++t) {
    std::vector<double> h(x.begin() + size_t{t} * kD, x.begin() + size_t{t + 1} * kD);
    for (Layer& l : layers) {
      const std::vector<double> out = forward(l, h.data());
      for (uint32_t e = 0; e < kD; ++e) h[e] += out[e];
    }
    for (double v : h) y.push_back(static_cast<float>(v));
  }

  std::FILE* f = std::fopen(argv[1], "w");
  if (f == nullptr) {
    std::fprintf(stderr, "mla_golden_gen: cannot write %s\n", argv[1]);
    return 1;
  }
  std::fprintf(f,
               "// Generated at build time by tests/baremetal/mla_golden_gen.cc: the f16 weights of\n"
               "// tiny_mla.hpp's MLA layers, its input rows and the double-precision reference's output rows.\n"
               "#pragma once\n\n#include <cstdint>\n\n#include \"headway/weights.hpp\"\n\nnamespace tiny_mla {\n\n");
  for (uint32_t i = 0; i < layers.size(); ++i) {
    const Layer& l = layers[i];
    for (const Tensor* t : {&l.wq_a, &l.q_a_norm, &l.wq, &l.wkv_a, &l.kv_a_norm, &l.wkv_b, &l.wo}) {
      std::fprintf(f, "alignas(64) inline constexpr uint16_t kLayer%u_%s[] = {", i, t->name);
      for (size_t j = 0; j < t->bits.size(); ++j)
        std::fprintf(f, "%s0x%04x", j == 0 ? "\n    " : j % 12 ? ", " : ",\n    ", t->bits[j]);
      std::fprintf(f, "};\n");
    }
  }
  std::fprintf(f,
               "\n// Designated, in LayerWeights' order; the standard attention's tensors are absent.\n"
               "inline constexpr headway::LayerWeights kLayerWeights[] = {\n");
  for (uint32_t i = 0; i < layers.size(); ++i) {
    const Layer& l = layers[i];
    std::fprintf(f, "    {");
    const char* sep = "";
    for (const Tensor* t : {&l.wq, &l.wo, &l.wq_a, &l.q_a_norm, &l.wkv_a, &l.kv_a_norm, &l.wkv_b}) {
      std::fprintf(f, "%s.%s = {kLayer%u_%s, headway::DType::kF16, %u, %u}", sep, t->name, i, t->name, t->rows,
                   t->cols);
      sep = ",\n     ";
    }
    std::fprintf(f, "},\n");
  }
  std::fprintf(f, "};\n\n");
  write_floats(f, "kInput", x);
  write_floats(f, "kGoldenOut", y);
  std::fprintf(f, "}  // namespace tiny_mla\n");
  return std::fclose(f) == 0 ? 0 : 1;
}
