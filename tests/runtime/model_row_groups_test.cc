// A Model over borrowed matrices in ggml's blocks (q8_0, q4_0, q4_1, q5_0, q5_1: every type row
// groups hold, one per matrix), which it copies into row groups at init where this machine's
// decode step reads them so (Model::row_grouped_bytes): its prefill gives the logits of the same
// model with the dequantized weights in f32 in the arena, and where it holds row groups its decode
// steps (x at 16 bits, runtime/model/row_group_copier.hpp) the same to x's rounding, with no heap
// call; a source that lends a tensor marked row_groups is refused by name.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "headway/arena.hpp"
#include "headway/ggml_types.hpp"
#include "headway/model.hpp"
#include "headway/plan.hpp"
#include "headway/tools/heap_count.hpp"
#include "simd/matmul/matmul.h"
#include "tests/kernels/block_rows.hpp"
#include "tests/support/state_fnv.hpp"
#include "tests/support/test_rng.hpp"

namespace headway {
namespace {

// d_model 64, 4 heads of 16 over 2 kv heads, 2 layers, an MLP of 256, a vocabulary of 50: every
// matrix is whole 32-value blocks (ffn_down's of 256, q4_K's and q6_K's super-blocks), and rows of
// whole groups and of a tail (the head's 50).
Config block_config(bool tied) {
  Config c;
  c.set_name("block-decoder");
  c.d_model = 64;
  c.n_heads = 4;
  c.n_kv_heads = 2;
  c.head_dim = 16;
  c.max_seq = 24;
  c.n_layers = 2;
  c.rope.style = RopeStyle::kNeox;
  c.kv_dtype = DType::kF32;
  c.model.vocab_size = 50;
  c.model.intermediate_size = 256;
  c.model.norm = NormKind::kRms;
  c.model.norm_eps = 1e-5f;
  c.model.mlp = MlpKind::kSwiGlu;
  c.model.tie_word_embeddings = tied;
  return c;
}

// f16 fields of each type (test::BlockFields) for random blocks.
test::BlockFields fields(DType t) {
  if (t == DType::kQ6_K) return {t, {208, -1}};  // d last
  const bool min = t == DType::kQ4_1 || t == DType::kQ5_1 || t == DType::kQ4_K;
  return {t, {0, min ? 2 : -1}};
}

// One matrix: random blocks of its type and their values dequantized.
struct BlockMatrix {
  DType type = DType::kF32;
  uint32_t rows = 0, cols = 0;
  std::vector<uint8_t> blocks;
  std::vector<float> values;
  BlockMatrix() = default;
  BlockMatrix(DType t, uint32_t r, uint32_t c, test::Rng& rng) : type(t), rows(r), cols(c) {
    blocks = test::random_rows(fields(t), r, c, rng);
    values.resize(size_t{r} * c);
    const size_t row_bytes = static_cast<size_t>(dtype_row_bytes(t, c));
    for (size_t i = 0; i < r; ++i) {
      (void)dequantize_ggml_row(static_cast<GgmlType>(dtype_traits(t).ggml), &blocks[i * row_bytes], row_bytes, c,
                                &values[i * c]);
    }
  }
  TensorRef as_blocks() const { return {blocks.data(), type, rows, cols}; }
  TensorRef as_f32() const { return {values.data(), DType::kF32, rows, cols}; }
};

// The model's matrices in blocks, its norms in f32; lent as blocks (borrowed) or as f32 values.
struct BlockWeights {
  Config config;
  BlockMatrix matrix[kModelTensorCount][2];
  std::vector<float> norm[kModelTensorCount][2];
  BlockMatrix attention[2][4];  // wq, wk, wv, wo per layer
  bool as_blocks = true;
  bool mark_lent = false;  // lend the MLP's matrices marked row_groups (a bad source)

