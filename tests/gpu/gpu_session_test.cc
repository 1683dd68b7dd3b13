// The Vulkan backend's cache path (GpuBackend::append, attend) and a Session and an
// AttentionLayer whose KV caches and attention run on it, against the same on the CPU backend:
// prefill in chunks, decode, sliding-window rings (with sink tokens, past their wrap), ALiBi,
// sink logits, split-KV decode, staged rows that pile up, q8_0 and q4_0 caches; layers of
// different kinds (sliding and full, two RoPE bases, a NoPE layer), a layer that starts
// mid-sequence; no operator new after create on the host (tests/gpu/new_counter.hpp: malloc is
// not counted, the Vulkan driver may allocate inside its command recording and submission, which
// headway does not control), and no command buffer recorded per decode step where memory is
// mapped. In CI the device is lavapipe (runtime/gpu/CMakeLists.txt, headway_gpu_test_environment).
//
// The GPU and the CPU attention agree within the README's tolerances (max abs error 1e-4 for f32,
// q8_0 and q4_0 K/V (both caches hold the same bytes; decode steps: decode_tolerance), 2e-3 for
// f16, 3e-2 for bf16): at every attend of the cache path, and, relative to the largest output
// magnitude (at least 1), at the block outputs of a 3-layer residual stack (q8_0 there:
// stack_tolerance).
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "headway/arena.hpp"
#include "headway/backend.hpp"
#include "headway/layer.hpp"
#include "headway/plan.hpp"
#include "headway/session.hpp"
#include "runtime/gpu/gpu_recording.hpp"
#include "tests/gpu/gpu_test_support.hpp"
#include "tests/gpu/new_counter.hpp"
#include "tests/reference/reference_layer.hpp"
#include "tests/support/test_rng.hpp"
#include "tests/support/tiny_model.hpp"

