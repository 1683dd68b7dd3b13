// headway::WeightsFile over formats::WeightFile, which holds the mapping and the parsed
// safetensors or GGUF index.
#include "headway/tools/weights_file.hpp"

#include <new>

#include "runtime/formats/weights_loader.hpp"

namespace headway {

struct WeightsFile::Parsed {
  formats::WeightFile file;
};

WeightsFile::WeightsFile() = default;
WeightsFile::~WeightsFile() { delete parsed_; }

Status WeightsFile::open(const char* path) {
  if (parsed_ == nullptr) parsed_ = new (std::nothrow) Parsed;
  if (parsed_ == nullptr) return Status::error(Code::kInternal, "out of memory opening %s", path);
  return parsed_->file.open(path);
}

bool WeightsFile::is_gguf() const {
  return parsed_ != nullptr && parsed_->file.format() == formats::WeightFormat::kGguf;
}

Result<Config> WeightsFile::gguf_config() const {
  if (parsed_ == nullptr) return Status::error(Code::kFailedPrecondition, "no weight file is open");
  return parsed_->file.gguf_config();
}

Result<LayerWeights> WeightsFile::layer_weights(const Config& config, uint32_t layer) const {
  if (parsed_ == nullptr) return Status::error(Code::kFailedPrecondition, "no weight file is open");
  return formats::load_layer_weights(parsed_->file, config, layer);
}

}  // namespace headway
