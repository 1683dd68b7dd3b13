#include "headway/model.hpp"

#include <cstring>

#include "headway/dtype_convert.hpp"
#include "runtime/linear/dense.hpp"
#include "runtime/model/model_ops.hpp"

namespace headway {

const char* model_tensor_name(ModelTensor t) {
  switch (t) {
    case ModelTensor::kEmbedding: return "embedding";
    case ModelTensor::kAttnNorm: return "attn_norm";
    case ModelTensor::kFfnNorm: return "ffn_norm";
    case ModelTensor::kGate: return "ffn_gate";
    case ModelTensor::kUp: return "ffn_up";
    case ModelTensor::kDown: return "ffn_down";
    case ModelTensor::kFinalNorm: return "final_norm";
    case ModelTensor::kLmHead: return "lm_head";
  }
  return "unknown";
}

namespace {

bool is_norm(ModelTensor t) {
  return t == ModelTensor::kAttnNorm || t == ModelTensor::kFfnNorm || t == ModelTensor::kFinalNorm;
}

// Byte offset of tensor t (of `layer`) inside the model weights region.
uint64_t tensor_offset(const Plan& p, ModelTensor t, uint32_t layer) {
  const ModelLayerLayout l = model_layer_layout(p);
  const uint64_t slice = model_layer_offset(p, layer);
  switch (t) {
    case ModelTensor::kEmbedding: return 0;
    case ModelTensor::kAttnNorm: return slice + l.attn_norm;
    case ModelTensor::kFfnNorm: return slice + l.ffn_norm;
    case ModelTensor::kGate: return slice + l.gate;
    case ModelTensor::kUp: return slice + l.up;
    case ModelTensor::kDown: return slice + l.down;
    case ModelTensor::kFinalNorm: return model_layer_offset(p, p.config.n_layers);
    case ModelTensor::kLmHead: return model_layer_offset(p, p.config.n_layers) + p.final_norm_bytes;
  }
  return 0;
}

// Copies tensor t of `layer` from the source into its arena slot: rows staged in f32 through
// `staging` (the model activations, free at init), stored in f32 (norms) or the weight dtype.
Status load_tensor(const Plan& p, const ModelWeightsSource& src, ModelTensor t, uint32_t layer, uint8_t* region,
                   float* staging, uint64_t staging_floats) {
  const TensorShape shape = model_tensor_shape(p.config, t);
  const DType dtype = is_norm(t) ? DType::kF32 : p.options.weight_dtype;
  uint8_t* dst = region + tensor_offset(p, t, layer);
  const uint64_t chunk = staging_floats / shape.cols;
  for (uint64_t first = 0; first < shape.rows; first += chunk) {
    const uint64_t n = shape.rows - first < chunk ? shape.rows - first : chunk;
    const Status s = src.rows(src.ctx, t, layer, shape, first, n, staging);
    if (!s.ok()) {
      return Status::error(s.code(), "model: %s of layer %u: %s", model_tensor_name(t), layer, s.message());
    }
    const uint64_t values = n * shape.cols;
    uint8_t* out = dst + dtype_row_bytes(dtype, shape.cols) * first;
    switch (dtype) {
      case DType::kF16: f32_to_f16(staging, reinterpret_cast<uint16_t*>(out), values); break;
      case DType::kBF16: f32_to_bf16(staging, reinterpret_cast<uint16_t*>(out), values); break;
      default: std::memcpy(out, staging, values * sizeof(float)); break;
    }
  }
  return Status();
}

}  // namespace

Status Model::init(const Arena& arena, const ModelWeightsSource& source, const LayerOptions& options) {
  arena_ = nullptr;
  n_layers_ = 0;
  if (!arena.bound()) return Status::error(Code::kFailedPrecondition, "model: the arena is not bound to a plan");
  const Plan& p = arena.plan();
  const Config& c = p.config;
  if (c.model.vocab_size == 0) {
    return Status::error(Code::kInvalidArgument,
                         "model: the plan has no model (vocab_size 0): attention blocks alone "
                         "run in a Session");
  }
  if (c.n_layers > kMaxLayers) {
    return Status::error(Code::kUnsupported, "model: %u layers, a Model holds at most %u", c.n_layers, kMaxLayers);
  }
  if (source.attention == nullptr || source.rows == nullptr) {
    return Status::error(Code::kInvalidArgument, "model: the weights source lacks its %s function",
                         source.attention == nullptr ? "attention" : "rows");
  }
  uint8_t* region = arena.model_weights();
  float* staging = arena.normed();
  const uint64_t staging_floats = p.model_activation_bytes / sizeof(float);
  for (ModelTensor t : {ModelTensor::kEmbedding, ModelTensor::kFinalNorm, ModelTensor::kLmHead}) {
    if (t == ModelTensor::kLmHead && c.model.tie_word_embeddings) continue;
    HEADWAY_RETURN_IF_ERROR(load_tensor(p, source, t, 0, region, staging, staging_floats));
  }
  for (uint32_t l = 0; l < c.n_layers; ++l) {
    for (ModelTensor t :
         {ModelTensor::kAttnNorm, ModelTensor::kFfnNorm, ModelTensor::kGate, ModelTensor::kUp, ModelTensor::kDown}) {
      HEADWAY_RETURN_IF_ERROR(load_tensor(p, source, t, l, region, staging, staging_floats));
    }
    const Result<LayerWeights> w = source.attention(source.ctx, l);
    if (!w.ok()) return w.status();
    HEADWAY_RETURN_IF_ERROR(layers_[l].init(arena, l, w.value(), options));
  }
  arena_ = &arena;
  pool_ = options.pool;
  n_layers_ = c.n_layers;
  last_row_ = 0;
  return Status();
}

TensorRef Model::matrix(ModelTensor t, uint32_t layer) const {
  const Plan& p = arena_->plan();
  if (t == ModelTensor::kLmHead && p.config.model.tie_word_embeddings) t = ModelTensor::kEmbedding;
  const TensorShape s = model_tensor_shape(p.config, t);
  return TensorRef{arena_->model_weights() + tensor_offset(p, t, layer), p.options.weight_dtype, s.rows, s.cols};
}

const float* Model::norm(ModelTensor t, uint32_t layer) const {
  return reinterpret_cast<const float*>(arena_->model_weights() + tensor_offset(arena_->plan(), t, layer));
}

const float* Model::logits() const {
  if (arena_ == nullptr) return nullptr;
  return arena_->logits() + size_t{last_row_} * arena_->plan().config.model.vocab_size;
}

void Model::reset() {
  for (uint32_t l = 0; l < n_layers_; ++l) layers_[l].reset();
}

Status Model::prefill(const int32_t* ids, uint32_t n, float* logits) {
  if (arena_ == nullptr) return Status::error(Code::kFailedPrecondition, "model: prefill before init");
  const Plan& p = arena_->plan();
  const Config& c = p.config;
  if (ids == nullptr || n == 0) return Status::error(Code::kInvalidArgument, "model: no token ids (n %u)", n);
  for (uint32_t i = 0; i < n; ++i) {
    if (ids[i] < 0 || static_cast<uint32_t>(ids[i]) >= c.model.vocab_size) {
      return Status::error(Code::kInvalidArgument,
                           "model: token id %d at position %u is outside the vocabulary (0..%u)", ids[i], i,
                           c.model.vocab_size - 1);
    }
  }
  if (uint64_t{position()} + n > c.max_seq) {
    return Status::error(Code::kOutOfRange,
                         "model: %u tokens at position %u go past the context of %u tokens (max_seq)", n, position(),
                         c.max_seq);
  }
  if (logits != nullptr && !p.options.all_logits) {
    return Status::error(Code::kInvalidArgument,
                         "model: every token's logits asked for, but the plan keeps the last token's only (plan "
                         "it with PlanOptions::all_logits)");
  }
  for (uint32_t done = 0; done < n;) {
    const uint32_t t = n - done < p.max_tokens ? n - done : p.max_tokens;
    HEADWAY_RETURN_IF_ERROR(run_chunk(ids + done, t, logits ? logits + size_t{done} * c.model.vocab_size : nullptr));
    done += t;
  }
  return Status();
}

// One chunk of t tokens through every layer (layout of the activations: plan.hpp).
Status Model::run_chunk(const int32_t* ids, uint32_t t, float* logits) {
  const Plan& p = arena_->plan();
  const Config& c = p.config;
  const uint32_t d = c.d_model;
  const uint32_t ffn = c.model.intermediate_size;
  const float eps = c.model.norm_eps;
  float* h = arena_->stream();
  float* x = arena_->normed();
  float* out = arena_->block_out();
  float* hidden = arena_->mlp_hidden();
  const size_t n = size_t{t} * d;

  const TensorRef embedding = matrix(ModelTensor::kEmbedding, 0);
  for (uint32_t i = 0; i < t; ++i) widen_row(embedding.data, embedding.dtype, ids[i], d, h + size_t{i} * d);
  for (uint32_t l = 0; l < n_layers_; ++l) {
    rms_norm(h, norm(ModelTensor::kAttnNorm, l), x, t, d, eps);
    HEADWAY_RETURN_IF_ERROR(layers_[l].forward(x, out, t));
    add_rows(h, out, n);
    rms_norm(h, norm(ModelTensor::kFfnNorm, l), x, t, d, eps);
    dense_highway({matrix(ModelTensor::kGate, l), {}}, x, d, hidden, 2 * size_t{ffn}, t, pool_);
    dense_highway({matrix(ModelTensor::kUp, l), {}}, x, d, hidden + ffn, 2 * size_t{ffn}, t, pool_);
    swiglu(hidden, t, ffn);
    dense_highway({matrix(ModelTensor::kDown, l), {}}, hidden, 2 * size_t{ffn}, out, d, t, pool_);
    add_rows(h, out, n);
  }
  // The logits of every token (all_logits) or of the last one alone.
  const uint32_t first = p.options.all_logits ? 0 : t - 1;
  const uint32_t rows = t - first;
  rms_norm(h + size_t{first} * d, norm(ModelTensor::kFinalNorm, 0), x, rows, d, eps);
  const uint32_t vocab = c.model.vocab_size;
  dense_highway({matrix(ModelTensor::kLmHead, 0), {}}, x, d, arena_->logits(), vocab, rows, pool_);
  last_row_ = rows - 1;
  if (logits != nullptr) std::memcpy(logits, arena_->logits(), size_t{rows} * vocab * sizeof(float));
  return Status();
}

}  // namespace headway
