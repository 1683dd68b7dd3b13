#include "runtime/formats/weights_loader.hpp"

#include <cstdio>
#include <cstring>

namespace headway::formats {
namespace {

// Where each LayerWeights member lives in each format; %u is the layer.
struct Slot {
  TensorRef LayerWeights::*member;
  const char* hf;
  const char* gguf;
  enum Rows : uint8_t { kQ, kKv, kModel, kHead, kHeads } rows;  // the out dim (1-D: the length)
  enum Cols : uint8_t { kNone, kInModel, kInQ } cols;           // the in dim; kNone: 1-D
  enum Need : uint8_t { kAlways, kQkvBias, kOBias, kQkNorm, kSinks } need;
  const char* layout;  // for messages
};

constexpr Slot kSlots[] = {
    {&LayerWeights::wq, "model.layers.%u.self_attn.q_proj.weight", "blk.%u.attn_q.weight", Slot::kQ, Slot::kInModel,
     Slot::kAlways, "[n_heads*head_dim, d_model]"},
    {&LayerWeights::wk, "model.layers.%u.self_attn.k_proj.weight", "blk.%u.attn_k.weight", Slot::kKv, Slot::kInModel,
     Slot::kAlways, "[n_kv_heads*head_dim, d_model]"},
    {&LayerWeights::wv, "model.layers.%u.self_attn.v_proj.weight", "blk.%u.attn_v.weight", Slot::kKv, Slot::kInModel,
     Slot::kAlways, "[n_kv_heads*head_dim, d_model]"},
    {&LayerWeights::wo, "model.layers.%u.self_attn.o_proj.weight", "blk.%u.attn_output.weight", Slot::kModel,
     Slot::kInQ, Slot::kAlways, "[d_model, n_heads*head_dim]"},
    {&LayerWeights::bq, "model.layers.%u.self_attn.q_proj.bias", "blk.%u.attn_q.bias", Slot::kQ, Slot::kNone,
     Slot::kQkvBias, "[n_heads*head_dim]"},
    {&LayerWeights::bk, "model.layers.%u.self_attn.k_proj.bias", "blk.%u.attn_k.bias", Slot::kKv, Slot::kNone,
     Slot::kQkvBias, "[n_kv_heads*head_dim]"},
    {&LayerWeights::bv, "model.layers.%u.self_attn.v_proj.bias", "blk.%u.attn_v.bias", Slot::kKv, Slot::kNone,
     Slot::kQkvBias, "[n_kv_heads*head_dim]"},
    {&LayerWeights::bo, "model.layers.%u.self_attn.o_proj.bias", "blk.%u.attn_output.bias", Slot::kModel, Slot::kNone,
     Slot::kOBias, "[d_model]"},
    {&LayerWeights::q_norm, "model.layers.%u.self_attn.q_norm.weight", "blk.%u.attn_q_norm.weight", Slot::kHead,
     Slot::kNone, Slot::kQkNorm, "[head_dim]"},
    {&LayerWeights::k_norm, "model.layers.%u.self_attn.k_norm.weight", "blk.%u.attn_k_norm.weight", Slot::kHead,
     Slot::kNone, Slot::kQkNorm, "[head_dim]"},
    // llama.cpp's converter names gpt-oss's sinks attn_sinks.weight (a .weight suffix HF's lacks).
    {&LayerWeights::sinks, "model.layers.%u.self_attn.sinks", "blk.%u.attn_sinks.weight", Slot::kHeads, Slot::kNone,
     Slot::kSinks, "[n_heads]"},
};

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
  if (file_.size() >= 4 && std::memcmp(file_.data(), "GGUF", 4) == 0) {
    HEADWAY_RETURN_IF_ERROR(gguf_.parse(file_.data(), file_.size(), path));
    format_ = WeightFormat::kGguf;
  } else {
    HEADWAY_RETURN_IF_ERROR(safetensors_.parse(file_.data(), file_.size(), path));
    format_ = WeightFormat::kSafetensors;
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
  const bool gguf = file.format() == WeightFormat::kGguf;
  LayerWeights w;
  for (const Slot& s : kSlots) {
    char name[96];
    std::snprintf(name, sizeof(name), gguf ? s.gguf : s.hf, layer);
    const bool want = wanted(s.need, config);
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
    const uint64_t in = s.cols == Slot::kInModel ? config.d_model : s.cols == Slot::kInQ ? q_width : 0;
    const uint32_t want_rank = s.cols == Slot::kNone ? 1 : 2;
    const bool ok =
        s.cols == Slot::kNone ? (rank == 1 && t->cols == out) : (rank == 2 && t->rows == out && t->cols == in);
    if (!ok) {
      char found[64], expected[64];
      describe(file.format(), rank, t->rows, t->cols, found, sizeof(found));
      if (want_rank == 1) describe(file.format(), 1, 1, out, expected, sizeof(expected));
      else describe(file.format(), 2, out, in, expected, sizeof(expected));
      return Status::error(Code::kInvalidArgument,
                           "%s: tensor '%s' has %s, expected %s (row-major %s with d_model %u, n_heads %u, "
                           "n_kv_heads %u, head_dim %u)",
                           file.path(), name, found, expected, s.layout, config.d_model, config.n_heads,
                           config.kv_heads(), hd);
    }
    w.*s.member = t.value();
  }
  return w;
}

}  // namespace headway::formats
