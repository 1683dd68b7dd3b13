/* headway's C API: C99, for callers in C and, through C, Rust, Swift, Kotlin/JNI and Zig.
 *
 * The same library as the C++ API (the same checks, messages and kernels) behind plain functions:
 *   - Every fallible call returns a headway_status and, when `error` is not NULL, writes the
 *     library's message (naming the field and the value) into the caller's headway_error. On
 *     error nothing else is written and every object is as it was.
 *   - Objects are opaque handles placed in memory the caller gives: headway_X_object_bytes()
 *     (or a *_memory_bytes query) says how much, aligned to HEADWAY_OBJECT_ALIGNMENT (malloc's
 *     alignment suffices); nothing is allocated on the heap but by headway_pool_create's threads.
 *     A handle lives in that memory: free the memory only after headway_X_destroy where one exists.
 *   - Structs that may grow carry `struct_size` as their first member, set by their _init
 *     function: a caller built against an older header passes a smaller size and keeps working.
 *   - No thread-local or global state: the core calls build and run bare metal as well. The
 *     calls marked "hosted" (config.json text, plan JSON) are in hosted builds only.
 *
 *   headway_error err;
 *   headway_config* config;  headway_plan* plan;
 *   void* cm = malloc(headway_config_object_bytes());
 *   if (headway_config_from_preset(cm, headway_config_object_bytes(), "llama-3-8b", &config, &err))
 *     fprintf(stderr, "%s\n", err.message);
 *
 * Tensors are row-major and dense: Q and O [t_q, n_heads, head_dim] f32, K and V [t_kv,
 * n_kv_heads, head_dim] in the K/V dtype; see headway/attention.hpp for the semantics.
 */
#ifndef HEADWAY_HEADWAY_H_
#define HEADWAY_HEADWAY_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__) || defined(__clang__)
#define HEADWAY_API __attribute__((visibility("default")))
#else
#define HEADWAY_API
#endif

#define HEADWAY_VERSION_MAJOR 0
#define HEADWAY_VERSION_MINOR 1
#define HEADWAY_VERSION_PATCH 0

/* Status codes: headway::Code's values. */
typedef enum headway_status {
  HEADWAY_OK = 0,
  HEADWAY_INVALID_ARGUMENT = 1,    /* a value the caller gave is wrong */
  HEADWAY_OUT_OF_RANGE = 2,        /* a position or size beyond what the plan allows */
  HEADWAY_UNSUPPORTED = 3,         /* valid input headway does not handle */
  HEADWAY_FAILED_PRECONDITION = 4, /* a call in the wrong state */
  HEADWAY_DATA_LOSS = 5,           /* truncated or corrupt data */
  HEADWAY_NOT_FOUND = 6,           /* a preset or key that does not exist */
  HEADWAY_INTERNAL = 7             /* a bug in headway */
} headway_status;

/* The longest message, its terminating NUL included. */
#define HEADWAY_MAX_MESSAGE 384

typedef struct headway_error {
  headway_status code;
  char message[HEADWAY_MAX_MESSAGE]; /* "ok" after a call that succeeded */
} headway_error;

/* Storage dtypes: headway::DType's values. q8_0 / q4_0 are ggml's blocks of 32 (f16 scales), for
 * K/V caches and weights; q4_1 ... q3_K ggml's other blocks, for weights as GGUF files hold them. */
typedef enum headway_dtype {
  HEADWAY_F32 = 0,
  HEADWAY_F16 = 1,
  HEADWAY_BF16 = 2,
  HEADWAY_Q8_0 = 3,
  HEADWAY_Q4_0 = 4,
  HEADWAY_Q4_1 = 5,
  HEADWAY_Q5_0 = 6,
  HEADWAY_Q5_1 = 7,
  HEADWAY_Q4_K = 8,
  HEADWAY_Q5_K = 9,
  HEADWAY_Q6_K = 10,
  HEADWAY_Q2_K = 11,
  HEADWAY_Q3_K = 12
} headway_dtype;

