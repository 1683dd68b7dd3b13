// `headway attend` end to end: the built binary (HEADWAY_CLI) on .npy files written into a
// fresh temp dir. Exit 0 with O close to the double reference, or exit 2 with the reason.
#include <doctest/doctest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "headway/backend.hpp"
#include "headway/dtype_convert.hpp"
#include "headway/hadamard.hpp"
#include "headway/tools/npy.hpp"
#include "headway/quantize.hpp"
#include "tests/reference/reference_attention.hpp"
#include "tests/support/hadamard_reference.hpp"
#include "tests/support/quantized_rows.hpp"
#include "tests/support/temp_dir.hpp"

#ifndef HEADWAY_CLI
#error "HEADWAY_CLI must name the built headway binary"
#endif

namespace headway {
namespace {

using formats::NpyArray;

using test::RunResult;
using test::slurp;
using test::TempDir;

// Runs `headway attend ARGS` with stdout and stderr captured in files of `dir`.
RunResult attend_cli(const TempDir& dir, const std::string& args) {
  return test::run_cli(HEADWAY_CLI, dir, "attend " + args);
}

std::vector<float> normal_values(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v) x = normal(rng);
  return v;
}

void write_f32(const std::string& path, const std::vector<float>& data, std::vector<uint64_t> shape) {
  REQUIRE(formats::save_npy(path.c_str(), DType::kF32, data.data(), shape.data(), static_cast<uint32_t>(shape.size()))
              .ok());
}

void write_f16(const std::string& path, const std::vector<float>& data, std::vector<uint64_t> shape) {
  std::vector<uint16_t> h(data.size());
  f32_to_f16(data.data(), h.data(), data.size());
  REQUIRE(
      formats::save_npy(path.c_str(), DType::kF16, h.data(), shape.data(), static_cast<uint32_t>(shape.size())).ok());
}

void write_bytes(const std::string& path, const std::vector<uint8_t>& bytes) {
  std::ofstream f(path, std::ios::binary);
  f.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

struct Shape {
  uint32_t t_q, t_kv, n_heads, n_kv_heads, head_dim;
};

struct Inputs {
  Shape s;
  std::vector<float> q, k, v;
  Inputs(Shape shape, uint32_t seed)
      : s(shape),
        q(normal_values(size_t{shape.t_q} * shape.n_heads * shape.head_dim, seed)),
        k(normal_values(size_t{shape.t_kv} * shape.n_kv_heads * shape.head_dim, seed + 1)),
        v(normal_values(size_t{shape.t_kv} * shape.n_kv_heads * shape.head_dim, seed + 2)) {}
  std::vector<uint64_t> q_shape() const { return {s.t_q, s.n_heads, s.head_dim}; }
  std::vector<uint64_t> kv_shape() const { return {s.t_kv, s.n_kv_heads, s.head_dim}; }

  // q.npy, k.npy, v.npy (f32) in dir; returns the flags that name them.
  std::string write_f32_files(const TempDir& dir) const {
    write_f32(dir / "q.npy", q, q_shape());
    write_f32(dir / "k.npy", k, kv_shape());
    write_f32(dir / "v.npy", v, kv_shape());
    return "--q " + (dir / "q.npy") + " --k " + (dir / "k.npy") + " --v " + (dir / "v.npy");
  }

  // The reference on the f32 values as drawn (before any f16/bf16 rounding).
  std::vector<double> reference(bool causal, uint32_t window, double softcap, double scale,
                                const std::vector<float>& sinks = {}, uint32_t sink_tokens = 0,
                                const std::vector<double>& alibi_slopes = {}, const std::vector<uint32_t>& cu_q = {},
                                const std::vector<uint32_t>& cu_k = {}, uint32_t prefix = 0,
                                bool window_symmetric = false) const {
    test::RefAttention p;
    p.window_symmetric = window_symmetric;
    p.cu_q = cu_q;
    p.cu_k = cu_k;
    p.prefix = prefix;
    p.t_q = s.t_q;
    p.t_kv = s.t_kv;
    p.n_heads = s.n_heads;
    p.n_kv_heads = s.n_kv_heads;
    p.head_dim = s.head_dim;
    p.scale = scale != 0 ? scale : 1.0 / std::sqrt(static_cast<double>(s.head_dim));
    p.softcap = softcap;
    p.causal = causal;
    p.window = window;
    p.sinks.assign(sinks.begin(), sinks.end());
    p.sink_tokens = sink_tokens;
    p.alibi_slopes = alibi_slopes;
    return test::reference_attention(p, q.data(), k.data(), v.data());
  }
};

double max_error_of(const std::string& o_path, const std::vector<double>& want, const std::vector<uint64_t>& shape) {
  const Result<NpyArray> o = formats::load_npy(o_path.c_str());
  REQUIRE_MESSAGE(o.ok(), o.status().message());
  REQUIRE(o->dtype == DType::kF32);
  REQUIRE(o->ndim == 3);
  for (uint32_t i = 0; i < 3; ++i) REQUIRE(o->shape[i] == shape[i]);
  double e = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    const double d = std::fabs(static_cast<double>(o->f32()[i]) - want[i]);
    if (!(d <= e)) e = d;
  }
  return e;
}

TEST_CASE("headway attend matches the reference for f32, f16 and bf16 K/V") {
  TempDir dir("cli_attend");
  const Inputs in({9, 300, 8, 2, 64}, 100);
  write_f32(dir / "q.npy", in.q, in.q_shape());
  write_f32(dir / "k.npy", in.k, in.kv_shape());
  write_f32(dir / "v.npy", in.v, in.kv_shape());
  write_f16(dir / "k16.npy", in.k, in.kv_shape());
  write_f16(dir / "v16.npy", in.v, in.kv_shape());
  const std::string qkv = "--q " + (dir / "q.npy") + " --k " + (dir / "k.npy") + " --v " + (dir / "v.npy");
  const std::string qkv16 = "--q " + (dir / "q.npy") + " --k " + (dir / "k16.npy") + " --v " + (dir / "v16.npy");
  const std::string out = " --out " + (dir / "o.npy");

  struct Run {
    std::string inputs, flags;
    double tolerance;
    bool causal;
    uint32_t window;
    double softcap, scale;
  };
  const Run runs[] = {
      {qkv, "", 1e-4, false, 0, 0, 0},
      {qkv, " --causal --threads 3", 1e-4, true, 0, 0, 0},
      {qkv, " --causal --window 40 --softcap 5 --scale 0.2", 1e-4, true, 40, 5, 0.2},
      {qkv, " --kv-dtype f16 --causal", 2e-3, true, 0, 0, 0},
      {qkv, " --kv-dtype bf16 --threads 2", 3e-2, false, 0, 0, 0},
      {qkv16, "", 2e-3, false, 0, 0, 0},  // f16 files stay f16
      {qkv16, " --kv-dtype f32 --causal", 2e-3, true, 0, 0, 0},
      {qkv16, " --kv-dtype bf16", 3e-2, false, 0, 0, 0},  // widened, then rounded once
  };
  for (const Run& r : runs) {
    INFO("flags:" << r.flags << (r.inputs == qkv16 ? " (f16 files)" : ""));
    const RunResult res = attend_cli(dir, r.inputs + out + r.flags);
    REQUIRE_MESSAGE(res.exit_code == 0, res.err);
    CHECK(res.err.empty());
    CHECK(res.out.find("attend: O [9, 8, 64] f32") != std::string::npos);
    CHECK(max_error_of(dir / "o.npy", in.reference(r.causal, r.window, r.softcap, r.scale), in.q_shape()) <=
          r.tolerance);
  }
}

TEST_CASE("headway attend --sinks matches the reference (prefill and split-KV decode)") {
  TempDir dir("cli_attend");
  struct Run {
    Shape shape;
    std::string flags;
    double tolerance;
    bool causal;
    uint32_t window;
    double softcap;
  };
  const Run runs[] = {
      {{9, 300, 8, 2, 64}, "", 1e-4, false, 0, 0},
      {{9, 300, 8, 2, 64}, " --causal --window 40 --softcap 5", 1e-4, true, 40, 5},
      {{9, 300, 8, 2, 64}, " --kv-dtype f16 --causal --threads 2", 2e-3, true, 0, 0},
      {{1, 1500, 4, 1, 64}, " --causal --threads 3", 1e-4, true, 0, 0},  // split-KV
  };
  uint32_t seed = 300;
  for (const Run& r : runs) {
    INFO("t_kv " << r.shape.t_kv << " flags:" << r.flags);
    const Inputs in(r.shape, seed);
    seed += 10;
    std::vector<float> sinks(r.shape.n_heads);
    for (uint32_t h = 0; h < r.shape.n_heads; ++h) sinks[h] = -2.0f + 4.0f * static_cast<float>(h);
    const std::string qkv = in.write_f32_files(dir);
    write_f32(dir / "sinks.npy", sinks, {r.shape.n_heads});
    const RunResult res =
        attend_cli(dir, qkv + " --sinks " + (dir / "sinks.npy") + " --out " + (dir / "o.npy") + r.flags);
    REQUIRE_MESSAGE(res.exit_code == 0, res.err);
    CHECK(res.err.empty());
    const std::vector<double> want = in.reference(r.causal, r.window, r.softcap, 0, sinks);
    CHECK(max_error_of(dir / "o.npy", want, in.q_shape()) <= r.tolerance);
    // The sinks change the result (the last heads' sinks outweigh their keys): the reference
    // without them is far from it.
    CHECK(max_error_of(dir / "o.npy", in.reference(r.causal, r.window, r.softcap, 0), in.q_shape()) > 1e-2);
  }
}

TEST_CASE("headway attend --sink-tokens and --alibi match the reference (prefill, chunks, split-KV decode)") {
  TempDir dir("cli_attend");
  struct Run {
    Shape shape;
    std::string flags;
    double tolerance;
    bool causal;
    uint32_t window, sink_tokens;
    double alibi_max_bias;  // 0: no ALiBi
  };
  const Run runs[] = {
      {{40, 40, 4, 2, 64}, " --causal --window 8 --sink-tokens 4", 1e-4, true, 8, 4, 0},
      {{9, 300, 8, 2, 128}, " --causal --window 40 --sink-tokens 1 --threads 2", 1e-4, true, 40, 1, 0},
      {{1, 1500, 4, 1, 64}, " --causal --window 300 --sink-tokens 6 --threads 3", 1e-4, true, 300, 6, 0},
      {{12, 12, 6, 3, 80}, " --window 5 --sink-tokens 2", 1e-4, false, 5, 2, 0},  // bidirectional
      {{33, 33, 12, 4, 64}, " --causal --alibi", 1e-4, true, 0, 0, 8},
      {{9, 300, 8, 8, 64}, " --alibi --kv-dtype f16", 2e-3, false, 0, 0, 8},
      {{1, 1500, 16, 2, 128}, " --causal --alibi-max-bias 16 --threads 2", 1e-4, true, 0, 0, 16},
      {{20, 90, 6, 2, 64}, " --causal --window 12 --sink-tokens 3 --alibi", 1e-4, true, 12, 3, 8},
  };
  uint32_t seed = 500;
  for (const Run& r : runs) {
    INFO("shape " << r.shape.t_q << "x" << r.shape.t_kv << " flags:" << r.flags);
    const Inputs in(r.shape, seed);
    seed += 10;
    const RunResult res = attend_cli(dir, in.write_f32_files(dir) + " --out " + (dir / "o.npy") + r.flags);
    REQUIRE_MESSAGE(res.exit_code == 0, res.err);
    CHECK(res.err.empty());
    const std::vector<double> slopes =
        r.alibi_max_bias > 0 ? test::reference_alibi_slopes(r.shape.n_heads, r.alibi_max_bias) : std::vector<double>{};
    const std::vector<double> want = in.reference(r.causal, r.window, 0, 0, {}, r.sink_tokens, slopes);
    CHECK(max_error_of(dir / "o.npy", want, in.q_shape()) <= r.tolerance);
    // Without the feature the reference is far off: each run tests what it names.
    const std::vector<double> plain = in.reference(r.causal, r.window, 0, 0, {}, 0, {});
    CHECK(max_error_of(dir / "o.npy", plain, in.q_shape()) > 1e-2);
  }
}

TEST_CASE("headway attend --seq-lens, --kv-seq-lens, --prefix and --symmetric-window match the reference") {
  TempDir dir("cli_attend");
  struct Run {
    Shape shape;
    std::string flags;
    std::vector<uint32_t> q_lens, k_lens;  // empty: one sequence; k_lens empty: q_lens
    uint32_t window = 0, sink_tokens = 0, prefix = 0;
    bool alibi = false, symmetric = false;
  };
  const Run runs[] = {
      {{59, 59, 12, 12, 32}, " --seq-lens 12,40,7", {12, 40, 7}, {}},
      {{49, 49, 8, 2, 64}, " --seq-lens 15,16,17,1 --causal --threads 2", {15, 16, 17, 1}, {}},
      {{30, 30, 4, 1, 80},
       " --seq-lens 20,10 --causal --window 6 --sink-tokens 2 --alibi",
       {20, 10},
       {},
       6,
       2,
       0,
       true},
      {{3, 1300, 4, 2, 128}, " --seq-lens 1,2 --kv-seq-lens 1200,100 --causal --threads 3", {1, 2}, {1200, 100}},
      {{40, 40, 4, 2, 64}, " --causal --prefix 17", {}, {}, 0, 0, 17},
      {{45, 45, 6, 3, 80}, " --seq-lens 30,15 --causal --prefix 9 --window 4", {30, 15}, {}, 4, 0, 9},
      {{300, 1500, 4, 1, 64}, " --causal --prefix 1400 --threads 2", {}, {}, 0, 0, 1400},  // a chunk at 1200
      {{60, 60, 12, 12, 32}, " --window 9 --symmetric-window --seq-lens 25,35", {25, 35}, {}, 9, 0, 0, false, true},
      {{40, 40, 4, 2, 64}, " --window 5 --symmetric-window", {}, {}, 5, 0, 0, false, true},
  };
  const auto cumulative = [](const std::vector<uint32_t>& lens) {
    std::vector<uint32_t> cu;
    if (!lens.empty()) cu.push_back(0);
    for (uint32_t n : lens) cu.push_back(cu.back() + n);
    return cu;
  };
  uint32_t seed = 900;
  for (const Run& r : runs) {
    INFO("shape " << r.shape.t_q << "x" << r.shape.t_kv << " flags:" << r.flags);
    const Inputs in(r.shape, seed);
    seed += 10;
    const RunResult res = attend_cli(dir, in.write_f32_files(dir) + " --out " + (dir / "o.npy") + r.flags);
    REQUIRE_MESSAGE(res.exit_code == 0, res.err);
    CHECK(res.err.empty());
    const bool causal = r.flags.find("--causal") != std::string::npos;
    const std::vector<double> slopes =
        r.alibi ? test::reference_alibi_slopes(r.shape.n_heads, 8.0) : std::vector<double>{};
    const std::vector<uint32_t> cu_q = cumulative(r.q_lens), cu_k = cumulative(r.k_lens);
    const std::vector<double> want =
        in.reference(causal, r.window, 0, 0, {}, r.sink_tokens, slopes, cu_q, cu_k, r.prefix, r.symmetric);
    CHECK(max_error_of(dir / "o.npy", want, in.q_shape()) <= 1e-4);
    // Without the prefix or the symmetric bound, or as one sequence, the reference is far off: each
    // run tests what it names.
    const std::vector<double> plain = r.prefix != 0 || r.symmetric
                                          ? in.reference(causal, r.window, 0, 0, {}, r.sink_tokens, slopes, cu_q, cu_k)
                                          : in.reference(causal, r.window, 0, 0, {}, r.sink_tokens, slopes);
    CHECK(max_error_of(dir / "o.npy", plain, in.q_shape()) > 1e-2);
  }
}

// --mask: bool and additive masks [T_q, T_kv], alone, with causal, over a packed batch (the blocks
// off the diagonal hold NaN or hide everything: never read) and over a split-KV decode.
TEST_CASE("headway attend --mask (bool and f32) matches the reference") {
  TempDir dir("cli_attend");
  struct Run {
    Shape shape;
    std::string flags;
    bool boolean;
    std::vector<uint32_t> q_lens;  // a packed batch (keys: the same lengths), or empty
  };
  const Run runs[] = {
      {{40, 40, 4, 4, 64}, "", true, {}},
      {{24, 60, 8, 2, 128}, " --causal", false, {}},
      {{33, 33, 12, 12, 32}, " --seq-lens 12,21", false, {12, 21}},
      {{33, 33, 4, 2, 80}, " --seq-lens 20,13 --causal", true, {20, 13}},
      {{1, 1500, 4, 1, 64}, " --threads 2", true, {}},
  };
  uint32_t seed = 1300;
  for (const Run& r : runs) {
    INFO("shape " << r.shape.t_q << "x" << r.shape.t_kv << (r.boolean ? " bool" : " f32") << " flags:" << r.flags);
    const Inputs in(r.shape, seed);
    std::mt19937 rng(seed);
    seed += 10;
    const size_t n = size_t{r.shape.t_q} * r.shape.t_kv;
    std::vector<uint8_t> visible(n);
    std::vector<float> additive(n);
    std::vector<uint32_t> cu = {0};
    for (uint32_t len : r.q_lens) cu.push_back(cu.back() + len);
    const auto sequence = [&](uint32_t i) {
      uint32_t b = 0;
      while (cu.size() > 1 && cu[b + 1] <= i) ++b;
      return b;
    };
    for (uint32_t i = 0; i < r.shape.t_q; ++i) {
      for (uint32_t j = 0; j < r.shape.t_kv; ++j) {
        const size_t e = size_t{i} * r.shape.t_kv + j;
        const bool hidden = rng() % 4 == 0 || i % 9 == 5;  // row 5 (and 14, 23, 32) hidden entirely
        visible[e] = hidden ? 0 : 1;
        additive[e] = hidden ? -INFINITY : static_cast<float>(static_cast<int>(rng() % 33) - 16) * 0.125f;
        if (cu.size() > 1 && sequence(i) != sequence(j)) {  // off the diagonal: never read
          visible[e] = 0;
          additive[e] = std::nanf("");
        }
      }
    }
    const std::vector<uint64_t> mask_shape = {r.shape.t_q, r.shape.t_kv};
    if (r.boolean) {
      write_bytes(dir / "mask.npy", formats::encode_npy_bool(visible.data(), mask_shape.data(), 2));
    } else {
      write_f32(dir / "mask.npy", additive, mask_shape);
    }
    const RunResult res = attend_cli(
        dir, in.write_f32_files(dir) + " --out " + (dir / "o.npy") + " --mask " + (dir / "mask.npy") + r.flags);
    REQUIRE_MESSAGE(res.exit_code == 0, res.err);
    CHECK(res.err.empty());
    test::RefAttention p;
    p.t_q = r.shape.t_q;
    p.t_kv = r.shape.t_kv;
    p.n_heads = r.shape.n_heads;
    p.n_kv_heads = r.shape.n_kv_heads;
    p.head_dim = r.shape.head_dim;
    p.scale = 1.0 / std::sqrt(static_cast<double>(r.shape.head_dim));
    p.causal = r.flags.find("--causal") != std::string::npos;
    if (cu.size() > 1) p.cu_q = cu;
    const std::vector<double> plain = test::reference_attention(p, in.q.data(), in.k.data(), in.v.data());
    if (r.boolean) {
      p.mask_bool = visible;
    } else {
      p.mask_additive.assign(additive.begin(), additive.end());
    }
    const std::vector<double> want = test::reference_attention(p, in.q.data(), in.k.data(), in.v.data());
    CHECK(max_error_of(dir / "o.npy", want, in.q_shape()) <= 1e-4);
    CHECK(max_error_of(dir / "o.npy", plain, in.q_shape()) > 1e-2);  // the mask is what the run tests
    const Result<NpyArray> o = formats::load_npy((dir / "o.npy").c_str());
    REQUIRE(o.ok());
    const size_t width = size_t{r.shape.n_heads} * r.shape.head_dim;
    for (uint32_t i = 5; i < r.shape.t_q; i += 9) {  // rows the mask hides entirely: zeros
      for (size_t x = 0; x < width; ++x) CHECK(o->f32()[i * width + x] == 0.0f);
    }
  }
}

// --kv-dtype q8_0 / q4_0 quantize each (token, kv head) row as ggml does; the reference reads the
// same rows quantized and dequantized by the library's row functions.
TEST_CASE("headway attend --kv-dtype q8_0 and q4_0 match the reference on the quantized K/V") {
  TempDir dir("cli_attend");
  for (DType dt : {DType::kQ8_0, DType::kQ4_0}) {
    for (const Shape s : {Shape{9, 300, 8, 2, 64}, Shape{1, 1500, 4, 1, 128}, Shape{5, 40, 4, 2, 80}}) {
      INFO(dtype_name(dt) << " t_kv " << s.t_kv << " d " << s.head_dim);
      Inputs in(s, 700 + s.head_dim);
      const std::string qkv = in.write_f32_files(dir);
      const RunResult res =
          attend_cli(dir, qkv + " --out " + (dir / "o.npy") + " --causal --kv-dtype " + dtype_name(dt));
      REQUIRE_MESSAGE(res.exit_code == 0, res.err);
      CHECK(res.out.find(std::string("kv ") + dtype_name(dt)) != std::string::npos);
      REQUIRE(test::quantize_rows_and_back(dt, in.k, s.head_dim));
      REQUIRE(test::quantize_rows_and_back(dt, in.v, s.head_dim));
      // A decode step at a head_dim of whole blocks quantizes the query where the CPU has AVX-512
      // VNNI (integer Q·Kᵀ): its rounding, up to 2e-2; every other call widens K/V exactly.
      const bool int8_query = s.t_q == 1 && s.head_dim % 32 == 0;
      CHECK(max_error_of(dir / "o.npy", in.reference(true, 0, 0, 0), in.q_shape()) <= (int8_query ? 2e-2 : 1e-4));
    }
  }
}

// --kv-rotate: q, k and v rotated per head (H), k and v quantized after, o rotated back; the
// reference of the rotated q and the rotated, quantized K/V, its output rotated back in double.
TEST_CASE("headway attend --kv-rotate matches the reference in the rotated basis") {
  TempDir dir("cli_attend");
  for (DType dt : {DType::kQ8_0, DType::kQ4_0}) {
    for (const Shape s : {Shape{9, 300, 8, 2, 64}, Shape{1, 1500, 4, 1, 128}, Shape{5, 40, 4, 2, 96}}) {
      INFO(std::string(dtype_name(dt)) << " t_kv " << s.t_kv << " d " << s.head_dim);
      Inputs in(s, 800 + s.head_dim);
      const std::string qkv = in.write_f32_files(dir);
      const RunResult res =
          attend_cli(dir, qkv + " --out " + (dir / "o.npy") + " --causal --kv-rotate --kv-dtype " + dtype_name(dt));
      REQUIRE_MESSAGE(res.exit_code == 0, res.err);
      CHECK(res.out.find(std::string("kv ") + dtype_name(dt) + " Hadamard-rotated") != std::string::npos);
      for (std::vector<float>* x : {&in.q, &in.k, &in.v}) {
        for (size_t r = 0; r < x->size(); r += s.head_dim) hadamard_rotate(x->data() + r, s.head_dim);
      }
      REQUIRE(test::quantize_rows_and_back(dt, in.k, s.head_dim));
      REQUIRE(test::quantize_rows_and_back(dt, in.v, s.head_dim));
      std::vector<double> want = in.reference(true, 0, 0, 0);
      test::hadamard_reference_rows(&want, s.head_dim);
      const bool int8_query = s.t_q == 1;  // as above: AVX-512 VNNI's integer Q·Kᵀ
      CHECK(max_error_of(dir / "o.npy", want, in.q_shape()) <= (int8_query ? 2e-2 : 1e-4));
    }
  }
}

TEST_CASE("headway attend writes the same bytes for any --threads (split-KV decode too)") {
  TempDir dir("cli_attend");
  const Inputs in({1, 3000, 8, 1, 128}, 7);
  write_f32(dir / "q.npy", in.q, in.q_shape());
  write_f16(dir / "k.npy", in.k, in.kv_shape());
  write_f16(dir / "v.npy", in.v, in.kv_shape());
  const std::string base =
      "--q " + (dir / "q.npy") + " --k " + (dir / "k.npy") + " --v " + (dir / "v.npy") + " --causal --out ";
  REQUIRE(attend_cli(dir, base + (dir / "o1.npy") + " --threads 1").exit_code == 0);
  CHECK(max_error_of(dir / "o1.npy", in.reference(true, 0, 0, 0), in.q_shape()) <= 2e-3);
  const std::string one = slurp(dir / "o1.npy");
  for (int t : {2, 3, 4}) {
    CAPTURE(t);
    const std::string o = dir / ("o" + std::to_string(t) + ".npy");
    REQUIRE(attend_cli(dir, base + o + " --threads " + std::to_string(t)).exit_code == 0);
    CHECK(slurp(o) == one);
  }
}

TEST_CASE("headway attend: bad input exits 2 with the reason") {
  TempDir dir("cli_attend");
  const Inputs in({4, 6, 4, 2, 16}, 5);
  write_f32(dir / "q.npy", in.q, in.q_shape());
  write_f32(dir / "k.npy", in.k, in.kv_shape());
  write_f32(dir / "v.npy", in.v, in.kv_shape());
  write_f16(dir / "v16.npy", in.v, in.kv_shape());
  write_f16(dir / "q16.npy", in.q, in.q_shape());
  write_f32(dir / "q2d.npy", in.q, {4, 64});
  write_f32(dir / "k_short.npy", std::vector<float>(5 * 2 * 16), {5, 2, 16});
  write_f32(dir / "k_d8.npy", std::vector<float>(6 * 2 * 8), {6, 2, 8});
  write_f32(dir / "k_h3.npy", std::vector<float>(6 * 3 * 16), {6, 3, 16});
  write_f32(dir / "q_d600.npy", std::vector<float>(600), {1, 1, 600});
  write_f32(dir / "k_d600.npy", std::vector<float>(600), {1, 1, 600});
  write_f32(dir / "sinks.npy", {0.5f, -1.0f, 2.0f, 0.0f}, {4});
  write_f32(dir / "sinks3.npy", {0.5f, -1.0f, 2.0f}, {3});
  write_f32(dir / "sinks2d.npy", {0.5f, -1.0f, 2.0f, 0.0f}, {2, 2});
  write_f16(dir / "sinks16.npy", {0.5f, -1.0f, 2.0f, 0.0f}, {4});
  write_f32(dir / "sinks_nan.npy", {0.5f, -1.0f, std::nanf(""), 0.0f}, {4});
  write_f32(dir / "sinks_inf.npy", {0.5f, -INFINITY, 2.0f, 0.0f}, {4});
  {
    const std::vector<uint64_t> mask_shape = {4, 6}, wrong_shape = {6, 4};
    const std::vector<uint8_t> visible(24, 1);
    write_bytes(dir / "mask_bool.npy", formats::encode_npy_bool(visible.data(), mask_shape.data(), 2));
    write_bytes(dir / "q_bool.npy", formats::encode_npy_bool(visible.data(), mask_shape.data(), 2));
    write_f32(dir / "mask_t.npy", std::vector<float>(24), wrong_shape);
    write_f16(dir / "mask16.npy", std::vector<float>(24), mask_shape);
    std::vector<float> with_nan(24, 0.0f), with_inf(24, 0.0f);
    with_nan[7] = std::nanf("");
    with_inf[13] = INFINITY;
    write_f32(dir / "mask_nan.npy", with_nan, mask_shape);
    write_f32(dir / "mask_inf.npy", with_inf, mask_shape);
  }

  // Files the encoder will not write: patch a valid one's header in place (same length).
  const std::string good_text = slurp(dir / "q.npy");
  const std::vector<uint8_t> good(good_text.begin(), good_text.end());
  {
    const std::string text(good.begin(), good.end());
    std::vector<uint8_t> fortran = good;
    const size_t at = text.find("False");
    REQUIRE(at != std::string::npos);
    std::memcpy(fortran.data() + at, "True ", 5);
    write_bytes(dir / "fortran.npy", fortran);
    std::vector<uint8_t> big = good;
    big[text.find("<f4")] = '>';
    write_bytes(dir / "big.npy", big);
    write_bytes(dir / "truncated.npy", std::vector<uint8_t>(good.begin(), good.end() - 10));
    write_bytes(dir / "corrupt.npy", std::vector<uint8_t>{'h', 'e', 'l', 'l', 'o', '\n'});
  }

  const std::string q = " --q " + (dir / "q.npy"), k = " --k " + (dir / "k.npy"), v = " --v " + (dir / "v.npy");
  const std::string out = " --out " + (dir / "o.npy");
  const std::string ok = q + k + v + out;
  auto with_q = [&](const char* file) { return " --q " + (dir / file) + k + v + out; };
  auto with_k = [&](const char* file) { return q + " --k " + (dir / file) + v + out; };

  struct Bad {
    std::string args;
    std::string message;
  };
  const Bad cases[] = {
      {k + v + out, "headway attend: --q is required (an .npy of [T_q, n_heads, head_dim])"},
      {q + k + v, "--out is required"},
      {ok + " --threads 0", "--threads 0 is not a whole number in 1..256"},
      {ok + " --window -1", "--window -1 is not a whole number in 0..4294967295"},
      {ok + " --softcap nan", "--softcap nan is not a finite number"},
      {ok + " --softcap -1", "--softcap -1 must be >= 0 (0 = off)"},
      {ok + " --scale -0.5", "--scale -0.5 must be >= 0"},
      {ok + " --scale inf", "--scale inf is not a finite number"},
      {ok + " --frobnicate", "unknown argument --frobnicate"},
      {ok + " --window", "--window needs a value"},
      {ok + " --kv-dtype f8", "--kv-dtype f8 is not one of f32, f16, bf16"},
      // A Vulkan driver file that does not exist (set below): no usable device. A build without
      // HEADWAY_GPU says it has no GPU backend.
      {ok + " --backend gpu",
       headway::GpuContext::compiled() ? "no Vulkan device" : "backend gpu is not available in this build"},
      {ok + " --backend tpu", "--backend tpu is not one of cpu, gpu"},
      {ok + " --mask " + (dir / "mask_t.npy"),
       "--mask " + (dir / "mask_t.npy") + ": shape (6, 4), expected [4, 6] (T_q of --q by T_kv of --k"},
      {ok + " --mask " + (dir / "mask16.npy"), "--mask " + (dir / "mask16.npy") + ": dtype f16, expected bool"},
      {ok + " --mask " + (dir / "mask_nan.npy"), "mask[1][1] = nan; an additive mask holds finite values or -inf"},
      {ok + " --mask " + (dir / "mask_inf.npy"), "mask[2][1] = inf; an additive mask holds finite values or -inf"},
      {ok + " --mask " + (dir / "none.npy"), "--mask: cannot open"},
      {with_q("q_bool.npy"), "descr '|b1' (bool) is not supported here"},
      {ok + " --mask " + (dir / "mask_bool.npy") + " --backend gpu",
       headway::GpuContext::compiled() ? "no Vulkan device" : "backend gpu is not available in this build"},
      {with_k("k_short.npy"), "k and v shapes differ: " + (dir / "k_short.npy") + " is (5, 2, 16)"},
      {with_k("k_d8.npy") + " --v " + (dir / "k_d8.npy"),
       "head_dim differs: " + (dir / "q.npy") + " has 16, " + (dir / "k_d8.npy") + " has 8"},
      {with_k("k_h3.npy") + " --v " + (dir / "k_h3.npy"),
       "has 4 query heads and " + (dir / "k_h3.npy") + " 3 kv heads: 4 is not divisible by 3"},
      {with_q("q16.npy"), "q is f16, expected f32"},
      {with_q("q2d.npy"),
       "npy file " + (dir / "q2d.npy") + ": shape (4, 64) has 2 dims, expected 3 [T_q, n_heads, head_dim]"},
      {with_q("fortran.npy"), (dir / "fortran.npy") + " is in Fortran order; save it C-ordered (np.ascontiguousarray)"},
      {with_q("big.npy"), "descr '>f4' is big-endian"},
      {with_q("truncated.npy"), "npy file " + (dir / "truncated.npy") + " is truncated"},
      {with_q("corrupt.npy"), (dir / "corrupt.npy") + " is not an .npy file"},
      {with_q("missing.npy"), "cannot open " + (dir / "missing.npy")},
      {q + k + " --v " + (dir / "v16.npy") + out, "is f32 and " + (dir / "v16.npy") + " is f16; give --kv-dtype"},
      {" --q " + (dir / "q_d600.npy") + " --k " + (dir / "k_d600.npy") + " --v " + (dir / "k_d600.npy") + out,
       "attention: head_dim 600 is not in 1..576"},
      {q + k + v + " --out " + (dir / "no/such/dir/o.npy"), "cannot write " + (dir / "no/such/dir/o.npy")},
      {ok + " --sinks " + (dir / "sinks3.npy"),
       "--sinks " + (dir / "sinks3.npy") + ": shape (3,), expected [4] (one sink logit per query head"},
      {ok + " --sinks " + (dir / "sinks2d.npy"), "--sinks " + (dir / "sinks2d.npy") + ": shape (2, 2), expected [4]"},
      {ok + " --sinks " + (dir / "sinks16.npy"), "--sinks " + (dir / "sinks16.npy") + ": dtype f16, expected f32"},
      {ok + " --sinks " + (dir / "sinks_nan.npy"),
       "--sinks " + (dir / "sinks_nan.npy") + ": sinks[2] = nan is not finite"},
      {ok + " --sinks " + (dir / "sinks_inf.npy"),
       "--sinks " + (dir / "sinks_inf.npy") + ": sinks[1] = -inf is not finite"},
      {ok + " --sinks " + (dir / "missing.npy"), "--sinks: cannot open " + (dir / "missing.npy")},
      {ok + " --sinks " + (dir / "corrupt.npy"), "--sinks: " + (dir / "corrupt.npy") + " is not an .npy file"},
      {ok + " --sinks", "--sinks needs a value"},
      {ok + " --sink-tokens 2", "attention: sink_tokens 2 needs a sliding window larger than it (window 0)"},
      {ok + " --window 2 --sink-tokens 2", "attention: sink_tokens 2 needs a sliding window larger than it (window 2)"},
      {ok + " --sink-tokens -1", "--sink-tokens"},
      {ok + " --alibi-max-bias 0", "--alibi-max-bias 0 must be a positive number (the standard is 8)"},
      {ok + " --alibi-max-bias nan", "--alibi-max-bias"},
      {ok + " --alibi=1", "--alibi"},
  };
  setenv("VK_DRIVER_FILES", "/nonexistent/headway-test-icd.json", 1);
  setenv("VK_ICD_FILENAMES", "/nonexistent/headway-test-icd.json", 1);
  for (const Bad& c : cases) {
    INFO("args:" << c.args);
    const RunResult r = attend_cli(dir, c.args);
    CHECK(r.exit_code == 2);
    CHECK_MESSAGE(r.err.find(c.message) != std::string::npos, r.err);
    CHECK(r.err.rfind("headway attend: ", 0) == 0);
  }

  // Mixed K/V dtypes are fine once --kv-dtype says what to store.
  const RunResult mixed = attend_cli(dir, q + k + " --v " + (dir / "v16.npy") + out + " --kv-dtype f16");
  CHECK_MESSAGE(mixed.exit_code == 0, mixed.err);
  const RunResult help = attend_cli(dir, "--help");
  CHECK(help.exit_code == 0);
  CHECK(help.out.find("usage: headway attend") != std::string::npos);
}

}  // namespace
}  // namespace headway
