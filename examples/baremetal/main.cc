// headway on a Cortex-M, no heap: a model fixed at compile time (tiny_model.hpp), its Plan
// computed by the compiler, one static arena of exactly the plan's size, and a Session over it:
// a prefill of kPromptTokens, then kDecodeSteps single-token decode steps, each through the Q/K/V
// projections (Highway GEMM over f16 weights kept in the image), RoPE, the KV cache, attention
// and the output projection of both layers. Every output row is compared with the
// double-precision reference computed on the build machine (firmware_golden.h). Then a Session of
// multi-head latent attention blocks (mla_run.cc) against its reference, and a whole
// decoder (decoder_run.cc: embeddings, norms, attention, MLPs, LM head, greedy tokens, q8_0
// weights) against its reference. A summary goes out over semihosting and the exit status says
// whether everything matched (0) or not (1). Under qemu-system-arm -icount shift=0 (make
// bench-baremetal) it also prints the instructions of each prefill and of the decode steps
// (instruction_count.hpp; instructions, not cycles); without -icount those lines are left out.
#include <cmath>
#include <cstdint>
#include <new>

#include "capi_check.h"
#include "decoder_run.hpp"
#include "firmware_golden.h"
#include "headway/arena.hpp"
#include "headway/build_info.hpp"
#include "headway/plan.hpp"
#include "headway/session.hpp"
#include "instruction_count.hpp"
#include "kernel_path.hpp"
#include "mla_run.hpp"
#include "semihosting.hpp"
#include "session_step.hpp"
#include "tiny_model.hpp"

namespace {

constexpr headway::Plan kPlan = headway::plan_for(tiny::config(), tiny::options());
static_assert(!kPlan.overflow);
// The whole runtime memory of this model: KV cache rings, activations, scratch (the weights are
// borrowed from the image). A change that grows it shows up here first.
static_assert(kPlan.arena_bytes <= 160 * 1024, "the tiny model's arena outgrew its 160 KiB budget");
static_assert(kPlan.cache_rows == 27 && kPlan.kernel == headway::KernelKind::kD64);

headway::StaticArena<kPlan.arena_bytes> tiny_arena;
// The Session's own state (its layer objects): built in place, never destroyed, so no destructor
// is registered to run at exit. The MLA stack (mla_run.cc) builds its Session here after this one.
alignas(headway::Session) uint8_t session_storage[sizeof(headway::Session)];

// f16 K/V and f16 weights, relative to the largest output magnitude (as the hosted session suite).
constexpr double kTolerance = 5e-4;
// f32 K/V through the C API (capi_check.c): attention in f32 against double.
constexpr double kCapiTolerance = 1e-5;

// Runs tokens [first, first + n) against the golden rows (session_step.hpp).
headway::Status step(headway::Session& s, uint32_t first, uint32_t n, double* err, uint64_t* ticks) {
  static float y[tiny::kPromptTokens * tiny::config().d_model];
  return firmware::session_step(s, tiny::kInput, tiny::kGoldenOut, kPlan.config.d_model, first, n, y, err, ticks);
}

}  // namespace

int main() {
  const bool counting = cortex_m::instruction_count_start();
  cortex_m::Text()
      .str("headway firmware: ")
      .str(kPlan.config.name)
      .str(", ")
      .u64(kPlan.config.n_layers)
      .str(" layers, d_model ")
      .u64(kPlan.config.d_model)
      .str(", heads ")
      .u64(kPlan.config.n_heads)
      .str("/")
      .u64(kPlan.config.kv_heads())
      .str(" x ")
      .u64(kPlan.head_dim)
      .str(", window ")
      .u64(kPlan.config.window)
      .str(", kernels ")
      .str(headway::kernel_target_name())
      .str("\n")
      .print();
  if (!cortex_m::kernel_path_is_expected(headway::kernel_target_name())) return 1;
  cortex_m::Text()
      .str("arena ")
      .u64(kPlan.arena_bytes)
      .str(" bytes (kv ")
      .u64(kPlan.kv_cache_bytes)
      .str(", activations ")
      .u64(kPlan.activation_bytes)
      .str(", scratch ")
      .u64(kPlan.scratch_bytes)
      .str("), weights ")
      .u64(kPlan.weight_bytes)
      .str(" bytes f16 in the image, Session object ")
      .u64(sizeof(headway::Session))
      .str(" bytes\n")
      .print();

  headway::Arena arena;
  headway::Session* session = new (session_storage) headway::Session;
  headway::Status s = arena.bind(kPlan, tiny_arena.bytes, sizeof(tiny_arena.bytes));
  if (s.ok()) s = session->init(arena, tiny::kLayerWeights, kPlan.config.n_layers);

  double prefill_err = 0.0, decode_err = 0.0;
  uint64_t prefill_ticks = 0, decode_ticks = 0;
  if (s.ok()) s = step(*session, 0, tiny::kPromptTokens, &prefill_err, &prefill_ticks);
  for (uint32_t i = 0; s.ok() && i < tiny::kDecodeSteps; ++i) {
    s = step(*session, tiny::kPromptTokens + i, 1, &decode_err, &decode_ticks);
  }
  if (!s.ok()) {
    cortex_m::Text().str("FAIL: ").str(s.message()).str("\n").print();
    return 1;
  }
  double capi_err = 0.0;
  const char* capi_message = "";
  const bool capi_ok = capi_check(&capi_err, &capi_message) && capi_err <= kCapiTolerance;
  cortex_m::Text()
      .str("C API (capi_check.c): ")
      .str(capi_message)
      .str(", attention max abs error ")
      .sci(capi_err)
      .str("\n")
      .print();
  const bool ok = prefill_err <= kTolerance && decode_err <= kTolerance && capi_ok;
  cortex_m::Text()
      .str("prefill ")
      .u64(tiny::kPromptTokens)
      .str(" tokens: max relative error ")
      .sci(prefill_err)
      .str("\n")
      .print();
  cortex_m::Text()
      .str("decode ")
      .u64(tiny::kDecodeSteps)
      .str(" steps (KV ring of ")
      .u64(kPlan.cache_rows)
      .str(" rows wraps): max relative error ")
      .sci(decode_err)
      .str("\n")
      .print();
  if (counting) {
    cortex_m::Text()
        .str("instructions: prefill ")
        .u64(tiny::kPromptTokens)
        .str(" tokens ")
        .u64(cortex_m::ticks_to_instructions(prefill_ticks))
        .str(", decode ")
        .u64(tiny::kDecodeSteps)
        .str(" steps ")
        .u64(cortex_m::ticks_to_instructions(decode_ticks))
        .str(" (qemu -icount, SysTick calibrated; not cycles)\n")
        .print();
  }
  cortex_m::Text()
      .str(ok ? "PASS" : "FAIL")
      .str(": ")
      .u64(tiny::kTokens)
      .str(" tokens through ")
      .u64(kPlan.config.n_layers)
      .str(" layers match the double reference within ")
      .sci(kTolerance)
      .str("\n")
      .print();
  const bool mla_ok = tiny_mla::run(counting, session_storage);  // the stack above is done with it
  const bool decoder_ok = tiny_decoder::run(counting);
  return ok && mla_ok && decoder_ok ? 0 : 1;
}