  BlockWeights(const Config& c, uint64_t seed) : config(c) {
    test::Rng rng(seed);
    const DType kMlp[] = {DType::kQ4_1, DType::kQ4_0, DType::kQ8_0};
    uint32_t next_mlp = 0;
    for (const ModelTensorInfo& info : kModelTensors) {
      if (!model_has_tensor(c, info.tensor)) continue;
      const TensorShape s = model_tensor_shape(c, info.tensor);
      for (uint32_t l = 0; l < (info.per_layer ? c.n_layers : 1); ++l) {
        const uint32_t t = static_cast<uint32_t>(info.tensor);
        if (info.f32) {
          norm[t][l].assign(size_t{s.rows} * s.cols, 1.0f);
          for (float& v : norm[t][l]) v += 0.1f * rng.normal();
          continue;
        }
        const DType type = info.tensor == ModelTensor::kEmbedding ? DType::kQ8_0
                           : info.tensor == ModelTensor::kLmHead  ? DType::kQ5_1
                           : info.tensor == ModelTensor::kDown    ? (l == 0 ? DType::kQ4_K : DType::kQ6_K)
                                                                  : kMlp[next_mlp++ % 3];
        matrix[t][l] = BlockMatrix(type, s.rows, s.cols, rng);
      }
    }
    const uint32_t q = c.n_heads * c.head_dim, kv = c.n_kv_heads * c.head_dim;
    for (uint32_t l = 0; l < c.n_layers; ++l) {
      attention[l][0] = BlockMatrix(DType::kQ4_1, q, c.d_model, rng);
      attention[l][1] = BlockMatrix(DType::kQ5_0, kv, c.d_model, rng);
      attention[l][2] = BlockMatrix(DType::kQ4_0, kv, c.d_model, rng);
      attention[l][3] = BlockMatrix(DType::kQ5_1, c.d_model, q, rng);
    }
  }
  const BlockMatrix& of(ModelTensor t, uint32_t layer) const {
    return matrix[static_cast<uint32_t>(t)][model_tensor_info(t).per_layer ? layer : 0];
  }
  ModelWeightsSource source() {
    ModelWeightsSource s;
    s.ctx = this;
    s.attention = [](void* ctx, uint32_t layer) -> Result<LayerWeights> {
      const BlockWeights& w = *static_cast<BlockWeights*>(ctx);
      const BlockMatrix* m = w.attention[layer];
      LayerWeights out;
      out.wq = w.as_blocks ? m[0].as_blocks() : m[0].as_f32();
      out.wk = w.as_blocks ? m[1].as_blocks() : m[1].as_f32();
      out.wv = w.as_blocks ? m[2].as_blocks() : m[2].as_f32();
      out.wo = w.as_blocks ? m[3].as_blocks() : m[3].as_f32();
      return out;
    };
    s.rows = [](void* ctx, ModelTensor t, uint32_t layer, TensorShape shape, uint64_t first, uint64_t n,
                float* dst) -> Status {
      const BlockWeights& w = *static_cast<BlockWeights*>(ctx);
      const uint32_t l = model_tensor_info(t).per_layer ? layer : 0;
      const float* v =
          model_tensor_info(t).f32 ? w.norm[static_cast<uint32_t>(t)][l].data() : w.of(t, layer).values.data();
      std::memcpy(dst, v + first * shape.cols, n * shape.cols * sizeof(float));
      return Status();
    };
    s.tensor = [](void* ctx, ModelTensor t, uint32_t layer, TensorShape) -> Result<TensorRef> {
      const BlockWeights& w = *static_cast<BlockWeights*>(ctx);
      TensorRef r = w.of(t, layer).as_blocks();
      r.row_groups = w.mark_lent && t == ModelTensor::kDown;
      return r;
    };
    return s;
  }
};

struct BlockModel {
  void* buffer = nullptr;
  Arena arena;
  Model model;
  ~BlockModel() { std::free(buffer); }
  Status init(BlockWeights& w, bool borrowed) {
    PlanOptions o;
    o.max_tokens = 8;
    o.weights_in_arena = !borrowed;
    o.weight_dtype = DType::kF32;
    const Result<Plan> p = make_plan(w.config, o);
    if (!p.ok()) return p.status();
    buffer = std::aligned_alloc(kAlignment, align_up(p.value().arena_bytes));
    HEADWAY_RETURN_IF_ERROR(arena.bind(p.value(), buffer, align_up(p.value().arena_bytes)));
    w.as_blocks = borrowed;
    return model.init(arena, w.source(), LayerOptions{});
  }
};

// The largest |a − b|, NaN where any is (fmax would drop it).
double max_gap(const float* a, const float* b, uint32_t n) {
  double gap = 0.0;
  for (uint32_t i = 0; i < n; ++i) {
    const double d = std::fabs(static_cast<double>(a[i]) - b[i]);
    if (!(d <= gap)) gap = d;
  }
  return gap;
}

TEST_CASE("Model over borrowed blocks in row groups: the f32 model's logits in prefill and decode, no heap call") {
  for (const bool tied : {true, false}) {
    INFO("tied " << tied);
    BlockWeights w(block_config(tied), tied ? 5 : 6);
    BlockModel blocks, f32;
    REQUIRE(blocks.init(w, true).ok());
    REQUIRE(f32.init(w, false).ok());
    CHECK((blocks.model.row_grouped_bytes() > 0) == simd::matmul_reads_row_groups(DType::kQ4_1));
    CHECK(f32.model.row_grouped_bytes() == 0);
    test::Rng rng(7);
    std::vector<int32_t> ids(12);
    for (int32_t& id : ids) id = static_cast<int32_t>(rng.next() % 50);
    // Prefill: the tiles decode the blocks to the f32 values the other model holds; the head
    // meets the last token alone, as a decode step does. Decode: x at 16 bits over the row groups.
    const uint32_t steps = static_cast<uint32_t>(ids.size()) - 4;
    std::vector<float> got(size_t{steps} * 50), want(size_t{steps} * 50);
    HeapCount heap;
    bool ok = blocks.model.prefill(ids.data(), 5).ok() && f32.model.prefill(ids.data(), 5).ok();
    for (uint32_t s = 0; s < steps && ok; ++s) {
      if (s > 0) ok = blocks.model.decode(ids[4 + s]).ok() && f32.model.decode(ids[4 + s]).ok();
      std::memcpy(&got[s * 50], blocks.model.logits(), 50 * sizeof(float));
      std::memcpy(&want[s * 50], f32.model.logits(), 50 * sizeof(float));
    }
    CHECK(heap.stop() == 0);
    REQUIRE(ok);
    // Elsewhere no matrix is in row groups, and a decode step may quantize x to 8 bits (the integer
    // GEMVs of matmul_int8-inl.h and its kin: their bounds are tests/kernels' and the families
    // check's); the prefill's last logits above come from the head, whose x keeps 16 bits or more.
    const uint32_t compared = simd::matmul_reads_row_groups(DType::kQ4_1) ? steps : 1;
    for (uint32_t s = 0; s < compared; ++s) {
      double scale = 0.0;
      for (uint32_t v = 0; v < 50; ++v) scale = std::fmax(scale, std::fabs(want[s * 50 + v]));
      INFO("token " << 4 + s << ", logits up to " << scale);
      // x's 16-bit rounding (2⁻¹⁶ of each block's largest value) through two layers and the head of
      // random weights, whose sums cancel: measured up to 8e-4 of the largest logit. A layout
      // error gives logits of the order of the largest itself.
      CHECK(max_gap(&got[s * 50], &want[s * 50], 50) < 4e-3 * scale);
    }
  }
}

TEST_CASE("Model over row groups: its state names the weights by the embedding's bytes as the file holds them") {
  // The fingerprint (model.hpp: the norms, then the embedding's first bytes) over the source's
  // bytes, as a model that holds the embedding as lent computes it: a state moves between
  // machines whatever layout each holds its matrices in.
  BlockWeights w(block_config(true), 5);
  BlockModel m;
  REQUIRE(m.init(w, true).ok());
  const int32_t id = 3;
  REQUIRE(m.model.prefill(&id, 1).ok());
  std::vector<uint8_t> state(m.model.state_bytes());
  REQUIRE(m.model.save_state(state.data(), state.size(), nullptr).ok());
  const Config& c = w.config;
  uint64_t want = test::state_fnv(w.norm[static_cast<uint32_t>(ModelTensor::kFinalNorm)][0].data(), c.d_model * 4);
  for (uint32_t l = 0; l < c.n_layers; ++l) {
    for (const ModelTensor t : {ModelTensor::kAttnNorm, ModelTensor::kFfnNorm}) {
      want = test::state_fnv(w.norm[static_cast<uint32_t>(t)][l].data(), c.d_model * 4, want);
    }
  }
  const BlockMatrix& embedding = w.of(ModelTensor::kEmbedding, 0);
  want = test::state_fnv(embedding.blocks.data(), static_cast<size_t>(dtype_row_bytes(DType::kF32, c.d_model)), want);
  uint64_t got = 0;
  std::memcpy(&got, state.data() + 56, 8);
  CHECK(got == want);
}

TEST_CASE("Model refuses a source that lends a matrix marked row_groups, by name") {
  BlockWeights w(block_config(true), 5);
  w.mark_lent = true;
  BlockModel m;
  const Status s = m.init(w, true);
  CHECK(s.code() == Code::kInvalidArgument);
  CHECK(std::string(s.message()) ==
        "model: ffn_down of layer 0: the source lent it marked row_groups; sources lend tensors as their files hold "
        "them");
  CHECK_FALSE(m.model.initialized());
}

}  // namespace
}  // namespace headway
