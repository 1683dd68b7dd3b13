// Encoding: the added-token split, then the models (byte-level BPE, SentencePiece-style BPE,
// WordPiece) over the plain segments; finish_load() builds what they look things up in.
#include <algorithm>
#include <climits>
#include <cstdio>
#include <cstring>

#include "headway/tools/tokenizer.hpp"
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
  if (model == TokenizerModel::kUnigram) {
    best_score.reserve(kScratchPiece + 1);
    best_start.reserve(kScratchPiece + 1);
    best_id.reserve(kScratchPiece + 1);
  }
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
  if (unicode_form != tok::UnicodeForm::kNone) {
    norm.clear();
    tok::normalize(unicode_form, text, &norm);
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

// Hugging Face's Unigram::encode_optimized: for each character boundary, every model token that
// starts there extends the best path to its end (a later start wins only with a higher score);
// where no one-character token starts, the character as <unk> scored min_score - 10. The path is
// read back from the end; consecutive <unk> characters are one string, which is its token if the
// vocabulary has it, else its bytes as <0xNN> tokens (byte_fallback, when all exist), else <unk>.
void Tokenizer::Impl::unigram_piece(std::string_view piece, Out* out) {
  const size_t n = piece.size();
  if (n == 0) return;
  const double unk_score = unigram_min_score - 10.0;
  best_score.assign(n + 1, 0.0);
  best_start.assign(n + 1, Tokenizer::kNone);
  best_id.assign(n + 1, Tokenizer::kNone);
  uint32_t cp = 0;
  for (size_t at = 0; at < n;) {
    const size_t step = tok::utf8_next(piece, at, &cp);
    const size_t char_len = step == 0 ? 1 : step;
    const double base = best_score[at];
    bool single = false;
    const auto offer = [&](size_t end, int32_t id, double score) {
      if (best_start[end] == Tokenizer::kNone || base + score > best_score[end]) {
        best_score[end] = base + score;
        best_start[end] = static_cast<int32_t>(at);
        best_id[end] = id;
      }
    };
    const size_t reach = std::min(n - at, unigram_max_token);
    for (size_t len = 1; len <= reach; ++len) {
      const auto it = vocab.find(piece.substr(at, len));
      if (it == vocab.end() || static_cast<size_t>(it->second) >= unigram_score.size()) continue;
      offer(at + len, it->second, unigram_score[static_cast<size_t>(it->second)]);
      single = single || len == char_len;
    }
    if (!single) offer(at + char_len, unk_id, unk_score);
    at += char_len;
  }
  // Back from the end: each token's end in `symbols` (reversed), <unk> runs fused.
  symbols.clear();
  for (size_t end = n; end > 0;) {
    const auto start = static_cast<size_t>(best_start[end]);
    const bool unk = best_id[end] == unk_id;
    if (!(unk && !symbols.empty() && symbols.back() < 0))
      symbols.push_back(unk ? -static_cast<int32_t>(end) - 1 : static_cast<int32_t>(end));
    end = start;
  }
  // Forward: symbols hold ends (>= 0) or -(end + 1) of a fused <unk> run; its start is the next
  // symbol's end.
  size_t start = 0;
  for (size_t k = symbols.size(); k-- > 0;) {
    const int32_t sym = symbols[k];
    const size_t end = static_cast<size_t>(sym >= 0 ? sym : -sym - 1);
    if (sym >= 0) {
      out->put(best_id[end]);
    } else {
      const std::string_view run = piece.substr(start, end - start);
      const auto it = vocab.find(run);
      bool bytes = spm_byte_fallback;
      for (size_t i = 0; bytes && i < run.size(); ++i) {
        bytes = byte_fallback_token[static_cast<uint8_t>(run[i])] != Tokenizer::kNone;
      }
      if (it != vocab.end() && static_cast<size_t>(it->second) < unigram_score.size()) {
        out->put(it->second);
      } else if (bytes) {
        for (char c : run) out->put(byte_fallback_token[static_cast<uint8_t>(c)]);
      } else {
        out->put(unk_id);
      }
    }
    start = end;
  }
}

Status Tokenizer::Impl::encode_spm(std::string_view text, bool first, Out* out) {
  // Hugging Face's SentencePiece-style BPE: spaces as U+2581 and one prepended (Metaspace, or the
  // Prepend + Replace normalizers), optionally split before each U+2581, then BPE over
  // characters with byte fallback.
  static constexpr std::string_view kSpace = "\xE2\x96\x81";
  if (unicode_form != tok::UnicodeForm::kNone) {  // the normalizer's Unicode form comes first (load_json.cc)
    mapped.clear();
    tok::normalize(unicode_form, text, &mapped);
    text = mapped;
  }
  const auto piece = [&](std::string_view p) {
    if (model == TokenizerModel::kUnigram) unigram_piece(p, out);
    else spm_piece(p, out);
  };
  if (spm_whitespace_split) {
    // Words between runs of White_Space (Rust's char::is_whitespace: Python's isspace but for
    // U+001C..U+001F), each as U+2581 + word.
    uint32_t cp = 0;
    size_t start = 0;
    for (size_t i = 0; i <= text.size();) {
      const size_t len = i < text.size() ? tok::utf8_next(text, i, &cp) : 0;
      const bool space = i < text.size() && len != 0 && tok::python_is_space(cp) && !(cp >= 0x1C && cp <= 0x1F);
      if (i == text.size() || space) {
        if (i > start) {
          norm.assign(kSpace);
          norm.append(text.substr(start, i - start));
          piece(norm);
        }
        if (i == text.size()) break;
        start = i + len;
      }
      i += len == 0 ? 1 : len;
    }
    return Status();
  }
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
    piece(s);
    return Status();
  }
  // Metaspace's split: a piece begins at each U+2581.
  size_t start = 0;
  for (size_t i = 1; i <= s.size(); ++i) {
    if (i == s.size() || s.substr(i, kSpace.size()) == kSpace) {
      piece(s.substr(start, i - start));
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
    case TokenizerModel::kSentencePiece:
    case TokenizerModel::kUnigram: return encode_spm(text, first, out);
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

}  // namespace headway
