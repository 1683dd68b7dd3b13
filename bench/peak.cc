#include "bench/peak.hpp"

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>

#include "bench/peak_kernels.h"

namespace headway::bench {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// With several threads the read roof cuts the buffer into this many chunks per thread, which the
// pool's threads take as they go: a thread the OS (or a virtual machine's host) holds back takes
// fewer, as with the attention tasks. With one equal slice per thread, the slowest thread's slice
// set the wall time: on a shared 2-core VM a quarter of the 2-thread roofs came out at one
// thread's worth while the decode cases of the same runs read a third more. One thread reads the
// buffer in one pass, as before.
constexpr size_t kReadChunksPerThread = 16;

// Per-task results land here so the loops' sums are used (and the loops kept).
struct Sinks {
  volatile float sum[ThreadPool::kMaxThreads * kReadChunksPerThread] = {};
};

struct FmaTask {
  uint64_t iters;
  Sinks* sinks;
};

void run_fma(void* ctx, size_t task) {
  FmaTask* t = static_cast<FmaTask*>(ctx);
  t->sinks->sum[task] = fma_loop(t->iters);
}

struct ReadTask {
  const float* base;
  size_t floats_per_chunk;
  Sinks* sinks;
};

void run_read(void* ctx, size_t chunk) {
  ReadTask* t = static_cast<ReadTask*>(ctx);
  t->sinks->sum[chunk] = read_sum(t->base + chunk * t->floats_per_chunk, t->floats_per_chunk);
}

// A roof's trials span at least this long. Other tenants of a shared machine slow its memory
// (and at times its cores) for moments at a time: with 5 read passes back to back (~0.2 s), 3
// of 30 runs on the 2-core development VM measured a read roof below what their own decode
// cases then read, two of them at about half (docs/PERFORMANCE.md).
constexpr double kReadSpanSeconds = 1.0;
constexpr double kFmaSpanSeconds = 0.5;

// n_tasks tasks over the pool (the FMA loop: one per thread; the read: kReadChunksPerThread per
// thread); the wall time of the whole run is the figure, so a thread that starts late counts
// against the peak. At least `trials` runs, and more until `span` seconds have passed.
template <class Task>
double best_wall_seconds(ThreadPool* pool, size_t n_tasks, void (*fn)(void*, size_t), Task* task, int trials,
                         double span = 0.0) {
  double best = 1e300;
  const Clock::time_point start = Clock::now();
  for (int i = 0; i < trials || seconds_since(start) < span; ++i) {
    const Clock::time_point t0 = Clock::now();
    ThreadPool::run_on(pool, n_tasks, fn, task);
    const double s = seconds_since(t0);
    best = s < best ? s : best;
  }
  return best;
}

}  // namespace

const char* bound_name(Bound bound) { return bound == Bound::kMemory ? "memory" : "compute"; }

Attainable attainable(const MachinePeak& peak, double intensity) {
  Attainable a;
  const double memory = peak.gbps * intensity;
  a.bound = memory < peak.gflops ? Bound::kMemory : Bound::kCompute;
  a.gflops = a.bound == Bound::kMemory ? memory : peak.gflops;
  return a;
}

uint64_t last_level_cache_bytes() {
#if defined(_SC_LEVEL3_CACHE_SIZE)
  const long l3 = sysconf(_SC_LEVEL3_CACHE_SIZE);
  if (l3 > 0) return static_cast<uint64_t>(l3);
  const long l2 = sysconf(_SC_LEVEL2_CACHE_SIZE);
#else
  const long l2 = 0;
#endif
  // sysfs (ARM boards, where glibc's sysconf knows no cache sizes): the largest index's size.
  uint64_t best = 0;
  for (int index = 0; index < 8; ++index) {
    char path[96];
    std::snprintf(path, sizeof(path), "/sys/devices/system/cpu/cpu0/cache/index%d/size", index);
    std::FILE* f = std::fopen(path, "r");
    if (f == nullptr) continue;
    unsigned long long n = 0;
    char unit = 0;
    if (std::fscanf(f, "%llu%c", &n, &unit) >= 1) {
      const uint64_t bytes = unit == 'K' ? n << 10 : unit == 'M' ? n << 20 : n;
      best = bytes > best ? bytes : best;
    }
    std::fclose(f);
  }
  if (best > 0) return best;
  return l2 > 0 ? static_cast<uint64_t>(l2) : 0;
}

Result<MachinePeak> measure_peak(ThreadPool* pool, const void* buffer, size_t bytes) {
  MachinePeak peak;
  peak.threads = pool != nullptr ? pool->threads() : 1;
  peak.lanes = fma_lanes();
  peak.fma_chains = kFmaChains;
  peak.target = peak_target_name();
  Sinks sinks;

  // Compute: size the loop to ~50 ms on one thread, so thread start-up is noise.
  FmaTask fma{1u << 16, &sinks};
  const double probe = best_wall_seconds(nullptr, 1, run_fma, &fma, 2);
  const double want = 0.05;
  fma.iters = static_cast<uint64_t>(static_cast<double>(fma.iters) * want / (probe > 1e-9 ? probe : 1e-9));
  if (fma.iters < (1u << 16)) fma.iters = 1u << 16;
  const double fma_s = best_wall_seconds(pool, peak.threads, run_fma, &fma, 3, kFmaSpanSeconds);
  const double flops = 2.0 * peak.lanes * kFmaChains * static_cast<double>(fma.iters) * peak.threads;
  peak.gflops = flops / fma_s * 1e-9;

  // Bandwidth: equal chunks, whole read blocks each, taken by the threads as they go.
  if (buffer == nullptr || reinterpret_cast<uintptr_t>(buffer) % 64 != 0) {
    return Status::error(Code::kInvalidArgument, "measure_peak: the read buffer is null or not 64-byte aligned");
  }
  const size_t chunks = peak.threads == 1 ? 1 : size_t{peak.threads} * kReadChunksPerThread;
  const size_t floats_per_chunk = bytes / sizeof(float) / chunks / kReadBlockFloats * kReadBlockFloats;
  if (floats_per_chunk == 0) {
    return Status::error(Code::kInvalidArgument, "measure_peak: a %zu-byte read buffer is too small for %u threads",
                         bytes, peak.threads);
  }
  ReadTask read{static_cast<const float*>(buffer), floats_per_chunk, &sinks};
  best_wall_seconds(pool, chunks, run_read, &read, 1);  // warm-up: TLB, frequency
  const double read_s = best_wall_seconds(pool, chunks, run_read, &read, 5, kReadSpanSeconds);
  peak.read_bytes = static_cast<uint64_t>(floats_per_chunk) * sizeof(float) * chunks;
  peak.gbps = static_cast<double>(peak.read_bytes) / read_s * 1e-9;
  return peak;
}

}  // namespace headway::bench
