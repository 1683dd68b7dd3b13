// Backends: where attention runs. The CPU backend (always built) wraps KvCache and attend(); the
// GPU backend (HEADWAY_GPU builds, Vulkan compute) runs the same semantics in shaders. The same
// Plan drives both: it fixes the head counts, head_dim, the K/V rows held (cache_rows), the most
// query tokens per call (max_tokens), the K/V dtype and the mask (causal, window, softcap, scale,
// RoPE). Every buffer is sized from it at create(); append() and attend() allocate nothing. A
// plan whose layers differ (Config::layers) is one plan per layer: create each layer's backend
// from layer_plan(plan, i) (AttentionLayer does).
//
// CpuBackend and GpuBackend have the same methods; Backend is a tagged view of either (a switch,
// no virtual calls: the library builds without RTTI, and a polymorphic class in its public API
// would need typeinfo that a -fno-rtti library does not emit, e.g. for a consumer's UBSan).
//
// Two ways to use a backend:
//   cache  append(k, v, n) stores n tokens' K (rotated at their absolute positions, as KvCache
//          does) and V, rounded to the plan's kv_dtype; attend(q, o, t_q) runs the queries of the
//          last t_q tokens against everything held. KvCache's contract, position for position:
//          the backend owns the positions (reset(start), position()).
//   dense  attend_dense(q, k, v, ...) runs one attention over whole tensors, attend()'s contract
//          (any t_q, t_kv within the plan, the mask given per call, no RoPE). It replaces the
//          K/V the backend held: the cache is empty afterwards. dense_plan() sizes a plan for it.
//          A general mask (AttentionParams::mask_bool, mask_additive) needs a GPU backend created
//          with dense_masks.
//
//   headway::GpuContext gpu;                              // once per process: device and queue
//   HEADWAY_RETURN_IF_ERROR(gpu.create());
//   headway::GpuBackend layer;                            // once per layer: buffers, pipeline
//   HEADWAY_RETURN_IF_ERROR(layer.create(&gpu, plan));
//   layer.append(k, kv_width, v, kv_width, n);  layer.attend(q, q_width, o, q_width, n);
#pragma once

#include <cstddef>
#include <cstdint>

#include "headway/attention.hpp"
#include "headway/kv_cache.hpp"
#include "headway/plan.hpp"
#include "headway/status.hpp"
#include "headway/thread_pool.hpp"

