// What the parts of `headway bench` share (bench_command.cc: the attention cases;
// bench_model_command.cc: a whole model; bench_tokenize_command.cc: a tokenizer): the parsed options, the machine a run
// measured, and the steps both take before they time anything.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "bench/buffer.hpp"
#include "bench/cases.hpp"
#include "bench/model_runner.hpp"
#include "bench/peak.hpp"
#include "bench/runner.hpp"
#include "headway/status.hpp"
#include "headway/thread_pool.hpp"

namespace headway::cli::bench_command {

constexpr uint64_t kAssumedLlc = uint64_t{32} << 20;  // when the OS reports no cache size

struct Options {
  std::vector<const bench::BenchCase*> cases;
  std::vector<const bench::DeltaCase*> delta_cases;  // the Gated DeltaNet cases, run after those
  bool list = false, json = false, gpu = false;
  uint32_t threads = 1, reps = bench::kAutoReps, llc_mib = 0;
  bench::KvLayout layout = bench::KvLayout::kCache;
  int32_t device = -1;
  const char* svg = nullptr;
  const char* target = nullptr;
  // --model: a whole model (bench/model_runner.hpp). model_only_flag: the last flag given that
  // only --model takes, so that one without --model is refused by name.
  bench::ModelBenchOptions model;
  const char* model_only_flag = nullptr;
  bool reps_given = false;
  // --tokenize: a tokenizer's encode speed (bench_tokenize_command.cc).
  const char* tokenize = nullptr;
  const char* text_file = nullptr;
};

struct Machine {
  bool measured = false;  // false on the GPU backend: no roof
  bench::MachinePeak peak;
  uint64_t llc = 0;
  std::string target;  // cpu: the attention kernels' Highway target; gpu: the device
};

// 6 significant digits: more than any timing here resolves, and lines a person can read.
double sig6(double v);

// The pool of --threads (saying on stderr when this build runs one thread only).
Status make_pool(uint32_t threads, ThreadPool* pool);
// The last-level cache to size cold K/V and the read roof's buffer for: --llc-mib, else the OS's,
// else kAssumedLlc (said on stderr).
uint64_t llc_bytes(const Options& o);
// This run's roofs on `pool`, read over `buffer`, into *m (measured, peak).
Status measure_roofs(ThreadPool* pool, const bench::BenchBuffer& buffer, Machine* m);

// --model: the whole model's pp and tg tests (bench_model_command.cc).
Status run_model(Options& o);
// --tokenize: encode a megabyte of mixed text (or --text-file) on one thread (bench_tokenize_command.cc).
Status run_tokenize(const Options& o);

}  // namespace headway::cli::bench_command
