// headway bench --model: a whole model from a GGUF timed as llama.cpp's llama-bench does
// (bench/model_runner.hpp): prompt processing and text generation in tokens/s, mean ± stddev, one
// table row or JSON line per test with llama-bench's keys, against this machine's roofs.
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench/buffer.hpp"
#include "bench/command/bench_command.hpp"
#include "bench/simd_target.hpp"
#include "examples/cli/cli_common.hpp"
#include "headway/build_info.hpp"

namespace headway::cli::bench_command {
namespace {

// The weights' storage for the reports: "file" (kept as the file holds them) or the dtype converted to.
const char* weights_name(const bench::ModelBenchOptions& o) {
  return o.weights_in_arena ? dtype_name(o.weight_dtype) : "file";
}

// --model: the file's name without its folders, as llama-bench's table shows a model by its type.
const char* base_name(const char* path) {
  const char* slash = std::strrchr(path, '/');
  return slash ? slash + 1 : path;
}

// llama-bench's test names: "pp512", "tg128", with " @ d4096" after a depth.
std::string model_test_name(const bench::ModelTestResult& r) {
  char name[48];
  const bool pp = r.test == bench::ModelTest::kPrompt;
  int len = std::snprintf(name, sizeof(name), "%s%u", pp ? "pp" : "tg", pp ? r.n_prompt : r.n_gen);
  if (r.n_depth > 0) std::snprintf(name + len, sizeof(name) - len, " @ d%u", r.n_depth);
  return name;
}

// What one test reads or computes per token, against this run's roofs. tg: the decode step's
// weight bytes, the Gated DeltaNet layers' states (read once; their writes not counted) plus the
// K/V it reads (the context grows from depth + 1 to depth + n_gen: its mean), over the read roof; pp: the matrices'
// FLOP per token (attention left out), over the FMA roof.
struct ModelRoof {
  double gbps = NAN, frac_bw = NAN, bytes_per_token = NAN;
  double gflops = NAN, frac_flops = NAN;
};
ModelRoof model_roof(const bench::ModelTestResult& r, const bench::ModelBenchInfo& info,
                     const bench::MachinePeak& peak) {
  ModelRoof m;
  if (r.test == bench::ModelTest::kGen) {
    const double context = r.n_depth + (r.n_gen + 1) / 2.0;
    m.bytes_per_token =
        static_cast<double>(info.read_bytes_per_tok + info.state_bytes) + context * info.kv_bytes_per_tok;
    m.gbps = m.bytes_per_token * r.avg_ts / 1e9;
    m.frac_bw = m.gbps / peak.gbps;
  } else {
    m.gflops = static_cast<double>(info.matmul_flops_per_tok) * r.avg_ts / 1e9;
    m.frac_flops = m.gflops / peak.gflops;
  }
  return m;
}

nlohmann::ordered_json model_json(const bench::ModelTestResult& r, const bench::ModelBenchInfo& info, const Options& o,
                                  const Machine& m) {
  const auto number_or_null = [](double v) { return std::isfinite(v) ? nlohmann::ordered_json(sig6(v)) : nullptr; };
  const ModelRoof roof = model_roof(r, info, m.peak);
  std::vector<double> ns, ts;
  for (double v : r.samples_ns) ns.push_back(std::round(v));
  for (double v : r.samples_ts) ts.push_back(sig6(v));
  nlohmann::ordered_json j;
  // llama-bench's keys (its -o jsonl), where headway has the same thing.
  j["model_filename"] = o.model.path;
  j["model_size"] = info.file_bytes;
  j["model_n_params"] = info.n_params;
  j["n_batch"] = info.n_ubatch;
  j["n_ubatch"] = info.n_ubatch;
  j["n_threads"] = m.peak.threads;
  j["type_k"] = dtype_name(o.model.kv_dtype);
  j["type_v"] = dtype_name(o.model.kv_dtype);
  j["kv_rotation"] = kv_rotation_name(o.model.kv_rotation);
  j["n_prompt"] = r.n_prompt;
  j["n_gen"] = r.n_gen;
  j["n_depth"] = r.n_depth;
  j["avg_ns"] = std::round(r.avg_ns);
  j["stddev_ns"] = std::round(r.stddev_ns);
  j["avg_ts"] = sig6(r.avg_ts);
  j["stddev_ts"] = sig6(r.stddev_ts);
  j["samples_ns"] = ns;
  j["samples_ts"] = ts;
  // headway's own.
  j["backend"] = "cpu";
  j["target"] = m.target;
  j["weight_dtype"] = weights_name(o.model);
  j["arena_bytes"] = info.arena_bytes;
  j["weight_bytes"] = info.weight_bytes;
  j["n_ctx"] = info.n_ctx;
  j["reps"] = static_cast<uint32_t>(r.samples_ns.size());
  j["heap_allocations"] = r.heap_calls;
  j["bytes_per_token"] = number_or_null(roof.bytes_per_token);
  j["gbps"] = number_or_null(roof.gbps);
  j["gflops"] = number_or_null(roof.gflops);
  j["peak_gbps"] = sig6(m.peak.gbps);
  j["peak_gflops"] = sig6(m.peak.gflops);
  j["frac_bw"] = number_or_null(roof.frac_bw);
  j["frac_flops"] = number_or_null(roof.frac_flops);
  return j;
}

void print_model_line(const bench::ModelTestResult& r, const bench::ModelBenchInfo& info, const Options& o,
                      const Machine& m) {
  const ModelRoof roof = model_roof(r, info, m.peak);
  char weights[48], against[64];
  std::snprintf(weights, sizeof(weights), "%s %s", weights_name(o.model), human_bytes(info.weight_bytes).c_str());
  if (r.test == bench::ModelTest::kGen) {
    std::snprintf(against, sizeof(against), "%.1f GB/s, %.0f%% read", roof.gbps, 100 * roof.frac_bw);
  } else {
    std::snprintf(against, sizeof(against), "%.1f GFLOP/s, %.0f%% FMA", roof.gflops, 100 * roof.frac_flops);
  }
  std::printf("| %s | %s | %.2f M | cpu | %u | %s | %s | %s | %.2f ± %.2f | %s |\n", base_name(o.model.path),
              human_bytes(info.file_bytes).c_str(), info.n_params / 1e6, m.peak.threads, dtype_name(o.model.kv_dtype),
              weights, model_test_name(r).c_str(), r.avg_ts, r.stddev_ts, against);
  std::fflush(stdout);
}

}  // namespace

// The model (a bad file or context refused before anything is timed), the roofs on the same
// pool, then pp and tg.
Status run_model(Options& o) {
  ThreadPool pool;
  HEADWAY_RETURN_IF_ERROR(make_pool(o.threads, &pool));
  o.model.pool = &pool;
  o.model.reps = o.reps_given ? o.reps : 5;
  bench::ModelRunner runner;
  HEADWAY_RETURN_IF_ERROR(runner.init(o.model));
  Machine m;
  m.llc = llc_bytes(o);
  {
    // The read roof's buffer, freed before the tests run.
    bench::BenchBuffer buffer;
    HEADWAY_RETURN_IF_ERROR(bench::make_kv_pool(&buffer, bench::kv_pool_bytes({}, m.llc)));
    HEADWAY_RETURN_IF_ERROR(measure_roofs(&pool, buffer, &m));
  }
  m.target = kernel_target_name();
  const bench::ModelBenchInfo& info = runner.info();
  std::FILE* out = o.json ? stderr : stdout;
  std::fprintf(out,
               "headway bench: model %s, %u layers, context %u, arena %s (weights %s %s, %s KV), cpu, target %s, "
               "%u thread%s\n",
               o.model.path, info.n_layers, info.n_ctx, human_bytes(info.arena_bytes).c_str(), weights_name(o.model),
               human_bytes(info.weight_bytes).c_str(), dtype_name(o.model.kv_dtype), m.target.c_str(), m.peak.threads,
               m.peak.threads == 1 ? "" : "s");
  std::fprintf(out,
               "peak, measured now: %.1f GFLOP/s FMA, %.1f GB/s read; a decode step reads %s of weights%s%s%s + %s "
               "of K/V per token of context\n",
               m.peak.gflops, m.peak.gbps, human_bytes(info.read_bytes_per_tok).c_str(), info.state_bytes ? " + " : "",
               info.state_bytes ? human_bytes(info.state_bytes).c_str() : "",
               info.state_bytes ? " of Gated DeltaNet state (fixed)" : "", human_bytes(info.kv_bytes_per_tok).c_str());
  if (!o.json) {
    std::printf("| model | size | params | backend | threads | type_k | weights | test | t/s | against the roofs |\n");
    std::printf("| --- | ---: | ---: | --- | ---: | --- | --- | ---: | ---: | ---: |\n");
  }
  for (bench::ModelTest t : {bench::ModelTest::kPrompt, bench::ModelTest::kGen}) {
    if ((t == bench::ModelTest::kPrompt ? o.model.n_prompt : o.model.n_gen) == 0) continue;
    const Result<bench::ModelTestResult> r = runner.run(t);
    if (!r.ok()) return r.status();
    if (o.json) std::printf("%s\n", model_json(r.value(), info, o, m).dump().c_str()), std::fflush(stdout);
    else print_model_line(r.value(), info, o, m);
  }
  return Status();
}

}  // namespace headway::cli::bench_command
