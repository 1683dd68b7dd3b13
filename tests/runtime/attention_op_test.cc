// AttentionOp (reshape once, run many times) against attend(): bitwise the same O on every path
// (tiles, split-KV decode, GQA, f16/bf16 K/V, 1 and 2 threads); the same messages for every
// rejected shape; a failed reshape keeps the op as it was; run() checks its tensors, pool and
// workspace and allocates nothing. And the work-split policy: the plan's workspace bound covers
// every call within the plan.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "headway/attention.hpp"
#include "headway/detail/attention_policy.hpp"
#include "headway/tools/heap_count.hpp"
#include "headway/plan.hpp"
#include "runtime/attention/attention_run.hpp"

namespace headway {
namespace {

struct Buffer {
  explicit Buffer(size_t bytes) : size(align_up(bytes ? bytes : 64)), p(std::aligned_alloc(64, size)) {}
  ~Buffer() { std::free(p); }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  size_t size;
  void* p;
};

struct Tensors {
  std::vector<float> q, o;
  std::vector<float> k, v;         // f32 K/V
  std::vector<uint16_t> k16, v16;  // any 16-bit patterns serve as f16 / bf16 data
  Tensors(const AttentionShape& s, uint32_t seed) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    q.resize(size_t{s.t_q} * s.n_heads * s.head_dim);
    o.assign(q.size(), -7.0f);
    k.resize(size_t{s.t_kv} * s.n_kv_heads * s.head_dim);
    v.resize(k.size());
    for (float& x : q) x = normal(rng);
    for (float& x : k) x = normal(rng);
    for (float& x : v) x = normal(rng);
    // Small finite values in both 16-bit formats: sign, exponent near 1, random mantissa.
    std::uniform_int_distribution<uint32_t> bits(0, 0x3ff);
    k16.resize(k.size());
    v16.resize(v.size());
    for (uint16_t& x : k16) x = static_cast<uint16_t>(0x3800 | bits(rng));
    for (uint16_t& x : v16) x = static_cast<uint16_t>(0x3800 | bits(rng) | (bits(rng) & 1) << 15);
  }
  const void* kp(DType t) const { return t == DType::kF32 ? static_cast<const void*>(k.data()) : k16.data(); }
  const void* vp(DType t) const { return t == DType::kF32 ? static_cast<const void*>(v.data()) : v16.data(); }
};

struct Case {
  const char* name;
  AttentionShape shape;
  AttentionParams params;
  DType kv_dtype;
};

// Learned sink logits for up to 8 query heads.
constexpr float kSinks[8] = {-3.0f, 0.5f, 1.0f, 2.5f, -0.25f, 6.0f, 0.0f, 12.0f};

const Case kCases[] = {
    {"prefill d64 MHA causal", {40, 40, 4, 4, 64}, {0.0f, 0.0f, true, 0}, DType::kF32},
    {"prefill d128 GQA4 window f16", {33, 70, 8, 2, 128}, {0.0f, 0.0f, true, 17}, DType::kF16},
    {"decode d128 GQA4 split-KV f16", {1, 3000, 8, 2, 128}, {0.0f, 0.0f, true, 0}, DType::kF16},
    {"decode d64 MQA split-KV bf16 softcap", {2, 1100, 6, 1, 64}, {0.0f, 30.0f, true, 0}, DType::kBF16},
    {"generic d80 bidirectional scale", {17, 17, 3, 1, 80}, {0.2f, 0.0f, false, 0}, DType::kF32},
    {"length 1", {1, 1, 2, 2, 50}, {0.0f, 0.0f, true, 0}, DType::kF32},
    {"fully masked rows (t_q > t_kv, causal)", {6, 3, 2, 1, 64}, {0.0f, 0.0f, true, 0}, DType::kF32},
    {"prefill d64 MHA window sinks", {40, 40, 4, 4, 64}, {0.0f, 0.0f, true, 9, kSinks}, DType::kF32},
    {"decode d128 GQA4 split-KV f16 sinks", {1, 3000, 8, 2, 128}, {0.0f, 0.0f, true, 0, kSinks}, DType::kF16},
};

TEST_CASE("AttentionOp::run gives bitwise attend()'s O, reshaped once and run twice, 1 and 2 threads") {
  for (const Case& c : kCases) {
    for (uint32_t threads : {1u, 2u}) {
      INFO(c.name << ", " << threads << " threads");
      ThreadPool pool;
      REQUIRE(pool.create(threads).ok());
      ThreadPool* p = threads > 1 ? &pool : nullptr;
      const uint32_t used = p != nullptr ? pool.threads() : 1;
      Tensors t(c.shape, 11);
      const Result<size_t> bytes = attention_workspace_bytes(c.shape, used);
      REQUIRE(bytes.ok());
      Buffer ws(bytes.value());
      std::vector<float> expected = t.o;
      REQUIRE(attend(t.q.data(), t.kp(c.kv_dtype), t.vp(c.kv_dtype), c.kv_dtype, expected.data(), c.shape, c.params, p,
                     ws.p, ws.size)
                  .ok());

      AttentionOp op;
      REQUIRE(op.reshape(c.shape, c.params, c.kv_dtype, used).ok());
      CHECK(op.workspace_bytes() == bytes.value());
      for (int pass = 0; pass < 2; ++pass) {
        std::vector<float> o = t.o;
        HeapCount count;
        const Status s = op.run(t.q.data(), t.kp(c.kv_dtype), t.vp(c.kv_dtype), o.data(), p, ws.p, ws.size);
        CHECK(count.stop() == 0);
        REQUIRE(s.ok());
        CHECK(std::memcmp(o.data(), expected.data(), o.size() * sizeof(float)) == 0);
      }
    }
  }
}

TEST_CASE("AttentionOp reports the split attend() runs (tiles, or split-KV chunks)") {
  AttentionOp op;
  REQUIRE(op.reshape({1, 3000, 8, 2, 128}, {}, DType::kF16, 1).ok());
  CHECK(op.split().n_chunks > 1);
  CHECK(op.split().workspace_bytes == attention_split(1, 3000, 8, 2, 128, 1).workspace_bytes);
  REQUIRE(op.reshape({64, 64, 8, 2, 128}, {}, DType::kF16, 1).ok());
  CHECK(op.split().n_chunks == 0);
  CHECK(op.split().q_tiles == 8);  // group 4: 8 tokens per tile of 32 rows
  REQUIRE(op.reshape({64, 64, 9, 3, 64}, {}, DType::kF16, 1).ok());
  CHECK(op.split().q_tiles == 4);  // group 3 (SmolLM2): 16 tokens per tile of 48 rows, none padding
}

// A shape or parameter attend() rejects, and what reshape() must say about it.
struct BadShape {
  const char* name;
  AttentionShape shape;
  AttentionParams params;
  DType kv_dtype;
  uint32_t threads;
};

const float kNaN = std::numeric_limits<float>::quiet_NaN();
const BadShape kBadShapes[] = {
    {"head_dim 0", {4, 4, 2, 2, 0}, {}, DType::kF32, 1},
    {"head_dim 577", {4, 4, 2, 2, 577}, {}, DType::kF32, 1},
    {"n_heads 0", {4, 4, 0, 1, 64}, {}, DType::kF32, 1},
    {"n_kv_heads 0", {4, 4, 2, 0, 64}, {}, DType::kF32, 1},
    {"n_heads not a multiple of n_kv_heads", {4, 4, 6, 4, 64}, {}, DType::kF32, 1},
    {"t_q 0", {0, 4, 2, 2, 64}, {}, DType::kF32, 1},
    {"t_kv 0", {4, 0, 2, 2, 64}, {}, DType::kF32, 1},
    {"scale NaN", {4, 4, 2, 2, 64}, {kNaN, 0.0f, false, 0}, DType::kF32, 1},
    {"scale negative", {4, 4, 2, 2, 64}, {-1.0f, 0.0f, false, 0}, DType::kF32, 1},
    {"softcap inf", {4, 4, 2, 2, 64}, {0.0f, std::numeric_limits<float>::infinity(), false, 0}, DType::kF32, 1},
    {"kv dtype unknown (70)", {4, 4, 2, 2, 64}, {}, static_cast<DType>(70), 1},
};

TEST_CASE("AttentionOp::reshape rejects what attend() rejects, with attend()'s message, and keeps its shape") {
  const AttentionShape good{8, 8, 4, 2, 64};
  Tensors t({8, 8, 4, 2, 64}, 3);
  for (const BadShape& b : kBadShapes) {
    INFO(b.name);
    AttentionOp op;
    REQUIRE(op.reshape(good, {}, DType::kF32, 1).ok());
    const size_t before = op.workspace_bytes();
    const Status s = op.reshape(b.shape, b.params, b.kv_dtype, b.threads);
    REQUIRE_FALSE(s.ok());
    CHECK(s.code() == Code::kInvalidArgument);
    Buffer ws(1 << 20);
    const Status direct =
        attend(t.q.data(), t.k.data(), t.v.data(), b.kv_dtype, t.o.data(), b.shape, b.params, nullptr, ws.p, ws.size);
    CHECK(std::string(s.message()) == std::string(direct.message()));
    CHECK(op.reshaped());
    CHECK(op.workspace_bytes() == before);
    CHECK(op.shape().t_q == good.t_q);
    CHECK(op.shape().head_dim == good.head_dim);
  }
  for (uint32_t threads : {0u, ThreadPool::kMaxThreads + 1}) {
    AttentionOp op;
    const Status s = op.reshape(good, {}, DType::kF32, threads);
    CHECK(s.code() == Code::kInvalidArgument);
    CHECK(std::string(s.message()).find("threads " + std::to_string(threads)) != std::string::npos);
    CHECK_FALSE(op.reshaped());
  }
}

TEST_CASE("AttentionOp::run checks the state, its tensors, the pool and the workspace, and writes nothing then") {
  const AttentionShape shape{8, 8, 4, 2, 64};
  Tensors t(shape, 5);
  AttentionOp op;
  Buffer ws(1 << 20);
  float* o = t.o.data();
  const Status before = op.run(t.q.data(), t.k.data(), t.v.data(), o, nullptr, ws.p, ws.size);
  CHECK(before.code() == Code::kFailedPrecondition);
  CHECK(std::string(before.message()) == "attention: run before reshape");

  REQUIRE(op.reshape(shape, {}, DType::kF32, 1).ok());
  CHECK(std::string(op.run(nullptr, t.k.data(), t.v.data(), o, nullptr, ws.p, ws.size).message()) ==
        "attention: q is null");
  CHECK(std::string(op.run(t.q.data(), nullptr, t.v.data(), o, nullptr, ws.p, ws.size).message()) ==
        "attention: k is null");
  CHECK(std::string(op.run(t.q.data(), t.k.data(), nullptr, o, nullptr, ws.p, ws.size).message()) ==
        "attention: v is null");
  CHECK(std::string(op.run(t.q.data(), t.k.data(), t.v.data(), nullptr, nullptr, ws.p, ws.size).message()) ==
        "attention: o is null");
  const std::string small = op.run(t.q.data(), t.k.data(), t.v.data(), o, nullptr, ws.p, 64).message();
  CHECK(small.find("workspace is 64 bytes, attention needs " + std::to_string(op.workspace_bytes())) !=
        std::string::npos);
  const std::string misaligned =
      op.run(t.q.data(), t.k.data(), t.v.data(), o, nullptr, static_cast<char*>(ws.p) + 4, ws.size - 64).message();
  CHECK(misaligned.find("not 64-byte aligned") != std::string::npos);

  ThreadPool pool;
  REQUIRE(pool.create(2).ok());
  if (pool.threads() == 2) {  // builds without threads keep one
    const std::string mismatch = op.run(t.q.data(), t.k.data(), t.v.data(), o, &pool, ws.p, ws.size).message();
    CHECK(mismatch == "attention: the pool has 2 threads, the call was prepared for 1");
  }
  for (float x : t.o) REQUIRE(x == -7.0f);
}

// The workspace bound the plan reserves and the CPU backend holds covers every call within the
// plan: every t_q up to max_tokens and t_kv up to cache_rows, at every group and kv head count.
TEST_CASE("attention_workspace_bytes_bound is at least every call's workspace within the plan") {
  long calls = 0;
  for (uint32_t n_kv : {1u, 2u, 3u, 8u, 32u}) {
    for (uint32_t group : {1u, 3u, 4u, 8u, 16u, 48u}) {
      for (uint32_t head_dim : {64u, 80u, 128u}) {
        for (uint32_t cache_rows : {512u, 1023u, 1024u, 3000u, 8192u}) {
          for (uint32_t max_tokens : {1u, 7u, 64u, 512u}) {
            const uint64_t bound = attention_workspace_bytes_bound(head_dim, group, n_kv, cache_rows, max_tokens, 2);
            for (uint32_t t_q = 1; t_q <= max_tokens && t_q <= 80; ++t_q) {
              for (uint32_t t_kv : {1u, 1023u, 1024u, 1500u, 2049u, cache_rows}) {
                if (t_kv > cache_rows) continue;
                const AttentionSplit s = attention_split(t_q, t_kv, group * n_kv, n_kv, head_dim, 2);
                ++calls;
                if (s.workspace_bytes > bound) {
                  INFO("n_kv " << n_kv << " group " << group << " d " << head_dim << " rows " << cache_rows
                               << " max_tokens " << max_tokens << " t_q " << t_q << " t_kv " << t_kv);
                  CHECK(s.workspace_bytes <= bound);
                }
              }
            }
          }
        }
      }
    }
  }
  CHECK(calls > 10000);
}

TEST_CASE("the plan's scratch is the policy's bound, and the CPU backend's workspace is the same bound") {
  Config c;
  c.set_name("policy");
  c.d_model = 2048;
  c.n_heads = 32;
  c.n_kv_heads = 8;
  c.n_layers = 1;
  c.max_seq = 4096;
  PlanOptions o;
  o.threads = 2;
  const Result<Plan> p = make_plan(c, o);
  REQUIRE(p.ok());
  const Plan& plan = p.value();
  CHECK(plan.scratch_bytes ==
        attention_workspace_bytes_bound(plan.head_dim, plan.group_size, 8, plan.cache_rows, plan.max_tokens, 2));
  CHECK(plan.attention_partials_bytes > 0);  // 4096 keys, 8 kv heads: decode splits
}

}  // namespace
}  // namespace headway
