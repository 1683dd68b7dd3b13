// Model::state_bytes, save_state, load_state: a model's KV rows in use, its position and its last
// logits as bytes (the format: include/headway/model.hpp). No allocation, no I/O: the caller's
// buffer in and out; files are the tools layer's (headway/tools/state_file.hpp).
#include <cstring>

#include "headway/model.hpp"

#include "headway/detail/row_groups.hpp"
#include "runtime/linear/dense.hpp"
#include "runtime/model/model_blocks.hpp"
namespace headway {
namespace {

constexpr char kMagic[4] = {'H', 'W', 'S', 'T'};

// The fixed part of a state, 64 bytes, no padding.
struct StateHeader {
  char magic[4];
  uint32_t version;
  uint32_t d_model;
  uint32_t n_heads;
  uint32_t n_kv_heads;
  uint32_t head_dim;
  uint32_t n_layers;
  uint32_t max_seq;
  uint32_t vocab_size;
  uint32_t kv_dtype;
  uint32_t weight_dtype;
  uint32_t position;
  uint32_t has_logits;
  uint32_t kv_rotation;  // KvRotation: the cache holds rotated rows (hadamard); 0 none, as before it was recorded
  uint64_t fingerprint;
};
static_assert(sizeof(StateHeader) == 64, "the state header has no padding");

// One layer's kind as its cache holds rows (kind: 0 full, 1 sliding, 2 Gated DeltaNet: then
// window is its conv kernel and rows its state's and window's bytes, which follow whole).
struct LayerRecord {
  uint32_t kind;
  uint32_t window;
  uint32_t rows;
  uint32_t sink_tokens;
};
static_assert(sizeof(LayerRecord) == 16, "a state's layer record has no padding");

constexpr uint64_t kFnvOffset = 14695981039346656037ull;
constexpr uint64_t kFnvPrime = 1099511628211ull;

// FNV-1a over 8-byte words (then the tail's bytes): 8 times fewer multiplies than bytewise,
// enough to catch a flipped bit or a torn write (not an adversary).
uint64_t fnv(const void* data, size_t n, uint64_t h = kFnvOffset) {
  const uint8_t* p = static_cast<const uint8_t*>(data);
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    uint64_t w = 0;
    std::memcpy(&w, p + i, 8);
    h = (h ^ w) * kFnvPrime;
  }
  for (; i < n; ++i) h = (h ^ p[i]) * kFnvPrime;
  return h;
}

const char* dtype_text(uint32_t v) { return v <= 0xff ? dtype_name(static_cast<DType>(v)) : "unknown"; }

LayerRecord layer_record(const Plan& p, uint32_t l) {
  const LayerPlan lp = p.layer(l);
  if (lp.linear) {
    return {2u, p.config.gated_delta.conv_kernel, static_cast<uint32_t>(p.linear_state_bytes_per_layer), 0u};
  }
  return {lp.sliding ? 1u : 0u, lp.window, lp.kv_rows, lp.sink_tokens};
}

// Rows of a layer that hold tokens at `position` (a ring holds at most its rows).
uint32_t rows_in_use(const Plan& p, uint32_t l, uint32_t position) {
  const uint32_t rows = p.layer(l).kv_rows;
  return position < rows ? position : rows;
}

// The state's size for plan p at `position`.
uint64_t state_size(const Plan& p, uint32_t position) {
  const Config& c = p.config;
  const uint64_t row = dtype_row_bytes(c.kv_dtype, p.head_dim);
  uint64_t n = sizeof(StateHeader) + uint64_t{c.n_layers} * sizeof(LayerRecord);
  for (uint32_t l = 0; l < c.n_layers; ++l) {
    n += p.layer(l).linear ? p.linear_state_bytes_per_layer
                           : 2 * uint64_t{c.kv_heads()} * rows_in_use(p, l, position) * row;
  }
  if (position > 0) n += uint64_t{c.model.vocab_size} * sizeof(float);
  return n + sizeof(uint64_t);
}

Status differ(const char* field, uint32_t state, uint32_t plan) {
  return Status::error(Code::kInvalidArgument, "state: %s %u, this plan's %u", field, state, plan);
}

}  // namespace

