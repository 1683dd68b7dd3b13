// Where a layer's cache keeps its tokens: one rule for the CPU cache (KvCache) and the GPU
// backend, which both write rows and describe them to their kernels through it.
//
// A cache of cache_rows rows holds the tokens appended since its reset. Where every position fits
// (cache_rows == max_seq) token i sits in row i. A sliding-window cache (cache_rows < max_seq) is a
// ring: its first S rows keep the window's S sink tokens for good, and token i ≥ S goes to row
// S + (i − S) mod (cache_rows − S), overwriting the oldest token of the rest.
#pragma once

#include <cstdint>

#include "headway/plan.hpp"

namespace headway {

// The keys attention reads after `size` tokens: t_kv of them; in a ring, sink_tokens kept rows,
// then the newest tokens oldest first from ring row first_row (a ring that has not wrapped starts
// at row 0), sink_gap positions after the last sink token. simd::AttentionArgs' and the GPU
// shaders' fields of the same names.
struct KvRingKeys {
  uint32_t t_kv = 0;
  uint32_t ring_rows = 0;  // 0: not a ring
  uint32_t first_row = 0;
  uint32_t sink_gap = 0;
  uint32_t sink_tokens = 0;  // the window's sink tokens (ring or not)
};

struct KvRing {
  uint32_t rows = 0;   // cache_rows
  uint32_t fixed = 0;  // the sink tokens a ring keeps in its first rows (0: not a ring, or none)
  bool ring = false;   // cache_rows < max_seq
  uint32_t sink_tokens = 0;

  KvRing() = default;
  explicit KvRing(const Plan& p)
      : rows(p.cache_rows),
        ring(p.cache_rows < p.config.max_seq),
        sink_tokens(p.config.window != 0 ? p.config.sink_tokens : 0) {
    fixed = ring ? sink_tokens : 0;
  }

  // A plan a cache can hold: a ring keeps at least one row besides its sink rows.
  bool holdable() const { return !ring || fixed < rows; }

  // The row of the i-th token since the reset.
  uint32_t row(uint32_t i) const { return i < fixed ? i : fixed + (i - fixed) % (rows - fixed); }

  KvRingKeys keys(uint32_t size) const {
    KvRingKeys k;
    k.t_kv = size < rows ? size : rows;
    k.sink_tokens = sink_tokens;
    if (!ring) return k;
    k.ring_rows = rows;
    if (size > rows) {
      // Wrapped: logical key `fixed` is token size − (rows − fixed) since the reset.
      const uint32_t oldest = size - (rows - fixed);
      k.first_row = (oldest - fixed) % (rows - fixed);
      k.sink_gap = oldest - fixed;
    }
    return k;
  }
};

}  // namespace headway
