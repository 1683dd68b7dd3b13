#include "semihosting.hpp"

#include <cmath>

namespace cortex_m {

namespace {

constexpr uint32_t kSysWrite0 = 0x04;
constexpr uint32_t kSysExit = 0x18;
constexpr uint32_t kSysExitExtended = 0x20;
constexpr uint32_t kApplicationExit = 0x20026;  // ADP_Stopped_ApplicationExit

uint32_t call(uint32_t op, const void* arg) {
  register uint32_t r0 __asm__("r0") = op;
  register const void* r1 __asm__("r1") = arg;
  __asm__ volatile("bkpt 0xab" : "+r"(r0) : "r"(r1) : "memory");
  return r0;
}

}  // namespace

void write(const char* s) { call(kSysWrite0, s); }

void exit(int status) {
  const uint32_t block[2] = {kApplicationExit, static_cast<uint32_t>(status)};
  call(kSysExitExtended, block);
  // A host without the extension: plain SYS_EXIT (success or failure only, no code).
  call(kSysExit, reinterpret_cast<const void*>(status == 0 ? kApplicationExit : 0x20023u));
  for (;;) __asm__ volatile("wfi");
}

Text& Text::ch(char c) {
  if (n_ + 1 < kCapacity) {
    buf_[n_++] = c;
    buf_[n_] = '\0';
  }
  return *this;
}

Text& Text::str(const char* s) {
  while (s && *s) ch(*s++);
  return *this;
}

Text& Text::u64(uint64_t v) {
  char d[20];
  int n = 0;
  do {
    d[n++] = static_cast<char>('0' + v % 10);
    v /= 10;
  } while (v != 0);
  while (n > 0) ch(d[--n]);
  return *this;
}

Text& Text::i64(int64_t v) {
  if (v < 0) {
    ch('-');
    return u64(0 - static_cast<uint64_t>(v));
  }
  return u64(static_cast<uint64_t>(v));
}

Text& Text::hex(uint32_t v) {
  for (int shift = 28; shift >= 0; shift -= 4) ch("0123456789abcdef"[(v >> shift) & 0xF]);
  return *this;
}

Text& Text::fixed(double v, int decimals) {
  if (std::isnan(v)) return str("nan");
  if (v < 0) {
    ch('-');
    v = -v;
  }
  if (std::isinf(v)) return str("inf");
  double scale = 1.0;
  for (int i = 0; i < decimals; ++i) scale *= 10.0;
  const uint64_t units = static_cast<uint64_t>(v * scale + 0.5);
  const uint64_t whole = static_cast<uint64_t>(units / static_cast<uint64_t>(scale));
  u64(whole);
  if (decimals > 0) {
    ch('.');
    uint64_t frac = units - whole * static_cast<uint64_t>(scale);
    char d[20];
    for (int i = decimals - 1; i >= 0; --i) {
      d[i] = static_cast<char>('0' + frac % 10);
      frac /= 10;
    }
    for (int i = 0; i < decimals; ++i) ch(d[i]);
  }
  return *this;
}

Text& Text::sci(double v) {
  if (std::isnan(v)) return str("nan");
  if (v < 0) {
    ch('-');
    v = -v;
  }
  if (std::isinf(v)) return str("inf");
  if (v == 0.0) return str("0");
  int e = 0;
  while (v >= 10.0) {
    v /= 10.0;
    ++e;
  }
  while (v < 1.0) {
    v *= 10.0;
    --e;
  }
  if (v + 0.00005 >= 10.0) {
    v /= 10.0;
    ++e;
  }  // 9.99996 prints as 1.0000e+01
  fixed(v, 4).ch('e').ch(e < 0 ? '-' : '+');
  const int a = e < 0 ? -e : e;
  if (a < 10) ch('0');
  return u64(static_cast<uint64_t>(a));
}

}  // namespace cortex_m
