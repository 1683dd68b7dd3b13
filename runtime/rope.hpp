// Rotary position embedding applied in place to rows of heads.
//   x: n_tokens rows, token t at x + t · token_stride floats, holding n_heads heads of head_dim.
//   Token t sits at position pos0 + t. Pairs (NeoX rotate-half): (i, i + rotary/2); (GPT-J
//   interleaved): (2i, 2i + 1); for i < rotary/2, frequency theta^(−2i / rotary). Dims past the
//   rotary dim are left as they are (partial rotary, Phi-2).
// Angles are computed in double so that positions near 128k stay exact to f32 precision.
// No allocation: the per-pair frequencies live on the stack (at most 256 doubles).
#pragma once

#include <cstddef>
#include <cstdint>

#include "headway/config.hpp"

namespace headway {

// One pair's frequency theta^(−2i/rotary) after the config's rope_scaling (linear, llama3).
double scaled_frequency(double inv_freq, const RopeConfig& rope);

// Requires rope.scaling != kOther (KvCache::bind and the layer reject it).
void apply_rope(float* x, uint32_t n_tokens, size_t token_stride, uint32_t n_heads, uint32_t head_dim,
                uint32_t pos0, const RopeConfig& rope);

}  // namespace headway
