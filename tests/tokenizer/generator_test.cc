// Generator: a tiny random decoder with a byte-level BPE of its vocabulary. Its ids and text are
// those of the loop written out (prefill, then sample, decode, run), greedy and sampled; it stops
// at the end token, the budget and a full context; start and next make no heap call; calls in
// the wrong state and bad input are errors that change nothing.
#include "headway/tools/generator.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "headway/arena.hpp"
#include "headway/tools/heap_count.hpp"
#include "headway/model.hpp"
#include "headway/plan.hpp"
#include "headway/thread_pool.hpp"
#include "tests/reference/reference_layer.hpp"
#include "tests/support/temp_dir.hpp"

namespace headway {
namespace {

constexpr uint32_t kVocab = 257;  // the 256 byte tokens and <|sep|>
constexpr uint32_t kContext = 24;

// GPT-2's bytes_to_unicode: byte b's character in a byte-level vocabulary, as UTF-8.
std::string byte_char(int b) {
  int cp = b;
  if (!((b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF))) {
    int n = 0;
    for (int c = 0; c < b; ++c) n += !((c >= '!' && c <= '~') || (c >= 0xA1 && c <= 0xAC) || (c >= 0xAE && c <= 0xFF));
    cp = 256 + n;
  }
  std::string s;
  if (cp < 0x80) {
    s += static_cast<char>(cp);
  } else {
    s += static_cast<char>(0xC0 | (cp >> 6));
    s += static_cast<char>(0x80 | (cp & 0x3F));
  }
  return s;
}

std::string json_string(const std::string& s) {
  std::string o = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') o += '\\';
    o += c;
  }
  return o + "\"";
}

void write(const std::string& path, const std::string& text) {
  std::ofstream f(path, std::ios::binary);
  f << text;
}

// A byte-level BPE without merges: id b is byte b, 256 the special <|sep|> (not a name taken for an
// end of turn). eos: a token's text for a tokenizer_config.json beside it, or none.
Tokenizer load_tokenizer(const test::TempDir& dir, const std::string& eos) {
  std::string j =
      "{\"version\":\"1.0\",\"added_tokens\":[{\"id\":256,\"content\":\"<|sep|>\",\"single_word\":false,"
      "\"lstrip\":false,\"rstrip\":false,\"normalized\":false,\"special\":true}],\"normalizer\":null,"
      "\"pre_tokenizer\":{\"type\":\"ByteLevel\",\"add_prefix_space\":false,\"trim_offsets\":true,"
      "\"use_regex\":true},\"post_processor\":null,\"decoder\":{\"type\":\"ByteLevel\"},"
      "\"model\":{\"type\":\"BPE\",\"vocab\":{";
  for (int b = 0; b < 256; ++b) j += (b ? "," : "") + json_string(byte_char(b)) + ":" + std::to_string(b);
  write(dir / "tokenizer.json", j + "},\"merges\":[]}}");
  if (!eos.empty()) write(dir / "tokenizer_config.json", "{\"eos_token\":" + json_string(eos) + "}");
  Result<Tokenizer> t = Tokenizer::from_tokenizer_json((dir / "tokenizer.json").c_str());
  INFO(t.status().message());
  REQUIRE(t.ok());
  REQUIRE(t.value().vocab_size() == kVocab);
  return std::move(t.value());
}

// The tiny decoder's weights, made on demand from (tensor, layer, row, column): uniform values
// scaled by 1/sqrt(in_features), norms near 1; each layer's attention from the reference's helper.
float weight(ModelTensor t, uint32_t layer, TensorShape shape, uint64_t row, uint32_t col) {
  uint64_t h = ((uint64_t{static_cast<uint8_t>(t)} * 131 + layer) * 1000003 + row) * 65537 + col;
  h ^= h >> 33;  // SplitMix64's finalizer
  h *= 0xff51afd7ed558ccdULL;
  h ^= h >> 33;
  h *= 0xc4ceb9fe1a85ec53ULL;
  h ^= h >> 33;
  const double u = static_cast<double>(h >> 11) * 0x1.0p-53 * 2.0 - 1.0;  // [-1, 1)
  return static_cast<float>(shape.rows == 1 ? 1.0 + 0.1 * u : 5.0 * u / std::sqrt(double(shape.cols)));
}

struct Weights {
  Config config;
  std::vector<test::TestLayerWeights> attention;

  Weights() {
    Config& c = config;
    c.set_name("tiny-generator");
    c.d_model = 32;
    c.n_heads = 4;
    c.n_kv_heads = 2;
    c.head_dim = 8;
    c.max_seq = kContext;
    c.n_layers = 2;
    c.rope.style = RopeStyle::kNeox;
    c.kv_dtype = DType::kF32;
    c.model.vocab_size = kVocab;
    c.model.intermediate_size = 48;
    c.model.norm = NormKind::kRms;
    c.model.norm_eps = 1e-5f;
    c.model.mlp = MlpKind::kSwiGlu;
    c.model.tie_word_embeddings = false;
    for (uint32_t l = 0; l < c.n_layers; ++l) attention.push_back(test::make_test_weights(c, DType::kF32, 31 + l));
  }

