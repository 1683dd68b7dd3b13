// The Unicode data of the normalizers, from utf8proc (the part of runtime/tokenizer/unicode.hpp
// that needs it; unicode.cc is the rest).
#include <utf8proc.h>

#include <cstdlib>

#include "runtime/tokenizer/unicode.hpp"

namespace headway::tok {

bool bert_is_whitespace(uint32_t cp) {
  if (cp == ' ' || cp == '\t' || cp == '\n' || cp == '\r') return true;
  return utf8proc_category(static_cast<utf8proc_int32_t>(cp)) == UTF8PROC_CATEGORY_ZS;
}

bool python_is_space(uint32_t cp) {
  if (utf8proc_category(static_cast<utf8proc_int32_t>(cp)) == UTF8PROC_CATEGORY_ZS) return true;
  const utf8proc_property_t* p = utf8proc_get_property(static_cast<utf8proc_int32_t>(cp));
  return p->bidi_class == UTF8PROC_BIDI_CLASS_WS || p->bidi_class == UTF8PROC_BIDI_CLASS_B ||
         p->bidi_class == UTF8PROC_BIDI_CLASS_S;
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

void normalize(UnicodeForm form, std::string_view s, std::string* out) {
  int options = UTF8PROC_STABLE;
  switch (form) {
    case UnicodeForm::kNone: out->append(s); return;
    case UnicodeForm::kNfc: options |= UTF8PROC_COMPOSE; break;
    case UnicodeForm::kNfd: options |= UTF8PROC_DECOMPOSE; break;
    case UnicodeForm::kNfkc: options |= UTF8PROC_COMPOSE | UTF8PROC_COMPAT; break;
    case UnicodeForm::kNfkd: options |= UTF8PROC_DECOMPOSE | UTF8PROC_COMPAT; break;
  }
  utf8proc_uint8_t* mapped = nullptr;
  const utf8proc_ssize_t n =
      utf8proc_map(reinterpret_cast<const utf8proc_uint8_t*>(s.data()), static_cast<utf8proc_ssize_t>(s.size()),
                   &mapped, static_cast<utf8proc_option_t>(options));
  if (n < 0 || mapped == nullptr) {
    out->append(s);
  } else {
    out->append(reinterpret_cast<const char*>(mapped), static_cast<size_t>(n));
  }
  std::free(mapped);
}

}  // namespace headway::tok
