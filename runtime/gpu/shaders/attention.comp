// Flash attention, one workgroup per (kv head, tile of ROWS query rows). A query row is one
// (token, query head) of the kv head's group: row r = token · group + head-in-group, so the
// group's heads share every K/V tile the workgroup loads into shared memory.
//
// Semantics: runtime/gpu's caller contract (include/headway/backend.hpp) = simd/attention/attention.h:
//   O = softmax(scale · Q Kᵀ + mask) V, bottom-right causal, sliding window, softcap c·tanh(s/c)
//   before the mask, online softmax over K/V tiles, a row that sees no key gives zeros.
//   Learned sink logits (has_sinks): query head h's s_h joins every row's softmax with no value,
//   O = Σ_j e^{l_j − m} v_j / (Σ_j e^{l_j − m} + e^{s_h − m}): a row starts from (m = s_h, l = 1,
//   O = 0) in place of (−inf, 0, 0), as the CPU kernels do; a row that sees no key still gives 0.
//   Sink tokens (StreamingLLM, sink_keys > 0): keys [0, sink_keys) stay visible through the
//   window (causal still applies). A row's keys are two spans, as in the CPU kernels
//   (simd/attention/attention_tiling.h): the sink span [0, sink_keys) and the window span from sink_keys on;
//   the tile loop runs the sink span's tiles, then the window span's, so the keys between them are
//   never loaded. ALiBi (has_alibi): the logit of query head h at position p for key j gains
//   −m_h·|p − j| after scale and softcap (one fma, as the CPU's), sink keys sink_gap more.
//   A dense call's general mask (has_mask): entry [t][j] added to the logit after ALiBi, −inf
//   hiding the key (its weight 0, its V times 0, as the CPU kernels).
//
// Split-KV (decode with few workgroups): the keys the call's rows see, in order (its sink keys
// 0 .. split_sink_keys − 1, then its window keys from kv_split_lo), are cut into chunks of
// kv_chunk; workgroup z takes chunk z (sink keys, window keys or both) and writes its
// unnormalized O with the running max and sum to `part`; attention_merge.comp then combines the
// splits in order. n_splits 1 writes O directly. Only split 0 starts from the sink logit, so the
// merge counts it once.
//
// Per K/V tile, three phases separated by barriers:
//   1. scores  S[r][j] = scale · q_r · k_j (softcapped, ALiBi), −inf where masked; threads take (row, key)
//      pairs, keys fastest: consecutive threads read consecutive padded K rows (no bank conflict).
//   2. softmax one thread per row: new running max, P = exp(S − max) in place, rescale factor.
//   3. P·V    thread (row, lane) keeps DPT dims of its row's O in registers: dims lane + i·TPR.
//
// Build variants (glslc -D): KV_F32 (float buffers), KV_F16 (float16_t, 16-bit storage),
// KV_BF16 (uint16_t bit patterns widened by a shift, 16-bit storage), KV_Q8_0 and KV_Q4_0
// (ggml's blocks read from uint words, any device). Exactly one is defined.
#version 450
#if defined(KV_F16) || defined(KV_BF16)
#extension GL_EXT_shader_16bit_storage : require
#endif
#if defined(KV_Q8_0) || defined(KV_Q4_0)
#define KV_BLOCK 1
#endif

// Specialization constants, chosen at create() from the plan and the device's limits.
layout(local_size_x_id = 0) in;                 // ROWS · TPR threads
layout(constant_id = 1) const uint HEAD_DIM = 64;
layout(constant_id = 2) const uint ROWS = 16;    // query rows per workgroup
layout(constant_id = 3) const uint TPR = 4;      // threads per row in the P·V phase
layout(constant_id = 4) const uint KV_TILE = 32; // keys per shared-memory tile
layout(constant_id = 5) const uint DPT = 16;     // ceil(HEAD_DIM / TPR): O dims per thread

const uint NT = ROWS * TPR;
const uint K_STRIDE = HEAD_DIM + 1;  // padded: phase 1 reads K rows across threads

#if defined(KV_F16)
#define KV_T float16_t
#define KV_LOAD(x) float(x)
#elif defined(KV_BF16)
#define KV_T uint16_t
#define KV_LOAD(x) uintBitsToFloat(uint(x) << 16)
#elif defined(KV_BLOCK)
#define KV_T uint
#else
#define KV_T float
#define KV_LOAD(x) (x)
#endif

