// headway generate: text from a whole model, printed as it is made.
//
//   headway generate (--gguf FILE | --model-dir DIR | --config C --weights W) (--prompt TEXT |
//                    --prompt-ids IDS | --messages FILE) [--chat [--system S]] [--chat-template FILE]
//                    [--tokens N]
//                    [--temp T] [--top-k K] [--top-p P] [--min-p P] [--repeat-penalty R] [--seed S]
//                    [--kv-dtype D] [--kv-rotate] [--weight-dtype D] [--threads N] [--ctx N] [--prompt-cache FILE]
//                    [--json]
//
// The prompt is tokenized with the file's own tokenizer (--chat: wrapped in its chat template
// first, as one user message after --system's; --messages: a whole conversation; chat_prompt.hpp),
// run through the model, and up to N tokens are sampled after it (stopping at the end-of-turn or
// end-of-text token, or config.json's eos_token_id). --prompt-ids runs without a tokenizer where
// the model has none: the ids go to stdout instead of text. The text goes to stdout as it comes (a
// piece that ends inside a UTF-8 sequence waits for the rest); then the speed, the arena and the
// heap calls made while generating go to stderr. --json prints one object at the end instead.
// Sampling defaults are llama.cpp's (temperature 0.8, top-k 40, top-p 0.95, min-p 0.05); --temp 0
// is greedy. The context is the prompt and the tokens asked for (at most the model's). The weights
// stay in the file in its own types (a GGUF's blocks), or --weight-dtype converts them into the arena.
// --prompt-cache FILE: when FILE holds a state whose tokens begin this prompt (the same model and
// plan), it is restored and only the rest of the prompt runs; the state after the prompt is then
// saved to FILE for next time (headway/tools/state_file.hpp). stderr says how many tokens came from it.
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "examples/cli/chat_prompt.hpp"
#include "examples/cli/cli_common.hpp"
#include "examples/cli/commands.hpp"
#include "headway/arena.hpp"
#include "headway/tools/generator.hpp"
#include "headway/tools/heap_count.hpp"
#include "headway/model.hpp"
#include "headway/tools/model_file.hpp"
#include "headway/sampler.hpp"
#include "headway/tools/state_file.hpp"
#include "headway/thread_pool.hpp"
#include "headway/tools/tokenizer.hpp"

