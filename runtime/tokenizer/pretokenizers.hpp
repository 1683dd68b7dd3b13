// What the loaders share: the named pre-tokenizers of GGUF's tokenizer.ggml.pre, the merges
// table, and the end-of-turn token's guess.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "runtime/tokenizer/tokenizer_impl.hpp"

namespace headway::tok {

// Hugging Face's own split regexes (tokenizer.json of each family), which llama.cpp's
// llama-vocab.cpp adapts for its regex engine; PCRE2 takes the originals.
inline constexpr const char* kGpt2Regex =
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+";
inline constexpr const char* kLlama3Regex =
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|"
    "\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
inline constexpr const char* kQwen2Regex =
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|"
    "\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";

// Appends a split step (Isolated, or Removed with remove_matches).
Status add_split(std::string_view pattern, bool remove_matches, const char* where, Tokenizer::Impl* t);
// tokenizer.ggml.pre's value → the split steps (and Llama 3's ignore_merges), as llama.cpp maps
// it. An unknown name is kUnsupported naming the file and the value.
Status set_named_pretokenizer(const std::string& pre, const char* path, Tokenizer::Impl* t);
// "left right" pairs (or [left, right]) → the merges table; a part missing from the vocabulary is
// an error naming the file, the field and the index.
Status add_merges(const std::vector<std::string>& merges, const char* path, const char* field, Tokenizer::Impl* t);
Status add_merge(std::string_view left, std::string_view right, size_t rank, const char* path, const char* field,
                 Tokenizer::Impl* t);
// SentencePiece merges derived from the scores as transformers' generate_merges does: every
// split of a token into two tokens, best score first, then the longer left and right parts.
void merges_from_scores(const std::vector<float>& scores, Tokenizer::Impl* t);
// The first of the usual end-of-turn tokens that the vocabulary has, or kNone.
int32_t guess_eot(const Tokenizer::Impl& t);

}  // namespace headway::tok
