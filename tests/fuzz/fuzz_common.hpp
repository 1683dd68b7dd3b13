// Shared by the libFuzzer targets: a failed invariant is a crash libFuzzer records with its
// input (abort() after a message), not an assertion that a release build would drop.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "headway/headway.h"
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
  FUZZ_CHECK(plan.group_size >= 1 && c.n_heads % plan.group_size == 0);
  // Each layer's own head shape (Gemma 4's full layers may have their own kv heads; a stack of full
  // layers alone plans in theirs): its group serves all the query heads.
  for (uint32_t i = 0; i < c.n_layers && i < 64; ++i) {
    const Plan own = layer_plan(plan, i);
    FUZZ_CHECK(own.group_size >= 1 && own.group_size * c.layer_alone(i).kv_heads() == c.n_heads);
  }
  FUZZ_CHECK(plan.kv_offset % kAlignment == 0 && plan.activations_offset % kAlignment == 0);
  FUZZ_CHECK(plan.scratch_offset % kAlignment == 0);
  FUZZ_CHECK(plan.arena_bytes >= plan.scratch_offset + plan.scratch_bytes);
  FUZZ_CHECK(plan.cache_rows >= 1 && plan.cache_rows <= c.max_seq);
}

// What the C API answered for the same input as the C++ call that gave `status`: the same code
// and message.
inline void check_same_answer(headway_status code, const headway_error& error, const Status& status) {
  FUZZ_CHECK(code == static_cast<headway_status>(status.code()) && error.code == code);
  FUZZ_CHECK(std::strcmp(error.message, status.message()) == 0);
}

// A config that parsed through the C API too (handle `cc`, the C++ config `c`): its plan through
// headway_plan_create answers as make_plan does, with the same figures and the same JSON.
inline void check_c_plan(const headway_config* cc, const Config& c) {
  alignas(HEADWAY_OBJECT_ALIGNMENT) static unsigned char memory[4096];
  FUZZ_CHECK(headway_plan_object_bytes() <= sizeof(memory));
  headway_error error;
  headway_plan* plan = nullptr;
  const Result<Plan> p = make_plan(c);
  check_same_answer(headway_plan_create(memory, sizeof(memory), cc, nullptr, &plan, &error), error, p.status());
  if (!p.ok()) return;
  headway_plan_info info{};
  info.struct_size = sizeof(info);
  FUZZ_CHECK(headway_plan_get_info(plan, &info, &error) == HEADWAY_OK);
  FUZZ_CHECK(info.arena_bytes == p->arena_bytes && info.kv_cache_bytes == p->kv_cache_bytes);
  FUZZ_CHECK(info.head_dim == p->head_dim && info.n_kv_heads == c.kv_heads());
  size_t length = 0;
  FUZZ_CHECK(headway_plan_json(plan, nullptr, 0, &length, &error) == HEADWAY_OUT_OF_RANGE);
  std::string json(length + 1, '\0');
  FUZZ_CHECK(headway_plan_json(plan, json.data(), json.size(), &length, &error) == HEADWAY_OK);
  const std::string head_dim = "\"head_dim\":" + std::to_string(p->head_dim) + ",";
  FUZZ_CHECK(json.find(head_dim) != std::string::npos);
}

}  // namespace headway::fuzz
