// The Vulkan backend (include/headway/backend.hpp) against the double-precision reference and
// against the CPU backend. In CI there is no GPU: ctest pins the Vulkan loader to Mesa's lavapipe
// (runtime/gpu/CMakeLists.txt, headway_gpu_test_environment). Run the binary directly to test the
// machine's own GPU.
//
// Inputs are unit-normal with fixed seeds; K/V reach the reference rounded to their storage
// dtype, so the tolerances cover f32 accumulation order and exp:
//   max |gpu − reference| <= 1e-4 (f32 K/V), 2e-3 (f16), 3e-2 (bf16).
// Rows that see no key must be exact zeros (with sink logits too: the sink takes all the weight).
//
// The test contexts split K/V from 32 keys on (GpuOptions::split_kv_min_keys, default 256), so
// the split-KV path and its merge run in the cases with few query rows and many keys.
//
// Without a usable Vulkan device every test fails, unless HEADWAY_GPU_TESTS_OPTIONAL=1 (then
// they pass with a message): CI has lavapipe, so a missing device there is a fault.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "headway/backend.hpp"
#include "headway/dtype_convert.hpp"
#include "runtime/gpu/gpu_recording.hpp"
#include "runtime/gpu/gpu_tiling.hpp"
#include "tests/reference/attention_cases.hpp"
#include "tests/gpu/new_counter.hpp"
#include "tests/reference/reference_attention.hpp"
#include "tests/support/test_rng.hpp"

// operator new is counted around append() and attend() (tests/gpu/new_counter.hpp): headway's own
// code must not allocate there. malloc is not counted: the Vulkan driver may allocate inside its
// command recording and submission, which headway does not control.

namespace ht = headway::test;
using headway::AttentionParams;
using headway::AttentionShape;
using headway::Code;
using headway::DType;
using headway::GpuBackend;
using headway::GpuContext;
using headway::GpuOptions;
using headway::Plan;
using headway::Status;

