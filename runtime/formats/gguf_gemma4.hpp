// Gemma 4's GGUF metadata (llama.cpp's gemma4), read into the Config that its config.json gives
// (hf_layer_kinds.cc): gguf_meta.cc locates the keys, these read them.
#pragma once

#include <cstdint>

#include "headway/config.hpp"
#include "headway/status.hpp"
#include "runtime/formats/gguf_reader.hpp"

namespace headway::formats {

// The {arch}. keys read_gemma4 reads (absent: not present()).
struct Gemma4Keys {
  const gguf::Kv& key_length_swa;    // attention.key_length_swa
  const gguf::Kv& value_length_swa;  // attention.value_length_swa
  const gguf::Kv& rope_dims_swa;     // rope.dimension_count_swa
  const gguf::Kv& shared_kv_layers;  // attention.shared_kv_layers
  const gguf::Kv& head_count_kv;     // attention.head_count_kv, one count or one a layer
};

// attention.sliding_window_pattern as one bool a layer (true: sliding), as the converter writes
// layer_types; kept as a list only where the layers differ, as config.json's reader keeps it.
// After the window and the layer count (blocks) are read.
Status read_swa_layers(const gguf::Reader& p, const gguf::Kv& pattern, const char* arch, uint32_t blocks, Config* cfg);

// After the generic keys and the layer kinds: the two head shapes, the full layers' kv heads,
// the shared layers, proportional RoPE on the full layers, v norm and a logit scale of 1.
Status read_gemma4(const gguf::Reader& p, const Gemma4Keys& keys, const char* arch, uint32_t blocks, Config* cfg);

// Proportional RoPE's pairs from the rope_freqs tensor of a Gemma 4 GGUF (n factors, one a pair
// of the full head): 1 for each rotated pair, then a factor that stops the rotation (the
// converter's 1e30: theta^(-2i/d) / 1e30 turns no angle in any context) for the rest. Into
// cfg->rope.rotated_pairs; any other table is refused, naming the tensor.
inline constexpr float kUnrotatedFactor = 1e30f;
Status read_proportional_factors(const float* factors, uint32_t n, const char* source, Config* cfg);

}  // namespace headway::formats
