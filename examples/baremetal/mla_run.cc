// Multi-head latent attention on a Cortex-M, no heap: tiny_mla.hpp's two MLA blocks, their Plan a
// constant expression, one static arena of exactly the plan's bytes, and a Session built in place
// in static storage over f16 weights borrowed from the image (mla_golden.h). The layers run the
// absorbed form (runtime/model/mla_layer.cc): the query latent and its norm, the kv latent and its
// norm, the queries absorbed through W_UK, RoPE on the first 16 values of each row, one cache row
// of 80 values a token read as K and V by the attention kernels (head_dim 80, one kv head, the
// generic runtime-head_dim code), the heads' outputs through W_UV and Wo. Every output row is held
// against the double reference of the expanded form (tests/baremetal/mla_golden_gen.cc).
#include "mla_run.hpp"

#include <cmath>
#include <cstdint>
#include <new>

#include "headway/arena.hpp"
#include "headway/config.hpp"
#include "headway/plan.hpp"
#include "headway/session.hpp"
#include "instruction_count.hpp"
#include "mla_golden.h"
#include "semihosting.hpp"
#include "session_step.hpp"
#include "tiny_mla.hpp"

namespace tiny_mla {
namespace {

using headway::Status;

constexpr headway::Plan kPlan = headway::plan_for(config(), options());
static_assert(!kPlan.overflow);
// The whole runtime memory of the stack (121 KiB): the latent caches (2 layers × 32 rows × 80 f16
// values, 10 KiB), RoPE tables, the fused rows of 8 tokens (absorbed queries, cache row, query
// projection, query latent, values: 768 floats a token), attention's output, the block output and
// the residual stream (42 KiB), the kernel's scratch for head_dim 80 (69 KiB: its K and V tiles
// widened to f32 are most of it). A change that grows it shows up here first.
static_assert(kPlan.arena_bytes <= 128 * 1024, "the MLA stack's arena outgrew its 128 KiB budget");
static_assert(kPlan.head_dim == 80 && kPlan.config.kv_heads() == 1 && kPlan.cache_rows == config().max_seq &&
              kPlan.kernel == headway::KernelKind::kGeneric);
// One f16 row a token a layer: K and V at once.
static_assert(kPlan.kv_bytes_per_token == uint64_t{2} * 80 * 2);
static_assert(kFirstChunk <= kPlan.max_tokens && kSecondChunk <= kPlan.max_tokens && kTokens <= config().max_seq);

headway::StaticArena<kPlan.arena_bytes> mla_arena;

// f16 weights and an f16 cache, relative to the largest output magnitude (as main.cc's stack).
constexpr double kTolerance = 5e-4;

// kSpec through parse_spec and make_plan (on the board: the spec parser is part of the core):
// the same attention as config(), byte for byte of the arena.
Status check_spec() {
  const headway::Result<headway::Config> c = headway::parse_spec(kSpec);
  if (!c.ok()) return c.status();
  HEADWAY_RETURN_IF_ERROR(headway::validate(*c));
  const headway::Result<headway::Plan> p = headway::make_plan(*c, options());
  if (!p.ok()) return p.status();
  if (p->arena_bytes != kPlan.arena_bytes || p->head_dim != kPlan.head_dim || p->qkv_width != kPlan.qkv_width ||
      p->weight_bytes != kPlan.weight_bytes || p->kv_cache_bytes != kPlan.kv_cache_bytes ||
      c->rope.style != config().rope.style || c->rope.rotary_dim != config().rope.rotary_dim) {
    return Status::error(headway::Code::kInternal, "the spec plans %u arena bytes, head_dim %u; config() %u, %u",
                         unsigned(p->arena_bytes), p->head_dim, unsigned(kPlan.arena_bytes), kPlan.head_dim);
  }
  return Status();
}

// Runs tokens [first, first + n) against the golden rows (session_step.hpp).
Status step(headway::Session& s, uint32_t first, uint32_t n, double* err, uint64_t* ticks) {
  static float y[kPlan.max_tokens * config().d_model];
  return firmware::session_step(s, kInput, kGoldenOut, config().d_model, first, n, y, err, ticks);
}

}  // namespace

bool run(bool counting, void* session_storage) {
  constexpr headway::Config c = config();
  cortex_m::Text()
      .str("MLA stack: ")
      .str(c.name)
      .str(", ")
      .u64(c.n_layers)
      .str(" layers, d_model ")
      .u64(c.d_model)
      .str(", ")
      .u64(c.n_heads)
      .str(" heads of nope ")
      .u64(c.mla.qk_nope_head_dim)
      .str(" + rope ")
      .u64(c.mla.qk_rope_head_dim)
      .str(", v ")
      .u64(c.mla.v_head_dim)
      .str(", q_lora ")
      .u64(c.mla.q_lora_rank)
      .str(", kv_lora ")
      .u64(c.mla.kv_lora_rank)
      .str(": one cache row of ")
      .u64(kPlan.head_dim)
      .str(" f16 values a token\n")
      .print();
  cortex_m::Text()
      .str("MLA arena ")
      .u64(kPlan.arena_bytes)
      .str(" bytes (kv ")
      .u64(kPlan.kv_cache_bytes)
      .str(", rope ")
      .u64(kPlan.rope_bytes)
      .str(", activations ")
      .u64(kPlan.activation_bytes)
      .str(", scratch ")
      .u64(kPlan.scratch_bytes)
      .str("), weights ")
      .u64(kPlan.weight_bytes)
      .str(" bytes f16 in the image\n")
      .print();

  headway::Arena arena;
  // Built in place, never destroyed (no destructor registered to run at exit); the Session that
  // was there before is not used again.
  headway::Session* session = new (session_storage) headway::Session;
  Status s = check_spec();
  if (s.ok()) s = arena.bind(kPlan, mla_arena.bytes, sizeof(mla_arena.bytes));
  if (s.ok()) s = session->init(arena, kLayerWeights, c.n_layers);
  double prefill_err = 0.0, decode_err = 0.0;
  uint64_t prefill_ticks = 0, decode_ticks = 0;
  if (s.ok()) s = step(*session, 0, kFirstChunk, &prefill_err, &prefill_ticks);
  if (s.ok()) s = step(*session, kFirstChunk, kSecondChunk, &prefill_err, &prefill_ticks);
  for (uint32_t i = kFirstChunk + kSecondChunk; s.ok() && i < kTokens; ++i) {
    s = step(*session, i, 1, &decode_err, &decode_ticks);
  }
  if (!s.ok()) {
    cortex_m::Text().str("FAIL: MLA stack: ").str(s.message()).str("\n").print();
    return false;
  }
  const bool ok = prefill_err <= kTolerance && decode_err <= kTolerance;
  cortex_m::Text()
      .str("mla prefill ")
      .u64(kFirstChunk)
      .str(" + ")
      .u64(kSecondChunk)
      .str(" tokens: max relative error ")
      .sci(prefill_err)
      .str(", decode ")
      .u64(kDecodeSteps)
      .str(" steps: ")
      .sci(decode_err)
      .str("\n")
      .print();
  if (counting) {
    cortex_m::Text()
        .str("MLA instructions: prefill ")
        .u64(kFirstChunk + kSecondChunk)
        .str(" tokens ")
        .u64(cortex_m::ticks_to_instructions(prefill_ticks))
        .str(", decode ")
        .u64(kDecodeSteps)
        .str(" steps ")
        .u64(cortex_m::ticks_to_instructions(decode_ticks))
        .str(" (qemu -icount, SysTick calibrated; not cycles)\n")
        .print();
  }
  cortex_m::Text()
      .str(ok ? "PASS" : "FAIL")
      .str(": ")
      .u64(kTokens)
      .str(" tokens through ")
      .u64(c.n_layers)
      .str(" MLA layers match the double reference (expanded form) within ")
      .sci(kTolerance)
      .str("\n")
      .print();
  return ok;
}

}  // namespace tiny_mla
