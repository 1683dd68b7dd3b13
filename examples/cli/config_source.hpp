// Where `headway plan` and `headway run` take a model's config from: a built-in preset, a
// Hugging Face config.json, a GGUF file's metadata or a spec string, exactly one of them.
#pragma once

#include <string>

#include "examples/cli/cli_common.hpp"
#include "headway/config.hpp"
#include "headway/status.hpp"

namespace headway::cli {

struct ConfigSource {
  const char* preset = nullptr;
  const char* config_path = nullptr;
  const char* gguf_path = nullptr;
  const char* spec = nullptr;

  // When the current flag is --preset, --config, --gguf or --spec: takes its value into *s and
  // returns true. False for any other flag.
  bool take(Flags* flags, Status* s);
  int given() const;
  // The config of the one source given. Any other count is kInvalidArgument "give exactly one
  // of ... (got N<count_note>)"; an unknown preset is kNotFound.
  Result<Config> load(const char* count_note = "") const;
  // load(), but a GGUF or a config.json of a family headway runs whole gives the whole model's
  // config (its embedding, norms, MLP and head: ModelFile::config, ModelFile::hf_config); any
  // other its attention alone, and then *attention_only (when given) says why.
  Result<Config> load_model(const char* count_note = "", std::string* attention_only = nullptr) const;
};

}  // namespace headway::cli
