// Quick timing of the attention kernels against this machine's own measured peaks (not part of
// the build). Build by hand (x86-64; the FMA probe compiles its own AVX2/AVX-512 loops):
//   g++ -std=c++20 -O2 -ffp-contract=fast -I. -Iinclude bench/attention_quick.cc build/<dir>/lib/libheadway.a -lhwy \
//       -lpthreadpool -lpthread
//   ./a.out [what=all] [reps=5]     what: all | decode | prefill | generic | probe | profile [t_kv kv_heads f16|f32]
// Each run first measures its peaks: read bandwidth (sum over a 512 MiB buffer, far past the
// last-level cache, touched before timing) on 1 and 2 threads, and f32 FMA throughput at the
// vector width of the target attention_f32 dispatches to (1 and 2 threads). Then:
//   decode: GQA 32/8 and MHA 32/32, f16 KV in the cache layout [kv_heads, t_kv, head_dim],
//     1 and 2 threads through attend_strided (split-KV as production runs it); figure: unique
//     K+V bytes / time, and its fraction of the read bandwidth of the same thread count.
//   prefill: causal T=2048, 32/8, head_dim 64/128, f16 and f32 KV; GFLOP/s = 4 · T_q · T_kv ·
//     head_dim · n_heads over visible pairs only, and its fraction of the FMA peak.
//   generic: head_dim 80 and 256 (prefill, f16) against the specialized kernels' GFLOP/s.
// Every figure is the median of `reps` timed runs after one warm-up run; 1-thread figures time
// the thread's CPU seconds, 2-thread ones wall seconds. The machine may be shared: compare
// fractions printed by the same run, and re-run.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <thread>
#include <vector>

#include "headway/thread_pool.hpp"
#include "runtime/attention_run.hpp"
#include "simd/attention.h"

namespace hs = headway::simd;

