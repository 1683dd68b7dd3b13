// How the attention shader is cut for one plan on one device: a pure function of head_dim, the
// most query rows a call has and the device's limits, so tests check it without a device.
//
//   threads per workgroup = rows · tpr, about 4 subgroups (lavapipe: 8 lanes → 32 threads;
//   NVIDIA 32 → 128; AMD 64 → 256), at most the device's limits and 256.
//   tpr (threads per row in the P·V phase) = the power of two that leaves each thread at most
//   16 dims of O in registers (d64: 4, d128: 8, d256: 16, d576: 64, which raises the threads to
//   64 where 4 subgroups are fewer); fewer rows than that (decode) give the spare threads to the
//   rows.
//   kv_tile = the largest power of two ≤ 64 keys whose tiles fit in shared memory:
//     4 bytes · (rows·d [Q] + kv_tile·(d + 1) [K, padded] + kv_tile·d [V] + rows·kv_tile [P] + 7·rows [row stats])
#pragma once

#include <cstdint>

#include "headway/detail/attention_policy.hpp"
#include "headway/status.hpp"

namespace headway {
namespace gpu {

struct DeviceLimits {
  uint32_t subgroup_size = 0;  // 0: unknown (taken as 32)
  uint32_t max_shared_bytes = 0;
  uint32_t max_invocations = 0;
  uint32_t max_workgroup_size_x = 0;
};

struct Tiling {
  uint32_t rows = 0;     // query rows (token × head of the group) per workgroup
  uint32_t tpr = 0;      // threads per row
  uint32_t threads = 0;  // rows · tpr
  uint32_t kv_tile = 0;  // keys per shared-memory tile
  uint32_t dpt = 0;      // O dims per thread: ceil(head_dim / tpr)
  uint32_t shared_bytes = 0;
};

uint32_t tiling_shared_bytes(uint32_t head_dim, uint32_t rows, uint32_t kv_tile);

// The largest head_dim the shaders hold: the CPU's, MLA's latent rows included (576 for
// DeepSeek, 288 for MiniCPM3). Each thread keeps at most 16 output dims: a row of 576 takes 64
// threads, more than 4 subgroups of lavapipe's 8 lanes, so the workgroup grows to one row's.
inline constexpr uint32_t kGpuMaxHeadDim = kMaxHeadDim;

// max_rows: the most query rows one call has (max_tokens · group). kUnsupported when not even
// one row and one key fit in shared memory.
Result<Tiling> choose_tiling(uint32_t head_dim, uint32_t max_rows, const DeviceLimits& limits);

// Split-KV for calls with too few workgroups to fill a GPU (decode with few kv heads): the keys
// a call's rows see, [key_lo, key_hi], are cut into n_splits chunks of `chunk` keys (a whole
// number of kv tiles, at least min_keys each); a second pass merges them. Which calls split is
// the CPU's rule (headway/detail/attention_policy.hpp: at most kAttnSplitMaxRows rows per kv head);
// how many chunks is the device's: enough workgroups to fill it, GpuOptions::split_kv_min_keys.
inline constexpr uint32_t kSplitMaxRows = kAttnSplitMaxRows;
inline constexpr uint32_t kSplitTargetGroups = 128;  // split until about this many workgroups run
inline constexpr uint32_t kSplitMaxSplits = 64;

struct Split {
  uint32_t n_splits = 1;  // 1: no split
  uint32_t chunk = 0;     // keys per split
  uint32_t key_lo = 0;    // split s covers [key_lo + s · chunk, key_lo + (s + 1) · chunk)
};

// rows: query rows per kv head (t_q · group); max_splits: what the partials buffer holds
// (0 or 1: never split); min_keys: GpuOptions::split_kv_min_keys.
Split choose_split(int64_t key_lo, int64_t key_hi, uint32_t rows, uint32_t n_kv_heads, const Tiling& tiling,
                   uint32_t max_splits, uint32_t min_keys);

}  // namespace gpu
}  // namespace headway
