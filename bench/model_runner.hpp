// Times a whole model from a GGUF the way llama.cpp's llama-bench does, so the two can run side
// by side on the same file (`headway bench --model FILE`, bench/command/bench_command.cc):
//
//   pp  prompt processing: one prefill of n_prompt tokens after a context of n_depth tokens
//   tg  text generation:   n_gen single-token decodes after a context of n_depth tokens
//
// Each test runs one untimed warm-up (the same test without the depth context), then `reps`
// timed repetitions. A repetition empties the model (Model::reset), prefills the depth context
// outside the timed region, and times the prefill (pp) or the decode loop (tg) with
// std::chrono::steady_clock. The figure is llama-bench's: tokens/s of each repetition, their mean
// and sample standard deviation. Token ids are drawn before anything is timed, uniformly over the
// vocabulary from a fixed seed (llama-bench draws random tokens too); nothing is sampled from
// the logits. The timed loops make no heap call (counted: ModelTestResult::heap_calls).
//
// The model is planned for depth + max(n_prompt, n_gen) tokens of context, at most 512 tokens per
// prefill chunk (llama-bench's default micro-batch), and lives in one arena allocated and touched
// before any timing.
#pragma once

#include <cstdint>
#include <vector>

#include "headway/config.hpp"
#include "headway/dtype.hpp"
#include "headway/status.hpp"
#include "headway/thread_pool.hpp"

namespace headway::bench {

struct ModelBenchOptions {
  const char* path = nullptr;  // a GGUF file ModelFile reads
  uint32_t n_prompt = 512;     // pp test's prompt; 0: no pp test
  uint32_t n_gen = 128;        // tg test's tokens; 0: no tg test
  uint32_t n_depth = 0;        // context before either test
  ThreadPool* pool = nullptr;  // the caller's, for the whole run; null: one thread
  uint32_t reps = 5;
  DType kv_dtype = DType::kF16;
  KvRotation kv_rotation = KvRotation::kNone;  // Config::kv_rotation
  // false: the weights stay in the file in its own types (a GGUF's blocks); true: converted into
  // the arena in weight_dtype.
  bool weights_in_arena = false;
  DType weight_dtype = DType::kF32;
  uint32_t seed = 1234;  // of the random token ids
};

// What a model run is over: the file and the plan made from it.
struct ModelBenchInfo {
  uint64_t file_bytes = 0;
  uint64_t n_params = 0;              // every weight of the model (the embedding counted once when tied)
  uint64_t arena_bytes = 0;           // the plan's arena: weights, KV cache, activations, scratch
  uint64_t weight_bytes = 0;          // the weights as the run keeps them: the file's, or weight_dtype's (norms f32)
  uint64_t read_bytes_per_tok = 0;    // weight bytes one decode step reads: every matrix but the embedding
                                      // lookup (the LM head once, tied or not), and the norms
  uint64_t kv_bytes_per_tok = 0;      // K and V of one token, all layers (kv_dtype)
  uint64_t state_bytes = 0;           // the Gated DeltaNet layers' states and windows, which a decode
                                      // step reads and writes whole, whatever the context
  uint64_t matmul_flops_per_tok = 0;  // 2 · the matrices' weights (attention itself not counted)
  uint32_t n_ubatch = 0;              // tokens per prefill chunk
  uint32_t n_ctx = 0;                 // the context planned
  uint32_t n_vocab = 0;
  uint32_t n_layers = 0;
};

enum class ModelTest : uint8_t { kPrompt, kGen };

struct ModelTestResult {
  ModelTest test = ModelTest::kPrompt;
  uint32_t n_prompt = 0, n_gen = 0, n_depth = 0;
  std::vector<double> samples_ns;  // one per repetition
  std::vector<double> samples_ts;  // tokens/s of each
  double avg_ns = 0, stddev_ns = 0;
  double avg_ts = 0, stddev_ts = 0;
  long heap_calls = 0;  // inside the timed regions, all repetitions
};

class ModelRunner {
 public:
  ModelRunner();
  ~ModelRunner();
  ModelRunner(const ModelRunner&) = delete;
  ModelRunner& operator=(const ModelRunner&) = delete;

  // Opens the file, plans the model for the options' context (an error when depth + the longer
  // test exceeds the model's context, naming both), allocates and binds the arena, copies the
  // weights in and draws the token ids.
  Status init(const ModelBenchOptions& options);
  const ModelBenchInfo& info() const;

  // Runs one test: warm-up, then options.reps timed repetitions.
  Result<ModelTestResult> run(ModelTest test);

  struct State;

 private:
  State* state_ = nullptr;
};

}  // namespace headway::bench
