// The bandwidth roof: a streaming read of a buffer larger than the last-level cache, per Highway
// target. 8 independent sums keep the loads, not the add latency (4 cycles), the limit; the
// buffer is read in whole aligned vectors, 8 of them per step (the caller passes a multiple of
// kReadBlockFloats floats, 64-byte aligned).

#if defined(HEADWAY_BENCH_PEAK_READ_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef HEADWAY_BENCH_PEAK_READ_INL_H_
#undef HEADWAY_BENCH_PEAK_READ_INL_H_
#else
#define HEADWAY_BENCH_PEAK_READ_INL_H_
#endif

#include <cstddef>

#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace headway {
namespace bench {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// Sum of p[0, n): n a multiple of 8 · lanes (kReadBlockFloats, 8 × the widest vector, covers every
// target). The sum is returned so the loads cannot be dropped.
HWY_NOINLINE float ReadSum(const float* HWY_RESTRICT p, size_t n) {
  const hn::ScalableTag<float> d;
  const size_t N = hn::Lanes(d);
  auto s0 = hn::Zero(d), s1 = hn::Zero(d), s2 = hn::Zero(d), s3 = hn::Zero(d);
  auto s4 = hn::Zero(d), s5 = hn::Zero(d), s6 = hn::Zero(d), s7 = hn::Zero(d);
  for (size_t i = 0; i + 8 * N <= n; i += 8 * N) {
    s0 = hn::Add(s0, hn::Load(d, p + i));
    s1 = hn::Add(s1, hn::Load(d, p + i + N));
    s2 = hn::Add(s2, hn::Load(d, p + i + 2 * N));
    s3 = hn::Add(s3, hn::Load(d, p + i + 3 * N));
    s4 = hn::Add(s4, hn::Load(d, p + i + 4 * N));
    s5 = hn::Add(s5, hn::Load(d, p + i + 5 * N));
    s6 = hn::Add(s6, hn::Load(d, p + i + 6 * N));
    s7 = hn::Add(s7, hn::Load(d, p + i + 7 * N));
  }
  const auto s = hn::Add(hn::Add(hn::Add(s0, s1), hn::Add(s2, s3)), hn::Add(hn::Add(s4, s5), hn::Add(s6, s7)));
  return hn::GetLane(hn::SumOfLanes(d, s));
}

// NOLINTNEXTLINE(google-readability-namespace-comments)
}  // namespace HWY_NAMESPACE
}  // namespace bench
}  // namespace headway
HWY_AFTER_NAMESPACE();

#endif  // HEADWAY_BENCH_PEAK_READ_INL_H_
