// headway bench: times named attention cases (bench/cases.hpp) on the CPU kernels or the Vulkan
// backend, and Gated DeltaNet cases on the CPU, and puts each against this machine's roofs,
// measured at start in the same process for the run's thread count (bench/peak.hpp). One line per
// case, or one JSON object per line
// (--json; the machine lines then go to stderr), and a roofline picture (--svg).
// With --model FILE it times a whole model from a GGUF instead, as llama.cpp's llama-bench does
// (bench/model_runner.hpp): prompt processing and text generation in tokens/s, mean ± stddev,
// one table row or JSON line per test with llama-bench's keys. With --tokenize FILE it times a
// tokenizer's encode on a megabyte of mixed text (bench_tokenize_command.cc).
// docs/PERFORMANCE.md says what every column means.
//
// The command's code lives here, beside the machinery it drives; the tool reaches it only through
// cmd_bench() (examples/cli/commands.hpp) and lends it its flag parser and error reporting
// (examples/cli/cli_common.hpp, defined in the tool itself).
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench/buffer.hpp"
#include "bench/cases.hpp"
#include "bench/command/bench_command.hpp"
#include "bench/model_runner.hpp"
#include "bench/peak.hpp"
#include "bench/roofline_svg.hpp"
#include "bench/runner.hpp"
#include "bench/simd_target.hpp"
#include "examples/cli/cli_common.hpp"
#include "examples/cli/commands.hpp"
#include "headway/backend.hpp"
#include "headway/build_info.hpp"
#include "headway/thread_pool.hpp"

