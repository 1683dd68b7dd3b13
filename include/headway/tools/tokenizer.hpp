// Text in, text out: the tokenizers of the models' own files, token for token what Hugging Face's
// `tokenizers` gives. Hosted tools layer (headway::tools), like the file formats.
//
//   byte-level BPE  GGUF tokenizer.ggml.model = "gpt2" (pre: gpt2, llama-bpe, qwen2, smollm, olmo,
//                   ...), or a tokenizer.json with model.type "BPE" and a ByteLevel/Split/Digits
//                   pre-tokenizer (the Split regex itself, compiled by PCRE2 with JIT, UTF + UCP)
//   WordPiece       tokenizer.json with model.type "WordPiece" (BertNormalizer, BertPreTokenizer),
//                   or a model directory with vocab.txt and tokenizer_config.json
//   SentencePiece   GGUF tokenizer.ggml.model = "llama", read as transformers reads such a file
//   -style BPE      (LlamaTokenizer): U+2581 for spaces, one prepended to the text's first part
//                   unless it starts with a space (tokenizer.ggml.add_space_prefix false: never),
//                   merges from tokenizer.ggml.merges or derived from the scores, byte fallback to
//                   <0xNN> tokens, BOS unless the file says otherwise; Gemma's and Phi-3's files
//                   as transformers reads those (Gemma: spaces as U+2581 with nothing prepended,
//                   tokens of real spaces respelled, merges ranked by token order; Phi-3: U+2581
//                   before every part of the text). Or a tokenizer.json with
//                   model.type "BPE", byte_fallback, and the Prepend + Replace normalizers or a
//                   Metaspace pre-tokenizer (prepend_scheme first/always/never, split or not).
//   Unigram         tokenizer.json with model.type "Unigram" (scores, unk_id, byte_fallback) and the
//                   SentencePiece-style Metaspace / Prepend + Replace steps, or a GGUF's
//                   tokenizer.ggml.model "t5" as transformers' T5Tokenizer reads it (words split at
//                   whitespace, U+2581 before each, </s> after; no precompiled_charsmap, [PADn]
//                   sentinels named <extra_id_99> down): the best-scoring split
//                   of each piece (Viterbi, an unknown character scored 10 below the lowest score),
//                   consecutive unknown characters fused into one <unk> or, with byte_fallback,
//                   their bytes as <0xNN> tokens.
//
// A tokenizer.json's NFC, NFD, NFKC or NFKD normalizer runs through utf8proc (BPE, SentencePiece-
// style and Unigram; before the Prepend / Replace steps where it has those).
//
// The pipeline is Hugging Face's: the text is first split on the special (added) tokens written
// in it, each other part is normalized, pre-tokenized and run through the model, and the
// post-processor's tokens (BOS, [CLS] ... [SEP]) are added as the file says.
//
// Text: UTF-8. Invalid UTF-8 is replaced by U+FFFD (one per maximal invalid subpart, as Python's
// bytes.decode(errors="replace") and Rust's from_utf8_lossy do) before tokenizing; decoded bytes
// that do not form UTF-8 are replaced the same way.
//
// Memory: the from_* loaders allocate (the vocabulary, the merges, compiled regexes, scratch).
// encode() and decode() into caller buffers do not allocate once the scratch has grown to the
// largest text seen: it is reserved at load (about 0.6 MiB) for texts of kScratchText bytes with
// pieces (words) of kScratchPiece bytes, and grows (allocates) only for larger ones. A
// tokenizer.json with a Unicode normalizer allocates per call (utf8proc returns a new string). The
// std::vector / std::string overloads allocate their result. encode/decode use the Tokenizer's
// scratch: one Tokenizer per thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "headway/status.hpp"

namespace headway {

struct EncodeOptions {
  // Add the tokens the file's post-processor adds (BOS; [CLS] and [SEP]) where the file says so.
  bool add_special = true;
  // Special tokens written in the text ("<|im_start|>", "[SEP]") become their ids; false: they
  // are tokenized as plain text.
  bool parse_special = true;
};

struct DecodeOptions {
  // Drop special/control tokens (BOS, EOS, "<|im_end|>", "[CLS]") from the text.
  bool skip_special = true;
};

enum class TokenizerModel : uint8_t { kBpe, kWordPiece, kSentencePiece, kUnigram };

class Tokenizer {
 public:
  static constexpr size_t kScratchText = 1 << 16;   // bytes of text encode() handles without growing
  static constexpr size_t kScratchPiece = 1 << 12;  // bytes of one pre-tokenized piece, likewise
  static constexpr int32_t kNone = -1;              // an absent bos/eos/eot id