/* The alignment every object's memory needs (an arena's: HEADWAY_ARENA_ALIGNMENT). */
#define HEADWAY_OBJECT_ALIGNMENT 16
#define HEADWAY_ARENA_ALIGNMENT 64

HEADWAY_API const char* headway_version(void);                    /* "0.1.0" */
HEADWAY_API const char* headway_status_name(headway_status code); /* "invalid argument", ... */
HEADWAY_API const char* headway_dtype_name(headway_dtype dtype);  /* "f32", ..., NULL if unknown */
/* Parses "f32", "f16", "bf16", "q8_0" or "q4_0"; anything else is an error naming them. */
HEADWAY_API headway_status headway_dtype_parse(const char* name, headway_dtype* dtype, headway_error* error);
/* Bytes of one row of n values stored as dtype (q8_0: 34 per block of 32, q4_0: 18). */
HEADWAY_API size_t headway_dtype_row_bytes(headway_dtype dtype, size_t n);
/* Converts n f32 values to one row of dtype (rounding to nearest even for f16 / bf16;
 * quantizing as ggml does for q8_0 / q4_0), out_bytes >= headway_dtype_row_bytes(dtype, n). */
HEADWAY_API headway_status headway_convert_row(headway_dtype dtype, const float* x, size_t n, void* out,
                                               size_t out_bytes, headway_error* error);
/* The SIMD target the kernels dispatch to on this machine ("AVX3", "NEON", "SCALAR", ...). */
HEADWAY_API const char* headway_kernel_target(void);
/* 1 when this build can run the projections on XNNPACK (headway_plan_options.projection 1). */
HEADWAY_API int headway_built_with_xnnpack(void);

/* ---- Config: a model's attention shape, from a spec string, a preset or config.json ---- */

typedef struct headway_config headway_config;

HEADWAY_API size_t headway_config_object_bytes(void);
/* "d_model=4096 heads=32 kv_heads=8 head_dim=128 ctx=4096 layers=32 rope_theta=10000"; see
 * headway::parse_spec. Parsed, not validated: headway_config_validate or headway_plan_create. */
HEADWAY_API headway_status headway_config_from_spec(void* memory, size_t memory_bytes, const char* spec,
                                                    headway_config** config, headway_error* error);
/* A built-in preset by name (headway_preset_name lists them). */
HEADWAY_API headway_status headway_config_from_preset(void* memory, size_t memory_bytes, const char* name,
                                                      headway_config** config, headway_error* error);
/* Hosted: a Hugging Face config.json's text (not NUL-terminated: `size` bytes). */
HEADWAY_API headway_status headway_config_from_hf_json(void* memory, size_t memory_bytes, const char* text, size_t size,
                                                       headway_config** config, headway_error* error);
HEADWAY_API headway_status headway_config_validate(const headway_config* config, headway_error* error);
/* The K/V storage dtype the plan and caches use (f16 unless the config's source says). */
HEADWAY_API headway_status headway_config_set_kv_dtype(headway_config* config, headway_dtype dtype,
                                                       headway_error* error);
/* A rotation of a q8_0/q4_0 cache's rows before they are quantized (headway::KvRotation): K (after
 * RoPE), V and the queries by the normalized Walsh-Hadamard transform per head, the output back.
 * Checked by headway_config_validate / headway_plan_create: only with kv_dtype q8_0 or q4_0 and a
 * head_dim whose largest power-of-two divisor is at least 32; the CPU backend only. */
typedef enum headway_kv_rotation { HEADWAY_KV_ROTATION_NONE = 0, HEADWAY_KV_ROTATION_HADAMARD = 1 } headway_kv_rotation;
HEADWAY_API headway_status headway_config_set_kv_rotation(headway_config* config, headway_kv_rotation rotation,
                                                          headway_error* error);

HEADWAY_API size_t headway_preset_count(void);
HEADWAY_API const char* headway_preset_name(size_t index); /* NULL past the last */

/* ---- Plan: every head layout and every byte of memory, before the first token ---- */

typedef struct headway_plan headway_plan;