namespace headway::cli {
namespace bench_command {

double sig6(double v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.6g", v);
  return std::strtod(buf, nullptr);
}

Status make_pool(uint32_t threads, ThreadPool* pool) {
  HEADWAY_RETURN_IF_ERROR(pool->create(threads));
  if (pool->threads() != threads) {
    std::fprintf(stderr, "headway bench: this build runs 1 thread (no thread pool); --threads %u ignored\n", threads);
  }
  return Status();
}

uint64_t llc_bytes(const Options& o) {
  if (o.llc_mib) return uint64_t{o.llc_mib} << 20;
  const uint64_t reported = bench::last_level_cache_bytes();
  if (reported != 0) return reported;
  std::fprintf(stderr, "headway bench: the OS reports no last-level cache size; assuming %s (--llc-mib)\n",
               human_bytes(kAssumedLlc).c_str());
  return kAssumedLlc;
}

Status measure_roofs(ThreadPool* pool, const bench::BenchBuffer& buffer, Machine* m) {
  const Result<bench::MachinePeak> peak = bench::measure_peak(pool, buffer.data(), buffer.size());
  if (!peak.ok()) return peak.status();
  m->measured = true;
  m->peak = peak.value();
  return Status();
}

namespace {

constexpr const char* kUsage =
    "usage: headway bench [--case NAME]... [--list] [--threads N] [--reps N] [--backend cpu|gpu]\n"
    "                     [--layout cache|dense] [--target NAME] [--json] [--svg FILE] [--llc-mib N]\n"
    "                     [--device N]\n"
    "  --case NAME   run this case (repeatable; default: every case, see --list; the encoder\n"
    "                batches and the Gated DeltaNet (gdn) cases are CPU only, which --backend gpu\n"
    "                leaves out)\n"
    "  --threads N   CPU threads for the attention and for the measured peak (default 1)\n"
    "  --reps N      timed repetitions after one warm-up (default: 5..200, about 0.25 s a case)\n"
    "  --backend     cpu (default) or gpu (the Vulkan backend; no peak is measured for it)\n"
    "  --layout      CPU K/V layout: cache (default; the KV cache's [kv_heads, t_kv, head_dim], what\n"
    "                sessions decode from) or dense (attend() on token-major [t_kv, kv_heads, head_dim]);\n"
    "                an encoder batch is always dense\n"
    "  --target NAME the CPU SIMD target to run instead of the best this CPU has (e.g. AVX2, SSE4,\n"
    "                SCALAR; a wrong name lists the ones there are): kernels, projections and roofs\n"
    "  --json        one JSON object per case on stdout\n"
    "  --svg FILE    write a roofline picture of the run\n"
    "  --llc-mib N   the last-level cache size to plan cold K/V and the bandwidth buffer for\n"
    "                (default: what the OS reports)\n"
    "  --device N    Vulkan device index for --backend gpu (default: discrete, integrated, any)\n"
    "\n"
    "       headway bench --model FILE [--prompt N] [--tokens N] [--depth N] [--threads N] [--reps N]\n"
    "                     [--kv-dtype D] [--kv-rotate] [--weight-dtype D] [--target NAME] [--json]\n"
    "  --model FILE  time a whole model from a GGUF, as llama-bench -m FILE -p N -n N -d N -t N does:\n"
    "                pp (one prefill of --prompt tokens) and tg (--tokens single-token decodes), each\n"
    "                after a context of --depth tokens; tokens/s, mean and stddev over --reps\n"
    "  --prompt N    pp's tokens (default 512; 0: no pp test)\n"
    "  --tokens N    tg's tokens (default 128; 0: no tg test)\n"
    "  --depth N     tokens of context prefilled before each repetition, untimed (default 0)\n"
    "  --reps N      timed repetitions after one warm-up (default 5)\n"
    "  --kv-dtype D  the KV cache's type (default f16, llama-bench's); --kv-rotate: q8_0/q4_0 rows\n"
    "                Hadamard-rotated before they are quantized; --weight-dtype D: the\n"
    "                weights converted into the arena (default: kept as the file holds them)\n"
    "\n"
    "       headway bench --tokenize FILE [--text-file F] [--reps N] [--json]\n"
    "  --tokenize FILE  encode a megabyte of mixed text (prose, code, Greek, Cyrillic, CJK, Korean,\n"
    "                emoji) with FILE's tokenizer (a GGUF, tokenizer.json or model folder) on one\n"
    "                thread: MB/s, the median of --reps (default 5); bench/tokenize_vs_hf.py puts\n"
    "                Hugging Face's tokenizers beside it\n"
    "  --text-file F encode F's bytes instead\n";

int list_cases() {
  for (const bench::BenchCase& c : bench::bench_cases()) {
    std::printf("%-42s %-7s t_q %4u t_kv %4u heads %2u/%-2u d%-3u %s  %s\n", c.name, bench::case_kind_name(c.kind),
                c.t_q, c.t_kv, c.n_heads, c.n_kv_heads, c.head_dim, dtype_name(c.kv_dtype), c.about);
  }
  for (const bench::DeltaCase& c : bench::delta_cases()) {
    std::printf("%-42s %-11s t %4u value/key heads %2u/%-2u dk %u dv %u  %s\n", c.name, bench::delta_kind_name(c), c.t,
                c.value_heads, c.key_heads, c.dk, c.dv, c.about);
  }
  return kExitOk;
}

// The roofline's colours: prefill, decode, or the model / kernel path a case stands for.
struct Group {
  const char* name;
  unsigned colour;
};
Group group_of(const bench::CaseResult& r) {
  if (r.delta != nullptr) return {"Gated DeltaNet (Qwen3.5)", 5};
  const bench::BenchCase& c = *r.spec;
  if (c.kind == bench::CaseKind::kEncoder) return {"encoder batch (32 sentences)", 4};
  if (std::strncmp(c.name, "smollm2", 7) == 0) return {"SmolLM2-135M (9/3 heads)", 2};
  if (c.head_dim != 64 && c.head_dim != 128) return {"generic head_dim (80, 256)", 3};
  return c.kind == bench::CaseKind::kDecode ? Group{"decode", 1} : Group{"prefill", 0};
}

// A case against this run's roofs: both fractions, and the attainable figure at its intensity
// (the roofline, bench/peak.hpp) with the fraction of it. NaN and no bound without roofs (GPU).
struct Fractions {
  bool known = false;
  double flops = NAN, bw = NAN;  // gflops / peak_gflops, kv_gbps / peak_gbps
  double peak = NAN;             // gflops / attainable.gflops
  bench::Attainable attainable;
};
Fractions fractions(const bench::CaseResult& r, const Machine& m) {
  Fractions f;
  if (!m.measured) return f;
  f.known = true;
  f.flops = r.gflops / m.peak.gflops;
  f.bw = r.kv_gbps / m.peak.gbps;
  f.attainable = bench::attainable(m.peak, r.intensity);
  f.peak = r.gflops / f.attainable.gflops;
  return f;
}

const char* case_name(const bench::CaseResult& r) { return r.delta ? r.delta->name : r.spec->name; }

// The case's shape: an attention case's, or a Gated DeltaNet case's (its state where K/V were).
void shape_json(const bench::CaseResult& r, nlohmann::ordered_json* out) {
  nlohmann::ordered_json& j = *out;
  if (r.delta != nullptr) {
    const bench::DeltaCase& c = *r.delta;
    j["kind"] = bench::delta_kind_name(c);
    j["t"] = c.t;
    j["value_heads"] = c.value_heads;
    j["key_heads"] = c.key_heads;
    j["dk"] = c.dk;
    j["dv"] = c.dv;
    return;
  }
  const bench::BenchCase& c = *r.spec;
  j["kind"] = bench::case_kind_name(c.kind);
  j["t_q"] = c.t_q;
  j["t_kv"] = c.t_kv;
  j["n_heads"] = c.n_heads;
  j["n_kv_heads"] = c.n_kv_heads;
  j["head_dim"] = c.head_dim;
  j["kv_dtype"] = dtype_name(c.kv_dtype);
  j["kv_layout"] = r.kv_layout;
  j["causal"] = c.causal;
  j["alibi"] = c.alibi;
}

nlohmann::ordered_json to_json(const bench::CaseResult& r, const Machine& m) {
  const Fractions f = fractions(r, m);
  const bool delta = r.delta != nullptr;
  nlohmann::ordered_json j;
  j["case"] = case_name(r);
  j["backend"] = r.backend;
  shape_json(r, &j);
  j["threads"] = r.threads;
  j["reps"] = r.reps;
  j["median_ms"] = sig6(r.median_ms);
  j["min_ms"] = sig6(r.min_ms);
  j["max_ms"] = sig6(r.max_ms);
  j["gflops"] = sig6(r.gflops);
  j[delta ? "state_gbps" : "kv_gbps"] = sig6(r.kv_gbps);
  j["intensity"] = sig6(r.intensity);
  const auto number_or_null = [](double v) { return std::isfinite(v) ? nlohmann::ordered_json(sig6(v)) : nullptr; };
  j["peak_gflops"] = m.measured ? nlohmann::ordered_json(sig6(m.peak.gflops)) : nullptr;
  j["peak_gbps"] = m.measured ? nlohmann::ordered_json(sig6(m.peak.gbps)) : nullptr;
  j["attainable_gflops"] = f.known ? number_or_null(f.attainable.gflops) : nullptr;
  j["frac_peak"] = number_or_null(f.peak);
  j["frac_flops"] = number_or_null(f.flops);
  j["frac_bw"] = number_or_null(f.bw);
  j["bound"] = f.known ? nlohmann::ordered_json(bench::bound_name(f.attainable.bound)) : nullptr;
  j["target"] = m.target;
  j["kernel"] = r.kernel;
  j[delta ? "state_copies" : "kv_copies"] = r.kv_copies;
  j[delta ? "state_cold" : "kv_cold"] = r.kv_cold;
  return j;
}

void print_header(const Options& o, const Machine& m) {
  std::FILE* out = o.json ? stderr : stdout;
  if (m.measured) {
    // The encoder batches run token-major whatever --layout says (bench/runner.hpp).
    bool encoder = false;
    for (const bench::BenchCase* c : o.cases) encoder |= c->batch != bench::Batch::kNone;
    const char* gdn = o.delta_cases.empty() ? "" : "; the gdn cases' KV GB/s: state bytes";
    std::fprintf(out, "headway bench: cpu, target %s, %u thread%s, K/V layout %s%s%s\n", m.target.c_str(),
                 m.peak.threads, m.peak.threads == 1 ? "" : "s", bench::kv_layout_name(o.layout),
                 encoder && o.layout != bench::KvLayout::kDense ? " (the encoder batches dense)" : "", gdn);
    std::fprintf(out,
                 "peak, measured now: %.1f GFLOP/s FMA (%u chains x %u f32 lanes, %s), %.1f GB/s read (%s buffer; "
                 "last-level cache %s)\n",
                 m.peak.gflops, m.peak.fma_chains, m.peak.lanes, m.peak.target, m.peak.gbps,
                 human_bytes(m.peak.read_bytes).c_str(), human_bytes(m.llc).c_str());
    std::fprintf(out,
                 "attainable = min(FMA roof, read roof x FLOP/B); ridge at %.1f FLOP/B: a case below it is bound by "
                 "memory, above it by compute\n",
                 m.peak.gflops / m.peak.gbps);
  } else {
    std::fprintf(out, "headway bench: gpu, %s (peak not measured: fractions n/a)\n", m.target.c_str());
  }
  if (!o.json) {
    std::printf("%-42s %9s %9s %9s %9s %8s %8s %10s %7s %6s %6s  %s\n", "case", "median ms", "min ms", "max ms",
                "GFLOP/s", "KV GB/s", "FLOP/B", "attainable", "%attain", "%FMA", "%BW", "kernel");
  }
}

// The roofs measured once more after the cases (a shared machine moves while a run lasts: its
// memory, a host that takes a core back), against the ones the fractions use.
void print_peak_again(const Options& o, const Machine& m, const bench::MachinePeak& again) {
  std::fprintf(o.json ? stderr : stdout,
               "peak, measured again after the cases: %.1f GFLOP/s FMA (%+.0f%%), %.1f GB/s read (%+.0f%%); the "
               "fractions are of the first\n",
               again.gflops, 100.0 * (again.gflops / m.peak.gflops - 1.0), again.gbps,
               100.0 * (again.gbps / m.peak.gbps - 1.0));
}

void print_line(const bench::CaseResult& r, const Machine& m) {
  const Fractions f = fractions(r, m);
  char att[16] = "n/a", fp[16] = "n/a", ff[16] = "n/a", fb[16] = "n/a";
  if (f.known) {
    // %attain is the figure that matters; '*' marks the roof that binds at this intensity, whose
    // own fraction it equals.
    const bool memory = f.attainable.bound == bench::Bound::kMemory;
    std::snprintf(att, sizeof(att), "%.2f", f.attainable.gflops);
    std::snprintf(fp, sizeof(fp), "%.1f", 100 * f.peak);
    std::snprintf(ff, sizeof(ff), "%.1f%s", 100 * f.flops, memory ? "" : "*");
    std::snprintf(fb, sizeof(fb), "%.1f%s", 100 * f.bw, memory ? "*" : "");
  }
  const char* warm = "";
  if (!r.kv_cold && r.backend[0] == 'c') {
    warm = r.delta ? " (state partly cached: pool smaller than LLC + state)"
                   : " (K/V partly cached: pool smaller than LLC + K/V)";
  }
  std::printf("%-42s %9.3f %9.3f %9.3f %9.2f %8.2f %8.1f %10s %7s %6s %6s  %s%s\n", case_name(r), r.median_ms, r.min_ms,
              r.max_ms, r.gflops, r.kv_gbps, r.intensity, att, fp, ff, fb, r.kernel, warm);
  std::fflush(stdout);
}

Status write_svg(const Options& o, const Machine& m, const std::vector<bench::CaseResult>& results) {
  std::vector<bench::RooflinePoint> points;
  for (const bench::CaseResult& r : results) {
    const Fractions f = fractions(r, m);
    const Group g = group_of(r);
    const bench::CaseKind kind = r.delta ? r.delta->kind : r.spec->kind;
    bench::RooflinePoint p{case_name(r), g.name, g.colour, kind == bench::CaseKind::kDecode, r.intensity, r.gflops};
    if (f.known) {
      p.attainable_gflops = f.attainable.gflops;
      p.memory_bound = f.attainable.bound == bench::Bound::kMemory;
      p.frac_peak = f.peak;
    }
    points.push_back(p);
  }
  bench::Roofline roof;
  char text[512];
  if (m.measured) {
    std::snprintf(text, sizeof(text), "headway attention roofline: cpu %s, %u thread%s", m.target.c_str(),
                  m.peak.threads, m.peak.threads == 1 ? "" : "s");
    roof.title = text;
    std::snprintf(text, sizeof(text),
                  "roofs measured in this run: FMA %.1f GFLOP/s (%s, %u chains), read %.1f GB/s over %s; "
                  "points: median of the timed calls",
                  m.peak.gflops, m.peak.target, m.peak.fma_chains, m.peak.gbps, human_bytes(m.peak.read_bytes).c_str());
    roof.subtitle = text;
    roof.peak_gflops = m.peak.gflops;
    roof.peak_gbps = m.peak.gbps;
  } else {
    std::snprintf(text, sizeof(text), "headway attention: gpu %s (Vulkan)", m.target.c_str());
    roof.title = text;
    roof.subtitle = "no roofs: the FMA and read loops measure the CPU; points: median of the timed calls";
  }
  roof.points = points;
  return bench::write_roofline_svg(o.svg, roof);
}

Status layout_flag(Flags* flags, bench::KvLayout* out) {
  const char* layout = nullptr;
  HEADWAY_RETURN_IF_ERROR(flags->value(&layout));
  if (std::strcmp(layout, "cache") == 0) *out = bench::KvLayout::kCache;
  else if (std::strcmp(layout, "dense") == 0) *out = bench::KvLayout::kDense;
  else return Status::error(Code::kInvalidArgument, "--layout %s is not one of cache, dense", layout);
  return Status();
}

// Stops at the first bad flag, or at --help (help set, nothing after it read).
Status parse_flags(int argc, char** argv, Options* o, const char** backend, bool* help) {
  Flags flags("bench", argc, argv);
  while (flags.next()) {
    const std::string& f = flags.name();
    Status s;
    if (f == "--help" || f == "-h") {
      *help = true;
      return Status();
    }
    if (f == "--case") {
      const char* name = nullptr;
      s = flags.value(&name);
      if (s.ok()) {
        const bench::BenchCase* c = bench::find_bench_case(name);
        const bench::DeltaCase* d = c ? nullptr : bench::find_delta_case(name);
        if (d != nullptr) {
          o->delta_cases.push_back(d);
        } else if (c == nullptr) {
          s = Status::error(Code::kInvalidArgument, "--case %s: no case of that name (headway bench --list names them)",
                            name);
        } else {
          o->cases.push_back(c);
        }
      }
    } else if (f == "--list" && !flags.has_inline_value()) {
      o->list = true;
    } else if (f == "--json" && !flags.has_inline_value()) {
      o->json = true;
    } else if (f == "--threads") {
      s = flags.value_u32(&o->threads, 1, ThreadPool::kMaxThreads);
    } else if (f == "--reps") {
      s = flags.value_u32(&o->reps, 1, 100000);
      o->reps_given = true;
    } else if (f == "--llc-mib") {
      s = flags.value_u32(&o->llc_mib, 1, 1u << 20);
    } else if (f == "--device") {
      uint32_t d = 0;
      s = flags.value_u32(&d, 0, 255);
      o->device = static_cast<int32_t>(d);
    } else if (f == "--backend") {
      s = flags.value(backend);
    } else if (f == "--layout") {
      s = layout_flag(&flags, &o->layout);
    } else if (f == "--svg") {
      s = flags.value(&o->svg);
    } else if (f == "--target") {
      s = flags.value(&o->target);
    } else if (f == "--model") {
      s = flags.value(&o->model.path);
    } else if (f == "--tokenize") {
      s = flags.value(&o->tokenize);
    } else if (f == "--text-file") {
      s = flags.value(&o->text_file);
    } else if (f == "--prompt") {
      s = flags.value_u32(&o->model.n_prompt, 0, 1u << 20);
      o->model_only_flag = "--prompt";
    } else if (f == "--tokens") {
      s = flags.value_u32(&o->model.n_gen, 0, 1u << 20);
      o->model_only_flag = "--tokens";
    } else if (f == "--depth") {
      s = flags.value_u32(&o->model.n_depth, 0, 1u << 24);
      o->model_only_flag = "--depth";
    } else if (f == "--kv-dtype") {
      s = flags.value_kv_dtype(&o->model.kv_dtype);
      o->model_only_flag = "--kv-dtype";
    } else if (f == "--kv-rotate") {
      s = flags.value_kv_rotation(&o->model.kv_rotation);
      o->model_only_flag = "--kv-rotate";
    } else if (f == "--weight-dtype") {
      s = flags.value_dtype(&o->model.weight_dtype);
      o->model.weights_in_arena = true;
      o->model_only_flag = "--weight-dtype";
    } else {
      s = flags.unknown();
    }
    HEADWAY_RETURN_IF_ERROR(s);
  }
  return Status();
}

void emit(const Options& o, const Machine& m, const bench::CaseResult& r) {
  if (o.json) std::printf("%s\n", to_json(r, m).dump().c_str()), std::fflush(stdout);
  else print_line(r, m);
}

Status run_gpu(const Options& o, Machine* m, std::vector<bench::CaseResult>* results) {
  if (!GpuContext::compiled()) {
    return Status::error(Code::kUnsupported,
                         "--backend gpu: this headway was built without the GPU backend "
                         "(HEADWAY_GPU=OFF: no Vulkan or glslc at configure time)");
  }
  GpuContext context;
  GpuOptions options;
  options.device_index = o.device;
  Status s = context.create(options);
  if (!s.ok()) return Status::error(Code::kUnsupported, "--backend gpu: %s", s.message());
  m->target = context.info().name;
  print_header(o, *m);
  for (const bench::BenchCase* c : o.cases) {
    const Result<bench::CaseResult> r = bench::run_gpu_case(*c, &context, o.reps);
    if (!r.ok()) return r.status();
    results->push_back(r.value());
    emit(o, *m, r.value());
  }
  return Status();
}

// The roofs measured before and after the cases, on the same pool and K/V pool as the cases.
Status run_cpu(const Options& o, Machine* m, std::vector<bench::CaseResult>* results) {
  ThreadPool pool;
  HEADWAY_RETURN_IF_ERROR(make_pool(o.threads, &pool));
  m->llc = llc_bytes(o);
  bench::BenchBuffer kv;
  HEADWAY_RETURN_IF_ERROR(bench::make_kv_pool(&kv, bench::kv_pool_bytes(o.cases, m->llc)));
  HEADWAY_RETURN_IF_ERROR(measure_roofs(&pool, kv, m));
  m->target = kernel_target_name();
  if (m->target != m->peak.target) {
    std::fprintf(stderr, "headway bench: note: the peak loops run %s, the attention kernels %s\n", m->peak.target,
                 m->target.c_str());
  }
  print_header(o, *m);
  bench::CpuRun cpu;
  cpu.pool = &pool;
  cpu.kv = &kv;
  cpu.llc_bytes = m->llc;
  cpu.reps = o.reps;
  cpu.layout = o.layout;
  for (const bench::BenchCase* c : o.cases) {
    const Result<bench::CaseResult> r = bench::run_cpu_case(*c, cpu);
    if (!r.ok()) return r.status();
    results->push_back(r.value());
    emit(o, *m, r.value());
  }
  bench::BenchBuffer states;
  if (!o.delta_cases.empty()) {
    HEADWAY_RETURN_IF_ERROR(bench::make_state_pool(&states, bench::state_pool_bytes(o.delta_cases, m->llc)));
    cpu.states = &states;
  }
  for (const bench::DeltaCase* c : o.delta_cases) {
    const Result<bench::CaseResult> r = bench::run_cpu_delta_case(*c, cpu);
    if (!r.ok()) return r.status();
    results->push_back(r.value());
    emit(o, *m, r.value());
  }
  const Result<bench::MachinePeak> again = bench::measure_peak(&pool, kv.data(), kv.size());
  if (!again.ok()) return again.status();
  print_peak_again(o, *m, again.value());
  return Status();
}

int run(int argc, char** argv) {
  Options o;
  const char* backend = "cpu";
  bool help = false;
  if (Status s = parse_flags(argc, argv, &o, &backend, &help); !s.ok()) return report("bench", s);
  if (help) {
    std::fputs(kUsage, stdout);
    return kExitOk;
  }
  if (o.list) return list_cases();
  o.gpu = std::strcmp(backend, "gpu") == 0;
  if (o.text_file != nullptr && o.tokenize == nullptr) {
    return report("bench", Status::error(Code::kInvalidArgument, "--text-file is the text --tokenize FILE encodes"));
  }
  if (o.tokenize != nullptr) {
    const char* clash = o.model.path                                 ? "--model"
                        : !o.cases.empty() || !o.delta_cases.empty() ? "--case"
                        : o.gpu                                      ? "--backend gpu"
                        : o.svg                                      ? "--svg"
                        : o.target                                   ? "--target"
                        : o.model_only_flag                          ? o.model_only_flag
                        : o.threads != 1                             ? "--threads"
                                                                     : nullptr;
    if (clash != nullptr) {
      return report("bench",
                    Status::error(Code::kInvalidArgument,
                                  "--tokenize times a tokenizer on one thread; %s is for the other benches", clash));
    }
    if (Status s = run_tokenize(o); !s.ok()) return report("bench", s);
    return kExitOk;
  }
  if (o.model.path == nullptr && o.model_only_flag != nullptr) {
    return report("bench",
                  Status::error(Code::kInvalidArgument, "%s times a model: give --model FILE", o.model_only_flag));
  }
  if (o.model.path != nullptr) {
    const char* clash = !o.cases.empty() || !o.delta_cases.empty() ? "--case"
                        : o.gpu                                    ? "--backend gpu"
                        : o.svg                                    ? "--svg"
                                                                   : nullptr;
    if (clash != nullptr) {
      return report("bench",
                    Status::error(Code::kInvalidArgument,
                                  "--model times a whole model on the CPU; %s is for the attention cases", clash));
    }
    if (o.target != nullptr) {
      if (Status s = bench::pin_simd_target(o.target); !s.ok()) return report("bench", s);
    }
    if (Status s = run_model(o); !s.ok()) return report("bench", s);
    return kExitOk;
  }
  if (!o.gpu && std::strcmp(backend, "cpu") != 0) {
    return report("bench", Status::error(Code::kInvalidArgument, "--backend %s is not one of cpu, gpu", backend));
  }
  if (o.target != nullptr) {
    if (o.gpu) {
      return report("bench",
                    Status::error(Code::kInvalidArgument,
                                  "--target %s: a CPU SIMD target, and --backend gpu times the GPU", o.target));
    }
    if (Status s = bench::pin_simd_target(o.target); !s.ok()) return report("bench", s);
  }
  // An encoder batch is a packed attend() call, and the delta rule has no GPU kernel: only the
  // CPU runs them (bench/runner.hpp).
  for (const bench::BenchCase* c : o.cases) {
    if (o.gpu && c->batch != bench::Batch::kNone) {
      return report("bench",
                    Status::error(Code::kInvalidArgument,
                                  "--case %s: an encoder batch runs on the CPU only, not --backend gpu", c->name));
    }
  }
  if (o.gpu && !o.delta_cases.empty()) {
    return report("bench", Status::error(Code::kInvalidArgument,
                                         "--case %s: a Gated DeltaNet case runs on the CPU only, not --backend gpu",
                                         o.delta_cases.front()->name));
  }
  if (o.cases.empty() && o.delta_cases.empty()) {
    for (const bench::BenchCase& c : bench::bench_cases()) {
      if (!o.gpu || c.batch == bench::Batch::kNone) o.cases.push_back(&c);
    }
    for (const bench::DeltaCase& c : bench::delta_cases()) {
      if (!o.gpu) o.delta_cases.push_back(&c);
    }
  }

  Machine m;
  std::vector<bench::CaseResult> results;
  const Status s = o.gpu ? run_gpu(o, &m, &results) : run_cpu(o, &m, &results);
  if (!s.ok()) return report("bench", s);
  if (o.svg != nullptr) {
    const Status svg = write_svg(o, m, results);
    if (!svg.ok()) return report("bench", svg);
    std::fprintf(o.json ? stderr : stdout, "roofline: %s\n", o.svg);
  }
  return kExitOk;
}

}  // namespace
}  // namespace bench_command

int cmd_bench(int argc, char** argv) { return bench_command::run(argc, argv); }

}  // namespace headway::cli
