#include "examples/cli/plan_layers.hpp"

#include <cstdio>
#include <string>

#include "examples/cli/cli_common.hpp"

namespace headway::cli {
namespace {

uint32_t listed_layers(const Plan& p) {
  return p.config.n_layers < kMaxListedLayers ? p.config.n_layers : kMaxListedLayers;
}

// What makes two layers run alike (their offsets aside).
bool same_kind(const LayerPlan& a, const LayerPlan& b) {
  return a.sliding == b.sliding && a.window == b.window && a.rope == b.rope && a.rope_theta == b.rope_theta &&
         a.kv_rows == b.kv_rows && a.sinks == b.sinks && a.sink_tokens == b.sink_tokens && a.alibi == b.alibi;
}

std::string layer_list(const LayerBits& bits, char on, char off) {
  std::string s;
  for (uint32_t i = 0; i < bits.count; ++i) s += bits.get(i) ? on : off;
  return s;
}

std::string describe(const LayerPlan& l) {
  char text[160];
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
  std::snprintf(text, sizeof(text), ", %u kv rows, %s each", l.kv_rows, human_bytes(l.kv_bytes).c_str());
  return s + text;
}

}  // namespace

void add_layers_json(const Plan& p, nlohmann::ordered_json* j) {
  const Config& c = p.config;
  const LayerKinds& k = c.layers;
  (*j)["layer_kinds"] = {{"sliding_pattern", k.sliding_pattern},
                         {"nope_interval", k.nope_interval},
                         {"rope_local_theta", k.local_rope_theta},
                         {"layer_types", layer_list(k.sliding, 's', 'f')},
                         {"rope_layers", layer_list(k.rope, '1', '0')}};
  (*j)["sinks"] = c.sinks;
  (*j)["sink_tokens"] = c.sink_tokens;
  (*j)["alibi"] = c.alibi;
  (*j)["alibi_max_bias"] = c.alibi_max_bias;
  (*j)["alibi_times_scale"] = c.alibi_times_scale;
  (*j)["sliding_layers"] = p.sliding_layers;
  (*j)["ring_rows"] = p.ring_rows;
  nlohmann::ordered_json layers = nlohmann::ordered_json::array();
  const uint32_t n = listed_layers(p);
  for (uint32_t i = 0; i < n; ++i) {
    const LayerPlan l = p.layer(i);
    layers.push_back({{"index", l.index},
                      {"attention", l.sliding ? "sliding" : "full"},
                      {"window", l.window},
                      {"rope", rope_style_name(l.rope)},
                      {"rope_theta", l.rope_theta},
                      {"kv_rows", l.kv_rows},
                      {"kv_bytes", l.kv_bytes},
                      {"kv_offset", l.kv_offset},
                      {"sinks", l.sinks},
                      {"sink_tokens", l.sink_tokens},
                      {"alibi", l.alibi}});
  }
  if (n < c.n_layers) (*j)["layers_listed"] = n;
  (*j)["layers"] = layers;
}

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
    std::printf("  layers %s: %s\n", runs.c_str(), describe(kinds[k]).c_str());
  }
  std::printf("\n");
}

}  // namespace headway::cli
