// GpuBackend's state and the steps that make and use it, one file each:
//   gpu_backend.cc    the public class: argument checks, build() in named steps, destroy()
//   gpu_buffers.cc    the device buffers and the staging layout, split-KV partials, the plan's
//                     ALiBi slopes
//   gpu_pipelines.cc  descriptor set layouts, descriptor sets, the two compute pipelines
//   gpu_kv_upload.cc  rows converted on the host into mapped or staged memory, staged copies
//   gpu_dispatch.cc   the command buffers: the one recorded at create (mapped memory), recording a
//                     call (staged memory), submitting, waiting
// Internal to runtime/gpu.
//
// Device buffers:
//   K, V     [n_kv_heads, cache_rows, head_dim] in the storage dtype (q8_0, q4_0: rows of
//            ceil(head_dim / 32) blocks, the buffer padded to whole 4-byte words, which the block
//            shaders read); the i-th token since the reset in row i mod cache_rows, or, in a ring
//            with S sink tokens (KvCache's layout), row i for i < S and S + (i − S) mod
//            (cache_rows − S) after them. MLA (Config::mla): no V buffer; K's latent rows are V
//            too (KvCache's aliasing), the K buffer bound at V's binding
//   Q, O     [max_tokens, n_heads, head_dim] f32
//   partials [n_kv_heads, max_splits, rows ≤ kSplitMaxRows, head_dim + 2] f32 (split-KV; ≤ 16 MiB)
//   alibi    [2, n_heads] f32: the plan's ALiBi slopes (written once at create), a dense call's
//   sinks    [n_heads] f32, a call's sink logits  } mapped: written by the host before the
//   params   CallParams, the call's values        } submit; staged: updated in the command buffer
//   indirect (mapped only) two VkDispatchIndirectCommand: attention, merge (0 groups: no split)
//   mask     a dense call's general mask [t_q, t_kv] f32 (0 or −inf for a bool one), rows t_kv
//            apart: max_tokens × cache_rows floats with dense_masks, else a 16-byte stand-in
//   staging  (unless mapped) [K rows: n_kv_heads, stage_tokens, head_dim][V rows: same, none for
//            MLA][Q][O][mask, with dense_masks], stage_tokens = min(cache_rows, max(max_tokens, 1024))
#pragma once

#include <vulkan/vulkan.h>

#include <cstddef>
#include <cstdint>

#include "headway/backend.hpp"
#include "runtime/attention/kv_ring.hpp"
#include "runtime/gpu/gpu_internal.hpp"

namespace headway {
namespace gpu {

// Mirrors the shaders' uniform block of a call's values (std140: 4-byte scalars, no padding).
struct CallParams {
  uint32_t t_q;
  uint32_t t_kv;
  uint32_t n_heads;
  uint32_t group;
  uint32_t kv_head_stride;
  uint32_t kv_first_row;
  uint32_t kv_ring_rows;
  float scale;
  float softcap;
  uint32_t causal;
  uint32_t window;
  uint32_t kv_chunk;
  uint32_t n_splits;
  uint32_t kv_split_lo;
  uint32_t has_sinks;
  uint32_t sink_keys;
  uint32_t sink_gap;
  uint32_t has_alibi;
  uint32_t alibi_base;
  uint32_t split_sink_keys;
  uint32_t prefix_keys;
  uint32_t window_symmetric;
  uint32_t has_mask;
};
static_assert(sizeof(CallParams) == 92, "CallParams must match the shaders' block");

// A dense call's general mask: entry [t][j] at t · row_stride + j, bool (nonzero = visible) or
// additive f32; both null: none.
struct MaskRows {
  const uint8_t* bools = nullptr;
  const float* additive = nullptr;
  size_t row_stride = 0;
};

// attention.comp's push constants: fixed per recorded dispatch.
struct DispatchConstants {
  uint32_t row_tile_base;
};

}  // namespace gpu

struct GpuBackend::Impl {
  GpuContext::Impl* ctx = nullptr;
  const GpuDeviceInfo* info = nullptr;
  Plan plan{};
  gpu::Tiling tiling{};
  gpu::Storage storage = gpu::Storage::kF32;
  bool mapped = false;     // K/V/Q/O are host-visible device memory: no staging, no copies
  bool shared_kv = false;  // MLA: V is the K row; `v` is never made, K is bound in its place
  uint32_t head_dim = 0;
  uint32_t n_kv = 0;
  uint32_t q_width = 0;
  VkDeviceSize row_bytes = 0;  // one K or V row in storage
  // Where the cache keeps each token, as KvCache does (its fixed rows: the sink tokens a ring
  // keeps for good).
  KvRing ring;
  float* plan_slopes = nullptr;  // the plan's n_heads ALiBi slopes (KvCache::make_alibi_slopes), or null
  bool dense_masks = false;      // the mask buffer holds max_tokens × cache_rows entries

