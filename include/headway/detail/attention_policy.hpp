// How CPU attention is cut into tasks and how much memory it takes: the one definition that the
// plan (arena sizes), the CPU driver (runtime/attention.cc), the CPU backend's workspace and the
// kernels' scratch layout (simd/attention/attention_tiling.h) all read. A function of the shapes only (never
// of the thread count, except for the per-thread scratch), constexpr, and self-contained: it
// includes no other header of the project, so the kernels may use it too.
//
// Tasks:
//   - tiles: one task per (kv head, tile of query tokens); a tile holds attention_q_rows(group)
//     query rows (tokens × the group's query heads), never fewer than one whole group: 32, two
//     16-lane vectors (the prefill kernel's register block), or 48 for some groups (attention_q_rows).
//   - split-KV decode: when the tile tasks are fewer than kAttnSplitMinTasks, a kv head has at
//     most kAttnSplitMaxRows query rows and there are at least 2 · kAttnKvChunk keys, one task per
//     (kv head, chunk of keys) writes a partial softmax (max, sum, unnormalized O per row), and a
//     second pass merges each kv head's partials in chunk order.
//
// Workspace of one call (every region starts on a kAlignment boundary):
//   [threads × per-thread kernel scratch (AttentionScratchLayout)]
//   [split-KV only: n_kv_heads × (m [n_chunks, rows] f32, l [n_chunks, rows] f32,
//                                 o [n_chunks, rows, head_dim] f32)], rows = t_q · group
#pragma once

#include <cstdint>

