#include "bench/model_runner.hpp"

#include <sys/stat.h>

#include <chrono>
#include <cmath>
#include <random>

#include "bench/buffer.hpp"
#include "headway/arena.hpp"
#include "headway/tools/heap_count.hpp"
#include "headway/model.hpp"
#include "headway/tools/model_file.hpp"
#include "headway/plan.hpp"

namespace headway::bench {

struct ModelRunner::State {
  ModelBenchOptions options;
  ModelBenchInfo info;
  ModelFile file;
  Plan plan;
  BenchBuffer memory;  // the arena: huge pages, touched at allocation
  Arena arena;
  Model model;  // its layer objects are members: ~tens of KiB, on the heap with the State
  std::vector<int32_t> depth_ids, prompt_ids, gen_ids;
};

ModelRunner::ModelRunner() = default;
ModelRunner::~ModelRunner() { delete state_; }

const ModelBenchInfo& ModelRunner::info() const { return state_->info; }

namespace {

// The weights of the layers' matrices and of the model's, in elements.
struct ParamCounts {
  uint64_t layers = 0;     // every layer's: q (and its gates), k, v, o, or a Gated DeltaNet layer's
                           // projections and out_proj; gate, up, down
  uint64_t norms = 0;      // every RMSNorm weight (f32 in the arena)
  uint64_t embedding = 0;  // [vocab, d_model]
  bool tied = false;
};
ParamCounts param_counts(const Plan& p) {
  const Config& c = p.config;
  const uint64_t d = c.d_model;
  const uint64_t attention = d * (uint64_t{p.q_rows} + 2 * uint64_t{p.kv_width}) + uint64_t{p.q_width} * d;
  const uint64_t linear = d * uint64_t{p.linear_row} + uint64_t{c.gated_delta.value_width()} * d;
  ParamCounts n;
  n.layers = attention * (c.n_layers - p.linear_layers) + linear * p.linear_layers +
             3 * d * c.model.intermediate_size * c.n_layers;
  n.norms = (2 * uint64_t{c.n_layers} + 1) * d;
  n.embedding = uint64_t{c.model.vocab_size} * d;
  n.tied = c.model.tie_word_embeddings;
  return n;
}

double mean(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x;
  return v.empty() ? 0.0 : s / static_cast<double>(v.size());
}
// The sample standard deviation (n − 1), as llama-bench's; 0 for one sample.
double stddev(const std::vector<double>& v) {
  if (v.size() < 2) return 0.0;
  const double m = mean(v);
  double s = 0;
  for (double x : v) s += (x - m) * (x - m);
  return std::sqrt(s / static_cast<double>(v.size() - 1));
}

}  // namespace

Status ModelRunner::init(const ModelBenchOptions& o) {
  delete state_;
  state_ = new State;
  State& st = *state_;
  st.options = o;
  if (o.path == nullptr) return Status::error(Code::kInvalidArgument, "--model FILE is required");
  if (o.n_prompt == 0 && o.n_gen == 0) {
    return Status::error(Code::kInvalidArgument, "--prompt 0 and --tokens 0: no test to run");
  }
  HEADWAY_RETURN_IF_ERROR(st.file.open(o.path));
  const Result<Config> config = st.file.config();
  if (!config.ok()) return config.status();
  Config c = config.value();
  const uint32_t longest = o.n_prompt > o.n_gen ? o.n_prompt : o.n_gen;
  const uint64_t ctx = uint64_t{o.n_depth} + longest;
  if (ctx > c.max_seq) {
    return Status::error(Code::kInvalidArgument,
                         "--depth %u and the longer test's %u tokens need a context of %llu tokens, the model's is %u "
                         "(%s)",
                         o.n_depth, longest, static_cast<unsigned long long>(ctx), c.max_seq, o.path);
  }
  c.max_seq = static_cast<uint32_t>(ctx);
  c.kv_dtype = o.kv_dtype;
  c.kv_rotation = o.kv_rotation;
  PlanOptions po;
  po.threads = o.pool ? o.pool->threads() : 1;
  po.weight_dtype = o.weight_dtype;
  po.weights_in_arena = o.weights_in_arena;
  const uint32_t chunk = o.n_depth > longest ? o.n_depth : longest;
  po.max_tokens = chunk < 512 ? chunk : 512;
  const Result<Plan> plan = make_plan(c, po);
  if (!plan.ok()) return plan.status();
  st.plan = plan.value();

  static const uint8_t kZeros[64] = {};
  HEADWAY_RETURN_IF_ERROR(
      st.memory.allocate("the model's arena", static_cast<size_t>(st.plan.arena_bytes), kZeros, sizeof(kZeros)));
  HEADWAY_RETURN_IF_ERROR(st.arena.bind(st.plan, st.memory.data(), st.memory.size()));
  LayerOptions lo;
  lo.pool = o.pool;
  HEADWAY_RETURN_IF_ERROR(st.model.init(st.arena, st.file.source(), lo));

  // The token ids, drawn once (std::mt19937 and a plain modulo: the same ids on every library).
  std::mt19937 rng(o.seed);
  const auto draw = [&](std::vector<int32_t>* ids, uint32_t n) {
    ids->resize(n);
    for (int32_t& id : *ids) id = static_cast<int32_t>(rng() % c.model.vocab_size);
  };
  draw(&st.depth_ids, o.n_depth);
  draw(&st.prompt_ids, o.n_prompt);
  draw(&st.gen_ids, o.n_gen);

  const ParamCounts n = param_counts(st.plan);
  const uint64_t wb = dtype_bytes(o.weight_dtype);
  ModelBenchInfo& info = st.info;
  struct stat file_stat {};
  if (::stat(o.path, &file_stat) == 0) info.file_bytes = static_cast<uint64_t>(file_stat.st_size);
  if (S_ISDIR(file_stat.st_mode)) {  // a Hugging Face directory: its tensors' bytes, as llama-bench's size
    const Result<ModelFile::WeightBytes> bytes = st.file.weight_bytes();
    if (!bytes.ok()) return bytes.status();
    info.file_bytes = bytes.value().total;
  }
  info.n_params = n.layers + n.norms + n.embedding * (n.tied ? 1 : 2);
  info.arena_bytes = st.plan.arena_bytes;
  if (o.weights_in_arena) {
    info.weight_bytes = (n.layers + n.embedding * (n.tied ? 1 : 2)) * wb + n.norms * sizeof(float);
    info.read_bytes_per_tok = (n.layers + n.embedding) * wb + n.norms * sizeof(float);
  } else {
    const Result<ModelFile::WeightBytes> bytes = st.file.weight_bytes();
    if (!bytes.ok()) return bytes.status();
    info.weight_bytes = bytes.value().total;
    info.read_bytes_per_tok = bytes.value().per_token;
  }
  info.kv_bytes_per_tok = st.plan.kv_bytes_per_token;
  info.state_bytes = st.plan.linear_state_bytes;
  info.matmul_flops_per_tok = 2 * (n.layers + n.embedding);
  info.n_ubatch = st.plan.max_tokens;
  info.n_ctx = c.max_seq;
  info.n_vocab = c.model.vocab_size;
  info.n_layers = c.n_layers;
  return Status();
}

Result<ModelTestResult> ModelRunner::run(ModelTest test) {
  if (state_ == nullptr || !state_->model.initialized()) {
    return Status(Status::error(Code::kFailedPrecondition, "model bench: run before init"));
  }
  State& st = *state_;
  const ModelBenchOptions& o = st.options;
  Model& model = st.model;
  ModelTestResult r;
  r.test = test;
  r.n_depth = o.n_depth;
  const bool pp = test == ModelTest::kPrompt;
  const uint32_t n = pp ? o.n_prompt : o.n_gen;
  if (pp) r.n_prompt = n;
  else r.n_gen = n;
  if (n == 0) return Status(Status::error(Code::kInvalidArgument, "model bench: a test of 0 tokens"));
  r.samples_ns.assign(o.reps, 0.0);
  r.samples_ts.assign(o.reps, 0.0);

  // One test: the prefill of the prompt, or the decode steps one token at a time.
  const auto body = [&]() -> Status {
    if (pp) return model.prefill(st.prompt_ids.data(), n);
    for (uint32_t i = 0; i < n; ++i) HEADWAY_RETURN_IF_ERROR(model.decode(st.gen_ids[i]));
    return Status();
  };

  // The warm-up: the test once, from an empty context.
  model.reset();
  HEADWAY_RETURN_IF_ERROR(body());

  long heap_calls = 0;
  for (uint32_t rep = 0; rep < o.reps; ++rep) {
    model.reset();
    if (o.n_depth > 0) HEADWAY_RETURN_IF_ERROR(model.prefill(st.depth_ids.data(), o.n_depth));
    HeapCount heap;
    const auto t0 = std::chrono::steady_clock::now();
    const Status s = body();
    const auto t1 = std::chrono::steady_clock::now();
    heap_calls += heap.stop();
    HEADWAY_RETURN_IF_ERROR(s);
    const double ns = std::chrono::duration<double, std::nano>(t1 - t0).count();
    r.samples_ns[rep] = ns;
    r.samples_ts[rep] = ns > 0 ? n * 1e9 / ns : 0.0;
  }
  model.reset();
  r.heap_calls = heap_calls;
  r.avg_ns = mean(r.samples_ns);
  r.stddev_ns = stddev(r.samples_ns);
  r.avg_ts = mean(r.samples_ts);
  r.stddev_ts = stddev(r.samples_ts);
  return r;
}

}  // namespace headway::bench
