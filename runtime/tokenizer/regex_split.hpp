// A pre-tokenizer regex: PCRE2 in UTF mode with Unicode properties (\p{L}, \s and \d by
// Unicode), JIT-compiled at load. Splitting a text writes pieces (byte ranges) into a vector the
// caller reserved; matching allocates nothing (the match data and JIT stack are made at load).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "headway/status.hpp"

namespace headway::tok {

struct Piece {
  uint32_t begin;
  uint32_t end;
};

class Regex {
 public:
  Regex() = default;
  Regex(const Regex&) = delete;
  Regex& operator=(const Regex&) = delete;
  Regex(Regex&& other) noexcept;
  Regex& operator=(Regex&& other) noexcept;
  ~Regex();

  // Compiles `pattern`; an error names `where` (file and field), the pattern and PCRE2's reason.
  Status compile(std::string_view pattern, const char* where);

  // Splits text[p.begin, p.end) (valid UTF-8) into the matches and the text between them, in
  // order, appending to *out; with remove_matches the matches are left out. Empty matches split
  // nothing.
  Status split(std::string_view text, Piece p, bool remove_matches, std::vector<Piece>* out) const;

 private:
  void reset();
  void* code_ = nullptr;     // pcre2_code_8
  void* match_ = nullptr;    // pcre2_match_data_8
  void* context_ = nullptr;  // pcre2_match_context_8
  void* stack_ = nullptr;    // pcre2_jit_stack_8
};

}  // namespace headway::tok
