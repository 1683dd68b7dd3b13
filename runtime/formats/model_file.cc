#include "headway/model_file.hpp"

#include <cstdio>
#include <new>
#include <string>
#include <vector>

#include "runtime/formats/weights_loader.hpp"

namespace headway {

namespace {

// The architectures whose blocks are ModelConfig's (pre-norm RMSNorm, SwiGLU MLP without biases).
constexpr const char* kDecoderArchitectures[] = {"llama", "qwen2", "qwen3"};

// A ModelTensor's GGUF name; %u is the layer.
const char* gguf_name(ModelTensor t) {
  switch (t) {
    case ModelTensor::kEmbedding: return "token_embd.weight";
    case ModelTensor::kAttnNorm: return "blk.%u.attn_norm.weight";
    case ModelTensor::kFfnNorm: return "blk.%u.ffn_norm.weight";
    case ModelTensor::kGate: return "blk.%u.ffn_gate.weight";
    case ModelTensor::kUp: return "blk.%u.ffn_up.weight";
    case ModelTensor::kDown: return "blk.%u.ffn_down.weight";
    case ModelTensor::kFinalNorm: return "output_norm.weight";
    case ModelTensor::kLmHead: return "output.weight";
  }
  return "";
}

std::string tensor_name(const char* pattern, uint32_t layer) {
  char name[96];
  std::snprintf(name, sizeof(name), pattern, layer);
  return name;
}

// The attention tensors of a layer, each dequantized into its own f32 buffer.
struct AttentionSlot {
  TensorRef LayerWeights::*member;
  const char* pattern;
  bool (*wanted)(const Config&);
};
constexpr AttentionSlot kAttentionSlots[] = {
    {&LayerWeights::wq, "blk.%u.attn_q.weight", [](const Config&) { return true; }},
    {&LayerWeights::wk, "blk.%u.attn_k.weight", [](const Config&) { return true; }},
    {&LayerWeights::wv, "blk.%u.attn_v.weight", [](const Config&) { return true; }},
    {&LayerWeights::wo, "blk.%u.attn_output.weight", [](const Config&) { return true; }},
    {&LayerWeights::bq, "blk.%u.attn_q.bias", [](const Config& c) { return c.qkv_bias; }},
    {&LayerWeights::bk, "blk.%u.attn_k.bias", [](const Config& c) { return c.qkv_bias; }},
    {&LayerWeights::bv, "blk.%u.attn_v.bias", [](const Config& c) { return c.qkv_bias; }},
    {&LayerWeights::bo, "blk.%u.attn_output.bias", [](const Config& c) { return c.o_bias; }},
    {&LayerWeights::q_norm, "blk.%u.attn_q_norm.weight", [](const Config& c) { return c.qk_norm; }},
    {&LayerWeights::k_norm, "blk.%u.attn_k_norm.weight", [](const Config& c) { return c.qk_norm; }},
    {&LayerWeights::sinks, "blk.%u.attn_sinks.weight", [](const Config& c) { return c.sinks; }},
};
constexpr size_t kAttentionSlotCount = sizeof(kAttentionSlots) / sizeof(kAttentionSlots[0]);

}  // namespace

struct ModelFile::Parsed {
  formats::WeightFile file;
  std::vector<float> attention[kAttentionSlotCount];  // the layer being loaded, f32