namespace {

double tolerance(DType t) { return t == DType::kF32 ? 1e-4 : t == DType::kF16 ? 2e-3 : 3e-2; }

using headway::test::Rng;

bool optional_gpu() {
  const char* e = std::getenv("HEADWAY_GPU_TESTS_OPTIONAL");
  return e != nullptr && std::strcmp(e, "1") == 0;
}

// The process's contexts: the device as it is, and the same device without 16-bit storage and
// without host-mapped memory (the f32 fallback and the staging path of discrete GPUs).
GpuContext* context(bool fallback) {
  static std::unique_ptr<GpuContext> ctx[2];
  static Status status[2];
  static bool tried[2] = {false, false};
  const int i = fallback ? 1 : 0;
  if (!tried[i]) {
    tried[i] = true;
    ctx[i] = std::make_unique<GpuContext>();
    GpuOptions o;
    o.allow_16bit_storage = !fallback;
    o.allow_host_mapped = !fallback;
    o.split_kv_min_keys = 32;
    if (const char* d = std::getenv("HEADWAY_GPU_DEVICE")) o.device_index = std::atoi(d);  // gpu_check.sh
    status[i] = ctx[i]->create(o);
    if (status[i].ok()) {
      const headway::GpuDeviceInfo& d = ctx[i]->info();
      MESSAGE("device: " << d.name << " (" << std::string(d.type) << "), subgroup " << d.subgroup_size << ", shared "
                         << d.max_shared_bytes << " B, 16-bit storage " << d.storage_16bit << ", host-mapped "
                         << d.host_mapped);
    }
  }
  if (!status[i].ok()) {
    if (optional_gpu()) {
      MESSAGE("skipped (HEADWAY_GPU_TESTS_OPTIONAL=1): " << status[i].message());
      return nullptr;
    }
    FAIL("no Vulkan device for the GPU tests (set HEADWAY_GPU_TESTS_OPTIONAL=1 to skip): " << status[i].message());
  }
  return ctx[i].get();
}

// Largest error seen per K/V dtype, printed at the end of the dense test.
double g_max_error[3] = {0, 0, 0};

struct Case {
  uint32_t t_q = 1, t_kv = 1;
  bool causal = false;
  uint32_t window = 0;
  float softcap = 0.0f;
  float scale = 0.0f;
  uint64_t seed = 1;
  const float* sinks = nullptr;  // n_heads sink logits, or none
};

std::string describe(const AttentionShape& s, DType dt, const Case& c) {
  char buf[256];
  std::snprintf(buf, sizeof(buf), "t_q=%u t_kv=%u heads=%u/%u d=%u kv=%s%s window=%u softcap=%g scale=%g seed=%llu",
                c.t_q, c.t_kv, s.n_heads, s.n_kv_heads, s.head_dim, headway::dtype_name(dt), c.causal ? " causal" : "",
                c.window, static_cast<double>(c.softcap), static_cast<double>(c.scale),
                static_cast<unsigned long long>(c.seed));
  return buf;
}

// One dense attention on `gpu` (made for heads/head_dim/dtype), checked against the reference.
// Inputs: unit-normal draws from c.seed, or those of a case of the shared table.
void check_dense(GpuBackend& gpu, uint32_t n_heads, uint32_t n_kv_heads, uint32_t head_dim, DType dt, const Case& c,
                 const ht::AttentionCase* table = nullptr) {
  AttentionShape s;
  s.t_q = c.t_q;
  s.t_kv = c.t_kv;
  s.n_heads = n_heads;
  s.n_kv_heads = n_kv_heads;
  s.head_dim = head_dim;
  INFO(describe(s, dt, c));
  INFO(gpu.description());
  Rng rng(c.seed * 7919 + head_dim * 31 + n_heads);
  const size_t nq = size_t{c.t_q} * n_heads * head_dim;
  const size_t nkv = size_t{c.t_kv} * n_kv_heads * head_dim;
  std::vector<float> q(nq), kref(nkv), vref(nkv);
  std::vector<float> k32(nkv), v32(nkv);
  std::vector<uint16_t> k16(nkv), v16(nkv);
  std::vector<float> k_in, v_in;
  if (table != nullptr) {
    k_in.resize(nkv);
    v_in.resize(nkv);
    ht::generate_inputs(*table, [&](int which, uint64_t i, float x) {
      (which == 0 ? q : which == 1 ? k_in : v_in)[i] = x;
    });
  } else {
    for (float& x : q) x = rng.normal();
  }
  for (size_t i = 0; i < nkv; ++i) {
    float kx, vx;
    if (table != nullptr) {
      kx = k_in[i];
      vx = v_in[i];
    } else {
      kx = rng.normal();
      vx = rng.normal();
    }
    if (dt == DType::kF32) {
      k32[i] = kref[i] = kx;
      v32[i] = vref[i] = vx;
    } else if (dt == DType::kF16) {
      k16[i] = headway::f32_to_f16_bits(kx);
      v16[i] = headway::f32_to_f16_bits(vx);
      kref[i] = headway::f16_bits_to_f32(k16[i]);
      vref[i] = headway::f16_bits_to_f32(v16[i]);
    } else {
      k16[i] = headway::f32_to_bf16_bits(kx);
      v16[i] = headway::f32_to_bf16_bits(vx);
      kref[i] = headway::bf16_bits_to_f32(k16[i]);
      vref[i] = headway::bf16_bits_to_f32(v16[i]);
    }
  }
  const void* k = dt == DType::kF32 ? static_cast<const void*>(k32.data()) : k16.data();
  const void* v = dt == DType::kF32 ? static_cast<const void*>(v32.data()) : v16.data();
  AttentionParams p;
  p.causal = c.causal;
  p.window = c.window;
  p.softcap = c.softcap;
  p.scale = c.scale;
  p.sinks = c.sinks;
  std::vector<float> o(nq, 12345.0f);
  const Status st = gpu.attend_dense(q.data(), k, v, dt, o.data(), s, p);
  REQUIRE_MESSAGE(st.ok(), st.message());

  ht::RefAttention r;
  r.t_q = c.t_q;
  r.t_kv = c.t_kv;
  r.n_heads = n_heads;
  r.n_kv_heads = n_kv_heads;
  r.head_dim = head_dim;
  r.scale = c.scale != 0.0f ? c.scale : 1.0 / std::sqrt(static_cast<double>(head_dim));
  r.softcap = c.softcap;
  r.causal = c.causal;
  r.window = c.window;
  if (c.sinks != nullptr) r.sinks.assign(c.sinks, c.sinks + n_heads);
  const std::vector<double> ref = ht::reference_attention(r, q.data(), kref.data(), vref.data());
  double worst = 0.0;
  size_t worst_at = 0;
  bool zeros_ok = true;
  for (uint32_t i = 0; i < c.t_q; ++i) {
    const bool sees = ht::reference_row_sees_a_key(r, i);
    for (size_t e = size_t{i} * n_heads * head_dim; e < size_t{i + 1} * n_heads * head_dim; ++e) {
      if (!sees && o[e] != 0.0f) zeros_ok = false;
      const double err = std::fabs(static_cast<double>(o[e]) - ref[e]);
      if (!(err <= worst)) {  // NaN counts as the worst
        worst = std::isnan(err) ? 1e30 : err;
        worst_at = e;
      }
    }
  }
  double& g = g_max_error[static_cast<int>(dt)];
  if (worst > g) g = worst;
  CHECK_MESSAGE(zeros_ok, "a row that sees no key is not exactly zero");
  CHECK_MESSAGE(worst <= tolerance(dt), "max error " << worst << " at element " << worst_at << " (gpu " << o[worst_at]
                                                     << ", reference " << ref[worst_at] << ")");
}

struct DenseBackend {
  GpuBackend gpu;
  bool ok = false;
};

// A backend for dense calls up to t_q_max × t_kv_max.
void make_dense(DenseBackend* b, GpuContext* ctx, uint32_t n_heads, uint32_t n_kv_heads, uint32_t head_dim, DType dt,
                uint32_t t_q_max, uint32_t t_kv_max) {
  AttentionShape s;
  s.t_q = t_q_max;
  s.t_kv = t_kv_max;
  s.n_heads = n_heads;
  s.n_kv_heads = n_kv_heads;
  s.head_dim = head_dim;
  const headway::Result<Plan> plan = headway::dense_plan(s, dt);
  REQUIRE_MESSAGE(plan.ok(), plan.status().message());
  const Status st = b->gpu.create(ctx, plan.value());
  REQUIRE_MESSAGE(st.ok(), st.message());
  b->ok = true;
}

// The length pairs every head_dim and dtype runs, with the masks they get.
const Case kLengthCases[] = {
    {1, 1, false, 0, 0.0f},     {1, 300, true, 0, 0.0f},        {2, 17, true, 0, 0.0f},   {15, 16, true, 0, 0.0f},
    {16, 15, false, 0, 0.0f},   {17, 65, true, 8, 0.0f},        {63, 64, true, 0, 30.0f}, {64, 63, false, 0, 0.0f},
    {65, 300, true, 100, 0.0f}, {300, 300, true, 0, 0.0f},      {65, 17, true, 0, 0.0f},  {64, 2, true, 0, 0.0f},
    {16, 64, false, 16, 0.0f},  {17, 63, false, 0, 5.0f, 0.3f},
};

}  // namespace