namespace headway {

enum class BackendKind : uint8_t { kCpu = 0, kGpu };

// "cpu", "gpu": how the command line and the Python package name the backends.
inline constexpr const char* kBackendNames = "cpu, gpu";
constexpr const char* backend_name(BackendKind k) { return k == BackendKind::kGpu ? "gpu" : "cpu"; }
// The backend backend_name() calls `name`; false (and *out unchanged) for any other text or null.
constexpr bool backend_from_name(const char* name, BackendKind* out) {
  for (BackendKind k : {BackendKind::kCpu, BackendKind::kGpu}) {
    const char* n = backend_name(k);
    uint32_t i = 0;
    while (name != nullptr && name[i] != '\0' && name[i] == n[i]) ++i;
    if (name != nullptr && name[i] == '\0' && n[i] == '\0') {
      *out = k;
      return true;
    }
  }
  return false;
}

// The methods both backends have (CpuBackend, GpuBackend):
//
//   BackendKind kind() const;
//   const char* description() const;  // one line for logs, e.g. "gpu: llvmpipe (...); kernel ..."
//   uint32_t size() const;             // tokens appended since create() or reset()
//   uint32_t position() const;         // the next token's: the reset's start + size()
//   void reset(uint32_t start_position = 0);  // empty; the next token at start_position
//   // Keeps the first `tokens` appended since the reset (KvCache::truncate: its rules for a
//   // sliding-window ring, its errors; on error nothing changes).
//   Status truncate(uint32_t tokens);
//
//   // Cache use. k and v: [n, n_kv_heads, head_dim] f32, token t at k + t · k_token_stride.
//   // Errors as KvCache::append (past the context, more than a window ring takes at once); on
//   // error nothing is stored.
//   Status append(const float* k, size_t k_token_stride, const float* v, size_t v_token_stride, uint32_t n);
//   // q: [t_q, n_heads, head_dim] f32 with RoPE applied, the queries of the last t_q tokens
//   // (1 <= t_q <= min(size(), max_tokens)); o: the same layout. sinks: n_heads learned sink
//   // logits (AttentionParams::sinks), or null; checked on each call, as KvCache::attend does.
//   Status attend(const float* q, size_t q_token_stride, float* o, size_t o_token_stride, uint32_t t_q,
//                 const float* sinks = nullptr);
//   // q as attend() takes it, rotated in place by the RoPE the last t_q tokens' keys got
//   // (KvCache::rotate_queries): for a caller that appends K and V and attends its own queries.
//   Status rotate_queries(float* q, size_t q_token_stride, uint32_t t_q) const;
//
//   // Private, for AttentionLayer through Backend after its own checks of the whole call: the
//   // three above unchecked (a release build checks nothing, a debug build everything; the
//   // GPU's still fail where the device does).
//   Status append_unchecked(const float* k, size_t k_token_stride, const float* v, size_t v_token_stride, uint32_t n);
//   Status attend_unchecked(const float* q, size_t q_token_stride, float* o, size_t o_token_stride, uint32_t t_q,
//                           const float* sinks);
//   void rotate_queries_unchecked(float* q, size_t q_token_stride, uint32_t t_q) const;
//
//   // Dense use: attend()'s contract (include/headway/attention.hpp). The shape must match the
//   // plan's heads and head_dim, with t_q <= max_tokens and t_kv <= cache_rows; k and v are in
//   // kv_dtype (f32, f16 / bf16 bit patterns, or q8_0 / q4_0 rows of ceil(head_dim / 32) blocks
//   // as quantize_row writes them), which must be the plan's kv_dtype.
//   Status attend_dense(const float* q, const void* k, const void* v, DType kv_dtype, float* o,
//                       const AttentionShape& shape, const AttentionParams& params);

// The plan whose buffers hold one dense attention of `shape`: max_tokens = t_q, cache_rows >= t_kv,
// no RoPE, K/V stored as kv_dtype. Fails on a shape attend() would reject.
Result<Plan> dense_plan(const AttentionShape& shape, DType kv_dtype);

// ---- CPU ---------------------------------------------------------------------------------------

// One layer's KvCache and the workspace its attention runs in; it belongs to one thread at a time.
class CpuBackend {
 public:
  // Bytes create() needs: one layer's K/V (plan.kv_bytes_per_layer), its RoPE table
  // (plan.rope_bytes_per_layer), its ALiBi slopes (plan.alibi_bytes) and the largest workspace an attend() within the
  // plan asks for with `threads` threads, each region 64-byte aligned, in that order.
  static size_t memory_bytes(const Plan& plan, uint32_t threads);

  // memory: 64-byte aligned, at least memory_bytes(plan, pool ? pool->threads() : 1) bytes, owned
  // by the caller and kept alive as long as the backend. pool may be null (the caller's thread).
  // create() writes the RoPE table and the ALiBi slopes into it.
  Status create(const Plan& plan, ThreadPool* pool, void* memory, size_t bytes);

  // The same over regions the caller carved elsewhere (AttentionLayer: its layer's KV region and
  // RoPE table in the arena, the arena's scratch): kv as KvCache::bind takes it, rope_table made
  // by KvCache::make_rope_table (null without RoPE), workspace 64-byte aligned and at least
  // what attend() asks for at most with the pool's threads (a plan's scratch_bytes holds it),
  // alibi_slopes made by KvCache::make_alibi_slopes (null without ALiBi).
  Status create(const Plan& plan, ThreadPool* pool, void* kv, size_t kv_bytes, const double* rope_table,
                void* workspace, size_t workspace_bytes, const float* alibi_slopes = nullptr);

