#include "examples/cli/config_source.hpp"

#include <string>

#include "headway/tools/model_file.hpp"
#include "headway/tools/model_files.hpp"
#include "headway/presets.hpp"

namespace headway::cli {

bool ConfigSource::take(Flags* flags, Status* s) {
  const std::string& f = flags->name();
  const char** into = f == "--preset"   ? &preset
                      : f == "--config" ? &config_path
                      : f == "--gguf"   ? &gguf_path
                      : f == "--spec"   ? &spec
                                        : nullptr;
  if (into == nullptr) return false;
  *s = flags->value(into);
  return true;
}

int ConfigSource::given() const {
  return (preset != nullptr) + (config_path != nullptr) + (gguf_path != nullptr) + (spec != nullptr);
}

Result<Config> ConfigSource::load(const char* count_note) const {
  if (given() != 1) {
    return Status::error(Code::kInvalidArgument,
                         "give exactly one of --preset NAME, --config FILE, --gguf FILE, --spec TEXT (got %d%s)",
                         given(), count_note);
  }
  if (preset != nullptr) {
    const presets::Entry* e = presets::find(preset);
    if (e == nullptr) return Status::error(Code::kNotFound, "no preset named '%s' (see headway presets)", preset);
    return e->make();
  }
  if (config_path != nullptr) return load_hf_config(config_path);
  if (gguf_path != nullptr) return load_gguf_config(gguf_path);
  return parse_spec(spec);
}

Result<Config> ConfigSource::load_model(const char* count_note, std::string* attention_only) const {
  if (given() != 1 || (gguf_path == nullptr && config_path == nullptr)) return load(count_note);
  ModelFile file;
  if (gguf_path != nullptr) HEADWAY_RETURN_IF_ERROR(file.open(gguf_path));
  Result<Config> whole = gguf_path != nullptr ? file.config() : ModelFile::hf_config(config_path);
  if (whole.ok() || whole.status().code() != Code::kUnsupported) return whole;
  if (attention_only != nullptr) *attention_only = whole.status().message();
  return load(count_note);
}

}  // namespace headway::cli
