// Prints the Highway target the attention kernels dispatch to on this CPU, the targets libhwy
// detects on it, and the targets the kernels were compiled for (each list best first), e.g.
//   attention target: SVE2
//   cpu: SVE2 SVE NEON
//   compiled: SVE2 SVE NEON
// Exit 0. On a board it answers "which SIMD path will headway use here"; under qemu-user
// (tests/kernels/simd_flavour.cmake) it shows which target each emulated CPU selects. On armv7 the
// cpu line says EMU128 SCALAR: Debian's armhf libhwy is built without NEON and never reports it;
// the kernels then run their compile-time baseline (NEON with toolchains/armv7-linux-gnueabihf).
#include <cstdint>
#include <cstdio>

#include "hwy/targets.h"
#include "simd/attention/attention.h"

namespace {

// Highway's target bits: a lower bit is a better target, so lowest-first is best-first.
void print_targets(const char* label, int64_t bits) {
  std::printf("%s:", label);
  for (int64_t rest = bits; rest != 0; rest &= rest - 1) std::printf(" %s", hwy::TargetName(rest & -rest));
  std::printf("\n");
}

}  // namespace

int main() {
  std::printf("attention target: %s\n", headway::simd::attention_target_name());
  print_targets("cpu", hwy::SupportedTargets());
  print_targets("compiled", headway::simd::attention_compiled_targets());
  return 0;
}