namespace headway {
namespace {

using test::random_x;
using test::relative_error;

using test::cache_config;
double tolerance(DType t) { return test::gpu_tolerance(t); }
// Decode steps over q8_0 or q4_0 K: where the CPU has integer dot products its decode quantizes
// the query to int8 per block of 32, as ggml's q8_0 query blocks (simd/attention/attention_decode_int8-inl.h,
// x86 AVX-512 VNNI), so its scores carry the query's rounding, which the GPU's (the f32 query
// against K widened exactly) do not: bf16's tolerance there.
double decode_tolerance(DType t) { return dtype_is_block(t) ? test::gpu_tolerance(DType::kBF16) : tolerance(t); }
GpuContext* context(bool fallback = false) { return test::gpu_context(fallback); }

// ---- The cache path ----------------------------------------------------------------------------

// The KvCache use: the same config on the CPU and the GPU backend, prefill in chunks of
// prefill_chunk, then `decode` single steps, attending after every attend_every-th append (the
// staged rows pile up in between) and at every decode step; the outputs must agree within the
// dtype's tolerance at every step. sinks: n_heads learned sink logits, or null.
void check_cache_against_cpu(GpuContext* ctx, const Config& config, uint32_t max_tokens, uint32_t prefill_chunk,
                             uint32_t prefill, uint32_t decode, uint32_t attend_every = 1,
                             const float* sinks = nullptr) {
  PlanOptions po;
  po.max_tokens = max_tokens;
  po.weights_in_arena = false;
  const Result<Plan> plan = make_plan(config, po);
  REQUIRE_MESSAGE(plan.ok(), plan.status().message());
  const Plan& p = plan.value();
  INFO("kv " << std::string(dtype_name(config.kv_dtype)) << ", window " << config.window << ", sink tokens "
             << config.sink_tokens << ", alibi " << config.alibi << ", cache_rows " << p.cache_rows << ", max_seq "
             << config.max_seq);

  CpuBackend cpu;
  const size_t bytes = CpuBackend::memory_bytes(p, 1);
  std::vector<uint8_t> mem(bytes + 64);
  void* aligned = mem.data() + (64 - reinterpret_cast<uintptr_t>(mem.data()) % 64) % 64;
  Status st = cpu.create(p, nullptr, aligned, bytes);
  REQUIRE_MESSAGE(st.ok(), st.message());
  GpuBackend gpu;
  st = gpu.create(ctx, p);
  REQUIRE_MESSAGE(st.ok(), st.message());
  INFO(gpu.description());
  const Backend both[2] = {&cpu, &gpu};  // the tagged view: one loop drives either
  CHECK(both[0].kind() == BackendKind::kCpu);
  CHECK(both[1].kind() == BackendKind::kGpu);

  const uint32_t kv_width = p.kv_width, q_width = p.q_width;
  test::Rng rng(config.window * 13 + static_cast<uint32_t>(config.kv_dtype));
  std::vector<float> q(size_t{max_tokens} * q_width), k(size_t{max_tokens} * kv_width), v(k.size());
  std::vector<float> o_cpu(q.size()), o_gpu(q.size());
  double worst = 0.0, worst_decode = 0.0;  // steps of several tokens, of one
  uint32_t pos = 0;
  const uint32_t total = prefill + decode;
  for (uint32_t step = 0; pos < total; ++step) {
    const uint32_t n = pos < prefill ? (prefill - pos < prefill_chunk ? prefill - pos : prefill_chunk) : 1;
    for (float& x : q) x = rng.normal();
    for (float& x : k) x = rng.normal();
    for (float& x : v) x = rng.normal();
    for (Backend b : both) {
      st = b.append(k.data(), kv_width, v.data(), kv_width, n);
      REQUIRE_MESSAGE(st.ok(), b.description() << ": " << st.message());
    }
    REQUIRE(gpu.size() == cpu.size());
    pos += n;
    if ((step + 1) % attend_every != 0 && pos < prefill) continue;  // staged rows pile up
    st = cpu.attend(q.data(), q_width, o_cpu.data(), q_width, n, sinks);
    REQUIRE_MESSAGE(st.ok(), st.message());
    st = gpu.attend(q.data(), q_width, o_gpu.data(), q_width, n, sinks);
    REQUIRE_MESSAGE(st.ok(), st.message());
    double& w = n == 1 ? worst_decode : worst;
    for (size_t i = 0; i < size_t{n} * q_width; ++i) {
      const double err = std::fabs(static_cast<double>(o_gpu[i]) - o_cpu[i]);
      if (!(err <= w)) w = std::isnan(err) ? 1e30 : err;
    }
  }
  CHECK_MESSAGE(worst <= tolerance(config.kv_dtype), "max |gpu − cpu| " << worst << " (steps of several tokens)");
  CHECK_MESSAGE(worst_decode <= decode_tolerance(config.kv_dtype),
                "max |gpu − cpu| " << worst_decode << " (decode steps)");
}

TEST_CASE("gpu cache use (append, attend) matches the CPU backend: RoPE, GQA, window ring, decode") {
  for (bool fallback : {false, true}) {
    GpuContext* ctx = context(fallback);
    if (ctx == nullptr) return;
    INFO("fallback context (f32 storage, staging): " << fallback);
    // Full attention: prefill 45 in chunks of 16, 10 decode steps.
    check_cache_against_cpu(ctx, cache_config(DType::kF16, 0, 64), 16, 16, 45, 10);
    check_cache_against_cpu(ctx, cache_config(DType::kF32, 0, 64), 16, 7, 30, 5);
    // Window 24 over 200 positions: a ring of 24 + 8 − 1 rows that wraps many times.
    check_cache_against_cpu(ctx, cache_config(DType::kBF16, 24, 200), 8, 8, 60, 40);
    // Attending every 5th append: staged rows fill the ring's 31 and flush, wrapping inside a run.
    check_cache_against_cpu(ctx, cache_config(DType::kF16, 24, 200), 8, 8, 100, 3, 5);
    // 1100 rows appended before the first attend: more than the 1024 a staging buffer holds.
    check_cache_against_cpu(ctx, cache_config(DType::kF32, 0, 1200), 100, 100, 1100, 3, 1000);
  }
}

// truncate() on both backends: append `total` tokens in chunks without attending (on the staged
// context the rows pile up unflushed), keep the first `keep`, then decode steps must agree; a
// truncate the ring cannot take fails the same way on both and changes neither.
void check_truncate_against_cpu(GpuContext* ctx, const Config& config, uint32_t max_tokens, uint32_t total,
                                uint32_t keep, uint32_t decode) {
  PlanOptions po;
  po.max_tokens = max_tokens;
  po.weights_in_arena = false;
  const Plan p = make_plan(config, po).value();
  INFO("kv " << std::string(dtype_name(config.kv_dtype)) << ", window " << config.window << ", " << total << " -> "
             << keep);
  CpuBackend cpu;
  const size_t bytes = CpuBackend::memory_bytes(p, 1);
  std::vector<uint8_t> mem(bytes + 64);
  REQUIRE(cpu.create(p, nullptr, mem.data() + (64 - reinterpret_cast<uintptr_t>(mem.data()) % 64) % 64, bytes).ok());
  GpuBackend gpu;
  REQUIRE(gpu.create(ctx, p).ok());
  const Backend both[2] = {&cpu, &gpu};
  test::Rng rng(config.window * 7 + total);
  std::vector<float> q(size_t{max_tokens} * p.q_width), k(size_t{max_tokens} * p.kv_width), v(k.size());
  std::vector<float> o_cpu(p.q_width), o_gpu(p.q_width);
  for (uint32_t pos = 0; pos < total;) {
    const uint32_t n = total - pos < max_tokens ? total - pos : max_tokens;
    for (float& x : k) x = rng.normal();
    for (float& x : v) x = rng.normal();
    for (Backend b : both) REQUIRE(b.append(k.data(), p.kv_width, v.data(), p.kv_width, n).ok());
    pos += n;
  }
  if (p.cache_rows < config.max_seq && total > p.cache_rows) {  // one token more than the ring can give back
    const uint32_t refused = total - (p.cache_rows - config.window + 2);
    for (Backend b : both) {
      CHECK(b.truncate(refused).code() == Code::kFailedPrecondition);
      CHECK(b.size() == total);
    }
  }
  for (Backend b : both) REQUIRE(b.truncate(keep).ok());
  CHECK(gpu.size() == keep);
  CHECK(gpu.position() == keep);
  double worst = 0.0;
  for (uint32_t step = 0; step < decode; ++step) {
    for (float& x : q) x = rng.normal();
    for (float& x : k) x = rng.normal();
    for (float& x : v) x = rng.normal();
    for (Backend b : both) REQUIRE(b.append(k.data(), p.kv_width, v.data(), p.kv_width, 1).ok());
    REQUIRE(cpu.attend(q.data(), p.q_width, o_cpu.data(), p.q_width, 1).ok());
    REQUIRE(gpu.attend(q.data(), p.q_width, o_gpu.data(), p.q_width, 1).ok());
    for (uint32_t i = 0; i < p.q_width; ++i) {
      const double err = std::fabs(static_cast<double>(o_gpu[i]) - o_cpu[i]);
      if (!(err <= worst)) worst = std::isnan(err) ? 1e30 : err;
    }
  }
  CHECK_MESSAGE(worst <= decode_tolerance(config.kv_dtype), "max |gpu − cpu| " << worst);
}

TEST_CASE("gpu truncate matches the CPU backend: staged rows dropped, a wrapped ring, refusals") {
  for (bool fallback : {false, true}) {
    GpuContext* ctx = context(fallback);
    if (ctx == nullptr) return;
    INFO("fallback context (staging): " << fallback);
    check_truncate_against_cpu(ctx, cache_config(DType::kF16, 0, 64), 16, 45, 38, 6);  // full: staged rows cut
    check_truncate_against_cpu(ctx, cache_config(DType::kF32, 0, 64), 16, 45, 0, 4);
    // Window 24, chunks of 8: a ring of 31 rows, wrapped at 60 tokens; 8 can go.
    check_truncate_against_cpu(ctx, cache_config(DType::kBF16, 24, 200), 8, 60, 52, 12);
    check_truncate_against_cpu(ctx, cache_config(DType::kQ8_0, 24, 200), 8, 60, 55, 12);
  }
}

// q8_0 and q4_0: the GPU cache quantizes each rotated K row and V row with the library's
// quantize_row, as KvCache does, so both attend over the same bytes. head_dim 80 makes rows of 3
// blocks (102 and 54 bytes, a short last block): rows that start inside a word, in mapped memory
// and in staged copies.
TEST_CASE("gpu cache use with q8_0 and q4_0 K/V matches the CPU backend: the ring past its wrap, split-KV") {
  const float sinks[8] = {-2.0f, 0.5f, 1.25f, -0.75f, 3.0f, -4.0f, 0.0f, 2.0f};
  for (bool fallback : {false, true}) {
    GpuContext* ctx = context(fallback);
    if (ctx == nullptr) return;
    INFO("fallback context (staging): " << fallback);
    for (DType dt : {DType::kQ8_0, DType::kQ4_0}) {
      // Window 24 over 100 positions: a ring of 24 + 8 − 1 rows that wraps.
      check_cache_against_cpu(ctx, cache_config(dt, 24, 200), 8, 8, 60, 40);
      // Sink tokens and ALiBi, attending every 5th append: staged runs that wrap inside the ring.
      Config c = cache_config(dt, 24, 200);
      c.sink_tokens = 4;
      c.alibi = true;
      check_cache_against_cpu(ctx, c, 8, 8, 100, 3, 5);
      // head_dim 80 in a ring past its wrap.
      Config d80 = cache_config(dt, 16, 200);
      d80.head_dim = 80;
      check_cache_against_cpu(ctx, d80, 8, 5, 40, 30);
      // head_dim 80, sink logits, full attention: 300 positions, then split-KV decode; on the
      // mapped context only (the staged one ran the rows above; this takes minutes under the
      // sanitizers on lavapipe).
      if (fallback) continue;
      d80 = cache_config(dt, 0, 400);
      d80.head_dim = 80;
      check_cache_against_cpu(ctx, d80, 64, 64, 300, 4, 1, sinks);
    }
  }
}

TEST_CASE("gpu cache use with sink logits matches the CPU backend: prefill, split-KV decode, window ring") {
  const float sinks[8] = {-2.0f, 0.5f, 1.25f, -0.75f, 3.0f, -4.0f, 0.0f, 2.0f};
  for (bool fallback : {false, true}) {
    GpuContext* ctx = context(fallback);
    if (ctx == nullptr) return;
    INFO("fallback context (f32 storage, staging): " << fallback);
    // 1100 positions, then decode: 2 kv heads of 4 query rows each split their keys.
    check_cache_against_cpu(ctx, cache_config(DType::kF16, 0, 1200), 100, 100, 1100, 4, 1, sinks);
    // Window 24 over 120 positions: the ring wraps; chunked prefill rows see part of the window.
    check_cache_against_cpu(ctx, cache_config(DType::kBF16, 24, 200), 8, 8, 60, 60, 1, sinks);
  }
}

// KvCache's sink-token ring: the first S tokens since the reset in rows 0..S−1 for good, the
// others cycling through the rows after them; the view's sink_gap (the evicted positions, which
// ALiBi's distance to a sink key counts) grows past the wrap.
TEST_CASE("gpu cache use with sink tokens and ALiBi matches the CPU backend: the ring past its wrap, split-KV") {
  const float sinks[8] = {-2.0f, 0.5f, 1.25f, -0.75f, 3.0f, -4.0f, 0.0f, 2.0f};
  for (bool fallback : {false, true}) {
    GpuContext* ctx = context(fallback);
    if (ctx == nullptr) return;
    INFO("fallback context (f32 storage, staging): " << fallback);
    // Window 24, 4 sink tokens over 120 positions: a ring of 4 + 24 + 8 − 1 rows that wraps.
    Config c = cache_config(DType::kF16, 24, 200);
    c.sink_tokens = 4;
    check_cache_against_cpu(ctx, c, 8, 8, 60, 60);
    // Attending every 5th append: staged runs of the ring's 31 rows from token 0 on cover the sink
    // rows and the ring's first rows, later ones wrap inside the ring.
    check_cache_against_cpu(ctx, c, 8, 8, 100, 3, 5);
    // The same with ALiBi: the sink keys' distance counts the gap.
    c.alibi = true;
    check_cache_against_cpu(ctx, c, 8, 8, 60, 60);
    // The long runs on the mapped context only: the staged one ran the same ring above, and these
    // take minutes under the sanitizers on lavapipe.
    if (fallback) continue;
    // ALiBi over full attention: 1100 positions, then split-KV decode.
    Config full = cache_config(DType::kF32, 0, 1200);
    full.alibi = true;
    check_cache_against_cpu(ctx, full, 100, 100, 1100, 4);
    // Both, and sink logits, in a ring of 8 + 300 + 63 rows after 1000 positions (a gap of 629):
    // split-KV decode over 8 sink keys and 300 window keys, MPT's max bias 16.
    Config both = cache_config(DType::kF16, 300, 2000);
    both.sink_tokens = 8;
    both.alibi = true;
    both.alibi_max_bias = 16.0f;
    check_cache_against_cpu(ctx, both, 64, 64, 1000, 6, 1, sinks);
  }
}

TEST_CASE("gpu append and attend allocate nothing (operator new) after create") {
  for (bool fallback : {false, true}) {
    GpuContext* ctx = context(fallback);
    if (ctx == nullptr) return;
    for (DType dt : {DType::kF16, DType::kQ4_0}) {  // q4_0: quantize_row on append
      INFO("fallback " << fallback << ", kv " << std::string(dtype_name(dt)));
      PlanOptions po;
      po.max_tokens = 8;
      po.weights_in_arena = false;
      const Result<Plan> plan = make_plan(cache_config(dt, 16, 64), po);
      REQUIRE(plan.ok());
      const Plan& p = plan.value();
      GpuBackend gpu;
      REQUIRE(gpu.create(ctx, p).ok());
      std::vector<float> q(size_t{8} * p.q_width, 0.5f), o(q.size()), kv(size_t{8} * p.kv_width, 0.25f);
      // One call of each kind first: a driver may compile its shader variants at the first
      // dispatch (lavapipe does, with LLVM, which is C++).
      bool ok = gpu.append(kv.data(), p.kv_width, kv.data(), p.kv_width, 8).ok();
      ok = ok && gpu.attend(q.data(), p.q_width, o.data(), p.q_width, 8).ok();
      ok = ok && gpu.attend(q.data(), p.q_width, o.data(), p.q_width, 1).ok();
      const uint64_t recorded = gpu::recorded_command_buffers();
      test::NewCount count;
      for (int step = 0; step < 5 && ok; ++step) {  // 8 + 5 · 8 = 48 positions: the 23-row ring wraps
        ok = gpu.append(kv.data(), p.kv_width, kv.data(), p.kv_width, 8).ok();
        ok = ok && gpu.attend(q.data(), p.q_width, o.data(), p.q_width, step % 2 ? 1 : 8).ok();
      }
      const long news = count.stop();
      CHECK(ok);
      CHECK(news == 0);
      // Mapped memory: every call resubmits the command buffer recorded at create; staged: each
      // attend records its copies.
      CHECK(gpu::recorded_command_buffers() - recorded == (fallback ? 5u : 0u));
    }
  }
}

// Decode on mapped memory (lavapipe, unified-memory devices) records nothing: the call's values
// reach the shaders through the parameter buffer, the dispatch sizes (split or not, the merge's 0
// groups when not) through the indirect buffer; the plan's ALiBi slopes are on the device since
// create.
TEST_CASE("gpu decode steps on mapped memory record no command buffer: split-KV or not, sinks, sink tokens, ALiBi") {
  GpuContext* ctx = context(false);
  if (ctx == nullptr) return;
  if (!ctx->info().host_mapped) {
    MESSAGE("skipped: the device has no host-mapped memory (every call is recorded there)");
    return;
  }
  Config ring = cache_config(DType::kF16, 300, 1200);  // 8 + 300 + 63 rows: wraps past 371
  ring.sink_tokens = 8;
  ring.alibi = true;
  for (const Config& c : {cache_config(DType::kF16, 0, 1200), ring}) {
    INFO("window " << c.window << ", sink tokens " << c.sink_tokens << ", alibi " << c.alibi);
    PlanOptions po;
    po.max_tokens = 64;
    po.weights_in_arena = false;
    const Result<Plan> plan = make_plan(c, po);
    REQUIRE(plan.ok());
    const Plan& p = plan.value();
    GpuBackend gpu;
    REQUIRE(gpu.create(ctx, p).ok());
    std::vector<float> q(size_t{64} * p.q_width, 0.5f), o(q.size()), kv(size_t{64} * p.kv_width, 0.25f);
    const float sinks[8] = {-2.0f, 0.5f, 1.25f, -0.75f, 3.0f, -4.0f, 0.0f, 2.0f};
    const uint64_t recorded = gpu::recorded_command_buffers();
    bool ok = true;
    uint32_t steps = 0;
    for (uint32_t n = 0; n < 1100 && ok; ++steps) {  // prefill in chunks of 64, then decode past 1100
      const uint32_t chunk = n < 1024 ? 64 : 1;
      ok = gpu.append(kv.data(), p.kv_width, kv.data(), p.kv_width, chunk).ok();
      ok = ok && gpu.attend(q.data(), p.q_width, o.data(), p.q_width, chunk, steps % 2 ? sinks : nullptr).ok();
      n += chunk;
    }
    CHECK(ok);
    CHECK(steps == 16 + 76);
    CHECK(gpu::recorded_command_buffers() == recorded);
  }
}

// ---- Sessions and layers -----------------------------------------------------------------------

Config stack_config(DType kv, uint32_t window) {
  Config c;
  c.set_name("gpu-stack");
  c.d_model = 128;
  c.n_heads = 4;
  c.n_kv_heads = 2;
  c.head_dim = 32;
  c.max_seq = 64;
  c.n_layers = 3;
  c.rope.style = RopeStyle::kNeox;
  c.qkv_bias = true;
  c.window = window;
  c.kv_dtype = kv;
  return c;
}

struct Memory {
  explicit Memory(uint64_t n) : p(static_cast<uint8_t*>(std::aligned_alloc(64, align_up(n)))) {}
  ~Memory() { std::free(p); }
  uint8_t* p;
};

// One Session over its own arena, on the backend `options` names.
struct Stack {
  Plan plan;
  std::unique_ptr<Memory> memory;
  Arena arena;
  std::unique_ptr<Session> session = std::make_unique<Session>();
  Status init(const Plan& p, const std::vector<LayerWeights>& weights, const LayerOptions& options) {
    plan = p;
    memory = std::make_unique<Memory>(p.arena_bytes);
    HEADWAY_RETURN_IF_ERROR(arena.bind(plan, memory->p, plan.arena_bytes));
    return session->init(arena, weights.data(), static_cast<uint32_t>(weights.size()), options);
  }
};

// The same plan and seeded weights (layer l's seed: seed + l) as one Session on the CPU backend
// and one on the GPU.
struct StackPair {
  std::vector<test::TestLayerWeights> weights;
  std::vector<LayerWeights> views;
  Stack on_cpu, on_gpu;
};
void make_pair(StackPair* pair, const Plan& p, GpuContext* gpu, uint64_t seed) {
  for (uint32_t l = 0; l < p.config.n_layers; ++l) {
    pair->weights.push_back(test::make_test_weights(p.config, DType::kF32, seed + l));
    pair->views.push_back(pair->weights.back().view);
  }
  REQUIRE(pair->on_cpu.init(p, pair->views, LayerOptions{}).ok());
  LayerOptions go;
  go.backend = BackendKind::kGpu;
  go.gpu = gpu;
  const Status st = pair->on_gpu.init(p, pair->views, go);
  REQUIRE_MESSAGE(st.ok(), st.message());
}

// Layers that differ: 0 and 1 slide (RoPE base 500), 2 is full (base 10000), 1 has no RoPE.
Config mixed_layers(Config c) {
  c.layers.sliding_pattern = 3;
  c.layers.local_rope_theta = 500.0f;
  c.layers.rope.count = 3;
  c.layers.rope.set(0, true);
  c.layers.rope.set(2, true);
  return c;
}

// A stack's layers quantize K and V computed from the previous layer's output, which differs
// between the backends in its last bits: a q8_0 code may land one step apart there (about 1/127 of
// its block's largest value), so the stack holds q8_0 to f16's tolerance.
double stack_tolerance(DType t) { return t == DType::kQ8_0 ? tolerance(DType::kF16) : tolerance(t); }

TEST_CASE("a Session on the GPU matches the same Session on the CPU: chunked prefill, then decode") {
  GpuContext* gpu = context();
  if (gpu == nullptr) return;
  for (DType kv : {DType::kF32, DType::kF16, DType::kQ8_0}) {
    // 0 full, 1 window, 2 layers that differ, 3 and sink logits, 4 window with sink tokens and
    // ALiBi, 5 layers that differ with all three (the sliding layers' rings of 2 + 6 + 8 − 1 rows
    // wrap in the decode steps).
    for (uint32_t variant = 0; variant < 6; ++variant) {
      const uint32_t window = variant == 0 ? 0 : 6;
      const bool mixed = variant == 2 || variant == 3 || variant == 5;
      Config c = mixed ? mixed_layers(stack_config(kv, window)) : stack_config(kv, window);
      c.sinks = variant == 3 || variant == 5;  // gpt-oss's: make_test_weights gives each layer its logits
      c.sink_tokens = variant >= 4 ? 2 : 0;
      c.alibi = variant >= 4;
      INFO("kv " << std::string(dtype_name(kv)) << ", window " << window << (mixed ? ", layers that differ" : "")
                 << (c.sinks ? ", sink logits" : "") << ", sink tokens " << c.sink_tokens << ", alibi " << c.alibi);
      PlanOptions po;
      po.max_tokens = 8;
      const Plan p = make_plan(c, po).value();
      StackPair pair;
      make_pair(&pair, p, gpu, 21);
      Stack& on_cpu = pair.on_cpu;
      Stack& on_gpu = pair.on_gpu;
      CHECK(on_gpu.session->layer(0).backend_kind() == BackendKind::kGpu);
      CHECK(on_cpu.session->layer(0).backend_kind() == BackendKind::kCpu);
      INFO(on_gpu.session->layer(0).backend_description());

      std::vector<float> x = random_x(19, c.d_model, 3);  // 3 chunks: 8, 8, 3
      std::vector<float> y_cpu(x.size()), y_gpu(x.size());
      REQUIRE(on_cpu.session->prefill(x.data(), 19, y_cpu.data()).ok());
      REQUIRE(on_gpu.session->prefill(x.data(), 19, y_gpu.data()).ok());
      CHECK(on_gpu.session->position() == 19);
      CHECK(relative_error(y_gpu, y_cpu) <= stack_tolerance(kv));
      for (uint32_t i = 0; i < 12; ++i) {  // window 6: the ring of 13 rows wraps
        std::vector<float> xt = random_x(1, c.d_model, 40 + i);
        std::vector<float> a(xt.size()), b(xt.size());
        REQUIRE(on_cpu.session->decode(xt.data(), a.data()).ok());
        REQUIRE(on_gpu.session->decode(xt.data(), b.data()).ok());
        INFO("decode step " << i);
        CHECK(relative_error(b, a) <= stack_tolerance(kv));
      }
      CHECK(on_gpu.session->position() == on_cpu.session->position());
      // Past the context: the same error, and the GPU stack keeps its position.
      std::vector<float> big = random_x(64, c.d_model, 5);
      std::vector<float> out(big.size());
      const Status past = on_gpu.session->prefill(big.data(), 64, out.data());
      CHECK(past.code() == Code::kOutOfRange);
      CHECK(std::string(past.message()) ==
            "session: 64 tokens at position 31 go past the context of 64 tokens "
            "(max_seq); nothing was run");
      CHECK(on_gpu.session->position() == 31);
    }
  }
}

// An encoder's batch (Session::encode): bidirectional, layer 0 full, layers 1 and 2 with a
// symmetric window of 5 at a local RoPE base (ModernBERT's kinds), four sentences in one call of
// more tokens than the context.
TEST_CASE("a Session's encoder batch on the GPU matches the CPU's: symmetric windows, two RoPE bases") {
  GpuContext* gpu = context();
  if (gpu == nullptr) return;
  for (DType kv : {DType::kF32, DType::kF16}) {
    INFO("kv " << std::string(dtype_name(kv)));
    Config c = stack_config(kv, 5);
    c.causal = false;
    c.window_symmetric = true;
    c.max_seq = 24;
    c.layers.sliding.count = 3;
    c.layers.sliding.set(1, true);
    c.layers.sliding.set(2, true);
    c.layers.local_rope_theta = 500.0f;
    PlanOptions po;
    po.max_tokens = 45;
    const Plan p = make_plan(c, po).value();
    REQUIRE(p.max_tokens == 45);
    StackPair pair;
    make_pair(&pair, p, gpu, 31);
    Stack& on_cpu = pair.on_cpu;
    Stack& on_gpu = pair.on_gpu;
    const std::vector<uint32_t> cu = {0, 9, 10, 34, 45};
    const std::vector<float> x = random_x(45, c.d_model, 8);
    std::vector<float> y_cpu(x.size()), y_gpu(x.size());
    REQUIRE(on_cpu.session->encode(x.data(), cu.data(), 4, y_cpu.data()).ok());
    REQUIRE(on_gpu.session->encode(x.data(), cu.data(), 4, y_gpu.data()).ok());
    CHECK(relative_error(y_gpu, y_cpu) <= stack_tolerance(kv));
    CHECK(on_gpu.session->position() == 0);
  }
}

TEST_CASE("an AttentionLayer on the GPU that starts at position P matches the CPU's") {
  GpuContext* gpu = context();
  if (gpu == nullptr) return;
  const Config c = stack_config(DType::kF32, 0);
  PlanOptions po;
  po.max_tokens = 8;
  const Plan p = make_plan(c, po).value();
  test::TestLayerWeights w = test::make_test_weights(c, DType::kF32, 5);
  Memory m_cpu(p.arena_bytes), m_gpu(p.arena_bytes);
  Arena a_cpu, a_gpu;
  REQUIRE(a_cpu.bind(p, m_cpu.p, p.arena_bytes).ok());
  REQUIRE(a_gpu.bind(p, m_gpu.p, p.arena_bytes).ok());
  AttentionLayer on_cpu, on_gpu;
  REQUIRE(on_cpu.init(a_cpu, 1, w.view).ok());
  LayerOptions go;
  go.backend = BackendKind::kGpu;
  go.gpu = gpu;
  REQUIRE(on_gpu.init(a_gpu, 1, w.view, go).ok());
  for (uint32_t start : {0u, 17u, 55u}) {
    INFO("start " << start);
    on_cpu.reset(start);
    on_gpu.reset(start);
    CHECK(on_gpu.position() == start);
    for (uint32_t t : {6u, 1u, 2u}) {
      std::vector<float> x = random_x(t, c.d_model, start + t);
      std::vector<float> a(x.size()), b(x.size());
      REQUIRE(on_cpu.forward(x.data(), a.data(), t).ok());
      REQUIRE(on_gpu.forward(x.data(), b.data(), t).ok());
      CHECK(relative_error(b, a) <= tolerance(DType::kF32));
    }
    CHECK(on_gpu.position() == start + 9);
  }
  // 55 + 9 = 64 fits exactly; one more does not, with the CPU layer's words.
  std::vector<float> x = random_x(2, c.d_model, 1);
  const Status st = on_gpu.forward(x.data(), x.data(), 2);
  CHECK(st.code() == Code::kOutOfRange);
  CHECK(std::string(st.message()) == "layer 1: 2 tokens at position 64 go past the context of 64 tokens");
}

TEST_CASE("a Session on the GPU allocates nothing on the host per decode step (operator new)") {
  GpuContext* gpu = context();
  if (gpu == nullptr) return;
  const Config c = stack_config(DType::kF16, 6);
  PlanOptions po;
  po.max_tokens = 8;
  const Plan p = make_plan(c, po).value();
  std::vector<test::TestLayerWeights> w;
  std::vector<LayerWeights> views;
  for (uint32_t l = 0; l < c.n_layers; ++l) {
    w.push_back(test::make_test_weights(c, DType::kF16, 31 + l));
    views.push_back(w.back().view);
  }
  Stack s;
  LayerOptions go;
  go.backend = BackendKind::kGpu;
  go.gpu = gpu;
  REQUIRE(s.init(p, views, go).ok());
  const std::vector<float> x = random_x(8, c.d_model, 9);
  std::vector<float> y(x.size());
  // A prefill and a decode first: a driver may compile its shader variants at the first dispatch
  // of each (lavapipe does, with LLVM, which is C++).
  bool ok = s.session->prefill(x.data(), 8, y.data()).ok() && s.session->decode(x.data(), y.data()).ok();
  test::NewCount count;
  for (uint32_t i = 0; i < 20 && ok; ++i) ok = s.session->decode(x.data() + (i % 8) * c.d_model, y.data()).ok();
  ok = ok && s.session->prefill(x.data(), 5, y.data()).ok();
  const long news = count.stop();
  CHECK(ok);
  CHECK(news == 0);
}

TEST_CASE("a GPU layer without a context is an init error that says so") {
  const Config c = stack_config(DType::kF32, 0);
  const Plan p = make_plan(c).value();
  test::TestLayerWeights w = test::make_test_weights(c, DType::kF32, 1);
  Memory m(p.arena_bytes);
  Arena a;
  REQUIRE(a.bind(p, m.p, p.arena_bytes).ok());
  AttentionLayer layer;
  LayerOptions go;
  go.backend = BackendKind::kGpu;
  const Status st = layer.init(a, 0, w.view, go);
  CHECK(st.code() == Code::kFailedPrecondition);
  CHECK(std::string(st.message()) == "gpu backend: the GpuContext is null (create it first)");
  CHECK(!layer.initialized());
}

TEST_CASE("a Model on the GPU backend refuses to save or load its state, naming the backend") {
  GpuContext* gpu = context();
  if (gpu == nullptr) return;
  test::TinyWeights w(test::tiny_model_config(true), 3);
  test::TinyModel m;
  REQUIRE(m.init(w, PlanOptions{}, nullptr, gpu).ok());
  const std::vector<int32_t> ids = test::tiny_prompt(5, 1);
  REQUIRE(m.model.prefill(ids.data(), 5).ok());
  std::vector<uint8_t> bytes(m.model.state_bytes());
  const char* message =
      "state: layer 0 runs on the gpu backend, whose KV rows live on the device; saving and loading a state needs the "
      "cpu backend";
  Status st = m.model.save_state(bytes.data(), bytes.size(), nullptr);
  CHECK(st.code() == Code::kUnsupported);
  CHECK(std::string(st.message()) == message);
  st = m.model.load_state(bytes.data(), bytes.size());
  CHECK(st.code() == Code::kUnsupported);
  CHECK(std::string(st.message()) == message);
  CHECK(m.model.position() == 5);
}

}  // namespace
}  // namespace headway
