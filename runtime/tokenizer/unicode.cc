#include "runtime/tokenizer/unicode.hpp"

namespace headway::tok {

size_t utf8_lead_length(uint8_t lead) {
  if (lead < 0x80) return 1;
  if (lead >= 0xC2 && lead <= 0xDF) return 2;
  if (lead >= 0xE0 && lead <= 0xEF) return 3;
  if (lead >= 0xF0 && lead <= 0xF4) return 4;
  return 0;
}

namespace {

// The range the second byte of a sequence with this lead must be in (Unicode table 3-7).
void second_range(uint8_t lead, uint8_t* lo, uint8_t* hi) {
  *lo = 0x80;
  *hi = 0xBF;
  if (lead == 0xE0) *lo = 0xA0;
  if (lead == 0xED) *hi = 0x9F;
  if (lead == 0xF0) *lo = 0x90;
  if (lead == 0xF4) *hi = 0x8F;
}

// How many bytes at s[i] form a valid prefix of a sequence (lead included), and its full length.
size_t valid_prefix(std::string_view s, size_t i, size_t* full) {
  const auto lead = static_cast<uint8_t>(s[i]);
  *full = utf8_lead_length(lead);
  if (*full <= 1) return *full;
  size_t k = 1;
  for (; k < *full && i + k < s.size(); ++k) {
    const auto c = static_cast<uint8_t>(s[i + k]);
    uint8_t lo = 0x80, hi = 0xBF;
    if (k == 1) second_range(lead, &lo, &hi);
    if (c < lo || c > hi) break;
  }
  return k;
}

}  // namespace

size_t utf8_next(std::string_view s, size_t i, uint32_t* cp) {
  size_t full = 0;
  const size_t k = valid_prefix(s, i, &full);
  if (full == 0 || k < full) return 0;
  const auto* p = reinterpret_cast<const uint8_t*>(s.data() + i);
  switch (full) {
    case 1: *cp = p[0]; break;
    case 2: *cp = ((p[0] & 0x1Fu) << 6) | (p[1] & 0x3Fu); break;
    case 3: *cp = ((p[0] & 0x0Fu) << 12) | ((p[1] & 0x3Fu) << 6) | (p[2] & 0x3Fu); break;
    default: *cp = ((p[0] & 0x07u) << 18) | ((p[1] & 0x3Fu) << 12) | ((p[2] & 0x3Fu) << 6) | (p[3] & 0x3Fu);
  }
  return full;
}

size_t utf8_invalid_run(std::string_view s, size_t i) {
  size_t full = 0;
  const size_t k = valid_prefix(s, i, &full);
  return k == 0 ? 1 : k;
}

bool utf8_valid(std::string_view s) {
  uint32_t cp = 0;
  for (size_t i = 0; i < s.size();) {
    if (static_cast<uint8_t>(s[i]) < 0x80) {
      ++i;
      continue;
    }
    const size_t n = utf8_next(s, i, &cp);
    if (n == 0) return false;
    i += n;
  }
  return true;
}

void utf8_sanitize(std::string_view s, std::string* out) {
  uint32_t cp = 0;
  for (size_t i = 0; i < s.size();) {
    const size_t n = utf8_next(s, i, &cp);
    if (n != 0) {
      out->append(s.data() + i, n);
      i += n;
    } else {
      out->append("\xEF\xBF\xBD");
      i += utf8_invalid_run(s, i);
    }
  }
}

void utf8_append(uint32_t cp, std::string* out) {
  char b[4];
  size_t n = 0;
  if (cp < 0x80) {
    b[n++] = static_cast<char>(cp);
  } else if (cp < 0x800) {
    b[n++] = static_cast<char>(0xC0 | (cp >> 6));
    b[n++] = static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    b[n++] = static_cast<char>(0xE0 | (cp >> 12));
    b[n++] = static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    b[n++] = static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    b[n++] = static_cast<char>(0xF0 | (cp >> 18));
    b[n++] = static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    b[n++] = static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    b[n++] = static_cast<char>(0x80 | (cp & 0x3F));
  }
  out->append(b, n);
}

uint32_t byte_to_unicode(uint8_t b) {
  // Bytes '!'..'~', '¡'..'¬' and '®'..'ÿ' stand for themselves; the other 68 take 256, 257, ...
  // in byte order.
  auto printable = [](uint32_t c) { return (c >= 0x21 && c <= 0x7E) || (c >= 0xA1 && c <= 0xAC) || c >= 0xAE; };
  if (printable(b)) return b;
  uint32_t n = 0;
  for (uint32_t c = 0; c < b; ++c) n += printable(c) ? 0 : 1;
  return 256 + n;
}

}  // namespace headway::tok