  static Status rows(void*, ModelTensor t, uint32_t layer, TensorShape shape, uint64_t first, uint64_t n, float* dst) {
    for (uint64_t r = 0; r < n; ++r) {
      for (uint32_t c = 0; c < shape.cols; ++c) dst[r * shape.cols + c] = weight(t, layer, shape, first + r, c);
    }
    return Status();
  }
  static Result<LayerWeights> layer(void* ctx, uint32_t l) { return static_cast<Weights*>(ctx)->attention[l].view; }
};

struct Instance {
  Weights weights;
  Plan plan{};
  void* buffer = nullptr;
  Arena arena;
  ThreadPool pool;
  Model model;
  ~Instance() { std::free(buffer); }
};

std::unique_ptr<Instance> make_instance() {
  auto m = std::make_unique<Instance>();
  Result<Plan> plan = make_plan(m->weights.config, PlanOptions{});
  INFO(plan.status().message());
  REQUIRE(plan.ok());
  m->plan = plan.value();
  m->buffer = std::aligned_alloc(kAlignment, align_up(m->plan.arena_bytes));
  REQUIRE(m->arena.bind(m->plan, m->buffer, align_up(m->plan.arena_bytes)).ok());
  REQUIRE(m->pool.create(1).ok());
  LayerOptions options;
  options.pool = &m->pool;
  const ModelWeightsSource source{&m->weights, &Weights::layer, &Weights::rows};
  REQUIRE(m->model.init(m->arena, source, options).ok());
  return m;
}

SamplerParams greedy() {
  SamplerParams p;
  p.temperature = 0.0f;
  return p;
}

SamplerParams sampled(uint64_t seed) {
  SamplerParams p;
  p.temperature = 0.9f;
  p.top_k = 40;
  p.top_p = 0.95f;
  p.repetition_penalty = 1.1f;
  p.seed = seed;
  return p;
}

// The loop written out: prefill, then per token sample over the ids so far, run it unless it is
// the last (no end token here: the tokenizer has none).
std::vector<int32_t> loop_ids(Instance& m, const std::vector<int32_t>& prompt, uint32_t tokens,
                              const SamplerParams& params) {
  Sampler sampler;
  REQUIRE(sampler.init(params, kVocab, m.arena.sampler_scratch(), Sampler::scratch_bytes(kVocab)).ok());
  m.model.reset();
  REQUIRE(m.model.prefill(prompt.data(), static_cast<uint32_t>(prompt.size())).ok());
  std::vector<int32_t> all = prompt;
  for (uint32_t i = 0; i < tokens; ++i) {
    const Result<int32_t> id = sampler.sample(m.model.logits(), all.data(), all.size());
    REQUIRE(id.ok());
    all.push_back(id.value());
    if (i + 1 < tokens) REQUIRE(m.model.decode(id.value()).ok());
  }
  return std::vector<int32_t>(all.begin() + static_cast<std::ptrdiff_t>(prompt.size()), all.end());
}

struct Run {
  std::vector<int32_t> ids;
  std::string text;
  size_t steps = 0;
  long heap_calls = 0;  // in start() and the next() calls
};

Run generate(Generator& g, Model& model, const std::vector<int32_t>& prompt, uint32_t tokens,
             const SamplerParams& params) {
  model.reset();
  std::vector<char> piece(g.piece_bytes());
  Run r;
  r.text.reserve(size_t{tokens} * g.piece_bytes());
  HeapCount heap;
  Status s = g.start(prompt.data(), prompt.size(), tokens, params);
  for (bool done = !s.ok(); !done; ++r.steps) {
    size_t len = 0;
    s = g.next(piece.data(), piece.size(), &len, &done);
    if (!s.ok()) break;
    r.text.append(piece.data(), len);
  }
  r.heap_calls = heap.stop();
  INFO(s.message());
  REQUIRE(s.ok());
  r.ids.assign(g.ids() + g.n_prompt(), g.ids() + g.n_ids());
  CHECK(r.ids.size() == g.n_generated());
  return r;
}

const std::vector<int32_t> kPrompt = {'h', 'e', 'l', 'l', 'o', ' '};

TEST_CASE("generator: the ids and text of the loop written out, greedy and sampled, and no heap call") {
  test::TempDir dir("generator");
  Tokenizer tok = load_tokenizer(dir, "");
  auto m = make_instance();
  Generator g;
  REQUIRE(g.init(&m->model, m->arena, &tok).ok());
  CHECK(g.piece_bytes() >= 2 * 3 + 8 + 3);
  for (const SamplerParams& params : {greedy(), sampled(1), sampled(2)}) {
    const std::vector<int32_t> want = loop_ids(*m, kPrompt, 10, params);
    const Run run = generate(g, m->model, kPrompt, 10, params);
    CHECK(run.heap_calls == 0);
    CHECK(run.ids == want);
    CHECK(run.steps == 10);
    std::string text;
    REQUIRE(tok.decode(want.data(), want.size(), &text).ok());
    CHECK(run.text == text);
    // The last token is sampled, never run: the cache holds the prompt and 9 tokens.
    CHECK(m->model.position() == kPrompt.size() + 9);
    // The same seed again: the same ids.
    CHECK(generate(g, m->model, kPrompt, 10, params).ids == want);
  }
}

TEST_CASE("generator: stops at the end token, the budget and a full context") {
  test::TempDir plain("generator");
  Tokenizer tok = load_tokenizer(plain, "");
  auto m = make_instance();
  const std::vector<int32_t> want = loop_ids(*m, kPrompt, 8, sampled(3));

  // The tokenizer's eos: the 4th sampled token; generation ends at its first occurrence, its text
  // unwritten.
  test::TempDir with_eos("generator_eos");
  const int32_t eos = want[3];
  Tokenizer tok_eos = load_tokenizer(with_eos, std::string(tok.token_text(eos)));
  REQUIRE(tok_eos.eos_id() == eos);
  size_t first = 0;
  while (want[first] != eos) ++first;
  Generator g;
  REQUIRE(g.init(&m->model, m->arena, &tok_eos).ok());
  const Run run = generate(g, m->model, kPrompt, 8, sampled(3));
  CHECK(run.ids == std::vector<int32_t>(want.begin(), want.begin() + static_cast<std::ptrdiff_t>(first) + 1));
  std::string text;
  REQUIRE(tok.decode(want.data(), first, &text).ok());
  CHECK(run.text == text);

  // Budget 0: nothing sampled. A full context: 24 - 20 = 4 tokens run, a 5th sampled.
  REQUIRE(g.init(&m->model, m->arena, &tok).ok());
  CHECK(generate(g, m->model, kPrompt, 0, greedy()).ids.empty());
  const std::vector<int32_t> long_prompt(20, 'a');
  CHECK(generate(g, m->model, long_prompt, 100, greedy()).ids.size() == 5);
  CHECK(m->model.position() == kContext);

  // After done, next writes nothing and says done.
  std::vector<char> piece(g.piece_bytes());
  size_t len = 1;
  bool done = false;
  CHECK(g.next(piece.data(), piece.size(), &len, &done).ok());
  CHECK((len == 0 && done));
}

TEST_CASE("generator: wrong state and bad input are errors that change nothing") {
  test::TempDir dir("generator");
  Tokenizer tok = load_tokenizer(dir, "");
  auto m = make_instance();
  Generator g;
  std::vector<char> piece(64);
  size_t len = 0;
  bool done = false;
  CHECK(g.start(kPrompt.data(), kPrompt.size(), 4, greedy()).code() == Code::kFailedPrecondition);
  Model uninitialized;
  CHECK(g.init(&uninitialized, m->arena, &tok).code() == Code::kFailedPrecondition);
  REQUIRE(g.init(&m->model, m->arena, &tok).ok());
  CHECK(g.next(piece.data(), piece.size(), &len, &done).code() == Code::kFailedPrecondition);

  m->model.reset();
  CHECK(g.start(kPrompt.data(), 0, 4, greedy()).code() == Code::kInvalidArgument);
  SamplerParams bad = greedy();
  bad.temperature = -1.0f;
  const Status s = g.start(kPrompt.data(), kPrompt.size(), 4, bad);
  CHECK(s.code() == Code::kInvalidArgument);
  CHECK(std::string(s.message()).find("temperature") != std::string::npos);
  const std::vector<int32_t> too_long(kContext + 1, 'a');
  CHECK(g.start(too_long.data(), too_long.size(), 4, greedy()).code() == Code::kOutOfRange);
  const int32_t outside[] = {1, static_cast<int32_t>(kVocab)};
  CHECK(g.start(outside, 2, 4, greedy()).code() == Code::kInvalidArgument);
  CHECK(m->model.position() == 0);
  CHECK(!g.started());

  REQUIRE(g.start(kPrompt.data(), kPrompt.size(), 4, greedy()).ok());
  const Status small = g.next(piece.data(), g.piece_bytes() - 1, &len, &done);
  CHECK(small.code() == Code::kInvalidArgument);
  CHECK(std::string(small.message()).find("piece buffer") != std::string::npos);
  CHECK(m->model.position() == kPrompt.size());
}

}  // namespace
}  // namespace headway
