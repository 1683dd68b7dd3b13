// What the README's "Guarantees" promise about threads, run under ThreadSanitizer by the tsan
// preset (and as a plain suite everywhere else):
//   - attend() is reentrant: two threads, each with its own workspace (and its own pool, or one
//     shared pool whose run() serializes them), get the bits a lone caller gets;
//   - ThreadPool::create() may be called again: the workers are replaced, tasks still run once;
//   - one KvCache per thread: caches over separate regions append and attend concurrently;
//   - determinism: prefill and split-KV decode over a KvCache give the same bits for threads 1..4
//     and on every repeated run.
// Under qemu-user (HEADWAY_TEST_EMULATED, set by cross builds) the kernels run tens of times
// slower and the cross presets' ThreadPool runs its tasks on the caller, so the cases repeat less:
// the same shapes and paths (tiles, split-KV) and every comparison, fewer rounds and thread counts.
// The three cases that start a std::thread are skipped there: Debian 12's qemu-aarch64 (7.2)
// never returns from the guest's first thread creation (a program that only starts and joins one
// thread hangs too), so they ran into ctest's timeout; the host and tsan runs check them.
#include <doctest/doctest.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

#include "headway/arena.hpp"
#include "headway/attention.hpp"
#include "headway/kv_cache.hpp"
#include "headway/plan.hpp"
#include "runtime/attention/rope.hpp"
#include "tests/support/test_rng.hpp"

