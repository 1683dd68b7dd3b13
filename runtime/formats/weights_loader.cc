#include "runtime/formats/weights_loader.hpp"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>

#include "runtime/formats/file_bytes.hpp"
#include "runtime/formats/gguf_gemma4.hpp"

namespace headway::formats {
namespace {

// Where each LayerWeights member lives under each naming; %u is the layer, nullptr a tensor the
// family does not have. Hugging Face's names follow a prefix that the checkpoint's head class may
// add ("bert.", "roberta.", "distilbert.", "language_model."): WeightFile::open finds it.
struct Slot {
  TensorRef LayerWeights::*member;
  // The out dim (1-D: the length); kQNorm, kKNorm: Config::q_norm_width(), k_norm_width().
  enum Rows : uint8_t { kQ, kKv, kModel, kQNorm, kKNorm, kHeads } rows;
  enum Cols : uint8_t { kNone, kInModel, kInQ } cols;                                   // the in dim; kNone: 1-D
  enum Need : uint8_t { kAlways, kQkvBias, kOBias, kQkNorm, kSinks, kV, kVBias } need;  // kV: unless k_eq_v
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
    {&LayerWeights::wv, Slot::kKv, Slot::kInModel, Slot::kV, Slot::kVPart, "[n_kv_heads*head_dim, d_model]",
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
    {&LayerWeights::bv, Slot::kKv, Slot::kNone, Slot::kVBias, Slot::kVPart, "[n_kv_heads*head_dim]",
     {"model.layers.%u.self_attn.v_proj.bias", "encoder.layer.%u.attention.self.value.bias",
      "transformer.layer.%u.attention.v_lin.bias", "layers.%u.attn.Wqkv.bias",
      "blk.%u.attn_v.bias"}},
    {&LayerWeights::bo, Slot::kModel, Slot::kNone, Slot::kOBias, Slot::kWhole, "[d_model]",
     {"model.layers.%u.self_attn.o_proj.bias", "encoder.layer.%u.attention.output.dense.bias",
      "transformer.layer.%u.attention.out_lin.bias", "layers.%u.attn.Wo.bias",
      "blk.%u.attn_output.bias"}},
    {&LayerWeights::q_norm, Slot::kQNorm, Slot::kNone, Slot::kQkNorm, Slot::kWhole, "[head_dim]",
     {"model.layers.%u.self_attn.q_norm.weight", nullptr,
      nullptr, nullptr,
      "blk.%u.attn_q_norm.weight"}},
    {&LayerWeights::k_norm, Slot::kKNorm, Slot::kNone, Slot::kQkNorm, Slot::kWhole, "[head_dim]",
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

// Where a multimodal checkpoint keeps its decoder, in place of a decoder name's "model.".
constexpr const char* kLanguageModel = "model.language_model.";
// A Gated DeltaNet layer's input projection (Hugging Face naming, %u the layer).
constexpr const char* kGatedDeltaAnchor = "model.layers.%u.linear_attn.in_proj_qkv.weight";

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

// Namings whose q, k and v projections are always one tensor.
bool fuses_qkv(Naming n) { return n == Naming::kHfModernBert; }

// The one tensor (weight, bias) that holds q, k and v rows in that order where a file has it in
// place of the three (Phi-3's qkv_proj; llama.cpp's attn_qkv for Phi-3, BLOOM, MPT), by naming.
// clang-format off
constexpr const char* kFusedQkv[kNamingCount][2] = {
    {"model.layers.%u.self_attn.qkv_proj.weight", "model.layers.%u.self_attn.qkv_proj.bias"},
    {nullptr, nullptr},
    {nullptr, nullptr},
    {nullptr, nullptr},
    {"blk.%u.attn_qkv.weight", "blk.%u.attn_qkv.bias"},
};
// clang-format on

const char* need_text(Slot::Need need, WeightFormat format) {
  const bool gguf = format == WeightFormat::kGguf;
  switch (need) {
    case Slot::kQkvBias: return gguf ? "no q/k/v bias (qkv_bias false)" : "no q/k/v bias (attention_bias false)";
    case Slot::kOBias: return gguf ? "no output bias (o_bias false)" : "no o_proj bias (attention_bias false)";
    case Slot::kQkNorm: return "no q/k norm (qk_norm false)";
    case Slot::kSinks: return "no learned sink logits (sinks false)";
    case Slot::kV:
    case Slot::kVBias: return "V from K's projection (k_eq_v)";
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
    case Slot::kV: return !c.k_eq_v;
    case Slot::kVBias: return c.qkv_bias && !c.k_eq_v;
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
  const size_t n = path != nullptr ? std::strlen(path) : 0;
  if (n >= 11 && std::strcmp(path + n - 11, ".index.json") == 0) return open_index(path);
  HEADWAY_RETURN_IF_ERROR(file_.open(path));
  return parse(file_.data(), file_.size(), path);
}

Status WeightFile::parse(const uint8_t* data, uint64_t size, const char* source) {
  format_ = WeightFormat::kNone;
  naming_ = Naming::kHfDecoder;
  source_ = source ? source : "";
  prefix_.clear();
  prefix_replaces_model_ = false;
  other_anchor_.clear();
  shards_.clear();
  index_.clear();
  if (size >= 4 && std::memcmp(data, "GGUF", 4) == 0) {
    HEADWAY_RETURN_IF_ERROR(gguf_.parse(data, size, source));
    format_ = WeightFormat::kGguf;
    naming_ = Naming::kGguf;
    return Status();
  }
  shards_.resize(1);
  HEADWAY_RETURN_IF_ERROR(shards_[0].parse(data, size, source));
  format_ = WeightFormat::kSafetensors;
  find_naming();
  return Status();
}

Status WeightFile::open_index(const char* path) {
  naming_ = Naming::kHfDecoder;
  source_ = path;
  prefix_.clear();
  prefix_replaces_model_ = false;
  other_anchor_.clear();
  shards_.clear();
  index_.clear();
  file_.close();
  Result<FileBytes> bytes = read_file(path, size_t{64} << 20, "a safetensors index");
  if (!bytes.ok()) return bytes.status();
  const std::vector<uint8_t>& b = bytes.value().bytes;
  Result<SafetensorsIndex> index = parse_safetensors_index(reinterpret_cast<const char*>(b.data()), b.size(), path);
  if (!index.ok()) return index.status();
  const std::string dir = source_.find('/') == std::string::npos ? "" : source_.substr(0, source_.rfind('/') + 1);
  shards_.resize(index.value().shards.size());
  for (size_t i = 0; i < shards_.size(); ++i) {
    const std::string& shard = index.value().shards[i];
    const Status s = shards_[i].open((dir + shard).c_str());
    if (!s.ok()) {
      shards_.clear();
      return Status::error(s.code() == Code::kNotFound ? Code::kNotFound : Code::kDataLoss, "%s: shard %s: %s", path,
                           shard.c_str(), s.message());
    }
  }
  for (const SafetensorsIndex::Tensor& t : index.value().tensors) {
    if (shards_[t.shard].entry(t.name.c_str()) == nullptr) {
      const std::string shard = index.value().shards[t.shard];
      shards_.clear();
      return Status::error(Code::kDataLoss, "%s: weight_map puts tensor '%s' in %s, which has no such tensor", path,
                           t.name.c_str(), shard.c_str());
    }
  }
  index_ = std::move(index.value().tensors);
  format_ = WeightFormat::kSafetensors;
  find_naming();
  return Status();
}

const SafetensorsFile* WeightFile::shard_of(const char* name) const {
  if (format_ != WeightFormat::kSafetensors) return nullptr;
  if (index_.empty()) return &shards_[0];
  const auto it = std::lower_bound(
      index_.begin(), index_.end(), name,
      [](const SafetensorsIndex::Tensor& t, const char* n) { return std::strcmp(t.name.c_str(), n) < 0; });
  return it != index_.end() && it->name == name ? &shards_[it->shard] : nullptr;
}

// The layer-0 query projection of each Hugging Face naming, at the end of a name after a '.'.
void WeightFile::find_naming() {
  bool found = false;
  // A hybrid decoder whose layer 0 is a Gated DeltaNet layer (Qwen3.5) holds its projection there;
  // a multimodal checkpoint (Qwen3.5's) keeps its decoder under model.language_model.
  const struct {
    Naming naming;
    const char* pattern;
    bool language_model;
  } anchors[] = {{Naming::kHfDecoder, kSlots[0].names[0], false},   {Naming::kHfDecoder, kGatedDeltaAnchor, false},
                 {Naming::kHfDecoder, kSlots[0].names[0], true},    {Naming::kHfDecoder, kGatedDeltaAnchor, true},
                 {Naming::kHfBert, kSlots[0].names[1], false},      {Naming::kHfDistilBert, kSlots[0].names[2], false},
                 {Naming::kHfModernBert, kSlots[0].names[3], false}};
  for (const auto& kind : anchors) {
    // Plain names, not structured bindings: the lambda below captures them (clang 14 cannot).
    const Naming n = kind.naming;
    const char* pattern = kind.pattern;
    const bool language_model = kind.language_model;
    char anchor[96];
    std::snprintf(anchor, sizeof(anchor), pattern, 0u);
    const std::string in_file = language_model ? std::string(kLanguageModel) + (anchor + 6) : anchor;  // past "model."
    std::snprintf(anchor, sizeof(anchor), "%s", in_file.c_str());
    const size_t a = std::strlen(anchor);
    auto visit = [&](const std::string& name) {
      if (name.size() < a || name.compare(name.size() - a, a, anchor) != 0) return;
      const size_t p = name.size() - a;
      if (p > 0 && name[p - 1] != '.') return;
      if (found) {
        if (other_anchor_.empty()) other_anchor_ = name;
        return;
      }
      found = true;
      naming_ = n;
      prefix_ = name.substr(0, p) + (language_model ? kLanguageModel : "");
      prefix_replaces_model_ = language_model;
    };
    if (index_.empty()) {
      for (const SafetensorsFile::Entry& e : shards_[0].entries()) visit(e.name);
    } else {
      for (const SafetensorsIndex::Tensor& t : index_) visit(t.name);
    }
  }
}

std::string WeightFile::tensor_name(const std::string& name) const {
  if (format_ == WeightFormat::kGguf) return name;
  if (!prefix_replaces_model_) return prefix_ + name;
  return name.compare(0, 6, "model.") == 0 ? prefix_ + name.substr(6) : name;
}

Result<TensorRef> WeightFile::find(const char* name, uint32_t* rank) const {
  switch (format_) {
    case WeightFormat::kSafetensors: {
      const SafetensorsFile* shard = shard_of(name);
      if (shard == nullptr) return Status::error(Code::kNotFound, "%s: no tensor '%s' in its weight_map", path(), name);
      return shard->find(name, rank);
    }
    case WeightFormat::kGguf: return gguf_.find(name, rank);
    default: return Status::error(Code::kFailedPrecondition, "no weight file is open");
  }
}

bool WeightFile::has(const char* name) const {
  switch (format_) {
    case WeightFormat::kSafetensors: {
      const SafetensorsFile* shard = shard_of(name);
      return shard != nullptr && shard->entry(name) != nullptr;
    }
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
  // The first attention layer's tensors say (a hybrid's layer 0 may be a Gated DeltaNet layer).
  const uint32_t first = c.first_attention_layer();
  const auto has_first = [&](const char* suffix) { return has(("blk." + std::to_string(first) + suffix).c_str()); };
  if (has_first(".attn_q.bias") || has_first(".attn_qkv.bias")) c.qkv_bias = true;
  if (has_first(".attn_output.bias")) c.o_bias = true;
  if (has_first(".attn_q_norm.weight")) c.qk_norm = true;
  if (has_first(".attn_sinks.weight")) c.sinks = true;
  // Gemma 4: proportional RoPE's per-pair factors; V from K where a full layer has no attn_v.
  if (c.rope.scaling == RopeScaling::kProportional && has("rope_freqs.weight")) {
    const Result<TensorRef> t = find("rope_freqs.weight");
    if (!t.ok()) return t.status();
    std::vector<float> factors(uint64_t{t->rows} * t->cols);
    HEADWAY_RETURN_IF_ERROR(gguf_.dequantize_rows("rope_freqs.weight", 0, t->rows, factors.data(), factors.size()));
    HEADWAY_RETURN_IF_ERROR(
        read_proportional_factors(factors.data(), static_cast<uint32_t>(factors.size()), path(), &c));
  } else if (has("rope_freqs.weight") && c.rope.style != RopeStyle::kNone) {
    // Llama 3.1/3.2's rescaled frequencies travel as per-pair factors in this tensor, without the
    // rope_scaling parameters headway computes them from: planned, and refused at run time.
    c.rope.scaling = RopeScaling::kOther;
  }
  for (uint32_t i = 0; c.layers.full_head_dim != 0 && i < c.n_layers; ++i) {
    if (c.layer_slides(i)) continue;
    const std::string blk = "blk." + std::to_string(i);
    c.layers.full_k_eq_v = has((blk + ".attn_k.weight").c_str()) && !has((blk + ".attn_v.weight").c_str());
    break;
  }
  // Phi-3's LongRoPE: the short and long factors as tensors, the rest in the kv section.
  if (has("rope_factors_long.weight") && has("rope_factors_short.weight") && c.rope.style != RopeStyle::kNone) {
    RopeConfig& r = c.rope;
    r.scaling = RopeScaling::kLongRope;
    r.factor = static_cast<float>(static_cast<double>(c.max_seq) / r.original_max_seq);
    const struct {
      const char* name;
      float* out;
    } tables[] = {{"rope_factors_short.weight", r.short_factor}, {"rope_factors_long.weight", r.long_factor}};
    for (const auto& [name, out] : tables) {
      const Result<TensorRef> t = find(name);
      if (!t.ok()) return t.status();
      if (t->rows != 1 || t->cols > kMaxLongRopePairs) {
        return Status::error(Code::kInvalidArgument, "%s: tensor '%s' is [%u, %u], expected up to %u factors", path(),
                             name, t->rows, t->cols, kMaxLongRopePairs);
      }
      r.longrope_pairs = t->cols;  // validate() checks it against the rotated pairs
      HEADWAY_RETURN_IF_ERROR(gguf_.dequantize_rows(name, 0, 1, out, kMaxLongRopePairs));
    }
  }
  return c;
}

namespace {

// Layer `layer`'s tensor of a naming's pattern (%u the layer), as the file names it.
std::string layer_tensor(const WeightFile& file, const char* pattern, uint32_t layer) {
  char local[96];
  std::snprintf(local, sizeof(local), pattern, layer);
  return file.tensor_name(local);
}

// Tensor `name` of `rank` dimensions (the MLA and Gated DeltaNet tensors, whose shapes the layer
// checks), or the error naming it.
Result<TensorRef> find_of_rank(const WeightFile& file, const std::string& name, uint32_t rank) {
  uint32_t got = 0;
  const Result<TensorRef> t = file.find(name.c_str(), &got);
  if (!t.ok()) return t.status();
  if (got != rank) {
    return Status::error(Code::kInvalidArgument, "%s: tensor '%s' has %u dimensions, expected %u", file.path(),
                         name.c_str(), got, rank);
  }
  return t;
}

// Multi-head latent attention's tensors (LayerWeights' MLA members) by their Hugging Face and
// llama.cpp names; the shapes are AttentionLayer's to check (check_mla_weights), the presence and
// rank here.
struct MlaSlot {
  TensorRef LayerWeights::*member;
  bool (*wanted)(const MlaShape&);
  bool vector;
  const char* hf;
  const char* gguf;
};
bool always(const MlaShape&) { return true; }
bool q_lora(const MlaShape& m) { return m.q_lora_rank != 0; }
constexpr MlaSlot kMlaSlots[] = {
    {&LayerWeights::wq_a, q_lora, false, "model.layers.%u.self_attn.q_a_proj.weight", "blk.%u.attn_q_a.weight"},
    {&LayerWeights::q_a_norm, q_lora, true, "model.layers.%u.self_attn.q_a_layernorm.weight",
     "blk.%u.attn_q_a_norm.weight"},
    {&LayerWeights::wkv_a, always, false, "model.layers.%u.self_attn.kv_a_proj_with_mqa.weight",
     "blk.%u.attn_kv_a_mqa.weight"},
    {&LayerWeights::kv_a_norm, always, true, "model.layers.%u.self_attn.kv_a_layernorm.weight",
     "blk.%u.attn_kv_a_norm.weight"},
    {&LayerWeights::wkv_b, always, false, "model.layers.%u.self_attn.kv_b_proj.weight", "blk.%u.attn_kv_b.weight"},
    {&LayerWeights::wo, always, false, "model.layers.%u.self_attn.o_proj.weight", "blk.%u.attn_output.weight"},
};

Result<LayerWeights> load_mla_weights(const WeightFile& file, const Config& config, uint32_t layer) {
  const bool gguf = file.naming() == Naming::kGguf;
  if (file.naming() != Naming::kHfDecoder && !gguf) {
    return Status::error(Code::kInvalidArgument, "%s: multi-head latent attention's tensors are a decoder's, not %s",
                         file.path(), naming_text(file.naming()));
  }
  const auto name_of = [&](const char* pattern) { return layer_tensor(file, pattern, layer); };
  LayerWeights w;
  auto load = [&](TensorRef LayerWeights::*member, const std::string& name, bool vector) -> Status {
    const Result<TensorRef> t = find_of_rank(file, name, vector ? 1 : 2);
    if (!t.ok()) return t.status();
    w.*member = t.value();
    return Status();
  };
  for (const MlaSlot& s : kMlaSlots) {
    if (!s.wanted(config.mla)) continue;
    if (gguf && s.member == &LayerWeights::wkv_b && !file.has(name_of(s.gguf).c_str()) &&
        file.has(name_of("blk.%u.attn_k_b.weight").c_str())) {
      return Status::error(Code::kUnsupported,
                           "%s: layer %u's kv_b_proj is split into attn_k_b and attn_v_b (llama.cpp's newer "
                           "converter); headway reads the one attn_kv_b tensor",
                           file.path(), layer);
    }
    HEADWAY_RETURN_IF_ERROR(load(s.member, name_of(gguf ? s.gguf : s.hf), s.vector));
  }
  const char* q = config.mla.q_lora_rank
                      ? (gguf ? "blk.%u.attn_q_b.weight" : "model.layers.%u.self_attn.q_b_proj.weight")
                      : (gguf ? "blk.%u.attn_q.weight" : "model.layers.%u.self_attn.q_proj.weight");
  HEADWAY_RETURN_IF_ERROR(load(&LayerWeights::wq, name_of(q), false));
  return w;
}

// A Gated DeltaNet layer's tensors (LayerKinds::linear) by their Hugging Face names (Qwen3.5)
// and llama.cpp's (qwen35: A stored as −exp(A_log), ssm_a); the shapes are AttentionLayer's to
// check (check_gated_delta_weights). conv1d is [conv_width, 1, conv_kernel] in a safetensors
// file, read as [conv_width, conv_kernel] (a GGUF's is 2-D already).
struct GatedDeltaSlot {
  TensorRef LayerWeights::*hf_member;
  TensorRef LayerWeights::*gguf_member;
  uint32_t hf_rank, gguf_rank;
  const char* hf;
  const char* gguf;
};
constexpr GatedDeltaSlot kGatedDeltaSlots[] = {
    {&LayerWeights::w_qkv, &LayerWeights::w_qkv, 2, 2, kGatedDeltaAnchor, "blk.%u.attn_qkv.weight"},
    {&LayerWeights::w_z, &LayerWeights::w_z, 2, 2, "model.layers.%u.linear_attn.in_proj_z.weight",
     "blk.%u.attn_gate.weight"},
    {&LayerWeights::w_b, &LayerWeights::w_b, 2, 2, "model.layers.%u.linear_attn.in_proj_b.weight",
     "blk.%u.ssm_beta.weight"},
    {&LayerWeights::w_a, &LayerWeights::w_a, 2, 2, "model.layers.%u.linear_attn.in_proj_a.weight",
     "blk.%u.ssm_alpha.weight"},
    {&LayerWeights::conv, &LayerWeights::conv, 3, 2, "model.layers.%u.linear_attn.conv1d.weight",
     "blk.%u.ssm_conv1d.weight"},
    {&LayerWeights::a_log, &LayerWeights::a_neg, 1, 1, "model.layers.%u.linear_attn.A_log", "blk.%u.ssm_a"},
    {&LayerWeights::dt_bias, &LayerWeights::dt_bias, 1, 1, "model.layers.%u.linear_attn.dt_bias", "blk.%u.ssm_dt.bias"},
    {&LayerWeights::out_norm, &LayerWeights::out_norm, 1, 1, "model.layers.%u.linear_attn.norm.weight",
     "blk.%u.ssm_norm.weight"},
    {&LayerWeights::wo, &LayerWeights::wo, 2, 2, "model.layers.%u.linear_attn.out_proj.weight",
     "blk.%u.ssm_out.weight"},
};

Result<LayerWeights> load_gated_delta_weights(const WeightFile& file, uint32_t layer) {
  const bool gguf = file.naming() == Naming::kGguf;
  if (file.naming() != Naming::kHfDecoder && !gguf) {
    return Status::error(Code::kUnsupported,
                         "%s: layer %u is a Gated DeltaNet layer, whose tensors are a decoder's (linear_attn.*), not "
                         "%s",
                         file.path(), layer, naming_text(file.naming()));
  }
  if (file.has(layer_tensor(file, "model.layers.%u.linear_attn.in_proj_qkvz.weight", layer).c_str())) {
    return Status::error(Code::kUnsupported,
                         "%s: layer %u holds q, k, v and z in one interleaved in_proj_qkvz (Qwen3-Next's layout), "
                         "which headway does not read yet; Qwen3.5's in_proj_qkv and in_proj_z it does",
                         file.path(), layer);
  }
  LayerWeights w;
  for (const GatedDeltaSlot& s : kGatedDeltaSlots) {
    const Result<TensorRef> t =
        find_of_rank(file, layer_tensor(file, gguf ? s.gguf : s.hf, layer), gguf ? s.gguf_rank : s.hf_rank);
    if (!t.ok()) return t.status();
    w.*(gguf ? s.gguf_member : s.hf_member) = t.value();
  }
  return w;
}

}  // namespace

Result<LayerWeights> load_layer_weights(const WeightFile& file, const Config& model, uint32_t layer) {
  if (file.format() == WeightFormat::kNone) {
    return Status::error(Code::kFailedPrecondition, "no weight file is open");
  }
  HEADWAY_RETURN_IF_ERROR(validate_layer(model, layer));
  const Config config = model.layer_alone(layer);  // its own head shape (Gemma 4's full layers)
  if (config.layer_is_linear(0)) return load_gated_delta_weights(file, layer);
  if (config.is_mla()) return load_mla_weights(file, config, layer);
  const uint32_t hd = config.head_size();
  const uint64_t q_width = uint64_t{config.n_heads} * hd;
  const uint64_t kv_width = uint64_t{config.kv_heads()} * hd;
  const uint64_t q_rows = config.output_gate ? 2 * q_width : q_width;  // each head's query, then its gate
  if (!file.ambiguous_anchor().empty()) {
    char anchor[96];
    std::snprintf(anchor, sizeof(anchor), kSlots[0].names[static_cast<size_t>(file.naming())], 0u);
    return Status::error(Code::kUnsupported,
                         "%s: more than one model in the file ('%s%s' and '%s'): headway cannot tell which "
                         "attention to run; save the language model's tensors alone",
                         file.path(), file.name_prefix().c_str(), anchor, file.ambiguous_anchor().c_str());
  }
  // A layer that shares KV has no K/V tensors of its own to read (Gemma 3n's files hold unused ones).
  const bool shares_kv = model.layer_shares_kv(layer);
  LayerWeights w;
  for (size_t slot = 0; slot < sizeof(kSlots) / sizeof(kSlots[0]); ++slot) {
    const Slot& s = kSlots[slot];
    if (shares_kv && (s.rows == Slot::kKv || s.rows == Slot::kKNorm)) continue;
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
    const auto name_in_file = [&](const char* p) { return layer_tensor(file, p, layer); };
    std::string full = name_in_file(pattern);
    // A fused tensor holds q, k and v rows in that order; this slot takes its part.
    bool fused = fuses_qkv(file.naming()) && s.part != Slot::kWhole;
    const char* fused_pattern = kFusedQkv[static_cast<size_t>(file.naming())][s.cols == Slot::kNone ? 1 : 0];
    if (s.part != Slot::kWhole && !fused && fused_pattern != nullptr && !file.has(full.c_str()) &&
        file.has(name_in_file(fused_pattern).c_str())) {
      full = name_in_file(fused_pattern);
      fused = true;
    }
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
      if (t.status().code() == Code::kNotFound && s.need != Slot::kAlways && s.need != Slot::kV) {
        return Status::error(Code::kNotFound, "%s: no tensor '%s', which the config's %s needs", file.path(), name,
                             s.need == Slot::kQkNorm  ? "qk_norm"
                             : s.need == Slot::kOBias ? "o_bias"
                             : s.need == Slot::kSinks ? "sinks"
                                                      : "qkv_bias");
      }
      return t.status();
    }
    const uint64_t out = s.rows == Slot::kQ       ? q_rows
                         : s.rows == Slot::kKv    ? kv_width
                         : s.rows == Slot::kModel ? config.d_model
                         : s.rows == Slot::kHeads ? config.n_heads
                         : s.rows == Slot::kQNorm ? config.q_norm_width()
                                                  : config.k_norm_width();
    const uint64_t tensor_out = fused ? q_rows + 2 * kv_width : out;
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
                           "n_kv_heads %u, head_dim %u%s)",
                           file.path(), name, found, expected, fused ? "q, k and v rows of " : "", s.layout,
                           config.d_model, config.n_heads, config.kv_heads(), hd,
                           config.output_gate && s.rows == Slot::kQ ? "; each head's query and gate rows" : "");
    }
    TensorRef r = t.value();
    if (s.cols == Slot::kNone && dtype_is_block(r.dtype)) {
      return Status::error(Code::kUnsupported, "%s: tensor '%s' is %s; headway reads biases, norms and sinks in %s",
                           file.path(), name, dtype_name(r.dtype), kPlannedWeightDTypeNames);
    }
    if (fused) {
      const uint64_t first = s.part == Slot::kQPart ? 0 : s.part == Slot::kKPart ? q_rows : q_rows + kv_width;
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