typedef struct headway_plan_options {
  size_t struct_size;         /* sizeof(headway_plan_options) */
  uint32_t threads;           /* 1.. the threads a pool will run the plan's layers on */
  uint32_t max_tokens;        /* most tokens per prefill call; 0: min(512, max_seq) */
  headway_dtype weight_dtype; /* projection weights as the runtime keeps them: f32, f16, bf16 */
  int weights_in_arena;       /* 1: copied into the arena at create; 0: borrowed (a model file's in its types) */
  int projection;             /* 0: Highway GEMM; 1: XNNPACK (hosted builds with it) */
} headway_plan_options;

HEADWAY_API void headway_plan_options_init(headway_plan_options* options);

HEADWAY_API size_t headway_plan_object_bytes(void);
/* Validates the config and plans it; options NULL: the defaults. */
HEADWAY_API headway_status headway_plan_create(void* memory, size_t memory_bytes, const headway_config* config,
                                               const headway_plan_options* options, headway_plan** plan,
                                               headway_error* error);

typedef struct headway_plan_info {
  size_t struct_size; /* sizeof(headway_plan_info): set by the caller */
  uint32_t d_model, n_heads, n_kv_heads, head_dim, group_size;
  uint32_t q_width, kv_width, max_seq, n_layers, max_tokens;
  uint32_t cache_rows; /* rows of a full layer's cache */
  uint32_t threads;
  headway_dtype kv_dtype;
  int causal;
  uint64_t kv_bytes_per_token, kv_bytes_per_layer, kv_cache_bytes, weight_bytes, scratch_bytes;
  uint64_t arena_bytes; /* the memory headway_session_create needs */
} headway_plan_info;

HEADWAY_API headway_status headway_plan_get_info(const headway_plan* plan, headway_plan_info* info,
                                                 headway_error* error);

typedef struct headway_head_layout {
  uint32_t q_head, kv_head;
  /* byte offsets in one token's fused QKV row, and in one (full) layer's KV cache */
  uint64_t qkv_q_offset, qkv_k_offset, qkv_v_offset, cache_k_offset, cache_v_offset;
} headway_head_layout;

HEADWAY_API headway_status headway_plan_head(const headway_plan* plan, uint32_t head, headway_head_layout* layout,
                                             headway_error* error);
/* Hosted: the plan as `headway plan --json` prints it, NUL-terminated in text[size]; *length
 * (when not NULL) gets its length, also when `size` is too small (then HEADWAY_OUT_OF_RANGE). */
HEADWAY_API headway_status headway_plan_json(const headway_plan* plan, char* text, size_t size, size_t* length,
                                             headway_error* error);

/* ---- Thread pool (hosted builds with threads; elsewhere it runs every task on the caller) ---- */

typedef struct headway_pool headway_pool;

HEADWAY_API size_t headway_pool_object_bytes(void);
HEADWAY_API headway_status headway_pool_create(void* memory, size_t memory_bytes, uint32_t threads, headway_pool** pool,
                                               headway_error* error);
HEADWAY_API uint32_t headway_pool_threads(const headway_pool* pool);
HEADWAY_API void headway_pool_destroy(headway_pool* pool); /* stops the workers; NULL is a no-op */

/* ---- attend: attention over the caller's tensors ---- */

typedef struct headway_attention_shape {
  uint32_t t_q, t_kv, n_heads, n_kv_heads, head_dim;
} headway_attention_shape;

/* headway::AttentionParams, field for field (see headway/attention.hpp); booleans are ints. */
typedef struct headway_attention_params {
  size_t struct_size; /* sizeof(headway_attention_params) */
  float scale;        /* 0: 1/sqrt(head_dim) */
  float softcap;      /* 0: off */
  int causal;
  uint32_t window; /* 0: none */
  const float* sinks;
  uint32_t sink_tokens;
  const float* alibi_slopes;
  uint32_t prefix;
  int window_symmetric;
  const uint32_t* cu_seqlens_q;
  const uint32_t* cu_seqlens_k;
  uint32_t n_seqs;
  const uint8_t* mask_bool;
  const float* mask_additive;
  size_t mask_row_stride;
} headway_attention_params;