namespace headway {

inline constexpr uint64_t kAlignment = 64;  // cache line; every arena, workspace and scratch region starts on one
constexpr uint64_t align_up(uint64_t n, uint64_t a = kAlignment) { return (n + a - 1) / a * a; }

// The largest head_dim the plan admits and the kernels' stack buffers hold.
inline constexpr uint32_t kMaxHeadDim = 576;  // 512, and MLA's 576 (DeepSeek: a 512 latent + 64 RoPE)
// The head dims with compile-time-specialized kernels (BERT/GPT-2: 64; Llama/Mistral: 128); every
// other one runs the generic runtime-head_dim code.
constexpr bool head_dim_specialized(uint32_t head_dim) { return head_dim == 64 || head_dim == 128; }

inline constexpr uint32_t kAttnQueryRows = 32;      // query rows per tile task (attention_q_rows)
inline constexpr uint32_t kAttnQueryRowsWide = 48;  // for some groups (attention_q_rows)
inline constexpr uint32_t kAttnKvTile = 64;         // keys per K/V tile
inline constexpr uint32_t kAttnMaxLanes = 16;       // f32 lanes of the widest vector the kernels use
inline constexpr uint32_t kAttnKvChunk = 512;       // fewest keys per split-KV chunk
inline constexpr uint32_t kAttnSplitMinTasks = 16;
inline constexpr uint32_t kAttnSplitMaxRows = 64;
inline constexpr uint32_t kAttnSplitTasks = 32;

// Query rows per tile task for `group` query heads per kv head: kAttnQueryRows, or
// kAttnQueryRowsWide (three 16-lane vectors, each widened K/V tile serving half as many rows
// again) where whole groups fill it exactly and not 32: groups of 3, 6, 12 and 24 (SmolLM2's 3
// left 2 of 32 lanes padding). Other groups keep 32: their tasks, and the scratch a small device
// plans for them, stay as they were.
constexpr uint32_t attention_q_rows(uint32_t group) {
  const bool wide = group != 0 && kAttnQueryRowsWide % group == 0 && kAttnQueryRows % group != 0;
  return wide ? kAttnQueryRowsWide : kAttnQueryRows;
}

// One task's kernel scratch, offsets in bytes from its 64-byte aligned base, each region a
// multiple of 64 bytes:
//   q   [rows_cap · d_pad] f32   Q of the task, pre-scaled: Qᵀ [D][rows] (prefill) or [rows][d_pad]
//   o   [rows_cap · d_pad] f32   unnormalized output accumulators, same two layouts
//   m,l [rows_cap] f32 each      running max and running sum of each row
//   lo,hi [rows_cap] i32 each    this tile's visible key range of each row, tile-relative
//   klo,khi [rows_cap] i64 each  each row's visible key range, absolute
//   slope [rows_cap] f32         ALiBi slope of each row (prefill)
//   prel  [rows_cap] i32         each row's position relative to the current tile (prefill ALiBi)
//   s   [rows_cap · kAttnKvTile] f32   scores, then probabilities, of one tile
//   k,v [kAttnKvTile · d_pad] f32      one K and one V tile widened to f32 (prefill; decode reads
//                                      the cache directly)
// rows_cap and d_pad round up to kAttnMaxLanes floats (64 bytes).
struct AttentionScratchLayout {
  uint64_t rows_cap = 0;  // most query rows of one task
  uint64_t d_pad = 0;     // head_dim rounded up
  uint64_t q = 0, o = 0, m = 0, l = 0, lo = 0, hi = 0, klo = 0, khi = 0, slope = 0, prel = 0, s = 0, k = 0, v = 0;
  uint64_t total = 0;
};

constexpr AttentionScratchLayout attention_scratch_layout(uint32_t head_dim, uint32_t group) {
  AttentionScratchLayout s;
  const uint32_t rows = attention_q_rows(group);
  s.rows_cap = align_up(group > rows ? group : rows, kAttnMaxLanes);
  s.d_pad = align_up(head_dim, kAttnMaxLanes);
  uint64_t at = 0;
  const auto region = [&at](uint64_t bytes) {
    const uint64_t offset = at;
    at += bytes;
    return offset;
  };
  s.q = region(s.rows_cap * s.d_pad * 4);
  s.o = region(s.rows_cap * s.d_pad * 4);
  s.m = region(s.rows_cap * 4);
  s.l = region(s.rows_cap * 4);
  s.lo = region(s.rows_cap * 4);
  s.hi = region(s.rows_cap * 4);
  s.klo = region(s.rows_cap * 8);
  s.khi = region(s.rows_cap * 8);
  s.slope = region(s.rows_cap * 4);
  s.prel = region(s.rows_cap * 4);
  s.s = region(s.rows_cap * kAttnKvTile * 4);
  s.k = region(uint64_t{kAttnKvTile} * s.d_pad * 4);
  s.v = region(uint64_t{kAttnKvTile} * s.d_pad * 4);
  s.total = at;
  return s;
}

// Scratch bytes one thread needs (a multiple of 64): depends only on head_dim and the group.
constexpr uint64_t attention_scratch_bytes(uint32_t head_dim, uint32_t group) {
  return attention_scratch_layout(head_dim, group).total;
}

// Query tokens per tile task: whole groups, about attention_q_rows(group) rows.
constexpr uint32_t attention_q_tile(uint32_t group) {
  const uint32_t rows = attention_q_rows(group);
  return group >= rows ? 1 : rows / group;
}

// Keys per split-KV chunk for t_kv keys and `tile_tasks` (kv head, query tile) tasks: as long as
// gives about kAttnSplitTasks tasks in all (whole tiles), never under kAttnKvChunk. Each chunk
// costs a start (its first tile's loads not yet overlapped, Q loaded) and a merge, so fewer,
// longer chunks are better as long as 32 tasks still spread evenly over a small device's cores.
constexpr uint32_t attention_kv_chunk(uint32_t t_kv, uint64_t tile_tasks) {
  const uint64_t tasks = tile_tasks == 0 ? 1 : tile_tasks;
  const uint64_t chunks = (kAttnSplitTasks + tasks - 1) / tasks;
  uint64_t chunk = (uint64_t{t_kv} + chunks - 1) / chunks;
  chunk = (chunk + kAttnKvTile - 1) / kAttnKvTile * kAttnKvTile;
  return chunk < kAttnKvChunk ? kAttnKvChunk : static_cast<uint32_t>(chunk);
}

// Bytes of one kv head's split-KV partials for `chunks` chunks of `rows` query rows.
constexpr uint64_t attention_partials_bytes_per_head(uint64_t chunks, uint64_t rows, uint32_t head_dim) {
  return 2 * align_up(chunks * rows * 4) + align_up(chunks * rows * head_dim * 4);
}

// How one call over (t_q, t_kv) is cut into tasks; see the header comment.
struct AttentionSplit {
  uint32_t group = 0;            // query heads per kv head
  uint32_t q_tile = 0;           // query tokens per tile task
  uint32_t q_tiles = 0;          // tiles per kv head
  uint32_t chunk = 0;            // split-KV keys per chunk
  uint32_t n_chunks = 0;         // split-KV chunks per kv head; 0 = tiles only
  uint64_t scratch_bytes = 0;    // per thread, a multiple of 64
  uint64_t partials_bytes = 0;   // per kv head (m, l, o), a multiple of 64
  uint64_t workspace_bytes = 0;  // for the thread count asked
};

// The split of a valid shape (n_kv_heads divides n_heads) for `threads` >= 1 threads.
constexpr AttentionSplit attention_split(uint32_t t_q, uint32_t t_kv, uint32_t n_heads, uint32_t n_kv_heads,
                                         uint32_t head_dim, uint32_t threads) {
  AttentionSplit s;
  s.group = n_heads / n_kv_heads;
  s.q_tile = attention_q_tile(s.group);
  s.q_tiles = (t_q + s.q_tile - 1) / s.q_tile;
  s.scratch_bytes = attention_scratch_bytes(head_dim, s.group);
  const uint64_t rows = uint64_t{t_q} * s.group;
  const uint64_t tile_tasks = uint64_t{n_kv_heads} * s.q_tiles;
  if (tile_tasks < kAttnSplitMinTasks && rows <= kAttnSplitMaxRows && t_kv >= 2 * kAttnKvChunk) {
    s.chunk = attention_kv_chunk(t_kv, tile_tasks);
    s.n_chunks = (t_kv + s.chunk - 1) / s.chunk;
    s.partials_bytes = attention_partials_bytes_per_head(s.n_chunks, rows, head_dim);
  }
  s.workspace_bytes = uint64_t{threads} * s.scratch_bytes + uint64_t{n_kv_heads} * s.partials_bytes;
  return s;
}

// The most bytes the split-KV partials of all kv heads take for any call with t_kv <= cache_rows
// and t_q <= max_tokens: a bound, not a search. Rows are at most kAttnSplitMaxRows (whole groups
// of t_q tokens); chunks at most ceil(t_kv / kAttnKvChunk) (no chunk is shorter) and at most
// ceil(kAttnSplitTasks / n_kv_heads) (attention_kv_chunk asks for that many when a kv head has one
// tile task, fewer when it has more), and the bytes grow with both.
constexpr uint64_t attention_partials_bytes_bound(uint32_t head_dim, uint32_t group, uint32_t n_kv_heads,
                                                  uint32_t cache_rows, uint32_t max_tokens) {
  if (group == 0 || group > kAttnSplitMaxRows || n_kv_heads == 0 || cache_rows < 2 * kAttnKvChunk) return 0;
  uint64_t tokens = kAttnSplitMaxRows / group;
  if (tokens > max_tokens) tokens = max_tokens;
  uint64_t chunks = (uint64_t{cache_rows} + kAttnKvChunk - 1) / kAttnKvChunk;
  const uint64_t by_tasks = (kAttnSplitTasks + n_kv_heads - 1) / n_kv_heads;
  if (by_tasks < chunks) chunks = by_tasks;
  return uint64_t{n_kv_heads} * attention_partials_bytes_per_head(chunks, tokens * group, head_dim);
}

// The most workspace any call with t_kv <= cache_rows and t_q <= max_tokens asks for on `threads`
// threads: what the plan reserves as scratch and what a CPU backend holds.
constexpr uint64_t attention_workspace_bytes_bound(uint32_t head_dim, uint32_t group, uint32_t n_kv_heads,
                                                   uint32_t cache_rows, uint32_t max_tokens, uint32_t threads) {
  return uint64_t{threads} * attention_scratch_bytes(head_dim, group) +
         attention_partials_bytes_bound(head_dim, group, n_kv_heads, cache_rows, max_tokens);
}

// The Gated DeltaNet kernels (simd/gated_delta/gated_delta.h): tokens per chunk of the chunked (WY) form
// (transformers' chunk_size), and the f32 scratch one head's chunked call takes, fixed for (dk,
// dv) whatever the tokens (the layout: ChunkScratch, simd/gated_delta/gated_delta-inl.h): four [chunk] vectors,
// three [chunk, chunk] matrices, and [chunk] rows of dv and of dk, each rounded up to 16 floats.
inline constexpr uint32_t kGatedDeltaChunk = 64;
constexpr uint64_t gated_delta_chunk_scratch_floats(uint32_t dk, uint32_t dv) {
  const uint64_t c = kGatedDeltaChunk;
  return 4 * c + 3 * c * c + c * ((uint64_t{dv} + 15) / 16 * 16 + (uint64_t{dk} + 15) / 16 * 16);
}

}  // namespace headway
