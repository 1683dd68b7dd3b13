// The tokenizers in a build without PCRE2 and utf8proc for its target (HEADWAY_TOKENIZERS OFF:
// a cross build whose target lacks libpcre2-dev or libutf8proc-dev): the API links, and every
// loader says why it cannot load. Nothing here is reached once a loader has failed.
#include "runtime/tokenizer/regex_split.hpp"
#include "runtime/tokenizer/tokenizer_impl.hpp"
#include "runtime/tokenizer/unicode.hpp"

namespace headway::tok {
namespace {

Status off(const char* path) {
  return Status::error(Code::kUnsupported,
                       "%s: this headway was built without its tokenizers (no libpcre2-8 and libutf8proc for the "
                       "target: toolchains/install-deps.sh installs them)",
                       path);
}

}  // namespace

Status load_tokenizer_json(const char* path, Tokenizer::Impl*) { return off(path); }
Status load_vocab_txt(const char* dir, Tokenizer::Impl*) { return off(dir); }
Status load_gguf(const char* path, Tokenizer::Impl*) { return off(path); }

Regex::Regex(Regex&&) noexcept {}
Regex& Regex::operator=(Regex&&) noexcept { return *this; }
Regex::~Regex() = default;
void Regex::reset() {}
Status Regex::compile(std::string_view, const char* where) { return off(where); }
Status Regex::split(std::string_view, Piece, bool, std::vector<Piece>*) const { return off("split"); }

bool bert_is_whitespace(uint32_t cp) { return cp == ' ' || cp == '\t' || cp == '\n' || cp == '\r'; }
bool bert_is_control(uint32_t) { return false; }
// Python's isspace below U+0100 (the chat templates' trim in a build without utf8proc).
bool python_is_space(uint32_t cp) {
  return (cp >= 0x09 && cp <= 0x0D) || (cp >= 0x1C && cp <= 0x20) || cp == 0x85 || cp == 0xA0;
}
bool bert_is_chinese(uint32_t) { return false; }
bool bert_is_punctuation(uint32_t) { return false; }
void bert_fold(uint32_t cp, bool, bool, std::vector<uint32_t>* out) { out->push_back(cp); }
void normalize(UnicodeForm, std::string_view s, std::string* out) { out->append(s); }

}  // namespace headway::tok