  // rows x cols of a tensor as the file stores it (ne[0] = cols); false when absent.
  bool shape(const std::string& name, uint64_t* rows, uint64_t* cols) const {
    const formats::GgufFile::Entry* e = file.gguf().entry(name.c_str());
    if (e == nullptr) return false;
    *cols = e->ne[0];
    *rows = e->ne[1] * e->ne[2] * e->ne[3];
    return true;
  }
};

ModelFile::ModelFile() = default;
ModelFile::~ModelFile() { delete parsed_; }

Status ModelFile::open(const char* path) {
  delete parsed_;
  parsed_ = new (std::nothrow) Parsed;
  if (parsed_ == nullptr) return Status::error(Code::kInternal, "out of memory opening %s", path);
  HEADWAY_RETURN_IF_ERROR(parsed_->file.open(path));
  if (parsed_->file.format() != formats::WeightFormat::kGguf) {
    return Status::error(Code::kInvalidArgument, "%s is not a GGUF file (a model runs from a GGUF for now)", path);
  }
  return Status();
}

Result<Config> ModelFile::config() const {
  if (parsed_ == nullptr) return Status::error(Code::kFailedPrecondition, "no model file is open");
  const formats::WeightFile& f = parsed_->file;
  const Result<std::string> arch = f.gguf().text("general.architecture");
  if (!arch.ok()) return arch.status();
  bool known = false;
  for (const char* a : kDecoderArchitectures) known = known || arch.value() == a;
  if (!known) {
    return Status::error(Code::kUnsupported,
                         "%s: architecture '%s' is not one headway runs whole (llama, qwen2, qwen3: pre-norm RMSNorm "
                         "blocks with a SwiGLU MLP); its attention layers still run through `headway layer`",
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
  if (!parsed_->shape(tensor_name(gguf_name(ModelTensor::kGate), 0), &rows, &cols)) {
    return Status::error(Code::kUnsupported, "%s: no blk.0.ffn_gate.weight: headway runs decoders with a SwiGLU MLP",
                         f.path());
  }
  c.model.intermediate_size = static_cast<uint32_t>(rows);
  c.model.norm = NormKind::kRms;
  c.model.norm_eps = c.rms_norm_eps;
  c.model.mlp = MlpKind::kSwiGlu;
  c.model.tie_word_embeddings = f.gguf().entry(gguf_name(ModelTensor::kLmHead)) == nullptr;
  return c;
}

namespace {

Status read_rows(void* ctx, ModelTensor t, uint32_t layer, TensorShape shape, uint64_t first, uint64_t n, float* dst) {
  const ModelFile::Parsed& p = *static_cast<ModelFile::Parsed*>(ctx);
  const std::string name = tensor_name(gguf_name(t), layer);
  uint64_t rows = 0, cols = 0;
  if (!p.shape(name, &rows, &cols)) return Status::error(Code::kNotFound, "the file has no tensor %s", name.c_str());
  if (rows != shape.rows || cols != shape.cols) {
    return Status::error(Code::kInvalidArgument, "tensor %s is ne [%llu, %llu], expected ne [%u, %u]", name.c_str(),
                         static_cast<unsigned long long>(cols), static_cast<unsigned long long>(rows), shape.cols,
                         shape.rows);
  }
  return p.file.gguf().dequantize_rows(name.c_str(), first, n, dst, n * shape.cols);
}

Result<LayerWeights> read_attention(void* ctx, uint32_t layer) {
  ModelFile::Parsed& p = *static_cast<ModelFile::Parsed*>(ctx);
  const Result<Config> config = p.file.gguf_config();
  if (!config.ok()) return config.status();
  LayerWeights w;
  for (size_t i = 0; i < kAttentionSlotCount; ++i) {
    const AttentionSlot& slot = kAttentionSlots[i];
    const std::string name = tensor_name(slot.pattern, layer);
    uint64_t rows = 0, cols = 0;
    const bool present = p.shape(name, &rows, &cols);
    if (!slot.wanted(config.value())) continue;
    if (!present) return Status::error(Code::kNotFound, "layer %u: the file has no tensor %s", layer, name.c_str());
    std::vector<float>& buffer = p.attention[i];
    buffer.resize(rows * cols);
    HEADWAY_RETURN_IF_ERROR(p.file.gguf().dequantize_rows(name.c_str(), 0, rows, buffer.data(), buffer.size()));
    w.*slot.member = TensorRef{buffer.data(), DType::kF32, static_cast<uint32_t>(rows), static_cast<uint32_t>(cols)};
  }
  return w;
}

}  // namespace

Result<std::string> ModelFile::chat_template() const {
  if (parsed_ == nullptr) return Status::error(Code::kFailedPrecondition, "no model file is open");
  return parsed_->file.gguf().text("tokenizer.chat_template");
}

ModelWeightsSource ModelFile::source() {
  ModelWeightsSource s;
  if (parsed_ == nullptr) return s;
  s.ctx = parsed_;
  s.attention = read_attention;
  s.rows = read_rows;
  return s;
}

}  // namespace headway