#if defined(KV_BLOCK)
// A row is ceil(HEAD_DIM / 32) blocks of ggml's layout, back to back (headway/quantize.hpp):
//   q8_0, 34 bytes: f16 scale d, int8 q[32]                          value i = q[i] · d
//   q4_0, 18 bytes: f16 scale d, uint8 qs[16], qs[j] = q_j | q_(j+16) << 4   value i = (q_i − 8) · d
// little-endian, read from the buffer's uint words. Blocks are an even number of bytes, so a
// scale never straddles a word; a row or block may start at byte 2 of a word.
#if defined(KV_Q8_0)
const uint BLOCK_BYTES = 34;
#else
const uint BLOCK_BYTES = 18;
#endif
const uint ROW_BYTES = (HEAD_DIM + 31) / 32 * BLOCK_BYTES;
#endif

// Q and O [t_q, n_heads, HEAD_DIM] f32, dense. K and V: kv head g, logical key j in row
// g · kv_head_stride / HEAD_DIM + row(j), rows of HEAD_DIM values (ROW_BYTES bytes in a block
// format): row(j) = j for a sink key (j < sink_keys) or where kv_ring_rows is 0, else sink_keys +
// (kv_first_row + j − sink_keys) mod (kv_ring_rows − sink_keys) (a sliding-window ring whose
// first sink_keys rows hold the sink tokens for good).
layout(std430, set = 0, binding = 0) readonly buffer QBuf { float q[]; };
layout(std430, set = 0, binding = 1) readonly buffer KBuf { KV_T k[]; };
layout(std430, set = 0, binding = 2) readonly buffer VBuf { KV_T v[]; };
layout(std430, set = 0, binding = 3) writeonly buffer OBuf { float o[]; };
// Split partials: [n_kv_heads, n_splits, t_q · group, HEAD_DIM + 2]: O unnormalized, max, sum.
layout(std430, set = 0, binding = 4) writeonly buffer PartBuf { float part[]; };
// Sink logits [n_heads], read where has_sinks is set.
layout(std430, set = 0, binding = 5) readonly buffer SinkBuf { float sinks[]; };
// ALiBi slopes [2, n_heads]: the plan's, then a dense call's; head h's at alibi_base + h.
layout(std430, set = 0, binding = 7) readonly buffer AlibiBuf { float alibi[]; };
// A dense call's general mask [t_q, t_kv], read where has_mask is set: added to the logit after
// ALiBi; −inf hides the key, whatever its logit (a bool mask comes as 0 and −inf).
layout(std430, set = 0, binding = 8) readonly buffer MaskBuf { float mask[]; };

// The call's values, written before each submit (a decode step resubmits one command buffer
// recorded at create, so nothing that changes per call is recorded in it). The same block as
// attention_merge.comp's.
layout(std140, set = 0, binding = 6) uniform CallParams {
  uint t_q;
  uint t_kv;
  uint n_heads;
  uint group;           // query heads per kv head
  uint kv_head_stride;  // values: cache rows · HEAD_DIM
  uint kv_first_row;    // with sink keys: the ring's row of key sink_keys, counted after them
  uint kv_ring_rows;    // 0: no ring
  float scale;
  float softcap;        // 0 = off
  uint causal;
  uint window;          // 0 = none
  uint kv_chunk;        // keys per split (n_splits > 1)
  uint n_splits;        // 1: no split
  uint kv_split_lo;     // the first window key of the splits' keys
  uint has_sinks;       // 1: sinks[] holds the call's sink logits
  uint sink_keys;       // sink tokens among the keys: min(sink tokens, t_kv) with a window, else 0
  uint sink_gap;        // positions a ring evicted between key sink_keys − 1 and key sink_keys
  uint has_alibi;       // 1: alibi[alibi_base + h] is query head h's ALiBi slope
  uint alibi_base;
  uint split_sink_keys; // the splits' keys: sink keys 0 .. split_sink_keys − 1, then window keys
  uint prefix_keys;     // prefix-LM: with causal, keys 0 .. prefix_keys − 1 are every row's
  uint window_symmetric; // 1: the window bounds from above too (|p − j| < window)
  uint has_mask;        // 1: mask[t · t_kv + j] is added to the logit of token t and key j
} pc;

// Fixed per recorded dispatch.
layout(push_constant) uniform Dispatch {
  uint row_tile_base;  // added to gl_WorkGroupID.x (dispatches past maxComputeWorkGroupCount)
} dispatch;