TEST_CASE("gpu tiling: the choice fits the device's limits for every head_dim") {
  headway::gpu::DeviceLimits lavapipe{8, 32768, 1024, 1024};
  headway::gpu::DeviceLimits nvidia{32, 49152, 1024, 1024};
  headway::gpu::DeviceLimits small{16, 16384, 128, 128};
  for (const headway::gpu::DeviceLimits& lim : {lavapipe, nvidia, small}) {
    for (uint32_t d = 1; d <= headway::kMaxHeadDim; ++d) {
      for (uint32_t rows : {1u, 4u, 7u, 32u, 4096u}) {
        INFO("head_dim " << d << " rows " << rows << " subgroup " << lim.subgroup_size);
        const headway::Result<headway::gpu::Tiling> t = headway::gpu::choose_tiling(d, rows, lim);
        REQUIRE_MESSAGE(t.ok(), t.status().message());
        CHECK(t->threads == t->rows * t->tpr);
        CHECK(t->threads <= lim.max_invocations);
        CHECK(t->shared_bytes <= lim.max_shared_bytes);
        CHECK(t->shared_bytes == headway::gpu::tiling_shared_bytes(d, t->rows, t->kv_tile));
        CHECK(t->dpt * t->tpr >= d);
        CHECK(t->kv_tile >= 1);
        CHECK(t->dpt <= 16);
      }
    }
  }
  // lavapipe's 8-lane subgroups: 32 threads; d128 keeps 16 dims a thread on 8 threads a row.
  const headway::Result<headway::gpu::Tiling> t = headway::gpu::choose_tiling(128, 512, lavapipe);
  REQUIRE(t.ok());
  CHECK(t->threads == 32);
  CHECK(t->tpr == 8);
  CHECK(t->rows == 4);
  headway::gpu::DeviceLimits tiny{32, 1024, 256, 256};
  const headway::Result<headway::gpu::Tiling> none = headway::gpu::choose_tiling(512, 1, tiny);
  CHECK(none.status().code() == Code::kUnsupported);
}

