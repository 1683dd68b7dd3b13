// Tokenizer: the public class over its Impl — made from a model's files (the loaders are
// load_gguf.cc and load_json.cc), what it says of its vocabulary, and encode into the caller's
// buffers. The models are encode.cc; decoding and the stream decoder, decode.cc.
#include <algorithm>
#include <climits>
#include <cstdio>
#include <cstring>

#include "headway/tools/tokenizer.hpp"
#include "runtime/tokenizer/tokenizer_impl.hpp"
#include "runtime/tokenizer/unicode.hpp"

namespace headway {

using tok::Out;

Tokenizer::Tokenizer() = default;
Tokenizer::Tokenizer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Tokenizer::Tokenizer(Tokenizer&&) noexcept = default;
Tokenizer& Tokenizer::operator=(Tokenizer&&) noexcept = default;
Tokenizer::~Tokenizer() = default;

Result<Tokenizer> Tokenizer::from_gguf(const char* path) {
  auto impl = std::make_unique<Impl>();
  impl->source = path;
  const Status s = tok::load_gguf(path, impl.get());
  if (!s.ok()) return s;
  impl->finish_load();
  return Tokenizer(std::move(impl));
}

Result<Tokenizer> Tokenizer::from_tokenizer_json(const char* path) {
  auto impl = std::make_unique<Impl>();
  impl->source = path;
  const Status s = tok::load_tokenizer_json(path, impl.get());
  if (!s.ok()) return s;
  impl->finish_load();
  return Tokenizer(std::move(impl));
}

Result<Tokenizer> Tokenizer::from_model_dir(const char* dir) {
  const std::string json = std::string(dir) + "/tokenizer.json";
  if (FILE* f = std::fopen(json.c_str(), "rb")) {
    std::fclose(f);
    return from_tokenizer_json(json.c_str());
  }
  auto impl = std::make_unique<Impl>();
  impl->source = std::string(dir) + "/vocab.txt";
  const Status s = tok::load_vocab_txt(dir, impl.get());
  if (!s.ok()) return s;
  impl->finish_load();
  return Tokenizer(std::move(impl));
}

TokenizerModel Tokenizer::model() const { return impl_->model; }
uint32_t Tokenizer::vocab_size() const { return static_cast<uint32_t>(impl_->tokens.size()); }
int32_t Tokenizer::bos_id() const { return impl_->bos_id; }
int32_t Tokenizer::eos_id() const { return impl_->eos_id; }
int32_t Tokenizer::eot_id() const { return impl_->eot_id != kNone ? impl_->eot_id : impl_->eos_id; }
bool Tokenizer::add_bos() const { return impl_->add_bos; }
std::string_view Tokenizer::chat_template() const { return impl_ ? impl_->chat_template : std::string_view(); }
bool Tokenizer::is_special(int32_t id) const {
  return id >= 0 && static_cast<size_t>(id) < impl_->special.size() && impl_->special[static_cast<size_t>(id)];
}
std::string_view Tokenizer::token_text(int32_t id) const {
  if (id < 0 || static_cast<size_t>(id) >= impl_->tokens.size()) return {};
  return impl_->tokens[static_cast<size_t>(id)];
}

Status Tokenizer::encode(std::string_view text, int32_t* ids, size_t capacity, size_t* count,
                         const EncodeOptions& options) {
  *count = 0;
  if (!impl_) return Status::error(Code::kFailedPrecondition, "encode: the tokenizer is not loaded");
  Out out{ids, capacity, count};
  HEADWAY_RETURN_IF_ERROR(impl_->encode_text(text, options, &out));
  if (*count > capacity) {
    return Status::error(Code::kOutOfRange, "encode: the text needs %zu ids, the buffer holds %zu", *count, capacity);
  }
  return Status();
}

Status Tokenizer::encode(std::string_view text, std::vector<int32_t>* ids, const EncodeOptions& options) {
  size_t count = 0;
  ids->resize(ids->capacity() > 16 ? ids->capacity() : 16);
  Status s = encode(text, ids->data(), ids->size(), &count, options);
  if (s.code() == Code::kOutOfRange) {
    ids->resize(count);
    s = encode(text, ids->data(), ids->size(), &count, options);
  }
  ids->resize(s.ok() ? count : 0);
  return s;
}

}  // namespace headway