namespace headway::cli {
namespace {

constexpr const char* kCmd = "generate";

struct GenerateFlags {
  ModelSource model;
  const char* prompt = nullptr;
  const char* prompt_ids = nullptr;
  const char* prompt_cache = nullptr;
  ChatFlags chat;
  bool json = false;
  uint32_t tokens = 128;
  uint32_t threads = 1;
  uint32_t ctx = 0;
  DType kv_dtype = DType::kF16;
  KvRotation kv_rotation = KvRotation::kNone;
  WeightStorage weights;
  SamplerParams sampling{0.8f, 40, 0.95f, 0.05f, 1.0f, 0.0f, 64, 0};
};

Status parse(int argc, char** argv, GenerateFlags* g) {
  Flags f(kCmd, argc, argv);
  while (f.next()) {
    const std::string& n = f.name();
    SamplerParams& s = g->sampling;
    Status took;
    if (g->model.take(&f, &took)) HEADWAY_RETURN_IF_ERROR(took);
    else if (n == "--prompt") HEADWAY_RETURN_IF_ERROR(f.value(&g->prompt));
    else if (n == "--prompt-ids") HEADWAY_RETURN_IF_ERROR(f.value(&g->prompt_ids));
    else if (n == "--prompt-cache") HEADWAY_RETURN_IF_ERROR(f.value(&g->prompt_cache));
    else if (g->chat.take(&f, &took)) HEADWAY_RETURN_IF_ERROR(took);
    else if (n == "--json" && !f.has_inline_value()) g->json = true;
    else if (n == "--tokens") HEADWAY_RETURN_IF_ERROR(f.value_u32(&g->tokens, 0, 1u << 20));
    else if (n == "--threads") HEADWAY_RETURN_IF_ERROR(f.value_u32(&g->threads, 1, ThreadPool::kMaxThreads));
    else if (n == "--ctx") HEADWAY_RETURN_IF_ERROR(f.value_u32(&g->ctx, 1, 1u << 24));
    else if (n == "--kv-dtype") HEADWAY_RETURN_IF_ERROR(f.value_kv_dtype(&g->kv_dtype));
    else if (n == "--kv-rotate") HEADWAY_RETURN_IF_ERROR(f.value_kv_rotation(&g->kv_rotation));
    else if (n == "--weight-dtype") HEADWAY_RETURN_IF_ERROR(g->weights.take(&f));
    else if (n == "--temp") HEADWAY_RETURN_IF_ERROR(f.value_float(&s.temperature));
    else if (n == "--top-k") HEADWAY_RETURN_IF_ERROR(f.value_u32(&s.top_k, 0, UINT32_MAX));
    else if (n == "--top-p") HEADWAY_RETURN_IF_ERROR(f.value_float(&s.top_p));
    else if (n == "--min-p") HEADWAY_RETURN_IF_ERROR(f.value_float(&s.min_p));
    else if (n == "--repeat-penalty") HEADWAY_RETURN_IF_ERROR(f.value_float(&s.repetition_penalty));
    else if (n == "--seed") {
      uint32_t seed = 0;
      HEADWAY_RETURN_IF_ERROR(f.value_u32(&seed, 0, UINT32_MAX));
      s.seed = seed;
    } else {
      return f.unknown();
    }
  }
  HEADWAY_RETURN_IF_ERROR(g->model.check(true, true));
  const int prompts = (g->prompt != nullptr) + (g->prompt_ids != nullptr) + (g->chat.messages != nullptr);
  if (prompts != 1) {
    return Status::error(Code::kInvalidArgument, "give one of --prompt TEXT, --prompt-ids IDS and --messages FILE");
  }
  HEADWAY_RETURN_IF_ERROR(g->chat.check());
  if (g->chat.chat && g->prompt == nullptr) {
    return Status::error(Code::kInvalidArgument, "--chat wraps --prompt TEXT in the chat template: give --prompt");
  }
  return Status();
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// The prompt's ids: --prompt-ids as given; --prompt through the tokenizer; --chat / --messages
// rendered by the chat template first and tokenized as apply_chat_template does (no BOS added).
Status prompt_ids(const GenerateFlags& g, Tokenizer* tokenizer, std::vector<int32_t>* ids) {
  if (g.prompt_ids != nullptr) return parse_ids("--prompt-ids", g.prompt_ids, ids);
  Tokenizer& tok = *tokenizer;
  if (!g.chat.active()) return tok.encode(g.prompt, ids);
  std::string text;
  const std::string user = g.prompt != nullptr ? g.prompt : "";
  HEADWAY_RETURN_IF_ERROR(g.chat.render(tok, g.model.name(), g.prompt != nullptr ? &user : nullptr, &text));
  EncodeOptions options;
  options.add_special = false;
  return tok.encode(text, ids, options);
}

// --prompt-cache: restores the state FILE holds when its tokens begin `ids`; returns how many
// prompt tokens it holds (0: none used, and why on stderr; the model is then unchanged).
uint32_t restore_prompt_cache(const char* path, const std::vector<int32_t>& ids, Model& model) {
  const Result<std::vector<int32_t>> cached = read_model_state_ids(path);
  Status s = cached.status();
  if (cached.ok()) {
    const std::vector<int32_t>& c = cached.value();
    if (c.empty() || c.size() > ids.size() || !std::equal(c.begin(), c.end(), ids.begin())) {
      s = Status::error(Code::kInvalidArgument, "%s: its %zu tokens do not begin this prompt's %zu", path, c.size(),
                        ids.size());
    } else {
      s = load_model_state(model, path);
    }
  }
  if (!s.ok()) {
    if (s.code() != Code::kNotFound)
      std::fprintf(stderr, "headway generate: --prompt-cache not used: %s\n", s.message());
    return 0;
  }
  return model.position();
}

}  // namespace

int cmd_generate(int argc, char** argv) {
  GenerateFlags g;
  Status s = parse(argc, argv, &g);
  if (!s.ok()) return report(kCmd, s);
  ModelFile file;
  s = g.model.open(&file);
  if (!s.ok()) return report(kCmd, s);
  Result<Config> config = file.config();
  if (!config.ok()) return report(kCmd, config.status());
  // --prompt-ids runs without a tokenizer where the model has none: ids out, no text.
  Result<Tokenizer> tokenizer = g.model.tokenizer();
  if (!tokenizer.ok() && g.prompt_ids == nullptr) return report(kCmd, tokenizer.status());
  Tokenizer* tok = tokenizer.ok() ? &tokenizer.value() : nullptr;
  if (tok == nullptr)
    std::fprintf(stderr, "headway generate: no tokenizer (%s): ids only, no text\n", tokenizer.status().message());
  const Result<std::vector<int32_t>> end_ids = file.eos_ids();
  if (!end_ids.ok()) return report(kCmd, end_ids.status());
  std::vector<int32_t> ids;
  s = prompt_ids(g, tok, &ids);
  if (!s.ok()) return report(kCmd, s);
  if (ids.empty()) return report(kCmd, Status::error(Code::kInvalidArgument, "the prompt has no tokens"));

  Config c = config.value();
  const uint32_t n_prompt = static_cast<uint32_t>(ids.size());
  const uint64_t wanted = g.ctx ? g.ctx : uint64_t{n_prompt} + g.tokens;
  if (wanted > c.max_seq || n_prompt > wanted) {
    return report(kCmd, Status::error(Code::kInvalidArgument,
                                      "the prompt's %u tokens and --tokens %u need a context of %llu, the model's is "
                                      "%u%s",
                                      n_prompt, g.tokens, static_cast<unsigned long long>(wanted), c.max_seq,
                                      g.ctx ? " (or --ctx is shorter than the prompt)" : ""));
  }
  c.max_seq = static_cast<uint32_t>(wanted);
  c.kv_dtype = g.kv_dtype;
  c.kv_rotation = g.kv_rotation;
  PlanOptions options;
  options.threads = g.threads;
  g.weights.apply(&options);
  options.max_tokens = n_prompt < 512 ? n_prompt : 512;
  const Result<Plan> plan = make_plan(c, options);
  if (!plan.ok()) return report(kCmd, plan.status());
  PlannedArena planned;
  s = planned.create(plan.value(), g.threads);
  std::unique_ptr<Model> model(new Model);
  if (s.ok()) s = model->init(planned.arena, file.source(), planned.options());
  Generator generator;
  if (s.ok()) s = generator.init(model.get(), planned.arena, tok, end_ids.value());
  if (!s.ok()) return report(kCmd, s);

  // Everything the loop needs is made before it: the ids' room (the generator's), the text
  // pieces' buffer.
  std::string text;
  text.reserve(size_t{g.tokens} * 64);
  std::vector<char> piece(generator.piece_bytes());
  size_t piece_len = 0;

  const uint32_t n_cached = g.prompt_cache ? restore_prompt_cache(g.prompt_cache, ids, *model) : 0;
  // stdout's buffer, given before the count starts (stdio would allocate one at the first write).
  static char stdout_buffer[1 << 14];
  std::setvbuf(stdout, stdout_buffer, _IOFBF, sizeof(stdout_buffer));
  HeapCount heap;
  const auto t0 = std::chrono::steady_clock::now();
  s = generator.start(ids.data(), n_prompt, g.tokens, g.sampling, n_cached);
  const double prefill_s = seconds_since(t0);
  long heap_calls = heap.stop();
  // The prompt's state for next time: file I/O between the counted prefill and generation.
  if (s.ok() && g.prompt_cache != nullptr) {
    if (n_cached < n_prompt) s = save_model_state(*model, g.prompt_cache, ids.data(), n_prompt);
    if (s.ok())
      std::fprintf(stderr, "headway generate: %u of %u prompt tokens from --prompt-cache %s\n", n_cached, n_prompt,
                   g.prompt_cache);
  }
  size_t printed_ids = n_prompt;
  HeapCount heap_generating;
  const auto t1 = std::chrono::steady_clock::now();
  for (bool done = !s.ok(); !done;) {
    s = generator.next(piece.data(), piece.size(), &piece_len, &done);
    if (!s.ok()) break;
    text.append(piece.data(), piece_len);
    if (!g.json) {
      std::fwrite(piece.data(), 1, piece_len, stdout);
      // Without a tokenizer the ids are what is made: each as it comes.
      for (; tok == nullptr && printed_ids < generator.n_ids(); ++printed_ids) {
        std::printf("%d ", generator.ids()[printed_ids]);
      }
      std::fflush(stdout);
    }
  }
  const double decode_s = seconds_since(t1);
  heap_calls += heap_generating.stop();
  if (!s.ok()) return report(kCmd, s);
  const uint32_t made = generator.n_generated();

  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  const uint32_t n_prefilled = n_prompt - n_cached;
  const double prefill_tps = prefill_s > 0 ? n_prefilled / prefill_s : 0.0;
  // The decode steps: every token after the first came from one decode call.
  const double decode_tps = made > 1 && decode_s > 0 ? (made - 1) / decode_s : 0.0;
  const std::vector<int32_t> generated(generator.ids() + n_prompt, generator.ids() + generator.n_ids());
  if (g.json) {
    nlohmann::ordered_json j;
    j["prompt_ids"] = ids;
    j["ids"] = generated;
    j["text"] = text;
    j["prefill_tokens"] = n_prefilled;
    j["cached_prompt_tokens"] = n_cached;
    j["prefill_tokens_per_s"] = prefill_tps;
    j["decode_tokens"] = made;
    j["decode_tokens_per_s"] = decode_tps;
    j["arena_bytes"] = plan.value().arena_bytes;
    j["peak_rss_bytes"] = static_cast<uint64_t>(usage.ru_maxrss) * 1024;
    j["heap_allocations"] = heap_calls;
    j["threads"] = g.threads;
    j["kv_dtype"] = dtype_name(g.kv_dtype);
    j["kv_rotation"] = kv_rotation_name(g.kv_rotation);
    std::printf("%s\n", j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
    return kExitOk;
  }
  std::printf("\n");
  std::fflush(stdout);
  std::fprintf(stderr,
               "headway generate: prefill %u tokens %.1f tokens/s, decode %u tokens %.1f tokens/s (%u thread%s, "
               "%s KV)\n"
               "headway generate: arena %s planned, peak RSS %s, %ld heap calls while generating\n",
               n_prefilled, prefill_tps, made, decode_tps, g.threads, g.threads == 1 ? "" : "s", dtype_name(g.kv_dtype),
               human_bytes(plan.value().arena_bytes).c_str(),
               human_bytes(static_cast<uint64_t>(usage.ru_maxrss) * 1024).c_str(), heap_calls);
  return kExitOk;
}

}  // namespace headway::cli
