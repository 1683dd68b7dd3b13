// What a loaded tokenizer is made of, shared by the loaders (GGUF, tokenizer.json, vocab.txt) and
// the encode/decode paths. Hugging Face's pipeline: added tokens → normalizer → pre-tokenizer →
// model (BPE or WordPiece) → post-processor; decoder.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "headway/tools/tokenizer.hpp"
#include "runtime/tokenizer/regex_split.hpp"
#include "runtime/tokenizer/unicode.hpp"

namespace headway {

namespace tok {

// string_view lookups into a map keyed by std::string, without making a string.
struct StringHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};
using VocabMap = std::unordered_map<std::string, int32_t, StringHash, std::equal_to<>>;

struct AddedToken {
  std::string content;
  int32_t id = 0;
  bool special = false;  // skipped by decode with skip_special
  bool lstrip = false;   // whitespace before it is taken with it
  bool rstrip = false;   // whitespace after it is taken with it
};

// One pre-tokenizer step: split every piece by a regex, keeping matches and the text between
// them as pieces (Hugging Face's "Isolated"); or, with `remove_matches`, dropping the matches.
struct SplitStep {
  Regex regex;
  bool remove_matches = false;
};

struct BertNormalizer {
  bool enabled = false;
  bool clean_text = true;
  bool chinese_chars = true;
  bool strip_accents = true;
  bool lowercase = true;
};

struct Merge {
  int32_t rank;
  int32_t merged;
};

// A pair of adjacent BPE symbols that a merge joins (ids as when pushed: stale once they change).
struct Candidate {
  int32_t rank;
  int32_t left;  // the left symbol's position
  int32_t left_id, right_id, merged;
};

// Ids written into the caller's buffer while counting all of them.
struct Out {
  int32_t* ids;
  size_t capacity;
  size_t* count;
  void put(int32_t id) {
    if (*count < capacity) ids[*count] = id;
    ++*count;
  }
};

}  // namespace tok

struct Tokenizer::Impl {
  TokenizerModel model = TokenizerModel::kBpe;
  std::string source;  // the file, for messages

  std::vector<std::string> tokens;  // id → text
  std::vector<uint8_t> special;     // id → 1 when decode skips it with skip_special
  tok::VocabMap vocab;              // text → id
  int32_t unk_id = Tokenizer::kNone;
  int32_t bos_id = Tokenizer::kNone;
  int32_t eos_id = Tokenizer::kNone;
  int32_t eot_id = Tokenizer::kNone;
  bool add_bos = false;
  bool add_eos = false;
  std::vector<int32_t> prefix_ids;  // the post-processor's tokens before the text ([CLS], BOS)
  std::vector<int32_t> suffix_ids;  // and after it ([SEP], EOS)
  std::string chat_template;        // the file's, as Tokenizer::chat_template

  // Added tokens matched in the text, longest first for each first byte.
  std::vector<tok::AddedToken> added;
  std::vector<uint32_t> added_by_byte[256];

  tok::UnicodeForm unicode_form = tok::UnicodeForm::kNone;  // normalizer NFC / NFD / NFKC / NFKD

  // BPE.
  bool byte_level = true;         // the byte-to-unicode map (GPT-2)
  bool add_prefix_space = false;  // ByteLevel's add_prefix_space
  bool ignore_merges = false;     // a piece that is a whole token is taken as it is (Llama 3)
  std::vector<tok::SplitStep> steps;
  std::unordered_map<uint64_t, tok::Merge> merges;  // (left << 32 | right) → rank, merged id
  int32_t byte_token[256];                          // the token of each byte's character
  uint8_t char_byte_of[324];                        // code point (< 324) → byte, byte-level decode
  bool char_is_byte[324];

  // SentencePiece-style BPE (GGUF tokenizer.ggml.model "llama"): U+2581 for spaces, byte fallback.
  bool spm_prepend = true;               // U+2581 before the text (tokenizer.ggml.add_space_prefix)
  bool spm_prepend_first_only = true;    // only before the text's first part (Metaspace "first")
  bool spm_prepend_unless_space = true;  // not before a space (Metaspace; the Prepend normalizer: always)
  bool spm_split = false;                // pieces start at each U+2581 (Metaspace split)
  bool spm_whitespace_split = false;     // WhitespaceSplit first (T5): each word is a piece, U+2581 before it
  bool spm_byte_fallback = true;         // a character not in the vocabulary as <0xNN> tokens
  bool spm_fuse_unk = true;              // consecutive unknown characters as one <unk>
  bool spm_strip = true;                 // the decoder drops the text's first space (Strip)
  bool spm_style = false;                // loading: a Metaspace / Prepend / Replace was seen
  int32_t byte_fallback_token[256];      // <0xNN> of each byte, or kNone
  bool spm_like() const { return model == TokenizerModel::kSentencePiece || model == TokenizerModel::kUnigram; }

  // Unigram: each model token's score (id → score; added tokens past the model's vocabulary have
  // none), the lowest, and the longest token in bytes (how far a piece's matches reach).
  std::vector<double> unigram_score;
  double unigram_min_score = 0;
  size_t unigram_max_token = 0;

  // WordPiece.
  tok::BertNormalizer bert;
  std::string continuing_prefix = "##";
  uint32_t max_input_chars_per_word = 100;
  bool decoder_cleanup = true;

  // Scratch, reserved at load (see the header: grows only for a longer text than seen before).
  std::string clean;                 // the text with invalid UTF-8 replaced
  std::string norm;                  // normalized text
  std::string mapped;                // one piece in byte-level form; a WordPiece lookup key
  std::vector<uint32_t> codepoints;  // normalizer work
  std::vector<tok::Piece> pieces, next_pieces;
  std::vector<int32_t> symbols;     // BPE symbols of one piece, by first position (kNone: merged away)
  std::vector<int32_t> next, prev;  // the symbols' list
  std::vector<tok::Candidate> heap;
  std::vector<double> best_score;   // Unigram: best path ending at each byte of a piece
  std::vector<int32_t> best_start;  // where its last token starts (kNone: no path)
  std::vector<int32_t> best_id;     // and that token
  std::string bytes_out;            // decode work
  std::string byte_run;             // decode: a run of SentencePiece <0xNN> tokens

  void finish_load();  // indexes added tokens, reserves scratch, fills byte maps
  Status encode_text(std::string_view text, const EncodeOptions& options, tok::Out* out);
  // Text between added tokens; `first`: it starts the text (SentencePiece's prefix space).
  Status encode_segment(std::string_view text, bool first, tok::Out* out);
  Status encode_spm(std::string_view text, bool first, tok::Out* out);
  void spm_piece(std::string_view piece, tok::Out* out);
  void unigram_piece(std::string_view piece, tok::Out* out);
  Status encode_bpe(std::string_view text, tok::Out* out);
  Status encode_wordpiece(std::string_view text, tok::Out* out);
  void bpe_piece(std::string_view piece, tok::Out* out);
  void merge_symbols(tok::Out* out);  // BPE merges over `symbols`, then the ids out
  void wordpiece_word(std::string_view word, tok::Out* out);
};

namespace tok {

bool spm_byte(const std::string& s, uint8_t* b);
// Appends the bytes a token stands for (byte-level characters mapped back to bytes).
void token_bytes(const Tokenizer::Impl& t, int32_t id, std::string* out);

Status load_tokenizer_json(const char* path, Tokenizer::Impl* t);
Status load_vocab_txt(const char* dir, Tokenizer::Impl* t);
Status load_gguf(const char* path, Tokenizer::Impl* t);

}  // namespace tok

}  // namespace headway
