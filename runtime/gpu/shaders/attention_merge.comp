// Merges split-KV partials (attention.comp with n_splits > 1) into O, one workgroup per (query
// row, kv head), threads over head_dim. For splits s with running max m_s, sum l_s and
// unnormalized o_s: M = max m_s, O = Σ o_s·exp(m_s − M) / Σ l_s·exp(m_s − M); splits whose keys
// the row does not see (m_s = −inf) add nothing, and a row that sees no key gets zeros. With
// sink logits split 0 started from the sink (m_0 >= s_h, l_0 includes e^{s_h − m_0}), so it is
// counted once, and a row that sees no key gets 0 / e^0 = 0.
#version 450

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint HEAD_DIM = 64;

// [n_kv_heads, n_splits, t_q · group, HEAD_DIM + 2]: O unnormalized, max, sum.
layout(std430, set = 0, binding = 0) readonly buffer PartBuf { float part[]; };
// O [t_q, n_heads, HEAD_DIM] f32.
layout(std430, set = 0, binding = 1) writeonly buffer OBuf { float o[]; };

// attention.comp's block of the call's values; the merge reads t_q, n_heads, group, n_splits.
layout(std140, set = 0, binding = 2) uniform CallParams {
  uint t_q;
  uint t_kv;
  uint n_heads;
  uint group;
  uint kv_head_stride;
  uint kv_first_row;
  uint kv_ring_rows;
  float scale;
  float softcap;
  uint causal;
  uint window;
  uint kv_chunk;
  uint n_splits;
  uint kv_split_lo;
  uint has_sinks;
  uint sink_keys;
  uint sink_gap;
  uint has_alibi;
  uint alibi_base;
  uint split_sink_keys;
  uint prefix_keys;
  uint window_symmetric;
  uint has_mask;
} pc;

#define NEG_INF uintBitsToFloat(0xff800000u)

void main() {
  const uint row = gl_WorkGroupID.x;  // token · group + head in group
  const uint g = gl_WorkGroupID.y;
  const uint rows_total = pc.t_q * pc.group;
  const uint stride = HEAD_DIM + 2u;
  float m_all = NEG_INF;
  for (uint s = 0; s < pc.n_splits; ++s) {
    m_all = max(m_all, part[((g * pc.n_splits + s) * rows_total + row) * stride + HEAD_DIM]);
  }
  float l_all = 0.0;
  if (m_all != NEG_INF) {
    for (uint s = 0; s < pc.n_splits; ++s) {
      const uint base = ((g * pc.n_splits + s) * rows_total + row) * stride;
      const float m = part[base + HEAD_DIM];
      if (m != NEG_INF) l_all += part[base + HEAD_DIM + 1u] * exp(m - m_all);
    }
  }
  const float inv = l_all > 0.0 ? 1.0 / l_all : 0.0;
  const uint t = row / pc.group;
  const uint h = g * pc.group + (row - t * pc.group);
  const uint out_base = (t * pc.n_heads + h) * HEAD_DIM;
  for (uint d = gl_LocalInvocationID.x; d < HEAD_DIM; d += gl_WorkGroupSize.x) {
    float sum = 0.0;
    if (m_all != NEG_INF) {
      for (uint s = 0; s < pc.n_splits; ++s) {
        const uint base = ((g * pc.n_splits + s) * rows_total + row) * stride;
        const float m = part[base + HEAD_DIM];
        if (m != NEG_INF) sum += part[base + d] * exp(m - m_all);
      }
    }
    o[out_base + d] = sum * inv;
  }
}
