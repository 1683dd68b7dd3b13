// headway embed: sentence embeddings from a whole encoder, as sentence-transformers makes them.
//
//   headway embed (--model-dir DIR | --config C --weights W) --text T [--text T2 ...] [--threads N]
//                 [--json]
//
// DIR: a sentence-transformers (or plain Hugging Face) directory: config.json, model.safetensors,
// tokenizer.json (or vocab.txt), and where present 1_Pooling/config.json, modules.json and
// sentence_bert_config.json. Each text is tokenized ([CLS] ... [SEP], cut to max_seq_length as
// sentence-transformers cuts it), the texts run as one packed batch, and each sequence's hidden
// states are pooled (mean or CLS) and normalized as the directory says. --json prints
// {"embeddings": [[...], ...]}, one row per --text in order; otherwise each text's first values
// and, with two texts or more, how similar each is to the first (cosine), most similar first.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "examples/cli/cli_common.hpp"
#include "examples/cli/commands.hpp"
#include "headway/arena.hpp"
#include "headway/encoder.hpp"
#include "headway/tools/model_file.hpp"
#include "headway/thread_pool.hpp"
#include "headway/tools/tokenizer.hpp"

namespace headway::cli {
namespace {

constexpr const char* kCmd = "embed";

struct EmbedFlags {
  ModelSource model;
  std::vector<const char*> texts;
  uint32_t threads = 1;
  bool json = false;
};

Status parse(int argc, char** argv, EmbedFlags* e) {
  Flags f(kCmd, argc, argv);
  while (f.next()) {
    const std::string& n = f.name();
    Status took;
    if (e->model.take(&f, &took)) HEADWAY_RETURN_IF_ERROR(took);
    else if (n == "--text") {
      const char* t = nullptr;
      HEADWAY_RETURN_IF_ERROR(f.value(&t));
      e->texts.push_back(t);
    } else if (n == "--threads") HEADWAY_RETURN_IF_ERROR(f.value_u32(&e->threads, 1, ThreadPool::kMaxThreads));
    else if (n == "--json" && !f.has_inline_value()) e->json = true;
    else return f.unknown();
  }
  HEADWAY_RETURN_IF_ERROR(e->model.check(false, true));
  if (e->texts.empty()) return Status::error(Code::kInvalidArgument, "give at least one --text");
  return Status();
}

}  // namespace

int cmd_embed(int argc, char** argv) {
  EmbedFlags e;
  Status s = parse(argc, argv, &e);
  if (!s.ok()) return report(kCmd, s);
  ModelFile file;
  s = e.model.open(&file);
  if (!s.ok()) return report(kCmd, s);
  Result<Config> config = file.config();
  if (!config.ok()) return report(kCmd, config.status());
  const Result<ModelFile::SentencePooling> pooling = file.sentence_pooling();
  if (!pooling.ok()) return report(kCmd, pooling.status());
  Result<Tokenizer> tokenizer = e.model.tokenizer();
  if (!tokenizer.ok()) return report(kCmd, tokenizer.status());
  Config c = config.value();
  if (c.causal) {
    return report(kCmd, Status::error(Code::kInvalidArgument,
                                      "%s is a decoder: embed runs encoders (BERT, MiniLM); generate runs decoders",
                                      e.model.name()));
  }
  // Each text's ids, cut as sentence-transformers cuts them: the first max - 1, then the last ([SEP]).
  uint32_t max_len = c.model.max_positions;
  if (pooling.value().max_seq_length && pooling.value().max_seq_length < max_len) {
    max_len = pooling.value().max_seq_length;
  }
  std::vector<int32_t> ids;
  std::vector<uint32_t> cu = {0};
  uint32_t longest = 0;
  for (const char* text : e.texts) {
    std::vector<int32_t> one;
    s = tokenizer.value().encode(text, &one);
    if (!s.ok()) return report(kCmd, s);
    if (one.size() > max_len) {
      one[max_len - 1] = one.back();
      one.resize(max_len);
    }
    ids.insert(ids.end(), one.begin(), one.end());
    cu.push_back(static_cast<uint32_t>(ids.size()));
    longest = std::max<uint32_t>(longest, static_cast<uint32_t>(one.size()));
  }
  c.max_seq = longest;
  c.kv_dtype = DType::kF32;  // the batch's K and V live only for this call: keep them exact
  PlanOptions options;
  options.threads = e.threads;
  options.max_tokens = cu.back();
  const Result<Plan> plan = make_plan(c, options);
  if (!plan.ok()) return report(kCmd, plan.status());
  PlannedArena planned;
  s = planned.create(plan.value(), e.threads);
  std::unique_ptr<Encoder> encoder(new Encoder);
  if (s.ok()) s = encoder->init(planned.arena, file.source(), planned.options());
  const uint32_t d = c.d_model;
  const uint32_t n = static_cast<uint32_t>(e.texts.size());
  std::vector<float> hidden(size_t{cu.back()} * d), embeddings(size_t{n} * d);
  if (s.ok()) s = encoder->encode(ids.data(), cu.data(), n, hidden.data());
  if (!s.ok()) return report(kCmd, s);
  pool_embeddings(hidden.data(), cu.data(), n, d, pooling.value().pooling, pooling.value().normalize,
                  embeddings.data());

  if (e.json) {
    nlohmann::json rows = nlohmann::json::array();
    for (uint32_t i = 0; i < n; ++i) {
      rows.push_back(std::vector<float>(embeddings.begin() + size_t{i} * d, embeddings.begin() + size_t{i + 1} * d));
    }
    std::printf("%s\n", nlohmann::json{{"embeddings", rows}}.dump().c_str());
    return kExitOk;
  }
  auto row = [&](uint32_t i) { return embeddings.data() + size_t{i} * d; };
  for (uint32_t i = 0; i < n; ++i) {
    std::printf("%u: [%.4f, %.4f, %.4f, ...] (%u values)  %s\n", i + 1, static_cast<double>(row(i)[0]),
                static_cast<double>(row(i)[1]), static_cast<double>(row(i)[2]), d, e.texts[i]);
  }
  if (n < 2) return kExitOk;
  std::vector<std::pair<double, uint32_t>> similar;
  for (uint32_t i = 1; i < n; ++i) {
    double dot = 0, a = 0, b = 0;
    for (uint32_t j = 0; j < d; ++j) {
      dot += double{row(0)[j]} * row(i)[j];
      a += double{row(0)[j]} * row(0)[j];
      b += double{row(i)[j]} * row(i)[j];
    }
    similar.push_back({dot / std::sqrt(a * b), i});
  }
  std::sort(similar.begin(), similar.end(), [](const auto& x, const auto& y) { return x.first > y.first; });
  std::printf("\nmost like \"%s\":\n", e.texts[0]);
  for (const auto& [cosine, i] : similar) std::printf("  %.4f  %s\n", cosine, e.texts[i]);
  return kExitOk;
}

}  // namespace headway::cli
