// A reproducer of a Debian 12 toolchain defect on the Cortex-M55: GCC 12.2 if-converts the float →
// int conversion below (at -O2, condition "not equal") into vcvtne.s32.f32 inside an IT block, and
// binutils 2.40 with MVE enabled rejects that mnemonic ("syntax error"). The M55 toolchain file
// turns if-conversion off (-fno-if-conversion -fno-if-conversion2); tests/baremetal/CMakeLists.txt
// compiles this file with the build's flags, so dropping them fails that test.
int converted_if_not_equal(float x, int c, int d) {
  if (c != d) return static_cast<int>(x);
  return c;
}
