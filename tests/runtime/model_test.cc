// Model: a whole pre-norm decoder in one arena, against a double-precision reference built from
// the reference attention block (embedding, RMSNorm, SwiGLU, final norm, tied or separate head);
// decode token by token equals one prefill; no heap during prefill and decode; bad ids and a
// prompt past the context change nothing.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "headway/arena.hpp"
#include "headway/tools/heap_count.hpp"
#include "headway/model.hpp"
#include "headway/plan.hpp"
#include "headway/thread_pool.hpp"
#include "tests/reference/reference_model.hpp"
#include "tests/support/tiny_model.hpp"

namespace headway {
namespace {

Config model_config(bool tied) { return test::tiny_model_config(tied); }
using Weights = test::TinyWeights;

// The reference: every token from position 0, logits of each [t, vocab] in double.
std::vector<double> reference_logits(Weights& w, const std::vector<int32_t>& ids) {
  const Config& c = w.config;
  test::RefModelWeights r;
  for (const ModelTensorInfo& info : kModelTensors) {
    if (!model_has_tensor(c, info.tensor)) continue;
    for (uint32_t l = 0; l < (info.per_layer ? c.n_layers : 1); ++l) {
      const std::vector<float>& v = w.of(info.tensor, l);
      r.tensor[static_cast<uint32_t>(info.tensor)].emplace_back(v.begin(), v.end());
    }
  }
  for (uint32_t l = 0; l < c.n_layers; ++l) r.attention.push_back(w.attention[l].ref);
  return test::RefModel(c, std::move(r)).forward(ids);
}

using Instance = test::TinyModel;

std::unique_ptr<Instance> make(Weights& w, PlanOptions o, ThreadPool* pool) {
  auto m = std::make_unique<Instance>();
  const Status s = m->init(w, o, pool);
  REQUIRE_MESSAGE(s.ok(), s.message());
  return m;
}

std::vector<int32_t> prompt(uint32_t n, uint64_t seed) { return test::tiny_prompt(n, seed); }

TEST_CASE("Model: every position's logits equal the double reference, tied and separate heads, 1 and 2 threads") {
  for (bool tied : {true, false}) {
    for (uint32_t threads : {1u, 2u}) {
      INFO("tied " << tied << ", threads " << threads);
      Weights w(model_config(tied), 7);
      ThreadPool pool;
      REQUIRE(pool.create(threads).ok());
      PlanOptions o;
      o.threads = threads;
      o.max_tokens = 5;  // the prompt runs in chunks
      o.all_logits = true;
      auto m = make(w, o, &pool);
      const std::vector<int32_t> ids = prompt(13, 3);
      std::vector<float> got(ids.size() * 50);
      REQUIRE(m->model.prefill(ids.data(), 13, got.data()).ok());
      const std::vector<double> want = reference_logits(w, ids);
      double err = 0;
      for (size_t i = 0; i < got.size(); ++i) err = std::fmax(err, std::fabs(got[i] - want[i]));
      CHECK(err < 1e-4);
      CHECK(std::memcmp(m->model.logits(), got.data() + 12 * 50, 50 * sizeof(float)) == 0);
      CHECK(m->model.position() == 13);
    }
  }
}

TEST_CASE("Model: a prefill split over two threads gives one thread's logits bitwise, with no heap call") {
  // Chunks of 40 tokens: the row steps (residual adds and norms, the MLP's activation), the K/V
  // append and the queries' RoPE split into tasks of 16 rows or tokens, the last one short.
  for (int variant = 0; variant < 3; ++variant) {
    Config c = model_config(variant != 1);
    c.max_seq = 64;
    if (variant == 1) c.model.sandwich_norm = true;  // the output norms in the residual step
    if (variant == 2) {                              // a sliding ring that wraps within the prompt
      c.window = 12;
      c.sink_tokens = 1;
      c.layers.sliding_pattern = 2;
    }
    INFO("variant " << variant);
    Weights w(c, 13 + variant);
    PlanOptions o;
    o.max_tokens = 40;
    o.all_logits = true;
    const std::vector<int32_t> ids = prompt(60, 17);
    std::vector<float> logits[2];
    for (uint32_t threads : {1u, 2u}) {
      ThreadPool pool;
      REQUIRE(pool.create(threads).ok());
      o.threads = threads;
      auto m = make(w, o, &pool);
      std::vector<float>& got = logits[threads - 1];
      got.resize(ids.size() * 50);
      HeapCount heap;
      REQUIRE(m->model.prefill(ids.data(), 60, got.data()).ok());
      CHECK(heap.stop() == 0);
    }
    CHECK(std::memcmp(logits[0].data(), logits[1].data(), logits[0].size() * sizeof(float)) == 0);
    if (variant == 0) {
      const std::vector<double> want = reference_logits(w, ids);
      double err = 0;
      for (size_t i = 0; i < want.size(); ++i) err = std::fmax(err, std::fabs(logits[1][i] - want[i]));
      CHECK(err < 1e-4);
    }
  }
}

TEST_CASE("Model: decode token by token gives the prefill's last logits, with no heap call") {
  Weights w(model_config(true), 9);
  PlanOptions o;
  o.max_tokens = 8;
  auto one = make(w, o, nullptr);
  auto step = make(w, o, nullptr);
  const std::vector<int32_t> ids = prompt(11, 5);
  REQUIRE(one->model.prefill(ids.data(), 11).ok());
  {
    HeapCount heap;
    REQUIRE(step->model.prefill(ids.data(), 4).ok());
    for (uint32_t i = 4; i < 11; ++i) REQUIRE(step->model.decode(ids[i]).ok());
    CHECK(heap.stop() == 0);
  }
  double err = 0;
  for (uint32_t v = 0; v < 50; ++v) err = std::fmax(err, std::fabs(one->model.logits()[v] - step->model.logits()[v]));
  CHECK(err < 1e-5);
  step->model.reset();
  CHECK(step->model.position() == 0);
}

TEST_CASE("Model: an id outside the vocabulary, a prompt past the context, or every logit unplanned change nothing") {
  Weights w(model_config(false), 11);
  auto m = make(w, PlanOptions{}, nullptr);
  const std::vector<int32_t> ids = prompt(6, 8);
  REQUIRE(m->model.prefill(ids.data(), 6).ok());
  std::vector<float> before(m->model.logits(), m->model.logits() + 50);
  const int32_t bad[] = {3, 50};
  Status s = m->model.prefill(bad, 2);
  CHECK(s.code() == Code::kInvalidArgument);
  CHECK(std::string(s.message()) == "model: token id 50 at position 1 is outside the vocabulary (0..49)");
  const int32_t negative = -1;
  CHECK(m->model.decode(negative).code() == Code::kInvalidArgument);
  const std::vector<int32_t> long_prompt = prompt(19, 2);
  s = m->model.prefill(long_prompt.data(), 19);
  CHECK(s.code() == Code::kOutOfRange);
  CHECK(std::string(s.message()) == "model: 19 tokens at position 6 go past the context of 24 tokens (max_seq)");
  std::vector<float> all(6 * 50);
  CHECK(m->model.prefill(ids.data(), 6, all.data()).code() == Code::kInvalidArgument);
  CHECK(m->model.position() == 6);
  CHECK(std::memcmp(before.data(), m->model.logits(), 50 * sizeof(float)) == 0);
}

// ---- State: save_state / load_state ----

std::vector<uint8_t> save(const Model& m) {
  std::vector<uint8_t> bytes(m.state_bytes());
  size_t written = 0;
  const Status s = m.save_state(bytes.data(), bytes.size(), &written);
  REQUIRE_MESSAGE(s.ok(), s.message());
  CHECK(written == bytes.size());
  return bytes;
}

bool same_logits(const Model& a, const Model& b) {
  return std::memcmp(a.logits(), b.logits(), 50 * sizeof(float)) == 0;
}

TEST_CASE("Model state: a restored model goes on bitwise as if it had never stopped, with no heap call") {
  for (DType kv : {DType::kF32, DType::kF16, DType::kQ8_0}) {
    INFO("kv " << dtype_name(kv));
    Config c = model_config(true);
    c.kv_dtype = kv;
    Weights w(c, 21);
    PlanOptions o;
    o.max_tokens = 8;
    auto a = make(w, o, nullptr);
    auto b = make(w, o, nullptr);  // a fresh model in a fresh arena
    const std::vector<int32_t> ids = prompt(11, 4);
    REQUIRE(a->model.prefill(ids.data(), 11).ok());
    std::vector<uint8_t> bytes(a->model.state_bytes());
    {
      HeapCount heap;
      size_t written = 0;
      REQUIRE(a->model.save_state(bytes.data(), bytes.size(), &written).ok());
      CHECK(written == bytes.size());
      const Status s = b->model.load_state(bytes.data(), bytes.size());
      REQUIRE_MESSAGE(s.ok(), s.message());
      CHECK(heap.stop() == 0);
    }
    // Only the rows in use: 11 of 24 per layer, K and V, 2 kv heads.
    const uint64_t rows = 2 * uint64_t{2} * 2 * 11 * dtype_row_bytes(kv, 8);
    CHECK(bytes.size() == 64 + 2 * 16 + rows + 50 * 4 + 8);
    CHECK(b->model.position() == 11);
    CHECK(same_logits(a->model, b->model));
    for (int32_t next : {7, 3, 41}) {
      REQUIRE(a->model.decode(next).ok());
      REQUIRE(b->model.decode(next).ok());
      CHECK(same_logits(a->model, b->model));
    }
    CHECK(save(a->model) == save(b->model));
  }
}

TEST_CASE("Model state: a prompt's cached prefix and its rest give a full prefill's logits") {
  Weights w(model_config(false), 23);
  PlanOptions o;
  o.max_tokens = 8;
  auto full = make(w, o, nullptr);
  auto prefix = make(w, o, nullptr);
  auto reused = make(w, o, nullptr);
  const std::vector<int32_t> ids = prompt(17, 6);
  REQUIRE(full->model.prefill(ids.data(), 17).ok());
  REQUIRE(prefix->model.prefill(ids.data(), 6).ok());
  const std::vector<uint8_t> bytes = save(prefix->model);
  REQUIRE(reused->model.load_state(bytes.data(), bytes.size()).ok());
  REQUIRE(reused->model.prefill(ids.data() + 6, 11).ok());
  REQUIRE(prefix->model.prefill(ids.data() + 6, 11).ok());
  CHECK(same_logits(prefix->model, reused->model));  // the same calls: bitwise
  double err = 0;
  for (uint32_t v = 0; v < 50; ++v)
    err = std::fmax(err, std::fabs(full->model.logits()[v] - reused->model.logits()[v]));
  CHECK(err < 1e-5);
  // A state at position 0 (a reset model) holds no rows and no logits and loads as a reset.
  prefix->model.reset();
  const std::vector<uint8_t> empty = save(prefix->model);
  CHECK(empty.size() == 64 + 2 * 16 + 8);
  REQUIRE(reused->model.load_state(empty.data(), empty.size()).ok());
  CHECK(reused->model.position() == 0);
}

TEST_CASE("Model state: sliding-window rings, wrapped and with sink tokens, restore as they sit") {
  for (uint32_t sinks : {0u, 1u}) {
    INFO("sink tokens " << sinks);
    Config c = model_config(true);
    c.window = 4;
    c.sink_tokens = sinks;
    c.layers.sliding_pattern = 2;  // layer 0 slides, layer 1 is full
    Weights w(c, 25);
    PlanOptions o;
    o.max_tokens = 3;  // ring: sinks + 4 + 3 - 1 rows
    auto a = make(w, o, nullptr);
    auto b = make(w, o, nullptr);
    REQUIRE(a->plan.layer(0).sliding);
    const uint32_t ring = a->plan.layer(0).kv_rows;
    CHECK(ring == sinks + 6);
    const std::vector<int32_t> ids = prompt(15, 9);  // past the ring: it has wrapped
    REQUIRE(a->model.prefill(ids.data(), 15).ok());
    const std::vector<uint8_t> bytes = save(a->model);
    CHECK(bytes.size() == 64 + 2 * 16 + 2 * 2 * 8 * 4 * (ring + 15) + 50 * 4 + 8);
    REQUIRE(b->model.load_state(bytes.data(), bytes.size()).ok());
    for (int32_t next : {1, 2, 3, 4, 5, 6, 7}) {  // on through the ring's next wraps
      REQUIRE(a->model.decode(next).ok());
      REQUIRE(b->model.decode(next).ok());
      CHECK(same_logits(a->model, b->model));
    }
  }
}

TEST_CASE("Model state: another plan's, truncated, corrupt or foreign bytes are refused by name and change nothing") {
  Weights w(model_config(true), 27);
  PlanOptions o;
  o.max_tokens = 8;
  auto src = make(w, o, nullptr);
  const std::vector<int32_t> ids = prompt(11, 10);
  REQUIRE(src->model.prefill(ids.data(), 11).ok());
  const std::vector<uint8_t> good = save(src->model);

  auto m = make(w, o, nullptr);
  auto twin = make(w, o, nullptr);  // never offered a bad state
  REQUIRE(m->model.prefill(ids.data(), 4).ok());
  REQUIRE(twin->model.prefill(ids.data(), 4).ok());
  auto refused = [&](const void* bytes, size_t n, Code code, const std::string& message) {
    const Status s = m->model.load_state(bytes, n);
    CHECK(s.code() == code);
    CHECK(std::string(s.message()) == message);
    CHECK(m->model.position() == 4);
    CHECK(same_logits(m->model, twin->model));
  };
  const size_t n = good.size();
  const std::string size = std::to_string(n);
  refused(good.data(), 10, Code::kDataLoss, "state: 10 bytes, shorter than its 64-byte header (truncated)");
  refused(good.data(), 70, Code::kDataLoss, "state: 70 bytes, shorter than its header and 2 layer records (truncated)");
  refused(good.data(), n - 1, Code::kDataLoss,
          "state: " + std::to_string(n - 1) + " bytes, its header describes " + size + " (truncated)");
  std::vector<uint8_t> longer = good;
  longer.push_back(0);
  refused(longer.data(), longer.size(), Code::kDataLoss,
          "state: " + std::to_string(n + 1) + " bytes, its header describes " + size + " (trailing bytes)");
  refused(nullptr, n, Code::kInvalidArgument, "state: the buffer is null");

  std::vector<uint8_t> bad = good;
  bad[0] = 'G';
  refused(bad.data(), n, Code::kInvalidArgument,
          "state: not a headway state (its first bytes are 0x47 0x57 0x53 0x54, not \"HWST\")");
  bad = good;
  bad[4] = 2;  // version
  refused(bad.data(), n, Code::kUnsupported, "state: format version 2, this build reads version 1");
  bad = good;
  bad[200] ^= 0x10;  // a K row's bit
  {
    const Status s = m->model.load_state(bad.data(), n);
    CHECK(s.code() == Code::kDataLoss);
    const std::string msg = s.message();
    CHECK(msg.rfind("state: checksum ", 0) == 0);
    CHECK(msg.find("(corrupt)") != std::string::npos);
  }
  bad = good;
  bad[44] = 3;  // position 3 with the bytes of 11: the sizes disagree
  refused(bad.data(), n, Code::kDataLoss,
          "state: " + size + " bytes, its header describes " + std::to_string(n - 2 * 2 * 2 * 8 * 4 * 8) +
              " (trailing bytes)");

  // Other plans and models.
  auto other = [&](Config c, PlanOptions po, uint64_t seed, Code code, const std::string& message) {
    Weights w2(c, seed);
    auto s2 = make(w2, po, nullptr);
    REQUIRE(s2->model.prefill(ids.data(), 11).ok());
    const std::vector<uint8_t> bytes = save(s2->model);
    const Status s = m->model.load_state(bytes.data(), bytes.size());
    CHECK(s.code() == code);
    if (message.back() == '*') {
      CHECK(std::string(s.message()).rfind(message.substr(0, message.size() - 1), 0) == 0);
    } else {
      CHECK(std::string(s.message()) == message);
    }
    CHECK(m->model.position() == 4);
    CHECK(same_logits(m->model, twin->model));
  };
  Config c = model_config(true);
  c.kv_dtype = DType::kQ8_0;
  other(c, o, 27, Code::kInvalidArgument, "state: kv_dtype q8_0, this plan's f32");
  c = model_config(true);
  c.n_layers = 1;
  other(c, o, 27, Code::kInvalidArgument, "state: n_layers 1, this plan's 2");
  c = model_config(true);
  c.n_kv_heads = 4;
  other(c, o, 27, Code::kInvalidArgument, "state: n_kv_heads 4, this plan's 2");
  PlanOptions f16 = o;
  f16.weight_dtype = DType::kF16;
  other(model_config(true), f16, 27, Code::kInvalidArgument, "state: weight_dtype f16, this plan's f32");
  c = model_config(true);
  c.window = 4;
  c.layers.sliding_pattern = 2;
  other(c, o, 27, Code::kInvalidArgument, "state: layer 0 is sliding, this plan's is full");
  other(model_config(true), o, 28, Code::kInvalidArgument, "state: made with other weights (fingerprint *");
  c = model_config(true);
  c.max_seq = 40;
  Weights w40(c, 27);
  auto long_ctx = make(w40, o, nullptr);
  const std::vector<int32_t> long_ids = prompt(30, 11);
  REQUIRE(long_ctx->model.prefill(long_ids.data(), 30).ok());
  const std::vector<uint8_t> past = save(long_ctx->model);
  refused(past.data(), past.size(), Code::kOutOfRange,
          "state: position 30 is past this plan's context of 24 tokens (max_seq)");

  // A longer context's state whose position fits loads (full layers keep the rows in use only).
  long_ctx->model.reset();
  REQUIRE(long_ctx->model.prefill(ids.data(), 11).ok());
  const std::vector<uint8_t> fits = save(long_ctx->model);
  REQUIRE(m->model.load_state(fits.data(), fits.size()).ok());
  CHECK(m->model.position() == 11);
  CHECK(same_logits(m->model, src->model));

  // Saving into a short buffer writes nothing.
  std::vector<uint8_t> small(n - 1, 0xAB);
  size_t written = 7;
  const Status s = src->model.save_state(small.data(), small.size(), &written);
  CHECK(s.code() == Code::kOutOfRange);
  CHECK(std::string(s.message()) ==
        "state: the buffer holds " + std::to_string(n - 1) + " bytes, the state needs " + size);
  CHECK(written == 7);
  CHECK(small == std::vector<uint8_t>(n - 1, 0xAB));
  Model fresh;
  CHECK(fresh.state_bytes() == 0);
  CHECK(std::string(fresh.load_state(good.data(), n).message()) == "state: the model is not initialized");
}

TEST_CASE("Model config: validate() names what a model lacks") {
  Config c = model_config(true);
  c.model.mlp = MlpKind::kNone;
  CHECK(std::string(validate(c).message()) == "mlp none: a model's layers need their MLP (mlp swiglu, geglu or gelu)");
  c = model_config(true);
  c.model.sandwich_norm = true;
  c.model.norm = NormKind::kLayer;
  CHECK(std::string(validate(c).message()) ==
        "norms on each block's output (Gemma 2/3) come with pre-norm RMSNorm layers, not pre-norm layer");
  c = model_config(true);
  c.model.final_softcap = -1.0f;
  CHECK(std::string(validate(c).message()) == "final_logit_softcapping -1 must be 0 (off) or positive");
  c = model_config(true);
  c.model.padding_idx = 1;
  CHECK(std::string(validate(c).message()) ==
        "padding_idx 1 leaves no position of the 0 learned ones (max_position_embeddings)");
  c = model_config(true);
  c.model.norm_offset = NAN;
  CHECK(validate(c).code() == Code::kInvalidArgument);
  c = model_config(true);
  c.model.intermediate_size = 0;
  CHECK(std::string(validate(c).message()) == "intermediate_size is 0: the MLP needs its hidden width");
  c = model_config(true);
  c.model.vocab_size = 0;
  CHECK(validate(c).code() == Code::kInvalidArgument);
  c.model = ModelConfig{};
  CHECK(validate(c).ok());
  const Plan attention_only = plan_for(c, {});
  CHECK(attention_only.model_weights_bytes == 0);
  CHECK(attention_only.arena_bytes == attention_only.scratch_offset + attention_only.scratch_bytes);
}

}  // namespace
}  // namespace headway
