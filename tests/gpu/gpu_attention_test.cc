// The Vulkan backend (include/headway/backend.hpp) against the double-precision reference: dense
// calls (attend_dense) over every head_dim, KV dtype (q8_0 and q4_0 included, with the f16 scales
// that need care), mask, the shared case table (sink logits, sink tokens and ALiBi included),
// mapped and staged memory; the tiling and split-KV choices; the calls it rejects. The cache path
// against the CPU backend is in gpu_session_test.cc. In CI there is no GPU: ctest pins the Vulkan
// loader to Mesa's lavapipe (runtime/gpu/CMakeLists.txt, headway_gpu_test_environment). Run the
// binary directly to test the machine's own GPU.
//
// Inputs are unit-normal with fixed seeds; K/V reach the reference rounded to their storage
// dtype (q8_0 and q4_0: each row quantized by the library's row functions and read back, as the
// kernel suite does), so the tolerances cover f32 accumulation order and exp:
//   max |gpu − reference| <= 1e-4 (f32, q8_0 and q4_0 K/V), 2e-3 (f16), 3e-2 (bf16).
// Rows that see no key must be exact zeros (with sink logits too: the sink takes all the weight).
//
// The test contexts split K/V from 32 keys on (tests/gpu/gpu_test_support.hpp), so the split-KV
// path and its merge run in the cases with few query rows and many keys.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "headway/backend.hpp"
#include "headway/dtype_convert.hpp"
#include "headway/quantize.hpp"
#include "runtime/gpu/gpu_tiling.hpp"
#include "tests/gpu/gpu_test_support.hpp"
#include "tests/reference/attention_cases.hpp"
#include "tests/reference/reference_attention.hpp"
#include "tests/support/quantized_rows.hpp"
#include "tests/support/test_rng.hpp"

namespace ht = headway::test;
using headway::AttentionParams;
using headway::AttentionShape;
using headway::Code;
using headway::DType;
using headway::GpuBackend;
using headway::GpuContext;
using headway::Plan;
using headway::Status;

