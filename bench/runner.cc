#include "bench/runner.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "headway/detail/attention_policy.hpp"
#include "runtime/attention/attention_run.hpp"
#include "simd/attention/attention.h"
#include "simd/gated_delta/gated_delta.h"

namespace headway::bench {
namespace {

using Clock = std::chrono::steady_clock;

constexpr uint64_t kMiB = uint64_t{1} << 20;
constexpr uint64_t kPoolMin = 64 * kMiB;
constexpr uint64_t kPoolMax = 1024 * kMiB;
constexpr uint64_t kCopyAlign = 4096;

uint64_t align_to(uint64_t n, uint64_t a) { return (n + a - 1) / a * a; }

// One copy's footprint: K, then V at the next 64-byte boundary, padded to a page.
uint64_t copy_stride(const BenchCase& c) {
  const uint64_t one = case_kv_bytes(c) / 2;
  return align_to(align_to(one, 64) + one, kCopyAlign);
}

// One state copy of a Gated DeltaNet case: value_heads · dk · dv f32, padded to a page.
uint64_t state_stride(const DeltaCase& c) { return align_to(delta_state_bytes(c), kCopyAlign); }

// A pool of copies of at least `largest` bytes: twice the last-level cache, within 64 MiB..1 GiB.
uint64_t pool_bytes(uint64_t largest, uint64_t llc_bytes) {
  return std::max(std::clamp<uint64_t>(2 * llc_bytes, kPoolMin, kPoolMax), largest);
}

struct Lcg {
  uint64_t s;
  uint32_t next() {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    return static_cast<uint32_t>(s >> 32);
  }
  float uniform() { return static_cast<float>(static_cast<int32_t>(next())) * (1.0f / 2147483648.0f); }
};

// Calls fn() once to warm up, then `reps` times (kAutoReps: 5..200, ~0.25 s), each timed alone.
template <class Fn>
Status time_calls(uint32_t reps, CaseResult* r, Fn&& fn) {
  Clock::time_point t0 = Clock::now();
  HEADWAY_RETURN_IF_ERROR(fn(0u));
  const double warm = std::chrono::duration<double>(Clock::now() - t0).count();
  if (reps == kAutoReps) {
    const double n = std::ceil(0.25 / (warm > 1e-7 ? warm : 1e-7));
    reps = static_cast<uint32_t>(std::clamp(n, 5.0, 200.0));
  }
  std::vector<double> ms(reps);
  for (uint32_t i = 0; i < reps; ++i) {
    t0 = Clock::now();
    HEADWAY_RETURN_IF_ERROR(fn(i + 1));
    ms[i] = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  }
  std::sort(ms.begin(), ms.end());
  r->reps = reps;
  r->min_ms = ms.front();
  r->max_ms = ms.back();
  r->median_ms = reps % 2 ? ms[reps / 2] : 0.5 * (ms[reps / 2 - 1] + ms[reps / 2]);
  return Status();
}

void finish(const BenchCase& c, CaseResult* r) {
  const double s = r->median_ms * 1e-3;
  const double bytes = static_cast<double>(case_kv_bytes(c));
  r->spec = &c;
  r->gflops = case_flops(c) / s * 1e-9;
  r->kv_gbps = bytes / s * 1e-9;
  r->intensity = case_flops(c) / bytes;
}

std::vector<float> random_floats(size_t n, uint64_t seed) {
  std::vector<float> x(n);
  Lcg rng{seed};
  for (float& v : x) v = rng.uniform();
  return x;
}

// The kernel attend() runs for t_q queries of this case (production defaults: the shapes alone
// choose).
const char* cpu_kernel_name(const BenchCase& c, uint32_t t_q) {
  simd::AttentionArgs a;
  a.t_q = t_q;
  a.t_kv = c.batch == Batch::kNone ? c.t_kv : t_q;
  a.n_heads = c.n_heads;
  a.n_kv_heads = c.n_kv_heads;
  a.head_dim = c.head_dim;
  a.causal = c.causal;
  return simd::attention_kernel_name(a);
}

// An encoder batch runs each sentence as a call of its own, whose kernel its length chooses
// (monotonically: the decode tiling below a few query rows): the shortest's and the longest's,
// "a/b" where they differ.
void cpu_kernel_label(const BenchCase& c, char* out, size_t size) {
  if (c.batch == Batch::kNone) {
    std::snprintf(out, size, "%s", cpu_kernel_name(c, c.t_q));
    return;
  }
  uint32_t shortest = UINT32_MAX, longest = 0;
  for (uint32_t b = 0; b < encoder_lengths().size(); ++b) {
    const uint32_t rows = encoder_row(c, b + 1) - encoder_row(c, b);
    shortest = std::min(shortest, rows);
    longest = std::max(longest, rows);
  }
  const char* first = cpu_kernel_name(c, shortest);
  const char* last = cpu_kernel_name(c, longest);
  if (std::strcmp(first, last) == 0) std::snprintf(out, size, "%s", first);
  else std::snprintf(out, size, "%s/%s", first, last);
}

// `rows` rows of `heads` vectors of d values: each vector L2-normalized, then times scale, as the
// layer leaves q (scale dk^-1/2) and k (1).
std::vector<float> normalized_rows(uint32_t rows, uint32_t heads, uint32_t d, float scale, uint64_t seed) {
  std::vector<float> x = random_floats(size_t{rows} * heads * d, seed);
  for (size_t at = 0; at < x.size(); at += d) {
    float sum = 0.0f;
    for (uint32_t i = 0; i < d; ++i) sum += x[at + i] * x[at + i];
    const float s = scale / std::sqrt(sum + 1e-6f);
    for (uint32_t i = 0; i < d; ++i) x[at + i] *= s;
  }
  return x;
}

// One repetition of a Gated DeltaNet case: a task per value head, as the layer's run_head.
struct DeltaCall {
  const DeltaCase* c;
  float* states;  // this repetition's copy [value_heads, dk, dv]
  const float *q, *k, *v, *g, *beta;
  float* out;
  float* scratch;  // [slots, scratch_stride]
  size_t scratch_stride;
};

simd::GatedDeltaArgs delta_args(const DeltaCall& d, uint32_t h) {
  const DeltaCase& c = *d.c;
  const uint32_t kh = h / (c.value_heads / c.key_heads);
  simd::GatedDeltaArgs a;
  a.state = d.states + size_t{h} * c.dk * c.dv;
  a.dk = c.dk;
  a.dv = c.dv;
  a.q = d.q + size_t{kh} * c.dk;
  a.k = d.k + size_t{kh} * c.dk;
  a.qk_stride = size_t{c.key_heads} * c.dk;
  a.v = d.v + size_t{h} * c.dv;
  a.v_stride = size_t{c.value_heads} * c.dv;
  a.g = d.g + h;
  a.beta = d.beta + h;
  a.gb_stride = c.value_heads;
  a.out = d.out + size_t{h} * c.dv;
  a.out_stride = size_t{c.value_heads} * c.dv;
  a.t = c.t;
  return a;
}

void delta_head(void* ctx, uint32_t slot, size_t head) {
  const DeltaCall& d = *static_cast<const DeltaCall*>(ctx);
  const simd::GatedDeltaArgs a = delta_args(d, static_cast<uint32_t>(head));
  if (d.c->kind == CaseKind::kDecode) simd::gated_delta_recurrent(a);
  else simd::gated_delta_chunked(a, d.scratch + slot * d.scratch_stride);
}

}  // namespace

const char* kv_layout_name(KvLayout layout) { return layout == KvLayout::kCache ? "cache" : "dense"; }

Status make_case_call(const BenchCase& c, CaseCall* call) {
  call->shape.t_q = c.t_q;
  call->shape.t_kv = c.t_kv;
  call->shape.n_heads = c.n_heads;
  call->shape.n_kv_heads = c.n_kv_heads;
  call->shape.head_dim = c.head_dim;
  call->params = AttentionParams();
  call->params.causal = c.causal;
  call->alibi_slopes.assign(c.alibi ? c.n_heads : 0, 0.0f);
  if (c.alibi) {
    const Status st = alibi_slopes(c.n_heads, call->alibi_slopes.data());
    if (!st.ok()) return Status::error(st.code(), "bench case %s: %s", c.name, st.message());
    call->params.alibi_slopes = call->alibi_slopes.data();
  }
  call->cu_seqlens.clear();
  call->mask.clear();
  if (c.batch == Batch::kNone) return Status();
  const uint32_t n = static_cast<uint32_t>(encoder_lengths().size());
  call->cu_seqlens.resize(n + 1);
  for (uint32_t b = 0; b <= n; ++b) call->cu_seqlens[b] = encoder_row(c, b);
  if (call->cu_seqlens[n] != c.t_q || c.t_q != c.t_kv) {
    return Status::error(Code::kInternal, "bench case %s: its sentences take %u rows, its shape %u queries and %u keys",
                         c.name, call->cu_seqlens[n], c.t_q, c.t_kv);
  }
  call->params.cu_seqlens_q = call->cu_seqlens.data();
  call->params.n_seqs = n;
  if (c.batch == Batch::kPadded) {
    call->mask.assign(size_t{c.t_q} * c.t_kv, 0);
    for (uint32_t b = 0; b < n; ++b) {
      const uint32_t first = call->cu_seqlens[b], last = call->cu_seqlens[b + 1];
      for (uint32_t i = first; i < last; ++i) {
        std::memset(call->mask.data() + size_t{i} * c.t_kv + first, 1, encoder_lengths()[b]);
      }
    }
    call->params.mask_bool = call->mask.data();
    call->params.mask_row_stride = c.t_kv;
  }
  return Status();
}

uint64_t kv_pool_bytes(std::span<const BenchCase* const> cases, uint64_t llc_bytes) {
  uint64_t largest = 0;
  for (const BenchCase* c : cases) largest = std::max(largest, copy_stride(*c));
  return pool_bytes(largest, llc_bytes);
}

uint64_t state_pool_bytes(std::span<const DeltaCase* const> cases, uint64_t llc_bytes) {
  uint64_t largest = 0;
  for (const DeltaCase* c : cases) largest = std::max(largest, state_stride(*c));
  return pool_bytes(largest, llc_bytes);
}

Status make_state_pool(BenchBuffer* pool, uint64_t bytes) {
  std::vector<float> block(kMiB / sizeof(float));
  Lcg rng{0x2545f4914f6cdd1dull};
  for (float& v : block) v = 0.1f * rng.uniform();
  return pool->allocate("state pool", bytes, block.data(), block.size() * sizeof(float));
}

Status make_kv_pool(BenchBuffer* pool, uint64_t bytes) {
  // 1 MiB of 16-bit values: sign | [0x2000, 0x3c00). As f16 that is ±[2^-7, 1); as bf16
  // ±[2^-63, 2^-7); the high half of an f32 the same, so no pattern is NaN, Inf or denormal.
  std::vector<uint16_t> block(kMiB / 2);
  Lcg rng{0x9e3779b97f4a7c15ull};
  for (uint16_t& v : block) {
    const uint32_t r = rng.next();
    v = static_cast<uint16_t>((r & 0x8000u) | (0x2000u + (r >> 16) % 0x1c00u));
  }
  return pool->allocate("kv pool", bytes, block.data(), block.size() * sizeof(uint16_t));
}

Result<CaseResult> run_cpu_case(const BenchCase& c, const CpuRun& run) {
  CaseResult r;
  r.backend = "cpu";
  r.threads = run.pool != nullptr ? run.pool->threads() : 1;
  cpu_kernel_label(c, r.kernel, sizeof(r.kernel));
  // An encoder batch is token-major whatever the run asked (bench/runner.hpp).
  const KvLayout layout = c.batch == Batch::kNone ? run.layout : KvLayout::kDense;
  r.kv_layout = kv_layout_name(layout);
  CaseCall call;
  HEADWAY_RETURN_IF_ERROR(make_case_call(c, &call));
  const AttentionShape& shape = call.shape;
  const AttentionParams& params = call.params;
  // The same for both layouts: the work split is a function of the shape alone (a packed batch
  // needs the most one of its sequences does).
  const Result<size_t> ws = attention_workspace_bytes(shape, params, r.threads);
  if (!ws.ok()) return Status::error(Code::kInvalidArgument, "bench case %s: %s", c.name, ws.status().message());

  const uint64_t stride = copy_stride(c);
  if (run.kv == nullptr || run.kv->size() < stride) {
    return Status::error(Code::kInvalidArgument, "bench case %s: the K/V pool holds %zu bytes, one copy needs %llu",
                         c.name, run.kv ? run.kv->size() : size_t{0}, static_cast<unsigned long long>(stride));
  }
  r.kv_copies = static_cast<uint32_t>(std::min<uint64_t>(run.kv->size() / stride, UINT32_MAX));
  r.kv_cold = (r.kv_copies - 1) * case_kv_bytes(c) >= run.llc_bytes;
  const uint64_t v_offset = align_to(case_kv_bytes(c) / 2, 64);

  const size_t q_floats = size_t{c.t_q} * c.n_heads * c.head_dim;
  const std::vector<float> q = random_floats(q_floats, 7);
  std::vector<float> o(q_floats, 0.0f);
  const size_t ws_bytes = align_to(ws.value() ? ws.value() : 1, kWorkspaceAlignment);
  void* workspace = std::aligned_alloc(kWorkspaceAlignment, ws_bytes);
  if (workspace == nullptr) {
    return Status::error(Code::kInternal, "bench case %s: cannot allocate a %zu-byte workspace", c.name, ws_bytes);
  }
  std::memset(workspace, 0, ws_bytes);

  const Status s = time_calls(run.reps, &r, [&](uint32_t rep) {
    const uint8_t* base = run.kv->data() + (rep % r.kv_copies) * stride;
    if (layout == KvLayout::kCache) {  // as KvCache holds them: rows = t_kv, no ring
      const Result<simd::AttentionArgs> a =
          strided_attention_args(q.data(), base, base + v_offset, c.kv_dtype, o.data(), shape, params,
                                 size_t{c.t_kv} * c.head_dim, c.head_dim);
      return a.ok() ? attend_strided(a.value(), run.pool, workspace, ws_bytes) : a.status();
    }
    return attend(q.data(), base, base + v_offset, c.kv_dtype, o.data(), shape, params, run.pool, workspace, ws_bytes);
  });
  std::free(workspace);
  if (!s.ok()) return Status::error(s.code(), "bench case %s: %s", c.name, s.message());
  finish(c, &r);
  return r;
}

Result<CaseResult> run_cpu_delta_case(const DeltaCase& c, const CpuRun& run) {
  CaseResult r;
  r.delta = &c;
  r.backend = "cpu";
  r.kv_layout = "state";
  r.threads = run.pool != nullptr ? run.pool->threads() : 1;
  const bool decode = c.kind == CaseKind::kDecode;
  std::snprintf(r.kernel, sizeof(r.kernel), "%s", decode ? "gated_delta_recurrent" : "gated_delta_chunked");
  if (c.key_heads == 0 || c.value_heads % c.key_heads != 0 || (decode && c.t != 1)) {
    return Status::error(Code::kInternal, "bench case %s: %u value heads over %u key heads, %u tokens", c.name,
                         c.value_heads, c.key_heads, c.t);
  }
  const uint64_t stride = state_stride(c);
  if (run.states == nullptr || run.states->size() < stride) {
    return Status::error(Code::kInvalidArgument, "bench case %s: the state pool holds %zu bytes, one copy needs %llu",
                         c.name, run.states ? run.states->size() : size_t{0}, static_cast<unsigned long long>(stride));
  }
  r.kv_copies = static_cast<uint32_t>(std::min<uint64_t>(run.states->size() / stride, UINT32_MAX));
  r.kv_cold = (r.kv_copies - 1) * delta_state_bytes(c) >= run.llc_bytes;

  const float q_scale = 1.0f / std::sqrt(static_cast<float>(c.dk));
  const std::vector<float> q = normalized_rows(c.t, c.key_heads, c.dk, q_scale, 7);
  const std::vector<float> k = normalized_rows(c.t, c.key_heads, c.dk, 1.0f, 11);
  const std::vector<float> v = random_floats(size_t{c.t} * c.value_heads * c.dv, 13);
  std::vector<float> g = random_floats(size_t{c.t} * c.value_heads, 17);
  std::vector<float> beta = random_floats(g.size(), 19);
  for (float& x : g) x = -0.5f * (1.0f - x);   // [-1, 0)
  for (float& x : beta) x = 0.5f + 0.49f * x;  // (0, 1)
  std::vector<float> out(v.size(), 0.0f);
  // The chunk scratch of each thread slot, each starting on a cache line (64-byte aligned tiles).
  const size_t scratch_stride = align_to(gated_delta_chunk_scratch_floats(c.dk, c.dv), 16);
  const size_t scratch_bytes = r.threads * scratch_stride * sizeof(float);
  float* scratch = static_cast<float*>(std::aligned_alloc(64, scratch_bytes));
  if (scratch == nullptr) {
    return Status::error(Code::kInternal, "bench case %s: cannot allocate a %zu-byte scratch", c.name, scratch_bytes);
  }
  std::memset(scratch, 0, scratch_bytes);
  DeltaCall call{&c, nullptr, q.data(), k.data(), v.data(), g.data(), beta.data(), out.data(), scratch, scratch_stride};
  call.states = reinterpret_cast<float*>(run.states->data());
  if (const char* bad = simd::gated_delta_args_error(delta_args(call, c.value_heads - 1))) {
    std::free(scratch);
    return Status::error(Code::kInternal, "bench case %s: %s", c.name, bad);
  }

  const Status s = time_calls(run.reps, &r, [&](uint32_t rep) {
    call.states = reinterpret_cast<float*>(run.states->data() + (rep % r.kv_copies) * stride);
    ThreadPool::run_on(run.pool, c.value_heads, delta_head, &call);
    return Status();
  });
  std::free(scratch);
  if (!s.ok()) return Status::error(s.code(), "bench case %s: %s", c.name, s.message());
  const double seconds = r.median_ms * 1e-3;
  const double bytes = static_cast<double>(delta_state_bytes(c));
  r.gflops = delta_case_flops(c) / seconds * 1e-9;
  r.kv_gbps = bytes / seconds * 1e-9;
  r.intensity = delta_case_flops(c) / bytes;
  return r;
}

Result<CaseResult> run_gpu_case(const BenchCase& c, GpuContext* context, uint32_t reps) {
  if (c.batch != Batch::kNone) {
    return Status::error(Code::kUnsupported,
                         "bench case %s: an encoder batch runs on the CPU only (the GPU backend's cache calls take "
                         "one sequence)",
                         c.name);
  }
  CaseResult r;
  r.backend = "gpu";
  r.threads = 1;
  Config cfg;
  cfg.set_name("bench");
  cfg.n_heads = c.n_heads;
  cfg.n_kv_heads = c.n_kv_heads;
  cfg.head_dim = c.head_dim;
  cfg.d_model = c.n_heads * c.head_dim;
  cfg.max_seq = c.t_kv;
  cfg.causal = c.causal;
  cfg.alibi = c.alibi;
  cfg.kv_dtype = c.kv_dtype;
  PlanOptions options;
  options.max_tokens = c.t_q;
  options.weights_in_arena = false;
  const Result<Plan> plan = make_plan(cfg, options);
  if (!plan.ok()) return Status::error(plan.status().code(), "bench case %s: %s", c.name, plan.status().message());
  const Plan& p = plan.value();

  GpuBackend gpu;
  Status s = gpu.create(context, p);
  // K and V the same values: only their traffic matters here. Appended in one go (no window).
  const std::vector<float> kv = random_floats(size_t{c.t_kv} * p.kv_width, 11);
  if (s.ok()) s = gpu.append(kv.data(), p.kv_width, kv.data(), p.kv_width, c.t_kv);
  if (!s.ok()) return Status::error(s.code(), "bench case %s: %s", c.name, s.message());
  std::snprintf(r.kernel, sizeof(r.kernel), "%s", gpu.kernel_name());

  const std::vector<float> q = random_floats(size_t{c.t_q} * p.q_width, 7);
  std::vector<float> o(q.size(), 0.0f);
  s = time_calls(reps, &r, [&](uint32_t) { return gpu.attend(q.data(), p.q_width, o.data(), p.q_width, c.t_q); });
  if (!s.ok()) return Status::error(s.code(), "bench case %s: %s", c.name, s.message());
  finish(c, &r);
  return r;
}

}  // namespace headway::bench