TEST_CASE("gpu split-KV: decode calls with few workgroups split, prefill and short calls do not") {
  headway::gpu::DeviceLimits lavapipe{8, 32768, 1024, 1024};
  const headway::gpu::Tiling t = headway::gpu::choose_tiling(128, 512, lavapipe).value();
  // Decode, 8 kv heads, group 4 (one workgroup each), 4096 keys: 16 splits of 256 keys.
  headway::gpu::Split s = headway::gpu::choose_split(0, 4095, 4, 8, t, 64, 256);
  CHECK(s.n_splits == 16);
  CHECK(s.chunk == 256);
  CHECK(s.chunk % t.kv_tile == 0);
  // A window: only the keys the rows see are split.
  s = headway::gpu::choose_split(3000, 4095, 4, 8, t, 64, 256);
  CHECK(s.key_lo == 3000);
  CHECK(uint64_t{s.n_splits} * s.chunk >= 1096);
  CHECK(uint64_t{s.n_splits - 1} * s.chunk < 1096);
  CHECK(headway::gpu::choose_split(0, 4095, 65, 8, t, 64, 256).n_splits == 1);   // many rows
  CHECK(headway::gpu::choose_split(0, 300, 4, 8, t, 64, 256).n_splits == 1);     // few keys
  CHECK(headway::gpu::choose_split(0, 4095, 4, 128, t, 64, 256).n_splits == 1);  // enough workgroups
  CHECK(headway::gpu::choose_split(0, 4095, 4, 8, t, 0, 256).n_splits == 1);     // no partials
  CHECK(headway::gpu::choose_split(0, 4095, 4, 8, t, 64, 0).n_splits == 1);      // splitting off
  CHECK(headway::gpu::choose_split(5, 4, 4, 8, t, 64, 256).n_splits == 1);       // no key seen
}

TEST_CASE("gpu dense attention matches the reference: head_dim x dtype x lengths and masks") {
  GpuContext* ctx = context(false);
  if (ctx == nullptr) return;
  for (uint32_t d : {1u, 8u, 50u, 64u, 80u, 96u, 128u, 256u}) {
    for (DType dt : {DType::kF32, DType::kF16, DType::kBF16}) {
      DenseBackend b;
      make_dense(&b, ctx, 4, 2, d, dt, 300, 300);
      uint64_t seed = 1;
      for (const Case& base : kLengthCases) {
        // 300 × 300 with f32 K/V only: the double reference of it is most of this test's time
        // (minutes under the sanitizers); the other dtypes read the same shader with 300 keys.
        if (base.t_q == 300 && dt != DType::kF32) continue;
        Case c = base;
        c.seed = seed++;
        check_dense(b.gpu, 4, 2, d, dt, c);
      }
    }
  }
  MESSAGE("max error so far: f32 " << g_max_error[0] << ", f16 " << g_max_error[1] << ", bf16 " << g_max_error[2]);
}

// The shared case table (tests/reference/attention_cases.hpp), each case on a backend made for its shape.
TEST_CASE("gpu dense attention matches the reference: every case of the table") {
  GpuContext* ctx = context(false);
  if (ctx == nullptr) return;
  for (const ht::AttentionCase& t : ht::kAttentionCases) {
    if (!ht::runs_on_gpu(t)) continue;
    INFO(t.name);
    DenseBackend b;
    make_dense(&b, ctx, t.n_heads, t.n_kv_heads, t.head_dim, t.kv, t.t_q, t.t_kv);
    std::vector<float> sinks(t.n_heads);
    for (uint32_t h = 0; h < t.n_heads; ++h) sinks[h] = ht::case_sink(t, h);
    const Case c{t.t_q,     t.t_kv,  t.causal, t.window,
                 t.softcap, t.scale, t.seed,   ht::case_has_sinks(t) ? sinks.data() : nullptr};
    check_dense(b.gpu, t.n_heads, t.n_kv_heads, t.head_dim, t.kv, c, &t);
  }
  MESSAGE("max error so far: f32 " << g_max_error[0] << ", f16 " << g_max_error[1] << ", bf16 " << g_max_error[2]);
}