shared float q_tile[ROWS * HEAD_DIM];
shared float k_tile[KV_TILE * K_STRIDE];
shared float v_tile[KV_TILE * HEAD_DIM];
shared float s_tile[ROWS * KV_TILE];
shared float row_max[ROWS];
shared float row_sum[ROWS];
shared float row_alpha[ROWS];
shared int row_lo[ROWS];  // keys [row_lo, row_hi] of the current span the row sees (lo > hi: none)
shared int row_hi[ROWS];
shared int row_pos[ROWS];      // the row's position, t + t_kv − t_q (ALiBi)
shared float row_slope[ROWS];  // its ALiBi slope

#define NEG_INF uintBitsToFloat(0xff800000u)

// Keys [lo, hi] of span 0 (the sink keys) or 1 (the window keys) that query token t sees
// (lo > hi: none). Position p = t + t_kv − t_q; causal bounds by p, or by a prefix's last key past
// it. Both ends never fall as t grows.
ivec2 visible_keys(uint t, uint span) {
  const int p = int(t) + int(pc.t_kv) - int(pc.t_q);
  const int sink_keys = int(pc.sink_keys);
  int lo = span == 0u ? 0 : sink_keys;
  int hi = span == 0u ? sink_keys - 1 : int(pc.t_kv) - 1;
  if (pc.causal != 0u) hi = min(hi, max(p, int(pc.prefix_keys) - 1));
  if (span == 1u && pc.window != 0u) lo = max(lo, p - int(pc.window) + 1);
  if (span == 1u && pc.window_symmetric != 0u) hi = min(hi, p + int(pc.window) - 1);
  return ivec2(lo, hi);
}

// c · tanh(x / c) from one exp: exact limits (±c, never NaN for large |x|, which a driver's
// tanh built from exp(x)/exp(−x) can give), absolute error near one f32 ulp of c.
float soft_cap(float x, float c) {
  const float y = abs(x) / c;
  const float e = exp(-2.0 * y);
  return sign(x) * c * ((1.0 - e) / (1.0 + e));
}

#if defined(KV_BLOCK)
// f16 bits to f32 exactly, as the CPU's KvF16ToF32: subnormals (m · 2^−24, an f32 normal), ±inf,
// NaN (a NaN scale makes its block's values NaN), signed zeros.
float f16_to_f32(uint h) {
  const uint sign = (h & 0x8000u) << 16;
  const uint e = (h >> 10) & 0x1fu;
  const uint m = h & 0x3ffu;
  if (e == 0u) return uintBitsToFloat(sign | floatBitsToUint(float(m) * (1.0 / 16777216.0)));
  if (e == 31u) return uintBitsToFloat(sign | 0x7f800000u | (m << 13));
  return uintBitsToFloat(sign | ((e + 112u) << 23) | (m << 13));
}

// Word w of K (which 0) or V (1); `which` is a constant at every call, so this folds.
uint kv_word(uint which, uint w) { return which == 0u ? k[w] : v[w]; }

// Value d of the row starting at byte row_byte: code · scale in f32, as the CPU's BlockValue.
float kv_block_value(uint which, uint row_byte, uint d) {
  const uint block = row_byte + (d >> 5) * BLOCK_BYTES;
  const uint scale_bits = kv_word(which, block >> 2) >> ((block & 2u) * 8u);
  const uint i = d & 31u;
#if defined(KV_Q8_0)
  const uint at = block + 2u + i;
  const int q = bitfieldExtract(int(kv_word(which, at >> 2)), int((at & 3u) * 8u), 8);  // sign-extended
#else
  const uint at = block + 2u + (i & 15u);
  const int q = int(bitfieldExtract(kv_word(which, at >> 2), int((at & 3u) * 8u + (i >> 4) * 4u), 4)) - 8;
#endif
  return float(q) * f16_to_f32(scale_bits & 0xffffu);
}
#endif

// j < t_kv <= kv_ring_rows and kv_first_row < kv_ring_rows − sink_keys: one conditional
// subtraction wraps (an integer modulo per loaded element is slow where it is emulated, as in
// lavapipe).
uint kv_row(uint j) {
  if (j < pc.sink_keys) return j;
  uint r = pc.kv_first_row + (j - pc.sink_keys);
  const uint ring = pc.kv_ring_rows - pc.sink_keys;
  if (pc.kv_ring_rows != 0u && r >= ring) r -= ring;
  return pc.sink_keys + r;
}

