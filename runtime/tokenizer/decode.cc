// Decoding: ids back to text (a vocabulary's bytes, SentencePiece byte-fallback runs, WordPiece
// spacing, special tokens kept or dropped), and the stream decoder that holds an unfinished UTF-8
// sequence.
#include <algorithm>
#include <climits>
#include <cstdio>
#include <cstring>

#include "headway/tools/tokenizer.hpp"
#include "runtime/tokenizer/tokenizer_impl.hpp"
#include "runtime/tokenizer/unicode.hpp"

namespace headway {

namespace tok {

// A SentencePiece byte-fallback token "<0xNN>": its byte in *b.
bool spm_byte(const std::string& s, uint8_t* b) {
  if (s.size() != 6 || s.compare(0, 3, "<0x") != 0 || s[5] != '>') return false;
  unsigned v = 0;
  for (int k = 3; k < 5; ++k) {
    const char c = s[static_cast<size_t>(k)];
    const int d = c >= '0' && c <= '9'   ? c - '0'
                  : c >= 'A' && c <= 'F' ? c - 'A' + 10
                  : c >= 'a' && c <= 'f' ? c - 'a' + 10
                                         : -1;
    if (d < 0) return false;
    v = v * 16 + static_cast<unsigned>(d);
  }
  *b = static_cast<uint8_t>(v);
  return true;
}

template <class Visit>
void for_each_token_byte(const Tokenizer::Impl& t, int32_t id, Visit&& visit) {
  const std::string& s = t.tokens[static_cast<size_t>(id)];
  if (t.model == TokenizerModel::kBpe && t.byte_level) {
    // Every character in the byte-level map: its byte; else the token's own UTF-8 (an added
    // token such as "你好"), as Hugging Face's ByteLevel decoder does.
    bool all = true;
    uint32_t cp = 0;
    for (size_t i = 0; i < s.size();) {
      const size_t n = utf8_next(s, i, &cp);
      if (n == 0 || cp >= 324 || !t.char_is_byte[cp]) {
        all = false;
        break;
      }
      i += n;
    }
    if (all) {
      for (size_t i = 0; i < s.size();) {
        const size_t n = utf8_next(s, i, &cp);
        visit(t.char_byte_of[cp]);
        i += n;
      }
      return;
    }
  }
  if (t.spm_like()) {
    uint8_t b = 0;
    if (spm_byte(s, &b)) {
      visit(b);
      return;
    }
    for (size_t i = 0; i < s.size(); ++i) {
      if (s.compare(i, 3, "\xE2\x96\x81") == 0) {
        visit(' ');
        i += 2;
      } else {
        visit(static_cast<uint8_t>(s[i]));
      }
    }
    return;
  }
  for (char c : s) visit(static_cast<uint8_t>(c));
}

void token_bytes(const Tokenizer::Impl& t, int32_t id, std::string* out) {
  for_each_token_byte(t, id, [&](uint8_t b) { out->push_back(static_cast<char>(b)); });
}

}  // namespace tok

namespace {

void flush_byte_run(Tokenizer::Impl* t) {
  if (t->byte_run.empty()) return;
  if (tok::utf8_valid(t->byte_run)) {
    t->bytes_out.append(t->byte_run);
  } else {
    for (size_t i = 0; i < t->byte_run.size(); ++i) t->bytes_out.append("\xEF\xBF\xBD");
  }
  t->byte_run.clear();
}

}  // namespace

Status Tokenizer::decode(const int32_t* ids, size_t n, char* out, size_t capacity, size_t* length,
                         const DecodeOptions& options) {
  *length = 0;
  if (!impl_) return Status::error(Code::kFailedPrecondition, "decode: the tokenizer is not loaded");
  Impl& t = *impl_;
  t.bytes_out.clear();
  t.byte_run.clear();  // a failed call may have left a run
  bool first = true;
  for (size_t i = 0; i < n; ++i) {
    const int32_t id = ids[i];
    if (id < 0 || static_cast<size_t>(id) >= t.tokens.size()) {
      return Status::error(Code::kInvalidArgument, "decode: id %d (at %zu) is outside the vocabulary of %zu tokens", id,
                           i, t.tokens.size());
    }
    if (options.skip_special && t.special[static_cast<size_t>(id)]) continue;
    if (t.model == TokenizerModel::kWordPiece) {
      // Hugging Face's WordPiece decoder: "##" joins, others follow a space; cleanup per token.
      const std::string& s = t.tokens[static_cast<size_t>(id)];
      const std::string_view prefix = t.continuing_prefix;
      std::string_view piece = s;
      const size_t start = t.bytes_out.size();
      if (!first) {
        if (piece.substr(0, prefix.size()) == prefix) {
          piece.remove_prefix(prefix.size());
        } else {
          t.bytes_out.push_back(' ');
        }
      }
      t.bytes_out.append(piece);
      if (t.decoder_cleanup && t.bytes_out.size() - start == 2 && t.bytes_out[start] == ' ') {
        const char c = t.bytes_out[start + 1];
        if (c == '.' || c == '?' || c == '!' || c == ',') t.bytes_out.erase(start, 1);
      }
    } else if (t.spm_like()) {
      // Hugging Face's ByteFallback: a run of <0xNN> tokens is its bytes when they are UTF-8,
      // else one U+FFFD per byte.
      uint8_t b = 0;
      if (tok::spm_byte(t.tokens[static_cast<size_t>(id)], &b)) {
        t.byte_run.push_back(static_cast<char>(b));
      } else {
        flush_byte_run(&t);
        tok::token_bytes(t, id, &t.bytes_out);
      }
    } else {
      tok::token_bytes(t, id, &t.bytes_out);
    }
    first = false;
  }
  if (t.spm_like()) {
    flush_byte_run(&t);
    if (t.spm_strip && !t.bytes_out.empty() && t.bytes_out[0] == ' ') t.bytes_out.erase(0, 1);  // Strip
  }
  std::string_view text = t.bytes_out;
  if (!tok::utf8_valid(text)) {
    t.clean.clear();
    tok::utf8_sanitize(text, &t.clean);
    text = t.clean;
  }
  *length = text.size();
  if (text.size() > capacity) {
    return Status::error(Code::kOutOfRange, "decode: the text needs %zu bytes, the buffer holds %zu", text.size(),
                         capacity);
  }
  if (!text.empty()) std::memcpy(out, text.data(), text.size());
  return Status();
}

Status Tokenizer::decode(const int32_t* ids, size_t n, std::string* text, const DecodeOptions& options) {
  size_t length = 0;
  text->resize(text->capacity());
  Status s = decode(ids, n, text->data(), text->size(), &length, options);
  if (s.code() == Code::kOutOfRange) {
    text->resize(length);
    s = decode(ids, n, text->data(), text->size(), &length, options);
  }
  text->resize(s.ok() ? length : 0);
  return s;
}

// --- StreamDecoder --------------------------------------------------------------------------

Status StreamDecoder::push(int32_t id, char* out, size_t capacity, size_t* length) {
  *length = 0;
  const Tokenizer::Impl* t = tokenizer_->impl();
  if (t == nullptr) return Status::error(Code::kFailedPrecondition, "StreamDecoder: the tokenizer is not loaded");
  if (id < 0 || static_cast<size_t>(id) >= t->tokens.size()) {
    return Status::error(Code::kInvalidArgument, "StreamDecoder: id %d is outside the vocabulary of %zu tokens", id,
                         t->tokens.size());
  }
  const size_t need = t->tokens[static_cast<size_t>(id)].size() * 3 + 8;
  if (capacity < need) {
    return Status::error(Code::kOutOfRange, "StreamDecoder: id %d may need %zu bytes, the buffer holds %zu", id, need,
                         capacity);
  }
  if (options_.skip_special && t->special[static_cast<size_t>(id)]) return Status();
  size_t n = 0;
  auto put = [&](uint8_t b) { out[n++] = static_cast<char>(b); };
  auto replacement = [&]() {
    put(0xEF);
    put(0xBF);
    put(0xBD);
  };
  // One byte through the UTF-8 assembler: complete sequences go out, a held prefix that cannot
  // complete becomes U+FFFD (its maximal subpart) and the byte starts over.
  auto feed = [&](uint8_t b) {
    for (;;) {
      if (n_held_ == 0) {
        const size_t len = tok::utf8_lead_length(b);
        if (len == 1) {
          put(b);
        } else if (len == 0) {
          replacement();
        } else {
          held_[n_held_++] = b;
        }
        return;
      }
      uint8_t lo = 0x80, hi = 0xBF;
      if (n_held_ == 1) {
        if (held_[0] == 0xE0) lo = 0xA0;
        if (held_[0] == 0xED) hi = 0x9F;
        if (held_[0] == 0xF0) lo = 0x90;
        if (held_[0] == 0xF4) hi = 0x8F;
      }
      if (b < lo || b > hi) {
        n_held_ = 0;
        replacement();
        continue;  // b again, as a lead
      }
      if (n_held_ + 1 == tok::utf8_lead_length(held_[0])) {
        for (size_t k = 0; k < n_held_; ++k) put(held_[k]);
        put(b);
        n_held_ = 0;
      } else {
        held_[n_held_++] = b;
      }
      return;
    }
  };
  if (t->model == TokenizerModel::kWordPiece) {
    std::string_view s = t->tokens[static_cast<size_t>(id)];
    const std::string_view prefix = t->continuing_prefix;
    if (started_ && s.substr(0, prefix.size()) == prefix) {
      s.remove_prefix(prefix.size());
    } else if (started_) {
      feed(' ');
    }
    for (char c : s) feed(static_cast<uint8_t>(c));
  } else if (t->spm_like() && !started_ && t->spm_strip) {
    // The decoder's Strip: the text's first space (the prepended U+2581) is dropped.
    bool at_start = true;
    tok::for_each_token_byte(*t, id, [&](uint8_t b) {
      if (!(at_start && b == ' ')) feed(b);
      at_start = false;
    });
  } else {
    tok::for_each_token_byte(*t, id, feed);
  }
  started_ = true;
  *length = n;
  return Status();
}

Status StreamDecoder::finish(char* out, size_t capacity, size_t* length) {
  *length = 0;
  if (n_held_ == 0) return Status();
  if (capacity < 3)
    return Status::error(Code::kOutOfRange, "StreamDecoder: finish needs 3 bytes, the buffer holds %zu", capacity);
  std::memcpy(out, "\xEF\xBF\xBD", 3);
  *length = 3;
  n_held_ = 0;
  return Status();
}

}  // namespace headway