namespace {

// fnv over the first `bytes` of t in its source's order: blocks gathered back where the model
// holds t in row groups, so a state file's fingerprint does not depend on the machine's layout.
uint64_t fnv_leading(const TensorRef& t, uint64_t bytes, uint64_t h) {
  if (!t.row_groups) return fnv(t.data, bytes, h);
  const DTypeTraits& type = dtype_traits(t.dtype);
  const uint64_t per_row = t.cols / type.block_values;
  // The gathered bytes pass through `run` whole 8-byte words at a time, as fnv reads one span.
  uint8_t scratch[row_groups::kMaxBlockBytes], run[512];
  size_t held = 0;
  for (uint64_t i = 0; bytes > 0; ++i) {
    const uint8_t* block = tensor_block(t, i / per_row, i % per_row, scratch);
    for (uint64_t j = 0; j < type.block_bytes && bytes > 0; ++j, --bytes) {
      run[held++] = block[j];
      if (held == sizeof(run)) {
        h = fnv(run, held, h);
        held = 0;
      }
    }
  }
  return fnv(run, held, h);
}

}  // namespace

uint64_t Model::weights_fingerprint() const {
  const Plan& p = arena_->plan();
  const uint32_t d = p.config.d_model;
  const ModelWeightsView w{&p, arena_->model_weights(), &borrowed_};
  uint64_t h = fnv(w.vector(ModelTensor::kFinalNorm, 0), d * sizeof(float));
  for (uint32_t l = 0; l < n_layers_; ++l) {
    for (const ModelTensor t :
         {ModelTensor::kAttnNorm, ModelTensor::kFfnNorm, ModelTensor::kPostAttnNorm, ModelTensor::kPostFfnNorm}) {
      if (model_has_tensor(p.config, t)) h = fnv(w.vector(t, l), d * sizeof(float), h);
    }
  }
  return fnv_leading(w.matrix(ModelTensor::kEmbedding, 0), dtype_row_bytes(p.options.weight_dtype, d), h);
}

Status Model::check_state_backend() const {
  if (arena_ == nullptr) return Status::error(Code::kFailedPrecondition, "state: the model is not initialized");
  const Plan& p = arena_->plan();
  if (p.kv_shared_layers != 0 || p.config.full_layers_shaped()) {
    return Status::error(Code::kUnsupported,
                         "state: a saved state holds one head shape and a cache per attention layer; this model's "
                         "%s",
                         p.kv_shared_layers ? "last layers read earlier layers' caches (num_kv_shared_layers)"
                                            : "full layers have a head shape of their own");
  }
  for (uint32_t l = 0; l < n_layers_; ++l) {
    if (layers_[l].cpu_cache() == nullptr && !layers_[l].is_linear()) {
      return Status::error(Code::kUnsupported,
                           "state: layer %u runs on the %s backend, whose KV rows live on the device; saving and "
                           "loading a state needs the cpu backend",
                           l, backend_name(layers_[l].backend_kind()));
    }
  }
  return Status();
}

uint64_t Model::state_bytes() const { return arena_ ? state_size(arena_->plan(), position()) : 0; }

