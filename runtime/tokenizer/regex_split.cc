// PCRE2 (10.42, JIT) behind tok::Regex. Pieces follow Hugging Face's Split with "Isolated".
#define PCRE2_CODE_UNIT_WIDTH 8
#include "runtime/tokenizer/regex_split.hpp"

#include <pcre2.h>

#include <string>

namespace headway::tok {

Regex::Regex(Regex&& other) noexcept
    : code_(other.code_), match_(other.match_), context_(other.context_), stack_(other.stack_) {
  other.code_ = other.match_ = other.context_ = other.stack_ = nullptr;
}

Regex& Regex::operator=(Regex&& other) noexcept {
  if (this != &other) {
    reset();
    code_ = other.code_;
    match_ = other.match_;
    context_ = other.context_;
    stack_ = other.stack_;
    other.code_ = other.match_ = other.context_ = other.stack_ = nullptr;
  }
  return *this;
}

Regex::~Regex() { reset(); }

void Regex::reset() {
  pcre2_match_data_free(static_cast<pcre2_match_data*>(match_));
  pcre2_match_context_free(static_cast<pcre2_match_context*>(context_));
  pcre2_jit_stack_free(static_cast<pcre2_jit_stack*>(stack_));
  pcre2_code_free(static_cast<pcre2_code*>(code_));
  code_ = match_ = context_ = stack_ = nullptr;
}

Status Regex::compile(std::string_view pattern, const char* where) {
  reset();
  int err = 0;
  PCRE2_SIZE offset = 0;
  pcre2_code* code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(),
                                   PCRE2_UTF | PCRE2_UCP | PCRE2_NO_UTF_CHECK, &err, &offset, nullptr);
  const std::string shown(pattern.substr(0, 120));
  if (code == nullptr) {
    PCRE2_UCHAR reason[160];
    pcre2_get_error_message(err, reason, sizeof(reason));
    return Status::error(Code::kInvalidArgument, "%s: regex \"%s\" does not compile at offset %d: %s", where,
                         shown.c_str(), static_cast<int>(offset), reinterpret_cast<const char*>(reason));
  }
  code_ = code;
  // JIT where the machine has it; the interpreter otherwise (same matches, slower).
  pcre2_jit_compile(code, PCRE2_JIT_COMPLETE);
  match_ = pcre2_match_data_create_from_pattern(code, nullptr);
  context_ = pcre2_match_context_create(nullptr);
  stack_ = pcre2_jit_stack_create(32 * 1024, 4 * 1024 * 1024, nullptr);
  if (match_ == nullptr || context_ == nullptr || stack_ == nullptr) {
    return Status::error(Code::kInternal, "%s: no memory for regex \"%s\"", where, shown.c_str());
  }
  pcre2_jit_stack_assign(static_cast<pcre2_match_context*>(context_), nullptr, stack_);
  return Status();
}

Status Regex::split(std::string_view text, Piece p, bool remove_matches, std::vector<Piece>* out) const {
  auto* code = static_cast<pcre2_code*>(code_);
  auto* md = static_cast<pcre2_match_data*>(match_);
  auto* mc = static_cast<pcre2_match_context*>(context_);
  // The piece alone is the subject, as each piece is its own string in Hugging Face's split:
  // anchors and lookarounds see nothing outside it.
  const auto* subject = reinterpret_cast<PCRE2_SPTR>(text.data() + p.begin);
  const size_t n = p.end - p.begin;
  size_t start = 0;
  size_t gap = 0;  // first byte not yet in a piece
  while (start < n) {
    const int rc = pcre2_match(code, subject, n, start, PCRE2_NO_UTF_CHECK, md, mc);
    if (rc == PCRE2_ERROR_NOMATCH) break;
    if (rc < 0) {
      PCRE2_UCHAR reason[160];
      pcre2_get_error_message(rc, reason, sizeof(reason));
      return Status::error(Code::kInternal, "pre-tokenizer regex failed at byte %d: %s", static_cast<int>(start),
                           reinterpret_cast<const char*>(reason));
    }
    const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(md);
    const size_t b = ov[0], e = ov[1];
    if (e == b) {  // an empty match: step over one character
      start = b + 1;
      while (start < n && (subject[start] & 0xC0) == 0x80) ++start;
      continue;
    }
    if (b > gap) out->push_back({static_cast<uint32_t>(p.begin + gap), static_cast<uint32_t>(p.begin + b)});
    if (!remove_matches) out->push_back({static_cast<uint32_t>(p.begin + b), static_cast<uint32_t>(p.begin + e)});
    gap = start = e;
  }
  if (n > gap) out->push_back({static_cast<uint32_t>(p.begin + gap), p.end});
  return Status();
}

}  // namespace headway::tok