namespace headway {
namespace {

#ifdef HEADWAY_TEST_EMULATED
constexpr bool kEmulated = true;
#else
constexpr bool kEmulated = false;
#endif
// Repeats of each case: native, then under the emulator.
constexpr int kRounds = kEmulated ? 1 : 3;                   // two pools at once
constexpr int kSharedRuns = kEmulated ? 2 : 4;               // per caller of the shared pool
constexpr int kRepeatedRuns = kEmulated ? 2 : 5;             // dense attend again on one pool
constexpr int kCacheRuns = kEmulated ? 1 : 2;                // KvCache per thread count
constexpr uint32_t kCacheThreadFirst = kEmulated ? 4 : 1;    // threads 4 against the base run of 1,
constexpr uint32_t kCacheThreadStep = kEmulated ? 3 : 1;     // or 1, 2, 3, 4
constexpr uint32_t kCacheModelWidth = kEmulated ? 64 : 256;  // d_model: 4 heads of 16 or of 64

struct Aligned {
  explicit Aligned(size_t bytes) : size((bytes + 63) / 64 * 64), p(std::aligned_alloc(64, size ? size : 64)) {}
  ~Aligned() { std::free(p); }
  Aligned(const Aligned&) = delete;
  Aligned& operator=(const Aligned&) = delete;
  size_t size;
  void* p;
};

std::vector<float> normal(size_t n, uint64_t seed) {
  test::Rng rng(seed);
  std::vector<float> v(n);
  for (float& x : v) x = rng.normal();
  return v;
}

// One dense attention problem, f32 K/V.
struct Dense {
  AttentionShape shape;
  AttentionParams params;
  std::vector<float> q, k, v;
  Dense(AttentionShape s, AttentionParams p, uint64_t seed) : shape(s), params(p) {
    q = normal(size_t{s.t_q} * s.n_heads * s.head_dim, seed);
    k = normal(size_t{s.t_kv} * s.n_kv_heads * s.head_dim, seed + 1);
    v = normal(k.size(), seed + 2);
  }
  Status run(ThreadPool* pool, Aligned& ws, std::vector<float>* o) const {
    o->assign(q.size(), -7.0f);
    return attend(q.data(), k.data(), v.data(), DType::kF32, o->data(), shape, params, pool, ws.p, ws.size);
  }
  size_t workspace(uint32_t threads) const { return attention_workspace_bytes(shape, threads).value(); }
};

// A prefill shape (query tiles) and a decode shape that takes the split-KV path.
const Dense& prefill_problem() {
  static const Dense d({40, 64, 8, 2, 64}, {0.0f, 0.0f, true, 0}, 101);
  return d;
}
const Dense& decode_problem() {
  static const Dense d({1, 2100, 8, 2, 128}, {0.0f, 0.0f, true, 0}, 202);
  return d;
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

TEST_CASE("two pools run attend concurrently on separate workspaces: the lone caller's bits" *
          doctest::skip(kEmulated)) {
  for (const Dense* d : {&prefill_problem(), &decode_problem()}) {
    Aligned ws0(d->workspace(1));
    std::vector<float> want;
    REQUIRE(d->run(nullptr, ws0, &want).ok());
    ThreadPool pools[2];
    REQUIRE(pools[0].create(2).ok());
    REQUIRE(pools[1].create(3).ok());
    Aligned ws_a(d->workspace(pools[0].threads())), ws_b(d->workspace(pools[1].threads()));
    std::vector<float> got_a, got_b;
    std::atomic<bool> ok_a{false}, ok_b{false};
    for (int round = 0; round < kRounds; ++round) {
      std::thread ta([&] { ok_a = d->run(&pools[0], ws_a, &got_a).ok(); });
      std::thread tb([&] { ok_b = d->run(&pools[1], ws_b, &got_b).ok(); });
      ta.join();
      tb.join();
      INFO("round " << round << " t_kv " << d->shape.t_kv);
      CHECK(ok_a.load());
      CHECK(ok_b.load());
      CHECK(same_bits(got_a, want));
      CHECK(same_bits(got_b, want));
    }
  }
}

TEST_CASE("one pool shared by two callers: run() serializes them, each gets its own bits" * doctest::skip(kEmulated)) {
  ThreadPool pool;
  REQUIRE(pool.create(2).ok());
  const Dense& p = prefill_problem();
  const Dense& d = decode_problem();
  Aligned ws1(p.workspace(1)), ws2(d.workspace(1));
  std::vector<float> want_p, want_d;
  REQUIRE(p.run(nullptr, ws1, &want_p).ok());
  REQUIRE(d.run(nullptr, ws2, &want_d).ok());
  Aligned ws_p(p.workspace(pool.threads())), ws_d(d.workspace(pool.threads()));
  std::vector<float> got_p, got_d;
  std::atomic<int> failures{0};
  std::thread tp([&] {
    for (int i = 0; i < kSharedRuns; ++i) failures += !p.run(&pool, ws_p, &got_p).ok();
  });
  std::thread td([&] {
    for (int i = 0; i < kSharedRuns; ++i) failures += !d.run(&pool, ws_d, &got_d).ok();
  });
  tp.join();
  td.join();
  CHECK(failures.load() == 0);
  CHECK(same_bits(got_p, want_p));
  CHECK(same_bits(got_d, want_d));
}

TEST_CASE("create() again replaces the workers: every task still runs once") {
  ThreadPool pool;
  const Dense& d = decode_problem();
  Aligned ws1(d.workspace(1));
  std::vector<float> want, got;
  REQUIRE(d.run(nullptr, ws1, &want).ok());
  Aligned ws(d.workspace(4));
  for (uint32_t threads : {2u, 4u, 1u, 3u, 3u, 2u}) {
    INFO("threads " << threads);
    REQUIRE(pool.create(threads).ok());
    static std::atomic<int> runs[257];
    for (auto& r : runs) r = 0;
    pool.run(
        257, [](void*, size_t t) { runs[t].fetch_add(1); }, nullptr);
    int once = 0;
    for (auto& r : runs) once += r.load() == 1;
    CHECK(once == 257);
    REQUIRE(d.run(&pool, ws, &got).ok());
    CHECK(same_bits(got, want));
  }
}

// A small GQA model whose decode takes the split-KV path (cache longer than 2 chunks).
Config small_model(uint32_t max_seq) {
  Config c;
  c.d_model = kCacheModelWidth;
  c.n_heads = 4;
  c.n_kv_heads = 2;
  c.max_seq = max_seq;
  c.n_layers = 1;
  c.rope.style = RopeStyle::kNeox;
  c.kv_dtype = DType::kF16;
  return c;
}

// Prefill `prefill` tokens in chunks of max_tokens, then decode one token at a time to `total`;
// returns every attention output, concatenated. Decode past 1024 keys takes the split-KV path.
std::vector<float> run_cache(uint32_t threads, uint32_t prefill, uint32_t total, uint64_t seed) {
  const Config c = small_model(total);
  PlanOptions o;
  o.threads = threads;
  o.max_tokens = 32;
  const Plan p = make_plan(c, o).value();
  Aligned memory(p.arena_bytes);
  Arena arena;
  REQUIRE(arena.bind(p, memory.p, memory.size).ok());
  std::vector<double> rope(rope_frequency_count(c.rope, p.head_dim));
  KvCache::make_rope_table(p, rope.data());
  KvCache cache;
  REQUIRE(cache.bind(p, arena.kv_layer(0), p.kv_bytes_per_layer, rope.data()).ok());
  ThreadPool pool;
  REQUIRE(pool.create(threads).ok());
  std::vector<float> out;
  uint32_t pos = 0;
  uint64_t step = 0;
  while (pos < total) {
    const uint32_t n = pos < prefill ? std::min<uint32_t>(p.max_tokens, prefill - pos) : 1;
    std::vector<float> qkv = normal(size_t{n} * p.qkv_width, seed + step++);
    apply_rope(qkv.data(), n, p.qkv_width, c.n_heads, p.head_dim, pos, pos + n, c.rope, rope.data());
    REQUIRE(
        cache.append(qkv.data() + p.q_width, p.qkv_width, qkv.data() + p.q_width + p.kv_width, p.qkv_width, n).ok());
    std::vector<float> o(size_t{n} * p.q_width);
    const Status s =
        cache.attend(qkv.data(), p.qkv_width, o.data(), p.q_width, n, &pool, arena.scratch(), p.scratch_bytes);
    REQUIRE_MESSAGE(s.ok(), s.message());
    out.insert(out.end(), o.begin(), o.end());
    pos += n;
  }
  return out;
}

TEST_CASE("one KvCache per thread: caches append and attend concurrently, each as if alone" *
          doctest::skip(kEmulated)) {
  const std::vector<float> want_a = run_cache(1, 1040, 1060, 7);
  const std::vector<float> want_b = run_cache(1, 1030, 1050, 9);
  std::vector<float> got_a, got_b;
  std::thread ta([&] { got_a = run_cache(2, 1040, 1060, 7); });
  std::thread tb([&] { got_b = run_cache(2, 1030, 1050, 9); });
  ta.join();
  tb.join();
  CHECK(same_bits(got_a, want_a));
  CHECK(same_bits(got_b, want_b));
}

TEST_CASE("determinism: KvCache prefill and split-KV decode give the same bits for threads 1..4, every run") {
  const std::vector<float> base = run_cache(1, 1056, 1080, 31);
  for (uint32_t threads = kCacheThreadFirst; threads <= 4; threads += kCacheThreadStep) {
    for (int run = 0; run < kCacheRuns; ++run) {
      INFO("threads " << threads << " run " << run);
      CHECK(same_bits(run_cache(threads, 1056, 1080, 31), base));
    }
  }
}

TEST_CASE("determinism: dense attend gives the same bits on repeated runs with one pool") {
  for (const Dense* d : {&prefill_problem(), &decode_problem()}) {
    ThreadPool pool;
    REQUIRE(pool.create(4).ok());
    Aligned ws(d->workspace(pool.threads()));
    std::vector<float> first, again;
    REQUIRE(d->run(&pool, ws, &first).ok());
    for (int run = 0; run < kRepeatedRuns; ++run) {
      REQUIRE(d->run(&pool, ws, &again).ok());
      CHECK(same_bits(again, first));
    }
  }
}

}  // namespace
}  // namespace headway