  BackendKind kind() const { return BackendKind::kCpu; }
  const char* description() const { return description_; }
  uint32_t size() const { return cache_.size(); }
  uint32_t position() const { return cache_.position(); }
  void reset(uint32_t start_position = 0) { cache_.reset(start_position); }
  Status truncate(uint32_t tokens) { return cache_.truncate(tokens); }
  Status append(const float* k, size_t k_token_stride, const float* v, size_t v_token_stride, uint32_t n);
  Status attend(const float* q, size_t q_token_stride, float* o, size_t o_token_stride, uint32_t t_q,
                const float* sinks = nullptr);
  Status attend_dense(const float* q, const void* k, const void* v, DType kv_dtype, float* o,
                      const AttentionShape& shape, const AttentionParams& params);
  Status rotate_queries(float* q, size_t q_token_stride, uint32_t t_q) const {
    return cache_.rotate_queries(q, q_token_stride, t_q);
  }
  const Plan& plan() const { return cache_.plan(); }  // the plan given to create()
  // The cache itself, for saving and restoring its rows (Model::save_state, load_state).
  KvCache& cache() { return cache_; }
  const KvCache& cache() const { return cache_; }

 private:
  friend class Backend;  // the *_unchecked calls
  Status append_unchecked(const float* k, size_t k_token_stride, const float* v, size_t v_token_stride, uint32_t n) {
    cache_.append_unchecked(k, k_token_stride, v, v_token_stride, n, pool_);
    return Status();
  }
  Status attend_unchecked(const float* q, size_t q_token_stride, float* o, size_t o_token_stride, uint32_t t_q,
                          const float* sinks) {
    cache_.attend_unchecked(q, q_token_stride, o, o_token_stride, t_q, pool_, workspace_, workspace_bytes_, sinks);
    return Status();
  }
  void rotate_queries_unchecked(float* q, size_t q_token_stride, uint32_t t_q) const {
    cache_.rotate_queries_unchecked(q, q_token_stride, t_q, pool_);
  }
  KvCache cache_{};  // holds the plan
  ThreadPool* pool_ = nullptr;
  uint8_t* workspace_ = nullptr;
  size_t workspace_bytes_ = 0;
  char description_[96] = "cpu: not created";
};

// ---- GPU (Vulkan compute) ----------------------------------------------------------------------

struct GpuOptions {
  // Index into the loader's device list; -1 picks a discrete GPU, else an integrated one, else a
  // virtual one, else a CPU implementation (lavapipe).
  int32_t device_index = -1;
  // false: keep f16/bf16 K/V as f32 on the device even where 16-bit storage exists (tests the
  // path of devices without it).
  bool allow_16bit_storage = true;
  // false: always go through a staging buffer and copies (the discrete-GPU path), even where the
  // device's memory is host-visible (unified memory: lavapipe, phones, Jetson, Raspberry Pi).
  bool allow_host_mapped = true;
  // Split-KV: a call with too few workgroups to fill the device (decode with few kv heads) cuts
  // its keys into chunks of at least this many, run in parallel and merged by a second pass.
  // 0: never split.
  uint32_t split_kv_min_keys = 256;
};

struct GpuDeviceInfo {
  char name[256] = {};
  const char* type = "";     // "discrete", "integrated", "virtual", "cpu", "other"
  uint32_t api_version = 0;  // VK_MAKE_API_VERSION
  uint32_t subgroup_size = 0;
  uint32_t max_shared_bytes = 0;  // maxComputeSharedMemorySize
  uint32_t max_invocations = 0;   // maxComputeWorkGroupInvocations
  uint32_t max_workgroup_size_x = 0;
  uint32_t max_workgroup_count_x = 0;
  uint64_t max_storage_buffer_bytes = 0;  // maxStorageBufferRange: the largest K or V buffer
  bool storage_16bit = false;             // storageBuffer16BitAccess (and allowed by the options)
  bool host_mapped = false;               // device-local memory the host maps: no staging copies
};

// The Vulkan instance, device and compute queue, shared by every GpuBackend of a process.
// Creating it is the init step that may fail on a machine without a usable device: kUnsupported
// with a message that says so (and, in a build without HEADWAY_GPU, that the build has no GPU).
// One per process: its GpuBackends may run on several threads, and it serializes their queue
// submissions.
class GpuContext {
 public:
  GpuContext() = default;
  ~GpuContext();
  GpuContext(const GpuContext&) = delete;
  GpuContext& operator=(const GpuContext&) = delete;

