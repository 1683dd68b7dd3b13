// The per-layer part of `headway plan`'s table: runs of identical layers, grouped.
#pragma once

#include "headway/plan.hpp"

namespace headway::cli {

// "layers 0-4, 6-10: sliding 512, RoPE neox 10000, 1023 rows, 1 MiB each": printed only when
// the layers differ.
void print_layer_groups(const Plan& p);

}  // namespace headway::cli