namespace {

using headway::test::Rng;

// Largest error seen per K/V dtype, printed at the end of the dense tests.
double g_max_error[5] = {0, 0, 0, 0, 0};

std::string max_errors() {
  char buf[160];
  std::snprintf(buf, sizeof(buf), "max error so far: f32 %g, f16 %g, bf16 %g, q8_0 %g, q4_0 %g", g_max_error[0],
                g_max_error[1], g_max_error[2], g_max_error[3], g_max_error[4]);
  return buf;
}

struct Case {
  uint32_t t_q = 1, t_kv = 1;
  bool causal = false;
  uint32_t window = 0;
  float softcap = 0.0f;
  float scale = 0.0f;
  uint64_t seed = 1;
  const float* sinks = nullptr;  // n_heads sink logits, or none
  uint32_t sink_tokens = 0;
  const float* alibi = nullptr;  // n_heads ALiBi slopes, or none
  // A packed batch: cumulative lengths [n_seqs + 1] of the queries and the keys (null: the
  // queries'), or none.
  const uint32_t* cu_q = nullptr;
  const uint32_t* cu_k = nullptr;
  uint32_t n_seqs = 0;
  uint32_t prefix = 0;  // prefix-LM (with causal)
  bool window_symmetric = false;
  // A general mask [t_q, t_kv] (rows t_kv apart), one of the two or none; the backend must be
  // made with dense masks.
  const uint8_t* mask_bool = nullptr;
  const float* mask_additive = nullptr;
};

std::string describe(const AttentionShape& s, DType dt, const Case& c) {
  char buf[256];
  std::snprintf(buf, sizeof(buf),
                "t_q=%u t_kv=%u heads=%u/%u d=%u kv=%s%s window=%u softcap=%g scale=%g seed=%llu%s sink_tokens=%u%s",
                c.t_q, c.t_kv, s.n_heads, s.n_kv_heads, s.head_dim, headway::dtype_name(dt), c.causal ? " causal" : "",
                c.window, static_cast<double>(c.softcap), static_cast<double>(c.scale),
                static_cast<unsigned long long>(c.seed), c.sinks ? " sinks" : "", c.sink_tokens,
                c.alibi ? " alibi" : "");
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
    if (dt == DType::kF32 || headway::dtype_is_block(dt)) {
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
  // A block format: each (token, kv head) row quantized; the reference reads its values.
  std::vector<uint8_t> kq, vq;
  if (headway::dtype_is_block(dt)) {
    REQUIRE(ht::quantize_rows_and_back(dt, kref, head_dim, &kq));
    REQUIRE(ht::quantize_rows_and_back(dt, vref, head_dim, &vq));
  }
  const void* k = !kq.empty()         ? static_cast<const void*>(kq.data())
                  : dt == DType::kF32 ? static_cast<const void*>(k32.data())
                                      : k16.data();
  const void* v = !vq.empty()         ? static_cast<const void*>(vq.data())
                  : dt == DType::kF32 ? static_cast<const void*>(v32.data())
                                      : v16.data();
  AttentionParams p;
  p.causal = c.causal;
  p.window = c.window;
  p.softcap = c.softcap;
  p.scale = c.scale;
  p.sinks = c.sinks;
  p.sink_tokens = c.sink_tokens;
  p.alibi_slopes = c.alibi;
  p.cu_seqlens_q = c.cu_q;
  p.cu_seqlens_k = c.cu_k;
  p.n_seqs = c.n_seqs;
  p.prefix = c.prefix;
  p.window_symmetric = c.window_symmetric;
  p.mask_bool = c.mask_bool;
  p.mask_additive = c.mask_additive;
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
  r.sink_tokens = c.sink_tokens;
  if (c.alibi != nullptr) r.alibi_slopes.assign(c.alibi, c.alibi + n_heads);
  r.prefix = c.prefix;
  r.window_symmetric = c.window_symmetric;
  if (c.cu_q != nullptr) r.cu_q.assign(c.cu_q, c.cu_q + c.n_seqs + 1);
  if (c.cu_k != nullptr) r.cu_k.assign(c.cu_k, c.cu_k + c.n_seqs + 1);
  const size_t entries = size_t{c.t_q} * c.t_kv;
  if (c.mask_bool != nullptr) r.mask_bool.assign(c.mask_bool, c.mask_bool + entries);
  if (c.mask_additive != nullptr) r.mask_additive.assign(c.mask_additive, c.mask_additive + entries);
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
  CHECK_MESSAGE(worst <= ht::gpu_tolerance(dt), "max error " << worst << " at element " << worst_at << " (gpu "
                                                             << o[worst_at] << ", reference " << ref[worst_at] << ")");
}

struct DenseBackend {
  GpuBackend gpu;
  bool ok = false;
};

// A backend for dense calls up to t_q_max × t_kv_max (with room for general masks where asked).
void make_dense(DenseBackend* b, GpuContext* ctx, uint32_t n_heads, uint32_t n_kv_heads, uint32_t head_dim, DType dt,
                uint32_t t_q_max, uint32_t t_kv_max, bool dense_masks = false) {
  AttentionShape s;
  s.t_q = t_q_max;
  s.t_kv = t_kv_max;
  s.n_heads = n_heads;
  s.n_kv_heads = n_kv_heads;
  s.head_dim = head_dim;
  const headway::Result<Plan> plan = headway::dense_plan(s, dt);
  REQUIRE_MESSAGE(plan.ok(), plan.status().message());
  const Status st = b->gpu.create(ctx, plan.value(), dense_masks);
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
    for (uint32_t d = 1; d <= headway::gpu::kGpuMaxHeadDim; ++d) {
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
  GpuContext* ctx = ht::gpu_context(false);
  if (ctx == nullptr) return;
  for (uint32_t d : {1u, 8u, 50u, 64u, 80u, 96u, 128u, 256u, 288u, 576u}) {  // 288, 576: MLA's rows
    for (DType dt : {DType::kF32, DType::kF16, DType::kBF16, DType::kQ8_0, DType::kQ4_0}) {
      DenseBackend b;
      make_dense(&b, ctx, 4, 2, d, dt, 300, 300);
      uint64_t seed = 1;
      for (const Case& base : kLengthCases) {
        // 300 × 300 with f32 K/V only, up to d256: the double reference of it is most of this
        // test's time (minutes under the sanitizers); the other dtypes and MLA's sizes read the
        // same shader with 300 keys.
        if (base.t_q == 300 && (dt != DType::kF32 || d > 256)) continue;
        Case c = base;
        c.seed = seed++;
        check_dense(b.gpu, 4, 2, d, dt, c);
      }
    }
  }
  MESSAGE(max_errors());
}

// The shared case table (tests/reference/attention_cases.hpp), each case on a backend made for its shape.
TEST_CASE("gpu dense attention matches the reference: every case of the table") {
  GpuContext* ctx = ht::gpu_context(false);
  if (ctx == nullptr) return;
  for (const ht::AttentionCase& t : ht::kAttentionCases) {
    if (!ht::runs_on_gpu(t)) continue;
    INFO(t.name);
    DenseBackend b;
    make_dense(&b, ctx, t.n_heads, t.n_kv_heads, t.head_dim, t.kv, t.t_q, t.t_kv, ht::case_has_mask(t));
    std::vector<float> sinks(t.n_heads), slopes(t.n_heads);
    std::vector<uint8_t> mask_bool;
    std::vector<float> mask_additive;
    ht::generate_mask(t, [&](uint64_t, float e) {
      if (t.mask == ht::CaseMask::kBool) {
        mask_bool.push_back(e == 0.0f ? 1 : 0);
      } else {
        mask_additive.push_back(e);
      }
    });
    for (uint32_t h = 0; h < t.n_heads; ++h) {
      sinks[h] = ht::case_sink(t, h);
      slopes[h] = ht::case_alibi_slope(t, h);
    }
    Case c{t.t_q, t.t_kv, t.causal, t.window, t.softcap, t.scale, t.seed};
    c.sinks = ht::case_has_sinks(t) ? sinks.data() : nullptr;
    c.sink_tokens = t.sink_tokens;
    c.prefix = t.prefix;
    c.window_symmetric = t.window_symmetric;
    c.alibi = t.alibi ? slopes.data() : nullptr;
    c.mask_bool = mask_bool.empty() ? nullptr : mask_bool.data();
    c.mask_additive = mask_additive.empty() ? nullptr : mask_additive.data();
    check_dense(b.gpu, t.n_heads, t.n_kv_heads, t.head_dim, t.kv, c, &t);
  }
  MESSAGE(max_errors());
}

// A backend made without dense masks has no room for one: refused, naming it, O not written.
TEST_CASE("gpu dense attention refuses a general mask on a backend made without dense masks") {
  GpuContext* ctx = ht::gpu_context(false);
  if (ctx == nullptr) return;
  DenseBackend b;
  make_dense(&b, ctx, 2, 2, 64, DType::kF32, 4, 4);
  const AttentionShape shape{4, 4, 2, 2, 64};
  std::vector<float> q(4 * 2 * 64, 0.5f), kv(q.size(), 0.25f), o(q.size(), 7.0f);
  const std::vector<uint8_t> visible(16, 1);
  const std::vector<float> additive(16, 0.0f);
  for (int kind = 0; kind < 2; ++kind) {
    AttentionParams p;
    if (kind == 0) p.mask_bool = visible.data();
    else p.mask_additive = additive.data();
    const Status st = b.gpu.attend_dense(q.data(), kv.data(), kv.data(), DType::kF32, o.data(), shape, p);
    CHECK(st.code() == headway::Code::kFailedPrecondition);
    CHECK(std::string(st.message()).find("needs the backend created with dense_masks") != std::string::npos);
    CHECK(o[0] == 7.0f);
  }
}

TEST_CASE("gpu dense attention matches the reference: GQA groups 1, 2, 4, 7, 8") {
  GpuContext* ctx = ht::gpu_context(false);
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
  MESSAGE(max_errors());
}

// Without 16-bit storage f16 and bf16 K/V are widened to f32; the block formats keep their bytes
// (their shaders read uint words), staged rows of 34 · 3 = 102 (q8_0, d80) or 18 · 2 = 36 bytes
// (q4_0, d50) copied to rows that start anywhere in a word.
TEST_CASE("gpu dense attention without 16-bit storage and through a staging buffer") {
  GpuContext* ctx = ht::gpu_context(true);
  if (ctx == nullptr) return;
  CHECK_FALSE(ctx->info().storage_16bit);
  CHECK_FALSE(ctx->info().host_mapped);
  for (uint32_t d : {50u, 64u, 80u, 128u}) {
    for (DType dt : {DType::kF32, DType::kF16, DType::kBF16, DType::kQ8_0, DType::kQ4_0}) {
      if (d == 80 && !headway::dtype_is_block(dt)) continue;
      DenseBackend b;
      make_dense(&b, ctx, 6, 2, d, dt, 20, 300);
      const std::string storage = headway::dtype_is_block(dt) ? headway::dtype_name(dt) : "f32";
      CHECK(std::string(b.gpu.kernel_name()).rfind("attn_" + storage + "_", 0) == 0);
      const Case cases[] = {
          {20, 300, true, 0, 0.0f}, {1, 1, false, 0, 0.0f}, {20, 7, true, 0, 0.0f}, {3, 64, false, 10, 15.0f}};
      uint64_t seed = 200;
      for (Case c : cases) {
        c.seed = seed++;
        check_dense(b.gpu, 6, 2, d, dt, c);
      }
    }
  }
  MESSAGE(max_errors());
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
    GpuContext* ctx = ht::gpu_context(fallback);
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
  MESSAGE(max_errors());
}

// Sink tokens and ALiBi (the standard slopes) against the reference, mapped and through the
// staging buffer (where a dense call's slopes reach the device by an update in the command
// buffer). The decode cases split their keys (sink keys first, then the window's): on lavapipe
// the first has 300 keys in 5 chunks of 64, the first all sink keys, the second both, the rest
// window keys.
TEST_CASE("gpu sink tokens and ALiBi match the reference: split-KV over both spans, masked rows, staged") {
  struct SpanCase {
    uint32_t n_heads, n_kv_heads, head_dim;
    DType dt;
    Case c;
    uint32_t sink_tokens;
    bool alibi, sinks;
  };
  const SpanCase cases[] = {
      {4, 1, 64, DType::kF16, {1, 3000, true, 200, 0.0f}, 100, true, false},   // chunks: sink, both, window
      {4, 1, 64, DType::kF32, {1, 3000, true, 200, 0.0f}, 100, false, true},   // the same with sink logits
      {4, 2, 128, DType::kBF16, {2, 1500, true, 300, 0.0f}, 40, true, false},  // two decode tokens
      {8, 2, 64, DType::kF32, {4, 600, false, 100, 0.0f}, 8, true, false},     // bidirectional: |p − j|
      {4, 2, 64, DType::kF32, {20, 7, true, 4, 0.0f}, 2, true, true},          // rows 0..12 see no key
      {4, 2, 80, DType::kF16, {3, 3, true, 8, 0.0f}, 5, true, false},          // fewer keys than sink tokens
      {6, 3, 96, DType::kF16, {40, 90, true, 12, 20.0f}, 3, true, false},      // prefill chunk, softcap
      {4, 4, 64, DType::kF32, {30, 50, true, 0, 0.0f, 0.5f}, 0, true, false},  // ALiBi alone
  };
  for (bool fallback : {false, true}) {
    GpuContext* ctx = ht::gpu_context(fallback);
    if (ctx == nullptr) return;
    INFO("fallback context (f32 storage, staging): " << fallback);
    uint64_t seed = 400;
    for (const SpanCase& sc : cases) {
      std::vector<float> slopes(sc.n_heads), sinks(sc.n_heads);
      REQUIRE(headway::alibi_slopes(sc.n_heads, slopes.data()).ok());
      for (uint32_t h = 0; h < sc.n_heads; ++h) sinks[h] = -1.0f + 0.5f * static_cast<float>(h % 5);
      DenseBackend b;
      make_dense(&b, ctx, sc.n_heads, sc.n_kv_heads, sc.head_dim, sc.dt, sc.c.t_q, sc.c.t_kv);
      Case c = sc.c;
      c.seed = seed++;
      c.sink_tokens = sc.sink_tokens;
      c.alibi = sc.alibi ? slopes.data() : nullptr;
      c.sinks = sc.sinks ? sinks.data() : nullptr;
      check_dense(b.gpu, sc.n_heads, sc.n_kv_heads, sc.head_dim, sc.dt, c);
      c.sink_tokens = 0;  // the same backend without them afterwards: nothing of them stays
      c.alibi = nullptr;
      check_dense(b.gpu, sc.n_heads, sc.n_kv_heads, sc.head_dim, sc.dt, c);
    }
  }
  MESSAGE(max_errors());
}

TEST_CASE("gpu packed batches match the reference: each sequence within itself, masks from its start") {
  struct PackedCase {
    uint32_t n_heads, n_kv_heads, head_dim;
    DType dt;
    std::vector<uint32_t> cu_q, cu_k;  // cu_k empty: the queries'
    Case c;
    uint32_t sink_tokens;
    bool alibi;
    ht::CaseMask mask = ht::CaseMask::kNone;  // over the whole batch, off the diagonal NaN or hidden
  };
  const std::vector<PackedCase> cases = {
      {12, 12, 32, DType::kF32, {0, 12, 52, 59, 60, 93}, {}, {93, 93, false}, 0, false},  // MiniLM's shape
      {8, 2, 64, DType::kF16, {0, 15, 31, 48, 49}, {}, {49, 49, true, 9}, 0, false},
      {4, 1, 128, DType::kQ8_0, {0, 20, 23, 32}, {}, {32, 32, true, 6}, 2, true},
      {4, 2, 80, DType::kBF16, {0, 1, 3, 4}, {0, 1500, 1540, 2640}, {4, 2640, true, 0}, 0, false},  // split-KV
      {12, 12, 32, DType::kF32, {0, 12, 52, 59, 60, 93}, {}, {93, 93, false}, 0, false, ht::CaseMask::kBool},
      {4,
       2,
       64,
       DType::kF16,
       {0, 1, 3, 4},
       {0, 1500, 1540, 2640},
       {4, 2640, true, 0},
       0,
       false,
       ht::CaseMask::kAdditive},
  };
  for (bool fallback : {false, true}) {
    GpuContext* ctx = ht::gpu_context(fallback);
    if (ctx == nullptr) return;
    INFO("fallback context (f32 storage, staging): " << fallback);
    uint64_t seed = 700;
    for (const PackedCase& pc : cases) {
      std::vector<float> slopes(pc.n_heads);
      REQUIRE(headway::alibi_slopes(pc.n_heads, slopes.data()).ok());
      DenseBackend b;
      make_dense(&b, ctx, pc.n_heads, pc.n_kv_heads, pc.head_dim, pc.dt, pc.c.t_q, pc.c.t_kv,
                 pc.mask != ht::CaseMask::kNone);
      // The mask: a quarter of each sequence's own entries and every row 4 mod 11 hidden, the
      // rest visible (additive: in [−2, 2)); entries off the diagonal blocks hidden or NaN.
      std::vector<uint8_t> mask_bool;
      std::vector<float> mask_additive;
      const std::vector<uint32_t>& ck = pc.cu_k.empty() ? pc.cu_q : pc.cu_k;
      Rng mask_rng(seed);
      for (size_t s = 0; pc.mask != ht::CaseMask::kNone && s + 1 < pc.cu_q.size(); ++s) {
        for (uint32_t i = pc.cu_q[s]; i < pc.cu_q[s + 1]; ++i) {
          for (uint32_t j = 0; j < ck.back(); ++j) {
            const bool mine = j >= ck[s] && j < ck[s + 1];
            const uint64_t x = mask_rng.next();
            const bool hidden = x % 4 == 0 || i % 11 == 4;
            mask_bool.push_back(mine && !hidden ? 1 : 0);
            mask_additive.push_back(!mine    ? std::nanf("")
                                    : hidden ? -INFINITY
                                             : static_cast<float>(static_cast<int>(x >> 40 & 31) - 16) * 0.125f);
          }
        }
      }
      Case c = pc.c;
      if (pc.mask == ht::CaseMask::kBool) c.mask_bool = mask_bool.data();
      if (pc.mask == ht::CaseMask::kAdditive) c.mask_additive = mask_additive.data();
      c.seed = seed++;
      c.sink_tokens = pc.sink_tokens;
      c.alibi = pc.alibi ? slopes.data() : nullptr;
      c.cu_q = pc.cu_q.data();
      c.cu_k = pc.cu_k.empty() ? nullptr : pc.cu_k.data();
      c.n_seqs = static_cast<uint32_t>(pc.cu_q.size() - 1);
      check_dense(b.gpu, pc.n_heads, pc.n_kv_heads, pc.head_dim, pc.dt, c);
    }
  }
  MESSAGE(max_errors());
}

// A key row's blocks with the scales that need care (f16 subnormals, ±inf, NaN, −0), each kv
// head's row starting in a different place of a word: with one key every query row's O is that
// key's V row, which must be the library's dequantized values (dequantize_row, the CPU kernels'
// reading): finite values within a few ulps (exp(0) need not be exactly 1 on every device),
// non-finite ones the same.
TEST_CASE("gpu block formats decode the f16 scales as the CPU does: subnormal, inf, NaN, signed zero") {
  for (bool fallback : {false, true}) {
    GpuContext* ctx = ht::gpu_context(fallback);
    if (ctx == nullptr) return;
    INFO("fallback context (staging): " << fallback);
    for (DType dt : {DType::kQ8_0, DType::kQ4_0}) {
      INFO(std::string(headway::dtype_name(dt)));
      const uint32_t d = 80, n_kv = 3;  // 3 blocks a row, the last 16 values long
      const headway::QuantType qt = headway::quant_type_of(dt);
      const size_t block = headway::quant_block_bytes(qt), row = headway::dtype_row_bytes(dt, d);
      const uint16_t scales[n_kv][3] = {{0x0001, 0x03ff, 0x8400},   // smallest and largest subnormal, −2^−14
                                        {0x7e00, 0x7c00, 0xfc00},   // NaN, +inf, −inf
                                        {0x8000, 0x0000, 0x3c00}};  // −0, +0, 1
      std::vector<uint8_t> v(n_kv * row), k(n_kv * row);
      Rng rng(7);
      for (uint8_t& x : v) x = static_cast<uint8_t>(rng.next() >> 56);
      for (uint32_t g = 0; g < n_kv; ++g) {
        for (uint32_t b = 0; b < 3; ++b) {
          uint8_t* at = v.data() + g * row + b * block;
          std::memcpy(at, &scales[g][b], 2);
          at[2] = dt == DType::kQ8_0 ? 0 : 0x88;  // zero codes: inf · 0 is NaN, as on the CPU
        }
        for (uint32_t b = 0; b < 3; ++b) {  // K: finite, small
          const uint16_t one = 0x2000;      // 2^−7
          std::memcpy(k.data() + g * row + b * block, &one, 2);
        }
      }
      std::vector<float> want(size_t{n_kv} * d);
      for (uint32_t g = 0; g < n_kv; ++g) {
        REQUIRE(headway::dequantize_row(qt, v.data() + g * row, row, d, want.data() + g * d).ok());
      }
      AttentionShape s;
      s.t_q = 2;
      s.t_kv = 1;
      s.n_heads = 2 * n_kv;
      s.n_kv_heads = n_kv;
      s.head_dim = d;
      const headway::Result<Plan> plan = headway::dense_plan(s, dt);
      REQUIRE(plan.ok());
      GpuBackend gpu;
      REQUIRE(gpu.create(ctx, plan.value()).ok());
      std::vector<float> q(size_t{s.t_q} * s.n_heads * d, 0.25f), o(q.size(), 12345.0f);
      const Status st = gpu.attend_dense(q.data(), k.data(), v.data(), dt, o.data(), s, {});
      REQUIRE_MESSAGE(st.ok(), st.message());
      int bad = 0;
      for (uint32_t t = 0; t < s.t_q; ++t) {
        for (uint32_t h = 0; h < s.n_heads; ++h) {
          for (uint32_t i = 0; i < d; ++i) {
            const float got = o[(size_t{t} * s.n_heads + h) * d + i], w = want[size_t{h / 2} * d + i];
            const bool same = std::isnan(w)   ? std::isnan(got)
                              : std::isinf(w) ? got == w
                                              : std::fabs(got - w) <= 4e-7f * std::fabs(w);
            if (!same && bad++ < 5) FAIL_CHECK("head " << h << " value " << i << ": gpu " << got << ", cpu " << w);
          }
        }
      }
      CHECK(bad == 0);
    }
  }
}

TEST_CASE("gpu backend rejects calls outside its plan with a message") {
  GpuContext* ctx = ht::gpu_context(false);
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
  Plan bad_dtype = plan.value();  // made by hand, not by make_plan
  bad_dtype.config.kv_dtype = static_cast<DType>(9);
  GpuBackend gpu;
  Status st = gpu.create(ctx, bad_dtype);
  CHECK(st.code() == Code::kInvalidArgument);
  CHECK(std::string(st.message()).find("kv dtype q5_K (9) is not one of") != std::string::npos);
  REQUIRE(gpu.create(ctx, plan.value()).ok());
  std::vector<float> q(64 * 16), o(q.size()), kv(64 * 8);
  AttentionShape big = s;
  big.t_q = 5;
  st = gpu.attend_dense(q.data(), kv.data(), kv.data(), DType::kF32, o.data(), big, {});
  CHECK(st.code() == Code::kOutOfRange);
  CHECK(std::string(st.message()).find("max_tokens 4") != std::string::npos);
  AttentionShape heads = s;
  heads.n_heads = 4;
  CHECK(gpu.attend_dense(q.data(), kv.data(), kv.data(), DType::kF32, o.data(), heads, {}).code() ==
        Code::kInvalidArgument);
  st = gpu.attend_dense(q.data(), kv.data(), kv.data(), DType::kF16, o.data(), s, {});
  CHECK(st.code() == Code::kInvalidArgument);
  CHECK(std::string(st.message()).find("f16") != std::string::npos);
  st = gpu.attend_dense(q.data(), kv.data(), kv.data(), DType::kQ4_0, o.data(), s, {});
  CHECK(st.code() == Code::kInvalidArgument);
  CHECK(std::string(st.message()) ==
        "gpu backend: k and v are q4_0, the plan stores f32 (make the plan with dense_plan(shape, q4_0))");
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
  // Sink tokens and ALiBi slopes: attend()'s checks and messages.
  AttentionParams sink_tokens;
  sink_tokens.sink_tokens = 2;
  sink_tokens.window = 2;
  st = gpu.attend_dense(q.data(), kv.data(), kv.data(), DType::kF32, o.data(), s, sink_tokens);
  CHECK(st.code() == Code::kInvalidArgument);
  CHECK(std::string(st.message()) == "attention: sink_tokens 2 needs a sliding window larger than it (window 2)");
  sink_tokens.window = 3;
  CHECK(gpu.attend_dense(q.data(), kv.data(), kv.data(), DType::kF32, o.data(), s, sink_tokens).ok());
  float slopes[2] = {0.5f, NAN};
  AttentionParams alibi;
  alibi.alibi_slopes = slopes;
  st = gpu.attend_dense(q.data(), kv.data(), kv.data(), DType::kF32, o.data(), s, alibi);
  CHECK(st.code() == Code::kInvalidArgument);
  CHECK(std::string(st.message()) == "attention: alibi_slopes[1] = nan is not finite");

  // A K/V buffer past maxStorageBufferRange (at most 4 GiB on any device): 32 kv heads × 2^20
  // rows × 128 × 4 bytes = 16 GiB.
  headway::Config c = ht::cache_config(DType::kF32, 0, 1u << 20);
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
  GpuContext* ctx = ht::gpu_context(false);
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