  // True when this build has the Vulkan backend (HEADWAY_GPU=ON).
  static bool compiled();

  Status create(const GpuOptions& options = {});
  bool created() const { return impl_ != nullptr; }
  const GpuDeviceInfo& info() const { return info_; }

  struct Impl;
  Impl* impl() const { return impl_; }

 private:
  Impl* impl_ = nullptr;
  GpuDeviceInfo info_{};
};

// Per-layer GPU state: K/V [n_kv_heads, cache_rows, head_dim], Q and O [max_tokens, n_heads,
// head_dim], split-KV partials (at most 16 MiB), n_heads sink logits, ALiBi slopes [2, n_heads]
// (the plan's, written once at create, then a dense call's), a call's parameters, a
// staging buffer unless memory is host-mapped, the pipelines specialized for the plan's head_dim
// and the device's limits, a command buffer recorded per call (staged memory) and, where memory
// is host-mapped, one recorded once at create that every call resubmits (the call's values and
// dispatch sizes are read from mapped buffers), one fence, and on the host the RoPE table K is
// rotated with. K/V live on the device as f32, or as f16 / bf16 where the device has 16-bit
// storage (bf16 stays bf16: the shader widens it by a shift); without 16-bit storage they are
// widened to f32 on upload. q8_0 / q4_0 K/V are the bytes KvCache holds (quantized on upload by
// quantize_row) on every device: the shader reads the blocks from 32-bit words and widens them.
// A GpuBackend belongs to one thread at a time.
class GpuBackend {
 public:
  GpuBackend() = default;
  ~GpuBackend();
  GpuBackend(const GpuBackend&) = delete;
  GpuBackend& operator=(const GpuBackend&) = delete;

  // context must outlive the backend. Fails (kUnsupported) when the plan needs more than the
  // device allows (a K/V buffer past maxStorageBufferRange, head_dim past shared memory).
  // dense_masks: room for attend_dense's general masks (AttentionParams::mask_bool,
  // mask_additive), one f32 per query and key of the plan's largest call (max_tokens ×
  // cache_rows); without it attend_dense refuses a mask (kFailedPrecondition).
  Status create(GpuContext* context, const Plan& plan, bool dense_masks = false);

  // The shader variant and tiling: "attn_<kv storage>_<d64|d128|generic>_r<rows>t<threads per
  // row>k<keys per tile>", e.g. "attn_f16_d128_r16t8k32".
  const char* kernel_name() const;

  BackendKind kind() const { return BackendKind::kGpu; }
  const char* description() const;
  // The plan given to create() (a copy it holds); an empty Plan before create.
  const Plan& plan() const;
  uint32_t size() const;
  uint32_t position() const;
  void reset(uint32_t start_position = 0);
  Status truncate(uint32_t tokens);
  Status append(const float* k, size_t k_token_stride, const float* v, size_t v_token_stride, uint32_t n);
  Status attend(const float* q, size_t q_token_stride, float* o, size_t o_token_stride, uint32_t t_q,
                const float* sinks = nullptr);
  Status attend_dense(const float* q, const void* k, const void* v, DType kv_dtype, float* o,
                      const AttentionShape& shape, const AttentionParams& params);
  Status rotate_queries(float* q, size_t q_token_stride, uint32_t t_q) const;

  struct Impl;

