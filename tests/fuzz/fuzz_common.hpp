// Shared by the libFuzzer targets: a failed invariant is a crash libFuzzer records with its
// input (abort() after a message), not an assertion that a release build would drop.
#pragma once

#include <cstdio>
#include <cstdlib>

#include "headway/plan.hpp"

#define FUZZ_CHECK(cond)                                                                \
  do {                                                                                  \
    if (!(cond)) {                                                                      \
      std::fprintf(stderr, "%s:%d: invariant failed: %s\n", __FILE__, __LINE__, #cond); \
      std::abort();                                                                     \
    }                                                                                   \
  } while (0)

namespace headway::fuzz {

// A config that parsed: validate, plan, and check what a valid plan promises. plan_for() of an
// invalid config must not misbehave either (overflow is flagged, never UB).
inline void check_config(const Config& c) {
  (void)plan_for(c, {});
  const Result<Plan> p = make_plan(c);
  if (!p.ok()) {
    FUZZ_CHECK(p.status().message()[0] != '\0');
    return;
  }
  const Plan& plan = p.value();
  FUZZ_CHECK(!plan.overflow);
  FUZZ_CHECK(plan.head_dim >= 1 && plan.head_dim <= kMaxHeadDim);
  FUZZ_CHECK(plan.group_size >= 1 && plan.group_size * c.kv_heads() == c.n_heads);
  FUZZ_CHECK(plan.kv_offset % kAlignment == 0 && plan.activations_offset % kAlignment == 0);
  FUZZ_CHECK(plan.scratch_offset % kAlignment == 0);
  FUZZ_CHECK(plan.arena_bytes >= plan.scratch_offset + plan.scratch_bytes);
  FUZZ_CHECK(plan.cache_rows >= 1 && plan.cache_rows <= c.max_seq);
}

}  // namespace headway::fuzz
