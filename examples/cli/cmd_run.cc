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

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "examples/cli/cli_common.hpp"
#include "examples/cli/commands.hpp"
#include "headway/arena.hpp"
#include "headway/build_info.hpp"
#include "headway/heap_count.hpp"
#include "headway/model_files.hpp"
#include "headway/plan.hpp"
#include "headway/presets.hpp"
#include "headway/session.hpp"
#include "headway/thread_pool.hpp"
#include "runtime/formats/weights_loader.hpp"

namespace headway::cli {
namespace {

constexpr const char* kUsage =
    "usage: headway run (--preset NAME | --config config.json | --gguf FILE | --spec TEXT)\n"
    "                   [--weights model.safetensors|model.gguf] [--prompt N] [--tokens M] [--layers N]\n"
    "                   [--threads N] [--ctx N] [--max-tokens N] [--weight-dtype f32|f16|bf16]\n"
    "                   [--kv-dtype f32|f16|bf16] [--projection auto|highway|xnnpack] [--max-arena BYTES]\n"
    "                   [--seed S] [--json]\n"
    "  prefills N prompt tokens (default 128) and decodes M tokens (default 32) through the model's\n"
    "  attention stack (residual adds between blocks; no MLPs, norms or embeddings), then prints\n"
    "  tokens/s, the arena the plan promised and the bytes of it the run touched, and the heap\n"
    "  allocations made during prefill and decode. Weights: seeded random (default) or --weights\n"
    "  (borrowed from the mapped file; a GGUF file also gives the config). --max-arena (default\n"
    "  4GiB; K/M/G/KiB/MiB/GiB suffixes) refuses bigger plans with exit 2.\n";

constexpr uint8_t kCanary = 0xA5;  // the arena is filled with it; bytes still equal were never written

struct Buffer {
  void* p = nullptr;
  ~Buffer() { std::free(p); }
};

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

// Random weights of one layer, regenerated for each layer into the same buffers.
struct RandomWeights {
  const Plan* plan = nullptr;
  DType dtype = DType::kF16;
  uint64_t seed = 1;
  std::vector<uint8_t> buf[10];

  TensorRef make(int slot, uint32_t rows, uint32_t cols, float scale, float offset, uint64_t stream) {
    const uint64_t n = uint64_t{rows} * cols;
    std::vector<uint8_t>& b = buf[slot];
    b.resize(n * dtype_bytes(dtype));
    uint64_t s = seed * 0x9E3779B97F4A7C15ull + stream * 0xD1B54A32D192ED03ull + 1;
    const float a = scale * 1.7320508f;  // uniform [-a, a): variance scale²
    for (uint64_t i = 0; i < n; ++i) {
      s ^= s << 13;  // xorshift64: fast enough for billions of weights
      s ^= s >> 7;
      s ^= s << 17;
      const float u = static_cast<float>(s >> 40) * (1.0f / 16777216.0f);
      const float f = offset + a * (2.0f * u - 1.0f);
      if (dtype == DType::kF32) {
        std::memcpy(&b[4 * i], &f, 4);
      } else {
        uint32_t bits;
        std::memcpy(&bits, &f, 4);
        uint16_t h;
        if (dtype == DType::kBF16) {
          h = static_cast<uint16_t>((bits + 0x7fffu + ((bits >> 16) & 1u)) >> 16);
        } else {  // f16: the values here are small normals; round to nearest even
          const uint32_t sign = (bits >> 16) & 0x8000u;
          const int32_t e = static_cast<int32_t>((bits >> 23) & 0xff) - 127 + 15;
          if (e <= 0) {
            h = static_cast<uint16_t>(sign);
          } else {
            const uint32_t m = bits & 0x7fffffu;
            uint32_t r = (static_cast<uint32_t>(e) << 10) | (m >> 13);
            const uint32_t rem = m & 0x1fffu;
            if (rem > 0x1000u || (rem == 0x1000u && (r & 1u))) ++r;
            h = static_cast<uint16_t>(sign | r);
          }
        }
        std::memcpy(&b[2 * i], &h, 2);
      }
    }
    return TensorRef{b.data(), dtype, rows, cols};
  }