HEADWAY_API void headway_attention_params_init(headway_attention_params* params);
/* The workspace headway_attend needs (HEADWAY_ARENA_ALIGNMENT-aligned) for a pool of `threads`
 * (1 without one). params NULL: the defaults. */
HEADWAY_API headway_status headway_attention_workspace_bytes(const headway_attention_shape* shape,
                                                             const headway_attention_params* params, uint32_t threads,
                                                             size_t* bytes, headway_error* error);
/* O = softmax(scale · Q Kᵀ + mask) V; pool may be NULL (the caller's thread). */
HEADWAY_API headway_status headway_attend(const float* q, const void* k, const void* v, headway_dtype kv_dtype,
                                          float* o, const headway_attention_shape* shape,
                                          const headway_attention_params* params, headway_pool* pool, void* workspace,
                                          size_t workspace_bytes, headway_error* error);

/* ---- KV cache: one layer's K and V, RoPE applied on append, over the caller's memory ---- */

typedef struct headway_kv_cache headway_kv_cache;

/* All the memory one layer's cache needs, for a pool of `threads` (1 without one): the object,
 * the K/V rows of the plan's layer `layer` (its kind, window and dtype), its RoPE table and ALiBi
 * slopes, and the largest workspace its attend asks for. */
HEADWAY_API headway_status headway_kv_cache_memory_bytes(const headway_plan* plan, uint32_t layer, uint32_t threads,
                                                         size_t* bytes, headway_error* error);
/* memory: HEADWAY_ARENA_ALIGNMENT-aligned; pool NULL or of the threads the memory was sized for
 * (it must outlive the cache). The cache starts empty at position 0. */
HEADWAY_API headway_status headway_kv_cache_create(void* memory, size_t memory_bytes, const headway_plan* plan,
                                                   uint32_t layer, headway_pool* pool, headway_kv_cache** cache,
                                                   headway_error* error);
/* Appends n tokens at position()..: k and v [n, n_kv_heads, head_dim] f32; K is rotated at its
 * position and both are stored in the plan's K/V dtype. On error the cache is as it was. */
HEADWAY_API headway_status headway_kv_cache_append(headway_kv_cache* cache, const float* k, const float* v, uint32_t n,
                                                   headway_error* error);
/* Rotates q [t_q, n_heads, head_dim] f32 in place by the RoPE the keys of the last t_q tokens
 * appended got (their positions): what headway_kv_cache_attend expects of its queries. Without
 * RoPE, q stays as it is. On error q is unchanged. */
HEADWAY_API headway_status headway_kv_cache_rotate_queries(const headway_kv_cache* cache, float* q, uint32_t t_q,
                                                           headway_error* error);
/* Attention for the queries of the last t_q tokens appended: q, o [t_q, n_heads, head_dim] f32
 * (q rotated: headway_kv_cache_rotate_queries); sinks: n_heads learned sink logits or NULL. */
HEADWAY_API headway_status headway_kv_cache_attend(headway_kv_cache* cache, const float* q, float* o, uint32_t t_q,
                                                   const float* sinks, headway_error* error);
HEADWAY_API void headway_kv_cache_reset(headway_kv_cache* cache, uint32_t start_position);
HEADWAY_API uint32_t headway_kv_cache_size(const headway_kv_cache* cache);     /* tokens since the reset */
HEADWAY_API uint32_t headway_kv_cache_position(const headway_kv_cache* cache); /* the next token's */
HEADWAY_API uint32_t headway_kv_cache_rows(const headway_kv_cache* cache);

/* ---- Session: a stack of attention blocks over one arena ---- */

typedef struct headway_tensor {
  const void* data; /* NULL: absent */
  headway_dtype dtype;
  uint32_t rows, cols; /* W [out_features, in_features]; a vector: rows 1 */
} headway_tensor;

