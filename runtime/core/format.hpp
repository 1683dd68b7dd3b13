// A small printf subset that never allocates and needs no libc locale or stdio, so that error
// messages can be built the same way on hosted and bare-metal targets (newlib's vsnprintf
// allocates when it prints floating point).
//
// Conversions: %% %c %s %d %i %u %x, length modifiers l ll z, and %f / %g with an optional
// precision (%.2f). %g prints the shortest of up to 6 significant digits without trailing zeros.
#pragma once

#include <cstdarg>
#include <cstddef>

namespace headway {

// Writes at most `size` bytes including the terminating NUL; returns the characters written
// (excluding the NUL). `size` 0 writes nothing.
size_t format_to(char* out, size_t size, const char* fmt, ...) __attribute__((format(printf, 3, 4)));
size_t vformat_to(char* out, size_t size, const char* fmt, va_list args);

}  // namespace headway
