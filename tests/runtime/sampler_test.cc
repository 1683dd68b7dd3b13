// The sampler: parameter checks, greedy (ties to the lowest id), each filter on hand-made
// logits, penalties over the window, seeded reproducibility, draw frequencies against the
// filtered distribution (a chi-square bound, fixed seed), and no heap call after init.
// tests/torch/sampler_check.py compares the filtered distribution with transformers' warpers.
#include "headway/sampler.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "headway/tools/heap_count.hpp"

namespace headway {
namespace {

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();

struct Fixture {
  explicit Fixture(const SamplerParams& p, uint32_t n_vocab) : scratch(Sampler::scratch_bytes(n_vocab) / 4 + 1) {
    const Status s = sampler.init(p, n_vocab, scratch.data(), scratch.size() * 4);
    REQUIRE_MESSAGE(s.ok(), s.message());
  }
  std::vector<float> probs(const std::vector<float>& logits, const std::vector<int32_t>& recent = {}) {
    std::vector<float> p(logits.size(), -1.0f);
    const Status s = sampler.probabilities(logits.data(), recent.data(), recent.size(), p.data());
    REQUIRE_MESSAGE(s.ok(), s.message());
    return p;
  }
  int32_t sample(const std::vector<float>& logits, const std::vector<int32_t>& recent = {}) {
    const Result<int32_t> id = sampler.sample(logits.data(), recent.data(), recent.size());
    REQUIRE_MESSAGE(id.ok(), id.status().message());
    return id.value();
  }
  std::vector<uint32_t> scratch;
  Sampler sampler;
};

std::vector<float> log_of(const std::vector<float>& p) {
  std::vector<float> l;
  for (float v : p) l.push_back(std::log(v));
  return l;
}

SamplerParams greedy_params() {
  SamplerParams p;
  p.temperature = 0.0f;
  return p;
}

TEST_CASE("sampler: bad parameters name the parameter and the value") {
  struct Bad {
    SamplerParams p;
    const char* needle;
  };
  auto with = [](auto set) {
    SamplerParams p;
    set(p);
    return p;
  };
  const Bad bad[] = {
      {with([](SamplerParams& p) { p.temperature = -1.0f; }), "temperature -1 must be a finite number >= 0"},
      {with([](SamplerParams& p) { p.temperature = kNaN; }), "temperature nan"},
      {with([](SamplerParams& p) { p.temperature = kInf; }), "temperature inf"},
      {with([](SamplerParams& p) { p.top_p = 0.0f; }), "top_p 0 must be in (0, 1]"},
      {with([](SamplerParams& p) { p.top_p = 1.5f; }), "top_p 1.5 must be in (0, 1]"},
      {with([](SamplerParams& p) { p.top_p = kNaN; }), "top_p nan"},
      {with([](SamplerParams& p) { p.min_p = -0.25f; }), "min_p -0.25 must be in [0, 1]"},
      {with([](SamplerParams& p) { p.min_p = kNaN; }), "min_p nan"},
      {with([](SamplerParams& p) { p.repetition_penalty = 0.0f; }), "repetition_penalty 0 must be a positive finite"},
      {with([](SamplerParams& p) { p.repetition_penalty = kNaN; }), "repetition_penalty nan"},
      {with([](SamplerParams& p) { p.presence_penalty = -kInf; }), "presence_penalty -inf must be a finite number"},
  };
  std::vector<uint32_t> scratch(64);
  for (const Bad& b : bad) {
    Sampler s;
    const Status st = s.init(b.p, 16, scratch.data(), scratch.size() * 4);
    INFO(st.message());
    CHECK(st.code() == Code::kInvalidArgument);
    CHECK(std::string(st.message()).find(b.needle) != std::string::npos);
    CHECK(s.n_vocab() == 0);  // left as it was
  }
  Sampler s;
  CHECK(std::string(s.init({}, 0, scratch.data(), 256).message()).find("n_vocab 0") != std::string::npos);
  CHECK(std::string(s.init({}, 33, scratch.data(), 256).message())
            .find("scratch of 256 bytes; a vocabulary of 33 ids "
                  "needs 264") != std::string::npos);
  CHECK_FALSE(s.init({}, 8, nullptr, 256).ok());
  CHECK_FALSE(s.init({}, 8, reinterpret_cast<uint8_t*>(scratch.data()) + 1, 128).ok());
  const float logits[8] = {};
  CHECK(s.sample(logits, nullptr, 0).status().code() == Code::kFailedPrecondition);
}

TEST_CASE("sampler: bad logits and recent ids are errors") {
  Fixture f({}, 4);
  std::vector<float> p(4);
  const float nan_logit[4] = {0, kNaN, 0, 0};
  const float inf_logit[4] = {0, 0, kInf, 0};
  const float all_masked[4] = {-kInf, -kInf, -kInf, -kInf};
  const float ok[4] = {0, 1, 2, 3};
  const int32_t bad_id[2] = {1, 4};
  auto message = [&](const float* l, const int32_t* r, size_t n) {
    return std::string(f.sampler.probabilities(l, r, n, p.data()).message());
  };
  CHECK(message(nan_logit, nullptr, 0).find("logit 1 is nan") != std::string::npos);
  CHECK(message(inf_logit, nullptr, 0).find("logit 2 is inf") != std::string::npos);
  CHECK(message(all_masked, nullptr, 0).find("all 4 logits are -inf") != std::string::npos);
  CHECK(message(ok, bad_id, 2).find("recent id 4 (at 1) is outside the vocabulary of 4") != std::string::npos);
  CHECK_FALSE(f.sampler.probabilities(ok, nullptr, 0, nullptr).ok());
  CHECK_FALSE(f.sampler.sample(nullptr, nullptr, 0).ok());
}

TEST_CASE("sampler: greedy picks the argmax, ties to the lowest id, and draws nothing") {
  Fixture f(greedy_params(), 6);
  CHECK(f.sample({0.5f, 2.0f, -1.0f, 2.0f, 1.9f, -kInf}) == 1);
  CHECK(f.sample({-3.0f, -2.0f, -2.0f, -7.0f, -kInf, -2.5f}) == 1);
  CHECK(f.sample({-kInf, -kInf, -kInf, -kInf, -kInf, 0.0f}) == 5);
  const std::vector<float> p = f.probs({0.5f, 2.0f, -1.0f, 2.0f, 1.9f, -kInf});
  CHECK(p == std::vector<float>{0, 1, 0, 0, 0, 0});
  // A temperature so small that a logit overflows is greedy too.
  SamplerParams tiny;
  tiny.temperature = 1e-30f;
  Fixture t(tiny, 4);
  CHECK(t.sample({1e10f, 3e10f, 3e10f, -2.0f}) == 1);
}

TEST_CASE("sampler: temperature, top-k with ties, top-p and min-p on known distributions") {
  SUBCASE("temperature 2 is the square root of the distribution, renormalized") {
    SamplerParams p;
    p.temperature = 2.0f;
    Fixture f(p, 3);
    const std::vector<float> got = f.probs(log_of({0.64f, 0.32f, 0.04f}));
    const float z = 0.8f + std::sqrt(0.32f) + 0.2f;
    CHECK(got[0] == doctest::Approx(0.8f / z).epsilon(1e-6));
    CHECK(got[2] == doctest::Approx(0.2f / z).epsilon(1e-6));
  }
  SUBCASE("top-k keeps every id tied with the k-th") {
    SamplerParams p;
    p.top_k = 2;
    Fixture f(p, 6);
    const std::vector<float> got = f.probs({1.0f, 3.0f, 3.0f, 0.0f, 3.0f, 2.0f});
    CHECK(got[0] == 0.0f);
    CHECK(got[3] == 0.0f);
    CHECK(got[5] == 0.0f);
    for (int i : {1, 2, 4}) CHECK(got[static_cast<size_t>(i)] == doctest::Approx(1.0 / 3));
  }
  SUBCASE("top-p keeps an id while the probability before it is below top_p") {
    SamplerParams p;
    p.top_p = 0.75f;
    Fixture f(p, 4);
    const std::vector<float> got = f.probs(log_of({0.3f, 0.5f, 0.05f, 0.15f}));
    CHECK(got[1] == doctest::Approx(0.625));  // 0.5 / 0.8
    CHECK(got[0] == doctest::Approx(0.375));  // before it 0.5 < 0.75; after it 0.8: the rest go
    CHECK(got[2] == 0.0f);
    CHECK(got[3] == 0.0f);
    SamplerParams tiny;
    tiny.top_p = 1e-6f;  // the first id always stays
    Fixture g(tiny, 4);
    CHECK(g.probs(log_of({0.3f, 0.5f, 0.05f, 0.15f})) == std::vector<float>{0, 1, 0, 0});
  }
  SUBCASE("min-p removes ids below min_p times the largest probability") {
    SamplerParams p;
    p.min_p = 0.2f;
    Fixture f(p, 4);
    const std::vector<float> got = f.probs(log_of({0.05f, 0.5f, 0.15f, 0.3f}));  // threshold 0.1
    CHECK(got[0] == 0.0f);
    CHECK(got[1] == doctest::Approx(0.5 / 0.95));
    CHECK(got[2] == doctest::Approx(0.15 / 0.95));
  }
}

TEST_CASE("sampler: repetition and presence penalties over the window, each id once") {
  SamplerParams p = greedy_params();
  p.repetition_penalty = 2.0f;
  Fixture f(p, 3);
  // 2 -> 1 and -2 -> -4 once each although id 0 occurs twice; id 2 (logit 1.5) wins.
  CHECK(f.sample({2.0f, -2.0f, 1.5f}, {0, 1, 0}) == 2);
  CHECK(f.sample({2.0f, -2.0f, 1.5f}, {2, 1}) == 0);
  p.presence_penalty = 0.75f;
  p.repetition_penalty = 1.0f;
  p.penalty_window = 2;
  Fixture g(p, 3);
  CHECK(g.sample({2.0f, -2.0f, 1.5f}, {0, 1}) == 2);        // 2 - 0.75 = 1.25 < 1.5
  CHECK(g.sample({2.0f, -2.0f, 1.5f}, {0, 1, 1, 2}) == 0);  // the window is {1, 2}: id 0 is not penalized
  p.penalty_window = 0;
  Fixture none(p, 3);
  CHECK(none.sample({2.0f, -2.0f, 1.5f}, {0, 0}) == 0);
  // Both, on the distribution: logits [1, -1, 0], recent {0, 1}, penalty 2, presence 0.5 ->
  // [0, -2.5, 0].
  SamplerParams q;
  q.repetition_penalty = 2.0f;
  q.presence_penalty = 0.5f;
  Fixture h(q, 3);
  const std::vector<float> got = h.probs({1.0f, -1.0f, 0.0f}, {1, 0});
  const double e = std::exp(-2.5);
  CHECK(got[0] == doctest::Approx(1 / (2 + e)));
  CHECK(got[1] == doctest::Approx(e / (2 + e)));
  CHECK(got[2] == doctest::Approx(1 / (2 + e)));
}

std::vector<float> test_logits(uint32_t n, uint32_t salt) {
  std::vector<float> l(n);
  uint32_t x = 12345u + salt;
  for (float& v : l) {
    x = x * 1664525u + 1013904223u;
    v = static_cast<float>(x >> 8) / static_cast<float>(1u << 24) * 6.0f - 3.0f;
  }
  return l;
}

TEST_CASE("sampler: the same seed gives the same ids, another seed other ids") {
  SamplerParams p;
  p.temperature = 0.9f;
  p.top_k = 40;
  p.top_p = 0.95f;
  p.repetition_penalty = 1.1f;
  p.seed = 42;
  Fixture a(p, 1000), b(p, 1000);
  p.seed = 43;
  Fixture c(p, 1000);
  std::vector<int32_t> ra, rb, rc;
  for (uint32_t step = 0; step < 100; ++step) {
    const std::vector<float> l = test_logits(1000, step);
    ra.push_back(a.sample(l, ra));
    rb.push_back(b.sample(l, rb));
    rc.push_back(c.sample(l, rc));
  }
  CHECK(ra == rb);
  CHECK(ra != rc);
  a.sampler.reseed(42);
  std::vector<int32_t> again;
  for (uint32_t step = 0; step < 100; ++step) again.push_back(a.sample(test_logits(1000, step), again));
  CHECK(again == ra);
  // SplitMix64's first outputs for seed 0 (the reference stream), top 24 bits.
  Fixture z({}, 1);
  z.sampler.reseed(0);
  CHECK(z.sampler.next_uniform() == static_cast<float>(0xe220a8397b1dcdafull >> 40) * 0x1.0p-24f);
  CHECK(z.sampler.next_uniform() == static_cast<float>(0x6e789e6aa1b965f4ull >> 40) * 0x1.0p-24f);
}

TEST_CASE("sampler: draw frequencies follow the filtered distribution") {
  SamplerParams p;
  p.temperature = 0.8f;
  p.top_k = 12;
  p.top_p = 0.9f;
  p.min_p = 0.02f;
  p.seed = 7;
  Fixture f(p, 32);
  const std::vector<float> l = test_logits(32, 99);
  const std::vector<float> prob = f.probs(l);
  constexpr int kDraws = 100000;
  std::vector<int> count(32, 0);
  for (int i = 0; i < kDraws; ++i) ++count[static_cast<size_t>(f.sample(l))];
  double chi2 = 0;
  int kept = 0;
  for (size_t i = 0; i < 32; ++i) {
    if (prob[i] == 0.0f) {
      CHECK(count[i] == 0);  // a removed id is never drawn
      continue;
    }
    ++kept;
    const double expected = kDraws * static_cast<double>(prob[i]);
    chi2 += (count[i] - expected) * (count[i] - expected) / expected;
  }
  INFO("chi2 " << chi2 << " over " << kept << " ids");
  CHECK(kept >= 4);
  // The 1e-6 tail of chi-square with at most 11 degrees of freedom is below 45.
  CHECK(chi2 < 45.0);
}

TEST_CASE("sampler: no heap call after init") {
  SamplerParams p;
  p.temperature = 0.7f;
  p.top_k = 50;
  p.top_p = 0.9f;
  p.min_p = 0.05f;
  p.repetition_penalty = 1.2f;
  p.presence_penalty = 0.3f;
  const uint32_t n = 4096;
  std::vector<uint32_t> scratch(Sampler::scratch_bytes(n) / 4);
  const std::vector<float> l = test_logits(n, 3);
  std::vector<float> probs(n);
  std::vector<int32_t> recent(128, 5);
  Sampler s;
  HeapCount heap;
  REQUIRE(s.init(p, n, scratch.data(), scratch.size() * 4).ok());
  for (int i = 0; i < 20; ++i) REQUIRE(s.sample(l.data(), recent.data(), recent.size()).ok());
  REQUIRE(s.probabilities(l.data(), recent.data(), recent.size(), probs.data()).ok());
  p.top_k = 0;  // the full sort
  REQUIRE(s.init(p, n, scratch.data(), scratch.size() * 4).ok());
  REQUIRE(s.sample(l.data(), recent.data(), recent.size()).ok());
  CHECK(heap.stop() == 0);
}

}  // namespace
}  // namespace headway