/* One layer's weights (headway/weights.hpp): wq [n_heads·head_dim, d_model], wk / wv [n_kv_heads·
 * head_dim, d_model], wo [d_model, n_heads·head_dim]; biases, q/k norms and sinks as the config
 * asks. Multi-head latent attention (kv_lora_rank): wq is q_proj, or q_b_proj after wq_a and
 * q_a_norm; wkv_a, kv_a_norm and wkv_b the latent's. A Gated DeltaNet layer (linear_layers):
 * w_qkv, w_z, w_b, w_a its input projections, conv its taps [conv_width, conv_kernel], a_log (or
 * a_neg: −exp(A_log) itself) and dt_bias per value head, out_norm the gated norm's weight, wo its
 * out_proj. The shapes: headway/weights.hpp. Callers built before a field existed pass a smaller
 * struct_size: the fields past it read as absent. */
typedef struct headway_layer_weights {
  size_t struct_size; /* sizeof(headway_layer_weights) */
  headway_tensor wq, wk, wv, wo;
  headway_tensor bq, bk, bv, bo;
  headway_tensor q_norm, k_norm;
  headway_tensor sinks;
  headway_tensor wq_a, q_a_norm, wkv_a, kv_a_norm, wkv_b;
  headway_tensor w_qkv, w_z, w_b, w_a, conv, a_log, a_neg, dt_bias, out_norm;
} headway_layer_weights;

HEADWAY_API void headway_layer_weights_init(headway_layer_weights* weights);

typedef struct headway_session headway_session;

HEADWAY_API size_t headway_session_object_bytes(void);
/* arena: headway_plan_info.arena_bytes bytes, HEADWAY_ARENA_ALIGNMENT-aligned; layers[n_layers]
 * (the plan's layer count) are copied into the arena or borrowed as the plan says; pool NULL or
 * one of at most the plan's threads. The arena and the pool must outlive the session. */
HEADWAY_API headway_status headway_session_create(void* memory, size_t memory_bytes, const headway_plan* plan,
                                                  void* arena, size_t arena_bytes, const headway_layer_weights* layers,
                                                  uint32_t n_layers, headway_pool* pool, headway_session** session,
                                                  headway_error* error);
/* x, y [t, d_model] f32 (y may alias x) at positions position()..; any t (chunks of max_tokens). */
HEADWAY_API headway_status headway_session_prefill(headway_session* session, const float* x, uint32_t t, float* y,
                                                   headway_error* error);
HEADWAY_API headway_status headway_session_decode(headway_session* session, const float* x, float* y,
                                                  headway_error* error);
/* A bidirectional model's packed batch: n_seqs sentences, cu_seqlens[n_seqs + 1]. */
HEADWAY_API headway_status headway_session_encode(headway_session* session, const float* x, const uint32_t* cu_seqlens,
                                                  uint32_t n_seqs, float* y, headway_error* error);
HEADWAY_API void headway_session_reset(headway_session* session);
HEADWAY_API uint32_t headway_session_position(const headway_session* session);
HEADWAY_API void headway_session_destroy(headway_session* session); /* NULL is a no-op */

/* ---- Model: a whole decoder over one arena: token ids in, next-token logits out ---- */

/* Where a model's weights come from, at create only (headway/model.hpp's ModelWeightsSource).
 * attention: layer `layer`'s attention weights into *weights (headway_layer_weights_init'ed),
 * valid until the next call. rows: rows [first, first + n) of model tensor `tensor` (the values of
 * headway/model_tensors.hpp's ModelTensor: 0 the token embedding, ...) of `layer`, `cols` values
 * each, as f32 into dst. A status other than HEADWAY_OK stops the create. */
typedef struct headway_model_source {
  size_t struct_size; /* sizeof(headway_model_source) */
  void* ctx;
  headway_status (*attention)(void* ctx, uint32_t layer, headway_layer_weights* weights);
  headway_status (*rows)(void* ctx, int tensor, uint32_t layer, uint64_t first, uint64_t n, uint32_t cols, float* dst);
} headway_model_source;

HEADWAY_API void headway_model_source_init(headway_model_source* source);

typedef struct headway_model headway_model;

