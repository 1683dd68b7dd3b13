// `headway bench`'s cases (bench/cases.hpp) through the bench library: every name says its shape;
// the encoder batches and the Gated DeltaNet cases count the work and bytes they claim; and the
// packed and padded MiniLM batches, as the runner sets their calls up (make_case_call), give the
// real tokens bitwise the same O on every SIMD target, with 1 and 2 threads: a sentence's rows are
// bitwise what it gets alone (attention.hpp, packed batches), and padding its keys with masked
// ones changes nothing.
#include <doctest/doctest.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "bench/cases.hpp"
#include "bench/runner.hpp"
#include "headway/attention.hpp"
#include "headway/thread_pool.hpp"
#include "tests/kernels/target_scope.hpp"

namespace headway::bench {
namespace {

TEST_CASE("bench cases: every name says its kind, t_kv, heads, head_dim and kv dtype") {
  for (const BenchCase& c : bench_cases()) {
    INFO(c.name);
    char shape[96];
    std::snprintf(shape, sizeof(shape), "-t%u-h%ux%u-d%u-%s", c.t_kv, c.n_heads, c.n_kv_heads, c.head_dim,
                  dtype_name(c.kv_dtype));
    const std::string name = c.name;
    CHECK(name.find(shape) != std::string::npos);
    CHECK(find_bench_case(c.name) == &c);
    if (c.kind == CaseKind::kEncoder) {
      CHECK(c.batch != Batch::kNone);
      CHECK(name.find(c.batch == Batch::kPacked ? "-packed32-" : "-padded32-") != std::string::npos);
      CHECK(c.t_q == c.t_kv);
      CHECK_FALSE(c.causal);
    } else {
      CHECK(c.batch == Batch::kNone);
      CHECK(name.find(case_kind_name(c.kind)) != std::string::npos);
    }
  }
}

TEST_CASE("bench cases: every Gated DeltaNet name says its kind, tokens, heads and head size, and what it counts") {
  REQUIRE_FALSE(delta_cases().empty());
  for (const DeltaCase& c : delta_cases()) {
    INFO(c.name);
    const std::string name = c.name;
    REQUIRE(c.dk == c.dv);  // the names' d<dk> says both
    char shape[64];
    if (c.kind == CaseKind::kDecode) {
      CHECK(c.t == 1);
      std::snprintf(shape, sizeof(shape), "-gdn-decode-h%ux%u-d%u", c.value_heads, c.key_heads, c.dk);
    } else {
      REQUIRE(c.kind == CaseKind::kPrefill);
      std::snprintf(shape, sizeof(shape), "-gdn-prefill-t%u-h%ux%u-d%u", c.t, c.value_heads, c.key_heads, c.dk);
    }
    CHECK(name.size() >= std::strlen(shape));
    CHECK(name.compare(name.size() - std::strlen(shape), std::string::npos, shape) == 0);
    CHECK(std::string(delta_kind_name(c)) == (c.kind == CaseKind::kDecode ? "gdn-decode" : "gdn-prefill"));
    CHECK(find_delta_case(c.name) == &c);
    CHECK(find_bench_case(c.name) == nullptr);  // --case looks in both tables
    CHECK(c.value_heads % c.key_heads == 0);
    CHECK(delta_case_flops(c) == 7.0 * c.dk * c.dv * c.value_heads * c.t);
    CHECK(delta_state_bytes(c) == uint64_t{c.value_heads} * c.dk * c.dv * sizeof(float));
  }
}

TEST_CASE("bench cases: an encoder batch counts its sentences' own pairs and the K/V it stores") {
  const std::span<const uint32_t> lengths = encoder_lengths();
  REQUIRE(lengths.size() == 32);
  double pairs = 0;
  uint32_t tokens = 0, longest = 0;
  for (const uint32_t len : lengths) {
    CHECK(len >= 12);
    CHECK(len <= 128);
    pairs += static_cast<double>(len) * len;
    tokens += len;
    longest = len > longest ? len : longest;
  }
  CHECK(longest == 128);
  const BenchCase* packed = find_bench_case("minilm-packed32-t2533-h12x12-d32-f32");
  const BenchCase* padded = find_bench_case("minilm-padded32-t4096-h12x12-d32-f32");
  const BenchCase* d64 = find_bench_case("encoder-packed32-t2533-h6x6-d64-f32");
  REQUIRE(packed != nullptr);
  REQUIRE(padded != nullptr);
  REQUIRE(d64 != nullptr);
  CHECK(packed->t_q == tokens);
  CHECK(padded->t_q == 32 * longest);
  for (const BenchCase* c : {packed, padded, d64}) {
    INFO(c->name);
    CHECK(c->kind == CaseKind::kEncoder);
    CHECK(visible_pairs(*c) == pairs);  // the useful work, padded or not
    CHECK(case_flops(*c) == 4.0 * c->head_dim * c->n_heads * pairs);
    CHECK(case_kv_bytes(*c) == 2ull * c->t_kv * c->n_kv_heads * c->head_dim * sizeof(float));
    CHECK(encoder_row(*c, 0) == 0);
    CHECK(encoder_row(*c, 32) == c->t_q);
    for (uint32_t b = 0; b < 32; ++b) {
      CHECK(encoder_row(*c, b + 1) - encoder_row(*c, b) == (c->batch == Batch::kPadded ? longest : lengths[b]));
    }
  }
  // The same width, 384, as 12 × 32 and 6 × 64: the same flops.
  CHECK(case_flops(*d64) == case_flops(*packed));
  CHECK(case_kv_bytes(*padded) * tokens == case_kv_bytes(*packed) * padded->t_kv);
}

TEST_CASE("bench cases: the padded call's mask shows each sequence its sentence's keys, from every row") {
  const BenchCase& c = *find_bench_case("minilm-padded32-t4096-h12x12-d32-f32");
  CaseCall call;
  REQUIRE(make_case_call(c, &call).ok());
  REQUIRE(call.params.mask_bool == call.mask.data());
  REQUIRE(call.mask.size() == size_t{c.t_q} * c.t_kv);
  CHECK(call.params.mask_row_stride == c.t_kv);
  CHECK(call.params.n_seqs == 32);
  size_t visible = 0;
  for (const uint8_t m : call.mask) visible += m != 0;
  size_t expected = 0;
  for (const uint32_t len : encoder_lengths()) expected += size_t{128} * len;
  CHECK(visible == expected);
  for (uint32_t b = 0; b < 32; ++b) {
    const uint32_t first = call.cu_seqlens[b], len = encoder_lengths()[b];
    for (const uint32_t row : {first, first + len - 1, first + 127}) {  // a real row, the last, a pad row
      const uint8_t* m = call.mask.data() + size_t{row} * c.t_kv + first;
      CHECK(m[0] == 1);
      CHECK(m[len - 1] == 1);
      if (len < 128) CHECK(m[len] == 0);
    }
  }
}

struct Aligned {
  explicit Aligned(size_t bytes) : size((bytes + 63) / 64 * 64 + 64), p(std::aligned_alloc(64, size)) {}
  ~Aligned() { std::free(p); }
  Aligned(const Aligned&) = delete;
  Aligned& operator=(const Aligned&) = delete;
  size_t size;
  void* p;
};

std::vector<float> run_case(const BenchCase& c, const std::vector<float>& q, const std::vector<float>& k,
                            const std::vector<float>& v, ThreadPool* pool) {
  CaseCall call;
  REQUIRE(make_case_call(c, &call).ok());
  const Result<size_t> ws = attention_workspace_bytes(call.shape, call.params, pool->threads());
  REQUIRE(ws.ok());
  Aligned workspace(ws.value());
  std::vector<float> o(q.size(), -7.0f);
  const Status s = attend(q.data(), k.data(), v.data(), c.kv_dtype, o.data(), call.shape, call.params, pool,
                          workspace.p, workspace.size);
  INFO(s.message());
  REQUIRE(s.ok());
  return o;
}

TEST_CASE("bench cases: packed and padded MiniLM batches give the real tokens bitwise the same O") {
  const BenchCase& packed = *find_bench_case("minilm-packed32-t2533-h12x12-d32-f32");
  const BenchCase& padded = *find_bench_case("minilm-padded32-t4096-h12x12-d32-f32");
  const size_t width = size_t{packed.n_heads} * packed.head_dim;  // MHA: Q, K, V and O alike
  // The padded tensors' pad rows hold values of their own (finite: a masked key's V still enters
  // as 0 · V), the real rows the packed batch's.
  std::mt19937 rng(2533);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> pq(packed.t_q * width), pk(pq.size()), pv(pq.size());
  std::vector<float> dq(padded.t_q * width), dk(dq.size()), dv(dq.size());
  for (std::vector<float>* x : {&pq, &pk, &pv, &dq, &dk, &dv}) {
    for (float& e : *x) e = normal(rng);
  }
  for (uint32_t b = 0; b < 32; ++b) {
    const size_t from = encoder_row(packed, b) * width, to = encoder_row(padded, b) * width;
    const size_t n = encoder_lengths()[b] * width;
    std::memcpy(dq.data() + to, pq.data() + from, n * sizeof(float));
    std::memcpy(dk.data() + to, pk.data() + from, n * sizeof(float));
    std::memcpy(dv.data() + to, pv.data() + from, n * sizeof(float));
  }
  for (const int64_t target : test::test_targets()) {
    INFO(test::target_label(target));
    test::TargetScope scope(target);
    for (const uint32_t threads : {1u, 2u}) {
      INFO("threads " << threads);
      ThreadPool pool;
      REQUIRE(pool.create(threads).ok());
      const std::vector<float> po = run_case(packed, pq, pk, pv, &pool);
      const std::vector<float> dof = run_case(padded, dq, dk, dv, &pool);
      for (uint32_t b = 0; b < 32; ++b) {
        INFO("sentence " << b << " of " << encoder_lengths()[b] << " tokens");
        const size_t n = encoder_lengths()[b] * width;
        CHECK(std::memcmp(po.data() + encoder_row(packed, b) * width, dof.data() + encoder_row(padded, b) * width,
                          n * sizeof(float)) == 0);
      }
    }
  }
}

}  // namespace
}  // namespace headway::bench