 private:
  friend class Backend;  // the *_unchecked calls
  Status append_unchecked(const float* k, size_t k_token_stride, const float* v, size_t v_token_stride, uint32_t n);
  Status attend_unchecked(const float* q, size_t q_token_stride, float* o, size_t o_token_stride, uint32_t t_q,
                          const float* sinks);
  void rotate_queries_unchecked(float* q, size_t q_token_stride, uint32_t t_q) const;
  void destroy();
  Impl* impl_ = nullptr;
};

// One dense attention on a Vulkan device, start to end: a GpuContext, the plan dense_plan()
// gives, a GpuBackend (with dense masks when params has a mask) and attend_dense(), all released
// before it returns. For a tool's single call (`headway attend --backend gpu`, the Python
// package's attend); a runtime keeps its context and backends. description (when not null, of
// description_size bytes) gets the backend's one-line description. kUnsupported names why no
// device runs it.
Status attend_gpu_once(const float* q, const void* k, const void* v, DType kv_dtype, float* o,
                       const AttentionShape& shape, const AttentionParams& params, char* description = nullptr,
                       size_t description_size = 0);

// ---- Either --------------------------------------------------------------------------------------

// A view of a CpuBackend or a GpuBackend that the caller owns (and keeps alive): code that runs
// attention takes a Backend and never asks which. Copyable, allocates nothing.
class Backend {
 public:
  Backend(CpuBackend* cpu) : cpu_(cpu) {}  // NOLINT: implicit by design
  Backend(GpuBackend* gpu) : gpu_(gpu) {}  // NOLINT

  BackendKind kind() const { return gpu_ ? BackendKind::kGpu : BackendKind::kCpu; }
  const char* description() const { return gpu_ ? gpu_->description() : cpu_->description(); }
  uint32_t size() const { return gpu_ ? gpu_->size() : cpu_->size(); }
  uint32_t position() const { return gpu_ ? gpu_->position() : cpu_->position(); }
  void reset(uint32_t start_position = 0) { gpu_ ? gpu_->reset(start_position) : cpu_->reset(start_position); }
  Status truncate(uint32_t tokens) { return gpu_ ? gpu_->truncate(tokens) : cpu_->truncate(tokens); }
  Status append(const float* k, size_t k_token_stride, const float* v, size_t v_token_stride, uint32_t n) {
    return gpu_ ? gpu_->append(k, k_token_stride, v, v_token_stride, n)
                : cpu_->append(k, k_token_stride, v, v_token_stride, n);
  }
  Status attend(const float* q, size_t q_token_stride, float* o, size_t o_token_stride, uint32_t t_q,
                const float* sinks = nullptr) {
    return gpu_ ? gpu_->attend(q, q_token_stride, o, o_token_stride, t_q, sinks)
                : cpu_->attend(q, q_token_stride, o, o_token_stride, t_q, sinks);
  }
  Status rotate_queries(float* q, size_t q_token_stride, uint32_t t_q) const {
    return gpu_ ? gpu_->rotate_queries(q, q_token_stride, t_q) : cpu_->rotate_queries(q, q_token_stride, t_q);
  }
  Status attend_dense(const float* q, const void* k, const void* v, DType kv_dtype, float* o,
                      const AttentionShape& shape, const AttentionParams& params) {
    return gpu_ ? gpu_->attend_dense(q, k, v, kv_dtype, o, shape, params)
                : cpu_->attend_dense(q, k, v, kv_dtype, o, shape, params);
  }

 private:
  friend class AttentionLayer;  // the *_unchecked calls, after its own checks
  Status append_unchecked(const float* k, size_t k_token_stride, const float* v, size_t v_token_stride, uint32_t n) {
    return gpu_ ? gpu_->append_unchecked(k, k_token_stride, v, v_token_stride, n)
                : cpu_->append_unchecked(k, k_token_stride, v, v_token_stride, n);
  }
  Status attend_unchecked(const float* q, size_t q_token_stride, float* o, size_t o_token_stride, uint32_t t_q,
                          const float* sinks) {
    return gpu_ ? gpu_->attend_unchecked(q, q_token_stride, o, o_token_stride, t_q, sinks)
                : cpu_->attend_unchecked(q, q_token_stride, o, o_token_stride, t_q, sinks);
  }
  void rotate_queries_unchecked(float* q, size_t q_token_stride, uint32_t t_q) const {
    gpu_ ? gpu_->rotate_queries_unchecked(q, q_token_stride, t_q)
         : cpu_->rotate_queries_unchecked(q, q_token_stride, t_q);
  }
  CpuBackend* cpu_ = nullptr;
  GpuBackend* gpu_ = nullptr;
};

}  // namespace headway