TEST_CASE("gpu dense attention matches the reference: GQA groups 1, 2, 4, 7, 8") {
  GpuContext* ctx = context(false);
  if (ctx == nullptr) return;
  for (uint32_t d : {64u, 80u, 128u}) {
    for (uint32_t group : {1u, 2u, 4u, 7u, 8u}) {
      const uint32_t n_kv = group == 8 ? 1 : 2;  // group 8 over one kv head: MQA
      const DType dt = group % 2 ? DType::kF32 : DType::kF16;
      DenseBackend b;
      make_dense(&b, ctx, group * n_kv, n_kv, d, dt, 70, 130);
      const Case cases[] = {{1, 130, true, 0, 0.0f},
                            {17, 65, true, 0, 0.0f},
                            {70, 70, true, 24, 20.0f},
                            {65, 130, false, 0, 0.0f},
                            {70, 16, true, 0, 0.0f}};
      uint64_t seed = 100;
      for (Case c : cases) {
        c.seed = seed++;
        check_dense(b.gpu, group * n_kv, n_kv, d, dt, c);
      }
    }
  }
  MESSAGE("max error so far: f32 " << g_max_error[0] << ", f16 " << g_max_error[1] << ", bf16 " << g_max_error[2]);
}

TEST_CASE("gpu dense attention without 16-bit storage and through a staging buffer") {
  GpuContext* ctx = context(true);
  if (ctx == nullptr) return;
  CHECK_FALSE(ctx->info().storage_16bit);
  CHECK_FALSE(ctx->info().host_mapped);
  for (uint32_t d : {50u, 64u, 128u}) {
    for (DType dt : {DType::kF32, DType::kF16, DType::kBF16}) {
      DenseBackend b;
      make_dense(&b, ctx, 6, 2, d, dt, 20, 300);
      CHECK(std::string(b.gpu.kernel_name()).rfind("attn_f32_", 0) == 0);
      const Case cases[] = {
          {20, 300, true, 0, 0.0f}, {1, 1, false, 0, 0.0f}, {20, 7, true, 0, 0.0f}, {3, 64, false, 10, 15.0f}};
      uint64_t seed = 200;
      for (Case c : cases) {
        c.seed = seed++;
        check_dense(b.gpu, 6, 2, d, dt, c);
      }
    }
  }
  MESSAGE("max error so far: f32 " << g_max_error[0] << ", f16 " << g_max_error[1] << ", bf16 " << g_max_error[2]);
}

// Learned sink logits against the reference, mapped and through the staging buffer (where the
// sinks reach the device by an update in the command buffer). With split_kv_min_keys 32 the
// decode cases split, only split 0 starting from the sink; the d256 case's key tile (8 keys on
// lavapipe) gives chunks of 48 keys, so its rows past 48 see no key of chunk 0.
TEST_CASE("gpu sink logits match the reference: split-KV decode, fully masked rows, GQA, f16") {
  struct SinkCase {
    uint32_t n_heads, n_kv_heads, head_dim;
    DType dt;
    Case c;
    float sink_base;  // sink of head h: sink_base + 0.75 · ((5h + 2) mod 9)
  };
  const SinkCase cases[] = {
      {8, 2, 64, DType::kF16, {1, 1100, true, 0, 0.0f}, -2.0f},         // split-KV decode, GQA 4
      {4, 1, 128, DType::kBF16, {1, 900, true, 300, 0.0f}, -1.0f},      // split over a window, MQA
      {4, 1, 64, DType::kF32, {1, 500, true, 0, 0.0f}, 12.0f},          // the sink takes most weight
      {1, 1, 256, DType::kF32, {64, 300, false, 129, 0.0f}, -2.0f},     // chunk 0 unseen by rows >= 48
      {4, 2, 64, DType::kF32, {20, 7, true, 0, 0.0f}, -2.0f},           // rows 0..12 see no key
      {6, 2, 80, DType::kF16, {9, 4, true, 2, 0.0f}, -3.0f},            // masked rows, window, generic d
      {14, 2, 64, DType::kF16, {17, 65, true, 0, 20.0f}, -2.0f},        // GQA 7, softcap
      {4, 4, 128, DType::kF16, {40, 40, true, 0, 0.0f, 0.3f}, -40.0f},  // sinks far below every logit
  };
  for (bool fallback : {false, true}) {
    GpuContext* ctx = context(fallback);
    if (ctx == nullptr) return;
    INFO("fallback context (f32 storage, staging): " << fallback);
    uint64_t seed = 300;
    for (const SinkCase& sc : cases) {
      std::vector<float> sinks(sc.n_heads);
      for (uint32_t h = 0; h < sc.n_heads; ++h) sinks[h] = sc.sink_base + 0.75f * static_cast<float>((5 * h + 2) % 9);
      DenseBackend b;
      make_dense(&b, ctx, sc.n_heads, sc.n_kv_heads, sc.head_dim, sc.dt, sc.c.t_q, sc.c.t_kv);
      Case c = sc.c;
      c.seed = seed++;
      c.sinks = sinks.data();
      check_dense(b.gpu, sc.n_heads, sc.n_kv_heads, sc.head_dim, sc.dt, c);
      c.sinks = nullptr;  // the same backend without sinks afterwards: nothing of them stays
      check_dense(b.gpu, sc.n_heads, sc.n_kv_heads, sc.head_dim, sc.dt, c);
    }
  }
  MESSAGE("max error so far: f32 " << g_max_error[0] << ", f16 " << g_max_error[1] << ", bf16 " << g_max_error[2]);
}

