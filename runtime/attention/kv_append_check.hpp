// The checks of a KV cache's plan and of its appends and truncates (k, v [n, n_kv_heads, head_dim]
// at positions position .. position + n − 1), shared by the CPU cache (KvCache, CpuBackend) and
// the GPU backend, so both reject the same calls with the same words.
#pragma once

#include <cstddef>
#include <cstdint>

#include "headway/plan.hpp"
#include "headway/status.hpp"

namespace headway {

// A plan a cache can be made over: made by make_plan() (its config checked) and, for a
// sliding-window ring, with a row besides its sink rows (KvRing::holdable). `who` starts the
// message ("kv cache", "cpu backend", "gpu backend").
Status check_kv_plan(const char* who, const Plan& plan);

// What the token strides of k and v must be: each at least kv_width (the CPU cache), or also
// equal (the GPU backend, whose row writer steps k and v by one stride).
enum class KvStrides : uint8_t { kEachAtLeastWidth, kEqualAndAtLeastWidth };

// `who` starts every message ("kv cache", "gpu backend"); position: the next token's (the
// cache's start position + the tokens already held). Checks,
// in order: null k or v, the strides, the context (max_seq), and for a sliding-window ring
// (cache_rows < max_seq) at most max_tokens at once. n == 0 passes whatever the pointers are.
Status check_kv_append(const char* who, const Plan& plan, uint32_t position, const float* k, size_t k_token_stride,
                       const float* v, size_t v_token_stride, uint32_t n, KvStrides strides);

// The checks of a truncate to the first `tokens` of the `size` appended since the reset (KvCache::truncate,
// GpuBackend::truncate): at most size (kOutOfRange); a sliding-window ring (cache_rows < max_seq) only while every
// token a later query could see is still in its rows (kFailedPrecondition, naming the ring's rows, window and how
// many tokens can be removed). A ring that never wrapped (size <= cache_rows) keeps every token. After it wrapped, a
// causal, one-sided window without sink tokens still can: the next query (token `tokens`) sees the window − 1 tokens
// before it, and those are held while size − tokens <= cache_rows − window + 1; the rows of the removed tokens that
// the ring then shows as its oldest keys fall outside every later query's window. Otherwise a wrapped ring refuses.
Status check_kv_truncate(const char* who, const Plan& plan, uint32_t size, uint32_t tokens);

}  // namespace headway
