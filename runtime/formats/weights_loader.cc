#include "runtime/formats/weights_loader.hpp"

#include <cstdio>
#include <cstring>
#include <string>

namespace headway::formats {
namespace {

// Where each LayerWeights member lives under each naming; %u is the layer, nullptr a tensor the
// family does not have. Hugging Face's names follow a prefix that the checkpoint's head class may
// add ("bert.", "roberta.", "distilbert.", "language_model."): WeightFile::open finds it.
struct Slot {
  TensorRef LayerWeights::*member;
  enum Rows : uint8_t { kQ, kKv, kModel, kHead, kHeads } rows;  // the out dim (1-D: the length)
  enum Cols : uint8_t { kNone, kInModel, kInQ } cols;           // the in dim; kNone: 1-D
  enum Need : uint8_t { kAlways, kQkvBias, kOBias, kQkNorm, kSinks } need;
  enum Part : uint8_t { kWhole, kQPart, kKPart, kVPart } part;  // its rows of a fused Q/K/V tensor
  const char* layout;                                           // for messages
  const char* names[kNamingCount];                              // indexed by Naming
};

// Names: decoders (Llama, Qwen, Gemma, gpt-oss...), BERT/RoBERTa/MiniLM/ELECTRA, DistilBERT,
// ModernBERT, GGUF. One slot per four lines, its names in naming order. ModernBERT fuses Q, K and
// V in one tensor (Wqkv, rows q then k then v): each of wq/wk/wv (bq/bk/bv) is its part.
// clang-format off
constexpr Slot kSlots[] = {
    {&LayerWeights::wq, Slot::kQ, Slot::kInModel, Slot::kAlways, Slot::kQPart, "[n_heads*head_dim, d_model]",
     {"model.layers.%u.self_attn.q_proj.weight", "encoder.layer.%u.attention.self.query.weight",
      "transformer.layer.%u.attention.q_lin.weight", "layers.%u.attn.Wqkv.weight",
      "blk.%u.attn_q.weight"}},
    {&LayerWeights::wk, Slot::kKv, Slot::kInModel, Slot::kAlways, Slot::kKPart, "[n_kv_heads*head_dim, d_model]",
     {"model.layers.%u.self_attn.k_proj.weight", "encoder.layer.%u.attention.self.key.weight",
      "transformer.layer.%u.attention.k_lin.weight", "layers.%u.attn.Wqkv.weight",
      "blk.%u.attn_k.weight"}},
    {&LayerWeights::wv, Slot::kKv, Slot::kInModel, Slot::kAlways, Slot::kVPart, "[n_kv_heads*head_dim, d_model]",
     {"model.layers.%u.self_attn.v_proj.weight", "encoder.layer.%u.attention.self.value.weight",
      "transformer.layer.%u.attention.v_lin.weight", "layers.%u.attn.Wqkv.weight",
      "blk.%u.attn_v.weight"}},
    {&LayerWeights::wo, Slot::kModel, Slot::kInQ, Slot::kAlways, Slot::kWhole, "[d_model, n_heads*head_dim]",
     {"model.layers.%u.self_attn.o_proj.weight", "encoder.layer.%u.attention.output.dense.weight",
      "transformer.layer.%u.attention.out_lin.weight", "layers.%u.attn.Wo.weight",
      "blk.%u.attn_output.weight"}},
    {&LayerWeights::bq, Slot::kQ, Slot::kNone, Slot::kQkvBias, Slot::kQPart, "[n_heads*head_dim]",
     {"model.layers.%u.self_attn.q_proj.bias", "encoder.layer.%u.attention.self.query.bias",
      "transformer.layer.%u.attention.q_lin.bias", "layers.%u.attn.Wqkv.bias",
      "blk.%u.attn_q.bias"}},
    {&LayerWeights::bk, Slot::kKv, Slot::kNone, Slot::kQkvBias, Slot::kKPart, "[n_kv_heads*head_dim]",
     {"model.layers.%u.self_attn.k_proj.bias", "encoder.layer.%u.attention.self.key.bias",
      "transformer.layer.%u.attention.k_lin.bias", "layers.%u.attn.Wqkv.bias",
      "blk.%u.attn_k.bias"}},
    {&LayerWeights::bv, Slot::kKv, Slot::kNone, Slot::kQkvBias, Slot::kVPart, "[n_kv_heads*head_dim]",
     {"model.layers.%u.self_attn.v_proj.bias", "encoder.layer.%u.attention.self.value.bias",
      "transformer.layer.%u.attention.v_lin.bias", "layers.%u.attn.Wqkv.bias",
      "blk.%u.attn_v.bias"}},
    {&LayerWeights::bo, Slot::kModel, Slot::kNone, Slot::kOBias, Slot::kWhole, "[d_model]",
     {"model.layers.%u.self_attn.o_proj.bias", "encoder.layer.%u.attention.output.dense.bias",
      "transformer.layer.%u.attention.out_lin.bias", "layers.%u.attn.Wo.bias",
      "blk.%u.attn_output.bias"}},
    {&LayerWeights::q_norm, Slot::kHead, Slot::kNone, Slot::kQkNorm, Slot::kWhole, "[head_dim]",
     {"model.layers.%u.self_attn.q_norm.weight", nullptr,
      nullptr, nullptr,
      "blk.%u.attn_q_norm.weight"}},
    {&LayerWeights::k_norm, Slot::kHead, Slot::kNone, Slot::kQkNorm, Slot::kWhole, "[head_dim]",
     {"model.layers.%u.self_attn.k_norm.weight", nullptr,
      nullptr, nullptr,
      "blk.%u.attn_k_norm.weight"}},
    // llama.cpp's converter names gpt-oss's sinks attn_sinks.weight (a .weight suffix HF's lacks).
    {&LayerWeights::sinks, Slot::kHeads, Slot::kNone, Slot::kSinks, Slot::kWhole, "[n_heads]",
     {"model.layers.%u.self_attn.sinks", nullptr,
      nullptr, nullptr,
      "blk.%u.attn_sinks.weight"}},
};
// clang-format on

const char* naming_text(Naming n) {
  switch (n) {
    case Naming::kHfDecoder: return "Hugging Face decoder";
    case Naming::kHfBert: return "BERT-family";
    case Naming::kHfDistilBert: return "DistilBERT";
    case Naming::kHfModernBert: return "ModernBERT";
    case Naming::kGguf: return "GGUF";
  }
  return "";
}

// Namings whose q, k and v projections are one tensor.
bool fuses_qkv(Naming n) { return n == Naming::kHfModernBert; }

const char* need_text(Slot::Need need, WeightFormat format) {
  const bool gguf = format == WeightFormat::kGguf;
  switch (need) {
    case Slot::kQkvBias: return gguf ? "no q/k/v bias (qkv_bias false)" : "no q/k/v bias (attention_bias false)";
    case Slot::kOBias: return gguf ? "no output bias (o_bias false)" : "no o_proj bias (attention_bias false)";
    case Slot::kQkNorm: return "no q/k norm (qk_norm false)";
    case Slot::kSinks: return "no learned sink logits (sinks false)";
    default: return "";
  }
}

bool wanted(Slot::Need need, const Config& c) {
  switch (need) {
    case Slot::kAlways: return true;
    case Slot::kQkvBias: return c.qkv_bias;
    case Slot::kOBias: return c.o_bias;
    case Slot::kQkNorm: return c.qk_norm;
    case Slot::kSinks: return c.sinks;
  }
  return false;
}

// "shape [96, 64]" (safetensors, row-major) or "ne [64, 96]" (GGUF, fastest dim first).
void describe(WeightFormat format, uint32_t rank, uint64_t rows, uint64_t cols, char* out, size_t size) {
  const bool gguf = format == WeightFormat::kGguf;
  if (rank <= 1) std::snprintf(out, size, "%s [%llu]", gguf ? "ne" : "shape", static_cast<unsigned long long>(cols));
  else if (gguf)
    std::snprintf(out, size, "ne [%llu, %llu]", static_cast<unsigned long long>(cols),
                  static_cast<unsigned long long>(rows));
  else
    std::snprintf(out, size, "shape [%llu, %llu]", static_cast<unsigned long long>(rows),
                  static_cast<unsigned long long>(cols));
}

}  // namespace

Status WeightFile::open(const char* path) {
  format_ = WeightFormat::kNone;
  HEADWAY_RETURN_IF_ERROR(file_.open(path));
  return parse(file_.data(), file_.size(), path);
}

Status WeightFile::parse(const uint8_t* data, uint64_t size, const char* source) {
  format_ = WeightFormat::kNone;
  naming_ = Naming::kHfDecoder;
  source_ = source ? source : "";
  prefix_.clear();
  other_anchor_.clear();
  if (size >= 4 && std::memcmp(data, "GGUF", 4) == 0) {
    HEADWAY_RETURN_IF_ERROR(gguf_.parse(data, size, source));
    format_ = WeightFormat::kGguf;
    naming_ = Naming::kGguf;
    return Status();
  }
  HEADWAY_RETURN_IF_ERROR(safetensors_.parse(data, size, source));
  format_ = WeightFormat::kSafetensors;
  // The layer-0 query projection of each Hugging Face naming, at the end of a name after a '.'.
  bool found = false;
  for (const Naming n : {Naming::kHfDecoder, Naming::kHfBert, Naming::kHfDistilBert, Naming::kHfModernBert}) {
    char anchor[96];
    std::snprintf(anchor, sizeof(anchor), kSlots[0].names[static_cast<size_t>(n)], 0u);
    const size_t a = std::strlen(anchor);
    for (const SafetensorsFile::Entry& e : safetensors_.entries()) {
      const std::string& name = e.name;
      if (name.size() < a || name.compare(name.size() - a, a, anchor) != 0) continue;
      const size_t p = name.size() - a;
      if (p > 0 && name[p - 1] != '.') continue;
      if (found) {
        if (other_anchor_.empty()) other_anchor_ = name;
        continue;
      }
      found = true;
      naming_ = n;
      prefix_ = name.substr(0, p);
    }
  }
  return Status();
}

Result<TensorRef> WeightFile::find(const char* name, uint32_t* rank) const {
  switch (format_) {
    case WeightFormat::kSafetensors: return safetensors_.find(name, rank);
    case WeightFormat::kGguf: return gguf_.find(name, rank);
    default: return Status::error(Code::kFailedPrecondition, "no weight file is open");
  }
}

bool WeightFile::has(const char* name) const {
  switch (format_) {
    case WeightFormat::kSafetensors: return safetensors_.entry(name) != nullptr;
    case WeightFormat::kGguf: return gguf_.entry(name) != nullptr;
    default: return false;
  }
}

Result<Config> WeightFile::gguf_config() const {
  if (format_ != WeightFormat::kGguf) {
    return Status::error(Code::kInvalidArgument, "%s is not a GGUF file: give its config.json", path());
  }
  Result<Config> config = gguf_.config();
  if (!config.ok()) return config;
  Config c = config.value();
  if (has("blk.0.attn_q.bias")) c.qkv_bias = true;
  if (has("blk.0.attn_output.bias")) c.o_bias = true;
  if (has("blk.0.attn_q_norm.weight")) c.qk_norm = true;
  if (has("blk.0.attn_sinks.weight")) c.sinks = true;
  // Llama 3.1/3.2's rescaled frequencies travel as per-pair factors in this tensor, without the
  // rope_scaling parameters headway computes them from: planned, and refused at run time.
  if (has("rope_freqs.weight") && c.rope.style != RopeStyle::kNone) c.rope.scaling = RopeScaling::kOther;
  return c;
}

Result<LayerWeights> load_layer_weights(const WeightFile& file, const Config& config, uint32_t layer) {
  if (file.format() == WeightFormat::kNone) {
    return Status::error(Code::kFailedPrecondition, "no weight file is open");
  }
  HEADWAY_RETURN_IF_ERROR(validate(config));
  if (layer >= config.n_layers) {
    return Status::error(Code::kOutOfRange, "layer %u is past the config's %u layer%s (num_hidden_layers)", layer,
                         config.n_layers, config.n_layers == 1 ? "" : "s");
  }
  const uint32_t hd = config.head_size();
  const uint64_t q_width = uint64_t{config.n_heads} * hd;
  const uint64_t kv_width = uint64_t{config.kv_heads()} * hd;
  if (!file.ambiguous_anchor().empty()) {
    char anchor[96];
    std::snprintf(anchor, sizeof(anchor), kSlots[0].names[static_cast<size_t>(file.naming())], 0u);
    return Status::error(Code::kUnsupported,
                         "%s: more than one model in the file ('%s%s' and '%s'): headway cannot tell which "
                         "attention to run; save the language model's tensors alone",
                         file.path(), file.name_prefix().c_str(), anchor, file.ambiguous_anchor().c_str());
  }
  LayerWeights w;
  for (size_t slot = 0; slot < sizeof(kSlots) / sizeof(kSlots[0]); ++slot) {
    const Slot& s = kSlots[slot];
    const char* pattern = s.names[static_cast<size_t>(file.naming())];
    const bool want = wanted(s.need, config);
    if (pattern == nullptr) {
      if (!want) continue;
      return Status::error(Code::kInvalidArgument, "%s: the config asks for %s, which %s models do not have",
                           file.path(),
                           s.need == Slot::kQkNorm  ? "q/k norms (qk_norm)"
                           : s.need == Slot::kSinks ? "learned sink logits (sinks)"
                                                    : "a tensor",
                           naming_text(file.naming()));
    }
    char local[96];
    std::snprintf(local, sizeof(local), pattern, layer);
    const std::string full = file.name_prefix() + local;
    const char* name = full.c_str();
    if (!want) {
      if (file.has(name)) {
        return Status::error(Code::kInvalidArgument,
                             "%s: tensor '%s' is in the file, but the config has %s; fix the config to use it",
                             file.path(), name, need_text(s.need, file.format()));
      }
      continue;
    }
    uint32_t rank = 0;
    const Result<TensorRef> t = file.find(name, &rank);
    if (!t.ok()) {
      if (t.status().code() == Code::kNotFound && s.need != Slot::kAlways) {
        return Status::error(Code::kNotFound, "%s: no tensor '%s', which the config's %s needs", file.path(), name,
                             s.need == Slot::kQkNorm  ? "qk_norm"
                             : s.need == Slot::kOBias ? "o_bias"
                             : s.need == Slot::kSinks ? "sinks"
                                                      : "qkv_bias");
      }
      return t.status();
    }
    const uint64_t out = s.rows == Slot::kQ       ? q_width
                         : s.rows == Slot::kKv    ? kv_width
                         : s.rows == Slot::kModel ? config.d_model
                         : s.rows == Slot::kHeads ? config.n_heads
                                                  : hd;
    // A fused tensor holds q, k and v rows in that order; this slot takes its part.
    const bool fused = fuses_qkv(file.naming()) && s.part != Slot::kWhole;
    const uint64_t tensor_out = fused ? q_width + 2 * kv_width : out;
    const uint64_t in = s.cols == Slot::kInModel ? config.d_model : s.cols == Slot::kInQ ? q_width : 0;
    const uint32_t want_rank = s.cols == Slot::kNone ? 1 : 2;
    const bool ok = s.cols == Slot::kNone ? (rank == 1 && t->cols == tensor_out)
                                          : (rank == 2 && t->rows == tensor_out && t->cols == in);
    if (!ok) {
      char found[64], expected[64];
      describe(file.format(), rank, t->rows, t->cols, found, sizeof(found));
      if (want_rank == 1) describe(file.format(), 1, 1, tensor_out, expected, sizeof(expected));
      else describe(file.format(), 2, tensor_out, in, expected, sizeof(expected));
      return Status::error(Code::kInvalidArgument,
                           "%s: tensor '%s' has %s, expected %s (row-major %s%s with d_model %u, n_heads %u, "
                           "n_kv_heads %u, head_dim %u)",
                           file.path(), name, found, expected, fused ? "q, k and v rows of " : "", s.layout,
                           config.d_model, config.n_heads, config.kv_heads(), hd);
    }
    TensorRef r = t.value();
    if (s.cols == Slot::kNone && dtype_is_block(r.dtype)) {
      return Status::error(Code::kUnsupported, "%s: tensor '%s' is %s; headway reads biases, norms and sinks in %s",
                           file.path(), name, dtype_name(r.dtype), kPlannedWeightDTypeNames);
    }
    if (fused) {
      const uint64_t first = s.part == Slot::kQPart ? 0 : s.part == Slot::kKPart ? q_width : q_width + kv_width;
      const uint64_t row_bytes = s.cols == Slot::kNone ? dtype_bytes(r.dtype) : dtype_row_bytes(r.dtype, r.cols);
      r.data = static_cast<const uint8_t*>(r.data) + first * row_bytes;
      if (s.cols == Slot::kNone) r.cols = static_cast<uint32_t>(out);
      else r.rows = static_cast<uint32_t>(out);
    }
    w.*s.member = r;
  }
  return w;
}

}  // namespace headway::formats
