#include "runtime/tokenizer/pretokenizers.hpp"

#include <algorithm>
#include <cstdio>

namespace headway::tok {

Status add_split(std::string_view pattern, bool remove_matches, const char* where, Tokenizer::Impl* t) {
  SplitStep step;
  HEADWAY_RETURN_IF_ERROR(step.regex.compile(pattern, where));
  step.remove_matches = remove_matches;
  t->steps.push_back(std::move(step));
  return Status();
}

Status set_named_pretokenizer(const std::string& pre, const char* path, Tokenizer::Impl* t) {
  char where[256];
  std::snprintf(where, sizeof(where), "%s: tokenizer.ggml.pre \"%.40s\"", path, pre.c_str());
  auto is = [&](std::initializer_list<const char*> names) {
    for (const char* n : names) {
      if (pre == n) return true;
    }
    return false;
  };
  if (is({"default", "gpt2", "olmo", "mpt", "jais", "gpt-2"})) return add_split(kGpt2Regex, false, where, t);
  if (is({"llama-bpe", "llama3", "dbrx", "smaug-bpe"})) {
    t->ignore_merges = pre == "llama-bpe" || pre == "llama3";
    return add_split(kLlama3Regex, false, where, t);
  }
  if (is({"qwen2", "stablelm2", "hunyuan"})) return add_split(kQwen2Regex, false, where, t);
  if (is({"smollm", "starcoder", "refact", "command-r", "codeshell", "exaone"})) {
    HEADWAY_RETURN_IF_ERROR(add_split("\\p{N}", false, where, t));
    return add_split(kGpt2Regex, false, where, t);
  }
  return Status::error(Code::kUnsupported,
                       "%s: tokenizer.ggml.pre \"%.40s\" is not supported (headway knows gpt2, olmo, mpt, jais, "
                       "llama-bpe, dbrx, qwen2, stablelm2, smollm, starcoder, refact, command-r, codeshell, exaone)",
                       path, pre.c_str());
}

Status add_merge(std::string_view left, std::string_view right, size_t rank, const char* path, const char* field,
                 Tokenizer::Impl* t) {
  auto l = t->vocab.find(left);
  auto r = t->vocab.find(right);
  std::string both(left);
  both.append(right);
  auto m = t->vocab.find(std::string_view(both));
  if (l == t->vocab.end() || r == t->vocab.end() || m == t->vocab.end()) {
    const std::string shown = std::string(left) + " " + std::string(right);
    return Status::error(Code::kInvalidArgument, "%s: %s[%zu] \"%.60s\" names a token not in the vocabulary", path,
                         field, rank, shown.c_str());
  }
  const uint64_t key =
      (static_cast<uint64_t>(static_cast<uint32_t>(l->second)) << 32) | static_cast<uint32_t>(r->second);
  t->merges.emplace(key, Merge{static_cast<int32_t>(rank), m->second});  // the first rank of a pair wins
  return Status();
}

Status add_merges(const std::vector<std::string>& merges, const char* path, const char* field, Tokenizer::Impl* t) {
  t->merges.reserve(merges.size());
  for (size_t i = 0; i < merges.size(); ++i) {
    const std::string& m = merges[i];
    const size_t space = m.find(' ', 1);
    if (space == std::string::npos) {
      return Status::error(Code::kInvalidArgument, "%s: %s[%zu] \"%.60s\" is not two tokens and a space", path, field,
                           i, m.c_str());
    }
    HEADWAY_RETURN_IF_ERROR(
        add_merge(std::string_view(m).substr(0, space), std::string_view(m).substr(space + 1), i, path, field, t));
  }
  return Status();
}

void merges_from_scores(const std::vector<float>& scores, Tokenizer::Impl* t) {
  struct Candidate {
    float score;
    uint32_t left_chars, right_chars;
    int32_t left, right, merged;
  };
  std::vector<Candidate> all;
  std::vector<Candidate> local;
  auto chars = [](std::string_view s) {
    uint32_t n = 0;
    for (char c : s) n += (static_cast<uint8_t>(c) & 0xC0) != 0x80;
    return n;
  };
  for (size_t id = 0; id < t->tokens.size(); ++id) {
    const std::string_view token = t->tokens[id];
    // A token written twice counts once, at its last id.
    auto self = t->vocab.find(token);
    if (self == t->vocab.end() || static_cast<size_t>(self->second) != id) continue;
    local.clear();
    for (size_t cut = 1; cut < token.size(); ++cut) {
      if ((static_cast<uint8_t>(token[cut]) & 0xC0) == 0x80) continue;  // inside a character
      auto l = t->vocab.find(token.substr(0, cut));
      auto r = t->vocab.find(token.substr(cut));
      if (l == t->vocab.end() || r == t->vocab.end()) continue;
      local.push_back({scores[id], chars(token.substr(0, cut)), chars(token.substr(cut)), l->second, r->second,
                       static_cast<int32_t>(id)});
    }
    std::sort(local.begin(), local.end(), [](const Candidate& a, const Candidate& b) {
      return a.left != b.left ? a.left < b.left : a.right < b.right;
    });
    all.insert(all.end(), local.begin(), local.end());
  }
  std::stable_sort(all.begin(), all.end(), [](const Candidate& a, const Candidate& b) {
    if (a.score != b.score) return a.score > b.score;
    if (a.left_chars != b.left_chars) return a.left_chars > b.left_chars;
    return a.right_chars > b.right_chars;
  });
  t->merges.reserve(all.size());
  for (size_t rank = 0; rank < all.size(); ++rank) {
    const Candidate& c = all[rank];
    const uint64_t key = (static_cast<uint64_t>(static_cast<uint32_t>(c.left)) << 32) | static_cast<uint32_t>(c.right);
    t->merges.emplace(key, Merge{static_cast<int32_t>(rank), c.merged});
  }
}

int32_t guess_eot(const Tokenizer::Impl& t) {
  for (const char* name : {"<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>", "<|endoftext|>"}) {
    auto it = t.vocab.find(std::string_view(name));
    if (it != t.vocab.end()) return it->second;
  }
  return Tokenizer::kNone;
}

}  // namespace headway::tok
