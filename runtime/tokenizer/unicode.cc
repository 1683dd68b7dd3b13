#include "runtime/tokenizer/unicode.hpp"

#include <utf8proc.h>

#include <cstdlib>

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

bool bert_is_whitespace(uint32_t cp) {
  if (cp == ' ' || cp == '\t' || cp == '\n' || cp == '\r') return true;
  return utf8proc_category(static_cast<utf8proc_int32_t>(cp)) == UTF8PROC_CATEGORY_ZS;
}

bool bert_is_control(uint32_t cp) {
  if (cp == '\t' || cp == '\n' || cp == '\r') return false;
  switch (utf8proc_category(static_cast<utf8proc_int32_t>(cp))) {
    case UTF8PROC_CATEGORY_CC:
    case UTF8PROC_CATEGORY_CF:
    case UTF8PROC_CATEGORY_CN:
    case UTF8PROC_CATEGORY_CO: return true;
    default: return false;
  }
}

bool bert_is_chinese(uint32_t cp) {
  return (cp >= 0x4E00 && cp <= 0x9FFF) || (cp >= 0x3400 && cp <= 0x4DBF) || (cp >= 0x20000 && cp <= 0x2A6DF) ||
         (cp >= 0x2A700 && cp <= 0x2B73F) || (cp >= 0x2B740 && cp <= 0x2B81F) || (cp >= 0x2B820 && cp <= 0x2CEAF) ||
         (cp >= 0xF900 && cp <= 0xFAFF) || (cp >= 0x2F800 && cp <= 0x2FA1F);
}

bool bert_is_punctuation(uint32_t cp) {
  if ((cp >= 33 && cp <= 47) || (cp >= 58 && cp <= 64) || (cp >= 91 && cp <= 96) || (cp >= 123 && cp <= 126)) {
    return true;
  }
  switch (utf8proc_category(static_cast<utf8proc_int32_t>(cp))) {
    case UTF8PROC_CATEGORY_PC:
    case UTF8PROC_CATEGORY_PD:
    case UTF8PROC_CATEGORY_PS:
    case UTF8PROC_CATEGORY_PE:
    case UTF8PROC_CATEGORY_PI:
    case UTF8PROC_CATEGORY_PF:
    case UTF8PROC_CATEGORY_PO: return true;
    default: return false;
  }
}

void bert_fold(uint32_t cp, bool lowercase, bool strip_accents, std::vector<uint32_t>* out) {
  utf8proc_int32_t buf[32];
  utf8proc_ssize_t n = 1;
  buf[0] = static_cast<utf8proc_int32_t>(cp);
  if (strip_accents) {
    int last = 0;
    n = utf8proc_decompose_char(static_cast<utf8proc_int32_t>(cp), buf, 32, UTF8PROC_DECOMPOSE, &last);
    if (n < 0 || n > 32) {
      n = 1;
      buf[0] = static_cast<utf8proc_int32_t>(cp);
    }
  }
  for (utf8proc_ssize_t i = 0; i < n; ++i) {
    const utf8proc_int32_t c = buf[i];
    if (strip_accents && utf8proc_category(c) == UTF8PROC_CATEGORY_MN) continue;
    out->push_back(static_cast<uint32_t>(lowercase ? utf8proc_tolower(c) : c));
  }
}

void nfc(std::string_view s, std::string* out) {
  utf8proc_uint8_t* mapped = nullptr;
  const utf8proc_ssize_t n =
      utf8proc_map(reinterpret_cast<const utf8proc_uint8_t*>(s.data()), static_cast<utf8proc_ssize_t>(s.size()),
                   &mapped, static_cast<utf8proc_option_t>(UTF8PROC_STABLE | UTF8PROC_COMPOSE));
  if (n < 0 || mapped == nullptr) {
    out->append(s);
  } else {
    out->append(reinterpret_cast<const char*>(mapped), static_cast<size_t>(n));
  }
  std::free(mapped);
}

}  // namespace headway::tok
