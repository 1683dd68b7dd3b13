// Times the Vulkan backend's attend() (cache use: K/V appended once, then attend() called again
// and again, each call uploading Q, dispatching and reading O back, as a runtime would) and the
// CPU backend on the same plans, and prints GFLOP/s. Built with HEADWAY_GPU (runtime/gpu/).
//
//   gpu_attention_bench [--quick | --full] [--no-cpu] [--device N] [--threads N]
//
// On a CPU Vulkan device (lavapipe) it runs the --quick cases unless --full is given: the full
// cases take minutes there.
// flops = 4 · head_dim · n_heads · (visible query-key pairs): QKᵀ and PV, one multiply and one
// add each. Decode cases also print the K/V bytes read per second. Each figure is the best of
// repeated calls over at least 0.3 s (at least 3 calls) after 2 warm-up calls.
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

#include "bench/cases.hpp"
#include "headway/backend.hpp"

namespace {

using Clock = std::chrono::steady_clock;

using headway::DType;
using headway::bench::BenchCase;
using headway::bench::CaseKind;

// Shapes of their own (a longer decode, bf16 at head_dim 256), in `headway bench`'s case type.
const BenchCase kCases[] = {
    {"prefill-t2048-h32x8-d128-f16", "Llama-3-8B-like layer (GQA 4)", CaseKind::kPrefill, 2048, 2048, 32, 8, 128,
     DType::kF16, true},
    {"prefill-t1024-h32x32-d64-f16", "MHA at head_dim 64", CaseKind::kPrefill, 1024, 1024, 32, 32, 64, DType::kF16,
     true},
    {"prefill-t2048-h32x8-d128-f32", "Llama-3-8B-like layer (GQA 4)", CaseKind::kPrefill, 2048, 2048, 32, 8, 128,
     DType::kF32, true},
    {"decode-t4096-h32x8-d128-f16", "Llama-3-8B-like layer (GQA 4)", CaseKind::kDecode, 1, 4096, 32, 8, 128,
     DType::kF16, true},
    {"decode-t16384-h32x8-d128-f16", "Llama-3-8B-like layer (GQA 4)", CaseKind::kDecode, 1, 16384, 32, 8, 128,
     DType::kF16, true},
    {"prefill-t1024-h16x16-d256-bf16", "Gemma's head size", CaseKind::kPrefill, 1024, 1024, 16, 16, 256, DType::kBF16,
     true},
    {"prefill-t1024-h32x32-d80-f16", "Phi-2's head size", CaseKind::kPrefill, 1024, 1024, 32, 32, 80, DType::kF16,
     true},
};
const BenchCase kQuickCases[] = {
    {"prefill-t256-h8x2-d128-f16", "small GQA 4", CaseKind::kPrefill, 256, 256, 8, 2, 128, DType::kF16, true},
    {"decode-t1024-h8x2-d128-f16", "small GQA 4", CaseKind::kDecode, 1, 1024, 8, 2, 128, DType::kF16, true},
};

// Best seconds per attend() call.
template <class Fn>
double best_seconds(Fn&& call) {
  for (int i = 0; i < 2; ++i) {
    if (!call()) return -1;
  }
  double best = 1e30, total = 0;
  int n = 0;
  while (n < 3 || total < 0.3) {
    const Clock::time_point t0 = Clock::now();
    if (!call()) return -1;
    const double s = std::chrono::duration<double>(Clock::now() - t0).count();
    best = s < best ? s : best;
    total += s;
    ++n;
  }
  return best;
}

bool run_case(const BenchCase& c, headway::GpuContext* gpu_ctx, headway::ThreadPool* pool, bool with_cpu) {
  headway::Config cfg;
  cfg.set_name("bench");
  cfg.n_heads = c.n_heads;
  cfg.n_kv_heads = c.n_kv_heads;
  cfg.head_dim = c.head_dim;
  cfg.d_model = c.n_heads * c.head_dim;
  cfg.max_seq = c.t_kv;
  cfg.causal = c.causal;
  cfg.kv_dtype = c.kv_dtype;
  headway::PlanOptions po;
  po.max_tokens = c.t_q;
  po.weights_in_arena = false;
  const headway::Result<headway::Plan> plan = headway::make_plan(cfg, po);
  if (!plan.ok()) {
    std::fprintf(stderr, "gpu_attention_bench: %s\n", plan.status().message());
    return false;
  }
  const headway::Plan& p = plan.value();

  std::vector<float> kv(size_t{c.t_kv} * p.kv_width), q(size_t{c.t_q} * p.q_width), o(q.size());
  uint32_t seed = 1;
  for (float& x : kv) x = static_cast<float>((seed = seed * 1664525u + 1013904223u) >> 8) / 16777216.0f - 0.5f;
  for (float& x : q) x = static_cast<float>((seed = seed * 1664525u + 1013904223u) >> 8) / 16777216.0f - 0.5f;
  const double flops = headway::bench::case_flops(c);
  const double kv_bytes = static_cast<double>(headway::bench::case_kv_bytes(c));

  char label[160];
  std::snprintf(label, sizeof(label), "%-7s d%-3u heads %2u/%-2u t_q %5u t_kv %5u %s %-4s",
                headway::bench::case_kind_name(c.kind), c.head_dim, c.n_heads, c.n_kv_heads, c.t_q, c.t_kv,
                c.causal ? "causal" : "full  ", headway::dtype_name(c.kv_dtype));

  auto report = [&](const char* who, double s, const char* extra) {
    if (s < 0) return;
    std::printf("%s %s: %9.3f ms  %8.1f GFLOP/s", who, label, s * 1e3, flops / s * 1e-9);
    if (c.t_q == 1) std::printf("  %7.1f GB/s K/V", kv_bytes / s * 1e-9);
    std::printf("  %s\n", extra);
  };

  headway::GpuBackend gpu;
  headway::Status st = gpu.create(gpu_ctx, p);
  if (st.ok()) {
    // Appended in max_tokens chunks, as a prefill would.
    for (uint32_t pos = 0; pos < c.t_kv && st.ok(); pos += c.t_q) {
      const uint32_t n = c.t_kv - pos < c.t_q ? c.t_kv - pos : c.t_q;
      st = gpu.append(kv.data() + size_t{pos} * p.kv_width, p.kv_width, kv.data() + size_t{pos} * p.kv_width,
                      p.kv_width, n);
    }
  }
  if (!st.ok()) {
    std::fprintf(stderr, "gpu_attention_bench: gpu %s: %s\n", label, st.message());
    return false;
  }
  const double gs = best_seconds([&] {
    st = gpu.attend(q.data(), p.q_width, o.data(), p.q_width, c.t_q);
    return st.ok();
  });
  if (!st.ok()) {
    std::fprintf(stderr, "gpu_attention_bench: gpu attend: %s\n", st.message());
    return false;
  }
  report("gpu", gs, gpu.kernel_name());

  if (with_cpu) {
    headway::CpuBackend cpu;
    const size_t bytes = headway::CpuBackend::memory_bytes(p, pool->threads());
    void* mem = std::aligned_alloc(64, (bytes + 63) / 64 * 64);
    st = cpu.create(p, pool, mem, bytes);
    for (uint32_t pos = 0; pos < c.t_kv && st.ok(); pos += c.t_q) {
      const uint32_t n = c.t_kv - pos < c.t_q ? c.t_kv - pos : c.t_q;
      st = cpu.append(kv.data() + size_t{pos} * p.kv_width, p.kv_width, kv.data() + size_t{pos} * p.kv_width,
                      p.kv_width, n);
    }
    double cs = -1;
    if (st.ok()) {
      cs = best_seconds([&] {
        st = cpu.attend(q.data(), p.q_width, o.data(), p.q_width, c.t_q);
        return st.ok();
      });
    }
    if (!st.ok()) std::fprintf(stderr, "gpu_attention_bench: cpu: %s\n", st.message());
    report("cpu", cs, cpu.description());
    std::free(mem);
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  bool quick = false, full = false, with_cpu = true;
  headway::GpuOptions options;
  uint32_t threads = std::thread::hardware_concurrency();
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--quick") == 0) quick = true;
    else if (std::strcmp(argv[i], "--full") == 0) full = true;
    else if (std::strcmp(argv[i], "--no-cpu") == 0) with_cpu = false;
    else if (std::strcmp(argv[i], "--device") == 0 && i + 1 < argc) options.device_index = std::atoi(argv[++i]);
    else if (std::strcmp(argv[i], "--threads") == 0 && i + 1 < argc) threads = std::atoi(argv[++i]);
    else {
      std::fprintf(stderr, "usage: gpu_attention_bench [--quick | --full] [--no-cpu] [--device N] [--threads N]\n");
      return 2;
    }
  }
  headway::GpuContext ctx;
  const headway::Status st = ctx.create(options);
  if (!st.ok()) {
    std::fprintf(stderr, "gpu_attention_bench: %s\n", st.message());
    return 2;
  }
  const headway::GpuDeviceInfo& d = ctx.info();
  std::printf("device: %s (%s), Vulkan %u.%u, subgroup %u, shared %u B, 16-bit storage %s, %s memory\n", d.name, d.type,
              (d.api_version >> 22) & 0x7fu, (d.api_version >> 12) & 0x3ffu, d.subgroup_size, d.max_shared_bytes,
              d.storage_16bit ? "yes" : "no", d.host_mapped ? "host-mapped" : "staged");
  if (std::strcmp(d.type, "cpu") == 0) {
    std::printf("note: this is a CPU Vulkan implementation (no GPU driver with Vulkan was found)%s\n",
                full ? "" : "; quick cases only (--full for all)");
    quick = quick || !full;
  }
  headway::ThreadPool pool;
  if (with_cpu && !pool.create(threads ? threads : 1).ok()) with_cpu = false;
  bool ok = true;
  if (quick) {
    for (const BenchCase& c : kQuickCases) ok = run_case(c, &ctx, &pool, with_cpu) && ok;
  } else {
    for (const BenchCase& c : kCases) ok = run_case(c, &ctx, &pool, with_cpu) && ok;
  }
  return ok ? 0 : 1;
}
