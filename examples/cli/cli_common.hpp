// Flag parsing, error reporting and small helpers shared by the subcommands.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "headway/arena.hpp"
#include "headway/backend.hpp"
#include "headway/layer.hpp"
#include "headway/tools/model_file.hpp"
#include "headway/thread_pool.hpp"
#include "headway/tools/tokenizer.hpp"
#include "headway/config.hpp"
#include "headway/plan.hpp"
#include "headway/status.hpp"

namespace headway::cli {

inline constexpr int kExitOk = 0;
inline constexpr int kExitInternal = 1;
inline constexpr int kExitBadInput = 2;

// Prints "headway CMD: MESSAGE" on stderr; returns 1 for internal faults, 2 otherwise.
int report(const char* cmd, const Status& status);

// Walks argv of one subcommand: `--name value` and `--name=value` forms, boolean switches.
// A text file's bytes (at most 64 MiB); errors name `flag` and the path.
Status read_text_file(const char* flag, const char* path, std::string* out);

class Flags {
 public:
  Flags(const char* cmd, int argc, char** argv) : cmd_(cmd), argc_(argc), argv_(argv) {}

  // Advances to the next argument; false at the end. name() is the flag ("--q"), without value.
  bool next();
  const std::string& name() const { return name_; }
  // The flag's value (the "=value" part or the next argument); an error when missing.
  Status value(const char** out);
  Status value_u32(uint32_t* out, uint32_t min, uint32_t max);
  Status value_float(float* out);     // finite numbers only
  Status value_dtype(DType* out);     // a weight dtype the arena keeps (dtype_plans_weights)
  Status value_kv_dtype(DType* out);  // those, q8_0 or q4_0 (the KV cache)
  // --kv-rotate: a switch (hadamard) or --kv-rotate=hadamard|none.
  Status value_kv_rotation(KvRotation* out);
  // cpu or gpu; gpu in a build without the Vulkan backend is kUnsupported, saying so.
  Status value_backend(BackendKind* out);
  // A switch given "=value" (e.g. --causal=1) or an unknown flag.
  Status unknown() const;
  // True when the flag came as "--name=value": a switch so given is unknown() (no silent "=yes").
  bool has_inline_value() const { return inline_value_ != nullptr; }

 private:
  const char* cmd_;
  int argc_;
  char** argv_;
  int i_ = 0;
  std::string name_;
  const char* inline_value_ = nullptr;
  std::string inline_storage_;
};

// --projection's engine names: "highway" or "xnnpack" to its Projection; false for any other
// text (each command's message lists the values it takes; run also takes "auto").
bool parse_projection(const char* text, Projection* out);

// "1.5 GiB", "512 KiB", "96 B".
std::string human_bytes(uint64_t bytes);

// An .npy shape as NumPy prints it: "(2, 3, 4)", "(5,)".
std::string npy_shape_text(const uint64_t* shape, uint32_t ndim);

// `flag`'s text "12,40,7" → cumulative lengths {0, 12, 52, 59} in *cu: each length a whole number
// >= 1, their sum `total` (the tokens of `what`, a file named in the message), or any sum up to
// 2^24 where total is 0.
Status parse_seq_lens(const char* flag, const char* text, uint32_t total, const char* what, std::vector<uint32_t>* cu);

// `flag`'s text "1,2,3" → token ids: each a whole number 0..2^31-1, at least one.
Status parse_ids(const char* flag, const char* text, std::vector<int32_t>* ids);

// Memory from std::aligned_alloc (a plan's arena, a workspace), freed on every return path.
struct AlignedBuffer {
  void* p = nullptr;
  AlignedBuffer() = default;
  AlignedBuffer(const AlignedBuffer&) = delete;
  AlignedBuffer& operator=(const AlignedBuffer&) = delete;
  ~AlignedBuffer() { std::free(p); }
};

// What every whole-model command makes before its model: the plan's arena, allocated and bound,
// and a pool of `threads`; options() lends the pool to the model's layers. Outlives the model.
struct PlannedArena {
  AlignedBuffer memory;
  Arena arena;
  ThreadPool pool;
  Status create(const Plan& plan, uint32_t threads);
  LayerOptions options() {
    LayerOptions o;
    o.pool = &pool;
    return o;
  }
};

// Where a whole-model command takes its model from: --gguf FILE, --model-dir DIR (config.json,
// model.safetensors, the tokenizer's files), or --config config.json --weights FILE (the
// tokenizer from the config's folder). `allowed` lists the flags a command takes ("--gguf",
// "--model-dir", "--config"), for its messages.
struct ModelSource {
  const char* gguf = nullptr;
  const char* dir = nullptr;
  const char* config = nullptr;
  const char* weights = nullptr;
  // When the current flag is one of the four: takes its value into *s and returns true.
  bool take(Flags* flags, Status* s);
  // Exactly one way given, and only those `gguf_ok` / `dir_ok` allow (--config and --weights go
  // together); otherwise kInvalidArgument naming the flags.
  Status check(bool gguf_ok, bool dir_ok) const;
  const char* name() const;  // the file or folder, for messages
  Status open(ModelFile* file) const;
  Result<Tokenizer> tokenizer() const;
};

// Where a whole-model command keeps the weights. Without --weight-dtype they stay where the file
// holds them, in its own types (a GGUF's blocks, a safetensors' f16), borrowed from the mapping;
// --weight-dtype f32|f16|bf16 converts them into the arena.
struct WeightStorage {
  DType dtype = DType::kF32;
  bool converted = false;
  Status take(Flags* flags) {
    converted = true;
    return flags->value_dtype(&dtype);
  }
  void apply(PlanOptions* o) const {
    o->weights_in_arena = converted;
    o->weight_dtype = dtype;
  }
  const char* name() const { return converted ? dtype_name(dtype) : "file"; }  // for reports: "file", "f16"
};

}  // namespace headway::cli
