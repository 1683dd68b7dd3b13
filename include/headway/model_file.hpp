// A decoder's weights file for Model (headway/model.hpp): a GGUF in any weight type the ggml
// table holds (headway/ggml_types.hpp: f32, f16, bf16, q4_0 ... q8_0, q2_K ... q6_K), each tensor
// dequantized bit-exactly as ggml does when Model::init copies it into the arena. Part of the
// hosted tools layer (headway::tools): open() maps the file and allocates its index; the
// attention weights of one layer are dequantized into a buffer it holds until the next layer.
//
//   GGUF names: token_embd.weight, blk.{i}.attn_norm.weight, blk.{i}.ffn_norm.weight,
//   blk.{i}.ffn_{gate,up,down}.weight, output_norm.weight, output.weight (absent: tied), and the
//   attention tensors of headway/weights_file.hpp.
//
// Architectures: the pre-norm RMSNorm + SwiGLU decoders ModelConfig describes (llama — which
// also carries Mistral, SmolLM and SmolLM2 files —, qwen2, qwen3). Any other is refused when
// the config is read, naming the architecture and what headway lacks for it.
#pragma once

#include <cstdint>

#include "headway/config.hpp"
#include "headway/model.hpp"
#include "headway/status.hpp"

namespace headway {

class ModelFile {
 public:
  ModelFile();
  ~ModelFile();
  ModelFile(const ModelFile&) = delete;
  ModelFile& operator=(const ModelFile&) = delete;

  // Maps a GGUF file and reads its tensor table.
  Status open(const char* path);

  // The whole decoder's config: the attention config of the file's metadata (as
  // load_gguf_config, with the biases, q/k norms and sinks the tensors show) and its model part:
  // vocab_size from token_embd's rows, intermediate_size from ffn_gate's rows, RMSNorm with the
  // file's epsilon, tied when there is no output.weight. An architecture Model cannot run is an
  // error naming it.
  Result<Config> config() const;

  // Model::init's source for a plan made from config() (max_seq, kv_dtype and the weight dtype
  // may differ). Valid while this object lives; each tensor's shape is checked against the plan
  // (an error names the tensor, its shape and the one expected).
  ModelWeightsSource source();

  // The file's chat template (tokenizer.chat_template); kNotFound naming the file when it has none.
  Result<std::string> chat_template() const;

  struct Parsed;  // the mapped file and its buffers (the loader's)

 private:
  Parsed* parsed_ = nullptr;
};

}  // namespace headway