namespace {

int g_reps = 5;

// CPU seconds of the calling thread: on a shared machine a 1-thread figure then leaves out the
// time other processes held the core (their cache and memory traffic still counts).
double thread_cpu_seconds() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

double wall_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// Median of g_reps runs after one warm-up; cpu: thread CPU time (1-thread runs), else wall time.
template <class F>
double median_seconds(F f, bool cpu) {
  f();  // warm-up: page faults, caches, branch predictors
  std::vector<double> t;
  for (int i = 0; i < g_reps; ++i) {
    const double t0 = cpu ? thread_cpu_seconds() : wall_seconds();
    f();
    t.push_back((cpu ? thread_cpu_seconds() : wall_seconds()) - t0);
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

// ---- peaks ------------------------------------------------------------------------------------

typedef uint64_t U64x8 __attribute__((vector_size(64)));

uint64_t sum_range(const U64x8* p, size_t n) {
  U64x8 a = {}, b = {}, c = {}, d = {};
  for (size_t i = 0; i + 4 <= n; i += 4) {
    a += p[i];
    b += p[i + 1];
    c += p[i + 2];
    d += p[i + 3];
  }
  const U64x8 s = a + b + c + d;
  uint64_t r = 0;
  for (int i = 0; i < 8; ++i) r += s[i];
  return r;
}

// GB/s reading a buffer far larger than the LLC with `threads` threads (each its own half).
double read_bandwidth(const std::vector<U64x8>& buf, int threads) {
  volatile uint64_t sink = 0;
  const size_t n = buf.size();
  const double s = median_seconds([&] {
    if (threads == 1) {
      sink = sink + sum_range(buf.data(), n);
      return;
    }
    std::vector<std::thread> ts;
    std::vector<uint64_t> r(threads);
    for (int i = 0; i < threads; ++i) {
      ts.emplace_back([&, i] { r[i] = sum_range(buf.data() + n / threads * i, n / threads); });
    }
    for (auto& t : ts) t.join();
    for (uint64_t x : r) sink = sink + x;
  }, threads == 1);
  return static_cast<double>(n) * sizeof(U64x8) / s * 1e-9;
}

#if defined(__x86_64__)
typedef float F32x16 __attribute__((vector_size(64)));
typedef float F32x8 __attribute__((vector_size(32)));

// 2 FMA pipes × 4 cycles latency: 12 independent chains keep both busy. A macro, not a
// template: the body must be compiled with each function's target attribute.
#define HEADWAY_FMA_LOOP(V)                                                          \
  V a0 = V{} + 1.0f, a1 = a0 + 1.0f, a2 = a1 + 1.0f, a3 = a2 + 1.0f, a4 = a3 + 1.0f;  \
  V a5 = a4 + 1.0f, a6 = a5 + 1.0f, a7 = a6 + 1.0f, a8 = a7 + 1.0f, a9 = a8 + 1.0f;  \
  V a10 = a9 + 1.0f, a11 = a10 + 1.0f;                                               \
  const V x = V{} + 0.999f, y = V{} + 1e-7f;                                         \
  for (long it = 0; it < iters; ++it) {                                              \
    a0 = a0 * x + y, a1 = a1 * x + y, a2 = a2 * x + y, a3 = a3 * x + y;              \
    a4 = a4 * x + y, a5 = a5 * x + y, a6 = a6 * x + y, a7 = a7 * x + y;              \
    a8 = a8 * x + y, a9 = a9 * x + y, a10 = a10 * x + y, a11 = a11 * x + y;          \
  }                                                                                  \
  const V s = a0 + a1 + a2 + a3 + a4 + a5 + a6 + a7 + a8 + a9 + a10 + a11;           \
  return s[0];
__attribute__((target("avx512f,fma"))) double fma512(long iters) { HEADWAY_FMA_LOOP(F32x16) }
__attribute__((target("avx2,fma"))) double fma256(long iters) { HEADWAY_FMA_LOOP(F32x8) }
#endif

// GFLOP/s of f32 FMA at `lanes` lanes on `threads` threads (0 when not measurable here).
double fma_peak(int lanes, int threads) {
#if defined(__x86_64__)
  if (lanes != 16 && lanes != 8) return 0.0;
  const long iters = 20000000;
  volatile double sink = 0;
  auto one = [&] { sink = sink + (lanes == 16 ? fma512(iters) : fma256(iters)); };
  const double s = median_seconds([&] {
    if (threads == 1) return one();
    std::vector<std::thread> ts;
    for (int i = 0; i < threads; ++i) ts.emplace_back(one);
    for (auto& t : ts) t.join();
  }, threads == 1);
  return 2.0 * 12 * lanes * static_cast<double>(iters) * threads / s * 1e-9;
#else
  (void)lanes;
  (void)threads;
  return 0.0;
#endif
}

int target_lanes(const char* target) {
  if (std::strncmp(target, "AVX3", 4) == 0) return 16;
  if (std::strcmp(target, "AVX2") == 0) return 8;
  return 4;
}

// ---- attention ----------------------------------------------------------------------------------

struct Case {
  std::vector<float> q, o;
  std::vector<uint16_t> k16, v16;
  std::vector<float> k32, v32;
  std::vector<uint8_t> ws;
  hs::AttentionArgs a;
};

uint16_t f16_of(float f) {  // inputs are small normals; truncation is fine for timing
  uint32_t x;
  std::memcpy(&x, &f, 4);
  const uint32_t sign = (x >> 16) & 0x8000u, ax = x & 0x7FFFFFFFu;
  if (ax < 0x38800000u) return static_cast<uint16_t>(sign);
  return static_cast<uint16_t>(sign | ((ax - 0x38000000u) >> 13));
}

void make(Case& c, uint32_t t_q, uint32_t t_kv, uint32_t heads, uint32_t kv_heads, uint32_t d, bool causal,
          hs::KvType type) {
  uint64_t seed = 1;
  auto rnd = [&] {
    seed = seed * 6364136223846793005ull + 1442695040888963407ull;
    return static_cast<float>(static_cast<int32_t>(seed >> 32)) * (1.0f / 2147483648.0f);
  };
  c.q.resize(size_t{t_q} * heads * d);
  c.o.resize(c.q.size());
  for (auto& x : c.q) x = rnd();
  const size_t kv = size_t{t_kv} * kv_heads * d;
  hs::AttentionArgs& a = c.a;
  if (type == hs::KvType::kF16) {
    c.k16.resize(kv);
    c.v16.resize(kv);
    for (auto& x : c.k16) x = f16_of(rnd());
    for (auto& x : c.v16) x = f16_of(rnd());
    a.k = c.k16.data();
    a.v = c.v16.data();
  } else {
    c.k32.resize(kv);
    c.v32.resize(kv);
    for (auto& x : c.k32) x = rnd();
    for (auto& x : c.v32) x = rnd();
    a.k = c.k32.data();
    a.v = c.v32.data();
  }
  a.q = c.q.data();
  a.q_token_stride = size_t{heads} * d;
  a.o = c.o.data();
  a.o_token_stride = size_t{heads} * d;
  a.kv_type = type;
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
}

double run_seconds(Case& c, headway::ThreadPool* pool) {
  const uint32_t threads = pool != nullptr ? pool->threads() : 1;
  const size_t bytes = headway::attention_split(c.a, threads).workspace_bytes;
  c.ws.resize(bytes + 64);
  void* ws = c.ws.data() + (64 - reinterpret_cast<uintptr_t>(c.ws.data()) % 64) % 64;
  return median_seconds([&] {
    const headway::Status st = headway::attend_strided(c.a, pool, ws, bytes);
    if (!st.ok()) {
      std::fprintf(stderr, "attend_strided: %s\n", st.message());
      std::exit(1);
    }
  }, pool == nullptr);
}

const char* type_name(hs::KvType t) { return t == hs::KvType::kF16 ? "f16" : "f32"; }

double prefill_gflops(uint32_t t, uint32_t d, hs::KvType type, headway::ThreadPool* pool, bool print, double peak) {
  Case c;
  make(c, t, t, 32, 8, d, true, type);
  const double s = run_seconds(c, pool);
  const double gf = 4.0 * d * 32 * (static_cast<double>(t) * (t + 1) / 2) / s * 1e-9;
  if (print) {
    std::printf("prefill T=%u causal 32/8 d=%u %s KV %d thr (%s): %8.2f ms %6.1f GFLOP/s = %4.0f%% of FMA peak\n", t,
                d, type_name(type), pool ? static_cast<int>(pool->threads()) : 1, hs::attention_kernel_name(c.a),
                s * 1e3, gf, 100.0 * gf / peak);
  }
  return gf;
}

void decode(uint32_t t_kv, uint32_t heads, uint32_t kv_heads, uint32_t d, headway::ThreadPool* pool, double bw,
            hs::KvType type = hs::KvType::kF16) {
  Case c;
  make(c, 1, t_kv, heads, kv_heads, d, true, type);
  const double s = run_seconds(c, pool);
  const double gbs = 2.0 * t_kv * kv_heads * d * (type == hs::KvType::kF16 ? 2 : 4) / s * 1e-9;
  std::printf("decode T_kv=%u %u/%u d=%u %s KV %d thr (%s, %u chunks): %7.3f ms %5.1f GB/s = %4.0f%% of read bw\n",
              t_kv, heads, kv_heads, d, type_name(type), pool ? static_cast<int>(pool->threads()) : 1, hs::attention_kernel_name(c.a),
              headway::attention_split(c.a, 1).n_chunks, s * 1e3, gbs, 100.0 * gbs / bw);
}

}  // namespace

int main(int argc, char** argv) {
  const char* what = argc > 1 ? argv[1] : "all";
  if (argc > 2) g_reps = std::max(1, std::atoi(argv[2]));
  auto want = [&](const char* w) { return std::strcmp(what, "all") == 0 || std::strcmp(what, w) == 0; };
  const char* target = hs::attention_target_name();
  const int lanes = target_lanes(target);
  std::printf("target %s (%d f32 lanes), median of %d reps\n", target, lanes, g_reps);

  if (std::strcmp(what, "profile") == 0) {  // one case, no probes: for a profiler
    const uint32_t t_kv = argc > 3 ? static_cast<uint32_t>(std::atoi(argv[3])) : 8192;
    const uint32_t kv_heads = argc > 4 ? static_cast<uint32_t>(std::atoi(argv[4])) : 8;
    const bool f32 = argc > 5 && std::strcmp(argv[5], "f32") == 0;
    decode(t_kv, 32, kv_heads, 128, nullptr, 1.0, f32 ? hs::KvType::kF32 : hs::KvType::kF16);
    return 0;
  }
  std::vector<U64x8> buf((size_t{512} << 20) / sizeof(U64x8));
  for (size_t i = 0; i < buf.size(); ++i) buf[i] = U64x8{} + i;  // touch every page
  const double bw1 = read_bandwidth(buf, 1), bw2 = read_bandwidth(buf, 2);
  buf = {};
  const double fma1 = fma_peak(lanes, 1), fma2 = fma_peak(lanes, 2);
  std::printf("peaks: read %.1f GB/s (1 thr) %.1f GB/s (2 thr); f32 FMA x%d %.1f GFLOP/s (1 thr) %.1f (2 thr)\n", bw1,
              bw2, lanes, fma1, fma2);
  if (std::strcmp(what, "probe") == 0) return 0;

  headway::ThreadPool pool2;
  if (!pool2.create(2).ok()) return 1;
  if (want("decode")) {
    for (uint32_t t_kv : {8192u, 32768u}) decode(t_kv, 32, 8, 128, nullptr, bw1);
    decode(8192, 32, 32, 128, nullptr, bw1);
    decode(8192, 32, 8, 128, &pool2, bw2);
    decode(8192, 32, 32, 128, &pool2, bw2);
  }
  if (want("prefill")) {
    for (uint32_t d : {64u, 128u}) {
      for (hs::KvType type : {hs::KvType::kF16, hs::KvType::kF32}) prefill_gflops(2048, d, type, nullptr, true, fma1);
    }
    const double g1 = prefill_gflops(2048, 128, hs::KvType::kF16, nullptr, false, fma1);
    const double g2 = prefill_gflops(2048, 128, hs::KvType::kF16, &pool2, true, fma2);
    std::printf("prefill d=128 f16 2 thr / 1 thr: %.2fx\n", g2 / g1);
  }
  if (want("generic")) {
    const double spec = prefill_gflops(2048, 128, hs::KvType::kF16, nullptr, false, fma1);
    for (uint32_t d : {80u, 256u}) {
      const double g = prefill_gflops(2048, d, hs::KvType::kF16, nullptr, true, fma1);
      std::printf("  generic d=%u / specialized d=128: %.0f%%\n", d, 100.0 * g / spec);
    }
  }
  return 0;
}
