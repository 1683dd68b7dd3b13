// The two loops that measure this machine's roofs (bench/peak.hpp runs them on every thread):
// plain functions over pointers, dispatched at run time to the same Highway target as the
// attention kernels (simd/attention/attention.h), so the roof is the one the kernels can reach.
#pragma once

#include <cstddef>
#include <cstdint>

namespace headway::bench {

// Independent FMA chains fma_loop runs (bench/peak_fma-inl.h says why 12).
inline constexpr uint32_t kFmaChains = 12;
// f32 lanes of the dispatched target's vectors.
uint32_t fma_lanes();
// iters × kFmaChains vector FMAs: 2 · fma_lanes() · kFmaChains · iters flops. Returns a sum
// of the results (keep it, print it or compare it, so the loop is not optimized away).
float fma_loop(uint64_t iters);

// Reads p[0, n) once, summing it. p 64-byte aligned, n a multiple of kReadBlockFloats.
inline constexpr size_t kReadBlockFloats = 8 * 64;  // 8 vectors of the widest target (2048 bits)
float read_sum(const float* p, size_t n);

// The Highway target these loops dispatch to (e.g. "AVX3_ZEN4").
const char* peak_target_name();

}  // namespace headway::bench