Status Model::save_state(void* out, size_t capacity, size_t* written) const {
  HEADWAY_RETURN_IF_ERROR(check_state_backend());
  const Plan& p = arena_->plan();
  const Config& c = p.config;
  const uint32_t pos = position();
  const uint64_t need = state_size(p, pos);
  if (out == nullptr || capacity < need) {
    return Status::error(Code::kOutOfRange, "state: the buffer holds %zu bytes%s, the state needs %llu",
                         out ? capacity : size_t{0}, out ? "" : " (null)", static_cast<unsigned long long>(need));
  }
  for (uint32_t l = 0; l < n_layers_; ++l) {
    if (layers_[l].is_linear()) continue;  // its position is the model's (it keeps no other)
    const KvCache& kv = *layers_[l].cpu_cache();
    if (kv.start_position() != 0 || kv.position() != pos) {
      return Status::error(Code::kInternal, "state: layer %u holds positions %u..%u, the model's position is %u", l,
                           kv.start_position(), kv.position(), pos);
    }
  }
  uint8_t* o = static_cast<uint8_t*>(out);
  StateHeader h{};
  std::memcpy(h.magic, kMagic, sizeof(kMagic));
  h.version = kStateVersion;
  h.d_model = c.d_model;
  h.n_heads = c.n_heads;
  h.n_kv_heads = c.kv_heads();
  h.head_dim = p.head_dim;
  h.n_layers = c.n_layers;
  h.max_seq = c.max_seq;
  h.vocab_size = c.model.vocab_size;
  h.kv_dtype = static_cast<uint32_t>(c.kv_dtype);
  h.weight_dtype = static_cast<uint32_t>(p.options.weight_dtype);
  h.kv_rotation = static_cast<uint32_t>(c.kv_rotation);
  h.position = pos;
  h.has_logits = pos > 0 ? 1 : 0;
  h.fingerprint = weights_fingerprint();
  std::memcpy(o, &h, sizeof(h));
  o += sizeof(h);
  for (uint32_t l = 0; l < n_layers_; ++l) {
    const LayerRecord r = layer_record(p, l);
    std::memcpy(o, &r, sizeof(r));
    o += sizeof(r);
  }
  const size_t row = dtype_row_bytes(c.kv_dtype, p.head_dim);
  for (uint32_t l = 0; l < n_layers_; ++l) {
    if (layers_[l].is_linear()) {
      std::memcpy(o, layers_[l].linear_state(), p.linear_state_bytes_per_layer);
      o += p.linear_state_bytes_per_layer;
      continue;
    }
    const KvCache& kv = *layers_[l].cpu_cache();
    const size_t bytes = size_t{rows_in_use(p, l, pos)} * row;
    for (bool v : {false, true}) {
      for (uint32_t g = 0; g < c.kv_heads(); ++g) {
        std::memcpy(o, kv.head_rows(g, v), bytes);
        o += bytes;
      }
    }
  }
  if (pos > 0) {
    std::memcpy(o, logits(), size_t{c.model.vocab_size} * sizeof(float));
    o += size_t{c.model.vocab_size} * sizeof(float);
  }
  const uint64_t sum = fnv(out, static_cast<size_t>(o - static_cast<uint8_t*>(out)));
  std::memcpy(o, &sum, sizeof(sum));
  if (written != nullptr) *written = static_cast<size_t>(need);
  return Status();
}