namespace {

// The KvCache use: the same config on the CPU and the GPU, prefill in chunks, then decode; the
// outputs must agree within the dtype's tolerance at every step.
void check_cache_against_cpu(GpuContext* ctx, const headway::Config& config, uint32_t max_tokens,
                             uint32_t prefill_chunk, uint32_t prefill, uint32_t decode, uint32_t attend_every = 1,
                             const float* sinks = nullptr) {
  headway::PlanOptions po;
  po.max_tokens = max_tokens;
  po.weights_in_arena = false;
  const headway::Result<Plan> plan = headway::make_plan(config, po);
  REQUIRE_MESSAGE(plan.ok(), plan.status().message());
  const Plan& p = plan.value();
  INFO("kv " << headway::dtype_name(config.kv_dtype) << ", window " << config.window << ", cache_rows " << p.cache_rows
             << ", max_seq " << config.max_seq);

  headway::CpuBackend cpu;
  const size_t bytes = headway::CpuBackend::memory_bytes(p, 1);
  std::vector<uint8_t> mem(bytes + 64);
  void* aligned = mem.data() + (64 - reinterpret_cast<uintptr_t>(mem.data()) % 64) % 64;
  Status st = cpu.create(p, nullptr, aligned, bytes);
  REQUIRE_MESSAGE(st.ok(), st.message());
  GpuBackend gpu;
  st = gpu.create(ctx, p);
  REQUIRE_MESSAGE(st.ok(), st.message());
  INFO(gpu.description());
  const headway::Backend both[2] = {&cpu, &gpu};  // the tagged view: one loop drives either
  CHECK(both[0].kind() == headway::BackendKind::kCpu);
  CHECK(both[1].kind() == headway::BackendKind::kGpu);

  const uint32_t kv_width = p.kv_width, q_width = p.q_width;
  Rng rng(config.window * 13 + static_cast<uint32_t>(config.kv_dtype));
  std::vector<float> q(size_t{max_tokens} * q_width), k(size_t{max_tokens} * kv_width), v(k.size());
  std::vector<float> o_cpu(q.size()), o_gpu(q.size());
  double worst = 0.0;
  uint32_t pos = 0;
  const uint32_t total = prefill + decode;
  for (uint32_t step = 0; pos < total; ++step) {
    const uint32_t n = pos < prefill ? (prefill - pos < prefill_chunk ? prefill - pos : prefill_chunk) : 1;
    for (float& x : q) x = rng.normal();
    for (float& x : k) x = rng.normal();
    for (float& x : v) x = rng.normal();
    for (headway::Backend b : both) {
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
    for (size_t i = 0; i < size_t{n} * q_width; ++i) {
      const double err = std::fabs(static_cast<double>(o_gpu[i]) - o_cpu[i]);
      if (!(err <= worst)) worst = std::isnan(err) ? 1e30 : err;
    }
  }
  CHECK_MESSAGE(worst <= tolerance(config.kv_dtype), "max |gpu − cpu| " << worst);
}

headway::Config cache_config(DType dt, uint32_t window, uint32_t max_seq) {
  headway::Config c;
  c.set_name("gpu-test");
  c.n_heads = 8;
  c.n_kv_heads = 2;
  c.head_dim = 64;
  c.d_model = 512;
  c.max_seq = max_seq;
  c.rope.style = headway::RopeStyle::kNeox;
  c.rope.theta = 10000.0f;
  c.window = window;
  c.softcap = window ? 30.0f : 0.0f;
  c.causal = true;
  c.kv_dtype = dt;
  return c;
}

}  // namespace

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

TEST_CASE("gpu backend rejects calls outside its plan with a message") {
  GpuContext* ctx = context(false);
  if (ctx == nullptr) return;
  GpuBackend none;
  float x[64] = {};
  CHECK(none.attend(x, 64, x, 64, 1).code() == Code::kFailedPrecondition);
  CHECK(none.create(nullptr, Plan{}).code() == Code::kFailedPrecondition);

  AttentionShape s;
  s.t_q = 4;
  s.t_kv = 8;
  s.n_heads = 2;
  s.n_kv_heads = 1;
  s.head_dim = 8;
  const headway::Result<Plan> plan = headway::dense_plan(s, DType::kF32);
  REQUIRE(plan.ok());
  GpuBackend gpu;
  REQUIRE(gpu.create(ctx, plan.value()).ok());
  std::vector<float> q(64 * 16), o(q.size()), kv(64 * 8);
  AttentionShape big = s;
  big.t_q = 5;
  Status st = gpu.attend_dense(q.data(), kv.data(), kv.data(), DType::kF32, o.data(), big, {});
  CHECK(st.code() == Code::kOutOfRange);
  CHECK(std::string(st.message()).find("max_tokens 4") != std::string::npos);
  AttentionShape heads = s;
  heads.n_heads = 4;
  CHECK(gpu.attend_dense(q.data(), kv.data(), kv.data(), DType::kF32, o.data(), heads, {}).code() ==
        Code::kInvalidArgument);
  st = gpu.attend_dense(q.data(), kv.data(), kv.data(), DType::kF16, o.data(), s, {});
  CHECK(st.code() == Code::kInvalidArgument);
  CHECK(std::string(st.message()).find("f16") != std::string::npos);
  AttentionParams bad;
  bad.softcap = -1.0f;
  CHECK(gpu.attend_dense(q.data(), kv.data(), kv.data(), DType::kF32, o.data(), s, bad).code() ==
        Code::kInvalidArgument);
  float sinks[2] = {0.5f, -1.0f};
  AttentionParams with_sinks;
  with_sinks.sinks = sinks;
  CHECK(gpu.attend_dense(q.data(), kv.data(), kv.data(), DType::kF32, o.data(), s, with_sinks).ok());
  sinks[1] = NAN;  // attend()'s check and message
  st = gpu.attend_dense(q.data(), kv.data(), kv.data(), DType::kF32, o.data(), s, with_sinks);
  CHECK(st.code() == Code::kInvalidArgument);
  CHECK(std::string(st.message()) == "attention: sinks[1] = nan is not finite");
  CHECK(gpu.attend(q.data(), 16, o.data(), 16, 1).code() == Code::kInvalidArgument);  // empty cache
  REQUIRE(gpu.append(kv.data(), 8, kv.data(), 8, 8).ok());
  CHECK(gpu.append(kv.data(), 8, kv.data(), 8, 1).code() == Code::kOutOfRange);  // past max_seq 8
  CHECK(gpu.attend(q.data(), 16, o.data(), 16, 5).code() == Code::kOutOfRange);  // past max_tokens 4
  CHECK(gpu.attend(q.data(), 16, o.data(), 16, 4).ok());
  st = gpu.attend(q.data(), 16, o.data(), 16, 4, sinks);  // KvCache::attend's check and message
  CHECK(st.code() == Code::kInvalidArgument);
  CHECK(std::string(st.message()) == "attention: sinks[1] = nan is not finite");
  sinks[1] = -1.0f;
  CHECK(gpu.attend(q.data(), 16, o.data(), 16, 4, sinks).ok());

  // A K/V buffer past maxStorageBufferRange (at most 4 GiB on any device): 32 kv heads × 2^20
  // rows × 128 × 4 bytes = 16 GiB.
  headway::Config c = cache_config(DType::kF32, 0, 1u << 20);
  c.n_heads = 32;
  c.n_kv_heads = 32;
  c.head_dim = 128;
  c.d_model = 4096;
  const headway::Result<Plan> huge = headway::make_plan(c, {});
  REQUIRE(huge.ok());
  GpuBackend too_big;
  st = too_big.create(ctx, huge.value());
  CHECK(st.code() == Code::kUnsupported);
  CHECK(std::string(st.message()).find("maxStorageBufferRange") != std::string::npos);
}

TEST_CASE("gpu attention never reads keys a row does not see") {
  GpuContext* ctx = context(false);
  if (ctx == nullptr) return;
  AttentionShape s;
  s.t_q = 3;
  s.t_kv = 5;
  s.n_heads = 1;
  s.n_kv_heads = 1;
  s.head_dim = 4;
  const headway::Result<Plan> plan = headway::dense_plan(s, DType::kF32);
  REQUIRE(plan.ok());
  GpuBackend gpu;
  REQUIRE(gpu.create(ctx, plan.value()).ok());
  std::vector<float> q(12, 0.5f), k(20, 0.25f), v(20, 1.0f), o(12, -1.0f);
  for (int d = 0; d < 4; ++d) {
    k[4 * 4 + d] = INFINITY;  // the last key: only the last query sees it (causal)
    v[4 * 4 + d] = NAN;
  }
  AttentionParams p;
  p.causal = true;
  REQUIRE(gpu.attend_dense(q.data(), k.data(), v.data(), DType::kF32, o.data(), s, p).ok());
  for (int e = 0; e < 8; ++e) CHECK(o[e] == doctest::Approx(1.0));  // rows 0, 1: keys 0..2, 0..3
  CHECK(std::isnan(o[8]));                                          // row 2 sees the NaN
}

TEST_CASE("gpu append and attend allocate nothing (operator new) after create") {
  for (bool fallback : {false, true}) {
    GpuContext* ctx = context(fallback);
    if (ctx == nullptr) return;
    headway::PlanOptions po;
    po.max_tokens = 8;
    po.weights_in_arena = false;
    const headway::Result<Plan> plan = headway::make_plan(cache_config(DType::kF16, 16, 64), po);
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
    const uint64_t recorded = headway::gpu::recorded_command_buffers();
    ht::NewCount count;
    for (int step = 0; step < 5 && ok; ++step) {  // 8 + 5 · 8 = 48 positions: the 23-row ring wraps
      ok = gpu.append(kv.data(), p.kv_width, kv.data(), p.kv_width, 8).ok();
      ok = ok && gpu.attend(q.data(), p.q_width, o.data(), p.q_width, step % 2 ? 1 : 8).ok();
    }
    const long news = count.stop();
    CHECK(ok);
    CHECK(news == 0);
    // Mapped memory: every call resubmits the command buffer recorded at create; staged: each
    // attend records its copies.
    CHECK(headway::gpu::recorded_command_buffers() - recorded == (fallback ? 5u : 0u));
  }
}

// Decode on mapped memory (lavapipe, unified-memory devices) records nothing: the call's values
// reach the shaders through the parameter buffer, the dispatch sizes (split or not, the merge's 0
// groups when not) through the indirect buffer.
TEST_CASE("gpu decode steps on mapped memory record no command buffer: split-KV or not, with sinks") {
  GpuContext* ctx = context(false);
  if (ctx == nullptr) return;
  if (!ctx->info().host_mapped) {
    MESSAGE("skipped: the device has no host-mapped memory (every call is recorded there)");
    return;
  }
  headway::PlanOptions po;
  po.max_tokens = 64;
  po.weights_in_arena = false;
  const headway::Result<Plan> plan = headway::make_plan(cache_config(DType::kF16, 0, 1200), po);
  REQUIRE(plan.ok());
  const Plan& p = plan.value();
  GpuBackend gpu;
  REQUIRE(gpu.create(ctx, p).ok());
  std::vector<float> q(size_t{64} * p.q_width, 0.5f), o(q.size()), kv(size_t{64} * p.kv_width, 0.25f);
  const float sinks[8] = {-2.0f, 0.5f, 1.25f, -0.75f, 3.0f, -4.0f, 0.0f, 2.0f};
  const uint64_t recorded = headway::gpu::recorded_command_buffers();
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
  CHECK(headway::gpu::recorded_command_buffers() == recorded);
}
