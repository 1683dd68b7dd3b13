// A model file's attention weights: safetensors (Hugging Face names) or GGUF (llama.cpp names),
// memory-mapped, borrowed, never copied. Part of the hosted tools layer (headway::tools).
//
//   HF:   model.layers.{i}.self_attn.{q,k,v,o}_proj.{weight,bias}, ...self_attn.{q,k}_norm.weight,
//         ...self_attn.sinks
//   GGUF: blk.{i}.attn_{q,k,v,output}.{weight,bias}, blk.{i}.attn_{q,k}_norm.weight,
//         blk.{i}.attn_sinks.weight
//
// The parsed file lives behind a pointer that open() allocates (init time; the returned
// TensorRefs point into the mapping and stay valid while the WeightsFile lives).
#pragma once

#include <cstdint>

#include "headway/config.hpp"
#include "headway/status.hpp"
#include "headway/weights.hpp"

namespace headway {

class WeightsFile {
 public:
  WeightsFile();
  ~WeightsFile();
  WeightsFile(const WeightsFile&) = delete;
  WeightsFile& operator=(const WeightsFile&) = delete;

  // Maps `path`: GGUF when it starts with "GGUF", safetensors otherwise; a path ending in
  // ".index.json" is a sharded checkpoint's model.safetensors.index.json, whose shards are all
  // mapped.
  Status open(const char* path);

  // True once open() has read a GGUF file.
  bool is_gguf() const;

  // GGUF only: the config from the kv section, with qkv_bias, o_bias, qk_norm and sinks turned
  // on when layer 0 has those tensors.
  Result<Config> gguf_config() const;

  // Finds and checks layer `layer`'s attention tensors against `config` (validated first). The
  // projections are required; the biases when config.qkv_bias / o_bias, the q/k norms when
  // config.qk_norm, the sink logits [n_heads] when config.sinks. A bias, norm or sinks tensor in
  // the file that the config does not ask for is an error too. Every error names the tensor, the
  // expected and the found shape.
  Result<LayerWeights> layer_weights(const Config& config, uint32_t layer) const;

 private:
  struct Parsed;
  Parsed* parsed_ = nullptr;
};

}  // namespace headway