  gpu::Buffer k, v, q, o, staging, partials, sinks, alibi, params, indirect, mask;
  uint32_t max_splits = 0;  // what `partials` holds; < 2: calls never split
  VkDeviceSize stage_k = 0, stage_v = 0, stage_q = 0, stage_o = 0, stage_mask = 0;
  uint32_t stage_tokens = 0;

  VkDescriptorSetLayout set_layout = VK_NULL_HANDLE;
  VkDescriptorPool descriptor_pool = VK_NULL_HANDLE;
  VkDescriptorSet set = VK_NULL_HANDLE;
  VkPipelineLayout layout = VK_NULL_HANDLE;
  VkPipeline pipeline = VK_NULL_HANDLE;
  VkDescriptorSetLayout merge_set_layout = VK_NULL_HANDLE;
  VkDescriptorSet merge_set = VK_NULL_HANDLE;
  VkPipelineLayout merge_layout = VK_NULL_HANDLE;
  VkPipeline merge_pipeline = VK_NULL_HANDLE;
  VkCommandPool command_pool = VK_NULL_HANDLE;
  VkCommandBuffer cmd = VK_NULL_HANDLE;       // recorded per call (staged memory, very long calls)
  VkCommandBuffer recorded = VK_NULL_HANDLE;  // mapped memory: recorded once at create, resubmitted
  VkFence fence = VK_NULL_HANDLE;
  VkBufferCopy* k_regions = nullptr;  // 3 · n_kv_heads each: sink rows, a ring run that may wrap once
  VkBufferCopy* v_regions = nullptr;  // null where shared_kv

  // Rows count from the reset: the i-th token appended since reset(start) sits at position
  // start + i, in row cache_row(i).
  uint32_t start = 0;        // the position of the first token since the reset
  uint32_t size = 0;         // tokens appended since the reset
  uint32_t pending_pos = 0;  // staging holds tokens pending_pos .. + pending_n − 1, not yet copied
  uint32_t pending_n = 0;
  float row[kMaxHeadDim];        // one row widened to f32 (RoPE, rounding)
  double rope[kMaxHeadDim / 2];  // the plan's RoPE frequencies, made at create
  static_assert(2 * kMaxLongRopePairs <= kMaxHeadDim / 2, "LongRoPE's two tables fit the RoPE table");
  char kernel[64] = {};
  char description[400] = {};

  VkDevice device() const { return ctx->device; }
  // The buffer the shader reads V from.
  const gpu::Buffer& v_buffer() const { return shared_kv ? k : v; }
  // Bytes of the K (and of the V) buffer; MLA's one buffer is both.
  VkDeviceSize kv_bytes() const { return (VkDeviceSize{n_kv} * plan.cache_rows * row_bytes + 3) / 4 * 4; }
  // KvCache::append's row of the i-th token since the reset.
  uint32_t cache_row(uint32_t i) const { return ring.row(i); }

  // gpu_backend.cc: every step below in order; the first failure is returned (destroy() frees
  // what was made).
  Status build(const Plan& p);
  void destroy();
  void choose_storage(const Plan& p);
  Status check_device_limits() const;
  void describe();

  // gpu_buffers.cc
  Status create_buffers();
  Status create_split_partials();
  Status write_plan_alibi_slopes();
  void destroy_buffers();

  // gpu_pipelines.cc
  Status create_layouts();
  Status create_descriptor_sets();
  Status create_pipelines();
  void destroy_pipelines();

  // gpu_kv_upload.cc
  uint8_t* kv_destination(bool is_k, uint32_t g, uint32_t index);
  Status write_rows(const void* k, const void* v, size_t token_stride, DType src, uint32_t n, uint32_t index0,
                    bool rotate);
  void record_pending_copies();
  Status flush();

  // gpu_dispatch.cc
  Status create_commands();
  void destroy_commands();
  Status begin(VkCommandBuffer c, VkCommandBufferUsageFlags flags);
  Status record_resubmitted();
  Status submit_and_wait(VkCommandBuffer c);
  // cp: the call's values but the split's, ALiBi's and the mask's, which run() fills in.
  // sinks_in: n_heads sink logits, or null. slopes: plan_slopes (on the device since create), a
  // dense call's n_heads ALiBi slopes (written to the alibi buffer's second half), or null
  // (none). mask: a dense call's general mask (dense_masks only), or null.
  Status run(const float* q_in, size_t q_stride, float* o_out, size_t o_stride, const float* sinks_in,
             const float* slopes, gpu::CallParams cp, const gpu::MaskRows* mask = nullptr);
  Status record_call(const gpu::CallParams& cp, const float* sinks_in, const float* call_slopes, uint32_t tiles,
                     uint32_t n_splits);
  // Bytes of the mask buffer.
  VkDeviceSize mask_bytes() const {
    return dense_masks ? VkDeviceSize{plan.max_tokens} * plan.cache_rows * sizeof(float) : 16;
  }
};

}  // namespace headway
