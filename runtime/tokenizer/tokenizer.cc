// Tokenizer: the added-token split, the models (byte-level BPE, SentencePiece-style BPE,
// WordPiece), decoding and the stream decoder. The loaders are load_gguf.cc and load_json.cc.
#include <algorithm>
#include <climits>
#include <cstdio>
#include <cstring>

#include "headway/tokenizer.hpp"
#include "runtime/tokenizer/tokenizer_impl.hpp"
#include "runtime/tokenizer/unicode.hpp"

namespace headway {

namespace {

using tok::Out;

bool ascii_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'; }

// Rust's char::is_whitespace, which BertPreTokenizer splits on (after the normalizer).
bool pre_whitespace(uint32_t cp) {
  return tok::bert_is_whitespace(cp) || cp == 0x0B || cp == 0x0C || cp == 0x85 || cp == 0x2028 || cp == 0x2029;
}

}  // namespace

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
  if (t.model == TokenizerModel::kSentencePiece) {
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

void Tokenizer::Impl::finish_load() {
  for (auto& list : added_by_byte) list.clear();
  for (size_t i = 0; i < added.size(); ++i) {
    if (added[i].content.empty()) continue;
    added_by_byte[static_cast<uint8_t>(added[i].content[0])].push_back(static_cast<uint32_t>(i));
  }
  for (auto& list : added_by_byte) {
    // Longest first: "<|im_start|>" before "<|im".
    for (size_t i = 1; i < list.size(); ++i) {
      for (size_t j = i; j > 0 && added[list[j]].content.size() > added[list[j - 1]].content.size(); --j) {
        std::swap(list[j], list[j - 1]);
      }
    }
  }
  for (const auto& a : added) {
    if (a.id >= 0 && static_cast<size_t>(a.id) < special.size() && a.special) special[static_cast<size_t>(a.id)] = 1;
  }
  std::memset(char_is_byte, 0, sizeof(char_is_byte));
  for (int b = 0; b < 256; ++b) {
    const uint32_t cp = tok::byte_to_unicode(static_cast<uint8_t>(b));
    char_is_byte[cp] = true;
    char_byte_of[cp] = static_cast<uint8_t>(b);
    std::string s;
    tok::utf8_append(cp, &s);
    auto it = vocab.find(std::string_view(s));
    byte_token[b] = it == vocab.end() ? Tokenizer::kNone : it->second;
    char name[8];
    std::snprintf(name, sizeof(name), "<0x%02X>", b);
    it = vocab.find(std::string_view(name));
    byte_fallback_token[b] = it == vocab.end() ? Tokenizer::kNone : it->second;
  }
  clean.reserve(kScratchText);
  norm.reserve(kScratchText + 8);
  mapped.reserve(kScratchPiece * 2);
  codepoints.reserve(64);
  pieces.reserve(kScratchText / 4);
  next_pieces.reserve(kScratchText / 4);
  symbols.reserve(kScratchPiece);
  next.reserve(kScratchPiece);
  prev.reserve(kScratchPiece);
  heap.reserve(kScratchPiece);
  bytes_out.reserve(kScratchText);
}

void Tokenizer::Impl::bpe_piece(std::string_view piece, Out* out) {
  if (ignore_merges) {
    mapped.clear();
    for (char c : piece) tok::utf8_append(tok::byte_to_unicode(static_cast<uint8_t>(c)), &mapped);
    auto it = vocab.find(std::string_view(mapped));
    if (it != vocab.end()) {
      out->put(it->second);
      return;
    }
  }
  symbols.clear();
  for (char c : piece) {
    const int32_t id = byte_token[static_cast<uint8_t>(c)];
    if (id != Tokenizer::kNone) {
      symbols.push_back(id);
    } else if (unk_id != Tokenizer::kNone) {
      symbols.push_back(unk_id);
    }
  }
  merge_symbols(out);
}

void Tokenizer::Impl::merge_symbols(Out* out) {
  const auto n = static_cast<int32_t>(symbols.size());
  if (n == 0) return;
  // Symbols as a linked list over their first positions; candidate pairs in a min-heap on
  // (rank, position): the lowest-ranked pair merges first, the leftmost of equal ranks (Hugging
  // Face's order), in O(n log n). A popped pair whose symbols changed since it was pushed is
  // stale and skipped.
  next.resize(static_cast<size_t>(n));
  prev.resize(static_cast<size_t>(n));
  for (int32_t i = 0; i < n; ++i) {
    next[static_cast<size_t>(i)] = i + 1 < n ? i + 1 : -1;
    prev[static_cast<size_t>(i)] = i - 1;
  }
  heap.clear();
  auto later = [](const tok::Candidate& a, const tok::Candidate& b) {
    return a.rank != b.rank ? a.rank > b.rank : a.left > b.left;
  };
  auto push = [&](int32_t left) {
    if (left < 0) return;
    const int32_t right = next[static_cast<size_t>(left)];
    if (right < 0) return;
    const int32_t l = symbols[static_cast<size_t>(left)], r = symbols[static_cast<size_t>(right)];
    auto it = merges.find((static_cast<uint64_t>(static_cast<uint32_t>(l)) << 32) | static_cast<uint32_t>(r));
    if (it == merges.end()) return;
    heap.push_back({it->second.rank, left, l, r, it->second.merged});
    std::push_heap(heap.begin(), heap.end(), later);
  };
  for (int32_t i = 0; i + 1 < n; ++i) push(i);
  while (!heap.empty()) {
    std::pop_heap(heap.begin(), heap.end(), later);
    const tok::Candidate c = heap.back();
    heap.pop_back();
    const int32_t right = next[static_cast<size_t>(c.left)];
    if (symbols[static_cast<size_t>(c.left)] != c.left_id || right < 0 ||
        symbols[static_cast<size_t>(right)] != c.right_id) {
      continue;  // stale
    }
    symbols[static_cast<size_t>(c.left)] = c.merged;
    symbols[static_cast<size_t>(right)] = Tokenizer::kNone;  // gone
    const int32_t after = next[static_cast<size_t>(right)];
    next[static_cast<size_t>(c.left)] = after;
    if (after >= 0) prev[static_cast<size_t>(after)] = c.left;
    push(prev[static_cast<size_t>(c.left)]);
    push(c.left);
  }
  for (int32_t i = 0; i >= 0; i = next[static_cast<size_t>(i)]) out->put(symbols[static_cast<size_t>(i)]);
}

Status Tokenizer::Impl::encode_bpe(std::string_view text, Out* out) {
  std::string_view s = text;
  if (nfc) {
    norm.clear();
    tok::nfc(text, &norm);
    s = norm;
  }
  if (add_prefix_space && !s.empty() && s[0] != ' ') {
    mapped.clear();
    mapped.push_back(' ');
    mapped.append(s);
    norm.swap(mapped);
    s = norm;
  }
  if (s.size() > UINT32_MAX) return Status::error(Code::kInvalidArgument, "text of %zu bytes is too long", s.size());
  pieces.clear();
  if (!s.empty()) pieces.push_back({0, static_cast<uint32_t>(s.size())});
  for (const tok::SplitStep& step : steps) {
    next_pieces.clear();
    for (const tok::Piece& p : pieces)
      HEADWAY_RETURN_IF_ERROR(step.regex.split(s, p, step.remove_matches, &next_pieces));
    pieces.swap(next_pieces);
  }
  for (const tok::Piece& p : pieces) bpe_piece(s.substr(p.begin, p.end - p.begin), out);
  return Status();
}

void Tokenizer::Impl::spm_piece(std::string_view piece, Out* out) {
  symbols.clear();
  uint32_t cp = 0;
  bool last_unk = false;
  for (size_t i = 0; i < piece.size();) {
    const size_t n = tok::utf8_next(piece, i, &cp);
    const size_t len = n == 0 ? 1 : n;
    auto it = vocab.find(piece.substr(i, len));
    bool all = spm_byte_fallback;  // the character's bytes as <0xNN> tokens, when all exist
    for (size_t k = 0; all && k < len; ++k) {
      all = byte_fallback_token[static_cast<uint8_t>(piece[i + k])] != Tokenizer::kNone;
    }
    if (it != vocab.end()) {
      symbols.push_back(it->second);
      last_unk = false;
    } else if (all) {
      for (size_t k = 0; k < len; ++k) symbols.push_back(byte_fallback_token[static_cast<uint8_t>(piece[i + k])]);
      last_unk = false;
    } else if (unk_id != Tokenizer::kNone && !(last_unk && spm_fuse_unk)) {
      symbols.push_back(unk_id);
      last_unk = true;
    }
    i += len;
  }
  merge_symbols(out);
}

Status Tokenizer::Impl::encode_spm(std::string_view text, bool first, Out* out) {
  // Hugging Face's SentencePiece-style BPE: spaces as U+2581 and one prepended (Metaspace, or the
  // Prepend + Replace normalizers), optionally split before each U+2581, then BPE over
  // characters with byte fallback.
  static constexpr std::string_view kSpace = "\xE2\x96\x81";
  norm.clear();
  bool prepend = spm_prepend && (first || !spm_prepend_first_only);
  if (spm_prepend_unless_space && (text.substr(0, 1) == " " || text.substr(0, kSpace.size()) == kSpace)) {
    prepend = false;
  }
  if (prepend) norm.append(kSpace);
  for (char c : text) {
    if (c == ' ') {
      norm.append(kSpace);
    } else {
      norm.push_back(c);
    }
  }
  const std::string_view s = norm;
  if (!spm_split) {
    spm_piece(s, out);
    return Status();
  }
  // Metaspace's split: a piece begins at each U+2581.
  size_t start = 0;
  for (size_t i = 1; i <= s.size(); ++i) {
    if (i == s.size() || s.substr(i, kSpace.size()) == kSpace) {
      spm_piece(s.substr(start, i - start), out);
      start = i;
    }
  }
  return Status();
}

void Tokenizer::Impl::wordpiece_word(std::string_view word, Out* out) {
  size_t chars = 0;
  for (char c : word) chars += (static_cast<uint8_t>(c) & 0xC0) != 0x80;
  if (chars > max_input_chars_per_word) {
    out->put(unk_id);
    return;
  }
  // Greedy longest match first; a word with a part not in the vocabulary is [UNK] as a whole.
  const size_t first = *out->count;
  size_t start = 0;
  while (start < word.size()) {
    size_t end = word.size();
    int32_t found = Tokenizer::kNone;
    while (end > start) {
      mapped.clear();
      if (start > 0) mapped.append(continuing_prefix);
      mapped.append(word.substr(start, end - start));
      auto it = vocab.find(std::string_view(mapped));
      if (it != vocab.end()) {
        found = it->second;
        break;
      }
      --end;
      while (end > start && (static_cast<uint8_t>(word[end]) & 0xC0) == 0x80) --end;
    }
    if (found == Tokenizer::kNone) {
      *out->count = first;
      out->put(unk_id);
      return;
    }
    out->put(found);
    start = end;
  }
}

Status Tokenizer::Impl::encode_wordpiece(std::string_view text, Out* out) {
  // BertNormalizer: clean text, pad CJK characters with spaces, strip accents, lowercase.
  norm.clear();
  uint32_t cp = 0;
  for (size_t i = 0; i < text.size();) {
    const size_t n = tok::utf8_next(text, i, &cp);
    i += n == 0 ? 1 : n;  // the text is valid UTF-8 here
    if (!bert.enabled) {
      tok::utf8_append(cp, &norm);
      continue;
    }
    if (bert.clean_text) {
      if (cp == 0 || cp == 0xFFFD || tok::bert_is_control(cp)) continue;
      if (tok::bert_is_whitespace(cp)) cp = ' ';
    }
    const bool pad = bert.chinese_chars && tok::bert_is_chinese(cp);
    if (pad) norm.push_back(' ');
    if (bert.lowercase || bert.strip_accents) {
      codepoints.clear();
      tok::bert_fold(cp, bert.lowercase, bert.strip_accents, &codepoints);
      for (uint32_t c : codepoints) tok::utf8_append(c, &norm);
    } else {
      tok::utf8_append(cp, &norm);
    }
    if (pad) norm.push_back(' ');
  }
  // BertPreTokenizer: split on whitespace (dropped) and punctuation (each its own word).
  const std::string_view s = norm;
  size_t word = 0;
  for (size_t i = 0; i < s.size();) {
    const size_t n = tok::utf8_next(s, i, &cp);
    const size_t len = n == 0 ? 1 : n;
    if (pre_whitespace(cp) || tok::bert_is_punctuation(cp)) {
      if (i > word) wordpiece_word(s.substr(word, i - word), out);
      if (!pre_whitespace(cp)) wordpiece_word(s.substr(i, len), out);
      word = i + len;
    }
    i += len;
  }
  if (s.size() > word) wordpiece_word(s.substr(word), out);
  return Status();
}

Status Tokenizer::Impl::encode_segment(std::string_view text, bool first, Out* out) {
  if (text.empty()) return Status();
  switch (model) {
    case TokenizerModel::kBpe: return encode_bpe(text, out);
    case TokenizerModel::kSentencePiece: return encode_spm(text, first, out);
    default: return encode_wordpiece(text, out);
  }
}

Status Tokenizer::Impl::encode_text(std::string_view text, const EncodeOptions& options, Out* out) {
  if (!tok::utf8_valid(text)) {
    clean.clear();
    tok::utf8_sanitize(text, &clean);
    text = clean;
  }
  if (options.add_special) {
    for (int32_t id : prefix_ids) out->put(id);
  }
  size_t segment = 0;  // start of the text not yet encoded
  size_t i = 0;
  while (options.parse_special && i < text.size()) {
    const tok::AddedToken* hit = nullptr;
    for (uint32_t k : added_by_byte[static_cast<uint8_t>(text[i])]) {
      const std::string& c = added[k].content;
      if (text.size() - i >= c.size() && std::memcmp(text.data() + i, c.data(), c.size()) == 0) {
        hit = &added[k];
        break;
      }
    }
    if (hit == nullptr) {
      ++i;
      continue;
    }
    size_t before = i;
    if (hit->lstrip) {
      while (before > segment && ascii_space(text[before - 1])) --before;
    }
    HEADWAY_RETURN_IF_ERROR(encode_segment(text.substr(segment, before - segment), segment == 0, out));
    out->put(hit->id);
    i += hit->content.size();
    if (hit->rstrip) {
      while (i < text.size() && ascii_space(text[i])) ++i;
    }
    segment = i;
  }
  HEADWAY_RETURN_IF_ERROR(encode_segment(text.substr(segment), segment == 0, out));
  if (options.add_special) {
    for (int32_t id : suffix_ids) out->put(id);
  }
  return Status();
}

// --- Tokenizer ------------------------------------------------------------------------------

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
    } else if (t.model == TokenizerModel::kSentencePiece) {
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
  if (t.model == TokenizerModel::kSentencePiece) {
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
  } else if (t->model == TokenizerModel::kSentencePiece && !started_ && t->spm_strip) {
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
