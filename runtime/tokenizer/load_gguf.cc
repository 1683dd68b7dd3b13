// A tokenizer from a GGUF file's tokenizer.ggml.* keys, read as llama.cpp reads them
// (llama-vocab.cpp): tokens, token types, merges, the special ids and the pre-tokenizer's name.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>

#include "runtime/formats/gguf_reader.hpp"
#include "runtime/formats/mapped_file.hpp"
#include "runtime/tokenizer/pretokenizers.hpp"
#include "runtime/tokenizer/tokenizer_impl.hpp"
#include "runtime/tokenizer/unicode.hpp"

namespace headway::tok {
namespace {

namespace gguf = formats::gguf;

// llama.cpp's token types (llama_token_type).
constexpr int32_t kTypeUnknown = 2;
constexpr int32_t kTypeControl = 3;
constexpr int32_t kTypeUserDefined = 4;

struct Keys {
  gguf::Kv arch, model, pre, tokens, token_type, scores, merges, bos, eos, eot, unk, add_bos, add_eos, add_space, chat;
};

// An array's element type and count; *pos is left at its first element.
Status array_head(const gguf::Reader& r, const gguf::Kv& kv, const char* key, uint32_t want, uint64_t* count,
                  size_t* pos) {
  if (kv.type != gguf::kArray) {
    return Status::error(Code::kInvalidArgument, "%s: %s is a %s, not an array", r.source, key,
                         gguf::type_name(kv.type));
  }
  const uint32_t type = static_cast<uint32_t>(gguf::load_le(r.data + kv.value_pos, 4));
  *count = gguf::load_le(r.data + kv.value_pos + 4, 8);
  *pos = kv.value_pos + 12;
  const bool ok = type == want || (want == gguf::kI32 && type == gguf::kU32);
  if (!ok) {
    return Status::error(Code::kInvalidArgument, "%s: %s is an array of %s, not of %s", r.source, key,
                         gguf::type_name(type), gguf::type_name(want));
  }
  if (*count > gguf::kMaxCount) {
    return Status::error(Code::kDataLoss, "%s: %s has %llu elements", r.source, key,
                         static_cast<unsigned long long>(*count));
  }
  return Status();
}

// The strings of an array (lengths were checked by the walk; checked again against the value).
Status read_strings(const gguf::Reader& r, const gguf::Kv& kv, const char* key, std::vector<std::string>* out) {
  uint64_t count = 0;
  size_t pos = 0;
  HEADWAY_RETURN_IF_ERROR(array_head(r, kv, key, gguf::kString, &count, &pos));
  out->reserve(count);
  for (uint64_t i = 0; i < count; ++i) {
    if (kv.value_end - pos < 8) return Status::error(Code::kDataLoss, "%s: %s is truncated", r.source, key);
    const uint64_t len = gguf::load_le(r.data + pos, 8);
    pos += 8;
    if (len > kv.value_end - pos) return Status::error(Code::kDataLoss, "%s: %s is truncated", r.source, key);
    out->emplace_back(reinterpret_cast<const char*>(r.data + pos), static_cast<size_t>(len));
    pos += static_cast<size_t>(len);
  }
  return Status();
}

// Whether every character of `token` is one of GPT-2's 256 byte characters.
bool byte_spelled(const std::string& token) {
  uint32_t cp = 0;
  for (size_t i = 0; i < token.size();) {
    const size_t n = utf8_next(token, i, &cp);
    const bool byte_char = (cp >= 0x21 && cp <= 0x7E) || (cp >= 0xA1 && cp <= 0xAC) || (cp >= 0xAE && cp <= 0x143);
    if (n == 0 || !byte_char) return false;
    i += n;
  }
  return true;
}

Status read_id(const gguf::Reader& r, const gguf::Kv& kv, const char* key, size_t vocab, int32_t* out) {
  if (!kv.present()) return Status();
  uint32_t v = 0;
  HEADWAY_RETURN_IF_ERROR(gguf::read_count(r, kv, 0, &v));
  if (v >= vocab) {
    // llama.cpp ignores such ids too (a converter's placeholder); an id past the vocabulary would
    // otherwise be emitted by encode.
    return Status::error(Code::kInvalidArgument, "%s: %s %u is outside the vocabulary of %zu tokens", r.source, key, v,
                         vocab);
  }
  *out = static_cast<int32_t>(v);
  return Status();
}

// tokenizer.ggml.scores: one f32 per token.
Status read_scores(const gguf::Reader& r, const gguf::Kv& kv, size_t n, std::vector<float>* scores) {
  if (!kv.present()) return Status::error(Code::kNotFound, "%s: no tokenizer.ggml.scores", r.source);
  uint64_t count = 0;
  size_t pos = 0;
  HEADWAY_RETURN_IF_ERROR(array_head(r, kv, "tokenizer.ggml.scores", gguf::kF32, &count, &pos));
  if (count != n) {
    return Status::error(Code::kInvalidArgument,
                         "%s: tokenizer.ggml.scores has %llu entries, tokenizer.ggml.tokens %zu", r.source,
                         static_cast<unsigned long long>(count), n);
  }
  if (kv.value_end - pos < count * 4) {
    return Status::error(Code::kDataLoss, "%s: tokenizer.ggml.scores is truncated", r.source);
  }
  scores->resize(n);
  for (size_t i = 0; i < n; ++i) {
    const auto bits = static_cast<uint32_t>(gguf::load_le(r.data + pos + 4 * i, 4));
    std::memcpy(&(*scores)[i], &bits, 4);
  }
  return Status();
}

// T5's files call its sentinel tokens [PAD32000]...: transformers names the first 100 of them
// <extra_id_99> down to <extra_id_0>, as T5Tokenizer has them, and so does headway.
void name_t5_sentinels(std::vector<std::string>* tokens, std::vector<uint8_t>* sentinel) {
  size_t named = 0;
  for (size_t i = 0; i < tokens->size() && named < 100; ++i) {
    const std::string& tok = (*tokens)[i];
    if (tok.size() < 6 || tok.compare(0, 4, "[PAD") != 0 || tok.back() != ']') continue;
    bool digits = true;
    for (size_t c = 4; c + 1 < tok.size(); ++c) digits = digits && tok[c] >= '0' && tok[c] <= '9';
    if (!digits) continue;
    (*tokens)[i] = "<extra_id_" + std::to_string(99 - named) + ">";
    (*sentinel)[i] = 1;
    ++named;
  }
}

}  // namespace

Status load_gguf(const char* path, Tokenizer::Impl* t) {
  formats::MappedFile file;
  HEADWAY_RETURN_IF_ERROR(file.open(path));
  gguf::Reader r{file.data(), static_cast<size_t>(file.size()), file.size(), path};
  Keys k;
  HEADWAY_RETURN_IF_ERROR(gguf::for_each_kv(r, [&](const gguf::Kv& kv) {
    struct {
      const char* name;
      gguf::Kv* slot;
    } const slots[] = {
        {"general.architecture", &k.arch},
        {"tokenizer.ggml.model", &k.model},
        {"tokenizer.ggml.scores", &k.scores},
        {"tokenizer.ggml.add_space_prefix", &k.add_space},
        {"tokenizer.ggml.pre", &k.pre},
        {"tokenizer.ggml.tokens", &k.tokens},
        {"tokenizer.ggml.token_type", &k.token_type},
        {"tokenizer.ggml.merges", &k.merges},
        {"tokenizer.ggml.bos_token_id", &k.bos},
        {"tokenizer.ggml.eos_token_id", &k.eos},
        {"tokenizer.ggml.eot_token_id", &k.eot},
        {"tokenizer.ggml.unknown_token_id", &k.unk},
        {"tokenizer.ggml.add_bos_token", &k.add_bos},
        {"tokenizer.ggml.add_eos_token", &k.add_eos},
        {"tokenizer.chat_template", &k.chat},
    };
    for (const auto& s : slots) {
      if (kv.is(s.name)) *s.slot = kv;
    }
    return Status();
  }));
  if (!k.model.present()) {
    return Status::error(Code::kNotFound, "%s: no tokenizer.ggml.model (the file has no tokenizer)", path);
  }
  const uint8_t* text = nullptr;
  uint64_t len = 0;
  HEADWAY_RETURN_IF_ERROR(gguf::read_string(r, k.model, &text, &len));
  const std::string model(reinterpret_cast<const char*>(text), static_cast<size_t>(len));
  std::string arch;
  if (k.arch.present() && k.arch.type == gguf::kString) {
    HEADWAY_RETURN_IF_ERROR(gguf::read_string(r, k.arch, &text, &len));
    arch.assign(reinterpret_cast<const char*>(text), static_cast<size_t>(len));
  }
  if (model == "gpt2") {
    t->model = TokenizerModel::kBpe;
    t->byte_level = true;
  } else if (model == "llama") {
    // Hugging Face's LlamaTokenizer (transformers' reading of such a file); Gemma's and Phi-3's
    // as transformers reads those (below).
    t->model = TokenizerModel::kSentencePiece;
    t->byte_level = false;
  } else if (model == "t5") {
    // transformers' T5Tokenizer from the vocabulary and its scores: a Unigram after WhitespaceSplit
    // and Metaspace, </s> after the text (the file's precompiled_charsmap is not read there either).
    t->model = TokenizerModel::kUnigram;
    t->byte_level = false;
  } else {
    return Status::error(Code::kUnsupported,
                         "%s: tokenizer.ggml.model \"%.40s\" (general.architecture \"%.40s\") is not supported "
                         "(headway reads \"gpt2\", byte-level BPE, \"llama\", SentencePiece BPE, and \"t5\", "
                         "Unigram)",
                         path, model.c_str(), arch.c_str());
  }
  if (!k.tokens.present()) return Status::error(Code::kNotFound, "%s: no tokenizer.ggml.tokens", path);
  HEADWAY_RETURN_IF_ERROR(read_strings(r, k.tokens, "tokenizer.ggml.tokens", &t->tokens));
  const size_t n = t->tokens.size();
  const bool gemma = model == "llama" && (arch == "gemma" || arch == "gemma2" || arch == "gemma3");
  const bool phi3 = model == "llama" && arch == "phi3";
  // Gemma's files spell a token of spaces with real spaces, which GemmaTokenizer looks up as
  // U+2581s: transformers respells every all-whitespace token holding a space as that many U+2581.
  std::vector<uint8_t> respelled(n, 0);
  std::vector<uint8_t> sentinel(n, 0);
  if (model == "t5") name_t5_sentinels(&t->tokens, &sentinel);
  for (size_t i = 0; gemma && i < n; ++i) {
    const std::string& token = t->tokens[i];
    size_t chars = 0;
    bool blank = token.find(' ') != std::string::npos;
    uint32_t cp = 0;
    for (size_t at = 0; blank && at < token.size(); ++chars) {
      const size_t len = utf8_next(token, at, &cp);
      blank = len != 0 && python_is_space(cp);
      at += len == 0 ? 1 : len;
    }
    if (!blank) continue;
    t->tokens[i].clear();
    for (size_t c = 0; c < chars; ++c) t->tokens[i] += "\xE2\x96\x81";
    respelled[i] = 1;
  }
  t->special.assign(n, 0);
  t->vocab.reserve(n);
  // A token written twice takes its last id, as transformers' reading of the file does.
  for (size_t i = 0; i < n; ++i) t->vocab.insert_or_assign(t->tokens[i], static_cast<int32_t>(i));

  if (k.token_type.present()) {
    uint64_t count = 0;
    size_t pos = 0;
    HEADWAY_RETURN_IF_ERROR(array_head(r, k.token_type, "tokenizer.ggml.token_type", gguf::kI32, &count, &pos));
    if (count != n) {
      return Status::error(Code::kInvalidArgument,
                           "%s: tokenizer.ggml.token_type has %llu entries, tokenizer.ggml.tokens %zu", path,
                           static_cast<unsigned long long>(count), n);
    }
    if (k.token_type.value_end - pos < count * 4) {
      return Status::error(Code::kDataLoss, "%s: tokenizer.ggml.token_type is truncated", path);
    }
    for (size_t i = 0; i < n; ++i) {
      const auto type = static_cast<int32_t>(gguf::load_le(r.data + pos + 4 * i, 4));
      // A control token of a byte-level vocabulary spelled outside the byte alphabet is a
      // converter's mislabel that transformers leaves out; so does headway.
      const bool control = type == kTypeControl && (t->model != TokenizerModel::kBpe || byte_spelled(t->tokens[i]));
      const bool special = control || sentinel[i] || (type == kTypeUnknown && t->spm_like());
      // transformers adds a user-defined token only under its own spelling, which a respelled one lost.
      if (special || (type == kTypeUserDefined && !respelled[i])) {
        t->added.push_back({t->tokens[i], static_cast<int32_t>(i), special, false, false});
      }
    }
  }

  std::vector<std::string> merges;
  if (k.merges.present()) HEADWAY_RETURN_IF_ERROR(read_strings(r, k.merges, "tokenizer.ggml.merges", &merges));
  if (t->model == TokenizerModel::kSentencePiece && !k.merges.present()) {
    // No merges in the file: they come from the scores, as transformers derives them.
    if (!k.scores.present()) {
      return Status::error(Code::kNotFound, "%s: neither tokenizer.ggml.merges nor tokenizer.ggml.scores", path);
    }
    std::vector<float> scores;
    HEADWAY_RETURN_IF_ERROR(read_scores(r, k.scores, n, &scores));
    // Gemma's scores do not follow its merge order, its token order does (transformers ranks by it).
    for (size_t i = 0; gemma && i < n; ++i) scores[i] = -static_cast<float>(i);
    merges_from_scores(scores, t);
  } else if (t->model == TokenizerModel::kUnigram) {
    std::vector<float> scores;
    HEADWAY_RETURN_IF_ERROR(read_scores(r, k.scores, n, &scores));
    t->unigram_score.assign(scores.begin(), scores.end());
    t->unigram_min_score = INFINITY;
    for (size_t i = 0; i < n; ++i) {
      t->unigram_min_score = std::min(t->unigram_min_score, t->unigram_score[i]);
      t->unigram_max_token = std::max(t->unigram_max_token, t->tokens[i].size());
    }
  } else {
    HEADWAY_RETURN_IF_ERROR(add_merges(merges, path, "tokenizer.ggml.merges", t));
  }

  HEADWAY_RETURN_IF_ERROR(read_id(r, k.bos, "tokenizer.ggml.bos_token_id", n, &t->bos_id));
  HEADWAY_RETURN_IF_ERROR(read_id(r, k.eos, "tokenizer.ggml.eos_token_id", n, &t->eos_id));
  HEADWAY_RETURN_IF_ERROR(read_id(r, k.eot, "tokenizer.ggml.eot_token_id", n, &t->eot_id));
  HEADWAY_RETURN_IF_ERROR(read_id(r, k.unk, "tokenizer.ggml.unknown_token_id", n, &t->unk_id));
  t->add_bos = t->model == TokenizerModel::kSentencePiece;  // absent: llama.cpp and transformers add BOS
  t->add_eos = t->model == TokenizerModel::kUnigram;        // T5: "$A </s>"
  if (k.add_bos.present()) HEADWAY_RETURN_IF_ERROR(gguf::read_bool(r, k.add_bos, &t->add_bos));
  if (k.add_space.present()) HEADWAY_RETURN_IF_ERROR(gguf::read_bool(r, k.add_space, &t->spm_prepend));
  t->spm_strip = t->spm_prepend;
  if (gemma) {
    // GemmaTokenizer: spaces as U+2581, nothing prepended, the decoder strips nothing.
    t->spm_prepend = false;
    t->spm_strip = false;
  } else if (t->model == TokenizerModel::kUnigram) {
    // WhitespaceSplit, then Metaspace (prepend always): each word with one U+2581 before it.
    t->spm_whitespace_split = true;
    t->spm_prepend = true;
    t->spm_strip = true;
    if (t->unk_id == Tokenizer::kNone) {
      return Status::error(Code::kInvalidArgument, "%s: no tokenizer.ggml.unknown_token_id (a Unigram needs one)",
                           path);
    }
  } else if (phi3) {
    // transformers' Phi-3: the Prepend + Replace normalizers (a U+2581 before every part of the
    // text between special tokens, even one that starts with a space), the decoder's Strip.
    t->spm_prepend = true;
    t->spm_prepend_first_only = false;
    t->spm_prepend_unless_space = false;
    t->spm_strip = true;
  }
  if (k.add_eos.present()) HEADWAY_RETURN_IF_ERROR(gguf::read_bool(r, k.add_eos, &t->add_eos));
  if (t->add_bos && t->bos_id != Tokenizer::kNone) t->prefix_ids.push_back(t->bos_id);
  if (t->add_eos && t->eos_id != Tokenizer::kNone) t->suffix_ids.push_back(t->eos_id);
  if (t->eot_id == Tokenizer::kNone) t->eot_id = guess_eot(*t);
  if (k.chat.present()) {
    HEADWAY_RETURN_IF_ERROR(gguf::read_string(r, k.chat, &text, &len));
    t->chat_template.assign(reinterpret_cast<const char*>(text), static_cast<size_t>(len));
  }

  if (t->spm_like()) return Status();
  std::string pre = "default";
  if (k.pre.present()) {
    HEADWAY_RETURN_IF_ERROR(gguf::read_string(r, k.pre, &text, &len));
    pre.assign(reinterpret_cast<const char*>(text), static_cast<size_t>(len));
  }
  return set_named_pretokenizer(pre, path, t);
}

}  // namespace headway::tok
