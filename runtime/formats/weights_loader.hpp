// One layer's attention weights from a model file: safetensors (Hugging Face names) or GGUF
// (llama.cpp names), memory-mapped, borrowed, never copied. Part of the hosted tools layer.
//
//   HF decoders: model.layers.{i}.self_attn.{q,k,v,o}_proj.{weight,bias},
//         ...self_attn.{q,k}_norm.weight, ...self_attn.sinks
//   HF BERT family (BERT, RoBERTa, MiniLM, ELECTRA): encoder.layer.{i}.attention.self.{query,key,
//         value}.{weight,bias}, ...attention.output.dense.{weight,bias}
//   HF DistilBERT: transformer.layer.{i}.attention.{q,k,v,out}_lin.{weight,bias}
//   GGUF: blk.{i}.attn_{q,k,v,output}.{weight,bias}, blk.{i}.attn_{q,k}_norm.weight,
//         blk.{i}.attn_sinks.weight
//
// GGUF needs no reordering: ggml's ne = [in, out] is HF's row-major [out, in], and the Q/K rows
// that convert_hf_to_gguf.py permutes for "llama" models are what the GPT-J RoPE pairing
// load_gguf_config() picks for that architecture expects.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "headway/config.hpp"
#include "headway/status.hpp"
#include "headway/weights.hpp"
#include "runtime/formats/gguf_tensors.hpp"
#include "runtime/formats/mapped_file.hpp"
#include "runtime/formats/safetensors.hpp"

namespace headway::formats {

enum class WeightFormat : uint8_t { kNone = 0, kSafetensors, kGguf };

// Which family's tensor names a file uses. A safetensors file's is the one whose layer-0 query
// projection it holds, after any prefix (a task head's "bert.", a multimodal wrapper's
// "language_model."); decoders' when it holds none, so that the message names what is missing.
enum class Naming : uint8_t { kHfDecoder = 0, kHfBert, kHfDistilBert, kHfModernBert, kGguf };
constexpr size_t kNamingCount = 5;

class WeightFile {
 public:
  // Maps `path`: GGUF when it starts with "GGUF", safetensors otherwise; a path ending in
  // ".index.json" is a sharded checkpoint's index (model.safetensors.index.json), whose every
  // shard is mapped and checked to hold the tensors the index puts in it. A missing shard, a
  // tensor its shard lacks and a malformed index are errors naming the file and the tensor.
  Status open(const char* path);
  // The same over `size` bytes at `data` (borrowed: they must outlive this object); `source`
  // names them in messages.
  Status parse(const uint8_t* data, uint64_t size, const char* source);

  WeightFormat format() const { return format_; }
  const char* path() const { return source_.c_str(); }
  Result<TensorRef> find(const char* name, uint32_t* rank = nullptr) const;
  bool has(const char* name) const;

  // GGUF only: the config from the kv section (rms_norm_eps from {arch}.attention.
  // layer_norm_rms_epsilon), with qkv_bias, o_bias, qk_norm and sinks turned on when
  // layer 0 has those tensors (llama.cpp loads them as optional for several architectures).
  Result<Config> gguf_config() const;

  Naming naming() const { return naming_; }
  const std::string& name_prefix() const { return prefix_; }
  // Tensor `name` (as Hugging Face's or llama.cpp's naming writes it) as this file names it: after
  // the prefix a task head or a wrapper adds; a multimodal checkpoint whose language model sits
  // in model.language_model. (Qwen3.5's) has that in place of each decoder name's leading
  // "model." (and its top-level names, lm_head, as they are).
  std::string tensor_name(const std::string& name) const;
  // A second layer-0 query projection's name (empty when the file has one): load_layer_weights
  // refuses such a file rather than pick one.
  const std::string& ambiguous_anchor() const { return other_anchor_; }

  const GgufFile& gguf() const { return gguf_; }
  size_t shard_count() const { return shards_.size(); }  // safetensors: 1, or the index's shards

 private:
  Status open_index(const char* path);
  const SafetensorsFile* shard_of(const char* name) const;  // nullptr: no shard holds it
  void find_naming();

  MappedFile file_;
  std::string source_;
  WeightFormat format_ = WeightFormat::kNone;
  Naming naming_ = Naming::kHfDecoder;
  std::string prefix_;
  bool prefix_replaces_model_ = false;  // prefix_ ends in model.language_model., in place of "model."
  std::string other_anchor_;            // a second layer-0 query projection: which one to run is unclear
  // safetensors: one file (over file_ or borrowed bytes), or each shard of an index; then index_
  // holds each tensor's shard, sorted by name.
  std::vector<SafetensorsFile> shards_;
  std::vector<SafetensorsIndex::Tensor> index_;
  GgufFile gguf_;
};

// Finds and checks layer `layer`'s attention tensors against `config` (validated first). The
// projections are required; the biases when config.qkv_bias / o_bias, the q/k norms when
// config.qk_norm, the sink logits [n_heads] when config.sinks. A bias, norm or sinks tensor in
// the file that the config does not ask for is an error too: ignoring it would compute a
// different model than the file holds. Every error names the tensor, the expected and the found
// shape.
//
// The projections are borrowed in the file's own type (a GGUF's blocks included, as find() hands
// them out); biases, norms and sinks must be f32, f16 or bf16.
Result<LayerWeights> load_layer_weights(const WeightFile& file, const Config& config, uint32_t layer);

}  // namespace headway::formats
