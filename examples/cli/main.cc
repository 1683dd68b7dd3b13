// headway: plan and run attention for edge devices. See `headway help`.
#include <cstdio>
#include <cstring>

#include "examples/cli/commands.hpp"
#include "headway/headway.h"

namespace {

struct Command {
  const char* name;
  int (*run)(int argc, char** argv);
  const char* usage;
};

constexpr Command kCommands[] = {
    {"presets", headway::cli::cmd_presets, "presets                      list the built-in model configs"},
    {"plan", headway::cli::cmd_plan,
     "plan (--preset NAME | --config config.json | --gguf FILE | --spec \"d_model=4096 heads=32 ...\")\n"
     "       [--threads N] [--max-tokens N] [--kv-dtype f32|f16|bf16|q8_0|q4_0] [--kv-rotate] [--weight-dtype "
     "f32|f16|bf16] "
     "[--projection highway|xnnpack] [--json]\n"
     "                                    check a config; print its head layout and memory plan (the whole\n"
     "                                    model's where --config or --gguf names a family headway runs whole)"},
    {"attend", headway::cli::cmd_attend,
     "attend --q q.npy --k k.npy --v v.npy --out o.npy [--causal] [--window W] [--softcap C] [--scale S]\n"
     "       [--sinks s.npy] [--sink-tokens S] [--alibi] [--kv-dtype f32|f16|bf16|q8_0|q4_0] [--kv-rotate] [--threads "
     "N]\n"
     "       [--symmetric-window] [--prefix P] [--seq-lens N,N,...] [--kv-seq-lens N,N,...] [--backend cpu|gpu]\n"
     "                                    run attention over .npy tensors"},
    {"layer", headway::cli::cmd_layer,
     "layer --weights model.safetensors|model.gguf [--config config.json] --layer I --x x.npy --out y.npy\n"
     "       [--start-pos P] [--threads N] [--kv-dtype f32|f16|bf16|q8_0|q4_0] [--kv-rotate] [--projection "
     "highway|xnnpack]\n"
     "                                    run one attention block of a model file's layer on x [T, d_model]"},
    {"run", headway::cli::cmd_run,
     "run (--preset NAME | --config FILE | --gguf FILE | --spec TEXT) [--weights FILE] [--prompt N] [--tokens M]\n"
     "       [--layers N] [--threads N] [--kv-dtype D] [--kv-rotate] [--weight-dtype f32|f16|bf16]\n"
     "       [--projection auto|highway|xnnpack] [--json]\n"
     "                                    prefill and decode through the attention stack; tokens/s, arena, heap"},
    {"generate", headway::cli::cmd_generate,
     "generate (--gguf FILE | --model-dir DIR | --config C --weights W) (--prompt TEXT | --prompt-ids IDS)\n"
     "       [--chat] [--tokens N] [--temp T] [--top-k K]\n"
     "       [--top-p P] [--min-p P] [--repeat-penalty R] [--seed S] [--kv-dtype D] [--kv-rotate]\n"
     "       [--weight-dtype D] [--threads N] [--ctx N] [--json]\n"
     "                                    a whole model's answer, printed as it comes; its speed, arena and heap"},
    {"embed", headway::cli::cmd_embed,
     "embed (--model-dir DIR | --config C --weights W) --text T [--text T2 ...] [--threads N] [--json]\n"
     "                                    sentence embeddings from a whole encoder (BERT, MiniLM), as "
     "sentence-transformers"},
    {"logits", headway::cli::cmd_logits,
     "logits (--gguf FILE | --model-dir DIR | --config C --weights W) --prompt-ids 1,2,3 --out logits.npy\n"
     "       [--threads N] [--step] [--kv-dtype f32|f16|bf16|q8_0|q4_0] [--kv-rotate] [--weight-dtype f32|f16|bf16]\n"
     "       [--backend cpu|gpu]          a whole model's next-token logits after each prompt position, f32 [T, "
     "vocab]"},
    {"tokenize", headway::cli::cmd_tokenize,
     "tokenize (--gguf FILE | --tokenizer tokenizer.json | --model-dir DIR) (--text T | --text-file F | --ids 1,2,3)\n"
     "       [--no-add-special] [--no-parse-special] [--keep-special] [--json]\n"
     "                                    text to token ids, or ids to text, with the model file's own tokenizer"},
    {"doctor", headway::cli::cmd_doctor,
     "doctor                       this build and machine: version, compiler, SIMD targets, XNNPACK, GPU,\n"
     "                                    Python module (paste it into a bug report)"},
    {"bench", headway::cli::cmd_bench,
     "bench [--case NAME]... [--list] [--threads N] [--reps N] [--backend cpu|gpu] [--json] [--svg FILE]\n"
     "                                    time attention cases against this machine's measured peak"},
};

void usage(std::FILE* out) {
  std::fprintf(out, "usage: headway COMMAND [options]   (headway --version: the version)\n\ncommands:\n");
  for (const Command& c : kCommands) std::fprintf(out, "  %s\n", c.usage);
  std::fprintf(out, "\nexit status: 0 done, 2 bad input (the message says which field and value), 1 internal fault\n");
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || std::strcmp(argv[1], "help") == 0 || std::strcmp(argv[1], "--help") == 0 ||
      std::strcmp(argv[1], "-h") == 0) {
    usage(argc < 2 ? stderr : stdout);
    return argc < 2 ? 2 : 0;
  }
  if (std::strcmp(argv[1], "--version") == 0 || std::strcmp(argv[1], "version") == 0) {
    std::printf("headway %s\n", headway_version());
    return 0;
  }
  for (const Command& c : kCommands) {
    if (std::strcmp(argv[1], c.name) == 0) return c.run(argc - 1, argv + 1);
  }
  std::fprintf(stderr, "headway: unknown command '%s'\n", argv[1]);
  usage(stderr);
  return 2;
}
