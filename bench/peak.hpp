// This machine's roofs, measured in the benchmark's own process for the thread count of the run:
//   compute    FMA throughput of the Highway target the attention kernels dispatch to
//              (bench/peak_fma-inl.h), the loop running on every thread of the pool at once;
//   bandwidth  read bandwidth over a buffer larger than the last-level cache, each thread
//              streaming its own slice (bench/peak_read-inl.h).
// Both are the best of trials spread over a second or so: a roof is what the machine can do, not
// its average, and not what it did during a neighbour's burst.
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

// The last-level cache's size as the OS reports it (sysconf, else sysfs), 0 when unknown.
uint64_t last_level_cache_bytes();

// Measures both roofs with pool->threads() threads (pool may be null: 1 thread). buffer: at
// least 64-byte aligned, already touched, holding finite f32 values (any bit pattern that is not
// NaN/Inf as f32), larger than the last-level cache for the figure to be memory's. Takes about
// 0.6 s of FMA loops, then a warm-up read of the buffer and at least 5 more reads spanning 1 s.
Result<MachinePeak> measure_peak(ThreadPool* pool, const void* buffer, size_t bytes);

}  // namespace headway::bench
