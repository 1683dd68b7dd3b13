// What `headway run` prints after the run: speed, the arena planned against the bytes of it
// the run wrote (per region), and the heap calls made during prefill and decode; as a table or
// as one JSON object (--json).
#pragma once

#include <cstdint>
#include <vector>

#include "headway/backend.hpp"
#include "headway/config.hpp"
#include "headway/plan.hpp"

namespace headway::cli {

// The byte every arena byte is set to before init; a byte still equal to it was never written.
inline constexpr uint8_t kCanary = 0xA5;

// The arena's regions in print order, and how many bytes of each the run wrote.
inline constexpr int kRunRegions = kArenaRegionCount;  // arena_regions() (headway/plan.hpp), in its order
struct ArenaUse {
  uint64_t used = 0;  // all regions
  uint64_t used_by[kRunRegions] = {};
};
// High-water marks over the canary-filled arena at `base`: per layer for the per-layer regions
// (each layer's slice has its own), over the whole region for the others.
ArenaUse measure_arena(const Plan& p, const uint8_t* base);

struct RunReport {
  const Config* config = nullptr;  // the config the plan was made for
  const Plan* plan = nullptr;
  const PlanOptions* options = nullptr;  // what the plan was asked for
  const char* weights = nullptr;         // the --weights path, or "random"
  BackendKind backend = BackendKind::kCpu;
  const char* backend_description = nullptr;  // the first attention layer's backend
  uint32_t prompt = 0, tokens = 0;
  double prefill_s = 0, decode_s = 0;
  // An encoder's batch instead of prompt and decode: its cumulative lengths, the median time of
  // one batch.
  bool encoder = false;
  const std::vector<uint32_t>* batch = nullptr;
  double encode_s = 0;
  long heap_calls = 0;
  ArenaUse arena;
};
// The timed batches an encoder run takes the median of.
inline constexpr int kEncodeReps = 3;
void print_run_table(const RunReport& r);
void print_run_json(const RunReport& r);

}  // namespace headway::cli
