#include "headway/tools/model_file.hpp"

#include <sys/stat.h>

#include <cstdio>
#include <cstring>
#include <new>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "headway/dtype_convert.hpp"
#include "headway/tools/model_files.hpp"
#include "runtime/formats/file_bytes.hpp"
#include "runtime/formats/weights_loader.hpp"

namespace headway {

namespace {

// The GGUF architectures whose blocks are ModelConfig's (RMSNorm, a gated MLP without biases:
// SwiGLU, or Gemma's GeGLU).
constexpr const char* kDecoderArchitectures[] = {"llama", "qwen2", "qwen3",  "smollm3", "phi3",
                                                 "olmo2", "gemma", "gemma2", "gemma3",  "qwen35"};
// Architectures whose converter names the norm before the MLP post_attention_norm (Qwen3.5's
// post_attention_layernorm), not ffn_norm.
constexpr const char* kGgufPreMlpPostAttention[] = {"qwen35"};
constexpr const char* kGgufPreMlpPostAttentionName = "blk.%u.post_attention_norm.weight";
// The same families in a Hugging Face directory (config.json's model_type), and the encoders.
constexpr const char* kHfDecoders[] = {"llama",   "mistral", "qwen2", "qwen3",
                                       "smollm3", "phi3",    "olmo2", "qwen3_5_text"};
// Where a family's config class ties the LM head to the embedding when config.json does not say.
constexpr const char* kHfTiedByDefault[] = {"smollm3"};

// What Phi-3, OLMo 2 and Qwen3.5 change in the SwiGLU decoder: Phi-3's gate and up projections
// are one tensor; OLMo 2 norms each block's output, not its input; Qwen3.5's norms scale by 1 + w
// (Qwen3_5RMSNorm; its Gated DeltaNet layers are the layer's, LayerKinds::linear).
void decoder_model_part(const std::string& family, ModelConfig* m) {
  m->gate_up_fused = family == "phi3";
  m->output_norms_only = family == "olmo2";
  m->norm_offset = family == "qwen3_5_text" ? 1.0f : 0.0f;
}
constexpr const char* kHfGemmas[] = {"gemma", "gemma2", "gemma3_text"};

// Gemma's model part, over a config read as the other decoders': GeGLU, embeddings times
// sqrt(d_model), norms on each block's output from Gemma 2 on. `hf`: config.json's norm weights,
// which scale by 1 + w (a GGUF's have the 1 added). Gemma 2 caps its logits (its GGUF says by how
// much, config.json's final_logit_softcapping, 30 when absent).
void gemma_model_part(const std::string& family, bool hf, ModelConfig* m) {
  m->mlp = MlpKind::kGeGlu;
  m->scale_embedding = true;
  m->norm_offset = hf ? 1.0f : 0.0f;
  m->sandwich_norm = family != "gemma";
}
constexpr const char* kHfEncoders[] = {"bert", "roberta", "distilbert"};

// A ModelTensor's GGUF name (headway/model_tensors.hpp); %u is the layer.
const char* gguf_name(ModelTensor t) { return model_tensor_info(t).gguf; }

std::string tensor_name(const char* pattern, uint32_t layer) {
  char name[96];
  std::snprintf(name, sizeof(name), pattern, layer);
  return name;
}

}  // namespace

struct ModelFile::Parsed {
  formats::WeightFile file;
  bool hf = false;                      // a Hugging Face directory: config.json and model.safetensors
  std::string dir;                      // its path (empty for a config and weights given apart)
  std::string config_path;              // its config.json
  Config attention{};                   // the attention config config() read (what the safetensors loader checks)
  bool pre_mlp_post_attention = false;  // a GGUF whose pre-MLP norm is post_attention_norm (Qwen3.5)

