// headway layer: one attention block of a model file's layer I over x.npy.
//   x [T, d_model] f32 at positions P..P+T-1, a fresh KV cache, the config's mask and RoPE;
//   y [T, d_model] f32 = o_proj(attention(rope(q_proj x), rope(k_proj x), v_proj x)).
// No norm before the block, no residual, no MLP: the block alone, to compare with a reference.
// Weights are borrowed from the memory-mapped file (f32, f16 or bf16 as stored).
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "examples/cli/cli_common.hpp"
#include "examples/cli/commands.hpp"
#include "headway/arena.hpp"
#include "headway/layer.hpp"
#include "headway/model_files.hpp"
#include "headway/plan.hpp"
#include "headway/thread_pool.hpp"
#include "runtime/formats/npy.hpp"
#include "runtime/formats/weights_loader.hpp"

namespace headway::cli {
namespace {

constexpr const char* kUsage =
    "usage: headway layer --weights model.safetensors|model.gguf [--config config.json] --layer I --x x.npy\n"
    "                     --out y.npy [--start-pos P] [--threads N] [--kv-dtype f32|f16|bf16]\n"
    "                     [--projection highway|xnnpack]\n"
    "  runs layer I's attention block (q/k/v projections, q/k norm, RoPE, causal attention, o\n"
    "  projection; no norm, residual or MLP around it) on x [T, d_model] f32 at positions\n"
    "  P..P+T-1 with a fresh KV cache; writes y [T, d_model] f32.\n"
    "  --config is needed for safetensors; a GGUF file carries its own. --kv-dtype defaults to f32.\n";

// The plan's memory, 64-byte aligned, freed on every return path.
struct Buffer {
  void* p = nullptr;
  ~Buffer() { std::free(p); }
};

int run(int argc, char** argv) {
  Flags flags("layer", argc, argv);
  const char* config_path = nullptr;
  const char* weights_path = nullptr;
  const char* x_path = nullptr;
  const char* out_path = nullptr;
  const char* projection = "highway";
  uint32_t layer = 0;
  bool layer_set = false;
  uint32_t start = 0;
  uint32_t threads = 1;
  DType kv_dtype = DType::kF32;
  while (flags.next()) {
    const std::string& f = flags.name();
    Status s;
    if (f == "--help" || f == "-h") {
      std::fputs(kUsage, stdout);
      return kExitOk;
    }
    if (f == "--config") s = flags.value(&config_path);
    else if (f == "--weights") s = flags.value(&weights_path);
    else if (f == "--x") s = flags.value(&x_path);
    else if (f == "--out") s = flags.value(&out_path);
    else if (f == "--layer") s = flags.value_u32(&layer, 0, UINT32_MAX - 1), layer_set = true;
    else if (f == "--start-pos") s = flags.value_u32(&start, 0, UINT32_MAX - 1);
    else if (f == "--threads") s = flags.value_u32(&threads, 1, ThreadPool::kMaxThreads);
    else if (f == "--kv-dtype") s = flags.value_dtype(&kv_dtype);
    else if (f == "--projection") s = flags.value(&projection);
    else s = flags.unknown();
    if (!s.ok()) return report("layer", s);
  }
  PlanOptions options;
  if (std::strcmp(projection, "xnnpack") == 0) options.projection = Projection::kXnnpack;
  else if (std::strcmp(projection, "highway") != 0) {
    return report("layer", Status::error(Code::kInvalidArgument, "--projection %s is not one of highway, xnnpack",
                                         projection));
  }
  if (weights_path == nullptr) {
    return report("layer", Status::error(Code::kInvalidArgument, "--weights is required (a .safetensors or .gguf file)"));
  }
  if (!layer_set) return report("layer", Status::error(Code::kInvalidArgument, "--layer is required (the layer index)"));
  if (x_path == nullptr) {
    return report("layer", Status::error(Code::kInvalidArgument, "--x is required (an .npy of [T, d_model] f32)"));
  }
  if (out_path == nullptr) {
    return report("layer", Status::error(Code::kInvalidArgument, "--out is required (where to write y as .npy)"));
  }

  formats::WeightFile file;
  Status s = file.open(weights_path);
  if (!s.ok()) return report("layer", s);
  Result<Config> config = Status::error(Code::kInternal, "no config");
  if (config_path != nullptr) config = load_hf_config(config_path);
  else if (file.format() == formats::WeightFormat::kGguf) config = file.gguf_config();
  else {
    return report("layer", Status::error(Code::kInvalidArgument,
                                         "--config is required with %s (a safetensors file has no config; give the "
                                         "model's config.json)",
                                         weights_path));
  }
  if (!config.ok()) return report("layer", config.status());
  const Result<LayerWeights> weights = formats::load_layer_weights(file, config.value(), layer);
  if (!weights.ok()) return report("layer", weights.status());

  const Result<formats::NpyArray> x = formats::load_npy(x_path);
  if (!x.ok()) return report("layer", x.status());
  const uint32_t d_model = config->d_model;
  if (x->ndim != 2 || x->shape[1] != d_model || x->shape[0] == 0 || x->dtype != DType::kF32) {
    char shape[128];
    formats::format_npy_shape(x->shape, x->ndim, shape, sizeof(shape));
    return report("layer", Status::error(Code::kInvalidArgument,
                                         "npy file %s: x is %s %s, expected (T, %u) f32 with T >= 1 (d_model %u)",
                                         x_path, shape, dtype_name(x->dtype), d_model, d_model));
  }
  if (x->shape[0] > UINT32_MAX - start) {
    return report("layer", Status::error(Code::kInvalidArgument, "npy file %s: %llu tokens from --start-pos %u pass 2^32",
                                         x_path, static_cast<unsigned long long>(x->shape[0]), start));
  }
  const uint32_t t = static_cast<uint32_t>(x->shape[0]);
  if (start + t > config->max_seq) {
    return report("layer", Status::error(Code::kInvalidArgument,
                                         "--start-pos %u with %u tokens reaches position %u, past the config's "
                                         "context of %u",
                                         start, t, start + t - 1, config->max_seq));
  }

  // One layer's plan: the chosen layer's weights bind to the plan's layer 0, and the cache holds
  // exactly the P + T positions this run reaches (not the model's whole context).
  Config c = config.value();
  c.n_layers = 1;
  c.max_seq = start + t;
  c.kv_dtype = kv_dtype;
  options.threads = threads;
  options.max_tokens = t < 512 ? t : 512;
  options.weights_in_arena = false;
  const Result<Plan> plan = make_plan(c, options);
  if (!plan.ok()) return report("layer", plan.status());

  Buffer memory;
  const uint64_t bytes = align_up(plan->arena_bytes);
  memory.p = bytes ? std::aligned_alloc(kAlignment, static_cast<size_t>(bytes)) : nullptr;
  if (bytes && memory.p == nullptr) {
    return report("layer", Status::error(Code::kInternal, "cannot allocate the plan's %llu bytes",
                                         static_cast<unsigned long long>(bytes)));
  }
  Arena arena;
  s = arena.bind(plan.value(), memory.p, static_cast<size_t>(bytes));
  if (!s.ok()) return report("layer", s);
  ThreadPool pool;
  s = pool.create(threads);
  if (!s.ok()) return report("layer", s);
  AttentionLayer block;
  s = block.init(arena, 0, weights.value(), &pool);
  if (!s.ok()) return report("layer", s);
  block.reset(start);

  std::vector<float> y(static_cast<size_t>(t) * d_model);
  for (uint32_t done = 0; done < t;) {
    const uint32_t n = t - done < plan->max_tokens ? t - done : plan->max_tokens;
    s = block.forward(x->f32() + uint64_t{done} * d_model, y.data() + uint64_t{done} * d_model, n);
    if (!s.ok()) return report("layer", s);
    done += n;
  }
  const uint64_t shape[2] = {t, d_model};
  s = formats::save_npy(out_path, DType::kF32, y.data(), shape, 2);
  if (!s.ok()) return report("layer", s);
  std::printf("layer: %s layer %u, y [%u, %u] f32 -> %s (positions %u..%u, kv %s, %s projections, %u thread%s)\n",
              weights_path, layer, t, d_model, out_path, start, start + t - 1, dtype_name(kv_dtype),
              projection_name(options.projection), pool.threads(), pool.threads() == 1 ? "" : "s");
  return kExitOk;
}

}  // namespace

int cmd_layer(int argc, char** argv) { return run(argc, argv); }

}  // namespace headway::cli
