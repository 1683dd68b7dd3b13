// A whole decoder on a Cortex-M, no heap: tiny_decoder.hpp's model, its Plan a constant
// expression, one static arena of exactly the plan's bytes, and a Model built in place in static
// storage. Every matrix (the embedding, Q/K/V/O, gate/up/down, the LM head) is q8_0 blocks in the
// image, borrowed where it lies through a ModelWeightsSource over decoder_golden.h's constant
// tables (weights_in_arena false); init copies only the norms into the arena. A prefill of the
// prompt (two chunks), then greedy decoding (Sampler, temperature 0) of the token each step chose,
// fed back. Every step's token must equal the double reference's (decoder_golden.h, computed on
// the build machine) and its logits lie within kTolerance of the reference's.
#include "decoder_run.hpp"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <new>

#include "decoder_golden.h"
#include "headway/arena.hpp"
#include "headway/config.hpp"
#include "headway/model.hpp"
#include "headway/plan.hpp"
#include "headway/sampler.hpp"
#include "instruction_count.hpp"
#include "semihosting.hpp"
#include "tiny_decoder.hpp"

namespace tiny_decoder {
namespace {

using headway::ModelTensor;
using headway::Status;
using headway::TensorRef;

constexpr headway::Plan kPlan = headway::plan_for(config(), options());
static_assert(!kPlan.overflow);
// The whole runtime memory of the model: the KV caches (layer 0's ring, layer 1's max_seq rows),
// RoPE tables, attention activations and scratch, the norms (f32), the MLP's hidden rows, the
// logits and the sampler's scratch. The matrices stay in the image. A change that grows it shows
// up here first.
static_assert(kPlan.arena_bytes <= 144 * 1024, "the tiny decoder's arena outgrew its 144 KiB budget");
static_assert(kPlan.layer(0).sliding && kPlan.layer(0).kv_rows == 15 && !kPlan.layer(1).sliding &&
              kPlan.layer(1).kv_rows == config().max_seq);
static_assert(kPromptTokens > kPlan.max_tokens && kPromptTokens + kDecodeSteps > kPlan.layer(0).kv_rows &&
              kPromptTokens + kDecodeSteps <= config().max_seq);
static_assert(kPlan.logits_rows == 1 && kPlan.kernel == headway::KernelKind::kD64);

headway::StaticArena<kPlan.arena_bytes> decoder_arena;
// The Model's own state (its layer objects, the borrowed views): built in place once, never
// destroyed, so no destructor is registered to run at exit.
alignas(headway::Model) uint8_t model_storage[sizeof(headway::Model)];

// Largest |logit − reference| of any step. The matrices' q8_0 values are exact on both sides; what
// differs is x meeting them in 16-bit codes on the M55's Helium path (f32 elsewhere), f32 against
// double through 2 blocks, and K/V rounded to f16 from either (a value on an f16 rounding boundary may
// round apart). The reference's greedy choices lead by at least 50 times this (decoder_golden_gen).
constexpr double kTolerance = 1e-3;

const TensorRef& table(ModelTensor t, uint32_t layer) {
  return kTensors[static_cast<uint32_t>(t)][headway::model_tensor_info(t).per_layer ? layer : 0];
}

// The image's tables as the Model's weights source: the norms' rows copied out (f32), the
// matrices and the attention weights lent as they lie.
headway::ModelWeightsSource image_source() {
  headway::ModelWeightsSource s;
  s.attention = [](void*, uint32_t layer) -> headway::Result<headway::LayerWeights> { return kAttention[layer]; };
  s.rows = [](void*, ModelTensor t, uint32_t layer, headway::TensorShape shape, uint64_t first, uint64_t n,
              float* dst) -> Status {
    const TensorRef& r = table(t, layer);
    if (r.data == nullptr || r.dtype != headway::DType::kF32 || r.rows != shape.rows || r.cols != shape.cols) {
      return Status::error(headway::Code::kInvalidArgument, "the image holds no f32 [%u, %u] tensor here", shape.rows,
                           shape.cols);
    }
    std::memcpy(dst, static_cast<const float*>(r.data) + first * shape.cols, n * shape.cols * sizeof(float));
    return Status();
  };
  s.tensor = [](void*, ModelTensor t, uint32_t layer, headway::TensorShape) -> headway::Result<TensorRef> {
    return table(t, layer);  // its shape and type are checked by the Model
  };
  return s;
}

// The bytes of the model's weights in the image.
uint64_t image_weight_bytes() {
  uint64_t n = 0;
  for (const auto& layers : kTensors)
    for (const TensorRef& t : layers) n += t.present() ? t.bytes() : 0;
  for (const headway::LayerWeights& w : kAttention)
    for (const TensorRef* t : {&w.wq, &w.wk, &w.wv, &w.wo, &w.bq, &w.bk, &w.bv}) n += t->bytes();
  return n;
}

// Greedy decoding as the firmware runs it: each step's token and the largest logit error.
struct Outcome {
  uint32_t steps = 0;          // logits rows compared
  uint32_t tokens_equal = 0;   // greedy tokens equal to the reference's
  double error = 0.0;          // largest |logit − reference|, NaN sticks
  double largest = 0.0;        // largest |reference logit|
  uint64_t prefill_ticks = 0;  // SysTick ticks of the Model's calls alone
  uint64_t decode_ticks = 0;
};

// Compares the model's logits with step `step`'s reference row and picks the greedy token.
Status check_step(headway::Model& m, headway::Sampler& sampler, uint32_t step, Outcome* o, int32_t* token) {
  const float* got = m.logits();
  const float* want = kLogits + size_t{step} * config().model.vocab_size;
  for (uint32_t v = 0; v < config().model.vocab_size; ++v) {
    const double d = std::fabs(double{got[v]} - double{want[v]});
    if (!(d <= o->error)) o->error = d;
    if (std::fabs(double{want[v]}) > o->largest) o->largest = std::fabs(double{want[v]});
  }
  const headway::Result<int32_t> next = sampler.sample(got, nullptr, 0);
  if (!next.ok()) return next.status();
  *token = next.value();
  o->tokens_equal += *token == kGreedy[step];
  ++o->steps;
  return Status();
}

Status decode(Outcome* o) {
  HEADWAY_RETURN_IF_ERROR(headway::validate(kPlan.config));  // what make_plan() would check
  // The Model keeps a pointer to the Arena: both are used only within this call.
  headway::Arena arena;
  HEADWAY_RETURN_IF_ERROR(arena.bind(kPlan, decoder_arena.bytes, sizeof(decoder_arena.bytes)));
  headway::Model* m = new (model_storage) headway::Model;
  HEADWAY_RETURN_IF_ERROR(m->init(arena, image_source(), headway::LayerOptions{}));
  headway::Sampler sampler;
  headway::SamplerParams greedy;
  greedy.temperature = 0.0f;
  HEADWAY_RETURN_IF_ERROR(sampler.init(greedy, config().model.vocab_size, arena.sampler_scratch(),
                                       headway::Sampler::scratch_bytes(config().model.vocab_size)));

  uint64_t t0 = cortex_m::systick_ticks();
  HEADWAY_RETURN_IF_ERROR(m->prefill(kPrompt, kPromptTokens));
  o->prefill_ticks = cortex_m::systick_ticks() - t0;
  int32_t token = 0;
  HEADWAY_RETURN_IF_ERROR(check_step(*m, sampler, 0, o, &token));
  for (uint32_t step = 1; step <= kDecodeSteps; ++step) {
    t0 = cortex_m::systick_ticks();
    HEADWAY_RETURN_IF_ERROR(m->decode(token));
    o->decode_ticks += cortex_m::systick_ticks() - t0;
    HEADWAY_RETURN_IF_ERROR(check_step(*m, sampler, step, o, &token));
  }
  return Status();
}

}  // namespace

bool run(bool counting) {
  constexpr headway::Config c = config();
  cortex_m::Text()
      .str("whole model: ")
      .str(c.name)
      .str(", vocab ")
      .u64(c.model.vocab_size)
      .str(", d_model ")
      .u64(c.d_model)
      .str(", ")
      .u64(c.n_layers)
      .str(" layers (window ")
      .u64(c.window)
      .str(", full), heads ")
      .u64(c.n_heads)
      .str("/")
      .u64(c.kv_heads())
      .str(" x ")
      .u64(kPlan.head_dim)
      .str(", SwiGLU ")
      .u64(c.model.intermediate_size)
      .str(", RMSNorm, ")
      .str(c.model.tie_word_embeddings ? "tied" : "own")
      .str(" LM head\n")
      .print();
  cortex_m::Text()
      .str("model arena ")
      .u64(kPlan.arena_bytes)
      .str(" bytes (kv ")
      .u64(kPlan.kv_cache_bytes)
      .str(", rope ")
      .u64(kPlan.rope_bytes)
      .str(", norms ")
      .u64(kPlan.model_weights_bytes)
      .str(", activations ")
      .u64(kPlan.activation_bytes + kPlan.model_activation_bytes)
      .str(", scratch ")
      .u64(kPlan.scratch_bytes)
      .str("), weights ")
      .u64(image_weight_bytes())
      .str(" bytes q8_0 in the image, Model object ")
      .u64(sizeof(headway::Model))
      .str(" bytes\n")
      .print();

  Outcome o;
  const Status s = decode(&o);
  if (!s.ok()) {
    cortex_m::Text().str("FAIL: whole model: ").str(s.message()).str("\n").print();
    return false;
  }
  const bool ok = o.tokens_equal == kGreedyTokens && o.steps == kGreedyTokens && o.error <= kTolerance;
  cortex_m::Text()
      .str("model prefill ")
      .u64(kPromptTokens)
      .str(" tokens, greedy decode ")
      .u64(kDecodeSteps)
      .str(" steps: greedy tokens ")
      .u64(o.tokens_equal)
      .str("/")
      .u64(kGreedyTokens)
      .str(" equal, logits max abs error ")
      .sci(o.error)
      .str(" (largest |logit| ")
      .fixed(o.largest, 3)
      .str(", smallest greedy lead ")
      .fixed(kMinGreedyGap, 3)
      .str(")\n")
      .print();
  if (counting) {
    cortex_m::Text()
        .str("model instructions: prefill ")
        .u64(kPromptTokens)
        .str(" tokens ")
        .u64(cortex_m::ticks_to_instructions(o.prefill_ticks))
        .str(", decode ")
        .u64(kDecodeSteps)
        .str(" steps ")
        .u64(cortex_m::ticks_to_instructions(o.decode_ticks))
        .str(" (qemu -icount, SysTick calibrated; not cycles)\n")
        .print();
  }
  cortex_m::Text()
      .str(ok ? "PASS" : "FAIL")
      .str(": the whole model's ")
      .u64(kGreedyTokens)
      .str(" greedy tokens equal the double reference's, logits within ")
      .sci(kTolerance)
      .str("\n")
      .print();
  return ok;
}

}  // namespace tiny_decoder
