// headway run: build a model's attention stack in one arena, prefill a prompt, decode tokens,
// and report speed, memory (planned and touched) and the heap allocations made while running.
//
// The stack is the Session's: n_layers attention blocks joined by residual adds (see
// headway/session.hpp); inputs are seeded random token vectors (an embedding stand-in). Weights
// are seeded random values (uniform, variance 1/fan_in) made one layer at a time and copied into
// the arena in --weight-dtype (default f16), or borrowed from a memory-mapped --weights file.
// The context is sized for the run (prompt + tokens) unless --ctx says otherwise, so a 128k
// context preset does not plan a 128k KV cache for a 160-token run.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "examples/cli/cli_common.hpp"
#include "examples/cli/commands.hpp"
#include "examples/cli/config_source.hpp"
#include "examples/cli/run_report.hpp"
#include "examples/cli/run_weights.hpp"
#include "headway/arena.hpp"
#include "headway/backend.hpp"
#include "headway/build_info.hpp"
#include "headway/tools/heap_count.hpp"
#include "headway/plan.hpp"
#include "headway/session.hpp"
#include "headway/thread_pool.hpp"
#include "headway/tools/weights_file.hpp"

namespace headway::cli {
namespace {

constexpr const char* kUsage =
    "usage: headway run (--preset NAME | --config config.json | --gguf FILE | --spec TEXT)\n"
    "                   [--weights model.safetensors|model.gguf] [--prompt N] [--tokens M] [--layers N]\n"
    "                   [--threads N] [--ctx N] [--max-tokens N] [--weight-dtype f32|f16|bf16]\n"
    "                   [--kv-dtype f32|f16|bf16|q8_0|q4_0] [--kv-rotate] [--projection auto|highway|xnnpack] "
    "[--max-arena BYTES]\n"
    "                   [--sink-tokens S] [--backend cpu|gpu] [--seed S] [--json]\n"
    "                   [--sentences N] [--seq-min N] [--seq-max N] [--seq-lens N,N,...]\n"
    "  prefills N prompt tokens (default 128) and decodes M tokens (default 32) through the model's\n"
    "  attention stack (residual adds between blocks; no MLPs, norms or embeddings), then prints\n"
    "  tokens/s, the arena the plan promised and the bytes of it the run touched, and the heap\n"
    "  allocations made during prefill and decode. Weights: seeded random (default) or --weights\n"
    "  (borrowed from the mapped file; a GGUF file also gives the config). --max-arena (default\n"
    "  4GiB; K/M/G/KiB/MiB/GiB suffixes) refuses bigger plans with exit 2. --backend gpu runs each\n"
    "  layer's KV cache and attention on a Vulkan device (projections stay on the CPU). --sink-tokens\n"
    "  keeps the first S positions of each sliding layer visible through its window (StreamingLLM).\n"
    "  A bidirectional (encoder) model runs a batch of sentences instead, packed back to back in one\n"
    "  call and each attending within itself, with no decode: --sentences N (default 32) of seeded\n"
    "  lengths in --seq-min..--seq-max (default 12..128), or --seq-lens 12,40,7; the plan holds the\n"
    "  batch (max_tokens) and its longest sentence (context). It prints tokens/s and sentences/s.\n";

struct RunFlags {
  ConfigSource source;
  const char* weights_path = nullptr;
  const char* projection = "auto";
  const char* max_arena_text = "4GiB";
  uint32_t prompt = 128, tokens = 32, layers = 0, ctx = 0, seed = 1;
  uint32_t sink_tokens = 0;
  bool json = false, help = false, kv_dtype_set = false, wdtype_set = false, sink_tokens_set = false;
  // An encoder's batch (a bidirectional model): its sentences' lengths, drawn or given.
  uint32_t sentences = 32, seq_min = 12, seq_max = 128;
  const char* seq_lens = nullptr;
  const char* batch_flag = nullptr;   // the first batch flag given (for the message of a causal model)
  const char* tokens_flag = nullptr;  // --prompt or --tokens where given (for an encoder's)
  DType kv_dtype = DType::kF16;
  KvRotation kv_rotation = KvRotation::kNone;
  bool kv_rotation_set = false;
  BackendKind backend = BackendKind::kCpu;
  PlanOptions options;
  RunFlags() { options.weight_dtype = DType::kF16; }
};

// Stops at the first bad flag, or at --help (help set, nothing after it read).
Status parse_flags(int argc, char** argv, RunFlags* r) {
  Flags flags("run", argc, argv);
  PlanOptions& o = r->options;
  while (flags.next()) {
    const std::string& f = flags.name();
    Status s;
    if (f == "--help" || f == "-h") {
      r->help = true;
      return Status();
    }
    if (r->source.take(&flags, &s)) {
      // --preset, --config, --gguf or --spec: the value is in source
    } else if (f == "--weights") s = flags.value(&r->weights_path);
    else if (f == "--prompt") s = flags.value_u32(&r->prompt, 0, 1u << 24), r->tokens_flag = "--prompt";
    else if (f == "--tokens") s = flags.value_u32(&r->tokens, 0, 1u << 24), r->tokens_flag = "--tokens";
    else if (f == "--sentences") s = flags.value_u32(&r->sentences, 1, 1u << 16), r->batch_flag = "--sentences";
    else if (f == "--seq-min") s = flags.value_u32(&r->seq_min, 1, 1u << 24), r->batch_flag = "--seq-min";
    else if (f == "--seq-max") s = flags.value_u32(&r->seq_max, 1, 1u << 24), r->batch_flag = "--seq-max";
    else if (f == "--seq-lens") s = flags.value(&r->seq_lens), r->batch_flag = "--seq-lens";
    else if (f == "--layers") s = flags.value_u32(&r->layers, 1, 1u << 16);
    else if (f == "--threads") s = flags.value_u32(&o.threads, 1, ThreadPool::kMaxThreads);
    else if (f == "--ctx") s = flags.value_u32(&r->ctx, 1, 1u << 30);
    else if (f == "--max-tokens") s = flags.value_u32(&o.max_tokens, 1, 1u << 30);
    else if (f == "--seed") s = flags.value_u32(&r->seed, 0, 0xffffffffu);
    else if (f == "--sink-tokens") s = flags.value_u32(&r->sink_tokens, 0, 0xffffffffu), r->sink_tokens_set = true;
    else if (f == "--kv-dtype") s = flags.value_kv_dtype(&r->kv_dtype), r->kv_dtype_set = true;
    else if (f == "--kv-rotate") s = flags.value_kv_rotation(&r->kv_rotation), r->kv_rotation_set = true;
    else if (f == "--weight-dtype") s = flags.value_dtype(&o.weight_dtype), r->wdtype_set = true;
    else if (f == "--projection") s = flags.value(&r->projection);
    else if (f == "--max-arena") s = flags.value(&r->max_arena_text);
    else if (f == "--backend") s = flags.value_backend(&r->backend);
    else if (f == "--json" && !flags.has_inline_value()) r->json = true;
    else s = flags.unknown();
    HEADWAY_RETURN_IF_ERROR(s);
  }
  return Status();
}

Status parse_bytes(const char* s, uint64_t* out) {
  char* end = nullptr;
  const unsigned long long v = std::strtoull(s, &end, 10);
  uint64_t mul = 1;
  const std::string suffix = end ? end : "";
  if (suffix == "K" || suffix == "KiB") mul = 1ull << 10;
  else if (suffix == "M" || suffix == "MiB") mul = 1ull << 20;
  else if (suffix == "G" || suffix == "GiB") mul = 1ull << 30;
  else if (!suffix.empty() || end == s) {
    return Status::error(Code::kInvalidArgument, "--max-arena '%s' is not a byte count (e.g. 4GiB, 512M, 1000000)", s);
  }
  *out = v * mul;
  return Status();
}

// The model's whole config, validated: from the one source flag, or from a --weights GGUF file
// when no source is given.
Result<Config> model_config(const RunFlags& r, const WeightsFile& file) {
  const bool gguf_weights = r.weights_path != nullptr && file.is_gguf();
  Result<Config> config = r.source.given() == 0 && gguf_weights
                              ? file.gguf_config()
                              : r.source.load("; a --weights GGUF file can stand in for them");
  if (!config.ok()) return config;
  HEADWAY_RETURN_IF_ERROR(validate(config.value()));
  return config;
}

// The config this run plans: --kv-dtype, --sink-tokens, --layers, and a context of --ctx or
// prompt + tokens.
Result<Config> config_for_run(const RunFlags& r, Config c) {
  if (r.kv_dtype_set) c.kv_dtype = r.kv_dtype;
  if (r.kv_rotation_set) c.kv_rotation = r.kv_rotation;
  if (r.sink_tokens_set) c.sink_tokens = r.sink_tokens;
  if (r.layers != 0 && r.layers < c.n_layers) c.keep_first_layers(r.layers);
  const uint64_t run_len = uint64_t{r.prompt} + r.tokens;
  if (run_len == 0) return Status::error(Code::kInvalidArgument, "--prompt and --tokens are both 0");
  if (r.ctx == 0) {
    if (run_len > c.max_seq) {
      return Status::error(Code::kInvalidArgument,
                           "--prompt %u + --tokens %u = %llu tokens, more than the model's context of %u", r.prompt,
                           r.tokens, static_cast<unsigned long long>(run_len), c.max_seq);
    }
    c.max_seq = static_cast<uint32_t>(run_len);
  } else {
    if (run_len > r.ctx) {
      return Status::error(Code::kInvalidArgument, "--prompt %u + --tokens %u do not fit --ctx %u", r.prompt, r.tokens,
                           r.ctx);
    }
    c.max_seq = r.ctx;
  }
  if (c.n_layers > Session::kMaxLayers) {
    return Status::error(Code::kUnsupported, "%u layers; a Session holds at most %u (use --layers)", c.n_layers,
                         Session::kMaxLayers);
  }
  return c;
}

// An encoder's batch: the cumulative lengths of --seq-lens, or of --sentences lengths drawn from
// --seed in --seq-min..--seq-max.
Status encoder_batch(const RunFlags& r, std::vector<uint32_t>* cu) {
  if (r.seq_lens != nullptr) return parse_seq_lens("--seq-lens", r.seq_lens, 0, nullptr, cu);
  if (r.seq_min > r.seq_max) {
    return Status::error(Code::kInvalidArgument, "--seq-min %u is more than --seq-max %u", r.seq_min, r.seq_max);
  }
  uint64_t s = uint64_t{r.seed} * 0x9E3779B97F4A7C15ull + 1;
  cu->assign(1, 0);
  for (uint32_t i = 0; i < r.sentences; ++i) {
    s ^= s << 13;
    s ^= s >> 7;
    s ^= s << 17;
    const uint32_t len = r.seq_min + static_cast<uint32_t>((s >> 11) % (uint64_t{r.seq_max} - r.seq_min + 1));
    if (uint64_t{cu->back()} + len > (uint64_t{1} << 24)) {
      return Status::error(Code::kInvalidArgument, "--sentences %u of up to %u tokens: more than %u tokens in all",
                           r.sentences, r.seq_max, 1u << 24);
    }
    cu->push_back(cu->back() + len);
  }
  return Status();
}

// The config and options an encoder batch plans: a context of its longest sentence (or the
// window, or --ctx), and the whole batch in one call (max_tokens; --max-tokens may not be less).
Result<Config> config_for_encoder(const RunFlags& r, Config c, const std::vector<uint32_t>& cu, PlanOptions* o) {
  if (r.kv_dtype_set) c.kv_dtype = r.kv_dtype;
  if (r.kv_rotation_set) c.kv_rotation = r.kv_rotation;
  if (r.layers != 0 && r.layers < c.n_layers) c.keep_first_layers(r.layers);
  uint32_t longest = 0;
  for (size_t b = 0; b + 1 < cu.size(); ++b) longest = std::max(longest, cu[b + 1] - cu[b]);
  const uint32_t total = cu.back();
  if (longest > c.max_seq) {
    return Status::error(Code::kInvalidArgument, "a sentence of %u tokens is longer than the model's context of %u",
                         longest, c.max_seq);
  }
  if (r.ctx != 0 && r.ctx < longest) {
    return Status::error(Code::kInvalidArgument, "--ctx %u is less than the longest sentence, %u tokens", r.ctx,
                         longest);
  }
  c.max_seq = r.ctx != 0 ? r.ctx : std::max(longest, c.window);
  if (o->max_tokens != 0 && o->max_tokens < total) {
    return Status::error(Code::kInvalidArgument,
                         "--max-tokens %u is less than the batch's %u tokens, which run in one call", o->max_tokens,
                         total);
  }
  o->max_tokens = total;
  if (c.n_layers > Session::kMaxLayers) {
    return Status::error(Code::kUnsupported, "%u layers; a Session holds at most %u (use --layers)", c.n_layers,
                         Session::kMaxLayers);
  }
  return c;
}

// --projection into o->projection. auto: XNNPACK packs f32 weights, so it is chosen when the
// weights are f32 anyway; else the Highway GEMM reads f16/bf16 weights directly at half the
// memory.
Status choose_projection(const char* projection, PlanOptions* o) {
  if (std::strcmp(projection, "auto") == 0) {
    o->projection =
        built_with_xnnpack() && o->weight_dtype == DType::kF32 ? Projection::kXnnpack : Projection::kHighway;
  } else if (!parse_projection(projection, &o->projection)) {
    return Status::error(Code::kInvalidArgument, "--projection '%s': expected auto, highway or xnnpack", projection);
  }
  if (o->projection == Projection::kXnnpack && !built_with_xnnpack()) {
    return Status::error(Code::kUnsupported, "--projection xnnpack: this build has no XNNPACK");
  }
  return Status();
}

// --weights: borrowed from the mapping, in the file's dtype unless --weight-dtype says otherwise.
Status borrow_weights(const RunFlags& r, const WeightsFile& file, const Config& file_config, PlanOptions* o,
                      FileWeights* fw) {
  o->weights_in_arena = false;
  fw->file = &file;
  fw->config = file_config;
  const Result<LayerWeights> l0 = file.layer_weights(file_config, 0);
  if (!l0.ok()) return l0.status();
  if (!r.wdtype_set) o->weight_dtype = l0->wq.dtype;
  return Status();
}

Status check_arena_limit(const Plan& p, uint64_t max_arena, const PlanOptions& o) {
  if (p.arena_bytes <= max_arena) return Status();
  return Status::error(Code::kOutOfRange,
                       "the plan needs an arena of %llu bytes (%s), above --max-arena %llu bytes (%s): use --layers%s, "
                       "a smaller --prompt/--tokens, or raise --max-arena",
                       static_cast<unsigned long long>(p.arena_bytes), human_bytes(p.arena_bytes).c_str(),
                       static_cast<unsigned long long>(max_arena), human_bytes(max_arena).c_str(),
                       o.weight_dtype == DType::kF32 ? ", --weight-dtype f16" : "");
}

// The arena (canary-filled), the pool, the Vulkan device (--backend gpu) and the session over
// them, destroyed in reverse.
struct Stack {
  AlignedBuffer buffer;
  Arena arena;
  ThreadPool pool;
  GpuContext gpu;
  std::unique_ptr<Session> session;  // heap-allocated once: a Session holds kMaxLayers layer objects
};

Status build_stack(const Plan& p, const PlanOptions& o, const RunFlags& r, FileWeights* fw, Stack* st) {
  st->buffer.p = std::aligned_alloc(kAlignment, p.arena_bytes);
  if (st->buffer.p == nullptr) {
    return Status::error(Code::kOutOfRange, "cannot allocate the arena of %llu bytes",
                         static_cast<unsigned long long>(p.arena_bytes));
  }
  std::memset(st->buffer.p, kCanary, p.arena_bytes);  // also faults every page in before the clock runs
  HEADWAY_RETURN_IF_ERROR(st->arena.bind(p, st->buffer.p, p.arena_bytes));
  HEADWAY_RETURN_IF_ERROR(st->pool.create(o.threads));
  LayerOptions layer_options;
  layer_options.pool = &st->pool;
  layer_options.backend = r.backend;
  if (r.backend == BackendKind::kGpu) {
    HEADWAY_RETURN_IF_ERROR(st->gpu.create());
    layer_options.gpu = &st->gpu;
  }
  st->session.reset(new Session);
  if (r.weights_path != nullptr) return st->session->init(st->arena, FileWeights::layer, fw, layer_options);
  RandomWeights rw;
  rw.plan = &p;
  rw.dtype = o.weight_dtype;
  rw.seed = r.seed;
  const Status s = st->session->init(st->arena, RandomWeights::layer, &rw, layer_options);
  rw.release();
  return s;
}

// Seeded token vectors in [-1, 1): the embedding stand-in.
std::vector<float> random_inputs(uint32_t seed, size_t n) {
  std::vector<float> x(n);
  uint64_t s = uint64_t{seed} * 0x2545F4914F6CDD1Dull + 7;
  for (float& v : x) {
    s ^= s << 13;
    s ^= s >> 7;
    s ^= s << 17;
    v = static_cast<float>(s >> 40) * (2.0f / 16777216.0f) - 1.0f;
  }
  return x;
}

void progress(bool tty, const char* what, uint32_t done, uint32_t total) {
  if (!tty || total == 0) return;
  constexpr int kWidth = 30;
  const int filled = static_cast<int>(uint64_t{done} * kWidth / total);
  std::fprintf(stderr, "\r%-7s [%.*s%*s] %u/%u", what, filled, "##############################", kWidth - filled, "",
               done, total);
  if (done == total) std::fputc('\n', stderr);
  std::fflush(stderr);
}

// Prefills the prompt and decodes the tokens, timing each phase and counting heap calls over
// both. x and y: [prompt + tokens, d_model].
Status run_tokens(Session* session, uint32_t max_tokens, uint32_t d, uint32_t prompt, uint32_t tokens, const float* x,
                  float* y, RunReport* out) {
  const bool tty = isatty(2) != 0;
  using Clock = std::chrono::steady_clock;
  Status st;
  HeapCount count;
  const Clock::time_point t0 = Clock::now();
  // The prompt in max_tokens chunks (what prefill does inside), so the bar can move.
  for (uint32_t done = 0; done < prompt && st.ok();) {
    const uint32_t n = prompt - done < max_tokens ? prompt - done : max_tokens;
    st = session->prefill(x + size_t{done} * d, n, y + size_t{done} * d);
    done += n;
    progress(tty, "prefill", done, prompt);
  }
  const Clock::time_point t1 = Clock::now();
  for (uint32_t i = 0; i < tokens && st.ok(); ++i) {
    const size_t off = (size_t{prompt} + i) * d;
    st = session->decode(x + off, y + off);
    progress(tty, "decode", i + 1, tokens);
  }
  const Clock::time_point t2 = Clock::now();
  out->heap_calls = count.stop();
  out->prefill_s = std::chrono::duration<double>(t1 - t0).count();
  out->decode_s = std::chrono::duration<double>(t2 - t1).count();
  return st;
}

// --prompt and --tokens are a decoder's run, the batch flags an encoder's: each refused for the
// other kind of model, naming it.
Status check_mode_flags(const RunFlags& r, const Config& c) {
  if (c.causal && r.batch_flag != nullptr) {
    return Status::error(Code::kInvalidArgument,
                         "%s: %s is a causal model, which runs a prompt and decodes (--prompt, --tokens); the batch "
                         "flags are for a bidirectional (encoder) model",
                         r.batch_flag, c.name);
  }
  if (!c.causal && r.tokens_flag != nullptr) {
    return Status::error(Code::kInvalidArgument,
                         "%s: %s is a bidirectional (encoder) model, which runs a batch of sentences (--sentences, "
                         "--seq-min, --seq-max, --seq-lens), not a prompt and decode",
                         r.tokens_flag, c.name);
  }
  return Status();
}

// One untimed batch (first calls), then kEncodeReps timed ones: the median time, and the heap
// calls over the timed ones.
Status run_batch(Session* session, const std::vector<uint32_t>& cu, const float* x, float* y, RunReport* out) {
  using Clock = std::chrono::steady_clock;
  const uint32_t n_seqs = static_cast<uint32_t>(cu.size() - 1);
  HEADWAY_RETURN_IF_ERROR(session->encode(x, cu.data(), n_seqs, y));
  double seconds[kEncodeReps];
  Status st;
  HeapCount count;
  for (int i = 0; i < kEncodeReps && st.ok(); ++i) {
    const Clock::time_point t0 = Clock::now();
    st = session->encode(x, cu.data(), n_seqs, y);
    seconds[i] = std::chrono::duration<double>(Clock::now() - t0).count();
  }
  out->heap_calls = count.stop();
  std::sort(seconds, seconds + kEncodeReps);
  out->encode_s = seconds[kEncodeReps / 2];
  return st;
}

Status check_finite(const std::vector<float>& y) {
  for (float v : y) {
    if (!std::isfinite(v)) return Status::error(Code::kInternal, "the stack produced a non-finite value");
  }
  return Status();
}

int run(int argc, char** argv) {
  RunFlags r;
  if (Status s = parse_flags(argc, argv, &r); !s.ok()) return report("run", s);
  if (r.help) {
    std::fputs(kUsage, stdout);
    return kExitOk;
  }
  uint64_t max_arena = 0;
  if (Status s = parse_bytes(r.max_arena_text, &max_arena); !s.ok()) return report("run", s);
  WeightsFile file;
  if (r.weights_path != nullptr) {
    if (Status s = file.open(r.weights_path); !s.ok()) return report("run", s);
  }
  const Result<Config> file_config = model_config(r, file);
  if (!file_config.ok()) return report("run", file_config.status());
  const bool encoder = !file_config->causal;
  if (Status s = check_mode_flags(r, file_config.value()); !s.ok()) return report("run", s);
  std::vector<uint32_t> cu;
  PlanOptions options = r.options;
  if (encoder) {
    if (Status s = encoder_batch(r, &cu); !s.ok()) return report("run", s);
  }
  const Result<Config> config =
      encoder ? config_for_encoder(r, file_config.value(), cu, &options) : config_for_run(r, file_config.value());
  if (!config.ok()) return report("run", config.status());
  const Config& c = config.value();
  if (Status s = choose_projection(r.projection, &options); !s.ok()) return report("run", s);
  FileWeights fw;
  if (r.weights_path != nullptr) {
    if (Status s = borrow_weights(r, file, file_config.value(), &options, &fw); !s.ok()) return report("run", s);
  }
  const Result<Plan> plan = make_plan(c, options);
  if (!plan.ok()) return report("run", plan.status());
  const Plan& p = plan.value();
  if (Status s = check_arena_limit(p, max_arena, options); !s.ok()) return report("run", s);

  Stack stack;
  if (Status s = build_stack(p, options, r, &fw, &stack); !s.ok()) return report("run", s);
  const size_t n = (encoder ? size_t{cu.back()} : size_t{r.prompt} + r.tokens) * c.d_model;
  const std::vector<float> x = random_inputs(r.seed, n);
  std::vector<float> y(n);
  RunReport out;
  Status st =
      encoder ? run_batch(stack.session.get(), cu, x.data(), y.data(), &out)
              : run_tokens(stack.session.get(), p.max_tokens, c.d_model, r.prompt, r.tokens, x.data(), y.data(), &out);
  if (st.ok()) st = check_finite(y);
  if (!st.ok()) return report("run", st);

  out.config = &c;
  out.plan = &p;
  out.options = &options;
  out.weights = r.weights_path != nullptr ? r.weights_path : "random";
  out.backend = r.backend;
  // The first attention layer's (Gated DeltaNet layers run on the CPU always).
  out.backend_description = stack.session->layer(c.first_attention_layer()).backend_description();
  out.prompt = r.prompt;
  out.tokens = r.tokens;
  out.encoder = encoder;
  out.batch = &cu;
  out.arena = measure_arena(p, static_cast<const uint8_t*>(stack.buffer.p));
  if (r.json) print_run_json(out);
  else print_run_table(out);
  return kExitOk;
}

}  // namespace

int cmd_run(int argc, char** argv) { return run(argc, argv); }

}  // namespace headway::cli
