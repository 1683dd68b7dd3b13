/* The C API from C99 (-std=c99 -pedantic -Werror): a small attention, a KV cache and a Session
 * against a naive double-precision reference written here, the plan's figures and JSON, and bad
 * input answered with the C++ API's codes and messages. Built against the build tree's headers
 * and libheadway.so (ctest), and against an installed copy of both (tests/consumer). */
#define _POSIX_C_SOURCE 200112L /* posix_memalign */

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "headway/headway.h"

static int failures = 0;

#define CHECK(cond)                                                            \
  do {                                                                         \
    if (!(cond)) {                                                             \
      fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
      ++failures;                                                              \
    }                                                                          \
  } while (0)

/* A call that must succeed; its message when it does not. */
#define OK(call)                                                                                                       \
  do {                                                                                                                 \
    headway_status s_ = (call);                                                                                        \
    if (s_ != HEADWAY_OK) {                                                                                            \
      fprintf(stderr, "%s:%d: %s returned %s: %s\n", __FILE__, __LINE__, #call, headway_status_name(s_), err.message); \
      ++failures;                                                                                                      \
    }                                                                                                                  \
  } while (0)

static headway_error err;

/* Memory at HEADWAY_ARENA_ALIGNMENT (which covers HEADWAY_OBJECT_ALIGNMENT), zeroed, kept
 * until release_all() at the end of each test. */
static void* allocations[256];
static int n_allocations = 0;
static void* aligned(size_t bytes) {
  void* p = NULL;
  if (n_allocations == 256 || posix_memalign(&p, HEADWAY_ARENA_ALIGNMENT, bytes ? bytes : 1) != 0) {
    fprintf(stderr, "out of memory\n");
    exit(1);
  }
  memset(p, 0, bytes ? bytes : 1);
  allocations[n_allocations++] = p;
  return p;
}
static void release_all(void) {
  while (n_allocations > 0) free(allocations[--n_allocations]);
}

static uint32_t rng_state = 12345u;
static float uniform(void) { /* in [-1, 1) */
  rng_state = rng_state * 1664525u + 1013904223u;
  return (float)((rng_state >> 8) & 0xFFFFFF) / 8388608.0f - 1.0f;
}
static float* random_floats(size_t n) {
  size_t i;
  float* x = (float*)aligned(n * sizeof(float));
  for (i = 0; i < n; ++i) x[i] = uniform();
  return x;
}

/* o[t_q, h, d] = softmax(scale q kᵀ) v over the keys query i sees: causal bottom-right aligned
 * (j <= i + t_kv - t_q), window w > 0 (j > i + t_kv - t_q - w), softcap c > 0. */
static void reference_attention(const float* q, const float* k, const float* v, float* o, uint32_t t_q, uint32_t t_kv,
                                uint32_t n_heads, uint32_t n_kv_heads, uint32_t d, int causal, uint32_t window,
                                double softcap) {
  uint32_t i, h, j, c;
  const uint32_t group = n_heads / n_kv_heads;
  const double scale = 1.0 / sqrt((double)d);
  double* logits = (double*)malloc(t_kv * sizeof(double));
  for (i = 0; i < t_q; ++i) {
    const long last = (long)i + (long)t_kv - (long)t_q;
    for (h = 0; h < n_heads; ++h) {
      const uint32_t kvh = h / group;
      double max = -INFINITY, sum = 0.0;
      for (j = 0; j < t_kv; ++j) {
        double l = 0.0;
        int visible = 1;
        if (causal && (long)j > last) visible = 0;
        if (window > 0 && (long)j <= last - (long)window) visible = 0;
        for (c = 0; c < d; ++c)
          l += (double)q[((size_t)i * n_heads + h) * d + c] * k[((size_t)j * n_kv_heads + kvh) * d + c];
        l *= scale;
        if (softcap > 0) l = softcap * tanh(l / softcap);
        logits[j] = visible ? l : -INFINITY;
        if (logits[j] > max) max = logits[j];
      }
      for (c = 0; c < d; ++c) o[((size_t)i * n_heads + h) * d + c] = 0.0f;
      if (max == -INFINITY) continue;
      for (j = 0; j < t_kv; ++j) sum += exp(logits[j] - max);
      for (c = 0; c < d; ++c) {
        double acc = 0.0;
        for (j = 0; j < t_kv; ++j) acc += exp(logits[j] - max) / sum * v[((size_t)j * n_kv_heads + kvh) * d + c];
        o[((size_t)i * n_heads + h) * d + c] = (float)acc;
      }
    }
  }
  free(logits);
}

static double max_abs_diff(const float* a, const float* b, size_t n) {
  size_t i;
  double m = 0.0;
  for (i = 0; i < n; ++i) {
    const double diff = fabs((double)a[i] - (double)b[i]);
    if (!(diff <= m)) m = diff;
  }
  return m;
}

static int contains(const char* text, const char* part) { return strstr(text, part) != NULL; }

static headway_config* config_from_spec(const char* spec) {
  headway_config* config = NULL;
  OK(headway_config_from_spec(aligned(headway_config_object_bytes()), headway_config_object_bytes(), spec, &config,
                              &err));
  return config;
}

static headway_plan* plan_of(const headway_config* config) {
  headway_plan* plan = NULL;
  OK(headway_plan_create(aligned(headway_plan_object_bytes()), headway_plan_object_bytes(), config, NULL, &plan, &err));
  return plan;
}

static void test_basics(void) {
  headway_dtype t = HEADWAY_F32;
  char header_version[32];
  sprintf(header_version, "%d.%d.%d", HEADWAY_VERSION_MAJOR, HEADWAY_VERSION_MINOR, HEADWAY_VERSION_PATCH);
  CHECK(strcmp(headway_version(), header_version) == 0); /* the library is the header's */
  CHECK(strcmp(headway_status_name(HEADWAY_INVALID_ARGUMENT), "invalid argument") == 0);
  CHECK(strcmp(headway_dtype_name(HEADWAY_Q4_0), "q4_0") == 0);
  CHECK(headway_dtype_parse("q8_0", &t, &err) == HEADWAY_OK && t == HEADWAY_Q8_0);
  CHECK(headway_dtype_parse("int8", &t, &err) == HEADWAY_INVALID_ARGUMENT);
  CHECK(err.code == HEADWAY_INVALID_ARGUMENT &&
        contains(err.message, "'int8' is not one of f32, f16, bf16, q8_0, q4_0"));
  CHECK(t == HEADWAY_Q8_0); /* unchanged */
  CHECK(headway_dtype_row_bytes(HEADWAY_Q8_0, 64) == 68 && headway_dtype_row_bytes(HEADWAY_Q4_0, 80) == 54);
  CHECK(headway_preset_count() > 10 && headway_preset_name(headway_preset_count()) == NULL);
  CHECK(strlen(headway_kernel_target()) > 0);
}

static void test_plan(void) {
  headway_config* config = config_from_spec("d_model=64 heads=4 kv_heads=2 ctx=64 layers=2 kv_dtype=f32");
  headway_plan* plan = plan_of(config);
  headway_plan_info info;
  headway_head_layout head;
  char json[16384];
  size_t length = 0;
  void* memory = aligned(headway_config_object_bytes());
  headway_config* bad = NULL;
  headway_plan* no_plan = NULL;

  info.struct_size = sizeof(info);
  OK(headway_plan_get_info(plan, &info, &err));
  CHECK(info.head_dim == 16 && info.group_size == 2 && info.q_width == 64 && info.kv_width == 32);
  CHECK(info.n_layers == 2 && info.max_seq == 64 && info.kv_dtype == HEADWAY_F32 && info.causal == 1);
  CHECK(info.kv_bytes_per_token == 2u * 2u * 32u * 4u); /* layers × (K, V) × kv_width × f32 */
  CHECK(info.arena_bytes > info.kv_cache_bytes && info.arena_bytes % 64 == 0);
  OK(headway_plan_head(plan, 3, &head, &err));
  CHECK(head.q_head == 3 && head.kv_head == 1 && head.qkv_q_offset == 3u * 16u * 4u);
  CHECK(headway_plan_head(plan, 4, &head, &err) == HEADWAY_OUT_OF_RANGE && contains(err.message, "head 4"));

  CHECK(headway_plan_json(plan, json, 8, &length, &err) == HEADWAY_OUT_OF_RANGE && length > 100);
  OK(headway_plan_json(plan, json, sizeof(json), &length, &err));
  CHECK(strlen(json) == length && contains(json, "\"n_kv_heads\":2") && contains(json, "\"head_dim\":16"));

  /* The message of the C++ API's validate(), through headway_plan_create. */
  OK(headway_config_from_spec(memory, headway_config_object_bytes(), "d_model=800 heads=12 ctx=2048", &bad, &err));
  CHECK(headway_config_validate(bad, &err) == HEADWAY_INVALID_ARGUMENT);
  CHECK(contains(err.message, "hidden_size 800 is not divisible by num_heads 12"));
  CHECK(headway_plan_create(aligned(headway_plan_object_bytes()), headway_plan_object_bytes(), bad, NULL, &no_plan,
                            &err) == HEADWAY_INVALID_ARGUMENT);
  CHECK(no_plan == NULL && contains(err.message, "hidden_size 800"));
  CHECK(headway_config_from_spec(memory, headway_config_object_bytes(), "d_model=64 heads=4 colour=red", &bad, &err) ==
        HEADWAY_INVALID_ARGUMENT);
  CHECK(contains(err.message, "unknown key 'colour'"));
  CHECK(headway_config_from_preset(memory, headway_config_object_bytes(), "llama-9", &bad, &err) == HEADWAY_NOT_FOUND);
  CHECK(headway_config_from_preset(memory, headway_config_object_bytes() - 1, "llama-3-8b", &bad, &err) ==
        HEADWAY_INVALID_ARGUMENT);
  CHECK(contains(err.message, "memory is"));
  CHECK(headway_config_from_preset((char*)memory + 1, headway_config_object_bytes(), "llama-3-8b", &bad, &err) ==
        HEADWAY_INVALID_ARGUMENT);
  CHECK(contains(err.message, "aligned"));
  OK(headway_config_from_preset(memory, headway_config_object_bytes(), "llama-3-8b", &bad, &err));
  CHECK(headway_config_set_kv_dtype(bad, (headway_dtype)90, &err) == HEADWAY_INVALID_ARGUMENT);
  /* kv_rotation: over q8_0 it plans; over the preset's f16 it is refused by name. */
  CHECK(headway_config_set_kv_rotation(bad, (headway_kv_rotation)5, &err) == HEADWAY_INVALID_ARGUMENT);
  OK(headway_config_set_kv_rotation(bad, HEADWAY_KV_ROTATION_HADAMARD, &err));
  CHECK(headway_config_validate(bad, &err) == HEADWAY_INVALID_ARGUMENT);
  CHECK(contains(err.message, "kv_rotation hadamard needs kv_dtype q8_0 or q4_0"));
  OK(headway_config_set_kv_dtype(bad, HEADWAY_Q8_0, &err));
  OK(headway_config_validate(bad, &err));
  OK(headway_config_set_kv_rotation(bad, HEADWAY_KV_ROTATION_NONE, &err));
  OK(headway_config_set_kv_dtype(bad, HEADWAY_F16, &err));
  {
    const char* hf =
        "{\"model_type\": \"llama\", \"hidden_size\": 256, \"num_attention_heads\": 8, "
        "\"num_key_value_heads\": 2, \"num_hidden_layers\": 3, \"max_position_embeddings\": 512}";
    headway_config* from_json = NULL;
    headway_plan* p = NULL;
    OK(headway_config_from_hf_json(aligned(headway_config_object_bytes()), headway_config_object_bytes(), hf,
                                   strlen(hf), &from_json, &err));
    p = plan_of(from_json);
    if (p != NULL) {
      OK(headway_plan_get_info(p, &info, &err));
      CHECK(info.n_kv_heads == 2 && info.head_dim == 32 && info.n_layers == 3 && info.max_seq == 512);
    }
  }
}

static void test_attend(void) {
  const uint32_t t_q = 5, t_kv = 19, n_heads = 4, n_kv_heads = 2, d = 24;
  float* q = random_floats((size_t)t_q * n_heads * d);
  float* k = random_floats((size_t)t_kv * n_kv_heads * d);
  float* v = random_floats((size_t)t_kv * n_kv_heads * d);
  float* o = (float*)aligned((size_t)t_q * n_heads * d * sizeof(float));
  float* ref = (float*)aligned((size_t)t_q * n_heads * d * sizeof(float));
  headway_attention_shape shape;
  headway_attention_params params;
  size_t bytes = 0;
  void* workspace;
  int variant;

  shape.t_q = t_q;
  shape.t_kv = t_kv;
  shape.n_heads = n_heads;
  shape.n_kv_heads = n_kv_heads;
  shape.head_dim = d;
  for (variant = 0; variant < 3; ++variant) {
    headway_attention_params_init(&params);
    params.causal = variant != 0;
    params.window = variant == 2 ? 7 : 0;
    params.softcap = variant == 2 ? 5.0f : 0.0f;
    OK(headway_attention_workspace_bytes(&shape, &params, 1, &bytes, &err));
    workspace = aligned(bytes);
    OK(headway_attend(q, k, v, HEADWAY_F32, o, &shape, &params, NULL, workspace, bytes, &err));
    reference_attention(q, k, v, ref, t_q, t_kv, n_heads, n_kv_heads, d, params.causal, params.window, params.softcap);
    CHECK(max_abs_diff(o, ref, (size_t)t_q * n_heads * d) < 1e-5);
  }

  /* f16 K/V converted by the library: the reference over the same rounded values. */
  {
    const size_t n = (size_t)t_kv * n_kv_heads * d;
    uint16_t* k16 = (uint16_t*)aligned(n * 2);
    uint16_t* v16 = (uint16_t*)aligned(n * 2);
    headway_attention_params_init(&params);
    OK(headway_convert_row(HEADWAY_F16, k, n, k16, n * 2, &err));
    OK(headway_convert_row(HEADWAY_F16, v, n, v16, n * 2, &err));
    OK(headway_attention_workspace_bytes(&shape, &params, 1, &bytes, &err));
    workspace = aligned(bytes);
    OK(headway_attend(q, k16, v16, HEADWAY_F16, o, &shape, &params, NULL, workspace, bytes, &err));
    reference_attention(q, k, v, ref, t_q, t_kv, n_heads, n_kv_heads, d, 0, 0, 0.0);
    CHECK(max_abs_diff(o, ref, (size_t)t_q * n_heads * d) < 2e-3);

    /* Bad input: the C++ API's code and message, nothing written. */
    memset(o, 0, (size_t)t_q * n_heads * d * sizeof(float));
    shape.n_kv_heads = 3;
    CHECK(headway_attend(q, k16, v16, HEADWAY_F16, o, &shape, &params, NULL, workspace, bytes, &err) ==
          HEADWAY_INVALID_ARGUMENT);
    CHECK(err.code == HEADWAY_INVALID_ARGUMENT && contains(err.message, "n_kv_heads 3"));
    shape.n_kv_heads = n_kv_heads;
    CHECK(headway_attend(q, k16, v16, HEADWAY_F16, o, &shape, &params, NULL, workspace, 64, &err) ==
          HEADWAY_INVALID_ARGUMENT);
    CHECK(contains(err.message, "workspace"));
    params.struct_size = 3;
    CHECK(headway_attend(q, k16, v16, HEADWAY_F16, o, &shape, &params, NULL, workspace, bytes, &err) ==
          HEADWAY_INVALID_ARGUMENT);
    CHECK(contains(err.message, "struct_size 3"));
    CHECK(headway_attend(q, k16, v16, (headway_dtype)70, o, &shape, NULL, NULL, workspace, bytes, &err) ==
          HEADWAY_INVALID_ARGUMENT);
    CHECK(contains(err.message, "kv_dtype 70"));
    CHECK(max_abs_diff(o, ref, 0) == 0.0 && o[0] == 0.0f);
  }
  /* A pool: the same result bitwise as no pool. */
  {
    headway_pool* pool = NULL;
    float* o2 = (float*)aligned((size_t)t_q * n_heads * d * sizeof(float));
    OK(headway_pool_create(aligned(headway_pool_object_bytes()), headway_pool_object_bytes(), 2, &pool, &err));
    headway_attention_params_init(&params);
    params.causal = 1;
    OK(headway_attention_workspace_bytes(&shape, &params, headway_pool_threads(pool), &bytes, &err));
    workspace = aligned(bytes);
    OK(headway_attend(q, k, v, HEADWAY_F32, o, &shape, &params, NULL, workspace, bytes, &err));
    OK(headway_attend(q, k, v, HEADWAY_F32, o2, &shape, &params, pool, workspace, bytes, &err));
    CHECK(memcmp(o, o2, (size_t)t_q * n_heads * d * sizeof(float)) == 0);
    CHECK(headway_pool_create(aligned(headway_pool_object_bytes()), headway_pool_object_bytes(), 0, &pool, &err) ==
          HEADWAY_INVALID_ARGUMENT);
    headway_pool_destroy(pool);
  }
}

static void test_kv_cache(void) {
  headway_config* config = config_from_spec("d_model=64 heads=4 kv_heads=2 ctx=16 layers=1 kv_dtype=f32");
  headway_plan* plan = plan_of(config);
  const uint32_t n_heads = 4, n_kv_heads = 2, d = 16, n = 9, t_q = 3;
  float* k = random_floats((size_t)n * n_kv_heads * d);
  float* v = random_floats((size_t)n * n_kv_heads * d);
  float* q = random_floats((size_t)t_q * n_heads * d);
  float* o = (float*)aligned((size_t)t_q * n_heads * d * sizeof(float));
  float* ref = (float*)aligned((size_t)t_q * n_heads * d * sizeof(float));
  size_t bytes = 0;
  void* memory;
  headway_kv_cache* cache = NULL;

  OK(headway_kv_cache_memory_bytes(plan, 0, 1, &bytes, &err));
  memory = aligned(bytes);
  CHECK(headway_kv_cache_create(memory, bytes - 1, plan, 0, NULL, &cache, &err) == HEADWAY_INVALID_ARGUMENT);
  CHECK(headway_kv_cache_memory_bytes(plan, 1, 1, &bytes, &err) == HEADWAY_OUT_OF_RANGE);
  OK(headway_kv_cache_create(memory, bytes, plan, 0, NULL, &cache, &err));
  CHECK(headway_kv_cache_rows(cache) == 16 && headway_kv_cache_size(cache) == 0);
  OK(headway_kv_cache_append(cache, k, v, 4, &err));
  OK(headway_kv_cache_append(cache, k + 4 * n_kv_heads * d, v + 4 * n_kv_heads * d, n - 4, &err));
  CHECK(headway_kv_cache_size(cache) == n && headway_kv_cache_position(cache) == n);
  OK(headway_kv_cache_attend(cache, q, o, t_q, NULL, &err));
  reference_attention(q, k, v, ref, t_q, n, n_heads, n_kv_heads, d, 1, 0, 0.0);
  CHECK(max_abs_diff(o, ref, (size_t)t_q * n_heads * d) < 1e-5);
  /* Past the context: refused with the position and the context, nothing stored. */
  CHECK(headway_kv_cache_append(cache, k, v, 8, &err) == HEADWAY_OUT_OF_RANGE);
  CHECK(contains(err.message, "16") && headway_kv_cache_size(cache) == n);
  headway_kv_cache_reset(cache, 0);
  CHECK(headway_kv_cache_size(cache) == 0 && headway_kv_cache_position(cache) == 0);

  /* With RoPE (NeoX, theta 10000): the queries of the last t_q tokens rotated at their
   * positions, as a naive rotate-half here computes it. */
  {
    headway_plan* roped = plan_of(config_from_spec("d_model=64 heads=4 kv_heads=2 ctx=16 layers=1 rope_theta=10000"));
    headway_kv_cache* rc = NULL;
    float* rotated = (float*)aligned((size_t)t_q * n_heads * d * sizeof(float));
    uint32_t t, h, i;
    OK(headway_kv_cache_memory_bytes(roped, 0, 1, &bytes, &err));
    OK(headway_kv_cache_create(aligned(bytes), bytes, roped, 0, NULL, &rc, &err));
    OK(headway_kv_cache_append(rc, k, v, n, &err));
    memcpy(rotated, q, (size_t)t_q * n_heads * d * sizeof(float));
    OK(headway_kv_cache_rotate_queries(rc, rotated, t_q, &err));
    for (t = 0; t < t_q; ++t) {
      for (h = 0; h < n_heads; ++h) {
        const float* x = q + ((size_t)t * n_heads + h) * d;
        const float* y = rotated + ((size_t)t * n_heads + h) * d;
        for (i = 0; i < d / 2; ++i) {
          const double angle = (double)(n - t_q + t) * pow(10000.0, -2.0 * i / d);
          CHECK(fabs(y[i] - (x[i] * cos(angle) - x[i + d / 2] * sin(angle))) < 1e-5);
          CHECK(fabs(y[i + d / 2] - (x[i + d / 2] * cos(angle) + x[i] * sin(angle))) < 1e-5);
        }
      }
    }
    CHECK(headway_kv_cache_rotate_queries(rc, rotated, n + 1, &err) == HEADWAY_INVALID_ARGUMENT);
  }
}

/* The Session's stack, naively: h = x; per layer qkv = h Wᵀ, o = attention (causal, no RoPE),
 * h += o Woᵀ. W row-major [out, in]. */
static void reference_session(float* const* w, const float* x, float* y, uint32_t t, uint32_t layers, uint32_t d_model,
                              uint32_t n_heads, uint32_t n_kv_heads, uint32_t d) {
  const uint32_t qw = n_heads * d, kvw = n_kv_heads * d;
  float* h = (float*)malloc((size_t)t * d_model * sizeof(float));
  float* q = (float*)malloc((size_t)t * qw * sizeof(float));
  float* k = (float*)malloc((size_t)t * kvw * sizeof(float));
  float* v = (float*)malloc((size_t)t * kvw * sizeof(float));
  float* a = (float*)malloc((size_t)t * qw * sizeof(float));
  uint32_t l, i, r, c;
  memcpy(h, x, (size_t)t * d_model * sizeof(float));
  for (l = 0; l < layers; ++l) {
    const float* wq = w[4 * l];
    const float* wk = w[4 * l + 1];
    const float* wv = w[4 * l + 2];
    const float* wo = w[4 * l + 3];
    for (i = 0; i < t; ++i) {
      for (r = 0; r < qw; ++r) {
        double s = 0;
        for (c = 0; c < d_model; ++c) s += (double)h[(size_t)i * d_model + c] * wq[(size_t)r * d_model + c];
        q[(size_t)i * qw + r] = (float)s;
      }
      for (r = 0; r < kvw; ++r) {
        double sk = 0, sv = 0;
        for (c = 0; c < d_model; ++c) {
          sk += (double)h[(size_t)i * d_model + c] * wk[(size_t)r * d_model + c];
          sv += (double)h[(size_t)i * d_model + c] * wv[(size_t)r * d_model + c];
        }
        k[(size_t)i * kvw + r] = (float)sk;
        v[(size_t)i * kvw + r] = (float)sv;
      }
    }
    reference_attention(q, k, v, a, t, t, n_heads, n_kv_heads, d, 1, 0, 0.0);
    for (i = 0; i < t; ++i) {
      for (r = 0; r < d_model; ++r) {
        double s = 0;
        for (c = 0; c < qw; ++c) s += (double)a[(size_t)i * qw + c] * wo[(size_t)r * qw + c];
        h[(size_t)i * d_model + r] += (float)s;
      }
    }
  }
  memcpy(y, h, (size_t)t * d_model * sizeof(float));
  free(h);
  free(q);
  free(k);
  free(v);
  free(a);
}

/* weights_in_arena 0: the session borrows the caller's weights; projection 1: XNNPACK, where the
 * library has it. */
static void test_session(int weights_in_arena, int projection) {
  const uint32_t layers = 2, d_model = 64, n_heads = 4, n_kv_heads = 2, d = 16, t = 7;
  headway_config* config = config_from_spec("d_model=64 heads=4 kv_heads=2 ctx=32 layers=2 kv_dtype=f32");
  headway_plan_options options;
  headway_plan* plan = NULL;
  headway_plan_info info;
  headway_layer_weights weights[2];
  float* w[8];
  float* x = random_floats((size_t)t * d_model);
  float* y = (float*)aligned((size_t)t * d_model * sizeof(float));
  float* ref = (float*)aligned((size_t)t * d_model * sizeof(float));
  void* arena;
  headway_session* session = NULL;
  uint32_t l, i;

  for (l = 0; l < layers; ++l) {
    headway_tensor* slots[4];
    const uint32_t rows[4] = {n_heads * d, n_kv_heads * d, n_kv_heads * d, d_model};
    const uint32_t cols[4] = {d_model, d_model, d_model, n_heads * d};
    headway_layer_weights_init(&weights[l]);
    slots[0] = &weights[l].wq;
    slots[1] = &weights[l].wk;
    slots[2] = &weights[l].wv;
    slots[3] = &weights[l].wo;
    for (i = 0; i < 4; ++i) {
      uint32_t e;
      w[4 * l + i] = random_floats((size_t)rows[i] * cols[i]);
      for (e = 0; e < rows[i] * cols[i]; ++e) w[4 * l + i][e] *= 0.2f;
      slots[i]->data = w[4 * l + i];
      slots[i]->dtype = HEADWAY_F32;
      slots[i]->rows = rows[i];
      slots[i]->cols = cols[i];
    }
  }
  headway_plan_options_init(&options);
  options.weights_in_arena = weights_in_arena;
  options.projection = projection;
  if (projection == 1 && !headway_built_with_xnnpack()) {
    printf("XNNPACK projections skipped: this build has no XNNPACK\n");
    return;
  }
  OK(headway_plan_create(aligned(headway_plan_object_bytes()), headway_plan_object_bytes(), config, &options, &plan,
                         &err));
  info.struct_size = sizeof(info);
  OK(headway_plan_get_info(plan, &info, &err));
  arena = aligned((size_t)info.arena_bytes);

  /* Bad weights: the layer's message, no session. */
  weights[1].wk.rows = 31;
  CHECK(headway_session_create(aligned(headway_session_object_bytes()), headway_session_object_bytes(), plan, arena,
                               (size_t)info.arena_bytes, weights, layers, NULL, &session,
                               &err) == HEADWAY_INVALID_ARGUMENT);
  CHECK(session == NULL && contains(err.message, "31"));
  weights[1].wk.rows = n_kv_heads * d;
  CHECK(headway_session_create(aligned(headway_session_object_bytes()), headway_session_object_bytes(), plan, arena,
                               (size_t)info.arena_bytes, weights, 1, NULL, &session, &err) == HEADWAY_INVALID_ARGUMENT);

  OK(headway_session_create(aligned(headway_session_object_bytes()), headway_session_object_bytes(), plan, arena,
                            (size_t)info.arena_bytes, weights, layers, NULL, &session, &err));
  if (session == NULL) return;
  reference_session(w, x, ref, t, layers, d_model, n_heads, n_kv_heads, d);
  /* The first t - 1 tokens at once, then the last one decoded. */
  OK(headway_session_prefill(session, x, t - 1, y, &err));
  OK(headway_session_decode(session, x + (size_t)(t - 1) * d_model, y + (size_t)(t - 1) * d_model, &err));
  CHECK(headway_session_position(session) == t);
  CHECK(max_abs_diff(y, ref, (size_t)t * d_model) < 1e-4);
  /* Past the context: refused, position unchanged. */
  CHECK(headway_session_prefill(session, x, 30, y, &err) == HEADWAY_OUT_OF_RANGE);
  CHECK(headway_session_position(session) == t);
  headway_session_reset(session);
  CHECK(headway_session_position(session) == 0);
  OK(headway_session_prefill(session, x, t, y, &err));
  CHECK(max_abs_diff(y, ref, (size_t)t * d_model) < 1e-4);
  headway_session_destroy(session);
}

/* A tiny decoder through the model API: weights from callbacks (the model tensors and each
 * layer's attention, drawn once), decode after a prefill equal to one prefill of the whole
 * prompt, the sampler's greedy pick equal to the argmax, and refusals that change nothing. */
enum { kModelD = 32, kModelVocab = 40, kModelFfn = 48, kModelKv = 16 };
static float model_tensors[17][2][kModelFfn * kModelFfn]; /* the largest: [48, 32] and [32, 48] */
static float model_attention[2][4][kModelD * kModelD];

static headway_status model_rows(void* ctx, int tensor, uint32_t layer, uint64_t first, uint64_t n, uint32_t cols,
                                 float* dst) {
  (void)ctx;
  if (tensor < 0 || tensor >= 17 || layer >= 2 || (first + n) * cols > kModelFfn * kModelFfn) {
    return HEADWAY_INVALID_ARGUMENT;
  }
  memcpy(dst, model_tensors[tensor][layer] + first * cols, (size_t)(n * cols) * sizeof(float));
  return HEADWAY_OK;
}

static headway_status model_layer(void* ctx, uint32_t layer, headway_layer_weights* w) {
  headway_tensor* t[4];
  const uint32_t rows[4] = {kModelD, kModelKv, kModelKv, kModelD};
  int i;
  (void)ctx;
  t[0] = &w->wq;
  t[1] = &w->wk;
  t[2] = &w->wv;
  t[3] = &w->wo;
  for (i = 0; i < 4; ++i) {
    t[i]->data = model_attention[layer][i];
    t[i]->dtype = HEADWAY_F32;
    t[i]->rows = rows[i];
    t[i]->cols = kModelD;
  }
  return HEADWAY_OK;
}

static void test_model(void) {
  headway_config* config = config_from_spec(
      "d_model=32 heads=4 kv_heads=2 ctx=16 layers=2 rope_theta=10000 vocab=40 ffn=48 tie=1 kv_dtype=f32");
  headway_plan* plan = plan_of(config);
  headway_plan_info info;
  headway_model_source source;
  headway_model *model = NULL, *whole = NULL;
  headway_sampler* sampler = NULL;
  headway_sampler_params params;
  const int32_t ids[5] = {1, 7, 3, 39, 12};
  const int32_t bad[2] = {3, 40};
  float* last;
  void* arena;
  void* arena2;
  int32_t id = -1;
  uint32_t i, l, best = 0;
  size_t n;
  memset(&info, 0, sizeof(info));
  info.struct_size = sizeof(info);
  OK(headway_plan_get_info(plan, &info, &err));
  for (i = 0; i < 17; ++i) {
    for (l = 0; l < 2; ++l) {
      for (n = 0; n < kModelFfn * kModelFfn; ++n) {
        model_tensors[i][l][n] = (i == 5 || i == 7 || i == 14) ? 1.0f + 0.1f * uniform() : 0.2f * uniform();
      }
    }
  }
  for (l = 0; l < 2; ++l) {
    for (i = 0; i < 4; ++i) {
      for (n = 0; n < kModelD * kModelD; ++n) model_attention[l][i][n] = 0.2f * uniform();
    }
  }
  headway_model_source_init(&source);
  source.attention = model_layer;
  source.rows = model_rows;
  arena = aligned((size_t)info.arena_bytes);
  arena2 = aligned((size_t)info.arena_bytes);
  OK(headway_model_create(aligned(headway_model_object_bytes()), headway_model_object_bytes(), plan, arena,
                          (size_t)info.arena_bytes, &source, NULL, &model, &err));
  OK(headway_model_create(aligned(headway_model_object_bytes()), headway_model_object_bytes(), plan, arena2,
                          (size_t)info.arena_bytes, &source, NULL, &whole, &err));
  if (model == NULL || whole == NULL) return;
  CHECK(headway_model_vocab_size(model) == 40 && headway_model_logits(model) == NULL);
  OK(headway_model_prefill(model, ids, 3, &err));
  OK(headway_model_decode(model, ids[3], &err));
  OK(headway_model_decode(model, ids[4], &err));
  OK(headway_model_prefill(whole, ids, 5, &err));
  CHECK(headway_model_position(model) == 5 && headway_model_position(whole) == 5);
  CHECK(max_abs_diff(headway_model_logits(model), headway_model_logits(whole), 40) < 1e-5);

  last = headway_model_logits(model) ? (float*)aligned(40 * sizeof(float)) : NULL;
  if (last == NULL) return;
  memcpy(last, headway_model_logits(model), 40 * sizeof(float));
  CHECK(headway_model_prefill(model, bad, 2, &err) == HEADWAY_INVALID_ARGUMENT);
  CHECK(contains(err.message, "token id 40 at position 1 is outside the vocabulary (0..39)"));
  CHECK(headway_model_position(model) == 5 && max_abs_diff(last, headway_model_logits(model), 40) == 0.0);

  headway_sampler_params_init(&params);
  params.temperature = 0.0f;
  n = headway_sampler_memory_bytes(40);
  OK(headway_sampler_create(aligned(n), n, &params, 40, &sampler, &err));
  OK(headway_sampler_sample(sampler, last, ids, 5, &id, &err));
  for (i = 1; i < 40; ++i) best = last[i] > last[best] ? i : best;
  CHECK(id == (int32_t)best);
  params.top_p = 1.5f;
  CHECK(headway_sampler_create(aligned(n), n, &params, 40, &sampler, &err) == HEADWAY_INVALID_ARGUMENT);
  CHECK(contains(err.message, "top_p"));
  headway_model_reset(model);
  CHECK(headway_model_position(model) == 0);
  headway_model_destroy(model);
  headway_model_destroy(whole);
}

/* A Gated DeltaNet layer through the C API: its tensors in headway_layer_weights, one prefill
 * against the same tokens decoded one by one (the chunked and the recurrent form of the rule); a
 * layer without A_log is refused by name. */
static void test_gated_delta_session(void) {
  const uint32_t d_model = 32, t = 9, conv_width = 2 * 2 * 8 + 4 * 8, value_width = 4 * 8;
  headway_config* config = config_from_spec(
      "d_model=32 heads=2 kv_heads=1 head_dim=16 ctx=64 layers=1 linear_layers=1 linear_key_heads=2 "
      "linear_value_heads=4 linear_key_head_dim=8 linear_value_head_dim=8 linear_conv_kernel=4 kv_dtype=f32");
  headway_plan* plan = plan_of(config);
  headway_plan_info info;
  headway_layer_weights w;
  struct {
    headway_tensor* slot;
    uint32_t rows, cols;
    float scale, offset;
  } tensors[9];
  float* x = random_floats((size_t)t * d_model);
  float* y_prefill = (float*)aligned((size_t)t * d_model * sizeof(float));
  float* y_decode = (float*)aligned((size_t)t * d_model * sizeof(float));
  headway_session* one = NULL;
  headway_session* steps = NULL;
  uint32_t i;
  if (plan == NULL) return;
  headway_layer_weights_init(&w);
  tensors[0].slot = &w.w_qkv, tensors[0].rows = conv_width, tensors[0].cols = d_model;
  tensors[1].slot = &w.w_z, tensors[1].rows = value_width, tensors[1].cols = d_model;
  tensors[2].slot = &w.w_b, tensors[2].rows = 4, tensors[2].cols = d_model;
  tensors[3].slot = &w.w_a, tensors[3].rows = 4, tensors[3].cols = d_model;
  tensors[4].slot = &w.conv, tensors[4].rows = conv_width, tensors[4].cols = 4;
  tensors[5].slot = &w.a_log, tensors[5].rows = 1, tensors[5].cols = 4;
  tensors[6].slot = &w.dt_bias, tensors[6].rows = 1, tensors[6].cols = 4;
  tensors[7].slot = &w.out_norm, tensors[7].rows = 1, tensors[7].cols = 8;
  tensors[8].slot = &w.wo, tensors[8].rows = d_model, tensors[8].cols = value_width;
  for (i = 0; i < 9; ++i) {
    const size_t n = (size_t)tensors[i].rows * tensors[i].cols;
    float* v = random_floats(n);
    size_t e;
    /* matrices ~ U(-1, 1) / 3, the vectors about 1 */
    for (e = 0; e < n; ++e) v[e] = tensors[i].rows == 1 ? 1.0f + 0.2f * v[e] : v[e] / 3.0f;
    tensors[i].slot->data = v;
    tensors[i].slot->dtype = HEADWAY_F32;
    tensors[i].slot->rows = tensors[i].rows;
    tensors[i].slot->cols = tensors[i].cols;
  }
  info.struct_size = sizeof(info);
  OK(headway_plan_get_info(plan, &info, &err));
  {
    headway_layer_weights no_a = w;
    no_a.a_log.data = NULL;
    CHECK(headway_session_create(aligned(headway_session_object_bytes()), headway_session_object_bytes(), plan,
                                 aligned((size_t)info.arena_bytes), (size_t)info.arena_bytes, &no_a, 1, NULL, &one,
                                 &err) == HEADWAY_INVALID_ARGUMENT);
    CHECK(one == NULL && contains(err.message, "A_log"));
  }
  OK(headway_session_create(aligned(headway_session_object_bytes()), headway_session_object_bytes(), plan,
                            aligned((size_t)info.arena_bytes), (size_t)info.arena_bytes, &w, 1, NULL, &one, &err));
  OK(headway_session_create(aligned(headway_session_object_bytes()), headway_session_object_bytes(), plan,
                            aligned((size_t)info.arena_bytes), (size_t)info.arena_bytes, &w, 1, NULL, &steps, &err));
  if (one == NULL || steps == NULL) return;
  OK(headway_session_prefill(one, x, t, y_prefill, &err));
  for (i = 0; i < t; ++i)
    OK(headway_session_decode(steps, x + (size_t)i * d_model, y_decode + (size_t)i * d_model, &err));
  CHECK(headway_session_position(one) == t && headway_session_position(steps) == t);
  CHECK(max_abs_diff(y_prefill, y_decode, (size_t)t * d_model) < 1e-4);
  headway_session_destroy(one);
  headway_session_destroy(steps);
}

/* Gemma 4 in small through the C API: layer 1 (full) in its own head shape, layer 2 reading layer
 * 0's cache with Wq and Wo alone; plan_json names the owner; a prefill equals the same tokens
 * decoded one by one. */
static void test_shared_kv_session(void) {
  const uint32_t d_model = 32, t = 11;
  /* [layer][wq, wk, wv, wo] rows x cols; 0 rows: absent */
  const uint32_t shapes[3][4][2] = {{{64, 32}, {32, 32}, {32, 32}, {32, 64}},
                                    {{128, 32}, {32, 32}, {32, 32}, {32, 128}},
                                    {{64, 32}, {0, 0}, {0, 0}, {32, 64}}};
  headway_config* config = config_from_spec(
      "d_model=32 heads=4 kv_heads=2 head_dim=16 ctx=64 layers=3 window=6 layer_types=sfs kv_shared_layers=1 "
      "full_head_dim=32 full_kv_heads=1 rope_theta=10000 kv_dtype=f32");
  headway_plan* plan = plan_of(config);
  headway_plan_info info;
  headway_layer_weights w[3];
  char json[16384];
  size_t length = 0;
  float* x = random_floats((size_t)t * d_model);
  float* y_prefill = (float*)aligned((size_t)t * d_model * sizeof(float));
  float* y_decode = (float*)aligned((size_t)t * d_model * sizeof(float));
  headway_session* one = NULL;
  headway_session* steps = NULL;
  uint32_t l, m, i;
  if (plan == NULL) return;
  for (l = 0; l < 3; ++l) {
    headway_tensor* slots[4];
    headway_layer_weights_init(&w[l]);
    slots[0] = &w[l].wq, slots[1] = &w[l].wk, slots[2] = &w[l].wv, slots[3] = &w[l].wo;
    for (m = 0; m < 4; ++m) {
      const size_t n = (size_t)shapes[l][m][0] * shapes[l][m][1];
      float* v;
      size_t e;
      if (n == 0) continue;
      v = random_floats(n);
      for (e = 0; e < n; ++e) v[e] /= 4.0f;
      slots[m]->data = v;
      slots[m]->dtype = HEADWAY_F32;
      slots[m]->rows = shapes[l][m][0];
      slots[m]->cols = shapes[l][m][1];
    }
  }
  OK(headway_plan_json(plan, json, sizeof(json), &length, &err));
  CHECK(contains(json, "\"kv_shared_layers\":1"));
  CHECK(contains(json, "\"head_dim\":32,\"kv_heads\":1"));
  CHECK(strstr(json, "\"index\":2,") != NULL && contains(strstr(json, "\"index\":2,"), "\"kv_owner\":0,"));
  CHECK(strstr(json, "\"index\":1,") != NULL && contains(strstr(json, "\"index\":1,"), "\"kv_owner\":1,"));
  info.struct_size = sizeof(info);
  OK(headway_plan_get_info(plan, &info, &err));
  OK(headway_session_create(aligned(headway_session_object_bytes()), headway_session_object_bytes(), plan,
                            aligned((size_t)info.arena_bytes), (size_t)info.arena_bytes, w, 3, NULL, &one, &err));
  OK(headway_session_create(aligned(headway_session_object_bytes()), headway_session_object_bytes(), plan,
                            aligned((size_t)info.arena_bytes), (size_t)info.arena_bytes, w, 3, NULL, &steps, &err));
  if (one == NULL || steps == NULL) return;
  OK(headway_session_prefill(one, x, t, y_prefill, &err));
  for (i = 0; i < t; ++i)
    OK(headway_session_decode(steps, x + (size_t)i * d_model, y_decode + (size_t)i * d_model, &err));
  CHECK(max_abs_diff(y_prefill, y_decode, (size_t)t * d_model) < 1e-4);
  headway_session_destroy(one);
  headway_session_destroy(steps);
}

int main(void) {
  test_basics();
  test_plan();
  release_all();
  test_attend();
  release_all();
  test_kv_cache();
  release_all();
  test_session(1, 0);
  release_all();
  test_session(0, 0);
  release_all();
  test_session(1, 1);
  release_all();
  test_gated_delta_session();
  release_all();
  test_shared_kv_session();
  release_all();
  test_model();
  release_all();
  if (failures) {
    fprintf(stderr, "%d check(s) failed\n", failures);
    return 1;
  }
  printf("headway C API: all checks passed (kernels: %s)\n", headway_kernel_target());
  return 0;
}
