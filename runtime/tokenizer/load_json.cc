// Tokenizers from Hugging Face's files: tokenizer.json (BPE or WordPiece, with the normalizer,
// pre-tokenizer, post-processor and decoder it names), and BERT's vocab.txt with its
// tokenizer_config.json. nlohmann::json without exceptions: every value is type-checked first.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>

#include <nlohmann/json.hpp>

#include "runtime/formats/file_bytes.hpp"
#include "runtime/tokenizer/pretokenizers.hpp"
#include "runtime/tokenizer/tokenizer_impl.hpp"

namespace headway::tok {
namespace {

using json = nlohmann::json;

constexpr size_t kMaxJsonBytes = size_t{256} << 20;
constexpr const char* kSpace = "\xE2\x96\x81";  // U+2581, SentencePiece's space

Status parse_file(const char* path, const char* what, json* out) {
  Result<formats::FileBytes> file = formats::read_file(path, kMaxJsonBytes, what);
  if (!file.ok()) return file.status();
  const auto* text = reinterpret_cast<const char*>(file->bytes.data());
  *out = json::parse(text, text + file->bytes.size(), nullptr, /*allow_exceptions=*/false);
  if (out->is_discarded()) return Status::error(Code::kDataLoss, "%s: not valid JSON", path);
  if (!out->is_object()) return Status::error(Code::kInvalidArgument, "%s: the top level is not an object", path);
  return Status();
}

const json* field(const json& obj, const char* key) {
  if (!obj.is_object()) return nullptr;
  auto it = obj.find(key);
  return it == obj.end() || it->is_null() ? nullptr : &*it;
}

std::string str(const json* v) { return v != nullptr && v->is_string() ? v->get<std::string>() : std::string(); }
bool flag(const json& obj, const char* key, bool fallback) {
  const json* v = field(obj, key);
  return v != nullptr && v->is_boolean() ? v->get<bool>() : fallback;
}

Status unsupported(const char* path, const std::string& field_name, const std::string& value) {
  return Status::error(Code::kUnsupported, "%s: %s \"%.60s\" is not supported", path, field_name.c_str(),
                       value.c_str());
}

int32_t id_of(const Tokenizer::Impl& t, const std::string& token) {
  auto it = t.vocab.find(std::string_view(token));
  return it == t.vocab.end() ? Tokenizer::kNone : it->second;
}

// The id of a token named by a config value: "<s>" or {"content": "<s>", ...}.
int32_t config_token(const Tokenizer::Impl& t, const json& config, const char* key) {
  const json* v = field(config, key);
  if (v == nullptr) return Tokenizer::kNone;
  if (v->is_object()) v = field(*v, "content");
  return v != nullptr && v->is_string() ? id_of(t, v->get<std::string>()) : Tokenizer::kNone;
}

void set_token(Tokenizer::Impl* t, int32_t id, const std::string& text) {
  if (id < 0) return;
  if (static_cast<size_t>(id) >= t->tokens.size()) t->tokens.resize(static_cast<size_t>(id) + 1);
  t->tokens[static_cast<size_t>(id)] = text;
  t->vocab.emplace(text, id);
}

// model.vocab of a Unigram: [[piece, score], ...] in id order; model.unk_id its index (required:
// an unknown character has no other token); model.byte_fallback.
Status unigram_vocab(const json& model, const char* path, Tokenizer::Impl* t) {
  const json* vocab = field(model, "vocab");
  if (vocab == nullptr || !vocab->is_array() || vocab->empty()) {
    return Status::error(Code::kInvalidArgument, "%s: model.vocab is not a list of [piece, score]", path);
  }
  t->vocab.reserve(vocab->size());
  t->unigram_score.resize(vocab->size());
  t->unigram_min_score = INFINITY;
  for (size_t i = 0; i < vocab->size(); ++i) {
    const json& e = (*vocab)[i];
    if (!e.is_array() || e.size() != 2 || !e[0].is_string() || !e[1].is_number() ||
        !std::isfinite(e[1].get<double>())) {
      return Status::error(Code::kInvalidArgument, "%s: model.vocab[%zu] is not [piece, score]", path, i);
    }
    const std::string piece = e[0].get<std::string>();
    if (piece.empty()) return Status::error(Code::kInvalidArgument, "%s: model.vocab[%zu] is an empty piece", path, i);
    set_token(t, static_cast<int32_t>(i), piece);
    t->unigram_score[i] = e[1].get<double>();
    t->unigram_min_score = std::min(t->unigram_min_score, t->unigram_score[i]);
    t->unigram_max_token = std::max(t->unigram_max_token, piece.size());
  }
  const json* unk = field(model, "unk_id");
  if (unk == nullptr || !unk->is_number_unsigned() || unk->get<uint64_t>() >= vocab->size()) {
    return Status::error(Code::kInvalidArgument,
                         "%s: model.unk_id is not an index into model.vocab (headway needs "
                         "one)",
                         path);
  }
  t->unk_id = unk->get<int32_t>();
  t->spm_byte_fallback = flag(model, "byte_fallback", false);
  return Status();
}

Status normalizer(const json& n, const char* path, Tokenizer::Impl* t) {
  const std::string type = str(field(n, "type"));
  if (type == "Sequence") {
    const json* list = field(n, "normalizers");
    if (list == nullptr || !list->is_array()) return unsupported(path, "normalizer.normalizers", "(not a list)");
    for (const json& each : *list) HEADWAY_RETURN_IF_ERROR(normalizer(each, path, t));
    return Status();
  }
  if (type == "Prepend") {  // SentencePiece-style: U+2581 before every part, unconditionally
    if (str(field(n, "prepend")) != kSpace)
      return unsupported(path, "normalizer Prepend.prepend", str(field(n, "prepend")));
    t->spm_style = true;
    t->spm_prepend = true;
    t->spm_prepend_first_only = false;
    t->spm_prepend_unless_space = false;
    return Status();
  }
  if (type == "Replace") {  // only " " → U+2581 (the SentencePiece-style files' one)
    const json* pattern = field(n, "pattern");
    if (pattern == nullptr || str(field(*pattern, "String")) != " " || str(field(n, "content")) != kSpace) {
      return unsupported(path, "normalizer Replace", "(other than \" \" to U+2581)");
    }
    t->spm_style = true;
    return Status();
  }
  const std::pair<const char*, UnicodeForm> forms[] = {{"NFC", UnicodeForm::kNfc},
                                                       {"NFD", UnicodeForm::kNfd},
                                                       {"NFKC", UnicodeForm::kNfkc},
                                                       {"NFKD", UnicodeForm::kNfkd}};
  for (const auto& [name, form] : forms) {
    if (type != name) continue;
    // Encoding applies the form before the SentencePiece-style steps; a form after them would
    // see their U+2581 and could make new spaces they never replace.
    if (t->spm_style) return unsupported(path, "normalizer.type", type + " after Prepend/Replace");
    t->unicode_form = form;
    return Status();
  }
  if (type == "BertNormalizer") {
    t->bert.enabled = true;
    t->bert.clean_text = flag(n, "clean_text", true);
    t->bert.chinese_chars = flag(n, "handle_chinese_chars", true);
    t->bert.lowercase = flag(n, "lowercase", true);
    t->bert.strip_accents = flag(n, "strip_accents", t->bert.lowercase);  // null: as lowercase
    return Status();
  }
  return unsupported(path, "normalizer.type", type);
}

Status pre_tokenizer(const json& p, const char* path, bool first, Tokenizer::Impl* t) {
  const std::string type = str(field(p, "type"));
  char where[300];
  std::snprintf(where, sizeof(where), "%s: pre_tokenizer %s", path, type.c_str());
  if (type == "Sequence") {
    const json* list = field(p, "pretokenizers");
    if (list == nullptr || !list->is_array()) return unsupported(path, "pre_tokenizer.pretokenizers", "(not a list)");
    bool at_first = first;
    for (const json& each : *list) {
      HEADWAY_RETURN_IF_ERROR(pre_tokenizer(each, path, at_first, t));
      at_first = false;
    }
    return Status();
  }
  if (type == "ByteLevel") {
    t->byte_level = true;
    if (flag(p, "add_prefix_space", false)) {
      if (!first) return unsupported(path, "pre_tokenizer ByteLevel.add_prefix_space after another step", "true");
      t->add_prefix_space = true;
    }
    if (flag(p, "use_regex", true)) return add_split(kGpt2Regex, false, where, t);
    return Status();
  }
  if (type == "Split") {
    const json* pattern = field(p, "pattern");
    std::string regex;
    if (pattern != nullptr && field(*pattern, "Regex") != nullptr) {
      regex = str(field(*pattern, "Regex"));
    } else if (pattern != nullptr && field(*pattern, "String") != nullptr) {
      regex = "\\Q" + str(field(*pattern, "String")) + "\\E";
    } else {
      return unsupported(path, "pre_tokenizer Split.pattern", "(neither Regex nor String)");
    }
    const std::string behavior = str(field(p, "behavior"));
    if (flag(p, "invert", false)) return unsupported(path, "pre_tokenizer Split.invert", "true");
    if (behavior != "Isolated" && behavior != "Removed")
      return unsupported(path, "pre_tokenizer Split.behavior", behavior);
    return add_split(regex, behavior == "Removed", where, t);
  }
  if (type == "Metaspace") {
    if (str(field(p, "replacement")) != kSpace) {
      return unsupported(path, "pre_tokenizer Metaspace.replacement", str(field(p, "replacement")));
    }
    std::string scheme = str(field(p, "prepend_scheme"));
    if (scheme.empty()) scheme = flag(p, "add_prefix_space", true) ? "always" : "never";
    if (scheme != "always" && scheme != "first" && scheme != "never") {
      return unsupported(path, "pre_tokenizer Metaspace.prepend_scheme", scheme);
    }
    t->spm_style = true;
    t->spm_prepend = scheme != "never";
    t->spm_prepend_first_only = scheme == "first";
    t->spm_prepend_unless_space = true;
    t->spm_split = flag(p, "split", true);
    return Status();
  }
  if (type == "Digits") {
    return add_split(flag(p, "individual_digits", false) ? "\\p{N}" : "\\p{N}+", false, where, t);
  }
  if (type == "BertPreTokenizer" && t->model == TokenizerModel::kWordPiece) return Status();
  return unsupported(path, "pre_tokenizer.type", type);
}

// The ids of a post-processor's special token name ("[CLS]") in TemplateProcessing.
Status template_ids(const json& special_tokens, const std::string& name, const char* path, std::vector<int32_t>* out) {
  const json* entry = field(special_tokens, name.c_str());
  const json* ids = entry != nullptr ? field(*entry, "ids") : nullptr;
  if (ids == nullptr || !ids->is_array()) {
    return Status::error(Code::kInvalidArgument, "%s: post_processor.special_tokens has no ids for \"%.40s\"", path,
                         name.c_str());
  }
  for (const json& id : *ids) {
    if (!id.is_number_integer()) return unsupported(path, "post_processor.special_tokens ids", name);
    out->push_back(id.get<int32_t>());
  }
  return Status();
}

Status post_processor(const json& p, const char* path, Tokenizer::Impl* t) {
  const std::string type = str(field(p, "type"));
  if (type == "Sequence") {
    const json* list = field(p, "processors");
    if (list == nullptr || !list->is_array()) return unsupported(path, "post_processor.processors", "(not a list)");
    for (const json& each : *list) HEADWAY_RETURN_IF_ERROR(post_processor(each, path, t));
    return Status();
  }
  if (type == "ByteLevel") return Status();  // offsets only
  if (type == "TemplateProcessing") {
    const json* single = field(p, "single");
    const json* special = field(p, "special_tokens");
    if (single == nullptr || !single->is_array()) return unsupported(path, "post_processor.single", "(not a list)");
    bool after = false;
    for (const json& piece : *single) {
      if (const json* seq = field(piece, "Sequence")) {
        (void)seq;
        after = true;
      } else if (const json* sp = field(piece, "SpecialToken")) {
        HEADWAY_RETURN_IF_ERROR(template_ids(special != nullptr ? *special : json::object(), str(field(*sp, "id")),
                                             path, after ? &t->suffix_ids : &t->prefix_ids));
      }
    }
    return Status();
  }
  if (type == "BertProcessing" || type == "RobertaProcessing") {
    const json* cls = field(p, "cls");
    const json* sep = field(p, "sep");
    if (cls == nullptr || sep == nullptr || !cls->is_array() || cls->size() != 2 || !sep->is_array() ||
        sep->size() != 2 || !(*cls)[1].is_number_integer() || !(*sep)[1].is_number_integer()) {
      return unsupported(path, "post_processor cls/sep", type);
    }
    t->prefix_ids.push_back((*cls)[1].get<int32_t>());
    t->suffix_ids.push_back((*sep)[1].get<int32_t>());
    return Status();
  }
  return unsupported(path, "post_processor.type", type);
}

// tokenizer_config.json's chat_template: a string, or a list of {"name", "template"} of which
// transformers applies the one named "default".
std::string config_chat_template(const json& config) {
  const json* v = field(config, "chat_template");
  if (v == nullptr) return "";
  if (v->is_string()) return v->get<std::string>();
  if (!v->is_array()) return "";
  for (const json& entry : *v) {
    if (entry.is_object() && str(field(entry, "name")) == "default") return str(field(entry, "template"));
  }
  return "";
}

void from_tokenizer_config(const char* path, Tokenizer::Impl* t) {
  json c;
  if (!parse_file(path, "a tokenizer_config.json", &c).ok()) return;
  t->bos_id = config_token(*t, c, "bos_token");
  t->eos_id = config_token(*t, c, "eos_token");
  t->chat_template = config_chat_template(c);
}

}  // namespace

Status load_tokenizer_json(const char* path, Tokenizer::Impl* t) {
  json top;
  HEADWAY_RETURN_IF_ERROR(parse_file(path, "a tokenizer.json", &top));
  const json* model = field(top, "model");
  if (model == nullptr || !model->is_object()) return Status::error(Code::kInvalidArgument, "%s: no model", path);
  const std::string type = str(field(*model, "type"));
  if (type == "BPE") {
    t->model = TokenizerModel::kBpe;
    t->byte_level = false;
  } else if (type == "WordPiece") {
    t->model = TokenizerModel::kWordPiece;
  } else if (type == "Unigram") {
    t->model = TokenizerModel::kUnigram;
    t->byte_level = false;
  } else {
    return Status::error(Code::kUnsupported,
                         "%s: model.type \"%.40s\" is not supported (headway reads BPE, WordPiece and Unigram)", path,
                         type.c_str());
  }
  if (t->model == TokenizerModel::kUnigram) {
    HEADWAY_RETURN_IF_ERROR(unigram_vocab(*model, path, t));
  } else {
    const json* vocab = field(*model, "vocab");
    if (vocab == nullptr || !vocab->is_object()) {
      return Status::error(Code::kInvalidArgument, "%s: model.vocab is not an object", path);
    }
    t->vocab.reserve(vocab->size());
    for (auto it = vocab->begin(); it != vocab->end(); ++it) {
      if (!it.value().is_number_integer() || it.value().get<int64_t>() < 0 ||
          it.value().get<int64_t>() >= int64_t{INT32_MAX}) {
        return Status::error(Code::kInvalidArgument, "%s: model.vocab[\"%.40s\"] is not an id", path, it.key().c_str());
      }
      set_token(t, it.value().get<int32_t>(), it.key());
    }
  }
  if (const json* added = field(top, "added_tokens"); added != nullptr && added->is_array()) {
    for (const json& a : *added) {
      const json* id = field(a, "id");
      const json* content = field(a, "content");
      if (id == nullptr || !id->is_number_integer() || id->get<int64_t>() < 0 || content == nullptr ||
          !content->is_string()) {
        return Status::error(Code::kInvalidArgument, "%s: added_tokens has an entry without an id and a content", path);
      }
      AddedToken tok{content->get<std::string>(), id->get<int32_t>(), flag(a, "special", false),
                     flag(a, "lstrip", false), flag(a, "rstrip", false)};
      set_token(t, tok.id, tok.content);
      t->added.push_back(std::move(tok));
    }
  }
  t->special.assign(t->tokens.size(), 0);
  if (t->model != TokenizerModel::kUnigram) t->unk_id = id_of(*t, str(field(*model, "unk_token")));

  if (t->model == TokenizerModel::kBpe) {
    if (!str(field(*model, "continuing_subword_prefix")).empty() || !str(field(*model, "end_of_word_suffix")).empty()) {
      return unsupported(path, "model.continuing_subword_prefix / end_of_word_suffix", "set");
    }
    t->ignore_merges = flag(*model, "ignore_merges", false);
    t->spm_byte_fallback = flag(*model, "byte_fallback", false);
    t->spm_fuse_unk = flag(*model, "fuse_unk", false);
    const json* merges = field(*model, "merges");
    if (merges == nullptr || !merges->is_array()) {
      return Status::error(Code::kInvalidArgument, "%s: model.merges is not a list", path);
    }
    t->merges.reserve(merges->size());
    std::vector<std::string> pairs;
    for (size_t i = 0; i < merges->size(); ++i) {
      const json& m = (*merges)[i];
      if (m.is_string()) {
        pairs.push_back(m.get<std::string>());
      } else if (m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string()) {
        HEADWAY_RETURN_IF_ERROR(
            add_merge(m[0].get<std::string>(), m[1].get<std::string>(), i, path, "model.merges", t));
      } else {
        return Status::error(Code::kInvalidArgument, "%s: model.merges[%zu] is not a pair", path, i);
      }
    }
    if (!pairs.empty()) HEADWAY_RETURN_IF_ERROR(add_merges(pairs, path, "model.merges", t));
  } else if (t->model == TokenizerModel::kWordPiece) {
    const std::string prefix = str(field(*model, "continuing_subword_prefix"));
    t->continuing_prefix = prefix.empty() ? "##" : prefix;
    if (const json* m = field(*model, "max_input_chars_per_word"); m != nullptr && m->is_number_unsigned()) {
      t->max_input_chars_per_word = m->get<uint32_t>();
    }
    if (t->unk_id == Tokenizer::kNone) {
      return Status::error(Code::kInvalidArgument, "%s: model.unk_token \"%.40s\" is not in the vocabulary", path,
                           str(field(*model, "unk_token")).c_str());
    }
  }
  if (const json* n = field(top, "normalizer")) HEADWAY_RETURN_IF_ERROR(normalizer(*n, path, t));
  if (t->bert.enabled && t->model != TokenizerModel::kWordPiece)
    return unsupported(path, "normalizer.type", "BertNormalizer");
  if (t->unicode_form != UnicodeForm::kNone && t->model == TokenizerModel::kWordPiece) {
    return unsupported(path, "normalizer.type", "NFC/NFD/NFKC/NFKD with WordPiece");
  }
  if (const json* p = field(top, "pre_tokenizer")) HEADWAY_RETURN_IF_ERROR(pre_tokenizer(*p, path, true, t));
  if (const json* d = field(top, "decoder")) {
    const std::string dtype = str(field(*d, "type"));
    if (dtype == "ByteLevel") t->byte_level = true;
    // SentencePiece-style decoders: Sequence[Replace, ByteFallback, Fuse, Strip] or Metaspace.
    t->spm_strip = false;
    const json* list = dtype == "Sequence" ? field(*d, "decoders") : nullptr;
    auto strips = [](const json& each) {
      const std::string type = str(field(each, "type"));
      if (type == "Strip") {
        const json* start = field(each, "start");
        return str(field(each, "content")) == " " && start != nullptr && start->is_number_integer() &&
               start->get<int64_t>() >= 1;
      }
      return type == "Metaspace" && str(field(each, "prepend_scheme")) != "never" &&
             flag(each, "add_prefix_space", true);
    };
    if (list != nullptr && list->is_array()) {
      for (const json& each : *list) t->spm_strip = t->spm_strip || strips(each);
    } else {
      t->spm_strip = strips(*d);
    }
    if (dtype == "WordPiece") {
      t->decoder_cleanup = flag(*d, "cleanup", true);
      const std::string prefix = str(field(*d, "prefix"));
      if (!prefix.empty()) t->continuing_prefix = prefix;
    }
  }
  if (t->model == TokenizerModel::kUnigram && (!t->spm_style || !t->steps.empty())) {
    return unsupported(path,
                       "a Unigram model without a Metaspace pre-tokenizer (or Prepend + Replace), or with "
                       "Split/Digits",
                       "Unigram");
  }
  if (t->model == TokenizerModel::kBpe && !t->byte_level) {
    if (!t->spm_style && !t->spm_byte_fallback) {
      return unsupported(path, "model.type BPE without a ByteLevel or Metaspace pre-tokenizer", "BPE");
    }
    if (!t->steps.empty()) {
      return unsupported(path, "a SentencePiece-style BPE with a Split/Digits pre-tokenizer", "BPE");
    }
    t->model = TokenizerModel::kSentencePiece;
    if (!t->spm_style) t->spm_prepend = false;  // byte fallback alone: the text as it is
  }
  if (const json* p = field(top, "post_processor")) HEADWAY_RETURN_IF_ERROR(post_processor(*p, path, t));
  for (int32_t id : t->prefix_ids) {
    if (id < 0 || static_cast<size_t>(id) >= t->tokens.size()) {
      return Status::error(Code::kInvalidArgument, "%s: post_processor id %d is outside the vocabulary of %zu tokens",
                           path, id, t->tokens.size());
    }
  }
  for (int32_t id : t->suffix_ids) {
    if (id < 0 || static_cast<size_t>(id) >= t->tokens.size()) {
      return Status::error(Code::kInvalidArgument, "%s: post_processor id %d is outside the vocabulary of %zu tokens",
                           path, id, t->tokens.size());
    }
  }
  // bos/eos and the chat template: tokenizer_config.json beside the file; bos/eos else the post-processor's first/last
  // token.
  std::string config = path;
  const size_t slash = config.find_last_of('/');
  config = (slash == std::string::npos ? std::string() : config.substr(0, slash + 1)) + "tokenizer_config.json";
  from_tokenizer_config(config.c_str(), t);
  if (t->bos_id == Tokenizer::kNone && !t->prefix_ids.empty()) t->bos_id = t->prefix_ids.front();
  if (t->eos_id == Tokenizer::kNone && !t->suffix_ids.empty()) t->eos_id = t->suffix_ids.back();
  t->add_bos = !t->prefix_ids.empty() && t->prefix_ids.front() == t->bos_id;
  t->eot_id = guess_eot(*t);
  return Status();
}

Status load_vocab_txt(const char* dir, Tokenizer::Impl* t) {
  const std::string vocab_path = std::string(dir) + "/vocab.txt";
  Result<formats::FileBytes> file = formats::read_file(vocab_path.c_str(), kMaxJsonBytes, "a vocab.txt");
  if (!file.ok()) return file.status();
  t->model = TokenizerModel::kWordPiece;
  const auto* p = reinterpret_cast<const char*>(file->bytes.data());
  const size_t n = file->bytes.size();
  for (size_t i = 0; i < n;) {
    size_t e = i;
    while (e < n && p[e] != '\n') ++e;
    size_t end = e;
    if (end > i && p[end - 1] == '\r') --end;
    const auto id = static_cast<int32_t>(t->tokens.size());
    t->tokens.emplace_back(p + i, end - i);
    t->vocab.emplace(t->tokens.back(), id);
    i = e + 1;
  }
  t->special.assign(t->tokens.size(), 0);
  // BertTokenizer's defaults, overridden by tokenizer_config.json where it has them.
  json c = json::object();
  const std::string config_path = std::string(dir) + "/tokenizer_config.json";
  if (FILE* f = std::fopen(config_path.c_str(), "rb")) {
    std::fclose(f);
    HEADWAY_RETURN_IF_ERROR(parse_file(config_path.c_str(), "a tokenizer_config.json", &c));
  }
  t->chat_template = config_chat_template(c);
  t->bert.enabled = true;
  t->bert.lowercase = flag(c, "do_lower_case", true);
  t->bert.strip_accents = flag(c, "strip_accents", t->bert.lowercase);
  t->bert.chinese_chars = flag(c, "tokenize_chinese_chars", true);
  auto token = [&](const char* key, const char* fallback) {
    const int32_t id = config_token(*t, c, key);
    return id != Tokenizer::kNone ? id : id_of(*t, fallback);
  };
  t->unk_id = token("unk_token", "[UNK]");
  if (t->unk_id == Tokenizer::kNone) {
    return Status::error(Code::kInvalidArgument, "%s: no unk_token ([UNK]) in the vocabulary", vocab_path.c_str());
  }
  const int32_t cls = token("cls_token", "[CLS]");
  const int32_t sep = token("sep_token", "[SEP]");
  if (cls != Tokenizer::kNone) t->prefix_ids.push_back(cls);
  if (sep != Tokenizer::kNone) t->suffix_ids.push_back(sep);
  for (const int32_t id : {token("pad_token", "[PAD]"), t->unk_id, cls, sep, token("mask_token", "[MASK]")}) {
    if (id != Tokenizer::kNone) t->added.push_back({t->tokens[static_cast<size_t>(id)], id, true, false, false});
  }
  return Status();
}

}  // namespace headway::tok