  Tokenizer();
  Tokenizer(Tokenizer&&) noexcept;
  Tokenizer& operator=(Tokenizer&&) noexcept;
  ~Tokenizer();

  // From a GGUF file's tokenizer.ggml.* metadata. Errors name the file and the key.
  static Result<Tokenizer> from_gguf(const char* path);
  // From a tokenizer.json; bos/eos come from a tokenizer_config.json beside it when there is one.
  static Result<Tokenizer> from_tokenizer_json(const char* path);
  // From a model directory: its tokenizer.json, or else vocab.txt + tokenizer_config.json (BERT).
  static Result<Tokenizer> from_model_dir(const char* dir);

  bool loaded() const { return impl_ != nullptr; }
  TokenizerModel model() const;
  uint32_t vocab_size() const;
  int32_t bos_id() const;
  int32_t eos_id() const;
  int32_t eot_id() const;  // end of turn (<|im_end|>, <|eot_id|>); eos where the file has none
  bool add_bos() const;    // whether encode() with add_special puts BOS first, as the file says
  bool is_special(int32_t id) const;
  // The file's chat template (a GGUF's tokenizer.chat_template, tokenizer_config.json's
  // chat_template: the string, or the one named "default" of a list); empty when it has none.
  std::string_view chat_template() const;
  // The token's text as the vocabulary stores it (byte-level form for BPE); empty past the end.
  std::string_view token_text(int32_t id) const;

  // Encodes `text` into ids[0, capacity). *count is set to the number of ids the text needs;
  // when that is more than capacity, nothing past capacity is written and the result is
  // kOutOfRange naming both counts (call again with a larger buffer).
  Status encode(std::string_view text, int32_t* ids, size_t capacity, size_t* count, const EncodeOptions& options = {});
  Status encode(std::string_view text, std::vector<int32_t>* ids, const EncodeOptions& options = {});

  // Decodes ids into out[0, capacity): *length is set to the bytes the text needs (no NUL is
  // written); more than capacity is kOutOfRange. An id outside the vocabulary is
  // kInvalidArgument naming the id and the vocabulary size.
  Status decode(const int32_t* ids, size_t n, char* out, size_t capacity, size_t* length,
                const DecodeOptions& options = {});
  Status decode(const int32_t* ids, size_t n, std::string* text, const DecodeOptions& options = {});

  struct Impl;
  const Impl* impl() const { return impl_.get(); }

 private:
  explicit Tokenizer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// Turns ids into text one at a time, as a generator produces them: the bytes of a piece that ends
// inside a UTF-8 sequence are held until the sequence completes (or proves invalid: then U+FFFD),
// so the text written never holds half a character. No allocation: the held bytes are at most 3.
// WordPiece: a "##" piece joins the word before it, any other piece follows a space (the
// decoder's cleanup of " ." and " n't" is not applied here). SentencePiece: the text's first space
// is dropped as the decoder strips it; an invalid run of <0xNN> bytes gives U+FFFD per maximal
// subpart here, where decode() gives one per byte as Hugging Face's ByteFallback does.
class StreamDecoder {
 public:
  static constexpr size_t kMaxHeld = 3;

  explicit StreamDecoder(const Tokenizer& tokenizer, const DecodeOptions& options = {})
      : tokenizer_(&tokenizer), options_(options) {}

  // Appends the text that `id` completes to out[0, capacity); *length gets the bytes written.
  // Needs capacity >= token_text(id).size() * 3 + 8 (kOutOfRange naming both otherwise).
  Status push(int32_t id, char* out, size_t capacity, size_t* length);
  // Ends the stream: held bytes of an unfinished sequence become U+FFFD (3 bytes; capacity >= 3).
  Status finish(char* out, size_t capacity, size_t* length);

 private:
  const Tokenizer* tokenizer_;
  DecodeOptions options_;
  uint8_t held_[kMaxHeld] = {};
  size_t n_held_ = 0;
  bool started_ = false;  // a word was emitted (WordPiece spacing)
};

}  // namespace headway
