// The per-layer part of `headway plan`: the JSON `layers` array and the readable table that
// groups runs of identical layers.
#pragma once

#include <nlohmann/json.hpp>

#include "headway/plan.hpp"

namespace headway::cli {

// The most layers `plan --json` lists one by one; a deeper (synthetic) plan lists its first ones
// and says so in "layers_listed".
inline constexpr uint32_t kMaxListedLayers = 65536;

// Adds "layer_kinds" (the Config's LayerKinds as spec keys write them), "sinks", "sliding_layers",
// "ring_rows" and "layers" (one object per layer: index, attention, window, rope, rope_theta,
// kv_rows, kv_bytes, kv_offset, sinks) to `j`.
void add_layers_json(const Plan& p, nlohmann::ordered_json* j);

// "layers 0-4, 6-10: sliding 512, RoPE neox 10000, 1023 rows, 1 MiB each": printed only when
// the layers differ.
void print_layer_groups(const Plan& p);

}  // namespace headway::cli