  static Result<LayerWeights> layer(void* ctx, uint32_t l) {
    RandomWeights& r = *static_cast<RandomWeights*>(ctx);
    const Plan& p = *r.plan;
    const Config& c = p.config;
    const uint64_t st = uint64_t{l} * 16;
    LayerWeights w;
    const float sd = 1.0f / std::sqrt(static_cast<float>(c.d_model));
    w.wq = r.make(0, p.q_width, c.d_model, sd, 0.0f, st + 0);
    w.wk = r.make(1, p.kv_width, c.d_model, sd, 0.0f, st + 1);
    w.wv = r.make(2, p.kv_width, c.d_model, sd, 0.0f, st + 2);
    w.wo = r.make(3, c.d_model, p.q_width, 1.0f / std::sqrt(static_cast<float>(p.q_width)), 0.0f, st + 3);
    if (c.qkv_bias) {
      w.bq = r.make(4, 1, p.q_width, 0.1f, 0.0f, st + 4);
      w.bk = r.make(5, 1, p.kv_width, 0.1f, 0.0f, st + 5);
      w.bv = r.make(6, 1, p.kv_width, 0.1f, 0.0f, st + 6);
    }
    if (c.o_bias) w.bo = r.make(7, 1, c.d_model, 0.1f, 0.0f, st + 7);
    if (c.qk_norm) {
      w.q_norm = r.make(8, 1, p.head_dim, 0.1f, 1.0f, st + 8);
      w.k_norm = r.make(9, 1, p.head_dim, 0.1f, 1.0f, st + 9);
    }
    return w;
  }
};

struct FileWeights {
  const formats::WeightFile* file = nullptr;
  Config config;  // the file's config (all its layers), for the loader's checks
  static Result<LayerWeights> layer(void* ctx, uint32_t l) {
    const FileWeights& f = *static_cast<FileWeights*>(ctx);
    return formats::load_layer_weights(*f.file, f.config, l);
  }
};

// Bytes of [p, p + n) up to the last one that differs from the canary (a high-water mark).
uint64_t touched(const uint8_t* p, uint64_t n) {
  while (n > 0 && p[n - 1] == kCanary) --n;
  return n;
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

int run(int argc, char** argv) {
  Flags flags("run", argc, argv);
  const char* preset = nullptr;
  const char* config_path = nullptr;
  const char* gguf_path = nullptr;
  const char* spec = nullptr;
  const char* weights_path = nullptr;
  const char* projection = "auto";
  const char* max_arena_text = "4GiB";
  uint32_t prompt = 128, tokens = 32, layers = 0, ctx = 0, seed = 1;
  bool json = false, kv_dtype_set = false, wdtype_set = false;
  DType kv_dtype = DType::kF16;
  PlanOptions options;
  options.weight_dtype = DType::kF16;
  while (flags.next()) {
    const std::string& f = flags.name();
    Status s;
    if (f == "--help" || f == "-h") {
      std::fputs(kUsage, stdout);
      return kExitOk;
    }
    if (f == "--preset") s = flags.value(&preset);
    else if (f == "--config") s = flags.value(&config_path);
    else if (f == "--gguf") s = flags.value(&gguf_path);
    else if (f == "--spec") s = flags.value(&spec);
    else if (f == "--weights") s = flags.value(&weights_path);
    else if (f == "--prompt") s = flags.value_u32(&prompt, 0, 1u << 24);
    else if (f == "--tokens") s = flags.value_u32(&tokens, 0, 1u << 24);
    else if (f == "--layers") s = flags.value_u32(&layers, 1, 1u << 16);
    else if (f == "--threads") s = flags.value_u32(&options.threads, 1, ThreadPool::kMaxThreads);
    else if (f == "--ctx") s = flags.value_u32(&ctx, 1, 1u << 30);
    else if (f == "--max-tokens") s = flags.value_u32(&options.max_tokens, 1, 1u << 30);
    else if (f == "--seed") s = flags.value_u32(&seed, 0, 0xffffffffu);
    else if (f == "--kv-dtype") s = flags.value_dtype(&kv_dtype), kv_dtype_set = true;
    else if (f == "--weight-dtype") s = flags.value_dtype(&options.weight_dtype), wdtype_set = true;
    else if (f == "--projection") s = flags.value(&projection);
    else if (f == "--max-arena") s = flags.value(&max_arena_text);
    else if (f == "--json" && !flags.has_inline_value()) json = true;
    else s = flags.unknown();
    if (!s.ok()) return report("run", s);
  }
  uint64_t max_arena = 0;
  if (Status s = parse_bytes(max_arena_text, &max_arena); !s.ok()) return report("run", s);

  formats::WeightFile file;
  if (weights_path != nullptr) {
    if (Status s = file.open(weights_path); !s.ok()) return report("run", s);
  }
  const bool gguf_weights = weights_path != nullptr && file.format() == formats::WeightFormat::kGguf;
  const int sources = (preset != nullptr) + (config_path != nullptr) + (gguf_path != nullptr) + (spec != nullptr);
  if (sources > 1 || (sources == 0 && !gguf_weights)) {
    return report("run", Status::error(Code::kInvalidArgument,
                                       "give exactly one of --preset NAME, --config FILE, --gguf FILE, --spec TEXT "
                                       "(got %d; a --weights GGUF file can stand in for them)",
                                       sources));
  }
  Result<Config> config = Status::error(Code::kInternal, "no config source");
  if (preset != nullptr) {
    const presets::Entry* e = presets::find(preset);
    if (e == nullptr) {
      return report("run", Status::error(Code::kNotFound, "no preset named '%s' (see headway presets)", preset));
    }
    config = e->make();
  } else if (config_path != nullptr) {
    config = load_hf_config(config_path);
  } else if (gguf_path != nullptr) {
    config = load_gguf_config(gguf_path);
  } else if (spec != nullptr) {
    config = parse_spec(spec);
  } else {
    config = file.gguf_config();
  }
  if (!config.ok()) return report("run", config.status());
  const Config file_config = config.value();
  if (Status s = validate(file_config); !s.ok()) return report("run", s);
  Config c = file_config;
  if (kv_dtype_set) c.kv_dtype = kv_dtype;
  if (layers != 0 && layers < c.n_layers) c.n_layers = layers;
  const uint64_t run_len = uint64_t{prompt} + tokens;
  if (run_len == 0) return report("run", Status::error(Code::kInvalidArgument, "--prompt and --tokens are both 0"));
  if (ctx == 0) {
    if (run_len > c.max_seq) {
      return report("run", Status::error(Code::kInvalidArgument,
                                         "--prompt %u + --tokens %u = %llu tokens, more than the model's context of "
                                         "%u",
                                         prompt, tokens, static_cast<unsigned long long>(run_len), c.max_seq));
    }
    c.max_seq = static_cast<uint32_t>(run_len);
  } else {
    if (run_len > ctx) {
      return report("run", Status::error(Code::kInvalidArgument, "--prompt %u + --tokens %u do not fit --ctx %u",
                                         prompt, tokens, ctx));
    }
    c.max_seq = ctx;
  }
  if (c.n_layers > Session::kMaxLayers) {
    return report("run", Status::error(Code::kUnsupported, "%u layers; a Session holds at most %u (use --layers)",
                                       c.n_layers, Session::kMaxLayers));
  }

  const std::string proj = projection;
  if (proj == "xnnpack") {
    options.projection = Projection::kXnnpack;
  } else if (proj == "auto") {
    // XNNPACK packs f32 weights: chosen when the weights are f32 anyway, else the Highway GEMM
    // reads f16/bf16 weights directly at half the memory.
    options.projection =
        built_with_xnnpack() && options.weight_dtype == DType::kF32 ? Projection::kXnnpack : Projection::kHighway;
  } else if (proj != "highway") {
    return report("run", Status::error(Code::kInvalidArgument, "--projection '%s': expected auto, highway or xnnpack",
                                       projection));
  }
  if (options.projection == Projection::kXnnpack && !built_with_xnnpack()) {
    return report("run", Status::error(Code::kUnsupported, "--projection xnnpack: this build has no XNNPACK"));
  }
  FileWeights fw;
  if (weights_path != nullptr) {
    options.weights_in_arena = false;  // borrowed from the mapping
    fw.file = &file;
    fw.config = file_config;
    const Result<LayerWeights> l0 = formats::load_layer_weights(file, file_config, 0);
    if (!l0.ok()) return report("run", l0.status());
    if (!wdtype_set) options.weight_dtype = l0->wq.dtype;
  }

  const Result<Plan> plan = make_plan(c, options);
  if (!plan.ok()) return report("run", plan.status());
  const Plan& p = plan.value();
  if (p.arena_bytes > max_arena) {
    return report("run", Status::error(Code::kOutOfRange,
                                       "the plan needs an arena of %llu bytes (%s), above --max-arena %llu bytes "
                                       "(%s): use --layers%s, a smaller --prompt/--tokens, or raise --max-arena",
                                       static_cast<unsigned long long>(p.arena_bytes), human_bytes(p.arena_bytes).c_str(),
                                       static_cast<unsigned long long>(max_arena), human_bytes(max_arena).c_str(),
                                       options.weight_dtype == DType::kF32 ? ", --weight-dtype f16" : ""));
  }

  Buffer buffer;
  buffer.p = std::aligned_alloc(kAlignment, p.arena_bytes);
  if (buffer.p == nullptr) {
    return report("run", Status::error(Code::kOutOfRange, "cannot allocate the arena of %llu bytes",
                                       static_cast<unsigned long long>(p.arena_bytes)));
  }
  std::memset(buffer.p, kCanary, p.arena_bytes);  // also faults every page in before the clock runs
  Arena arena;
  if (Status s = arena.bind(p, buffer.p, p.arena_bytes); !s.ok()) return report("run", s);
  ThreadPool pool;
  if (Status s = pool.create(options.threads); !s.ok()) return report("run", s);

  // Heap-allocated once: a Session holds kMaxLayers layer objects.
  std::unique_ptr<Session> session(new Session);
  RandomWeights rw;
  rw.plan = &p;
  rw.dtype = options.weight_dtype;
  rw.seed = seed;
  Status st = weights_path != nullptr ? session->init(arena, FileWeights::layer, &fw, &pool)
                                      : session->init(arena, RandomWeights::layer, &rw, &pool);
  if (!st.ok()) return report("run", st);
  for (std::vector<uint8_t>& b : rw.buf) std::vector<uint8_t>().swap(b);

  const uint32_t d = c.d_model;
  std::vector<float> x(size_t{run_len} * d), y(size_t{run_len} * d);
  {
    uint64_t s = uint64_t{seed} * 0x2545F4914F6CDD1Dull + 7;
    for (float& v : x) {
      s ^= s << 13;
      s ^= s >> 7;
      s ^= s << 17;
      v = static_cast<float>(s >> 40) * (2.0f / 16777216.0f) - 1.0f;
    }
  }
  const bool tty = isatty(2) != 0;
  using Clock = std::chrono::steady_clock;
  HeapCount count;
  const Clock::time_point t0 = Clock::now();
  // The prompt in max_tokens chunks (what prefill does inside), so the bar can move.
  for (uint32_t done = 0; done < prompt && st.ok();) {
    const uint32_t n = prompt - done < p.max_tokens ? prompt - done : p.max_tokens;
    st = session->prefill(x.data() + size_t{done} * d, n, y.data() + size_t{done} * d);
    done += n;
    progress(tty, "prefill", done, prompt);
  }
  const Clock::time_point t1 = Clock::now();
  for (uint32_t i = 0; i < tokens && st.ok(); ++i) {
    const size_t off = (size_t{prompt} + i) * d;
    st = session->decode(x.data() + off, y.data() + off);
    progress(tty, "decode", i + 1, tokens);
  }
  const Clock::time_point t2 = Clock::now();
  const long allocations = count.stop();
  if (!st.ok()) return report("run", st);
  for (float v : y) {
    if (!std::isfinite(v)) return report("run", Status::error(Code::kInternal, "the stack produced a non-finite value"));
  }

  const double prefill_s = std::chrono::duration<double>(t1 - t0).count();
  const double decode_s = std::chrono::duration<double>(t2 - t1).count();
  const uint8_t* base = static_cast<const uint8_t*>(buffer.p);
  struct Region {
    const char* name;
    uint64_t offset, bytes;
  };
  const Region regions[] = {{"weights", p.weights_offset, p.weights_region_bytes},
                            {"packed", p.packed_offset, p.packed_bytes},
                            {"kv_cache", p.kv_offset, p.kv_cache_bytes},
                            {"activations", p.activations_offset, p.activation_bytes},
                            {"scratch", p.scratch_offset, p.scratch_bytes}};
  uint64_t used = 0;
  uint64_t used_by[5] = {};
  for (int i = 0; i < 5; ++i) {
    // Per layer for the per-layer regions (each layer's slice has its own high-water mark).
    const uint64_t per = i == 0 ? p.weight_bytes_per_layer : i == 1 ? p.packed_bytes_per_layer
                         : i == 2 ? p.kv_bytes_per_layer : regions[i].bytes;
    if (per == 0) continue;
    for (uint64_t o = 0; o < regions[i].bytes; o += per) used_by[i] += touched(base + regions[i].offset + o, per);
    used += used_by[i];
  }
  const double prefill_tps = prefill_s > 0 ? prompt / prefill_s : 0.0;
  const double decode_tps = decode_s > 0 ? tokens / decode_s : 0.0;
  const char* weights_name = weights_path != nullptr ? weights_path : "random";
  if (json) {
    nlohmann::ordered_json j;
    j["model"] = c.name;
    j["layers"] = c.n_layers;
    j["d_model"] = c.d_model;
    j["threads"] = options.threads;
    j["projection"] = projection_name(options.projection);
    j["weights"] = weights_name;
    j["weight_dtype"] = dtype_name(options.weight_dtype);
    j["kv_dtype"] = dtype_name(c.kv_dtype);
    j["context"] = c.max_seq;
    j["max_tokens"] = p.max_tokens;
    j["prompt_tokens"] = prompt;
    j["decode_tokens"] = tokens;
    j["prefill_seconds"] = prefill_s;
    j["prefill_tokens_per_second"] = prefill_tps;
    j["decode_seconds"] = decode_s;
    j["decode_tokens_per_second"] = decode_tps;
    j["arena_bytes_planned"] = p.arena_bytes;
    j["arena_bytes_used"] = used;
    nlohmann::ordered_json by;
    for (int i = 0; i < 5; ++i) by[regions[i].name] = {{"planned", regions[i].bytes}, {"used", used_by[i]}};
    j["regions"] = by;
    j["heap_allocations"] = allocations;
    std::printf("%s\n", j.dump().c_str());
  } else {
    std::printf("model        %s: %u layers, d_model %u, %u/%u heads x %u\n", c.name, c.n_layers, d, c.n_heads,
                c.kv_heads(), p.head_dim);
    std::printf("weights      %s, %s, projections on %s, %u thread%s\n", weights_name, dtype_name(options.weight_dtype),
                projection_name(options.projection), options.threads, options.threads == 1 ? "" : "s");
    std::printf("prefill      %u tokens in %.3f s: %.1f tokens/s\n", prompt, prefill_s, prefill_tps);
    std::printf("decode       %u tokens in %.3f s: %.1f tokens/s\n", tokens, decode_s, decode_tps);
    std::printf("arena        %s planned (%llu bytes), %s touched (%llu bytes)\n", human_bytes(p.arena_bytes).c_str(),
                static_cast<unsigned long long>(p.arena_bytes), human_bytes(used).c_str(),
                static_cast<unsigned long long>(used));
    for (int i = 0; i < 5; ++i) {
      if (regions[i].bytes == 0) continue;
      std::printf("  %-11s %12s planned, %12s touched\n", regions[i].name, human_bytes(regions[i].bytes).c_str(),
                  human_bytes(used_by[i]).c_str());
    }
    std::printf("heap         %ld allocations during prefill and decode\n", allocations);
  }
  return kExitOk;
}

}  // namespace

int cmd_run(int argc, char** argv) { return run(argc, argv); }

}  // namespace headway::cli