  // rows x cols of a tensor as the file stores it; false when absent.
  bool shape(const std::string& name, uint64_t* rows, uint64_t* cols) const {
    if (hf) {
      const Result<TensorRef> t = file.find(name.c_str());
      if (!t.ok()) return false;
      *rows = t.value().rows;
      *cols = t.value().cols;
      return true;
    }
    const formats::GgufFile::Entry* e = file.gguf().entry(name.c_str());
    if (e == nullptr) return false;
    *cols = e->ne[0];
    *rows = e->ne[1] * e->ne[2] * e->ne[3];
    return true;
  }
  // Whether t is half of one gate-and-up tensor (Phi-3); its rows from first_row(t).
  bool fused_half(ModelTensor t) const {
    return attention.model.gate_up_fused && (t == ModelTensor::kGate || t == ModelTensor::kUp);
  }
  uint64_t first_row(ModelTensor t) const {
    return fused_half(t) && t == ModelTensor::kUp ? attention.model.intermediate_size : 0;
  }
  // Tensor t's name in this file (%u filled with the layer); empty where the naming has none.
  std::string name_of(ModelTensor t, uint32_t layer) const {
    const ModelTensorInfo& info = model_tensor_info(t);
    const formats::Naming naming = file.naming();
    const char* pattern = !hf                                        ? info.gguf
                          : naming == formats::Naming::kHfBert       ? info.bert
                          : naming == formats::Naming::kHfDistilBert ? info.distilbert
                                                                     : model_tensor_hf_name(attention, t);
    if (fused_half(t)) pattern = hf ? kGateUpHf : kGateUpGguf;
    if (!hf && t == ModelTensor::kFfnNorm && pre_mlp_post_attention) pattern = kGgufPreMlpPostAttentionName;
    if (pattern == nullptr) return "";
    return file.tensor_name(tensor_name(pattern, layer));
  }
};

ModelFile::ModelFile() = default;
ModelFile::~ModelFile() { delete parsed_; }

Status ModelFile::open(const char* path) {
  delete parsed_;
  parsed_ = new (std::nothrow) Parsed;
  if (parsed_ == nullptr) return Status::error(Code::kInternal, "out of memory opening %s", path);
  struct stat st {};
  if (path != nullptr && stat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
    parsed_->hf = true;
    const std::string dir = path;
    // One model.safetensors, or the shards of a sharded checkpoint's index.
    std::string weights = dir + "/model.safetensors";
    const std::string index = weights + ".index.json";
    if (stat(weights.c_str(), &st) != 0 && stat(index.c_str(), &st) == 0) weights = index;
    return open((dir + "/config.json").c_str(), weights.c_str(), dir.c_str());
  }
  HEADWAY_RETURN_IF_ERROR(parsed_->file.open(path));
  if (parsed_->file.format() != formats::WeightFormat::kGguf) {
    return Status::error(Code::kInvalidArgument,
                         "%s is not a GGUF file (a model runs from a GGUF, or from a Hugging Face directory with "
                         "config.json and model.safetensors)",
                         path);
  }
  return Status();
}

Status ModelFile::open(const char* config_json, const char* weights, const char* dir) {
  if (config_json == nullptr || weights == nullptr) {
    return Status::error(Code::kInvalidArgument, "a model's config.json and weights are both needed");
  }
  delete parsed_;
  parsed_ = new (std::nothrow) Parsed;
  if (parsed_ == nullptr) return Status::error(Code::kInternal, "out of memory opening %s", weights);
  parsed_->hf = true;
  parsed_->dir = dir != nullptr ? dir : "";
  parsed_->config_path = config_json;
  HEADWAY_RETURN_IF_ERROR(parsed_->file.open(weights));
  if (parsed_->file.format() != formats::WeightFormat::kSafetensors) {
    return Status::error(Code::kInvalidArgument,
                         "%s: with a config.json the weights are a .safetensors file or a sharded checkpoint's "
                         "model.safetensors.index.json",
                         weights);
  }
  return Status();
}

Status ModelFile::parse(const uint8_t* data, uint64_t size, const char* source) {
  delete parsed_;
  parsed_ = new (std::nothrow) Parsed;
  if (parsed_ == nullptr) return Status::error(Code::kInternal, "out of memory reading %s", source);
  HEADWAY_RETURN_IF_ERROR(parsed_->file.parse(data, size, source));
  if (parsed_->file.format() != formats::WeightFormat::kGguf) {
    return Status::error(Code::kInvalidArgument, "%s is not a GGUF file", source);
  }
  return Status();
}

namespace {

bool one_of(const std::string& s, std::initializer_list<const char*> names) {
  for (const char* n : names) {
    if (s == n) return true;
  }
  return false;
}

template <size_t N>
bool listed(const std::string& s, const char* const (&names)[N]) {
  for (const char* n : names) {
    if (s == n) return true;
  }
  return false;
}

// A JSON file of at most max_bytes (`what` names it in messages), parsed without exceptions: text
// that is not JSON reads as a discarded value, which is_object() and is_array() refuse.
Result<nlohmann::json> read_json(const std::string& path, size_t max_bytes, const char* what) {
  Result<formats::FileBytes> bytes = formats::read_file(path.c_str(), max_bytes, what);
  if (!bytes.ok()) return bytes.status();
  const std::vector<uint8_t>& b = bytes.value().bytes;
  return nlohmann::json::parse(b.begin(), b.end(), nullptr, /*allow_exceptions=*/false);
}

// The model part of a Hugging Face config.json, over the attention config already read.
Status hf_model_part(const std::string& path, Config* c) {
  Result<nlohmann::json> read = read_json(path, size_t{16} << 20, "a config.json");
  if (!read.ok()) return read.status();
  if (!read.value().is_object()) return Status::error(Code::kInvalidArgument, "%s: not a JSON object", path.c_str());
  // Qwen3.5's multimodal config keeps its language model in text_config (as the attention reader
  // finds it).
  const nlohmann::json* top = &read.value();
  if (top->contains("text_config") && (*top)["text_config"].is_object() && top->contains("model_type") &&
      (*top)["model_type"] == "qwen3_5") {
    top = &(*top)["text_config"];
  }
  const nlohmann::json& j = *top;
  auto text = [&](const char* key) { return j.contains(key) && j[key].is_string() ? j[key].get<std::string>() : ""; };
  auto count = [&](const char* key, uint32_t* out) -> Status {
    if (!j.contains(key) || !j[key].is_number_unsigned() || j[key].get<uint64_t>() > 0x7fffffffu) {
      return Status::error(Code::kInvalidArgument, "%s: %s is missing or not a whole number", path.c_str(), key);
    }
    *out = j[key].get<uint32_t>();
    return Status();
  };
  auto real = [&](const char* key, float fallback) {
    return j.contains(key) && j[key].is_number() ? j[key].get<float>() : fallback;
  };
  const std::string type = text("model_type");
  const std::string act = text("hidden_act").empty() ? text("hidden_activation") : text("hidden_act");
  ModelConfig& m = c->model;
  // A family headway does not run whole is refused below by name, whatever keys it lacks.
  if (listed(type, kHfGemmas) || listed(type, kHfDecoders) || listed(type, kHfEncoders)) {
    HEADWAY_RETURN_IF_ERROR(count("vocab_size", &m.vocab_size));
    HEADWAY_RETURN_IF_ERROR(count(type == "distilbert" ? "hidden_dim" : "intermediate_size", &m.intermediate_size));
  }
  if (listed(type, kHfGemmas)) {
    // transformers' Gemma MLP runs hidden_activation, gelu_pytorch_tanh when it is null or absent.
    const std::string gemma_act = text("hidden_activation").empty() ? "gelu_pytorch_tanh" : text("hidden_activation");
    if (gemma_act != "gelu_pytorch_tanh") {
      return Status::error(Code::kUnsupported,
                           "%s: hidden_activation '%s': the %s MLP headway runs is GeGLU (gelu_pytorch_tanh)",
                           path.c_str(), gemma_act.c_str(), type.c_str());
    }
    m.norm = NormKind::kRms;
    m.norm_eps = real("rms_norm_eps", 1e-6f);
    gemma_model_part(type == "gemma3_text" ? "gemma3" : type, true, &m);
    m.tie_word_embeddings = !j.contains("tie_word_embeddings") || !j["tie_word_embeddings"].is_boolean() ||
                            j["tie_word_embeddings"].get<bool>();  // GemmaConfig's default: tied
    const bool capped = j.contains("final_logit_softcapping");
    if (capped && j["final_logit_softcapping"].is_number()) {
      m.final_softcap = j["final_logit_softcapping"].get<float>();
    } else if (!capped && type == "gemma2") {
      m.final_softcap = 30.0f;  // Gemma2Config's default
    }
    return Status();
  }
  if (listed(type, kHfDecoders)) {
    if (act != "silu" && !act.empty()) {  // their config classes' default: silu
      return Status::error(Code::kUnsupported, "%s: hidden_act '%s': the %s MLP headway runs is SwiGLU (silu)",
                           path.c_str(), act.c_str(), type.c_str());
    }
    if (j.contains("mlp_bias") && j["mlp_bias"].is_boolean() && j["mlp_bias"].get<bool>()) {
      return Status::error(Code::kUnsupported, "%s: mlp_bias true: the SwiGLU MLP headway runs has no biases",
                           path.c_str());
    }
    m.norm = NormKind::kRms;
    m.norm_eps = real("rms_norm_eps", 1e-6f);
    m.mlp = MlpKind::kSwiGlu;
    const bool said = j.contains("tie_word_embeddings") && j["tie_word_embeddings"].is_boolean();
    m.tie_word_embeddings = said ? j["tie_word_embeddings"].get<bool>() : listed(type, kHfTiedByDefault);
    decoder_model_part(type, &m);
    return Status();
  }
  if (listed(type, kHfEncoders)) {
    // DistilBertConfig names it activation (gelu unless said).
    const bool distil = type == "distilbert";
    const std::string encoder_act = !distil ? act : text("activation").empty() ? "gelu" : text("activation");
    if (!one_of(encoder_act, {"gelu"})) {
      return Status::error(Code::kUnsupported, "%s: %s '%s': the %s MLP headway runs is GELU (gelu)", path.c_str(),
                           distil ? "activation" : "hidden_act", encoder_act.c_str(), type.c_str());
    }
    if (!text("position_embedding_type").empty() && text("position_embedding_type") != "absolute") {
      return Status::error(Code::kUnsupported, "%s: position_embedding_type '%s': headway runs absolute positions",
                           path.c_str(), text("position_embedding_type").c_str());
    }
    m.norm = NormKind::kLayer;
    m.norm_eps = distil ? 1e-12f : real("layer_norm_eps", 1e-12f);  // DistilBERT's modules fix theirs
    m.mlp = MlpKind::kGelu;
    m.mlp_bias = true;
    m.post_norm = true;
    m.embedding_norm = true;
    // DistilBERT's sinusoidal_pos_embds true fills the same learned table, which its checkpoints
    // hold: read from the file either way.
    HEADWAY_RETURN_IF_ERROR(count("max_position_embeddings", &m.max_positions));
    if (j.contains("type_vocab_size")) HEADWAY_RETURN_IF_ERROR(count("type_vocab_size", &m.type_vocab_size));
    if (type == "roberta") {  // RobertaEmbeddings: positions from padding_idx = pad_token_id (1 unless said)
      uint32_t pad = 1;
      if (j.contains("pad_token_id")) HEADWAY_RETURN_IF_ERROR(count("pad_token_id", &pad));
      m.padding_idx = static_cast<int32_t>(pad);
    }
    return Status();
  }
  return Status::error(
      Code::kUnsupported,
      "%s: model_type '%s' is not one headway runs whole (decoders: llama, mistral, qwen2, qwen3, "
      "smollm3, phi3, olmo2, qwen3_5_text, gemma, gemma2, gemma3_text; encoders: bert, roberta, distilbert); its "
      "attention layers still run through `headway layer`",
      path.c_str(), type.c_str());
}

}  // namespace

// The ids transformers' generate stops at: generation_config.json's eos_token_id beside
// config.json (transformers reads it first), else config.json's; a number or a list of them.
Result<std::vector<int32_t>> ModelFile::eos_ids() const {
  if (parsed_ == nullptr) return Status::error(Code::kFailedPrecondition, "no model file is open");
  std::vector<int32_t> ids;
  if (!parsed_->hf) return ids;  // a GGUF's end tokens are its tokenizer's
  const std::string& config = parsed_->config_path;
  const size_t slash = config.rfind('/');
  const std::string dir = slash == std::string::npos ? "." : config.substr(0, slash);
  for (const std::string& path : {dir + "/generation_config.json", config}) {
    struct stat st {};
    if (stat(path.c_str(), &st) != 0) continue;
    Result<nlohmann::json> read = read_json(path, size_t{16} << 20, "a model's config");
    if (!read.ok()) return read.status();
    const nlohmann::json& j = read.value();
    if (!j.is_object()) return Status::error(Code::kInvalidArgument, "%s: not a JSON object", path.c_str());
    if (!j.contains("eos_token_id") || j["eos_token_id"].is_null()) continue;
    const nlohmann::json& e = j["eos_token_id"];
    const nlohmann::json list = e.is_array() ? e : nlohmann::json::array({e});
    for (const nlohmann::json& id : list) {
      if (!id.is_number_unsigned() || id.get<uint64_t>() > 0x7fffffffu) {
        return Status::error(Code::kInvalidArgument, "%s: eos_token_id holds %s, not a token id", path.c_str(),
                             id.dump().c_str());
      }
      ids.push_back(id.get<int32_t>());
    }
    return ids;
  }
  return ids;
}

Result<Config> ModelFile::hf_config(const char* config_json) {
  Result<Config> attention = load_hf_config(config_json);
  if (!attention.ok()) return attention;
  Config c = attention.value();
  HEADWAY_RETURN_IF_ERROR(hf_model_part(config_json, &c));
  return c;
}

Result<Config> ModelFile::config() const {
  if (parsed_ == nullptr) return Status::error(Code::kFailedPrecondition, "no model file is open");
  const formats::WeightFile& f = parsed_->file;
  if (parsed_->hf) {
    const Result<Config> c = hf_config(parsed_->config_path.c_str());
    if (c.ok()) parsed_->attention = c.value();
    return c;
  }
  const Result<std::string> arch = f.gguf().text("general.architecture");
  if (!arch.ok()) return arch.status();
  bool known = false;
  for (const char* a : kDecoderArchitectures) known = known || arch.value() == a;
  if (!known) {
    return Status::error(Code::kUnsupported,
                         "%s: architecture '%s' is not one headway runs whole (llama, qwen2, qwen3, smollm3, phi3, "
                         "olmo2, gemma, gemma2, gemma3, qwen35: RMSNorm blocks with a gated MLP); its attention layers "
                         "still "
                         "run through `headway layer`",
                         f.path(), arch.value().c_str());
  }
  Result<Config> parsed = f.gguf_config();
  if (!parsed.ok()) return parsed;
  Config c = parsed.value();
  uint64_t rows = 0, cols = 0;
  if (!parsed_->shape(gguf_name(ModelTensor::kEmbedding), &rows, &cols)) {
    return Status::error(Code::kInvalidArgument, "%s: no token_embd.weight (the token embedding)", f.path());
  }
  if (rows == 0 || rows > 0x7fffffffull) {
    return Status::error(Code::kInvalidArgument, "%s: token_embd.weight has %llu rows, not a vocabulary size", f.path(),
                         static_cast<unsigned long long>(rows));
  }
  c.model.vocab_size = static_cast<uint32_t>(rows);
  decoder_model_part(arch.value(), &c.model);
  parsed_->pre_mlp_post_attention = listed(arch.value(), kGgufPreMlpPostAttention);
  // The MLP's width: the gate's rows, or half the fused gate and up's (Phi-3).
  const char* gate = c.model.gate_up_fused ? kGateUpGguf : gguf_name(ModelTensor::kGate);
  if (!parsed_->shape(tensor_name(gate, 0), &rows, &cols)) {
    return Status::error(Code::kUnsupported, "%s: no %s: headway runs decoders with a SwiGLU MLP", f.path(),
                         tensor_name(gate, 0).c_str());
  }
  if (c.model.gate_up_fused && rows % 2 != 0) {
    return Status::error(Code::kInvalidArgument, "%s: %s has %llu rows, not a gate's and an up projection's", f.path(),
                         tensor_name(gate, 0).c_str(), static_cast<unsigned long long>(rows));
  }
  c.model.intermediate_size = static_cast<uint32_t>(c.model.gate_up_fused ? rows / 2 : rows);
  c.model.norm = NormKind::kRms;
  c.model.norm_eps = c.rms_norm_eps;
  c.model.mlp = MlpKind::kSwiGlu;
  if (arch.value().rfind("gemma", 0) == 0) gemma_model_part(arch.value(), false, &c.model);
  c.model.tie_word_embeddings = f.gguf().entry(gguf_name(ModelTensor::kLmHead)) == nullptr;
  parsed_->attention = c;
  return c;
}

namespace {

// Tensor t's name in the file, checked to be there with `shape`.
Result<std::string> checked_name(const ModelFile::Parsed& p, ModelTensor t, uint32_t layer, TensorShape shape) {
  const std::string name = p.name_of(t, layer);
  uint64_t rows = 0, cols = 0;
  if (name.empty() || !p.shape(name, &rows, &cols)) {
    return Status::error(Code::kNotFound, "the file has no tensor %s",
                         name.empty() ? model_tensor_name(t) : name.c_str());
  }
  const uint64_t want_rows = p.fused_half(t) ? uint64_t{2} * shape.rows : shape.rows;  // gate and up
  if (rows != want_rows || cols != shape.cols) {
    return Status::error(Code::kInvalidArgument, "tensor %s is [%llu, %llu], expected [%llu, %u]", name.c_str(),
                         static_cast<unsigned long long>(rows), static_cast<unsigned long long>(cols),
                         static_cast<unsigned long long>(want_rows), shape.cols);
  }
  return name;
}

// Tensor t of `layer` as the file holds it: its rows of a fused tensor (Phi-3's gate and up).
Result<TensorRef> file_tensor(const ModelFile::Parsed& p, ModelTensor t, uint32_t layer) {
  const Result<TensorRef> found = p.file.find(p.name_of(t, layer).c_str());
  if (!found.ok() || !p.fused_half(t)) return found;
  TensorRef v = found.value();
  const uint32_t rows = v.rows / 2;
  v.data = static_cast<const uint8_t*>(v.data) + p.first_row(t) * dtype_row_bytes(v.dtype, v.cols);
  v.rows = rows;
  return v;
}

Result<TensorRef> lend_tensor(void* ctx, ModelTensor t, uint32_t layer, TensorShape shape) {
  const ModelFile::Parsed& p = *static_cast<ModelFile::Parsed*>(ctx);
  const Result<std::string> name = checked_name(p, t, layer, shape);
  if (!name.ok()) return name.status();
  return file_tensor(p, t, layer);
}

Status read_rows(void* ctx, ModelTensor t, uint32_t layer, TensorShape shape, uint64_t first, uint64_t n, float* dst) {
  const ModelFile::Parsed& p = *static_cast<ModelFile::Parsed*>(ctx);
  const Result<std::string> checked = checked_name(p, t, layer, shape);
  if (!checked.ok()) return checked.status();
  const std::string& name = checked.value();
  if (!p.hf) return p.file.gguf().dequantize_rows(name.c_str(), p.first_row(t) + first, n, dst, n * shape.cols);
  const Result<TensorRef> view = file_tensor(p, t, layer);
  if (!view.ok()) return view.status();
  const TensorRef& v = view.value();
  const uint64_t begin = first * shape.cols, count = n * shape.cols;
  switch (v.dtype) {
    case DType::kF32: std::memcpy(dst, static_cast<const float*>(v.data) + begin, count * sizeof(float)); break;
    case DType::kF16: f16_to_f32(static_cast<const uint16_t*>(v.data) + begin, dst, count); break;
    case DType::kBF16: bf16_to_f32(static_cast<const uint16_t*>(v.data) + begin, dst, count); break;
    default:
      return Status::error(Code::kUnsupported, "tensor %s has dtype %s (safetensors weights are f32, f16, bf16)",
                           name.c_str(), dtype_name(v.dtype));
  }
  return Status();
}

Result<LayerWeights> read_attention(void* ctx, uint32_t layer) {
  ModelFile::Parsed& p = *static_cast<ModelFile::Parsed*>(ctx);
  // Borrowed from the mapping in the file's own types (a GGUF's blocks): AttentionLayer keeps them
  // so (weights_in_arena false) or converts them into the arena.
  return formats::load_layer_weights(p.file, p.attention, layer);
}

}  // namespace

Result<ModelFile::SentencePooling> ModelFile::sentence_pooling() const {
  if (parsed_ == nullptr) return Status::error(Code::kFailedPrecondition, "no model file is open");
  SentencePooling out;
  if (!parsed_->hf || parsed_->dir.empty()) return out;
  auto json_of = [&](const char* file, nlohmann::json* j) -> bool {
    const std::string path = parsed_->dir + "/" + file;
    struct stat st {};
    if (stat(path.c_str(), &st) != 0) return false;
    Result<nlohmann::json> read = read_json(path, size_t{1} << 20, "a sentence-transformers file");
    if (!read.ok()) return false;
    *j = read.value();
    return j->is_object() || j->is_array();
  };
  nlohmann::json pooling;
  if (json_of("1_Pooling/config.json", &pooling) && pooling.is_object()) {
    auto on = [&](const char* key) {
      return pooling.contains(key) && pooling[key].is_boolean() && pooling[key].get<bool>();
    };
    if (on("pooling_mode_cls_token")) out.pooling = Pooling::kCls;
    else if (!on("pooling_mode_mean_tokens")) {
      return Status::error(Code::kUnsupported, "%s/1_Pooling/config.json: a pooling mode headway lacks (mean or CLS)",
                           parsed_->dir.c_str());
    }
  }
  nlohmann::json modules;
  if (json_of("modules.json", &modules) && modules.is_array()) {
    out.normalize = false;
    for (const nlohmann::json& m : modules) {
      if (m.is_object() && m.contains("type") && m["type"].is_string() &&
          m["type"].get<std::string>() == "sentence_transformers.models.Normalize") {
        out.normalize = true;
      }
    }
  }
  nlohmann::json bert;
  if (json_of("sentence_bert_config.json", &bert) && bert.is_object() && bert.contains("max_seq_length") &&
      bert["max_seq_length"].is_number_unsigned()) {
    out.max_seq_length = bert["max_seq_length"].get<uint32_t>();
  }
  return out;
}

Result<ModelFile::WeightBytes> ModelFile::weight_bytes() const {
  const Result<Config> got = config();
  if (!got.ok()) return got.status();
  const Config& c = got.value();
  WeightBytes out;
  for (const ModelTensorInfo& info : kModelTensors) {
    if (!model_has_tensor(c, info.tensor)) continue;
    for (uint32_t l = 0; l < (info.per_layer ? c.n_layers : 1); ++l) {
      const Result<TensorRef> t = file_tensor(*parsed_, info.tensor, l);
      if (!t.ok()) return t.status();
      const uint64_t bytes = t.value().bytes();
      out.total += bytes;
      // A token reads one row of each embedding table; the tied head reads the whole table.
      const bool table = info.tensor == ModelTensor::kEmbedding || info.tensor == ModelTensor::kPositionEmbedding ||
                         info.tensor == ModelTensor::kTokenTypeEmbedding;
      out.per_token += !table || (info.tensor == ModelTensor::kEmbedding && c.model.tie_word_embeddings) ? bytes : 0;
    }
  }
  for (uint32_t l = 0; l < c.n_layers; ++l) {
    const Result<LayerWeights> w = formats::load_layer_weights(parsed_->file, parsed_->attention, l);
    if (!w.ok()) return w.status();
    const LayerWeights& v = w.value();
    for (const TensorRef* t :
         {&v.wq,     &v.wk,     &v.wv,    &v.wo,   &v.bq,       &v.bk,    &v.bv,        &v.bo,
          &v.q_norm, &v.k_norm, &v.sinks, &v.wq_a, &v.q_a_norm, &v.wkv_a, &v.kv_a_norm, &v.wkv_b,
          &v.w_qkv,  &v.w_z,    &v.w_b,   &v.w_a,  &v.conv,     &v.a_log, &v.dt_bias,   &v.out_norm}) {
      out.total += t->bytes();
      out.per_token += t->bytes();
    }
  }
  return out;
}

ModelWeightsSource ModelFile::source() {
  ModelWeightsSource s;
  if (parsed_ == nullptr) return s;
  // The attention tensors are checked against the file's own config (read once, here if not yet).
  if (parsed_->attention.d_model == 0) (void)config();
  s.ctx = parsed_;
  s.attention = read_attention;
  s.rows = read_rows;
  s.tensor = lend_tensor;
  return s;
}

}  // namespace headway
