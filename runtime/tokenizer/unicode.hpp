// UTF-8 helpers for the tokenizers: validation with U+FFFD replacement (maximal subparts, as
// Python and Rust do), code point reads and writes, GPT-2's byte-to-unicode map, and the BERT
// normalizer's character classes through utf8proc (no hand-made Unicode tables).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace headway::tok {

// The length of the valid UTF-8 sequence at s[i] (1..4), or 0 when it is not one; *cp gets it.
size_t utf8_next(std::string_view s, size_t i, uint32_t* cp);
// The bytes of the maximal invalid subpart at s[i] (where utf8_next returned 0): 1..3.
size_t utf8_invalid_run(std::string_view s, size_t i);
bool utf8_valid(std::string_view s);
// Appends s to *out with each maximal invalid subpart replaced by U+FFFD.
void utf8_sanitize(std::string_view s, std::string* out);
void utf8_append(uint32_t cp, std::string* out);
// The length of a sequence that starts with `lead` (1..4), 0 for a byte no sequence starts with.
size_t utf8_lead_length(uint8_t lead);

// GPT-2's bytes_to_unicode: the code point standing for byte b (printable Latin-1 bytes stand for
// themselves, the others for 256 + n in order).
uint32_t byte_to_unicode(uint8_t b);

// BertNormalizer and BertPreTokenizer character classes, as Hugging Face's `tokenizers` has them.
bool bert_is_whitespace(uint32_t cp);
bool bert_is_control(uint32_t cp);
bool bert_is_chinese(uint32_t cp);
bool bert_is_punctuation(uint32_t cp);
// Python's str.isspace (category Zs, or bidirectional class WS, B or S): what Jinja's trim strips.
bool python_is_space(uint32_t cp);
// Appends cp lowercased (Unicode full lowercase mapping) and/or with accents stripped (NFD, then
// combining marks Mn dropped) to *out as code points.
void bert_fold(uint32_t cp, bool lowercase, bool strip_accents, std::vector<uint32_t>* out);
// The Unicode normalization forms a tokenizer's normalizer may ask for.
enum class UnicodeForm : uint8_t { kNone, kNfc, kNfd, kNfkc, kNfkd };
// s in `form` appended to *out (utf8proc; allocates); kNone appends s as it is.
void normalize(UnicodeForm form, std::string_view s, std::string* out);

}  // namespace headway::tok
