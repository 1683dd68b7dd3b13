// A model's weights for Model (decoders, headway/model.hpp) or Encoder (headway/encoder.hpp):
//   - a GGUF in any weight type the ggml table holds (headway/ggml_types.hpp: f32, f16, bf16,
//     q4_0 ... q8_0, q2_K ... q6_K);
//   - a Hugging Face directory: config.json and model.safetensors (f32, f16, bf16), or a sharded
//     checkpoint's model.safetensors.index.json and the shards it names.
// The source lends every matrix from the mapping in the file's own type (a plan with
// weights_in_arena false runs on them there), and reads any tensor as f32 rows (a GGUF's blocks
// dequantized bit-exactly as ggml does) for a plan that copies the weights into its arena.
// Tensor names: headway/model_tensors.hpp, and the attention tensors of headway/tools/weights_file.hpp.
// Part of the hosted tools layer (headway::tools): open() maps the file and allocates its index.
//
// Families: the pre-norm RMSNorm + SwiGLU decoders (GGUF architectures llama — which also carries
// Mistral, SmolLM and SmolLM2 files —, qwen2, qwen3; config.json model_type llama, mistral, qwen2,
// qwen3) and BERT-family encoders (model_type bert: BERT, MiniLM; roberta; distilbert). Any other
// is refused when the config is read, naming the architecture and what headway lacks for it.
#pragma once

#include <cstdint>
#include <vector>

#include "headway/config.hpp"
#include "headway/encoder.hpp"
#include "headway/model.hpp"
#include "headway/status.hpp"

namespace headway {

class ModelFile {
 public:
  ModelFile();
  ~ModelFile();
  ModelFile(const ModelFile&) = delete;
  ModelFile& operator=(const ModelFile&) = delete;

  // Maps a GGUF file, or a directory's model.safetensors (else its model.safetensors.index.json
  // and every shard it names) with its config.json, and reads its tensor table.
  Status open(const char* path);
  // A Hugging Face config.json and a .safetensors file (or a sharded checkpoint's index .json)
  // given apart; `dir`, when not null, is the model's directory (sentence-transformers' pooling
  // files).
  Status open(const char* config_json, const char* weights, const char* dir = nullptr);
  // A GGUF's `size` bytes at `data` (borrowed: they must outlive this object); `source` names them.
  Status parse(const uint8_t* data, uint64_t size, const char* source);

  // The whole model's config. GGUF: the attention config of the file's metadata (as
  // load_gguf_config, with the biases, q/k norms and sinks the tensors show) and its model part:
  // vocab_size from token_embd's rows, intermediate_size from ffn_gate's rows, RMSNorm with the
  // file's epsilon, tied when there is no output.weight. A directory: config.json's (as
  // load_hf_config, and vocab_size, intermediate_size, hidden_act, the norm's eps,
  // tie_word_embeddings, max_position_embeddings, type_vocab_size). A family headway cannot run
  // whole is an error naming it.
  Result<Config> config() const;

  // config() of a directory from its config.json alone, no weights opened: what `headway plan
  // --config` plans. kUnsupported, naming the model_type, for a family headway does not run whole
  // (load_hf_config still reads its attention).
  static Result<Config> hf_config(const char* config_json);

  // The token ids a generation ends at, as transformers' generate takes them without a tokenizer:
  // generation_config.json's eos_token_id (one or a list) beside config.json, else config.json's;
  // none when neither says. A GGUF: none here (its end tokens are its tokenizer's).
  Result<std::vector<int32_t>> eos_ids() const;

  // Model::init's source for a plan made from config() (max_seq, kv_dtype and the weight dtype
  // may differ). Valid while this object lives; each tensor's shape is checked against the plan
  // (an error names the tensor, its shape and the one expected).
  ModelWeightsSource source();

  // The bytes of the weights the model reads, as this file stores them: every tensor of config()
  // (the embedding once when tied), and of those what one decode step reads — every matrix and
  // norm but the embedding table, of which a token reads one row, with the LM head (the embedding
  // again when tied). What a plan that borrows the weights (weights_in_arena false) leaves here.
  struct WeightBytes {
    uint64_t total = 0;
    uint64_t per_token = 0;
  };
  Result<WeightBytes> weight_bytes() const;

  // How a sentence-transformers directory turns hidden states into sentence embeddings: its
  // 1_Pooling/config.json (mean or CLS), whether modules.json ends in Normalize, and
  // sentence_bert_config.json's max_seq_length (0 where absent). A directory without them: mean
  // pooling, normalized, no length limit of its own. kUnsupported for a pooling mode headway lacks.
  struct SentencePooling {
    Pooling pooling = Pooling::kMean;
    bool normalize = true;
    uint32_t max_seq_length = 0;
  };
  Result<SentencePooling> sentence_pooling() const;

  struct Parsed;  // the mapped file and its buffers (the loader's)

 private:
  Parsed* parsed_ = nullptr;
};

}  // namespace headway
