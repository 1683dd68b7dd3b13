#include "examples/cli/run_report.hpp"

#include <algorithm>
#include <cstdio>

#include <nlohmann/json.hpp>

#include "examples/cli/cli_common.hpp"

namespace headway::cli {
namespace {

// Bytes of [p, p + n) up to the last one that differs from the canary (a high-water mark).
uint64_t touched(const uint8_t* p, uint64_t n) {
  while (n > 0 && p[n - 1] == kCanary) --n;
  return n;
}

double per_second(uint32_t n, double seconds) { return seconds > 0 ? n / seconds : 0.0; }

struct BatchStats {
  uint32_t sentences = 0, tokens = 0, shortest = 0, longest = 0;
};
BatchStats batch_stats(const std::vector<uint32_t>& cu) {
  BatchStats b;
  b.sentences = static_cast<uint32_t>(cu.size() - 1);
  b.tokens = cu.back();
  b.shortest = UINT32_MAX;
  for (size_t i = 0; i + 1 < cu.size(); ++i) {
    b.shortest = std::min(b.shortest, cu[i + 1] - cu[i]);
    b.longest = std::max(b.longest, cu[i + 1] - cu[i]);
  }
  return b;
}

}  // namespace

ArenaUse measure_arena(const Plan& p, const uint8_t* base) {
  const ArenaRegions all = arena_regions(p);
  const ArenaRegion* regions = all.region;
  ArenaUse use;
  for (int i = 0; i < kRunRegions; ++i) {
    const ArenaRegion& r = regions[i];
    if (r.slice == 0) continue;
    if (i == 2) {  // KV: each layer's own region (full layers max_seq rows, sliding ones their ring)
      for (uint32_t l = 0; l < p.config.n_layers; ++l) {
        const LayerPlan layer = p.layer(l);
        use.used_by[i] += touched(base + layer.kv_offset, layer.kv_bytes);
      }
    } else {
      for (uint64_t o = 0; o < r.bytes; o += r.slice) use.used_by[i] += touched(base + r.offset + o, r.slice);
    }
    use.used += use.used_by[i];
  }
  return use;
}

void print_run_json(const RunReport& r) {
  const Config& c = *r.config;
  const Plan& p = *r.plan;
  const PlanOptions& o = *r.options;
  nlohmann::ordered_json j;
  j["model"] = c.name;
  j["layers"] = c.n_layers;
  j["d_model"] = c.d_model;
  j["threads"] = o.threads;
  j["projection"] = projection_name(o.projection);
  j["backend"] = r.backend_description;
  j["weights"] = r.weights;
  j["weight_dtype"] = dtype_name(o.weight_dtype);
  j["kv_dtype"] = dtype_name(c.kv_dtype);
  j["context"] = c.max_seq;
  j["max_tokens"] = p.max_tokens;
  if (r.encoder) {
    const BatchStats b = batch_stats(*r.batch);
    j["mode"] = "encode";
    j["sentences"] = b.sentences;
    j["batch_tokens"] = b.tokens;
    j["shortest"] = b.shortest;
    j["longest"] = b.longest;
    j["encode_seconds"] = r.encode_s;
    j["encode_tokens_per_second"] = per_second(b.tokens, r.encode_s);
    j["sentences_per_second"] = per_second(b.sentences, r.encode_s);
  } else {
    j["mode"] = "prefill_decode";
    j["prompt_tokens"] = r.prompt;
    j["decode_tokens"] = r.tokens;
    j["prefill_seconds"] = r.prefill_s;
    j["prefill_tokens_per_second"] = per_second(r.prompt, r.prefill_s);
    j["decode_seconds"] = r.decode_s;
    j["decode_tokens_per_second"] = per_second(r.tokens, r.decode_s);
  }
  j["arena_bytes_planned"] = p.arena_bytes;
  j["arena_bytes_used"] = r.arena.used;
  const ArenaRegions all = arena_regions(p);
  const ArenaRegion* regions = all.region;
  nlohmann::ordered_json by;
  for (int i = 0; i < kRunRegions; ++i) {
    by[regions[i].name] = {{"planned", regions[i].bytes}, {"used", r.arena.used_by[i]}};
  }
  j["regions"] = by;
  j["heap_allocations"] = r.heap_calls;
  std::printf("%s\n", j.dump().c_str());
}

void print_run_table(const RunReport& r) {
  const Config& c = *r.config;
  const Plan& p = *r.plan;
  const PlanOptions& o = *r.options;
  std::printf("model        %s: %u layers, d_model %u, %u/%u heads x %u\n", c.name, c.n_layers, c.d_model, c.n_heads,
              c.kv_heads(), p.head_dim);
  std::printf("weights      %s, %s, projections on %s, %u thread%s\n", r.weights, dtype_name(o.weight_dtype),
              projection_name(o.projection), o.threads, o.threads == 1 ? "" : "s");
  std::printf("attention    %s\n", r.backend_description);
  if (r.encoder) {
    const BatchStats b = batch_stats(*r.batch);
    std::printf(
        "encode       %u sentences of %u..%u tokens (%u in all, one call) in %.3f s: %.1f tokens/s, %.1f "
        "sentences/s (median of %d)\n",
        b.sentences, b.shortest, b.longest, b.tokens, r.encode_s, per_second(b.tokens, r.encode_s),
        per_second(b.sentences, r.encode_s), kEncodeReps);
  } else {
    std::printf("prefill      %u tokens in %.3f s: %.1f tokens/s\n", r.prompt, r.prefill_s,
                per_second(r.prompt, r.prefill_s));
    std::printf("decode       %u tokens in %.3f s: %.1f tokens/s\n", r.tokens, r.decode_s,
                per_second(r.tokens, r.decode_s));
  }
  std::printf("arena        %s planned (%llu bytes), %s touched (%llu bytes)\n", human_bytes(p.arena_bytes).c_str(),
              static_cast<unsigned long long>(p.arena_bytes), human_bytes(r.arena.used).c_str(),
              static_cast<unsigned long long>(r.arena.used));
  const ArenaRegions all = arena_regions(p);
  const ArenaRegion* regions = all.region;
  for (int i = 0; i < kRunRegions; ++i) {
    if (regions[i].bytes == 0) continue;
    std::printf("  %-11s %12s planned, %12s touched\n", regions[i].name, human_bytes(regions[i].bytes).c_str(),
                human_bytes(r.arena.used_by[i]).c_str());
  }
  std::printf("heap         %ld allocations during %s\n", r.heap_calls,
              r.encoder ? "the timed batches" : "prefill and decode");
  if (r.backend == BackendKind::kGpu) {
    std::printf(
        "             (the Vulkan driver's own calls included: lavapipe, for one, compiles a pipeline at its first\n"
        "             dispatch and allocates in every submission)\n");
  }
}

}  // namespace headway::cli