void main() {
  const uint tid = gl_LocalInvocationID.x;
  const uint g = gl_WorkGroupID.y;
  const uint rows_total = pc.t_q * pc.group;
  const uint row0 = (dispatch.row_tile_base + gl_WorkGroupID.x) * ROWS;
  if (row0 >= rows_total) return;  // whole workgroup: uniform, before any barrier
  const uint rows_here = min(ROWS, rows_total - row0);

  // Q rows of this tile into shared memory; rows past the end are zero and see no key.
  for (uint i = tid; i < ROWS * HEAD_DIM; i += NT) {
    const uint r = i / HEAD_DIM;
    const uint d = i - r * HEAD_DIM;
    float x = 0.0;
    if (r < rows_here) {
      const uint row = row0 + r;
      const uint t = row / pc.group;
      const uint h = g * pc.group + (row - t * pc.group);
      x = q[(t * pc.n_heads + h) * HEAD_DIM + d];
    }
    q_tile[i] = x;
  }
  if (tid < ROWS) {
    row_max[tid] = NEG_INF;
    row_sum[tid] = 0.0;
    row_pos[tid] = 0;
    row_slope[tid] = 0.0;
    if (tid < rows_here) {
      const uint t = (row0 + tid) / pc.group;
      const uint h = g * pc.group + (row0 + tid - t * pc.group);
      row_pos[tid] = int(t) + int(pc.t_kv) - int(pc.t_q);
      if (pc.has_alibi != 0u) row_slope[tid] = alibi[pc.alibi_base + h];
      if (pc.has_sinks != 0u && (pc.n_splits <= 1u || gl_WorkGroupID.z == 0u)) {
        row_max[tid] = sinks[h];
        row_sum[tid] = 1.0;  // e^(s_h − s_h)
      }
    }
  }

  // This thread's row in phases 2 and 3.
  const uint my_row = tid / TPR;
  const uint lane = tid - my_row * TPR;
  const uint split = gl_WorkGroupID.z;
  // This split's share of the call's keys, counted in order (sink keys, then window keys):
  // [v0, v1).
  const int v0 = int(split * pc.kv_chunk);
  const int v1 = v0 + int(pc.kv_chunk);
  const int split_sink = int(pc.split_sink_keys);

  float acc[DPT];
  for (uint i = 0; i < DPT; ++i) acc[i] = 0.0;

  const uint kv_base_row = g * (pc.kv_head_stride / HEAD_DIM);
  // Span 0: the sink keys; span 1: the window keys (every key without sink tokens).
  for (uint span = pc.sink_keys != 0u ? 0u : 1u; span < 2u; ++span) {
    // The keys the tile's rows see of this span altogether (lo and hi grow with the token, so the
    // first and last rows bound them), within this split's share.
    int tile_lo = visible_keys(row0 / pc.group, span).x;
    int tile_hi = visible_keys((row0 + rows_here - 1) / pc.group, span).y;
    if (pc.n_splits > 1u) {
      if (span == 0u) {
        tile_lo = max(tile_lo, v0);
        tile_hi = min(tile_hi, min(v1, split_sink) - 1);
      } else {
        tile_lo = max(tile_lo, int(pc.kv_split_lo) + max(v0, split_sink) - split_sink);
        tile_hi = min(tile_hi, int(pc.kv_split_lo) + v1 - split_sink - 1);
      }
    }
    // The previous span's readers of row_lo/row_hi are past a barrier (phases 2 and 3 do not
    // read them); the first tile's barrier below publishes these.
    if (tid < ROWS) {
      ivec2 vis = ivec2(1, 0);
      if (tid < rows_here) vis = visible_keys((row0 + tid) / pc.group, span);
      row_lo[tid] = vis.x;
      row_hi[tid] = vis.y;
    }
    ivec2 my_keys = ivec2(1, 0);
    if (my_row < rows_here) my_keys = visible_keys((row0 + my_row) / pc.group, span);
    // ALiBi's distance to a sink key counts the evicted positions too.
    const int gap = span == 0u ? int(pc.sink_gap) : 0;

    for (int key0 = tile_lo; key0 <= tile_hi; key0 += int(KV_TILE)) {
      const uint n_keys = uint(min(int(KV_TILE), tile_hi - key0 + 1));
      barrier();  // the previous tile's readers are done (and q_tile / row stats are written)
      for (uint i = tid; i < KV_TILE * HEAD_DIM; i += NT) {
        const uint j = i / HEAD_DIM;
        const uint d = i - j * HEAD_DIM;
        float kx = 0.0, vx = 0.0;
        if (j < n_keys) {
          const uint row = kv_base_row + kv_row(uint(key0) + j);
#if defined(KV_BLOCK)
          kx = kv_block_value(0u, row * ROW_BYTES, d);
          vx = kv_block_value(1u, row * ROW_BYTES, d);
#else
          kx = KV_LOAD(k[row * HEAD_DIM + d]);
          vx = KV_LOAD(v[row * HEAD_DIM + d]);
#endif
        }
        k_tile[j * K_STRIDE + d] = kx;
        v_tile[i] = vx;
      }
      barrier();

      // Phase 1: scores.
      for (uint i = tid; i < ROWS * KV_TILE; i += NT) {
        const uint r = i / KV_TILE;
        const uint j = i - r * KV_TILE;
        const int key = key0 + int(j);
        float s = NEG_INF;
        if (j < n_keys) {
          if (key >= row_lo[r] && key <= row_hi[r]) {
            float dot = 0.0;
            for (uint d = 0; d < HEAD_DIM; ++d) dot += q_tile[r * HEAD_DIM + d] * k_tile[j * K_STRIDE + d];
            s = dot * pc.scale;
            if (pc.softcap > 0.0) s = soft_cap(s, pc.softcap);
            // The distance is an integer below 2^24: exact in f32.
            if (pc.has_alibi != 0u) s = fma(-row_slope[r], abs(float(row_pos[r] + gap - key)), s);
            if (pc.has_mask != 0u) {
              const float e = mask[((row0 + r) / pc.group) * pc.t_kv + uint(key)];
              s = e == NEG_INF ? NEG_INF : s + e;
            }
          }
        }
        s_tile[i] = s;
      }
      barrier();

      // Phase 2: online softmax, one thread per row. A row with no visible key so far and no sink
      // keeps max −inf, P = 0 and alpha = 1 (never exp(−inf − −inf)).
      if (tid < ROWS) {
        const uint r = tid;
        const float m_old = row_max[r];
        float m_new = m_old;
        for (uint j = 0; j < KV_TILE; ++j) m_new = max(m_new, s_tile[r * KV_TILE + j]);
        float alpha = 1.0;
        float sum = 0.0;
        if (m_new != NEG_INF) {
          alpha = exp(m_old - m_new);  // m_old −inf: 0, and O and l are still 0
          for (uint j = 0; j < KV_TILE; ++j) {
            const float s = s_tile[r * KV_TILE + j];
            const float p = s == NEG_INF ? 0.0 : exp(s - m_new);
            s_tile[r * KV_TILE + j] = p;
            sum += p;
          }
        } else {
          // Every key so far hidden (the general mask hides keys the row's range holds): P = 0.
          for (uint j = 0; j < KV_TILE; ++j) s_tile[r * KV_TILE + j] = 0.0;
        }
        row_max[r] = m_new;
        row_sum[r] = row_sum[r] * alpha + sum;
        row_alpha[r] = alpha;
      }
      barrier();

      // Phase 3: O = alpha · O + P V over the keys this row sees (masked keys are skipped, so an
      // inf or NaN in a key the row does not see never reaches it).
      if (my_row < ROWS) {
        const float alpha = row_alpha[my_row];
        for (uint i = 0; i < DPT; ++i) acc[i] *= alpha;
        const int j_lo = max(my_keys.x - key0, 0);
        const int j_hi = min(my_keys.y - key0, int(n_keys) - 1);
        for (int j = j_lo; j <= j_hi; ++j) {
          const float p = s_tile[my_row * KV_TILE + uint(j)];
          for (uint i = 0; i < DPT; ++i) {
            const uint d = lane + i * TPR;
            if (d < HEAD_DIM) acc[i] += p * v_tile[uint(j) * HEAD_DIM + d];
          }
        }
      }
    }
  }

  barrier();
  if (pc.n_splits > 1u) {
    if (my_row < rows_here) {
      const uint base = ((g * pc.n_splits + split) * rows_total + row0 + my_row) * (HEAD_DIM + 2u);
      for (uint i = 0; i < DPT; ++i) {
        const uint d = lane + i * TPR;
        if (d < HEAD_DIM) part[base + d] = acc[i];
      }
      if (lane == 0u) {
        part[base + HEAD_DIM] = row_max[my_row];
        part[base + HEAD_DIM + 1u] = row_sum[my_row];
      }
    }
  } else if (my_row < rows_here) {
    const float l = row_sum[my_row];
    const float inv = l > 0.0 ? 1.0 / l : 0.0;
    const uint row = row0 + my_row;
    const uint t = row / pc.group;
    const uint h = g * pc.group + (row - t * pc.group);
    const uint base = (t * pc.n_heads + h) * HEAD_DIM;
    for (uint i = 0; i < DPT; ++i) {
      const uint d = lane + i * TPR;
      if (d < HEAD_DIM) o[base + d] = acc[i] * inv;
    }
  }
}
