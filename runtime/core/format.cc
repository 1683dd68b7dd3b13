#include "runtime/core/format.hpp"

#include <cstdint>

namespace headway {
namespace {

class Sink {
 public:
  Sink(char* out, size_t size) : out_(out), cap_(size ? size - 1 : 0), ok_(size > 0) {}
  void put(char c) {
    if (ok_ && len_ < cap_) out_[len_++] = c;
  }
  void puts(const char* s) {
    for (; *s; ++s) put(*s);
  }
  size_t finish() {
    if (ok_) out_[len_] = '\0';
    return len_;
  }

 private:
  char* out_;
  size_t cap_;
  size_t len_ = 0;
  bool ok_;
};

void put_unsigned(Sink& sink, unsigned long long v, unsigned base) {
  char digits[24];
  int n = 0;
  do {
    const unsigned d = static_cast<unsigned>(v % base);
    digits[n++] = static_cast<char>(d < 10 ? '0' + d : 'a' + d - 10);
    v /= base;
  } while (v != 0);
  while (n > 0) sink.put(digits[--n]);
}

void put_signed(Sink& sink, long long v) {
  if (v < 0) {
    sink.put('-');
    put_unsigned(sink, 0ull - static_cast<unsigned long long>(v), 10);
  } else {
    put_unsigned(sink, static_cast<unsigned long long>(v), 10);
  }
}

// Fixed-point with `precision` decimals; values beyond 1e18 print as "huge" rather than lose
// digits silently (error messages never need them).
void put_fixed(Sink& sink, double v, int precision, bool strip_zeros) {
  if (v != v) return sink.puts("nan");
  if (v < 0) {
    sink.put('-');
    v = -v;
  }
  if (v > 1e300) return sink.puts("inf");
  if (v >= 1e18) return sink.puts("huge");
  if (precision > 9) precision = 9;
  unsigned long long scale = 1;
  for (int i = 0; i < precision; ++i) scale *= 10;
  const double scaled = v * static_cast<double>(scale) + 0.5;
  if (scaled >= 1.8e19) return sink.puts("huge");
  const unsigned long long total = static_cast<unsigned long long>(scaled);
  unsigned long long whole = total / scale;
  unsigned long long frac = total % scale;
  put_unsigned(sink, whole, 10);
  if (precision == 0) return;
  char fdigits[10];
  for (int i = precision - 1; i >= 0; --i) {
    fdigits[i] = static_cast<char>('0' + frac % 10);
    frac /= 10;
  }
  int keep = precision;
  if (strip_zeros) {
    while (keep > 0 && fdigits[keep - 1] == '0') --keep;
    if (keep == 0) return;
  }
  sink.put('.');
  for (int i = 0; i < keep; ++i) sink.put(fdigits[i]);
}

void put_general(Sink& sink, double v) {
  // Up to 6 significant digits, as fixed point (values in messages are config-sized numbers).
  double mag = v < 0 ? -v : v;
  int int_digits = 1;
  for (double p = 10; mag >= p && int_digits < 18; p *= 10) ++int_digits;
  int decimals = 6 - int_digits;
  if (mag != 0 && mag < 1) {
    decimals = 6;
    for (double p = 0.1; mag < p && decimals < 9; p /= 10) ++decimals;
  }
  if (decimals < 0) decimals = 0;
  put_fixed(sink, v, decimals, true);
}

}  // namespace

size_t vformat_to(char* out, size_t size, const char* fmt, va_list args) {
  Sink sink(out, size);
  for (const char* p = fmt; *p; ++p) {
    if (*p != '%') {
      sink.put(*p);
      continue;
    }
    ++p;
    int precision = -1;
    if (*p == '.') {
      precision = 0;
      for (++p; *p >= '0' && *p <= '9'; ++p) precision = precision * 10 + (*p - '0');
    }
    int longs = 0;
    bool size_t_arg = false;
    for (;; ++p) {
      if (*p == 'l') {
        ++longs;
      } else if (*p == 'z') {
        size_t_arg = true;
      } else {
        break;
      }
    }
    switch (*p) {
      case '%': sink.put('%'); break;
      case 'c': sink.put(static_cast<char>(va_arg(args, int))); break;
      case 's': {
        const char* s = va_arg(args, const char*);
        sink.puts(s ? s : "(null)");
        break;
      }
      case 'd':
      case 'i': {
        long long v = size_t_arg   ? static_cast<long long>(va_arg(args, ptrdiff_t))
                      : longs >= 2 ? va_arg(args, long long)
                      : longs == 1 ? va_arg(args, long)
                                   : va_arg(args, int);
        put_signed(sink, v);
        break;
      }
      case 'u':
      case 'x': {
        unsigned long long v = size_t_arg   ? va_arg(args, size_t)
                               : longs >= 2 ? va_arg(args, unsigned long long)
                               : longs == 1 ? va_arg(args, unsigned long)
                                            : va_arg(args, unsigned);
        put_unsigned(sink, v, *p == 'x' ? 16 : 10);
        break;
      }
      case 'f': put_fixed(sink, va_arg(args, double), precision < 0 ? 6 : precision, false); break;
      case 'g': put_general(sink, va_arg(args, double)); break;
      case '\0': --p; break;  // a lone '%' at the end prints nothing
      default:
        sink.put('%');
        sink.put(*p);
        break;
    }
  }
  return sink.finish();
}

size_t format_to(char* out, size_t size, const char* fmt, ...) {
  va_list args;
  va_start(args, fmt);
  const size_t n = vformat_to(out, size, fmt, args);
  va_end(args);
  return n;
}

}  // namespace headway
