// attend() and AttentionOp over dense tensors, and the threaded driver behind them
// (attention_run.hpp).
#include "headway/attention.hpp"

#include <cmath>
#include <cstdint>

#include "headway/plan.hpp"
#include "runtime/attention/attention_run.hpp"
#include "runtime/core/debug_check.hpp"

namespace headway {
namespace {

// Per-call state the tasks share; lives on run_checked_call's stack.
struct RunContext {
  const simd::AttentionArgs* args;
  AttentionSplit split;
  uint8_t* scratch;   // threads × split.scratch_bytes
  uint8_t* partials;  // n_kv_heads × split.partials_bytes
};

uint8_t* slot_scratch(const RunContext& c, uint32_t slot) { return c.scratch + size_t{slot} * c.split.scratch_bytes; }

simd::AttentionPartials partials_of(const RunContext& c, uint32_t kv_head) {
  const size_t rows = size_t{c.args->t_q} * c.split.group;
  const size_t ml_bytes = align_up(size_t{c.split.n_chunks} * rows * sizeof(float));
  uint8_t* base = c.partials + size_t{kv_head} * c.split.partials_bytes;
  simd::AttentionPartials p;
  p.m = reinterpret_cast<float*>(base);
  p.l = reinterpret_cast<float*>(base + ml_bytes);
  p.o = reinterpret_cast<float*>(base + 2 * ml_bytes);
  return p;
}

void tile_task(void* ctx, uint32_t slot, size_t task) {
  const RunContext& c = *static_cast<const RunContext*>(ctx);
  const uint32_t kv_head = static_cast<uint32_t>(task / c.split.q_tiles);
  const uint32_t tile = static_cast<uint32_t>(task % c.split.q_tiles);
  const uint32_t q_begin = tile * c.split.q_tile;
  const uint32_t q_end = c.args->t_q - q_begin < c.split.q_tile ? c.args->t_q : q_begin + c.split.q_tile;
  simd::attention_f32_unchecked(*c.args, kv_head, kv_head + 1, q_begin, q_end, slot_scratch(c, slot));
}

void chunk_task(void* ctx, uint32_t slot, size_t task) {
  const RunContext& c = *static_cast<const RunContext*>(ctx);
  const uint32_t kv_head = static_cast<uint32_t>(task / c.split.n_chunks);
  const uint32_t chunk = static_cast<uint32_t>(task % c.split.n_chunks);
  simd::attention_partial_f32_unchecked(*c.args, kv_head, chunk, c.split.chunk, partials_of(c, kv_head),
                                        slot_scratch(c, slot));
}

void merge_task(void* ctx, size_t task) {
  const RunContext& c = *static_cast<const RunContext*>(ctx);
  const uint32_t kv_head = static_cast<uint32_t>(task);
  simd::attention_merge_f32_unchecked(*c.args, kv_head, c.split.n_chunks, partials_of(c, kv_head));
}

float default_scale(uint32_t head_dim) { return 1.0f / std::sqrt(static_cast<float>(head_dim)); }

bool bad_float(float x) { return !(x >= 0.0f) || std::isinf(x); }  // NaN, negative or infinite

// attend()'s tensors: K/V token-major [t_kv, n_kv_heads, head_dim].
Result<simd::AttentionArgs> token_major_args(const float* q, const void* k, const void* v, DType kv_dtype, float* o,
                                             const AttentionShape& s, const AttentionParams& p) {
  // A row of head_dim values per (token, kv head); a block format's rows are whole blocks.
  const size_t row_values = dtype_row_values(kv_dtype, s.head_dim);
  return strided_attention_args(q, k, v, kv_dtype, o, s, p, row_values, size_t{s.n_kv_heads} * row_values);
}

Status check_threads(uint32_t threads) {
  if (threads == 0 || threads > ThreadPool::kMaxThreads) {
    return Status::error(Code::kInvalidArgument, "attention: threads %u is not in 1..%u", threads,
                         ThreadPool::kMaxThreads);
  }
  return Status();
}

Status check_tensors(const float* q, const void* k, const void* v, const float* o) {
  if (q == nullptr) return Status::error(Code::kInvalidArgument, "attention: q is null");
  if (k == nullptr) return Status::error(Code::kInvalidArgument, "attention: k is null");
  if (v == nullptr) return Status::error(Code::kInvalidArgument, "attention: v is null");
  if (o == nullptr) return Status::error(Code::kInvalidArgument, "attention: o is null");
  return Status();
}

Status check_workspace(const PreparedAttention& call, const void* workspace, size_t workspace_bytes) {
  const size_t need = static_cast<size_t>(call.split.workspace_bytes);
  if (workspace == nullptr && need > 0) {
    return Status::error(Code::kInvalidArgument, "attention: workspace is null, attention needs %zu bytes", need);
  }
  if (workspace_bytes < need) {
    const simd::AttentionArgs& a = call.args;
    return Status::error(Code::kInvalidArgument,
                         "attention: workspace is %zu bytes, attention needs %zu (t_q %u, t_kv %u, %u kv heads, "
                         "head_dim %u, %u threads)",
                         workspace_bytes, need, a.t_q, a.t_kv, a.n_kv_heads, a.head_dim, call.threads);
  }
  const uintptr_t misalign = reinterpret_cast<uintptr_t>(workspace) % kWorkspaceAlignment;
  if (misalign != 0) {
    return Status::error(Code::kInvalidArgument,
                         "attention: workspace is not %zu-byte aligned (its address is %zu bytes past a boundary)",
                         kWorkspaceAlignment, static_cast<size_t>(misalign));
  }
  return Status();
}

}  // namespace

namespace {

// Each of n_heads values is finite (null: none); the message names the array and the head.
Status check_per_head_finite(const float* values, uint32_t n_heads, const char* name) {
  if (values == nullptr) return Status();
  for (uint32_t h = 0; h < n_heads; ++h) {
    if (!std::isfinite(values[h])) {
      return Status::error(Code::kInvalidArgument, "attention: %s[%u] = %g is not finite", name, h,
                           static_cast<double>(values[h]));
    }
  }
  return Status();
}

}  // namespace

Status check_sink_logits(const float* sinks, uint32_t n_heads) {
  return check_per_head_finite(sinks, n_heads, "sinks");
}

Status check_alibi_slopes(const float* slopes, uint32_t n_heads) {
  return check_per_head_finite(slopes, n_heads, "alibi_slopes");
}

Status alibi_slopes(uint32_t n_heads, float* slopes, float max_bias) {
  if (slopes == nullptr) return Status::error(Code::kInvalidArgument, "alibi slopes: the output is null");
  if (n_heads == 0 || n_heads > kMaxHeads) {
    return Status::error(Code::kInvalidArgument, "alibi slopes: n_heads %u is not in 1..%u", n_heads, kMaxHeads);
  }
  if (!(max_bias > 0.0f) || !std::isfinite(max_bias)) {
    return Status::error(Code::kInvalidArgument, "alibi slopes: max_bias %g is not a finite number > 0",
                         static_cast<double>(max_bias));
  }
  uint32_t n0 = 1;
  while (n0 * 2 <= n_heads) n0 *= 2;
  const double b = max_bias;
  for (uint32_t h = 0; h < n_heads; ++h) {
    const double e = h < n0 ? -b * (h + 1) / n0 : -b * (2 * (h - n0) + 1) / (2.0 * n0);
    slopes[h] = static_cast<float>(std::exp2(e));
  }
  return Status();
}

Status validate_attention_args(const simd::AttentionArgs& a) {
  if (a.head_dim == 0 || a.head_dim > kMaxHeadDim) {
    return Status::error(Code::kInvalidArgument, "attention: head_dim %u is not in 1..%u", a.head_dim, kMaxHeadDim);
  }
  if (a.n_heads == 0 || a.n_heads > kMaxHeads) {
    return Status::error(Code::kInvalidArgument, "attention: n_heads %u is not in 1..%u", a.n_heads, kMaxHeads);
  }
  if (a.n_kv_heads == 0 || a.n_heads % a.n_kv_heads != 0) {
    return Status::error(Code::kInvalidArgument,
                         "attention: n_heads %u is not divisible by n_kv_heads %u (each kv head serves a whole group "
                         "of query heads)",
                         a.n_heads, a.n_kv_heads);
  }
  if (a.t_q == 0) return Status::error(Code::kInvalidArgument, "attention: t_q is 0 (no query tokens)");
  if (a.t_kv == 0) return Status::error(Code::kInvalidArgument, "attention: t_kv is 0 (no keys)");
  if (bad_float(a.scale)) {
    return Status::error(Code::kInvalidArgument,
                         "attention: scale %g is not a finite number >= 0 (0 = 1/sqrt(head_dim))",
                         static_cast<double>(a.scale));
  }
  if (bad_float(a.softcap)) {
    return Status::error(Code::kInvalidArgument, "attention: softcap %g is not a finite number >= 0 (0 = off)",
                         static_cast<double>(a.softcap));
  }
  HEADWAY_RETURN_IF_ERROR(check_sink_logits(a.sinks, a.n_heads));
  HEADWAY_RETURN_IF_ERROR(check_alibi_slopes(a.alibi_slopes, a.n_heads));
  if (a.sink_tokens != 0 && a.sink_tokens >= a.window) {
    return Status::error(Code::kInvalidArgument,
                         "attention: sink_tokens %u needs a sliding window larger than it (window %u)", a.sink_tokens,
                         a.window);
  }
  if (a.prefix != 0 && !a.causal) {
    return Status::error(Code::kInvalidArgument,
                         "attention: prefix %u needs causal (without it every row sees every key already)", a.prefix);
  }
  if (a.window_symmetric && (a.causal || a.window == 0)) {
    return Status::error(Code::kInvalidArgument,
                         "attention: a symmetric window needs a window and no causal (window %u, causal %s)", a.window,
                         a.causal ? "true" : "false");
  }
  if (a.prefix > a.t_kv) {
    return Status::error(Code::kInvalidArgument, "attention: prefix %u is longer than the %u keys (t_kv)", a.prefix,
                         a.t_kv);
  }
  if (a.mask_bool != nullptr && a.mask_additive != nullptr) {
    return Status::error(Code::kInvalidArgument,
                         "attention: mask_bool and mask_additive are both set (one general mask per call)");
  }
  if ((a.mask_bool != nullptr || a.mask_additive != nullptr) && a.mask_row_stride < a.t_kv) {
    return Status::error(Code::kInvalidArgument,
                         "attention: mask_row_stride %zu is less than t_kv %u (a mask row holds an entry per key)",
                         a.mask_row_stride, a.t_kv);
  }
  if (!dtype_stores_kv(a.kv_type)) {
    return Status::error(Code::kInvalidArgument, "attention: kv dtype %s (%u) is not one of %s", dtype_name(a.kv_type),
                         static_cast<unsigned>(a.kv_type), kKvDTypeNames);
  }
  HEADWAY_RETURN_IF_ERROR(check_tensors(a.q, a.k, a.v, a.o));
  const size_t q_width = size_t{a.n_heads} * a.head_dim;
  if (a.q_token_stride < q_width) {
    return Status::error(Code::kInvalidArgument, "attention: q_token_stride %zu is less than n_heads · head_dim = %zu",
                         a.q_token_stride, q_width);
  }
  if (a.o_token_stride < q_width) {
    return Status::error(Code::kInvalidArgument, "attention: o_token_stride %zu is less than n_heads · head_dim = %zu",
                         a.o_token_stride, q_width);
  }
  if (a.kv_row_stride < a.head_dim) {
    return Status::error(Code::kInvalidArgument, "attention: kv_row_stride %zu is less than head_dim %u",
                         a.kv_row_stride, a.head_dim);
  }
  if (a.n_kv_heads > 1 && a.kv_head_stride < a.head_dim) {
    return Status::error(Code::kInvalidArgument, "attention: kv_head_stride %zu is less than head_dim %u",
                         a.kv_head_stride, a.head_dim);
  }
  const DType kv_dtype = static_cast<DType>(a.kv_type);
  const uint64_t row_values = dtype_row_values(kv_dtype, a.head_dim);
  if (dtype_is_block(kv_dtype) && (a.kv_row_stride % kDTypeBlockValues != 0 || a.kv_row_stride < row_values ||
                                   (a.n_kv_heads > 1 && a.kv_head_stride % kDTypeBlockValues != 0))) {
    return Status::error(Code::kInvalidArgument,
                         "attention: a %s row of head_dim %u takes %llu values (whole blocks of 32): kv_row_stride %zu "
                         "and kv_head_stride %zu must be multiples of 32, the row stride at least that",
                         dtype_name(kv_dtype), a.head_dim, static_cast<unsigned long long>(row_values), a.kv_row_stride,
                         a.kv_head_stride);
  }
  if (a.kv_ring_rows > 0 && (a.t_kv > a.kv_ring_rows || a.kv_first_row >= a.kv_ring_rows)) {
    return Status::error(Code::kInvalidArgument,
                         "attention: a ring of %u rows cannot hold t_kv %u keys starting at row %u", a.kv_ring_rows,
                         a.t_kv, a.kv_first_row);
  }
  if (a.kv_ring_rows > 0 && a.sink_tokens > 0 &&
      (a.sink_tokens >= a.kv_ring_rows || a.kv_first_row >= a.kv_ring_rows - a.sink_tokens)) {
    return Status::error(Code::kInvalidArgument,
                         "attention: with %u sink tokens, a ring of %u rows cycles %d of them; kv_first_row %u is not "
                         "below that",
                         a.sink_tokens, a.kv_ring_rows,
                         static_cast<int>(a.kv_ring_rows) - static_cast<int>(a.sink_tokens), a.kv_first_row);
  }
  // The kernels' own check: anything it rejects that the checks above let through.
  simd::AttentionArgs resolved = a;
  if (resolved.scale == 0.0f) resolved.scale = default_scale(a.head_dim);
  if (const char* kernel_error = simd::attention_args_error(resolved)) {
    return Status::error(Code::kInvalidArgument, "attention: %s", kernel_error);
  }
  return Status();
}

AttentionSplit attention_split(const simd::AttentionArgs& a, uint32_t threads) {
  return headway::attention_split(a.t_q, a.t_kv, a.n_heads, a.n_kv_heads, a.head_dim, threads);
}

namespace {

// The call of args as it runs: the scale resolved, the split for `threads`.
PreparedAttention prepared_call(const simd::AttentionArgs& args, uint32_t threads) {
  PreparedAttention call;
  call.args = args;
  if (call.args.scale == 0.0f) call.args.scale = default_scale(args.head_dim);
  call.split = attention_split(call.args, threads);
  call.threads = threads;
  return call;
}

}  // namespace

Result<PreparedAttention> prepare_attention(const simd::AttentionArgs& args, uint32_t threads) {
  HEADWAY_RETURN_IF_ERROR(check_threads(threads));
  HEADWAY_RETURN_IF_ERROR(validate_attention_args(args));
  return prepared_call(args, threads);
}

namespace {

Status check_prepared_run(const PreparedAttention& call, ThreadPool* pool, void* workspace, size_t workspace_bytes) {
  const uint32_t threads = pool != nullptr ? pool->threads() : 1;
  if (threads != call.threads) {
    return Status::error(Code::kInvalidArgument, "attention: the pool has %u threads, the call was prepared for %u",
                         threads, call.threads);
  }
  return check_workspace(call, workspace, workspace_bytes);
}

// The tasks of a call whose every check passed.
void run_checked_call(const PreparedAttention& call, ThreadPool* pool, void* workspace) {
  const uint32_t threads = call.threads;
  const AttentionSplit& split = call.split;
  RunContext c;
  c.args = &call.args;
  c.split = split;
  c.scratch = static_cast<uint8_t*>(workspace);
  c.partials = c.scratch + size_t{threads} * split.scratch_bytes;
  if (split.n_chunks == 0) {
    ThreadPool::run_on(pool, size_t{call.args.n_kv_heads} * split.q_tiles, &tile_task, &c);
  } else {
    ThreadPool::run_on(pool, size_t{call.args.n_kv_heads} * split.n_chunks, &chunk_task, &c);
    ThreadPool::run_on(pool, call.args.n_kv_heads, &merge_task, &c);
  }
}

}  // namespace

Status run_prepared_attention(const PreparedAttention& call, ThreadPool* pool, void* workspace,
                              size_t workspace_bytes) {
  HEADWAY_RETURN_IF_ERROR(check_prepared_run(call, pool, workspace, workspace_bytes));
  run_checked_call(call, pool, workspace);
  return Status();
}

void attend_strided_unchecked(const simd::AttentionArgs& args, ThreadPool* pool, void* workspace,
                              size_t workspace_bytes) {
  const PreparedAttention call = prepared_call(args, pool != nullptr ? pool->threads() : 1);
  HEADWAY_DEBUG_CHECK(prepare_attention(args, call.threads).status());
  HEADWAY_DEBUG_CHECK(check_prepared_run(call, pool, workspace, workspace_bytes));
  static_cast<void>(workspace_bytes);
  run_checked_call(call, pool, workspace);
}

Status attend_strided(const simd::AttentionArgs& args, ThreadPool* pool, void* workspace, size_t workspace_bytes) {
  const Result<PreparedAttention> call = prepare_attention(args, pool != nullptr ? pool->threads() : 1);
  if (!call.ok()) return call.status();
  return run_prepared_attention(call.value(), pool, workspace, workspace_bytes);
}

Result<size_t> attention_workspace_bytes(const AttentionShape& shape, uint32_t threads) {
  return attention_workspace_bytes(shape, AttentionParams{}, threads);
}

Result<size_t> attention_workspace_bytes(const AttentionShape& shape, const AttentionParams& params, uint32_t threads) {
  AttentionOp op;
  HEADWAY_RETURN_IF_ERROR(op.reshape(shape, params, DType::kF32, threads));
  return op.workspace_bytes();
}

Status check_packed_batch(const AttentionShape& s, const AttentionParams& p) {
  if (p.cu_seqlens_q == nullptr) {
    if (p.cu_seqlens_k != nullptr || p.n_seqs != 0) {
      return Status::error(Code::kInvalidArgument,
                           "attention: %s without cu_seqlens_q (a packed batch gives the query lengths first)",
                           p.cu_seqlens_k != nullptr ? "cu_seqlens_k" : "n_seqs");
    }
    return Status();
  }
  if (p.n_seqs == 0) {
    return Status::error(Code::kInvalidArgument, "attention: cu_seqlens_q is given with n_seqs 0 (no sequence)");
  }
  if (p.cu_seqlens_k == nullptr && s.t_kv != s.t_q) {
    return Status::error(Code::kInvalidArgument,
                         "attention: a packed batch without cu_seqlens_k needs t_kv == t_q, got t_kv %u and t_q %u",
                         s.t_kv, s.t_q);
  }
  const struct {
    const char* name;
    const uint32_t* cu;
    uint32_t total;
    const char* total_name;
  } arrays[2] = {{"cu_seqlens_q", p.cu_seqlens_q, s.t_q, "t_q"}, {"cu_seqlens_k", p.cu_seqlens_k, s.t_kv, "t_kv"}};
  for (const auto& a : arrays) {
    if (a.cu == nullptr) continue;
    if (a.cu[0] != 0) {
      return Status::error(Code::kInvalidArgument, "attention: %s[0] is %u, expected 0 (the first sequence's start)",
                           a.name, a.cu[0]);
    }
    for (uint32_t b = 0; b < p.n_seqs; ++b) {
      if (a.cu[b + 1] <= a.cu[b]) {
        return Status::error(Code::kInvalidArgument,
                             "attention: %s[%u] = %u is not above %s[%u] = %u: sequence %u has length %lld (each "
                             "needs at least 1)",
                             a.name, b + 1, a.cu[b + 1], a.name, b, a.cu[b], b,
                             static_cast<long long>(a.cu[b + 1]) - static_cast<long long>(a.cu[b]));
      }
    }
    if (a.cu[p.n_seqs] != a.total) {
      return Status::error(Code::kInvalidArgument,
                           "attention: %s[n_seqs = %u] is %u, but %s is %u (the lengths must cover every row)", a.name,
                           p.n_seqs, a.cu[p.n_seqs], a.total_name, a.total);
    }
  }
  const uint32_t* ck = p.cu_seqlens_k != nullptr ? p.cu_seqlens_k : p.cu_seqlens_q;
  for (uint32_t b = 0; p.prefix != 0 && b < p.n_seqs; ++b) {
    if (ck[b + 1] - ck[b] < p.prefix) {
      return Status::error(Code::kInvalidArgument,
                           "attention: prefix %u is longer than sequence %u's %u key%s; it counts from each "
                           "sequence's start",
                           p.prefix, b, ck[b + 1] - ck[b], ck[b + 1] - ck[b] == 1 ? "" : "s");
    }
  }
  return Status();
}

namespace {

// Sequence b of a packed batch as a call of its own: its shape, and its rows' offsets.
struct PackedSequence {
  AttentionShape shape;
  uint32_t q_row = 0, kv_row = 0;
};

PackedSequence packed_sequence(const AttentionShape& s, const AttentionParams& p, uint32_t b) {
  const uint32_t* cq = p.cu_seqlens_q;
  const uint32_t* ck = p.cu_seqlens_k != nullptr ? p.cu_seqlens_k : cq;
  PackedSequence q;
  q.shape = s;
  q.shape.t_q = cq[b + 1] - cq[b];
  q.shape.t_kv = ck[b + 1] - ck[b];
  q.q_row = cq[b];
  q.kv_row = ck[b];
  return q;
}

// The parameters of one sequence of a packed batch (its general mask still the whole batch's
// rows: its stride resolved against the whole t_kv).
AttentionParams one_sequence(AttentionParams p, const AttentionShape& s) {
  p.cu_seqlens_q = p.cu_seqlens_k = nullptr;
  p.n_seqs = 0;
  if (p.mask_row_stride == 0) p.mask_row_stride = s.t_kv;
  return p;
}

// The same for sequence seq: its block on the general mask's diagonal.
AttentionParams sequence_params(AttentionParams single, const PackedSequence& seq) {
  const size_t at = size_t{seq.q_row} * single.mask_row_stride + seq.kv_row;
  if (single.mask_bool != nullptr) single.mask_bool += at;
  if (single.mask_additive != nullptr) single.mask_additive += at;
  return single;
}

}  // namespace

Result<simd::AttentionArgs> strided_attention_args(const float* q, const void* k, const void* v, DType kv_dtype,
                                                   float* o, const AttentionShape& s, const AttentionParams& p,
                                                   size_t kv_head_stride, size_t kv_row_stride) {
  simd::AttentionArgs a;
  if (!dtype_stores_kv(kv_dtype)) {
    return Status::error(Code::kInvalidArgument, "attention: kv dtype %s (%u) is not one of %s", dtype_name(kv_dtype),
                         static_cast<unsigned>(kv_dtype), kKvDTypeNames);
  }
  a.kv_type = kv_dtype;
  a.q = q;
  a.q_token_stride = size_t{s.n_heads} * s.head_dim;
  a.o = o;
  a.o_token_stride = a.q_token_stride;
  a.k = k;
  a.v = v;
  a.kv_head_stride = kv_head_stride;
  a.kv_row_stride = kv_row_stride;
  a.t_q = s.t_q;
  a.t_kv = s.t_kv;
  a.n_heads = s.n_heads;
  a.n_kv_heads = s.n_kv_heads;
  a.head_dim = s.head_dim;
  a.scale = p.scale;
  a.softcap = p.softcap;
  a.causal = p.causal;
  a.window = p.window;
  a.sinks = p.sinks;
  a.sink_tokens = p.sink_tokens;
  a.alibi_slopes = p.alibi_slopes;
  a.prefix = p.prefix;
  a.window_symmetric = p.window_symmetric;
  a.mask_bool = p.mask_bool;
  a.mask_additive = p.mask_additive;
  a.mask_row_stride = p.mask_row_stride != 0 ? p.mask_row_stride : s.t_kv;
  return a;
}

Status AttentionOp::reshape(const AttentionShape& shape, const AttentionParams& params, DType kv_dtype,
                            uint32_t threads) {
  // Stand-in tensors: only the shape and the parameters are checked here.
  float stand_in = 0.0f;
  const AttentionParams single = one_sequence(params, shape);
  const Result<simd::AttentionArgs> args =
      token_major_args(&stand_in, &stand_in, &stand_in, kv_dtype, &stand_in, shape, single);
  if (!args.ok()) return args.status();
  const Result<PreparedAttention> call = prepare_attention(args.value(), threads);
  if (!call.ok()) return call.status();
  HEADWAY_RETURN_IF_ERROR(check_packed_batch(shape, params));
  // A packed batch runs sequence by sequence, each split as its own call: the workspace is the
  // largest of theirs.
  AttentionSplit split = call.value().split;
  for (uint32_t b = 0; params.cu_seqlens_q != nullptr && b < params.n_seqs; ++b) {
    const PackedSequence seq = packed_sequence(shape, params, b);
    const Result<simd::AttentionArgs> seq_args =
        token_major_args(&stand_in, &stand_in, &stand_in, kv_dtype, &stand_in, seq.shape, single);
    const Result<PreparedAttention> seq_call = prepare_attention(seq_args.value(), threads);
    if (!seq_call.ok()) return seq_call.status();
    if (b == 0 || seq_call.value().split.workspace_bytes > split.workspace_bytes) split = seq_call.value().split;
  }
  shape_ = shape;
  params_ = params;
  params_.scale = call.value().args.scale;
  kv_dtype_ = kv_dtype;
  threads_ = threads;
  split_ = split;
  return Status();
}

Status AttentionOp::run(const float* q, const void* k, const void* v, float* o, ThreadPool* pool, void* workspace,
                        size_t workspace_bytes) const {
  if (!reshaped()) return Status::error(Code::kFailedPrecondition, "attention: run before reshape");
  HEADWAY_RETURN_IF_ERROR(check_tensors(q, k, v, o));
  if (params_.cu_seqlens_q == nullptr) {
    PreparedAttention call;
    call.args = token_major_args(q, k, v, kv_dtype_, o, shape_, params_).value();  // reshape checked the dtype
    call.split = split_;
    call.threads = threads_;
    return run_prepared_attention(call, pool, workspace, workspace_bytes);
  }
  // The lengths are read and checked again: changed ones run as they now are or fail (a workspace
  // too small for them included), never read past the tensors.
  HEADWAY_RETURN_IF_ERROR(check_packed_batch(shape_, params_));
  const AttentionParams single = one_sequence(params_, shape_);
  const size_t q_width = size_t{shape_.n_heads} * shape_.head_dim;
  const size_t kv_token_bytes = size_t{shape_.n_kv_heads} * dtype_row_bytes(kv_dtype_, shape_.head_dim);
  for (uint32_t b = 0; b < params_.n_seqs; ++b) {
    const PackedSequence seq = packed_sequence(shape_, params_, b);
    const size_t kv_offset = size_t{seq.kv_row} * kv_token_bytes;
    PreparedAttention call;
    call.args = token_major_args(q + seq.q_row * q_width, static_cast<const uint8_t*>(k) + kv_offset,
                                 static_cast<const uint8_t*>(v) + kv_offset, kv_dtype_, o + seq.q_row * q_width,
                                 seq.shape, sequence_params(single, seq))
                    .value();
    call.split = attention_split(call.args, threads_);
    call.threads = threads_;
    HEADWAY_RETURN_IF_ERROR(run_prepared_attention(call, pool, workspace, workspace_bytes));
  }
  return Status();
}

Status attend(const float* q, const void* k, const void* v, DType kv_dtype, float* o, const AttentionShape& shape,
              const AttentionParams& params, ThreadPool* pool, void* workspace, size_t workspace_bytes) {
  AttentionOp op;
  HEADWAY_RETURN_IF_ERROR(op.reshape(shape, params, kv_dtype, pool != nullptr ? pool->threads() : 1));
  return op.run(q, k, v, o, pool, workspace, workspace_bytes);
}

}  // namespace headway