Status Model::load_state(const void* in, size_t size) {
  HEADWAY_RETURN_IF_ERROR(check_state_backend());
  const Plan& p = arena_->plan();
  const Config& c = p.config;
  if (in == nullptr) return Status::error(Code::kInvalidArgument, "state: the buffer is null");
  const uint8_t* b = static_cast<const uint8_t*>(in);
  if (size < sizeof(StateHeader)) {
    return Status::error(Code::kDataLoss, "state: %zu bytes, shorter than its %zu-byte header (truncated)", size,
                         sizeof(StateHeader));
  }
  StateHeader h;
  std::memcpy(&h, b, sizeof(h));
  if (std::memcmp(h.magic, kMagic, sizeof(kMagic)) != 0) {
    return Status::error(Code::kInvalidArgument,
                         "state: not a headway state (its first bytes are 0x%x 0x%x 0x%x 0x%x, not \"HWST\")",
                         static_cast<uint8_t>(h.magic[0]), static_cast<uint8_t>(h.magic[1]),
                         static_cast<uint8_t>(h.magic[2]), static_cast<uint8_t>(h.magic[3]));
  }
  if (h.version != kStateVersion) {
    return Status::error(Code::kUnsupported, "state: format version %u, this build reads version %u", h.version,
                         kStateVersion);
  }
  // What identifies the plan, in the header's order: the first difference is the message.
  const struct {
    const char* field;
    uint32_t state, plan;
  } same[] = {{"d_model", h.d_model, c.d_model},          {"n_heads", h.n_heads, c.n_heads},
              {"n_kv_heads", h.n_kv_heads, c.kv_heads()}, {"head_dim", h.head_dim, p.head_dim},
              {"n_layers", h.n_layers, c.n_layers},       {"vocab_size", h.vocab_size, c.model.vocab_size}};
  for (const auto& f : same) {
    if (f.state != f.plan) return differ(f.field, f.state, f.plan);
  }
  if (h.kv_dtype != static_cast<uint32_t>(c.kv_dtype)) {
    return Status::error(Code::kInvalidArgument, "state: kv_dtype %s, this plan's %s", dtype_text(h.kv_dtype),
                         dtype_name(c.kv_dtype));
  }
  if (h.kv_rotation != static_cast<uint32_t>(c.kv_rotation)) {
    // The rows are stored rotated or not: read with the other rotation, every score would be wrong.
    return Status::error(Code::kInvalidArgument, "state: kv_rotation %s, this plan's %s",
                         h.kv_rotation <= 0xff ? kv_rotation_name(static_cast<KvRotation>(h.kv_rotation)) : "unknown",
                         kv_rotation_name(c.kv_rotation));
  }
  if (h.weight_dtype != static_cast<uint32_t>(p.options.weight_dtype)) {
    return Status::error(Code::kInvalidArgument, "state: weight_dtype %s, this plan's %s", dtype_text(h.weight_dtype),
                         dtype_name(p.options.weight_dtype));
  }
  const size_t records = sizeof(StateHeader) + size_t{c.n_layers} * sizeof(LayerRecord);
  if (size < records) {
    return Status::error(Code::kDataLoss, "state: %zu bytes, shorter than its header and %u layer records (truncated)",
                         size, c.n_layers);
  }
  for (uint32_t l = 0; l < c.n_layers; ++l) {
    LayerRecord r;
    std::memcpy(&r, b + sizeof(StateHeader) + size_t{l} * sizeof(LayerRecord), sizeof(r));
    const LayerRecord want = layer_record(p, l);
    if (r.kind != want.kind) {
      const auto kind = [](uint32_t k) { return k == 0 ? "full" : k == 1 ? "sliding" : k == 2 ? "linear" : "unknown"; };
      return Status::error(Code::kInvalidArgument, "state: layer %u is %s, this plan's is %s", l, kind(r.kind),
                           kind(want.kind));
    }
    if (want.kind == 2 && (r.window != want.window || r.rows != want.rows)) {
      return Status::error(Code::kInvalidArgument,
                           "state: layer %u's Gated DeltaNet state is %u bytes with a conv kernel of %u; this plan's "
                           "is %u bytes with %u",
                           l, r.rows, r.window, want.rows, want.window);
    }
    if (want.kind != 1) continue;  // a full layer's rows are max_seq: only the position must fit
    if (r.window != want.window || r.rows != want.rows || r.sink_tokens != want.sink_tokens) {
      return Status::error(Code::kInvalidArgument,
                           "state: layer %u's ring is window %u, %u rows, %u sink tokens; this plan's is window %u, "
                           "%u rows, %u sink tokens",
                           l, r.window, r.rows, r.sink_tokens, want.window, want.rows, want.sink_tokens);
    }
  }
  const uint64_t fingerprint = weights_fingerprint();
  if (h.fingerprint != fingerprint) {
    return Status::error(Code::kInvalidArgument, "state: made with other weights (fingerprint %llx, this model's %llx)",
                         static_cast<unsigned long long>(h.fingerprint), static_cast<unsigned long long>(fingerprint));
  }
  if (h.position > c.max_seq) {
    return Status::error(Code::kOutOfRange, "state: position %u is past this plan's context of %u tokens (max_seq)",
                         h.position, c.max_seq);
  }
  if (h.has_logits != (h.position > 0 ? 1u : 0u)) {
    return Status::error(Code::kDataLoss, "state: has_logits %u at position %u (corrupt)", h.has_logits, h.position);
  }
  const uint64_t need = state_size(p, h.position);
  if (size != need) {
    return Status::error(Code::kDataLoss, "state: %zu bytes, its header describes %llu (%s)", size,
                         static_cast<unsigned long long>(need), size < need ? "truncated" : "trailing bytes");
  }
  uint64_t stored = 0;
  std::memcpy(&stored, b + size - sizeof(stored), sizeof(stored));
  const uint64_t sum = fnv(b, size - sizeof(stored));
  if (stored != sum) {
    return Status::error(Code::kDataLoss, "state: checksum %llx, its bytes give %llx (corrupt)",
                         static_cast<unsigned long long>(stored), static_cast<unsigned long long>(sum));
  }

  // Every check passed: write.
  const uint8_t* src = b + records;
  const size_t row = dtype_row_bytes(c.kv_dtype, p.head_dim);
  for (uint32_t l = 0; l < n_layers_; ++l) {
    if (layers_[l].is_linear()) {
      std::memcpy(layers_[l].linear_state(), src, p.linear_state_bytes_per_layer);
      src += p.linear_state_bytes_per_layer;
      layers_[l].restore_linear(h.position);
      continue;
    }
    KvCache& kv = *layers_[l].cpu_cache();
    const size_t bytes = size_t{rows_in_use(p, l, h.position)} * row;
    for (bool v : {false, true}) {
      for (uint32_t g = 0; g < c.kv_heads(); ++g) {
        std::memcpy(kv.head_rows(g, v), src, bytes);
        src += bytes;
      }
    }
    kv.restore(0, h.position);
  }
  if (h.position > 0) std::memcpy(arena_->logits(), src, size_t{c.model.vocab_size} * sizeof(float));
  last_row_ = 0;
  return Status();
}

}  // namespace headway
