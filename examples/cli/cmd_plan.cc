// headway plan: check a config and print its head layout and memory plan.
#include <cstdio>
#include <string>

#include <nlohmann/json.hpp>

#include "examples/cli/cli_common.hpp"
#include "examples/cli/commands.hpp"
#include "examples/cli/config_source.hpp"
#include "examples/cli/plan_layers.hpp"
#include "headway/plan.hpp"

namespace headway::cli {
namespace {

const char* attention_kind(const Plan& p) {
  if (p.group_size == 1) return "MHA";
  if (p.config.kv_heads() == 1) return "MQA";
  return "GQA";
}

nlohmann::ordered_json plan_json(const Plan& p) {
  const Config& c = p.config;
  nlohmann::ordered_json j;
  j["model"] = c.name;
  j["d_model"] = c.d_model;
  j["n_heads"] = c.n_heads;
  j["n_kv_heads"] = c.kv_heads();
  j["head_dim"] = p.head_dim;
  j["group_size"] = p.group_size;
  j["attention"] = attention_kind(p);
  j["q_width"] = p.q_width;
  j["kv_width"] = p.kv_width;
  j["qkv_width"] = p.qkv_width;
  j["kernel"] = kernel_name(p.kernel);
  j["max_seq"] = c.max_seq;
  j["n_layers"] = c.n_layers;
  j["causal"] = c.causal;
  j["window"] = c.window;
  j["window_symmetric"] = c.window_symmetric;
  j["softcap"] = c.softcap;
  j["scale"] = c.logit_scale();
  j["rope"] = {{"style", rope_style_name(c.rope.style)},
               {"theta", c.rope.theta},
               {"rotary_dim", c.rotary_dims()},
               {"scaling", rope_scaling_name(c.rope.scaling)}};
  j["kv_dtype"] = dtype_name(c.kv_dtype);
  j["weight_dtype"] = dtype_name(p.options.weight_dtype);
  j["threads"] = p.options.threads;
  j["max_tokens"] = p.max_tokens;
  j["cache_rows"] = p.cache_rows;
  j["kv_bytes_per_token"] = p.kv_bytes_per_token;
  j["kv_bytes_per_layer"] = p.kv_bytes_per_layer;
  j["kv_cache_bytes"] = p.kv_cache_bytes;
  j["weight_bytes"] = p.weight_bytes;
  j["projection"] = projection_name(p.options.projection);
  j["packed_bytes"] = p.packed_bytes;
  j["activation_bytes"] = p.activation_bytes;
  j["scratch_bytes_per_thread"] = p.scratch_bytes_per_thread;
  j["scratch_bytes"] = p.scratch_bytes;
  j["arena_bytes"] = p.arena_bytes;
  nlohmann::ordered_json heads = nlohmann::ordered_json::array();
  for (uint32_t h = 0; h < c.n_heads; ++h) {
    const HeadLayout l = p.head(h);
    heads.push_back({{"q_head", l.q_head},
                     {"kv_head", l.kv_head},
                     {"qkv_q_offset", l.qkv_q_offset},
                     {"qkv_k_offset", l.qkv_k_offset},
                     {"qkv_v_offset", l.qkv_v_offset},
                     {"cache_k_offset", l.cache_k_offset},
                     {"cache_v_offset", l.cache_v_offset}});
  }
  j["heads"] = heads;
  add_layers_json(p, &j);
  return j;
}

void print_table(const Plan& p) {
  const Config& c = p.config;
  std::printf("model %s\n\n", c.name);
  std::printf("attention   %s: %u query heads, %u kv heads (group %u), head_dim %u%s\n", attention_kind(p), c.n_heads,
              c.kv_heads(), p.group_size, p.head_dim, c.head_dim ? " (explicit)" : "");
  std::printf("widths      d_model %u -> q %u, k %u, v %u (fused qkv row %u floats)\n", c.d_model, p.q_width,
              p.kv_width, p.kv_width, p.qkv_width);
  std::printf("kernel      %s\n", kernel_name(p.kernel));
  std::printf("masking     %s", c.causal ? "causal" : "bidirectional");
  if (p.sliding_layers) std::printf(", %ssliding window %u", c.window_symmetric ? "symmetric " : "", c.window);
  if (p.sliding_layers && p.sliding_layers != c.n_layers) {
    std::printf(" (on %u of %u layers)", p.sliding_layers, c.n_layers);
  }
  if (p.sliding_layers && c.sink_tokens) std::printf(", %u sink tokens", c.sink_tokens);
  if (c.softcap > 0) std::printf(", softcap %g", static_cast<double>(c.softcap));
  std::printf(", scale %.6f\n", static_cast<double>(c.logit_scale()));
  if (c.alibi) {
    std::printf("positions   ALiBi, standard slopes (max bias %g)%s, no RoPE\n", static_cast<double>(c.alibi_max_bias),
                c.alibi_times_scale ? " times the logit scale" : "");
  } else if (c.rope.style == RopeStyle::kNone) {
    std::printf("positions   no RoPE\n");
  } else {
    std::printf("rope        %s, theta %g, %u of %u dims rotated", rope_style_name(c.rope.style),
                static_cast<double>(c.rope.theta), c.rotary_dims(), p.head_dim);
    if (c.rope.scaling != RopeScaling::kNone) {
      std::printf(", scaling %s (factor %g)", rope_scaling_name(c.rope.scaling), static_cast<double>(c.rope.factor));
    }
    std::printf("\n");
  }
  std::printf("context     %u tokens, %u layers, up to %u tokens per call, %u thread%s\n\n", c.max_seq, c.n_layers,
              p.max_tokens, p.options.threads, p.options.threads == 1 ? "" : "s");

  std::printf("memory plan (arena regions, each 64-byte aligned)\n");
  const char* weights_note = p.weights_region_bytes ? ""
                             : p.packed_bytes       ? " (packed by XNNPACK below)"
                                                    : " (borrowed, not in the arena)";
  std::printf("  weights      %12s  %s per layer, %s%s\n", human_bytes(p.weights_region_bytes).c_str(),
              human_bytes(p.weight_bytes_per_layer).c_str(), dtype_name(p.options.weight_dtype), weights_note);
  std::printf(
      "  kv cache     %12s  %s per token, %s per %slayer (%u rows, %s)\n", human_bytes(p.kv_cache_bytes).c_str(),
      human_bytes(p.kv_bytes_per_token).c_str(), human_bytes(p.kv_bytes_per_layer).c_str(),
      p.sliding_layers == 0 || p.sliding_layers == c.n_layers ? "" : "full ", p.cache_rows, dtype_name(c.kv_dtype));
  if (p.packed_bytes) {
    std::printf("  packed       %12s  XNNPACK operators, %s per layer (upper bound)\n",
                human_bytes(p.packed_bytes).c_str(), human_bytes(p.packed_bytes_per_layer).c_str());
  }
  std::printf("  activations  %12s  qkv, attention output, block output, residual stream for %u tokens\n",
              human_bytes(p.activation_bytes).c_str(), p.max_tokens);
  std::printf("  scratch      %12s  %s per thread\n", human_bytes(p.scratch_bytes).c_str(),
              human_bytes(p.scratch_bytes_per_thread).c_str());
  std::printf("  arena total  %12s  (%llu bytes)\n\n", human_bytes(p.arena_bytes).c_str(),
              static_cast<unsigned long long>(p.arena_bytes));

  print_layer_groups(p);
  std::printf("head layout (byte offsets: in one token's fused qkv row; in one %slayer's kv cache)\n",
              p.sliding_layers == 0 || p.sliding_layers == c.n_layers ? "" : "full ");
  std::printf("  %6s %7s %9s %9s %9s %12s %12s\n", "q head", "kv head", "q", "k", "v", "cache K", "cache V");
  for (uint32_t h = 0; h < c.n_heads; ++h) {
    const HeadLayout l = p.head(h);
    std::printf("  %6u %7u %9llu %9llu %9llu %12llu %12llu\n", l.q_head, l.kv_head,
                static_cast<unsigned long long>(l.qkv_q_offset), static_cast<unsigned long long>(l.qkv_k_offset),
                static_cast<unsigned long long>(l.qkv_v_offset), static_cast<unsigned long long>(l.cache_k_offset),
                static_cast<unsigned long long>(l.cache_v_offset));
  }
}

}  // namespace

int cmd_plan(int argc, char** argv) {
  Flags flags("plan", argc, argv);
  ConfigSource source;
  bool json = false;
  bool kv_dtype_set = false;
  DType kv_dtype = DType::kF16;
  PlanOptions options;
  while (flags.next()) {
    const std::string& f = flags.name();
    Status s;
    if (source.take(&flags, &s)) {
      // --preset, --config, --gguf or --spec: the value is in source
    } else if (f == "--json" && !flags.has_inline_value()) {
      json = true;
    } else if (f == "--threads") {
      s = flags.value_u32(&options.threads, 1, 256);
    } else if (f == "--max-tokens") {
      s = flags.value_u32(&options.max_tokens, 1, 1u << 30);
    } else if (f == "--kv-dtype") {
      s = flags.value_kv_dtype(&kv_dtype), kv_dtype_set = true;
    } else if (f == "--weight-dtype") {
      s = flags.value_dtype(&options.weight_dtype);
    } else if (f == "--projection") {
      const char* v = nullptr;
      s = flags.value(&v);
      if (s.ok() && !parse_projection(v, &options.projection)) {
        s = Status::error(Code::kInvalidArgument, "--projection '%s': expected highway or xnnpack", v);
      }
    } else {
      s = flags.unknown();
    }
    if (!s.ok()) return report("plan", s);
  }
  Result<Config> config = source.load();
  if (!config.ok()) return report("plan", config.status());
  Config c = config.value();
  if (kv_dtype_set) c.kv_dtype = kv_dtype;

  const Result<Plan> plan = make_plan(c, options);
  if (!plan.ok()) return report("plan", plan.status());
  if (json) {
    std::printf("%s\n", plan_json(plan.value()).dump().c_str());
  } else {
    print_table(plan.value());
  }
  return kExitOk;
}

}  // namespace headway::cli
