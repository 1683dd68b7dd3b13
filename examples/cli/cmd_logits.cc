// headway logits: the next-token logits after each position of a prompt, from a whole model.
//
//   headway logits (--gguf FILE | --model-dir DIR | --config C --weights W) --prompt-ids 1,2,3
//                  --out logits.npy [--threads N] [--step]
//                  [--kv-dtype D] [--kv-rotate] [--weight-dtype f32|f16|bf16] [--backend cpu|gpu]
//
// One fresh sequence from position 0; logits.npy is f32 [T, vocab]: row i holds the logits of
// the token after ids[0..i]. The plan's context is the prompt's length; the weights stay in the
// file (a GGUF, or a Hugging Face directory's config.json and model.safetensors) in its own
// types, or with --weight-dtype are converted into the arena. --step runs the prompt one token at
// a time, as generation's decode steps run (quantized weights: x in 8-bit codes per block where
// the CPU multiplies in integers), rather than in one prefill. --backend gpu
// keeps every layer's attention and KV cache on the Vulkan device and runs the rest (embedding,
// norms, MLP, head) on the CPU; stderr says so.
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "examples/cli/cli_common.hpp"
#include "examples/cli/commands.hpp"
#include "headway/arena.hpp"
#include "headway/model.hpp"
#include "headway/tools/model_file.hpp"
#include "headway/tools/npy.hpp"
#include "headway/thread_pool.hpp"

namespace headway::cli {
namespace {

constexpr const char* kCmd = "logits";

struct LogitsFlags {
  ModelSource model;
  const char* ids_text = nullptr;
  const char* out = nullptr;
  uint32_t threads = 1;
  DType kv_dtype = DType::kF32;
  KvRotation kv_rotation = KvRotation::kNone;
  WeightStorage weights;
  BackendKind backend = BackendKind::kCpu;
  bool step = false;
};

Status parse(int argc, char** argv, LogitsFlags* l) {
  Flags f(kCmd, argc, argv);
  while (f.next()) {
    const std::string& n = f.name();
    Status took;
    if (l->model.take(&f, &took)) HEADWAY_RETURN_IF_ERROR(took);
    else if (n == "--prompt-ids") HEADWAY_RETURN_IF_ERROR(f.value(&l->ids_text));
    else if (n == "--out") HEADWAY_RETURN_IF_ERROR(f.value(&l->out));
    else if (n == "--threads") HEADWAY_RETURN_IF_ERROR(f.value_u32(&l->threads, 1, ThreadPool::kMaxThreads));
    else if (n == "--kv-dtype") HEADWAY_RETURN_IF_ERROR(f.value_kv_dtype(&l->kv_dtype));
    else if (n == "--kv-rotate") HEADWAY_RETURN_IF_ERROR(f.value_kv_rotation(&l->kv_rotation));
    else if (n == "--weight-dtype") HEADWAY_RETURN_IF_ERROR(l->weights.take(&f));
    else if (n == "--backend") HEADWAY_RETURN_IF_ERROR(f.value_backend(&l->backend));
    else if (n == "--step" && !f.has_inline_value()) l->step = true;
    else return f.unknown();
  }
  HEADWAY_RETURN_IF_ERROR(l->model.check(true, true));
  if (l->ids_text == nullptr) return Status::error(Code::kInvalidArgument, "--prompt-ids is required (e.g. 1,2,3)");
  if (l->out == nullptr) return Status::error(Code::kInvalidArgument, "--out logits.npy is required");
  return Status();
}

}  // namespace

int cmd_logits(int argc, char** argv) {
  LogitsFlags l;
  Status s = parse(argc, argv, &l);
  if (!s.ok()) return report(kCmd, s);
  std::vector<int32_t> ids;
  s = parse_ids("--prompt-ids", l.ids_text, &ids);
  if (!s.ok()) return report(kCmd, s);
  ModelFile file;
  const char* model_path = l.model.name();
  s = l.model.open(&file);
  if (!s.ok()) return report(kCmd, s);
  Result<Config> config = file.config();
  if (!config.ok()) return report(kCmd, config.status());
  Config c = config.value();
  if (!c.causal) {
    return report(kCmd, Status::error(Code::kInvalidArgument,
                                      "%s is an encoder: logits runs decoders; embed runs encoders", model_path));
  }
  const uint32_t t = static_cast<uint32_t>(ids.size());
  c.max_seq = t;
  c.kv_dtype = l.kv_dtype;
  c.kv_rotation = l.kv_rotation;
  PlanOptions options;
  options.threads = l.threads;
  l.weights.apply(&options);
  options.max_tokens = t < 512 ? t : 512;
  options.all_logits = true;
  const Result<Plan> plan = make_plan(c, options);
  if (!plan.ok()) return report(kCmd, plan.status());
  for (int32_t id : ids) {
    if (static_cast<uint32_t>(id) >= c.model.vocab_size) {
      return report(kCmd, Status::error(Code::kInvalidArgument,
                                        "--prompt-ids: token id %d is outside the vocabulary "
                                        "of %s (0..%u)",
                                        id, model_path, c.model.vocab_size - 1));
    }
  }
  PlannedArena planned;
  s = planned.create(plan.value(), l.threads);
  LayerOptions layer_options = planned.options();
  GpuContext gpu;  // outlives the model: declared before it
  if (s.ok() && l.backend == BackendKind::kGpu) {
    s = gpu.create();
    layer_options.backend = BackendKind::kGpu;
    layer_options.gpu = &gpu;
  }
  std::unique_ptr<Model> model(new Model);
  if (s.ok()) s = model->init(planned.arena, file.source(), layer_options);
  std::vector<float> logits(size_t{t} * c.model.vocab_size);
  if (s.ok() && !l.step) s = model->prefill(ids.data(), t, logits.data());
  for (uint32_t i = 0; s.ok() && l.step && i < t; ++i) {
    s = model->prefill(&ids[i], 1, logits.data() + size_t{i} * c.model.vocab_size);
  }
  if (s.ok()) {
    const uint64_t shape[2] = {t, c.model.vocab_size};
    s = formats::save_npy(l.out, DType::kF32, logits.data(), shape, 2);
  }
  if (!s.ok()) return report(kCmd, s);
  if (l.backend == BackendKind::kGpu) {
    std::fprintf(stderr, "headway logits: attention and KV caches on %s; embedding, norms, MLP and head on the CPU\n",
                 gpu.info().name);
  }
  return kExitOk;
}

}  // namespace headway::cli
