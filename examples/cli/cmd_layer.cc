// headway layer: one attention block of a model file's layer I over x.npy.
//   x [T, d_model] f32 at positions P..P+T-1, a fresh KV cache, the config's mask and RoPE;
//   y [T, d_model] f32 = o_proj(attention(rope(q_proj x), rope(k_proj x), v_proj x)).
// No norm before the block, no residual, no MLP: the block alone, to compare with a reference.
// Weights are borrowed from the memory-mapped file (f32, f16 or bf16 as stored).
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "examples/cli/cli_common.hpp"
#include "examples/cli/commands.hpp"
#include "headway/arena.hpp"
#include "headway/backend.hpp"
#include "headway/layer.hpp"
#include "headway/tools/model_files.hpp"
#include "headway/tools/npy.hpp"
#include "headway/plan.hpp"
#include "headway/thread_pool.hpp"
#include "headway/tools/weights_file.hpp"

namespace headway::cli {
namespace {

constexpr const char* kUsage =
    "usage: headway layer --weights model.safetensors|model.gguf [--config config.json] --layer I --x x.npy\n"
    "                     --out y.npy [--start-pos P] [--threads N] [--kv-dtype f32|f16|bf16|q8_0|q4_0]\n"
    "                     [--kv-rotate] [--projection highway|xnnpack] [--seq-lens N,N,...] [--backend cpu|gpu]\n"
    "                     [--chunk N]\n"
    "  runs layer I's attention block (q/k/v projections, q/k norm, RoPE, attention masked as the\n"
    "  config says: causal or bidirectional, o projection; no norm, residual or MLP around it) on\n"
    "  x [T, d_model] f32 at positions P..P+T-1 with a fresh KV cache; writes y [T, d_model] f32.\n"
    "  --config is needed for safetensors; a GGUF file carries its own. --kv-dtype defaults to f32.\n"
    "  --kv-rotate (q8_0, q4_0): Hadamard-rotate K, V and Q per head before the cache quantizes them.\n"
    "  --backend gpu runs the KV cache and attention on a Vulkan device.\n"
    "  --chunk N: a causal layer runs x in calls of at most N tokens (1: token by token, as decode).\n"
    "  A layer that reads an earlier layer's cache (num_kv_shared_layers: Gemma 3n, Gemma 4) runs\n"
    "    after that layer, which runs over the same x first and fills the cache it reads.\n"
    "  --seq-lens 12,40,7: x holds a packed batch of sequences (an encoder's sentences); one\n"
    "    projection over all of them, then each attends within itself from position 0.\n";

struct LayerFlags {
  const char* config_path = nullptr;
  const char* weights_path = nullptr;
  const char* x_path = nullptr;
  const char* out_path = nullptr;
  const char* projection = "highway";
  const char* seq_lens = nullptr;  // --seq-lens text
  std::vector<uint32_t> cu;        // its cumulative lengths
  uint32_t layer = 0, start = 0, threads = 1, chunk = 0;
  bool layer_set = false, start_set = false, help = false;
  DType kv_dtype = DType::kF32;
  KvRotation kv_rotation = KvRotation::kNone;
  BackendKind backend = BackendKind::kCpu;
};

// Stops at the first bad flag, or at --help (help set, nothing after it read).
Status parse_flags(int argc, char** argv, LayerFlags* l) {
  Flags flags("layer", argc, argv);
  while (flags.next()) {
    const std::string& f = flags.name();
    Status s;
    if (f == "--help" || f == "-h") {
      l->help = true;
      return Status();
    }
    if (f == "--config") s = flags.value(&l->config_path);
    else if (f == "--weights") s = flags.value(&l->weights_path);
    else if (f == "--x") s = flags.value(&l->x_path);
    else if (f == "--out") s = flags.value(&l->out_path);
    else if (f == "--layer") s = flags.value_u32(&l->layer, 0, UINT32_MAX - 1), l->layer_set = true;
    else if (f == "--start-pos") s = flags.value_u32(&l->start, 0, UINT32_MAX - 1), l->start_set = true;
    else if (f == "--seq-lens") s = flags.value(&l->seq_lens);
    else if (f == "--threads") s = flags.value_u32(&l->threads, 1, ThreadPool::kMaxThreads);
    else if (f == "--kv-dtype") s = flags.value_kv_dtype(&l->kv_dtype);
    else if (f == "--kv-rotate") s = flags.value_kv_rotation(&l->kv_rotation);
    else if (f == "--projection") s = flags.value(&l->projection);
    else if (f == "--backend") s = flags.value_backend(&l->backend);
    else if (f == "--chunk") s = flags.value_u32(&l->chunk, 1, UINT32_MAX);
    else s = flags.unknown();
    HEADWAY_RETURN_IF_ERROR(s);
  }
  return Status();
}

// --projection into o->projection, then the flags every run needs.
Status check_flags(const LayerFlags& l, PlanOptions* o) {
  if (!parse_projection(l.projection, &o->projection)) {
    return Status::error(Code::kInvalidArgument, "--projection %s is not one of highway, xnnpack", l.projection);
  }
  if (l.weights_path == nullptr) {
    return Status::error(Code::kInvalidArgument, "--weights is required (a .safetensors or .gguf file)");
  }
  if (!l.layer_set) return Status::error(Code::kInvalidArgument, "--layer is required (the layer index)");
  if (l.x_path == nullptr) {
    return Status::error(Code::kInvalidArgument, "--x is required (an .npy of [T, d_model] f32)");
  }
  if (l.out_path == nullptr) {
    return Status::error(Code::kInvalidArgument, "--out is required (where to write y as .npy)");
  }
  if (l.seq_lens != nullptr && l.chunk != 0) {
    return Status::error(Code::kInvalidArgument, "--chunk %u with --seq-lens: a packed batch runs in one call",
                         l.chunk);
  }
  if (l.seq_lens != nullptr && l.start_set) {
    return Status::error(Code::kInvalidArgument,
                         "--start-pos %u with --seq-lens: each sequence of a packed batch starts at position 0",
                         l.start);
  }
  return Status();
}

// The model's config: --config, or the GGUF file's own.
Result<Config> model_config(const LayerFlags& l, const WeightsFile& file) {
  if (l.config_path != nullptr) return load_hf_config(l.config_path);
  if (file.is_gguf()) return file.gguf_config();
  return Status::error(Code::kInvalidArgument,
                       "--config is required with %s (a safetensors file has no config; give the model's config.json)",
                       l.weights_path);
}

// x [T, d_model] f32 with T >= 1, its positions start..start+T-1 inside the config's context;
// with --seq-lens, lengths that sum to T into l->cu, each inside the context.
Status check_x(LayerFlags* lf, const formats::NpyArray& x, const Config& config) {
  const LayerFlags& l = *lf;
  const uint32_t d_model = config.d_model;
  if (x.ndim != 2 || x.shape[1] != d_model || x.shape[0] == 0 || x.dtype != DType::kF32) {
    return Status::error(Code::kInvalidArgument,
                         "npy file %s: x is %s %s, expected (T, %u) f32 with T >= 1 (d_model %u)", l.x_path,
                         npy_shape_text(x.shape, x.ndim).c_str(), dtype_name(x.dtype), d_model, d_model);
  }
  if (x.shape[0] > UINT32_MAX - l.start) {
    return Status::error(Code::kInvalidArgument, "npy file %s: %llu tokens from --start-pos %u pass 2^32", l.x_path,
                         static_cast<unsigned long long>(x.shape[0]), l.start);
  }
  const uint32_t t = static_cast<uint32_t>(x.shape[0]);
  if (l.seq_lens != nullptr) {
    HEADWAY_RETURN_IF_ERROR(parse_seq_lens("--seq-lens", l.seq_lens, t, l.x_path, &lf->cu));
    for (size_t s = 0; s + 1 < lf->cu.size(); ++s) {
      const uint32_t n = lf->cu[s + 1] - lf->cu[s];
      if (n > config.max_seq) {
        return Status::error(Code::kInvalidArgument,
                             "--seq-lens %s: sequence %zu has %u tokens, past the context of %u", l.seq_lens, s, n,
                             config.max_seq);
      }
    }
    return Status();
  }
  if (l.start + t > config.max_seq) {
    return Status::error(Code::kInvalidArgument,
                         "--start-pos %u with %u tokens reaches position %u, past the config's context of %u", l.start,
                         t, l.start + t - 1, config.max_seq);
  }
  return Status();
}

// One layer's plan: the chosen layer's weights, and its kind, bind to the plan's layer 0 (a layer that
// shares KV: to layer 1, the layer whose cache it reads to layer 0); the cache holds
// exactly the P + T positions this run reaches (not the model's whole context). A causal model's
// tokens run in calls of up to 512 (or --chunk); a bidirectional one's in one call (a query sees the keys after
// it, which a later call would bring too late). A packed batch runs in one call of all T tokens,
// each sequence's positions from 0.
Result<Plan> layer_plan(const LayerFlags& l, Config c, uint32_t t, PlanOptions options) {
  c = c.layer_with_owner(l.layer);
  c.max_seq = l.start + t;
  c.kv_dtype = l.kv_dtype;
  c.kv_rotation = l.kv_rotation;
  options.threads = l.threads;
  options.max_tokens = !c.causal || t < 512 ? t : 512;
  if (l.chunk != 0 && !c.causal) {
    return Status::error(Code::kInvalidArgument,
                         "--chunk %u: a bidirectional layer runs in one call (a query sees the keys after it)",
                         l.chunk);
  }
  if (l.chunk != 0 && l.chunk < options.max_tokens) options.max_tokens = l.chunk;
  if (!l.cu.empty()) {
    // The plan's calls hold at most its context: a context of all T tokens (the cache rows the
    // longest sequence needs, and more), or of the window where it is longer (planned, no effect).
    c.max_seq = std::max(t, c.window);
    options.max_tokens = t;
  }
  options.weights_in_arena = false;
  return make_plan(c, options);
}

// y = the block over x, in chunks of the plan's max_tokens, from position l.start, on the
// backend --backend names; a layer that shares KV after its owner (owner_weights) over the same
// chunk. `backend` gets its description.
Status run_block(const LayerFlags& l, const Plan& plan, const LayerWeights& weights, const LayerWeights* owner_weights,
                 const float* x, uint32_t t, ThreadPool* pool, float* y, std::string* backend) {
  AlignedBuffer memory;
  const uint64_t bytes = align_up(plan.arena_bytes);
  memory.p = bytes ? std::aligned_alloc(kAlignment, static_cast<size_t>(bytes)) : nullptr;
  if (bytes && memory.p == nullptr) {
    return Status::error(Code::kInternal, "cannot allocate the plan's %llu bytes",
                         static_cast<unsigned long long>(bytes));
  }
  Arena arena;
  HEADWAY_RETURN_IF_ERROR(arena.bind(plan, memory.p, static_cast<size_t>(bytes)));
  HEADWAY_RETURN_IF_ERROR(pool->create(l.threads));
  LayerOptions options;
  options.pool = pool;
  options.backend = l.backend;
  GpuContext gpu;  // outlives the block: declared before it
  if (l.backend == BackendKind::kGpu) {
    HEADWAY_RETURN_IF_ERROR(gpu.create());
    options.gpu = &gpu;
  }
  const bool shares = owner_weights != nullptr;
  AttentionLayer owner, block;
  if (shares) {
    HEADWAY_RETURN_IF_ERROR(owner.init(arena, 0, *owner_weights, options));
    options.kv_owner = &owner;
  }
  HEADWAY_RETURN_IF_ERROR(block.init(arena, shares ? 1 : 0, weights, options));
  *backend = block.backend_description();
  if (!l.cu.empty()) return block.forward_packed(x, y, l.cu.data(), static_cast<uint32_t>(l.cu.size() - 1));
  if (shares) owner.reset(l.start);
  block.reset(l.start);
  const uint32_t d_model = plan.config.d_model;
  for (uint32_t done = 0; done < t;) {
    const uint32_t n = t - done < plan.max_tokens ? t - done : plan.max_tokens;
    float* rows = y + uint64_t{done} * d_model;
    // The owner's output is not needed: y's rows hold it until the layer writes its own.
    if (shares) HEADWAY_RETURN_IF_ERROR(owner.forward(x + uint64_t{done} * d_model, rows, n));
    HEADWAY_RETURN_IF_ERROR(block.forward(x + uint64_t{done} * d_model, rows, n));
    done += n;
  }
  return Status();
}

int run(int argc, char** argv) {
  LayerFlags l;
  Status s = parse_flags(argc, argv, &l);
  if (!s.ok()) return report("layer", s);
  if (l.help) {
    std::fputs(kUsage, stdout);
    return kExitOk;
  }
  PlanOptions options;
  s = check_flags(l, &options);
  if (!s.ok()) return report("layer", s);

  WeightsFile file;
  s = file.open(l.weights_path);
  if (!s.ok()) return report("layer", s);
  const Result<Config> config = model_config(l, file);
  if (!config.ok()) return report("layer", config.status());
  const Result<LayerWeights> weights = file.layer_weights(config.value(), l.layer);
  if (!weights.ok()) return report("layer", weights.status());
  const bool shares = config->layer_shares_kv(l.layer);
  const Result<LayerWeights> owner_weights =
      shares ? file.layer_weights(config.value(), config->kv_owner(l.layer)) : Result<LayerWeights>(LayerWeights{});
  if (!owner_weights.ok()) return report("layer", owner_weights.status());
  const Result<formats::NpyArray> x = formats::load_npy(l.x_path);
  if (!x.ok()) return report("layer", x.status());
  s = check_x(&l, x.value(), config.value());
  if (!s.ok()) return report("layer", s);
  const uint32_t t = static_cast<uint32_t>(x->shape[0]);
  const uint32_t d_model = config->d_model;
  const Result<Plan> plan = layer_plan(l, config.value(), t, options);
  if (!plan.ok()) return report("layer", plan.status());

  ThreadPool pool;
  std::vector<float> y(static_cast<size_t>(t) * d_model);
  std::string backend;
  s = run_block(l, plan.value(), weights.value(), shares ? &owner_weights.value() : nullptr, x->f32(), t, &pool,
                y.data(), &backend);
  if (!s.ok()) return report("layer", s);
  const uint64_t shape[2] = {t, d_model};
  s = formats::save_npy(l.out_path, DType::kF32, y.data(), shape, 2);
  if (!s.ok()) return report("layer", s);
  char positions[64];
  if (l.cu.empty()) std::snprintf(positions, sizeof(positions), "positions %u..%u", l.start, l.start + t - 1);
  else std::snprintf(positions, sizeof(positions), "%zu sequences, each from position 0", l.cu.size() - 1);
  char reads[64] = "";
  if (shares) std::snprintf(reads, sizeof(reads), ", reading layer %u's cache", config->kv_owner(l.layer));
  std::printf("layer: %s layer %u%s, y [%u, %u] f32 -> %s (%s, kv %s, %s projections, %u thread%s; attention %s)\n",
              l.weights_path, l.layer, reads, t, d_model, l.out_path, positions, dtype_name(l.kv_dtype),
              projection_name(options.projection), pool.threads(), pool.threads() == 1 ? "" : "s", backend.c_str());
  return kExitOk;
}

}  // namespace

int cmd_layer(int argc, char** argv) { return run(argc, argv); }

}  // namespace headway::cli
