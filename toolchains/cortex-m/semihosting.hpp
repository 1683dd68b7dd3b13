// Console and exit for headway's Cortex-M images under qemu-system-arm (or a debugger): Arm
// semihosting, a BKPT 0xAB the host services. Heap-free text building for numbers, since
// newlib's printf pulls in malloc (its dtoa allocates).
//
//   cortex_m::Text t;
//   t.str("max error ").sci(err).str("\n");
//   cortex_m::write(t.c_str());
//   cortex_m::exit(failures == 0 ? 0 : 1);   // qemu exits with this status
#pragma once

#include <cstddef>
#include <cstdint>

namespace cortex_m {

// SYS_WRITE0: a NUL-terminated string to the host's stdout.
void write(const char* s);

// SYS_EXIT_EXTENDED with ADP_Stopped_ApplicationExit and `status`: the emulator exits with it.
[[noreturn]] void exit(int status);

// A fixed-size line of text; appends past the end are dropped (the text stays terminated).
class Text {
 public:
  static constexpr size_t kCapacity = 256;

  Text& str(const char* s);
  Text& u64(uint64_t v);
  Text& i64(int64_t v);
  Text& hex(uint32_t v);
  Text& fixed(double v, int decimals);  // 12.345
  Text& sci(double v);                  // 1.2345e-05, nan, inf
  const char* c_str() const { return buf_; }
  void print() const { write(buf_); }

 private:
  Text& ch(char c);
  char buf_[kCapacity] = {};
  size_t n_ = 0;
};

}  // namespace cortex_m
