// What one tiling runs: one kv head's query tokens over a range of keys. The prefill tiling and
// the decode tiling over each K/V type are translation units of their own (attention_prefill.cc,
// attention_decode_<type>.cc: the kernels' largest compiles, which then build in parallel), each
// compiled for every target; attention.cc picks one per call (attention_tiling.h) and runs it
// once per kv head.
#pragma once

#include <cstdint>

#include "simd/attention/attention.h"

// For per-task helpers the tilings share: out of line and never cloned, so that the linked kernels
// hold one copy of each (an inline function is merged across translation units only where every
// caller calls the one symbol; GCC's IPA-SRA otherwise gives each caller a private clone).
#if defined(__GNUC__) && !defined(__clang__)
#define HEADWAY_KERNEL_SHARED __attribute__((noinline, noclone))
#else
#define HEADWAY_KERNEL_SHARED __attribute__((noinline))
#endif

namespace headway {
namespace simd {
namespace detail {

// Query tokens [q_begin, q_end) of kv head kv_head (every query head of its group) over keys
// [key_begin, key_end). Without partials, the normalized output goes to args->o; with them, the
// range is chunk chunk_index of a split-KV call and writes that chunk's m, l and unnormalized o.
struct AttentionRange {
  const AttentionArgs* args = nullptr;
  uint32_t kv_head = 0;
  uint32_t q_begin = 0;
  uint32_t q_end = 0;
  int64_t key_begin = 0;
  int64_t key_end = 0;
  void* scratch = nullptr;
  const AttentionPartials* partials = nullptr;
  uint32_t chunk_index = 0;
};

// Arguments already checked (attention.cc); dynamic dispatch to the best target.
void attention_prefill_range(const AttentionRange& r);
void attention_decode_f32_range(const AttentionRange& r);
void attention_decode_f16_range(const AttentionRange& r);
void attention_decode_bf16_range(const AttentionRange& r);
void attention_decode_q8_0_range(const AttentionRange& r);
void attention_decode_q4_0_range(const AttentionRange& r);

}  // namespace detail
}  // namespace simd
}  // namespace headway