HEADWAY_API size_t headway_model_object_bytes(void);
/* arena: headway_plan_info.arena_bytes bytes, HEADWAY_ARENA_ALIGNMENT-aligned, of a plan whose
 * config has a model (a decoder: vocabulary, norms, MLP); every weight is copied into it from
 * `source`. pool NULL or of at most the plan's threads. The arena and the pool outlive the model. */
HEADWAY_API headway_status headway_model_create(void* memory, size_t memory_bytes, const headway_plan* plan,
                                                void* arena, size_t arena_bytes, const headway_model_source* source,
                                                headway_pool* pool, headway_model** model, headway_error* error);
/* ids [n] at position()..position()+n-1 (chunks of max_tokens); then headway_model_logits holds
 * the last token's next-token logits. An id outside the vocabulary or a prompt past the context:
 * an error, and nothing changes. Neither call allocates. */
HEADWAY_API headway_status headway_model_prefill(headway_model* model, const int32_t* ids, uint32_t n,
                                                 headway_error* error);
HEADWAY_API headway_status headway_model_decode(headway_model* model, int32_t id, headway_error* error);
/* [vocab_size] f32 in the arena, valid until the next prefill or decode; NULL before either. */
HEADWAY_API const float* headway_model_logits(const headway_model* model);
HEADWAY_API uint32_t headway_model_vocab_size(const headway_model* model);
HEADWAY_API uint32_t headway_model_position(const headway_model* model);
HEADWAY_API void headway_model_reset(headway_model* model);
HEADWAY_API void headway_model_destroy(headway_model* model); /* NULL is a no-op */

/* Hosted: a model file (a GGUF, or a Hugging Face directory with config.json and
 * model.safetensors), its whole config, and a model made from it. open allocates the file's
 * index (init time); close frees it. With a plan whose weights_in_arena is 0 the model reads the
 * file's matrices in place, in their own types (a GGUF's quantized blocks): keep the file open
 * for as long as the model runs. */
typedef struct headway_model_file headway_model_file;

HEADWAY_API headway_status headway_model_file_open(const char* path, headway_model_file** file, headway_error* error);
HEADWAY_API headway_status headway_model_file_config(const headway_model_file* file, void* memory, size_t memory_bytes,
                                                     headway_config** config, headway_error* error);
HEADWAY_API headway_status headway_model_create_from_file(void* memory, size_t memory_bytes, const headway_plan* plan,
                                                          void* arena, size_t arena_bytes, headway_model_file* file,
                                                          headway_pool* pool, headway_model** model,
                                                          headway_error* error);
HEADWAY_API void headway_model_file_close(headway_model_file* file); /* NULL is a no-op */

/* ---- Sampler: the next id from a row of logits, in the caller's memory ---- */

/* headway/sampler.hpp's SamplerParams, field for field: transformers' generate() order. */
typedef struct headway_sampler_params {
  size_t struct_size; /* sizeof(headway_sampler_params) */
  float temperature;  /* 0: greedy */
  uint32_t top_k;     /* 0: off */
  float top_p;        /* (0, 1]; 1: off */
  float min_p;        /* [0, 1]; 0: off */
  float repetition_penalty;
  float presence_penalty;
  uint32_t penalty_window;
  uint64_t seed;
} headway_sampler_params;

HEADWAY_API void headway_sampler_params_init(headway_sampler_params* params); /* the library's defaults */

typedef struct headway_sampler headway_sampler;

/* The object and its scratch for a vocabulary of n_vocab ids. */
HEADWAY_API size_t headway_sampler_memory_bytes(uint32_t n_vocab);
HEADWAY_API headway_status headway_sampler_create(void* memory, size_t memory_bytes,
                                                  const headway_sampler_params* params, uint32_t n_vocab,
                                                  headway_sampler** sampler, headway_error* error);
/* The next id from logits [n_vocab]; recent[0..n_recent) the ids so far (the penalties' window). */
HEADWAY_API headway_status headway_sampler_sample(headway_sampler* sampler, const float* logits, const int32_t* recent,
                                                  size_t n_recent, int32_t* id, headway_error* error);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* HEADWAY_HEADWAY_H_ */
