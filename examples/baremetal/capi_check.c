/* The C API on bare metal: one C99 translation unit (no hosted runtime, no allocator) plans a
 * small GQA config through headway.h, runs headway_attend on static buffers and a KV cache over
 * static memory, and compares both with a naive reference written here. main.cc prints the
 * verdict. Memory for every object is static, sized with margin and checked against the size
 * queries at run time. */
#include <math.h>
#include <stddef.h>
#include <stdint.h>

#include "capi_check.h"
#include "headway/headway.h"

enum { kTq = 3, kTkv = 11, kHeads = 4, kKvHeads = 2, kDim = 16 };

static float q[kTq * kHeads * kDim], k[kTkv * kKvHeads * kDim], v[kTkv * kKvHeads * kDim];
static float out[kTq * kHeads * kDim], cached_out[kTq * kHeads * kDim];
static uint8_t config_memory[1024] __attribute__((aligned(HEADWAY_OBJECT_ALIGNMENT)));
static uint8_t plan_memory[2048] __attribute__((aligned(HEADWAY_OBJECT_ALIGNMENT)));
static uint8_t workspace[24576] __attribute__((aligned(HEADWAY_ARENA_ALIGNMENT)));
static uint8_t cache_memory[49152] __attribute__((aligned(HEADWAY_ARENA_ALIGNMENT)));

static float next_value(uint32_t* state) { /* in [-1, 1) */
  *state = *state * 1664525u + 1013904223u;
  return (float)((*state >> 8) & 0xFFFFFF) / 8388608.0f - 1.0f;
}

/* Causal, bottom-right aligned, in double. */
static double reference_error(void) {
  double worst = 0.0;
  int i, h, j, c;
  for (i = 0; i < kTq; ++i) {
    for (h = 0; h < kHeads; ++h) {
      const int kvh = h / (kHeads / kKvHeads), last = i + kTkv - kTq;
      double logits[kTkv], max = -1e300, sum = 0.0;
      for (j = 0; j <= last; ++j) {
        double l = 0.0;
        for (c = 0; c < kDim; ++c) l += (double)q[(i * kHeads + h) * kDim + c] * k[(j * kKvHeads + kvh) * kDim + c];
        logits[j] = l / sqrt((double)kDim);
        if (logits[j] > max) max = logits[j];
      }
      for (j = 0; j <= last; ++j) sum += exp(logits[j] - max);
      for (c = 0; c < kDim; ++c) {
        double o = 0.0, d;
        for (j = 0; j <= last; ++j) o += exp(logits[j] - max) / sum * v[(j * kKvHeads + kvh) * kDim + c];
        d = fabs(o - out[(i * kHeads + h) * kDim + c]);
        if (!(d <= worst)) worst = d;
      }
    }
  }
  return worst;
}

int capi_check(double* max_error, const char** message) {
  static headway_error error;
  headway_config* config;
  headway_plan* plan;
  headway_kv_cache* cache;
  headway_attention_shape shape;
  headway_attention_params params;
  size_t bytes = 0;
  uint32_t state = 7u, i;

  *message = "ok";
  for (i = 0; i < sizeof(q) / sizeof(q[0]); ++i) q[i] = next_value(&state);
  for (i = 0; i < sizeof(k) / sizeof(k[0]); ++i) k[i] = next_value(&state);
  for (i = 0; i < sizeof(v) / sizeof(v[0]); ++i) v[i] = next_value(&state);

  shape.t_q = kTq;
  shape.t_kv = kTkv;
  shape.n_heads = kHeads;
  shape.n_kv_heads = kKvHeads;
  shape.head_dim = kDim;
  headway_attention_params_init(&params);
  params.causal = 1;
  if (headway_attention_workspace_bytes(&shape, &params, 1, &bytes, &error) != HEADWAY_OK ||
      headway_attend(q, k, v, HEADWAY_F32, out, &shape, &params, NULL, workspace, sizeof(workspace), &error) !=
          HEADWAY_OK) {
    *message = error.message;
    return 0;
  }
  *max_error = reference_error();

  /* The same keys through a KV cache of a planned config (f32 K/V, no RoPE): its last kTq rows
   * attend as headway_attend did, bitwise. */
  if (headway_config_from_spec(config_memory, sizeof(config_memory),
                               "d_model=64 heads=4 kv_heads=2 ctx=16 layers=1 kv_dtype=f32", &config,
                               &error) != HEADWAY_OK ||
      headway_plan_create(plan_memory, sizeof(plan_memory), config, NULL, &plan, &error) != HEADWAY_OK ||
      headway_kv_cache_memory_bytes(plan, 0, 1, &bytes, &error) != HEADWAY_OK ||
      headway_kv_cache_create(cache_memory, sizeof(cache_memory), plan, 0, NULL, &cache, &error) != HEADWAY_OK ||
      headway_kv_cache_append(cache, k, v, kTkv, &error) != HEADWAY_OK ||
      headway_kv_cache_attend(cache, q, cached_out, kTq, NULL, &error) != HEADWAY_OK) {
    *message = error.message;
    return 0;
  }
  for (i = 0; i < sizeof(out) / sizeof(out[0]); ++i) {
    if (out[i] != cached_out[i]) {
      *message = "the KV cache's attention differs from headway_attend's";
      return 0;
    }
  }
  return 1;
}
