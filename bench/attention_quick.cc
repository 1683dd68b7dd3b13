// Quick single-thread timing of the attention kernels (not part of the build). Build by hand:
//   g++ -std=c++20 -O2 -I. -Iinclude bench/attention_quick.cc build/<dir>/lib/libheadway.a -lhwy
//   ./a.out [head_dim=128] [T=2048] [prefill|decode] [decode T_kv]
// Prints prefill GFLOP/s (flops = 4 · head_dim · n_heads · visible (query, key) pairs) and
// decode K/V read bandwidth, for the target attention_f32 dispatches to.
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "simd/attention.h"

namespace hs = headway::simd;

namespace {

struct Buffers {
  std::vector<float> q, o;
  std::vector<uint16_t> k, v;
  std::vector<uint8_t> scratch;
  void* s = nullptr;
};

uint16_t f16_of(float f) {  // inputs are small normals; truncation is fine for timing
  uint32_t x;
  std::memcpy(&x, &f, 4);
  const uint32_t sign = (x >> 16) & 0x8000u, ax = x & 0x7FFFFFFFu;
  if (ax < 0x38800000u) return static_cast<uint16_t>(sign);
  return static_cast<uint16_t>(sign | ((ax - 0x38000000u) >> 13));
}

hs::AttentionArgs make(Buffers& b, uint32_t t_q, uint32_t t_kv, uint32_t heads, uint32_t kv_heads, uint32_t d,
                       bool causal) {
  uint64_t seed = 1;
  auto rnd = [&] {
    seed = seed * 6364136223846793005ull + 1442695040888963407ull;
    return static_cast<float>(static_cast<int32_t>(seed >> 32)) * (1.0f / 2147483648.0f);
  };
  b.q.resize(size_t{t_q} * heads * d);
  b.o.resize(b.q.size());
  b.k.resize(size_t{t_kv} * kv_heads * d);
  b.v.resize(b.k.size());
  for (auto& x : b.q) x = rnd();
  for (auto& x : b.k) x = f16_of(rnd());
  for (auto& x : b.v) x = f16_of(rnd());
  const size_t bytes = hs::attention_scratch_bytes(d, heads / kv_heads);
  b.scratch.resize(bytes + 64);
  b.s = b.scratch.data() + (64 - reinterpret_cast<uintptr_t>(b.scratch.data()) % 64) % 64;
  hs::AttentionArgs a;
  a.q = b.q.data();
  a.q_token_stride = size_t{heads} * d;
  a.o = b.o.data();
  a.o_token_stride = size_t{heads} * d;
  a.k = b.k.data();
  a.v = b.v.data();
  a.kv_type = hs::KvType::kF16;
  // Cache layout [kv_heads, t_kv, d].
  a.kv_head_stride = size_t{t_kv} * d;
  a.kv_row_stride = d;
  a.t_q = t_q;
  a.t_kv = t_kv;
  a.n_heads = heads;
  a.n_kv_heads = kv_heads;
  a.head_dim = d;
  a.scale = 1.0f / std::sqrt(static_cast<float>(d));
  a.causal = causal;
  return a;
}

template <class F>
double best_seconds(int reps, F f) {
  double best = 1e30;
  for (int i = 0; i < reps; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    f();
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (s < best) best = s;
  }
  return best;
}

}  // namespace

int main(int argc, char** argv) {
  const uint32_t d = argc > 1 ? static_cast<uint32_t>(std::atoi(argv[1])) : 128;
  const uint32_t t = argc > 2 ? static_cast<uint32_t>(std::atoi(argv[2])) : 2048;
  const bool prefill = argc <= 3 || std::strcmp(argv[3], "decode") != 0;
  const bool decode = argc <= 3 || std::strcmp(argv[3], "prefill") != 0;
  std::printf("target %s\n", hs::attention_target_name());
  if (prefill) {
    Buffers b;
    hs::AttentionArgs a = make(b, t, t, 32, 8, d, true);
    const size_t bytes = hs::attention_scratch_bytes(d, 4);
    const double s = best_seconds(3, [&] { hs::attention_f32(a, 0, 8, 0, t, b.s, bytes); });
    const double pairs = static_cast<double>(t) * (t + 1) / 2;
    const double flops = 4.0 * d * 32 * pairs;
    std::printf("prefill T=%u causal 32/8 heads d=%u f16 KV (%s): %.3f s, %.1f GFLOP/s\n", t, d,
                hs::attention_kernel_name(a), s, flops / s * 1e-9);
  }
  std::vector<uint32_t> decode_lengths = {4096u, 32768u};
  if (argc > 4) decode_lengths = {static_cast<uint32_t>(std::atoi(argv[4]))};
  for (uint32_t t_kv : decode_lengths) {
    if (!decode) break;
    Buffers b;
    hs::AttentionArgs a = make(b, 1, t_kv, 32, 8, d, true);
    const size_t bytes = hs::attention_scratch_bytes(d, 4);
    const double s =
        best_seconds(t_kv > 8192 ? 5 : 200000 / t_kv, [&] { hs::attention_f32(a, 0, 8, 0, 1, b.s, bytes); });
    const double kv_bytes = 2.0 * t_kv * 8 * d * 2;
    std::printf("decode T_kv=%u 32/8 heads d=%u f16 KV (%s): %.3f ms, %.1f GB/s of K/V\n", t_kv, d,
                hs::attention_kernel_name(a), s * 1e3, kv_bytes / s * 1e-9);
  }
  return 0;
}
