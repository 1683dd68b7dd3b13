// Generator (headway/tools/generator.hpp): prefill, then one token per next(): sample, keep, decode
// into text, run it through the model unless it is the last.
#include "headway/tools/generator.hpp"

#include <algorithm>

namespace headway {

Status Generator::init(Model* model, const Arena& arena, const Tokenizer* tokenizer,
                       const std::vector<int32_t>& end_ids) {
  if (model == nullptr || !model->initialized()) {
    return Status::error(Code::kFailedPrecondition, "Generator::init: the model is not initialized");
  }
  if (tokenizer != nullptr && !tokenizer->loaded()) {
    return Status::error(Code::kFailedPrecondition, "Generator::init: the tokenizer is not loaded");
  }
  const Plan& plan = arena.plan();
  if (plan.config.model.vocab_size == 0) {
    return Status::error(Code::kInvalidArgument, "Generator::init: the arena's plan has no model (vocab_size 0)");
  }
  model_ = model;
  arena_ = &arena;
  tokenizer_ = tokenizer;
  vocab_ = plan.config.model.vocab_size;
  // The last token of a full context is sampled but never run: one id more than the context.
  ids_.assign(size_t{plan.config.max_seq} + 1, 0);
  end_ids_ = end_ids;
  size_t longest = 0;
  if (tokenizer != nullptr) {
    for (const int32_t id : {tokenizer->eos_id(), tokenizer->eot_id()}) {
      if (id != Tokenizer::kNone) end_ids_.push_back(id);
    }
    for (uint32_t id = 0; id < tokenizer->vocab_size(); ++id) {
      const size_t n = tokenizer->token_text(static_cast<int32_t>(id)).size();
      if (n > longest) longest = n;
    }
  }
  piece_bytes_ = longest * 3 + 8 + StreamDecoder::kMaxHeld;
  n_ids_ = n_prompt_ = 0;
  budget_ = made_ = 0;
  started_ = finished_ = false;
  return Status();
}

Status Generator::start(const int32_t* prompt, size_t n, uint32_t max_tokens, const SamplerParams& params,
                        size_t cached) {
  if (model_ == nullptr) return Status::error(Code::kFailedPrecondition, "Generator::start before init");
  if (n == 0) return Status::error(Code::kInvalidArgument, "the prompt has no tokens");
  if (cached > n || (cached > 0 && model_->position() != cached)) {
    return Status::error(Code::kInvalidArgument, "%zu cached prompt tokens of %zu, the model at position %u", cached, n,
                         model_->position());
  }
  const uint32_t max_seq = arena_->plan().config.max_seq;
  const uint64_t end = uint64_t{model_->position()} + (n - cached);
  if (end > max_seq) {
    return Status::error(Code::kOutOfRange, "the prompt's %zu tokens at position %u pass the context of %u", n,
                         model_->position(), max_seq);
  }
  HEADWAY_RETURN_IF_ERROR(sampler_.init(params, vocab_, arena_->sampler_scratch(), Sampler::scratch_bytes(vocab_)));
  if (cached < n) HEADWAY_RETURN_IF_ERROR(model_->prefill(prompt + cached, static_cast<uint32_t>(n - cached)));
  for (size_t i = 0; i < n; ++i) ids_[i] = prompt[i];
  n_ids_ = n_prompt_ = n;
  const uint64_t room = max_seq - end + 1;  // tokens run after the prompt, and the last one sampled
  budget_ = room < max_tokens ? static_cast<uint32_t>(room) : max_tokens;
  made_ = 0;
  if (tokenizer_ != nullptr) stream_.emplace(*tokenizer_);
  started_ = true;
  finished_ = false;
  return Status();
}

Status Generator::next(char* piece, size_t cap, size_t* len, bool* done) {
  *len = 0;
  *done = true;
  if (!started_) return Status::error(Code::kFailedPrecondition, "Generator::next before start");
  if (finished_) return Status();
  if (cap < piece_bytes_) {
    return Status::error(Code::kInvalidArgument, "Generator::next: a piece buffer of %zu bytes, it needs %zu", cap,
                         piece_bytes_);
  }
  finished_ = true;  // until this step has gone right
  bool last = made_ >= budget_;
  if (!last) {
    const Result<int32_t> sampled = sampler_.sample(model_->logits(), ids_.data(), n_ids_);
    if (!sampled.ok()) return sampled.status();
    const int32_t id = sampled.value();
    ids_[n_ids_++] = id;
    ++made_;
    last = std::find(end_ids_.begin(), end_ids_.end(), id) != end_ids_.end();
    if (!last) {
      if (stream_) HEADWAY_RETURN_IF_ERROR(stream_->push(id, piece, cap, len));
      last = made_ >= budget_;
      if (!last) HEADWAY_RETURN_IF_ERROR(model_->decode(id));
    }
  }
  if (last) {
    size_t held = 0;
    if (stream_) HEADWAY_RETURN_IF_ERROR(stream_->finish(piece + *len, cap - *len, &held));
    *len += held;
    return Status();
  }
  finished_ = false;
  *done = false;
  return Status();
}

}  // namespace headway
