#include "headway/session.hpp"

#include <cstring>

#include "runtime/core/debug_check.hpp"

namespace headway {

namespace {

struct ArrayWeights {
  const LayerWeights* layers;
};

Result<LayerWeights> from_array(void* ctx, uint32_t layer) { return static_cast<ArrayWeights*>(ctx)->layers[layer]; }

}  // namespace

Status Session::init(const Arena& arena, const LayerWeights* layers, uint32_t n_layers, ThreadPool* pool) {
  LayerOptions options;
  options.pool = pool;
  return init(arena, layers, n_layers, options);
}

Status Session::init(const Arena& arena, LayerWeightsFn fn, void* ctx, ThreadPool* pool) {
  LayerOptions options;
  options.pool = pool;
  return init(arena, fn, ctx, options);
}

Status Session::init(const Arena& arena, const LayerWeights* layers, uint32_t n_layers, const LayerOptions& options) {
  arena_ = nullptr;
  n_layers_ = 0;
  if (!arena.bound()) return Status::error(Code::kFailedPrecondition, "session: the arena is not bound to a plan");
  if (n_layers != arena.plan().config.n_layers) {
    return Status::error(Code::kInvalidArgument, "session: %u layers of weights, the plan has %u", n_layers,
                         arena.plan().config.n_layers);
  }
  if (layers == nullptr) return Status::error(Code::kInvalidArgument, "session: layer weights are null");
  ArrayWeights a{layers};
  return init(arena, from_array, &a, options);
}

Status Session::init(const Arena& arena, LayerWeightsFn fn, void* ctx, const LayerOptions& options) {
  arena_ = nullptr;
  n_layers_ = 0;
  if (!arena.bound()) return Status::error(Code::kFailedPrecondition, "session: the arena is not bound to a plan");
  const uint32_t n_layers = arena.plan().config.n_layers;
  if (n_layers > kMaxLayers) {
    return Status::error(Code::kUnsupported, "session: %u layers, a Session holds at most %u", n_layers, kMaxLayers);
  }
  if (fn == nullptr) return Status::error(Code::kInvalidArgument, "session: the layer weights function is null");
  for (uint32_t l = 0; l < n_layers; ++l) {
    const Result<LayerWeights> w = fn(ctx, l);
    if (!w.ok()) return w.status();
    LayerOptions layer_options = options;  // a layer that shares KV reads an earlier one's cache
    layer_options.kv_owner = &layers_[arena.plan().layer(l).kv_owner];
    HEADWAY_RETURN_IF_ERROR(layers_[l].init(arena, l, w.value(), layer_options));
  }
  arena_ = &arena;
  n_layers_ = n_layers;
  return Status();
}

void Session::reset() {
  for (uint32_t l = 0; l < n_layers_; ++l) layers_[l].reset();
}

Status Session::prefill(const float* x, uint32_t t, float* y) {
  if (arena_ == nullptr) return Status::error(Code::kFailedPrecondition, "session: prefill or decode before init");
  const Plan& p = arena_->plan();
  if (t == 0) return Status();
  if (x == nullptr || y == nullptr) return Status::error(Code::kInvalidArgument, "session: x or y is null");
  // Checked before any chunk runs, so that a prompt past the context changes no cache.
  if (uint64_t{position()} + t > p.config.max_seq) {
    return Status::error(Code::kOutOfRange,
                         "session: %u tokens at position %u go past the context of %u tokens (max_seq); nothing "
                         "was run",
                         t, position(), p.config.max_seq);
  }
  if (!p.config.causal && t > p.max_tokens) {
    return Status::error(Code::kInvalidArgument,
                         "session: %u tokens of a bidirectional model, the plan runs %u per call (max_tokens): its "
                         "queries see later keys, so its tokens cannot run in chunks; plan max_tokens >= %u",
                         t, p.max_tokens, t);
  }
  const size_t d = p.config.d_model;
  for (uint32_t done = 0; done < t;) {
    const uint32_t n = t - done < p.max_tokens ? t - done : p.max_tokens;
    HEADWAY_RETURN_IF_ERROR(run_stack(x + done * d, n, y + done * d, nullptr, 0));
    done += n;
  }
  return Status();
}

Status Session::encode(const float* x, const uint32_t* cu_seqlens, uint32_t n_seqs, float* y) {
  if (arena_ == nullptr) return Status::error(Code::kFailedPrecondition, "session: encode before init");
  if (x == nullptr || y == nullptr) return Status::error(Code::kInvalidArgument, "session: x or y is null");
  // The lengths (forward_packed's checks and messages) before anything is written.
  HEADWAY_RETURN_IF_ERROR(layers_[0].check_packed(cu_seqlens, n_seqs));
  return run_stack(x, cu_seqlens[n_seqs], y, cu_seqlens, n_seqs);
}

// The stream h and the block output live in the arena's activation region (plan.stream_offset,
// plan.block_out_offset), sized for max_tokens rows. prefill and encode have checked the call:
// at most max_tokens tokens, within the context; the layers run unchecked.
Status Session::run_stack(const float* x, uint32_t t, float* y, const uint32_t* cu_seqlens, uint32_t n_seqs) {
  const Plan& p = arena_->plan();
  HEADWAY_DEBUG_CHECK(
      t <= p.max_tokens ? Status()
                        : Status::error(Code::kInvalidArgument, "session: %u tokens, max_tokens %u", t, p.max_tokens));
  float* h = arena_->stream();
  float* out = arena_->block_out();
  const size_t n = size_t{t} * p.config.d_model;
  std::memcpy(h, x, n * sizeof(float));
  for (uint32_t l = 0; l < n_layers_; ++l) {
    HEADWAY_RETURN_IF_ERROR(cu_seqlens != nullptr ? layers_[l].forward_packed(h, out, cu_seqlens, n_seqs)
                                                  : layers_[l].forward_unchecked(h, out, t));
    for (size_t i = 0; i < n; ++i) h[i] += out[i];
  }
  std::memmove(y, h, n * sizeof(float));
  return Status();
}

}  // namespace headway
