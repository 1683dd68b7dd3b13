// K/V rows into the device cache: each row is widened to f32 on the host, K rotated (RoPE at its
// absolute position, start + its index since the reset), rounded to the plan's dtype and written
// in the device's storage, straight into mapped K/V (unified memory) or into the staging buffer,
// whose rows are copied to their ring rows with the next command buffer (or by flush() when the
// staging buffer is full).
#include <cstring>

#include "headway/dtype_convert.hpp"
#include "runtime/gpu/gpu_backend_impl.hpp"
#include "runtime/gpu/vk_status.hpp"
#include "runtime/rope.hpp"

namespace headway {
namespace {

void decode_row(const void* src, DType t, uint32_t n, float* out) {
  switch (t) {
    case DType::kF32: std::memcpy(out, src, n * sizeof(float)); break;
    case DType::kF16: f16_to_f32(static_cast<const uint16_t*>(src), out, n); break;
    case DType::kBF16: bf16_to_f32(static_cast<const uint16_t*>(src), out, n); break;
  }
}

// x rounded to the plan's dtype (what the CPU cache stores), written in the device's storage.
void encode_row(const float* x, uint32_t n, DType plan_dtype, gpu::Storage storage, uint8_t* dst) {
  uint16_t* d16 = reinterpret_cast<uint16_t*>(dst);
  float* d32 = reinterpret_cast<float*>(dst);
  switch (storage) {
    case gpu::Storage::kF16: f32_to_f16(x, d16, n); return;
    case gpu::Storage::kBF16: f32_to_bf16(x, d16, n); return;
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
    const uint32_t r = index % plan.cache_rows;
    return (is_k ? k : v).mapped + (VkDeviceSize{g} * plan.cache_rows + r) * row_bytes;
  }
  const uint32_t slot = index - pending_pos;
  return staging.mapped + (is_k ? stage_k : stage_v) + (VkDeviceSize{g} * stage_tokens + slot) * row_bytes;
}

// Rows of the tokens index0 .. index0 + n − 1 since the reset; k and v are [n, n_kv_heads,
// head_dim] in `src`, token t at t · token_stride elements. rotate: RoPE K at its absolute
// position start + index (cache use).
Status GpuBackend::Impl::write_rows(const void* k_in, const void* v_in, size_t token_stride, DType src, uint32_t n,
                                    uint32_t index0, bool rotate) {
  const size_t es = dtype_bytes(src);
  const DType dt = plan.config.kv_dtype;
  for (uint32_t t = 0; t < n; ++t) {
    const uint32_t index = index0 + t;
    if (!mapped) {
      if (pending_n == stage_tokens) HEADWAY_RETURN_IF_ERROR(flush());
      if (pending_n == 0) pending_pos = index;
    }
    const uint8_t* kt = static_cast<const uint8_t*>(k_in) + t * token_stride * es;
    const uint8_t* vt = static_cast<const uint8_t*>(v_in) + t * token_stride * es;
    for (uint32_t g = 0; g < n_kv; ++g) {
      decode_row(kt + size_t{g} * head_dim * es, src, head_dim, row);
      if (rotate) apply_rope(row, 1, head_dim, 1, head_dim, start + index, plan.config.rope, rope);
      encode_row(row, head_dim, dt, storage, kv_destination(true, g, index));
      decode_row(vt + size_t{g} * head_dim * es, src, head_dim, row);
      encode_row(row, head_dim, dt, storage, kv_destination(false, g, index));
    }
    if (!mapped) ++pending_n;
  }
  return Status();
}

// Copies the staged rows to their ring rows: per kv head one run, two where the ring wraps.
void GpuBackend::Impl::record_pending_copies() {
  if (mapped || pending_n == 0) return;
  const uint32_t rows = plan.cache_rows;
  const uint32_t r0 = pending_pos % rows;
  const uint32_t first = pending_n < rows - r0 ? pending_n : rows - r0;
  uint32_t n = 0;
  for (uint32_t g = 0; g < n_kv; ++g) {
    const VkDeviceSize src = VkDeviceSize{g} * stage_tokens * row_bytes;
    const VkDeviceSize dst = VkDeviceSize{g} * rows * row_bytes;
    k_regions[n] = VkBufferCopy{stage_k + src, dst + r0 * row_bytes, first * row_bytes};
    v_regions[n] = VkBufferCopy{stage_v + src, dst + r0 * row_bytes, first * row_bytes};
    ++n;
    if (first < pending_n) {
      k_regions[n] = VkBufferCopy{stage_k + src + first * row_bytes, dst, (pending_n - first) * row_bytes};
      v_regions[n] = VkBufferCopy{stage_v + src + first * row_bytes, dst, (pending_n - first) * row_bytes};
      ++n;
    }
  }
  vkCmdCopyBuffer(cmd, staging.buffer, k.buffer, n, k_regions);
  vkCmdCopyBuffer(cmd, staging.buffer, v.buffer, n, v_regions);
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
