#include "examples/cli/plan_layers.hpp"

#include <cstdio>
#include <string>

#include "examples/cli/cli_common.hpp"
#include "headway/tools/plan_json.hpp"

namespace headway::cli {
namespace {

// What makes two layers run alike (their offsets aside).
bool same_kind(const LayerPlan& a, const LayerPlan& b) {
  return a.linear == b.linear && a.sliding == b.sliding && a.window == b.window && a.rope == b.rope &&
         a.rope_theta == b.rope_theta && a.kv_rows == b.kv_rows && a.sinks == b.sinks &&
         a.sink_tokens == b.sink_tokens && a.alibi == b.alibi && a.shares_kv == b.shares_kv &&
         (!a.shares_kv || a.kv_owner == b.kv_owner);
}

std::string describe(const Plan& p, const LayerPlan& l) {
  char text[160];
  if (l.linear) {
    std::snprintf(text, sizeof(text), "Gated DeltaNet (linear attention), no KV cache, state %s each",
                  human_bytes(p.linear_state_bytes_per_layer).c_str());
    return text;
  }
  if (l.sliding) {
    std::snprintf(text, sizeof(text), "sliding %u", l.window);
  } else {
    std::snprintf(text, sizeof(text), "full");
  }
  std::string s = text;
  if (l.rope == RopeStyle::kNone) {
    s += ", no RoPE";
  } else {
    std::snprintf(text, sizeof(text), ", RoPE %s %g", rope_style_name(l.rope), static_cast<double>(l.rope_theta));
    s += text;
  }
  if (l.sinks) s += ", sink logits";
  if (l.sink_tokens) {
    std::snprintf(text, sizeof(text), ", %u sink tokens", l.sink_tokens);
    s += text;
  }
  if (l.alibi) s += ", ALiBi";
  const Plan own = layer_plan(p, l.index);
  if (own.head_dim != p.head_dim || own.kv_width != p.kv_width) {
    std::snprintf(text, sizeof(text), ", head_dim %u, %u kv heads", own.head_dim, own.config.kv_heads());
    s += text;
  }
  if (l.shares_kv) {
    std::snprintf(text, sizeof(text), ", no K/V projections: reads layer %u's %u kv rows", l.kv_owner, l.kv_rows);
  } else {
    std::snprintf(text, sizeof(text), ", %u kv rows, %s each", l.kv_rows, human_bytes(l.kv_bytes).c_str());
  }
  return s + text;
}

}  // namespace

void print_layer_groups(const Plan& p) {
  const uint32_t n = listed_layers(p);
  const LayerPlan first = p.layer(0);
  bool alike = true;
  for (uint32_t i = 1; i < n && alike; ++i) alike = same_kind(first, p.layer(i));
  if (alike) return;
  // Each kind once, in the order it first appears (a few at most: sliding or full × RoPE or not).
  constexpr uint32_t kMaxKinds = 16;
  LayerPlan kinds[kMaxKinds];
  uint32_t n_kinds = 0;
  for (uint32_t i = 0; i < n; ++i) {
    const LayerPlan l = p.layer(i);
    uint32_t k = 0;
    while (k < n_kinds && !same_kind(kinds[k], l)) ++k;
    if (k == n_kinds && n_kinds < kMaxKinds) kinds[n_kinds++] = l;
  }
  std::printf("layers (runs of identical layers)\n");
  for (uint32_t k = 0; k < n_kinds; ++k) {
    std::string runs;
    for (uint32_t i = 0; i < n;) {
      if (!same_kind(kinds[k], p.layer(i))) {
        ++i;
        continue;
      }
      uint32_t end = i;
      while (end + 1 < n && same_kind(kinds[k], p.layer(end + 1))) ++end;
      char run[32];
      if (end > i) {
        std::snprintf(run, sizeof(run), "%s%u-%u", runs.empty() ? "" : ", ", i, end);
      } else {
        std::snprintf(run, sizeof(run), "%s%u", runs.empty() ? "" : ", ", i);
      }
      runs += run;
      i = end + 1;
    }
    std::printf("  layers %s: %s\n", runs.c_str(), describe(p, kinds[k]).c_str());
  }
  std::printf("\n");
}

}  // namespace headway::cli
