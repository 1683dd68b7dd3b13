// This machine's roofs, measured in the benchmark's own process for the thread count of the run:
//   compute    FMA throughput of the Highway target the attention kernels dispatch to
//              (bench/peak_fma-inl.h), the loop running on every thread of the pool at once;
//   bandwidth  read bandwidth over a buffer larger than the last-level cache, each thread
//              streaming its own slice (bench/peak_read-inl.h).
// Both are the best of trials spread over a second or so: a roof is what the machine can do, not
// its average, and not what it did during a neighbour's burst.
//
// The roofline model over the two (attainable()): a case that does I FLOP per byte it reads can
// reach at most min(compute roof, bandwidth roof × I). Below the ridge (compute / bandwidth
// FLOP/byte) the read roof binds, above it the FMA roof: a decode step of GQA 32/8 over f16 K/V
// (4 FLOP/byte) lies near the ridge of a core whose FMA roof in GFLOP/s is about four times its
// read roof in GB/s, and q8_0 / q4_0 K/V (fewer bytes for the same flops) move decode past it.
#pragma once

#include <cstddef>
#include <cstdint>

#include "headway/status.hpp"
#include "headway/thread_pool.hpp"

namespace headway::bench {

struct MachinePeak {
  double gflops = 0;  // f32 GFLOP/s (an FMA counts 2), all threads together
  double gbps = 0;    // GB/s (1e9 bytes) read, all threads together
  uint32_t threads = 1;
  uint32_t lanes = 0;       // f32 lanes per vector of the target
  uint32_t fma_chains = 0;  // independent FMA chains per thread
  const char* target = "";  // Highway target of the loops, e.g. "AVX3_ZEN4"
  uint64_t read_bytes = 0;  // size of the buffer the bandwidth was read from
};

// Which roof binds a case at its arithmetic intensity: the one source of the bench's `bound`
// and of `attainable_gflops`, the figure `frac_peak` is a fraction of.
enum class Bound : uint8_t { kCompute, kMemory };
const char* bound_name(Bound bound);  // "compute", "memory"

struct Attainable {
  double gflops = 0;              // min(peak.gflops, peak.gbps × intensity)
  Bound bound = Bound::kCompute;  // kMemory where peak.gbps × intensity < peak.gflops
};
// intensity: FLOP per byte of unique K/V (bench/cases.hpp: case_flops / case_kv_bytes).
Attainable attainable(const MachinePeak& peak, double intensity);

// The last-level cache's size as the OS reports it (sysconf, else sysfs), 0 when unknown.
uint64_t last_level_cache_bytes();

// Measures both roofs with pool->threads() threads (pool may be null: 1 thread). buffer: at
// least 64-byte aligned, already touched, holding finite f32 values (any bit pattern that is not
// NaN/Inf as f32), larger than the last-level cache for the figure to be memory's. Takes about
// 0.6 s of FMA loops, then a warm-up read of the buffer and at least 5 more reads spanning 1 s.
Result<MachinePeak> measure_peak(ThreadPool* pool, const void* buffer, size_t bytes);

}  // namespace headway::bench
