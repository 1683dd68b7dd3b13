#include "runtime/gpu/gpu_tiling.hpp"

namespace headway {
namespace gpu {
namespace {

uint32_t pow2_at_least(uint32_t n) {
  uint32_t p = 1;
  while (p < n && p < (1u << 30)) p <<= 1;
  return p;
}

uint32_t pow2_at_most(uint32_t n) {  // n >= 1
  uint32_t p = 1;
  while (p * 2 <= n && p < (1u << 30)) p <<= 1;
  return p;
}

constexpr uint32_t kMaxWorkgroupInvocations = 256;  // threads of one workgroup
constexpr uint32_t kMaxKvTile = 64;
constexpr uint32_t kMaxDimsPerThread = 16;

}  // namespace

uint32_t tiling_shared_bytes(uint32_t head_dim, uint32_t rows, uint32_t kv_tile) {
  const uint64_t words = uint64_t{rows} * head_dim + uint64_t{kv_tile} * (head_dim + 1) + uint64_t{kv_tile} * head_dim +
                         uint64_t{rows} * kv_tile + 7ull * rows;
  const uint64_t bytes = 4 * words;
  return bytes > 0xffffffffull ? 0xffffffffu : static_cast<uint32_t>(bytes);
}

Result<Tiling> choose_tiling(uint32_t head_dim, uint32_t max_rows, const DeviceLimits& limits) {
  if (head_dim == 0) return Status::error(Code::kInvalidArgument, "gpu tiling: head_dim is 0");
  if (head_dim > kGpuMaxHeadDim) {
    return Status::error(Code::kUnsupported,
                         "gpu: head_dim %u is more than the %u the shaders hold; use the cpu backend", head_dim,
                         kGpuMaxHeadDim);
  }
  const uint32_t sg = limits.subgroup_size ? limits.subgroup_size : 32;
  uint32_t cap = kMaxWorkgroupInvocations;
  if (limits.max_invocations && limits.max_invocations < cap) cap = limits.max_invocations;
  if (limits.max_workgroup_size_x && limits.max_workgroup_size_x < cap) cap = limits.max_workgroup_size_x;
  cap = pow2_at_most(cap ? cap : 1);
  uint32_t threads = pow2_at_least(4 * sg);
  if (threads < 32) threads = 32;
  if (threads > cap) threads = cap;

  const uint32_t dims = pow2_at_least(head_dim);
  uint32_t tpr = pow2_at_least((head_dim + kMaxDimsPerThread - 1) / kMaxDimsPerThread);
  if (tpr > threads) threads = tpr < cap ? tpr : cap;  // MLA's rows on small subgroups: one row's threads
  if (tpr > threads) tpr = threads;
  uint32_t rows = threads / tpr;
  const uint32_t want_rows = pow2_at_least(max_rows ? max_rows : 1);
  if (rows > want_rows) {  // few rows (decode): their spare threads split the dims finer
    rows = want_rows;
    tpr = threads / rows;
    if (tpr > dims) tpr = dims;
  }

  // Largest key tile that fits; then fewer rows (each row's share of threads grows).
  for (;;) {
    for (uint32_t kt = kMaxKvTile; kt >= 1; kt /= 2) {
      const uint32_t bytes = tiling_shared_bytes(head_dim, rows, kt);
      if (limits.max_shared_bytes == 0 || bytes <= limits.max_shared_bytes) {
        Tiling t;
        t.rows = rows;
        t.tpr = tpr;
        t.threads = rows * tpr;
        t.kv_tile = kt;
        t.dpt = (head_dim + tpr - 1) / tpr;
        t.shared_bytes = bytes;
        return t;
      }
    }
    if (rows == 1) break;
    rows /= 2;
    if (tpr * 2 <= threads && tpr * 2 <= dims) tpr *= 2;
  }
  return Status::error(Code::kUnsupported,
                       "gpu: head_dim %u needs %u bytes of shared memory for one query row and one key, the device "
                       "has %u (maxComputeSharedMemorySize)",
                       head_dim, tiling_shared_bytes(head_dim, 1, 1), limits.max_shared_bytes);
}

Split choose_split(int64_t key_lo, int64_t key_hi, uint32_t rows, uint32_t n_kv_heads, const Tiling& tiling,
                   uint32_t max_splits, uint32_t min_keys) {
  Split none;
  if (max_splits < 2 || min_keys == 0 || rows > kSplitMaxRows || key_hi < key_lo || tiling.rows == 0) return none;
  const uint64_t groups = uint64_t{n_kv_heads} * ((rows + tiling.rows - 1) / tiling.rows);
  if (groups >= kSplitTargetGroups) return none;
  const uint64_t keys = static_cast<uint64_t>(key_hi - key_lo + 1);
  uint64_t n = (kSplitTargetGroups + groups - 1) / groups;
  if (n > keys / min_keys) n = keys / min_keys;
  if (n > max_splits) n = max_splits;
  if (n < 2) return none;
  uint64_t chunk = (keys + n - 1) / n;
  chunk = (chunk + tiling.kv_tile - 1) / tiling.kv_tile * tiling.kv_tile;
  Split s;
  s.chunk = static_cast<uint32_t>(chunk);
  s.n_splits = static_cast<uint32_t>((keys + chunk - 1) / chunk);
  s.key_lo = static_cast<uint32_t>(key_lo);
  return s.n_splits < 2 ? none : s;
}

}  // namespace gpu
}  // namespace headway
