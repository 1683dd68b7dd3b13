// Plan figures against hand-derived ones, per family: MHA, GQA, MQA, explicit head_dim,
// sliding window, partial rotary.
#include <doctest/doctest.h>

#include "headway/attention.hpp"
#include "headway/plan.hpp"
#include "headway/presets.hpp"

namespace headway {
namespace {

// Llama-2 7B, f16 KV: K and V of one token in all 32 layers = 2 × 4096 × 2 B × 32 = 512 KiB.
constexpr Plan kLlama2 = plan_for(presets::llama2_7b(), {});
static_assert(kLlama2.kv_bytes_per_token == 2ull * 4096 * 2 * 32);
static_assert(kLlama2.kv_cache_bytes == 4096ull * 524288);  // 2 GiB at 4096 tokens
static_assert(kLlama2.head_dim == 128 && kLlama2.kernel == KernelKind::kD128);
static_assert(kLlama2.arena_bytes == kLlama2.scratch_offset + kLlama2.scratch_bytes);

TEST_CASE("XNNPACK projections: a packed region replaces the weights copy") {
  PlanOptions o;
  o.projection = Projection::kXnnpack;
  o.threads = 4;
  const Plan p = plan_for(presets::llama2_7b(), o);
  CHECK(p.weights_region_bytes == 0);
  CHECK(p.projection_blocks == 4);
  CHECK(p.packed_offset == 0);
  CHECK(p.packed_bytes == 32 * p.packed_bytes_per_layer);
  CHECK(p.packed_bytes_per_layer >= 4ull * 4096 * 4097 * 4);  // f32, one bias word per row
  CHECK(p.kv_offset == p.packed_bytes);
}

TEST_CASE("Llama-2 7B: MHA, head_dim 128") {
  const Plan& p = kLlama2;
  CHECK(p.group_size == 1);
  CHECK(p.q_width == 4096);
  CHECK(p.kv_width == 4096);
  CHECK(p.qkv_width == 12288);
  CHECK(p.cache_rows == 4096);
  // Wq, Wk, Wv, Wo: 4 × 4096 × 4096 f32 per layer.
  CHECK(p.weight_bytes_per_layer == 4ull * 4096 * 4096 * 4);
  CHECK(p.weight_bytes == 32ull * 4 * 4096 * 4096 * 4);
  CHECK(p.kv_bytes_per_layer == 4096ull * 2 * 4096 * 2);
  CHECK(p.max_tokens == 512);
  // QKV rows, attention out, then a block's output and the residual stream [512, d_model].
  CHECK(p.activation_bytes == 512ull * 12288 * 4 + 512ull * 4096 * 4 + 2 * 512ull * 4096 * 4);
  CHECK(p.block_out_offset == p.activations_offset + 512ull * 12288 * 4 + 512ull * 4096 * 4);
  CHECK(p.stream_offset == p.block_out_offset + 512ull * 4096 * 4);
  CHECK(p.packed_bytes == 0);
  CHECK(p.kv_offset == p.weight_bytes);
  // RoPE: each layer's 64 frequencies (head_dim 128 / 2), f64, after the KV cache.
  CHECK(p.rope_bytes_per_layer == 64 * 8);
  CHECK(p.rope_bytes == 32 * 64 * 8);
  CHECK(p.rope_offset == p.kv_offset + p.kv_cache_bytes);
  CHECK(p.activations_offset == p.rope_offset + p.rope_bytes);
  CHECK(p.scratch_offset == p.activations_offset + p.activation_bytes);
  const HeadLayout h5 = p.head(5);
  CHECK(h5.kv_head == 5);
  CHECK(h5.qkv_q_offset == 5 * 128 * 4);
  CHECK(h5.qkv_k_offset == (4096 + 5 * 128) * 4);
  CHECK(h5.qkv_v_offset == (4096 + 4096 + 5 * 128) * 4);
  CHECK(h5.cache_k_offset == 5ull * 4096 * 128 * 2);
  CHECK(h5.cache_v_offset == 32ull * 4096 * 128 * 2 + 5ull * 4096 * 128 * 2);
}

TEST_CASE("Llama-3 8B: GQA 32/8 shares each kv head among 4 query heads") {
  const Result<Plan> r = make_plan(presets::llama3_8b());
  REQUIRE(r.ok());
  const Plan& p = r.value();
  CHECK(p.group_size == 4);
  CHECK(p.q_width == 4096);
  CHECK(p.kv_width == 1024);
  CHECK(p.kv_bytes_per_token == 2ull * 1024 * 2 * 32);  // 128 KiB
  CHECK(p.weight_bytes_per_layer == (2ull * 4096 * 4096 + 2ull * 1024 * 4096) * 4);
  for (uint32_t h = 0; h < 32; ++h) CHECK(p.head(h).kv_head == h / 4);
  // Split-KV decode partials: 64 query rows (16 tokens × group 4), 32 tasks / 8 kv heads = 4
  // chunks (of 2048 keys at 8192); per kv head max and sum [4, 64] f32 and O [4, 64, 128] f32.
  CHECK(p.attention_partials_bytes == 8ull * (2 * 4 * 64 * 4 + 4 * 64 * 128 * 4));
  CHECK(p.scratch_bytes == p.scratch_bytes_per_thread + p.attention_partials_bytes);
  CHECK(p.head(7).qkv_k_offset == (4096 + 1 * 128) * 4);
}

TEST_CASE("Gemma 2B: MQA, head_dim 256 runs the generic kernel") {
  const Plan p = make_plan(presets::gemma_2b()).value();
  CHECK(p.group_size == 8);
  CHECK(p.kv_width == 256);
  CHECK(p.kernel == KernelKind::kGeneric);
  CHECK(p.kv_bytes_per_token == 2ull * 256 * 2 * 18);
  for (uint32_t h = 0; h < 8; ++h) CHECK(p.head(h).kv_head == 0);
}

TEST_CASE("Gemma 7B and Qwen3: explicit head_dim decouples the query width from d_model") {
  const Plan g = make_plan(presets::gemma_7b()).value();
  CHECK(g.head_dim == 256);
  CHECK(g.q_width == 4096);  // 16 × 256, while d_model is 3072
  CHECK(g.weight_bytes_per_layer == (2ull * 4096 * 3072 + 2ull * 4096 * 3072) * 4);
  const Plan q = make_plan(presets::qwen3_06b()).value();
  CHECK(q.q_width == 2048);
  CHECK(q.kv_width == 1024);
  CHECK(q.kernel == KernelKind::kD128);
  // q/k norm weights: two head_dim vectors per layer.
  CHECK(q.weight_bytes_per_layer == align_up((2ull * 2048 * 1024 + 2ull * 1024 * 1024 + 2 * 128) * 4));
}

TEST_CASE("sliding window: the cache is a ring of window + max_tokens - 1 rows") {
  Config c = presets::mistral_7b();
  PlanOptions o;
  o.max_tokens = 1;  // decode only: exactly the window
  CHECK(make_plan(c, o).value().cache_rows == 4096);
  o.max_tokens = 256;
  const Plan p = make_plan(c, o).value();
  CHECK(p.cache_rows == 4096 + 255);
  CHECK(p.kv_bytes_per_layer == align_up((4096ull + 255) * 2 * 1024 * 2));
  c.window = 0;
  CHECK(make_plan(c, o).value().cache_rows == 32768);
}

TEST_CASE("options: threads multiply scratch, dtypes change bytes, borrowed weights leave the arena") {
  PlanOptions o;
  o.threads = 4;
  o.weight_dtype = DType::kF16;
  o.weights_in_arena = false;
  Config c = presets::smollm2_135m();
  c.kv_dtype = DType::kF32;
  const Plan p = make_plan(c, o).value();
  CHECK(p.scratch_bytes == 4 * p.scratch_bytes_per_thread + p.attention_partials_bytes);
  CHECK(p.scratch_bytes_per_thread == attention_scratch_bytes(64, 3));
  CHECK(p.weight_bytes_per_layer == align_up((2ull * 576 * 576 + 2ull * 192 * 576) * 2));
  // Borrowed q4_1 blocks, as a GGUF holds them: 20 bytes per 32 values of each matrix row.
  PlanOptions blocks = o;
  blocks.weight_dtype = DType::kQ4_1;
  const Plan q = make_plan(c, blocks).value();
  CHECK(q.weight_bytes_per_layer == align_up((576ull + 2 * 192 + 576) * (576 / 32) * 20));
  blocks.weights_in_arena = true;  // the arena keeps f32, f16 or bf16 only
  CHECK(make_plan(c, blocks).status().code() == Code::kInvalidArgument);
  CHECK(p.kv_bytes_per_token == 2ull * 192 * 4 * 30);
  CHECK(p.kv_offset == 0);
  CHECK(p.rope_bytes == 30 * align_up(32 * 8));  // head_dim 64: 32 frequencies per layer
  CHECK(p.arena_bytes == p.kv_cache_bytes + p.rope_bytes + p.activation_bytes + p.scratch_bytes);
  o.threads = 1000;
  CHECK(make_plan(c, o).status().code() == Code::kInvalidArgument);
}

TEST_CASE("biases add their widths, every region is 64-byte aligned") {
  const Plan p = make_plan(presets::phi2()).value();
  CHECK(p.head_dim == 80);
  CHECK(p.kernel == KernelKind::kGeneric);
  // Wq Wk Wv Wo 2560×2560, qkv bias 3 × 2560, o bias 2560.
  CHECK(p.weight_bytes_per_layer == align_up((4ull * 2560 * 2560 + 3 * 2560 + 2560) * 4));
  CHECK(p.rope_bytes_per_layer == align_up(16 * 8));               // partial rotary: 32 of 80 dims, 16 pairs
  CHECK(make_plan(presets::bert_base()).value().rope_bytes == 0);  // no RoPE, no table
  size_t n = 0;
  const presets::Entry* all = presets::all(&n);
  for (size_t i = 0; i < n; ++i) {
    const Plan q = make_plan(all[i].make()).value();
    INFO(all[i].name);
    CHECK(q.kv_offset % kAlignment == 0);
    CHECK(q.rope_offset % kAlignment == 0);
    CHECK(q.activations_offset % kAlignment == 0);
    CHECK(q.scratch_offset % kAlignment == 0);
    CHECK(q.arena_bytes % kAlignment == 0);
  }
}

TEST_CASE("split-KV chunks: about kAttnSplitTasks tasks in all, whole tiles, at least kAttnKvChunk keys") {
  static_assert(attention_kv_chunk(8192, 8) == 2048);  // 8 kv heads × 4 chunks
  static_assert(attention_kv_chunk(4096, 8) == 1024);
  static_assert(attention_kv_chunk(8200, 8) == 2112);          // 2050 rounded up to whole 64-key tiles
  static_assert(attention_kv_chunk(2048, 3) == kAttnKvChunk);  // 11 chunks wanted, 4 of 512 keys
  static_assert(attention_kv_chunk(1024, 15) == kAttnKvChunk);
  static_assert(attention_kv_chunk(65536, 1) == 2048);  // MQA: 32 chunks
  for (uint32_t tasks = 1; tasks < kAttnSplitMinTasks; ++tasks) {
    for (uint32_t t_kv : {1024u, 1025u, 4095u, 8192u, 100000u}) {
      const uint32_t chunk = attention_kv_chunk(t_kv, tasks);
      const uint32_t n = (t_kv + chunk - 1) / chunk;
      INFO("tasks " << tasks << " t_kv " << t_kv);
      CHECK(chunk % kAttnKvTile == 0);
      CHECK(chunk >= kAttnKvChunk);
      CHECK(n >= 2);
      CHECK(n * tasks <= kAttnSplitTasks + tasks);
    }
  }
}

// Every call a plan allows (t_q up to max_tokens, t_kv up to cache_rows) finds the workspace
// attention asks for within the plan's scratch.
TEST_CASE("the plan's scratch holds attention's workspace for every call it allows") {
  size_t n = 0;
  const presets::Entry* all = presets::all(&n);
  for (size_t i = 0; i < n; ++i) {
    for (uint32_t threads : {1u, 3u}) {
      PlanOptions o;
      o.threads = threads;
      o.max_tokens = 40;
      const Plan p = make_plan(all[i].make(), o).value();
      INFO(all[i].name << ", " << threads << " threads");
      for (uint32_t t_q = 1; t_q <= p.max_tokens; ++t_q) {
        for (uint32_t t_kv : {t_q, 1023u, 1024u, 1025u, 2049u, 4096u, 5000u, 8191u, p.cache_rows}) {
          if (t_kv < t_q || t_kv > p.cache_rows) continue;
          const AttentionShape shape{t_q, t_kv, p.config.n_heads, p.config.n_kv_heads, p.head_dim};
          const Result<size_t> need = attention_workspace_bytes(shape, threads);
          REQUIRE(need.ok());
          INFO("t_q " << t_q << " t_kv " << t_kv);
          CHECK(need.value() <= p.scratch_bytes);
        }
      }
    }
  }
}

// A causal call's tokens are one sequence's: at most the context. A bidirectional model's may be a
// batch of sentences (Session::encode), each within the context: an explicit max_tokens holds.
TEST_CASE("max_tokens is clamped to the context, but an encoder's batch may pass it") {
  Config c = presets::bert_base();
  PlanOptions o;
  o.max_tokens = 4096;
  CHECK(make_plan(c, o).value().max_tokens == 4096);
  c.causal = true;
  CHECK(make_plan(c, o).value().max_tokens == 512);
  c.causal = false;
  c.max_seq = 300;
  o.max_tokens = 0;
  CHECK(make_plan(c, o).value().max_tokens == 300);
}

}  // namespace
}  // namespace headway
