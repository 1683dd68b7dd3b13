// Runs one bench case and times it: a warm-up call, then repetitions timed one by one with
// std::chrono::steady_clock; median, min and max of the per-call times.
//
// CPU: attention on the caller's ThreadPool over K/V in one of two layouts. kCache (the default):
// the KV cache's [n_kv_heads, t_kv, head_dim], each kv head's rows contiguous, the call KvCache
// and Session make for every prefill chunk and decode step. kDense: attend() on token-major
// [t_kv, n_kv_heads, head_dim] tensors (include/headway/attention.hpp), where one kv head's
// rows are n_kv_heads · head_dim elements apart. K/V come from one
// shared pool buffer (make_kv_pool), allocated and touched before any timing, and each case
// rotates through as many separate K/V copies as the pool holds: a repetition reads a copy that
// (copies − 1) · K/V bytes of other copies have gone through the caches since, so when that is
// at least the last-level cache (kv_cold) every repetition streams its K/V from memory. Q, O and
// the workspace are allocated and touched before timing too.
//
// An encoder case (a batch of sentences, bench/cases.hpp) is one attend() call on token-major
// tensors whichever layout the run asks for: an encoder keeps no cache (its K/V are the
// projections' rows, token-major), and a packed batch is attend()'s (cu_seqlens), which the
// cache layout's call does not take. Its lengths and, padded, its mask are made before timing.
//
// A Gated DeltaNet case (bench/cases.hpp: DeltaCase) is the runtime's call of the delta rule:
// one ThreadPool task per value head (runtime/model/gated_delta_layer.cc), each running
// gated_delta_chunked (prefill, its chunk scratch in the task's thread slot) or
// gated_delta_recurrent (decode) over its head's state. Dense token rows: q, k [t, key_heads,
// dk], v and out [t, value_heads, dv], g and beta [t, value_heads], as the layer's projected row
// holds them but without the other fields between. The states rotate through copies carved from
// a pool of their own (make_state_pool), as K/V do from theirs, so a decode step reads its
// state from memory as it does in a model whose other layers ran in between; the token rows,
// the outputs and the scratch are made before timing and reused.
//
// GPU: the Vulkan backend in cache use, as a runtime decodes: K/V appended once (resident on the
// device), then each repetition is one attend() call: Q upload, dispatch, O read-back, fence
// wait. K/V are not rotated there: a decode case whose K/V fit in the GPU's L2 reads them warm.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "bench/buffer.hpp"
#include "bench/cases.hpp"
#include "headway/attention.hpp"
#include "headway/backend.hpp"
#include "headway/status.hpp"
#include "headway/thread_pool.hpp"

namespace headway::bench {

// K/V layout of a CPU run (see the header comment).
enum class KvLayout { kCache, kDense };
const char* kv_layout_name(KvLayout layout);  // "cache", "dense"

struct CaseResult {
  const BenchCase* spec = nullptr;
  const DeltaCase* delta = nullptr;  // a Gated DeltaNet case (spec then null)
  const char* backend = "cpu";
  const char* kv_layout = "cache";  // gpu: the backend's own cache
  char kernel[64] = {};             // cpu: "prefill_d128", ...; gpu: the shader variant
  uint32_t threads = 1;
  uint32_t reps = 0;  // timed repetitions (after one warm-up call)
  double median_ms = 0, min_ms = 0, max_ms = 0;
  double gflops = 0;       // case_flops / median
  double kv_gbps = 0;      // case_kv_bytes / median (delta: delta_state_bytes / median)
  double intensity = 0;    // case_flops / case_kv_bytes, FLOP per byte of unique K/V (delta: of state)
  uint32_t kv_copies = 1;  // K/V copies the repetitions rotate through (delta: state copies)
  bool kv_cold = false;    // (kv_copies − 1) · K/V bytes >= the last-level cache (delta: state bytes)
};

// reps 0: automatic, at least 5 and enough to fill ~0.25 s, at most 200.
inline constexpr uint32_t kAutoReps = 0;

// Bytes of the K/V pool for these cases: at least 2 × the last-level cache (so it also serves as
// the bandwidth probe's buffer, bench/peak.hpp) and 64 MiB, at most 1 GiB unless one case's K/V
// alone need more (then one copy of it).
uint64_t kv_pool_bytes(std::span<const BenchCase* const> cases, uint64_t llc_bytes);

// Allocates and touches the pool, filled with 16-bit patterns that are finite, small values read
// as f16, bf16 or (in pairs) f32: every case's K/V can be carved from it.
Status make_kv_pool(BenchBuffer* pool, uint64_t bytes);

// What a CPU call of case c passes attend() beside its tensors: the shape, the parameters and
// the arrays they point into, which the timed calls only read. An encoder batch: cu_seqlens_q at
// encoder_row() of each sentence; padded, a bool mask [t_q, t_kv] (row stride t_kv) that shows
// each sequence its sentence's real keys, from every row of it (pad queries included, as a padded
// PyTorch batch's key mask does), and hides the pad keys; its blocks off the diagonal, which
// attend() never reads, are 0. Not copyable: params points into it.
struct CaseCall {
  AttentionShape shape;
  AttentionParams params;
  std::vector<float> alibi_slopes;   // [n_heads], or empty
  std::vector<uint32_t> cu_seqlens;  // [sentences + 1], or empty
  std::vector<uint8_t> mask;         // [t_q, t_kv], or empty
  CaseCall() = default;
  CaseCall(const CaseCall&) = delete;
  CaseCall& operator=(const CaseCall&) = delete;
};
Status make_case_call(const BenchCase& c, CaseCall* call);

struct CpuRun {
  ThreadPool* pool = nullptr;           // null: one thread
  const BenchBuffer* kv = nullptr;      // make_kv_pool's buffer
  const BenchBuffer* states = nullptr;  // make_state_pool's buffer: the Gated DeltaNet cases'
  uint64_t llc_bytes = 0;
  uint32_t reps = kAutoReps;
  KvLayout layout = KvLayout::kCache;
};
Result<CaseResult> run_cpu_case(const BenchCase& c, const CpuRun& run);

// The Gated DeltaNet cases' state pool: the K/V pool's rule (kv_pool_bytes) over their state
// copies, value_heads · dk · dv f32 each, padded to a page; filled with small f32 values (a
// state carried from earlier tokens), which the timed calls update in place.
uint64_t state_pool_bytes(std::span<const DeltaCase* const> cases, uint64_t llc_bytes);
Status make_state_pool(BenchBuffer* pool, uint64_t bytes);
// run.states: make_state_pool's buffer; run.kv and run.layout are not used.
Result<CaseResult> run_cpu_delta_case(const DeltaCase& c, const CpuRun& run);

// context: created by the caller (it fails on a machine without a usable device). An encoder case
// is an error (kUnsupported): the backend's cache calls take one sequence.
Result<CaseResult> run_gpu_case(const BenchCase& c, GpuContext* context, uint32_t reps);

}  // namespace headway::bench
