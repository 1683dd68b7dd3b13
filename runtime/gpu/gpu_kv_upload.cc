// K/V rows into the device cache: each row is widened to f32 on the host, K rotated (RoPE at its
// absolute position, start + its index since the reset), rounded to the plan's dtype and written
// in the device's storage (q8_0 and q4_0: quantized by quantize_row, KvCache's bytes), straight
// into mapped K/V (unified memory) or into the staging buffer, whose rows are copied to their
// cache rows with the next command buffer (or by flush() when the staging buffer is full). A
// dense call's rows already in the plan's block format are copied as they are. Token i since the
// reset goes to the row KvCache::append puts it in (cache_row(i): the ring's rule, kv_ring.hpp).
// MLA (shared_kv) writes K
// alone: its V is the K row, as KvCache::append stores it, and `v` is not read.
#include <cstring>

#include "headway/dtype_convert.hpp"
#include "headway/quantize.hpp"
#include "runtime/gpu/gpu_backend_impl.hpp"
#include "runtime/gpu/vk_status.hpp"
#include "runtime/attention/rope.hpp"

namespace headway {
namespace {

// src: a row of n values of dtype t (row_bytes bytes) into f32.
void decode_row(const void* src, DType t, uint32_t n, size_t row_bytes, float* out) {
  switch (t) {
    case DType::kF32: std::memcpy(out, src, n * sizeof(float)); break;
    case DType::kF16: f16_to_f32(static_cast<const uint16_t*>(src), out, n); break;
    case DType::kBF16: bf16_to_f32(static_cast<const uint16_t*>(src), out, n); break;
    case DType::kQ8_0:
    case DType::kQ4_0:
      // The arguments are the backend's own (a block type, a whole row): cannot fail.
      (void)dequantize_row(quant_type_of(t), src, row_bytes, n, out);
      break;
    default: break;  // weight formats: no cache stores them (dtype_stores_kv)
  }
}

// x rounded to the plan's dtype (what the CPU cache stores), written in the device's storage
// (row_bytes bytes).
void encode_row(const float* x, uint32_t n, DType plan_dtype, gpu::Storage storage, size_t row_bytes, uint8_t* dst) {
  uint16_t* d16 = reinterpret_cast<uint16_t*>(dst);
  float* d32 = reinterpret_cast<float*>(dst);
  switch (storage) {
    case gpu::Storage::kF16: f32_to_f16(x, d16, n); return;
    case gpu::Storage::kBF16: f32_to_bf16(x, d16, n); return;
    case gpu::Storage::kQ8_0:
    case gpu::Storage::kQ4_0:
      // KvCache's store_row: a valid block type, dst holding the row; cannot fail.
      (void)quantize_row(quant_type_of(plan_dtype), x, n, dst, row_bytes);
      return;
    case gpu::Storage::kF32:
      if (plan_dtype == DType::kF16) {
        for (uint32_t i = 0; i < n; ++i) d32[i] = f16_bits_to_f32(f32_to_f16_bits(x[i]));
      } else if (plan_dtype == DType::kBF16) {
        for (uint32_t i = 0; i < n; ++i) d32[i] = bf16_bits_to_f32(f32_to_bf16_bits(x[i]));
      } else {
        std::memcpy(d32, x, n * sizeof(float));
      }
      return;
  }
}

}  // namespace

uint8_t* GpuBackend::Impl::kv_destination(bool is_k, uint32_t g, uint32_t index) {
  if (mapped) {
    return (is_k ? k : v).mapped + (VkDeviceSize{g} * plan.cache_rows + cache_row(index)) * row_bytes;
  }
  const uint32_t slot = index - pending_pos;
  return staging.mapped + (is_k ? stage_k : stage_v) + (VkDeviceSize{g} * stage_tokens + slot) * row_bytes;
}

// Rows of the tokens index0 .. index0 + n − 1 since the reset; k and v are [n, n_kv_heads,
// head_dim] in `src`, token t at t · token_stride values (a block format's rows are whole blocks:
// dtype_row_bytes gives the bytes of both strides). rotate: RoPE K at its absolute position
// start + index (cache use).
Status GpuBackend::Impl::write_rows(const void* k_in, const void* v_in, size_t token_stride, DType src, uint32_t n,
                                    uint32_t index0, bool rotate) {
  const size_t src_row = dtype_row_bytes(src, head_dim);
  const size_t src_token = dtype_row_bytes(src, token_stride);
  const DType dt = plan.config.kv_dtype;
  // The plan's block rows as they are: what KvCache would hold for them.
  const bool copy = !rotate && dtype_is_block(src) && static_cast<gpu::Storage>(src) == storage;
  for (uint32_t t = 0; t < n; ++t) {
    const uint32_t index = index0 + t;
    if (!mapped) {
      if (pending_n == stage_tokens) HEADWAY_RETURN_IF_ERROR(flush());
      if (pending_n == 0) pending_pos = index;
    }
    const uint8_t* kt = static_cast<const uint8_t*>(k_in) + t * src_token;
    const uint8_t* vt = static_cast<const uint8_t*>(v_in) + t * src_token;
    for (uint32_t g = 0; g < n_kv; ++g) {
      uint8_t* kd = kv_destination(true, g, index);
      uint8_t* vd = shared_kv ? nullptr : kv_destination(false, g, index);
      if (copy) {
        std::memcpy(kd, kt + g * src_row, row_bytes);
        if (!shared_kv) std::memcpy(vd, vt + g * src_row, row_bytes);
        continue;
      }
      decode_row(kt + g * src_row, src, head_dim, src_row, row);
      if (rotate) apply_rope(row, 1, head_dim, 1, head_dim, start + index, start + index0 + n, plan.config.rope, rope);
      encode_row(row, head_dim, dt, storage, row_bytes, kd);
      if (shared_kv) continue;
      decode_row(vt + g * src_row, src, head_dim, src_row, row);
      encode_row(row, head_dim, dt, storage, row_bytes, vd);
    }
    if (!mapped) ++pending_n;
  }
  return Status();
}

// Copies the staged rows to their cache rows. Per kv head at most three runs of rows: tokens
// below ring.fixed (sink rows), then the ring's run from cache_row of the first token after them
// to the ring's end, then the rest from the ring's start (a staged run holds at most the ring's
// rows, so it wraps at most once and never overlaps itself).
void GpuBackend::Impl::record_pending_copies() {
  if (mapped || pending_n == 0) return;
  const uint32_t rows = plan.cache_rows;
  // [staged slot, token count, cache row] of each run.
  uint32_t runs[3][3];
  uint32_t n_runs = 0;
  uint32_t slot = 0;
  if (pending_pos < ring.fixed) {
    const uint32_t n = ring.fixed - pending_pos < pending_n ? ring.fixed - pending_pos : pending_n;
    runs[n_runs][0] = 0;
    runs[n_runs][1] = n;
    runs[n_runs++][2] = pending_pos;
    slot = n;
  }
  if (slot < pending_n) {
    const uint32_t r0 = cache_row(pending_pos + slot);
    const uint32_t left = pending_n - slot;
    const uint32_t first = left < rows - r0 ? left : rows - r0;
    runs[n_runs][0] = slot;
    runs[n_runs][1] = first;
    runs[n_runs++][2] = r0;
    if (first < left) {
      runs[n_runs][0] = slot + first;
      runs[n_runs][1] = left - first;
      runs[n_runs++][2] = ring.fixed;
    }
  }
  uint32_t n = 0;
  for (uint32_t g = 0; g < n_kv; ++g) {
    const VkDeviceSize src = VkDeviceSize{g} * stage_tokens * row_bytes;
    const VkDeviceSize dst = VkDeviceSize{g} * rows * row_bytes;
    for (uint32_t r = 0; r < n_runs; ++r) {
      const VkDeviceSize from = src + runs[r][0] * row_bytes, to = dst + runs[r][2] * row_bytes;
      const VkDeviceSize bytes = runs[r][1] * row_bytes;
      k_regions[n] = VkBufferCopy{stage_k + from, to, bytes};
      if (!shared_kv) v_regions[n] = VkBufferCopy{stage_v + from, to, bytes};
      ++n;
    }
  }
  vkCmdCopyBuffer(cmd, staging.buffer, k.buffer, n, k_regions);
  if (!shared_kv) vkCmdCopyBuffer(cmd, staging.buffer, v.buffer, n, v_regions);
  pending_n = 0;
}

// The staged rows copied now, in their own submission (the staging buffer is full).
Status GpuBackend::Impl::flush() {
  if (mapped || pending_n == 0) return Status();
  HEADWAY_RETURN_IF_ERROR(begin(cmd, VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT));
  record_pending_copies();
  HEADWAY_VK(vkEndCommandBuffer(cmd), "vkEndCommandBuffer");
  return submit_and_wait(cmd);
}

}  // namespace headway
