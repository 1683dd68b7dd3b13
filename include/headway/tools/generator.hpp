// Generator: the one generation loop every front end shares (the command-line tool, the Python
// package). It holds a Model, a Sampler over the arena's scratch, a StreamDecoder and the ids so
// far; start() runs the prompt, and each next() samples one token and returns the text it
// completes, stopping at an end token (the tokenizer's end-of-text or end-of-turn, and any the
// model file names) or at the token budget. Without a tokenizer it runs ids alone: no text.
// Part of the hosted tools layer (headway::tools), like the tokenizers.
//
//   headway::Generator gen;
//   gen.init(&model, arena, &tokenizer);                 // allocates: the ids' room (max_seq)
//   gen.start(prompt, n, 128, params);                   // prefill at model.position()
//   std::vector<char> piece(gen.piece_bytes());
//   for (bool done = false; !done;) {
//     size_t len = 0;
//     gen.next(piece.data(), piece.size(), &len, &done);  // one token: sample, decode, text
//   }
//
// start() and next() never allocate: the ids' room is sized at init for the plan's context, the
// sampler filters in the arena's sampler_scratch(), the decoder holds at most 3 bytes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "headway/arena.hpp"
#include "headway/model.hpp"
#include "headway/sampler.hpp"
#include "headway/status.hpp"
#include "headway/tools/tokenizer.hpp"

namespace headway {

class Generator {
 public:
  // Binds an initialized model, the arena it runs over (its plan gives the vocabulary, the
  // context and the sampler's scratch) and the tokenizer of the model's file, or null to run ids
  // without text (the pieces are then empty). `end_ids`: the tokens that end a generation besides
  // the tokenizer's (ModelFile::eos_ids). The model, arena and tokenizer must outlive the
  // generator. Allocates the ids' room: the plan's max_seq ids.
  Status init(Model* model, const Arena& arena, const Tokenizer* tokenizer, const std::vector<int32_t>& end_ids = {});

  // Checks and seeds the sampler with `params`, then runs prompt[0, n) through the model at its
  // position() (reset the model first for a fresh sequence). Up to max_tokens tokens follow,
  // fewer when the context fills first (the last token is sampled, never run). An empty prompt,
  // bad sampling parameters or a prompt past the context: an error, and the model is unchanged.
  // `cached`: the first that many prompt ids are in the model already (a restored state whose
  // position is `cached`, its logits the last cached token's): only the rest is run, and all n
  // count as the prompt.
  Status start(const int32_t* prompt, size_t n, uint32_t max_tokens, const SamplerParams& params, size_t cached = 0);

  // Samples the next token and writes the text it completes to piece[0, cap) (*len bytes, no
  // NUL; may be 0 while a UTF-8 sequence is incomplete, always 0 without a tokenizer). The token
  // is run through the model unless it is the last one. *done turns true at an end token (its
  // text is not written) and with the budget's last token; the held bytes of an unfinished sequence
  // come with that last piece (as U+FFFD). cap must be at least piece_bytes(). After done, or
  // after an error, next() writes nothing and says done.
  Status next(char* piece, size_t cap, size_t* len, bool* done);

  // The piece buffer next() needs: the longest token's text × 3 + 8, and 3 bytes for the end.
  size_t piece_bytes() const { return piece_bytes_; }
  // The prompt and the tokens sampled so far (the end token included, when there was one).
  const int32_t* ids() const { return ids_.data(); }
  size_t n_ids() const { return n_ids_; }
  size_t n_prompt() const { return n_prompt_; }
  uint32_t n_generated() const { return made_; }
  bool started() const { return started_; }

 private:
  Model* model_ = nullptr;
  const Arena* arena_ = nullptr;
  const Tokenizer* tokenizer_ = nullptr;
  Sampler sampler_;
  std::optional<StreamDecoder> stream_;  // made anew by each start()
  std::vector<int32_t> ids_;             // [max_seq], sized at init
  std::vector<int32_t> end_ids_;         // the tokens that end a generation
  size_t n_ids_ = 0;
  size_t n_prompt_ = 0;
  size_t piece_bytes_ = 0;
  uint32_t vocab_ = 0;
  uint32_t budget_ = 0;
  uint32_t made_ = 0;
  bool started_ = false;
  bool finished_ = false;
};

}  // namespace headway
