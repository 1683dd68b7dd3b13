// The compute roof: a loop of independent fused multiply-adds, per Highway target. Zen 4/5 and
// recent Intel cores have 2 FMA pipes with 4 cycles of latency, so at least 2 × 4 = 8 chains must
// be in flight to keep both busy; 12 named accumulators leave slack for the loop counter and fit
// with the two constants in the 16 vector registers of AVX2/NEON (no spills). Named, not an array:
// SVE vectors are sizeless and cannot form arrays.

#if defined(HEADWAY_BENCH_PEAK_FMA_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef HEADWAY_BENCH_PEAK_FMA_INL_H_
#undef HEADWAY_BENCH_PEAK_FMA_INL_H_
#else
#define HEADWAY_BENCH_PEAK_FMA_INL_H_
#endif

#include <cstdint>

#include "bench/peak_kernels.h"
#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace headway {
namespace bench {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// f32 lanes of one vector: each MulAdd is 2 · lanes flops.
HWY_NOINLINE uint32_t FmaLanes() { return static_cast<uint32_t>(hn::Lanes(hn::ScalableTag<float>())); }

// iters × kFmaChains MulAdds. The multiplier just under 1 and the small addend keep every chain
// finite and normal for any iteration count (no denormal slow path); the sum is returned so the
// compiler cannot drop the loop.
HWY_NOINLINE float FmaLoop(uint64_t iters) {
  static_assert(kFmaChains == 12, "one named accumulator per chain below");
  const hn::ScalableTag<float> d;
  const auto m = hn::Set(d, 0.9999999f);
  const auto c = hn::Set(d, 1e-3f);
  auto a0 = hn::Set(d, 1.0f), a1 = hn::Set(d, 1.1f), a2 = hn::Set(d, 1.2f), a3 = hn::Set(d, 1.3f);
  auto a4 = hn::Set(d, 1.4f), a5 = hn::Set(d, 1.5f), a6 = hn::Set(d, 1.6f), a7 = hn::Set(d, 1.7f);
  auto a8 = hn::Set(d, 1.8f), a9 = hn::Set(d, 1.9f), a10 = hn::Set(d, 2.0f), a11 = hn::Set(d, 2.1f);
  for (uint64_t i = 0; i < iters; ++i) {
    a0 = hn::MulAdd(a0, m, c);
    a1 = hn::MulAdd(a1, m, c);
    a2 = hn::MulAdd(a2, m, c);
    a3 = hn::MulAdd(a3, m, c);
    a4 = hn::MulAdd(a4, m, c);
    a5 = hn::MulAdd(a5, m, c);
    a6 = hn::MulAdd(a6, m, c);
    a7 = hn::MulAdd(a7, m, c);
    a8 = hn::MulAdd(a8, m, c);
    a9 = hn::MulAdd(a9, m, c);
    a10 = hn::MulAdd(a10, m, c);
    a11 = hn::MulAdd(a11, m, c);
  }
  const auto s = hn::Add(hn::Add(hn::Add(hn::Add(a0, a1), hn::Add(a2, a3)), hn::Add(hn::Add(a4, a5), hn::Add(a6, a7))),
                         hn::Add(hn::Add(a8, a9), hn::Add(a10, a11)));
  return hn::GetLane(hn::SumOfLanes(d, s));
}

HWY_NOINLINE const char* PeakTargetName() { return hwy::TargetName(HWY_TARGET); }

// NOLINTNEXTLINE(google-readability-namespace-comments)
}  // namespace HWY_NAMESPACE
}  // namespace bench
}  // namespace headway
HWY_AFTER_NAMESPACE();

#endif  // HEADWAY_BENCH_PEAK_FMA_INL_H_
