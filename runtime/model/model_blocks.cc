#include "runtime/model/model_blocks.hpp"

#include <cstring>

#include "headway/dtype_convert.hpp"
#include "runtime/linear/dense.hpp"
#include "runtime/model/model_ops.hpp"
#include "runtime/model/row_group_copier.hpp"

namespace headway {

TensorRef ModelWeightsView::matrix(ModelTensor t, uint32_t layer) const {
  if (!model_tensor_in_arena(plan->options, t)) {
    return model_tensor_info(t).per_layer ? borrowed->layer[layer][borrowed_layer_slot(t)]
                                          : borrowed->whole[static_cast<uint32_t>(t)];
  }
  const TensorShape s = model_tensor_shape(plan->config, t);
  return TensorRef{base + model_tensor_offset(*plan, t, layer), plan->options.weight_dtype, s.rows, s.cols};
}

const float* ModelWeightsView::vector(ModelTensor t, uint32_t layer) const {
  if (!model_has_tensor(plan->config, t)) return nullptr;
  return reinterpret_cast<const float*>(base + model_tensor_offset(*plan, t, layer));
}

namespace {

// Copies tensor t of `layer` from the source into its arena slot: rows staged in f32 through
// `staging`, stored in f32 (norms, biases) or the weight dtype.
Status load_tensor(const char* who, const Plan& p, const ModelWeightsSource& src, ModelTensor t, uint32_t layer,
                   uint8_t* region, float* staging, uint64_t staging_floats) {
  const TensorShape shape = model_tensor_shape(p.config, t);
  const DType dtype = model_tensor_info(t).f32 ? DType::kF32 : p.options.weight_dtype;
  uint8_t* dst = region + model_tensor_offset(p, t, layer);
  const uint64_t chunk = staging_floats / shape.cols;
  for (uint64_t first = 0; first < shape.rows; first += chunk) {
    const uint64_t n = shape.rows - first < chunk ? shape.rows - first : chunk;
    const Status s = src.rows(src.ctx, t, layer, shape, first, n, staging);
    if (!s.ok())
      return Status::error(s.code(), "%s: %s of layer %u: %s", who, model_tensor_name(t), layer, s.message());
    const uint64_t values = n * shape.cols;
    if (model_tensor_is_norm_weight(t) && p.config.model.norm_offset != 0.0f) {
      for (uint64_t i = 0; i < values; ++i) staging[i] += p.config.model.norm_offset;
    }
    uint8_t* out = dst + dtype_row_bytes(dtype, shape.cols) * first;
    switch (dtype) {
      case DType::kF16: f32_to_f16(staging, reinterpret_cast<uint16_t*>(out), values); break;
      case DType::kBF16: f32_to_bf16(staging, reinterpret_cast<uint16_t*>(out), values); break;
      default: std::memcpy(out, staging, values * sizeof(float)); break;
    }
  }
  return Status();
}

// Borrows matrix t of `layer` from the source into its slot of `borrowed`, checked: the shape the
// config gives, a type the kernels read, rows of whole blocks.
Status borrow_tensor(const char* who, const Plan& p, const ModelWeightsSource& src, ModelTensor t, uint32_t layer,
                     BorrowedMatrices* borrowed) {
  const TensorShape shape = model_tensor_shape(p.config, t);
  const Result<TensorRef> got = src.tensor(src.ctx, t, layer, shape);
  if (!got.ok()) {
    return Status::error(got.status().code(), "%s: %s of layer %u: %s", who, model_tensor_name(t), layer,
                         got.status().message());
  }
  const TensorRef& v = got.value();
  if (v.data == nullptr || !dtype_holds_weights(v.dtype) || v.rows != shape.rows || v.cols != shape.cols ||
      v.cols % dtype_traits(v.dtype).block_values != 0) {
    return Status::error(
        Code::kInvalidArgument, "%s: %s of layer %u: the source lent [%u, %u] %s, expected [%u, %u] %s", who,
        model_tensor_name(t), layer, v.rows, v.cols, dtype_name(v.dtype), shape.rows, shape.cols, kWeightDTypeNames);
  }
  if (v.row_groups) {  // the model lays out what it copies itself (RowGroupCopier)
    return Status::error(Code::kInvalidArgument,
                         "%s: %s of layer %u: the source lent it marked row_groups; sources lend tensors as their "
                         "files hold them",
                         who, model_tensor_name(t), layer);
  }
  TensorRef& slot = model_tensor_info(t).per_layer ? borrowed->layer[layer][borrowed_layer_slot(t)]
                                                   : borrowed->whole[static_cast<uint32_t>(t)];
  slot = v;
  return Status();
}

// Tensor t of `layer` into the arena, or borrowed.
Status load_or_borrow(const char* who, const Plan& p, const ModelWeightsSource& src, ModelTensor t, uint32_t layer,
                      uint8_t* region, float* staging, uint64_t staging_floats, BorrowedMatrices* borrowed) {
  if (model_tensor_in_arena(p.options, t)) return load_tensor(who, p, src, t, layer, region, staging, staging_floats);
  return borrow_tensor(who, p, src, t, layer, borrowed);
}

}  // namespace

Status load_model_weights(const char* who, const Arena& arena, const ModelWeightsSource& source,
                          const LayerOptions& options, bool decodes, AttentionLayer* layers,
                          BorrowedMatrices* borrowed) {
  const Plan& p = arena.plan();
  const Config& c = p.config;
  const bool borrows = !p.options.weights_in_arena;
  if (source.attention == nullptr || source.rows == nullptr || (borrows && source.tensor == nullptr)) {
    return Status::error(Code::kInvalidArgument, "%s: the weights source lacks its %s function%s", who,
                         source.attention == nullptr ? "attention"
                         : source.rows == nullptr    ? "rows"
                                                     : "tensor",
                         source.attention != nullptr && source.rows != nullptr
                             ? " (a plan with weights_in_arena false borrows the matrices)"
                             : "");
  }
  uint8_t* region = arena.model_weights();
  float* staging = arena.normed();
  const uint64_t staging_floats = p.model_activation_bytes / sizeof(float);
  for (const ModelTensorInfo& info : kModelTensors) {
    if (info.per_layer || !model_has_tensor(c, info.tensor)) continue;
    HEADWAY_RETURN_IF_ERROR(load_or_borrow(who, p, source, info.tensor, 0, region, staging, staging_floats, borrowed));
  }
  for (uint32_t l = 0; l < c.n_layers; ++l) {
    for (const ModelTensorInfo& info : kModelTensors) {
      if (!info.per_layer || !model_has_tensor(c, info.tensor)) continue;
      HEADWAY_RETURN_IF_ERROR(
          load_or_borrow(who, p, source, info.tensor, l, region, staging, staging_floats, borrowed));
    }
  }
  borrowed->row_grouped.reset();  // an earlier init's copies (the caller no longer runs on them)
  borrowed->row_grouped_bytes = 0;
  RowGroupCopier copier;
  if (borrows && decodes) HEADWAY_RETURN_IF_ERROR(copier.start(who, p, source, borrowed));
  for (uint32_t l = 0; l < c.n_layers; ++l) {
    const Result<LayerWeights> w = source.attention(source.ctx, l);
    if (!w.ok()) return w.status();
    LayerWeights weights = w.value();
    copier.copy_attention(p, l, &weights);
    LayerOptions layer_options = options;  // a layer that shares KV reads an earlier one's cache
    layer_options.kv_owner = &layers[arena.plan().layer(l).kv_owner];
    HEADWAY_RETURN_IF_ERROR(layers[l].init(arena, l, weights, layer_options));
  }
  return Status();
}

void apply_norm(const ModelWeightsView& w, ModelTensor weight, ModelTensor bias, uint32_t layer, const float* x,
                float* y, uint32_t t) {
  const ModelConfig& m = w.plan->config.model;
  const uint32_t d = w.plan->config.d_model;
  if (m.norm == NormKind::kLayer) {
    layer_norm(x, w.vector(weight, layer), w.vector(bias, layer), y, t, d, m.norm_eps);
  } else {
    rms_norm(x, w.vector(weight, layer), y, t, d, m.norm_eps);
  }
}

namespace {

// Row-wise steps (the MLP's activation, the residual adds and norms) over tasks of kStepRows rows:
// rows are independent, so a prefill's split over the pool gives what one thread gives.
constexpr uint32_t kStepRows = 16;

void run_row_tasks(ThreadPool* pool, uint32_t t, ThreadPool::TaskFn fn, void* ctx) {
  ThreadPool::run_on(pool, ThreadPool::tasks_of(t, kStepRows), fn, ctx);
}

// The MLP's activation over hidden [t, 2 · ffn] (gate | up).
struct GateCall {
  MlpKind mlp;
  float* hidden;
  uint32_t ffn;
  uint32_t t;
};

void gate_task(void* ctx, size_t task) {
  const GateCall& c = *static_cast<const GateCall*>(ctx);
  const ThreadPool::Items r = ThreadPool::items_of(task, c.t, kStepRows);
  float* h = c.hidden + size_t{r.first} * 2 * c.ffn;
  if (c.mlp == MlpKind::kSwiGlu) swiglu(h, r.count, c.ffn);
  else if (c.mlp == MlpKind::kGeGlu) geglu(h, r.count, c.ffn);
  else gelu(h + c.ffn, h, r.count, c.ffn);
}

struct ResidualCall {
  const ModelWeightsView* w;
  BlockNorm post;
  BlockNorm next;
  float* out;
  float* h;
  float* y;
  uint32_t t;
};

void residual_task(void* ctx, size_t task) {
  const ResidualCall& c = *static_cast<const ResidualCall*>(ctx);
  const uint32_t d = c.w->plan->config.d_model;
  const ThreadPool::Items r = ThreadPool::items_of(task, c.t, kStepRows);
  const size_t at = size_t{r.first} * d;
  float* out = c.out + at;
  float* h = c.h + at;
  if (c.post.present) {
    rms_norm(out, c.w->vector(c.post.weight, c.post.layer), out, r.count, d, c.w->plan->config.model.norm_eps);
  }
  add_rows(h, out, size_t{r.count} * d);
  if (c.next.present) apply_norm(*c.w, c.next.weight, c.next.bias, c.next.layer, h, c.y + at, r.count);
}

}  // namespace

void add_residual(const ModelWeightsView& w, const BlockNorm& post, float* out, float* h, const BlockNorm& next,
                  float* y, uint32_t t, ThreadPool* pool) {
  ResidualCall call{&w, post, next, out, h, y, t};
  run_row_tasks(pool, t, &residual_task, &call);
}

void apply_mlp(const ModelWeightsView& w, uint32_t layer, const float* x, float* hidden, float* y, uint32_t t,
               ThreadPool* pool) {
  const Config& c = w.plan->config;
  const uint32_t d = c.d_model;
  const size_t ffn = c.model.intermediate_size;
  auto bias = [&](ModelTensor b) {
    const float* v = w.vector(b, layer);
    return v == nullptr ? TensorRef{} : TensorRef{v, DType::kF32, 1, model_tensor_shape(c, b).cols};
  };
  dense_highway({w.matrix(ModelTensor::kUp, layer), bias(ModelTensor::kUpBias)}, x, d, hidden + ffn, 2 * ffn, t, pool);
  if (c.model.mlp == MlpKind::kSwiGlu || c.model.mlp == MlpKind::kGeGlu) {
    dense_highway({w.matrix(ModelTensor::kGate, layer), {}}, x, d, hidden, 2 * ffn, t, pool);
  }
  GateCall gate{c.model.mlp, hidden, static_cast<uint32_t>(ffn), t};
  run_row_tasks(pool, t, &gate_task, &gate);
  dense_highway({w.matrix(ModelTensor::kDown, layer), bias(ModelTensor::kDownBias)}, hidden, 2 * ffn, y, d, t, pool);
}

}  // namespace headway
