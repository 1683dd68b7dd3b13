// headway attend: O = softmax(scale · Q Kᵀ + mask) V over .npy files.
//   q [T_q, n_heads, head_dim] f32; k, v [T_kv, n_kv_heads, head_dim] f32 or f16; out f32.
// GQA comes from the shapes. --kv-dtype picks the storage the kernels read: f32 input narrows
// with round-to-nearest-even, f16 input widens (to f32) or widens and rounds once (to bf16).
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "examples/cli/cli_common.hpp"
#include "examples/cli/commands.hpp"
#include "headway/attention.hpp"
#include "headway/backend.hpp"
#include "headway/hadamard.hpp"
#include "headway/tools/npy.hpp"
#include "headway/quantize.hpp"
#include "headway/thread_pool.hpp"

namespace headway::cli {
namespace {

constexpr const char* kUsage =
    "usage: headway attend --q q.npy --k k.npy --v v.npy --out o.npy [--causal] [--window W]\n"
    "                      [--softcap C] [--scale S] [--sinks sinks.npy] [--sink-tokens S] [--alibi]\n"
    "                      [--alibi-max-bias B] [--kv-dtype f32|f16|bf16|q8_0|q4_0] [--kv-rotate]\n"
    "                      [--threads N] [--symmetric-window] [--prefix P] [--seq-lens N,N,...]\n"
    "                      [--kv-seq-lens N,N,...] [--mask mask.npy] [--backend cpu|gpu]\n"
    "  q [T_q, n_heads, head_dim] f32; k, v [T_kv, n_kv_heads, head_dim] f32 or f16; out f32 like q.\n"
    "  --scale 0 (the default) means 1/sqrt(head_dim); --softcap 0 and --window 0 are off.\n"
    "  --sinks: [n_heads] f32 learned sink logits (gpt-oss), one more logit per row with no value.\n"
    "  --sink-tokens S: with --window W > S, keys 0..S-1 stay visible through the window (StreamingLLM).\n"
    "  --alibi: adds -m_h * |p - j| to each logit, m_h the standard ALiBi slopes of n_heads heads\n"
    "    (2^(-8(h+1)/n) for a power of two n); --alibi-max-bias B puts B in place of 8 (MPT).\n"
    "  --kv-dtype defaults to the dtype of k.npy and v.npy; q8_0 and q4_0 quantize each row of head_dim\n"
    "    values as llama.cpp does (blocks of 32 with an f16 scale).\n"
    "  --kv-rotate (with --kv-dtype q8_0 or q4_0): rotate each head of q, k and v by the normalized\n"
    "    Walsh-Hadamard transform before k and v are quantized, and o back (a KV cache's kv_rotation).\n"
    "  --symmetric-window (with --window W, without --causal): rows see keys |p - j| < W (ModernBERT).\n"
    "  --prefix P (with --causal): prefix-LM, every row also sees keys 0..P-1 (of its sequence).\n"
    "  --seq-lens 12,40,7: a packed batch, sequences back to back in q, k and v, each attending only\n"
    "    within itself (positions count from its start); they sum to T_q. --kv-seq-lens gives the\n"
    "    keys' lengths when they differ from the queries' (then they sum to T_kv).\n"
    "  --mask mask.npy: a general mask [T_q, T_kv] over every head, with the masks above: bool (True =\n"
    "    the key is visible, as PyTorch) or f32 added to each logit (-inf hides the key). A packed batch\n"
    "    reads each sequence's block on the diagonal.\n";

struct Tensor {
  const char* path = nullptr;
  formats::NpyArray array;
};

// A 3-D array whose dims fit in 32 bits; `layout` names the dims for the message.
Status load_3d(const char* flag, Tensor* t, const char* layout) {
  if (t->path == nullptr) return Status::error(Code::kInvalidArgument, "%s is required (an .npy of %s)", flag, layout);
  Result<formats::NpyArray> a = formats::load_npy(t->path);
  if (!a.ok()) return a.status();
  t->array = std::move(a.value());
  const formats::NpyArray& x = t->array;
  if (x.ndim != 3) {
    return Status::error(Code::kInvalidArgument, "npy file %s: shape %s has %u dims, expected 3 %s", t->path,
                         npy_shape_text(x.shape, x.ndim).c_str(), x.ndim, layout);
  }
  for (uint32_t i = 0; i < 3; ++i) {
    if (x.shape[i] > UINT32_MAX) {
      return Status::error(Code::kInvalidArgument, "npy file %s: dim %u is %llu, more than %u", t->path, i,
                           static_cast<unsigned long long>(x.shape[i]), UINT32_MAX);
    }
  }
  return Status();
}

// K or V in `want` storage: the file's bytes as they are, or converted into *out (convert_rows:
// one row per token and kv head of head_dim values).
Result<const void*> kv_storage(const Tensor& t, DType want, std::vector<uint8_t>* out) {
  const formats::NpyArray& a = t.array;
  if (a.dtype == want) return static_cast<const void*>(a.data.data());
  const size_t d = static_cast<size_t>(a.shape[2]);
  const size_t rows = d ? static_cast<size_t>(a.elements) / d : 0;
  out->resize(rows * dtype_row_bytes(want, d));
  HEADWAY_RETURN_IF_ERROR(convert_rows(a.data.data(), a.dtype, rows, d, want, out->data(), out->size()));
  return static_cast<const void*>(out->data());
}

// --backend gpu: the same attention on a Vulkan device (runtime/gpu/). No usable device is a
// kUnsupported Status that names why (exit 2).
Status attend_gpu(const float* q, const void* k, const void* v, DType kv_dtype, float* o, const AttentionShape& shape,
                  const AttentionParams& params) {
  char description[256];
  HEADWAY_RETURN_IF_ERROR(attend_gpu_once(q, k, v, kv_dtype, o, shape, params, description, sizeof(description)));
  std::printf("attend: %s\n", description);
  return Status();
}

struct AttendFlags {
  Tensor q, k, v, sinks, mask;  // sinks, mask: optional
  const char* out_path = nullptr;
  BackendKind backend = BackendKind::kCpu;
  AttentionParams params;
  bool kv_dtype_set = false, help = false;
  bool alibi = false;
  float alibi_max_bias = 8.0f;
  std::vector<float> alibi_slopes;  // [n_heads] with --alibi
  DType kv_dtype = DType::kF32;
  KvRotation kv_rotation = KvRotation::kNone;
  uint32_t threads = 1;
  const char* seq_lens = nullptr;     // --seq-lens text
  const char* kv_seq_lens = nullptr;  // --kv-seq-lens text
  std::vector<uint32_t> cu_q, cu_k;   // their cumulative lengths, params.cu_seqlens_* point here
};

// Stops at the first bad flag, or at --help (help set, nothing after it read).
Status parse_flags(int argc, char** argv, AttendFlags* a) {
  Flags flags("attend", argc, argv);
  AttentionParams& p = a->params;
  while (flags.next()) {
    const std::string& f = flags.name();
    Status s;
    if (f == "--help" || f == "-h") {
      a->help = true;
      return Status();
    }
    if (f == "--q") s = flags.value(&a->q.path);
    else if (f == "--k") s = flags.value(&a->k.path);
    else if (f == "--v") s = flags.value(&a->v.path);
    else if (f == "--out") s = flags.value(&a->out_path);
    else if (f == "--causal" && !flags.has_inline_value()) p.causal = true;
    else if (f == "--window") s = flags.value_u32(&p.window, 0, UINT32_MAX);
    else if (f == "--softcap") s = flags.value_float(&p.softcap);
    else if (f == "--scale") s = flags.value_float(&p.scale);
    else if (f == "--sinks") s = flags.value(&a->sinks.path);
    else if (f == "--mask") s = flags.value(&a->mask.path);
    else if (f == "--sink-tokens") s = flags.value_u32(&p.sink_tokens, 0, UINT32_MAX);
    else if (f == "--prefix") s = flags.value_u32(&p.prefix, 0, UINT32_MAX);
    else if (f == "--symmetric-window" && !flags.has_inline_value()) p.window_symmetric = true;
    else if (f == "--alibi" && !flags.has_inline_value()) a->alibi = true;
    else if (f == "--alibi-max-bias") s = flags.value_float(&a->alibi_max_bias), a->alibi = true;
    else if (f == "--kv-dtype") s = flags.value_kv_dtype(&a->kv_dtype), a->kv_dtype_set = true;
    else if (f == "--kv-rotate") s = flags.value_kv_rotation(&a->kv_rotation);
    else if (f == "--threads") s = flags.value_u32(&a->threads, 1, ThreadPool::kMaxThreads);
    else if (f == "--backend") s = flags.value_backend(&a->backend);
    else if (f == "--seq-lens") s = flags.value(&a->seq_lens);
    else if (f == "--kv-seq-lens") s = flags.value(&a->kv_seq_lens);
    else s = flags.unknown();
    HEADWAY_RETURN_IF_ERROR(s);
  }
  return Status();
}

// The checks that need no file: parameter ranges, --out.
Status check_flags(const AttendFlags& a) {
  if (a.params.softcap < 0.0f) {
    return Status::error(Code::kInvalidArgument, "--softcap %g must be >= 0 (0 = off)",
                         static_cast<double>(a.params.softcap));
  }
  if (a.params.scale < 0.0f) {
    return Status::error(Code::kInvalidArgument, "--scale %g must be >= 0 (0 = 1/sqrt(head_dim))",
                         static_cast<double>(a.params.scale));
  }
  if (!(a.alibi_max_bias > 0.0f) || !std::isfinite(a.alibi_max_bias)) {
    return Status::error(Code::kInvalidArgument, "--alibi-max-bias %g must be a positive number (the standard is 8)",
                         static_cast<double>(a.alibi_max_bias));
  }
  if (a.out_path == nullptr) {
    return Status::error(Code::kInvalidArgument, "--out is required (where to write O as .npy)");
  }
  return Status();
}

// --sinks, when given: [n_heads] f32, every value finite; params.sinks then points into it.
Status load_sinks(AttendFlags* a, uint32_t n_heads) {
  Tensor& t = a->sinks;
  if (t.path == nullptr) return Status();
  Result<formats::NpyArray> r = formats::load_npy(t.path);
  if (!r.ok()) return Status::error(r.status().code(), "--sinks: %s", r.status().message());
  t.array = std::move(r.value());
  const formats::NpyArray& x = t.array;
  if (x.ndim != 1 || x.shape[0] != n_heads) {
    return Status::error(Code::kInvalidArgument,
                         "--sinks %s: shape %s, expected [%u] (one sink logit per query head, n_heads of --q)", t.path,
                         npy_shape_text(x.shape, x.ndim).c_str(), n_heads);
  }
  if (x.dtype != DType::kF32) {
    return Status::error(Code::kInvalidArgument, "--sinks %s: dtype %s, expected f32 ('<f4')", t.path,
                         dtype_name(x.dtype));
  }
  const float* v = x.f32();
  for (uint32_t h = 0; h < n_heads; ++h) {
    if (!std::isfinite(v[h])) {
      return Status::error(Code::kInvalidArgument, "--sinks %s: sinks[%u] = %g is not finite", t.path, h,
                           static_cast<double>(v[h]));
    }
  }
  a->params.sinks = v;
  return Status();
}

// --mask, when given: [T_q, T_kv], bool or f32 whose values are finite or -inf where the call
// reads them (after --seq-lens: each sequence's block); params' general mask then points into it.
Status load_mask(AttendFlags* a, const AttentionShape& shape) {
  Tensor& t = a->mask;
  if (t.path == nullptr) return Status();
  Result<formats::NpyArray> r = formats::load_npy(t.path, formats::NpyBool::kAccept);
  if (!r.ok()) return Status::error(r.status().code(), "--mask: %s", r.status().message());
  t.array = std::move(r.value());
  const formats::NpyArray& x = t.array;
  if (x.ndim != 2 || x.shape[0] != shape.t_q || x.shape[1] != shape.t_kv) {
    return Status::error(Code::kInvalidArgument,
                         "--mask %s: shape %s, expected [%u, %u] (T_q of --q by T_kv of --k: one entry per query and "
                         "key)",
                         t.path, npy_shape_text(x.shape, x.ndim).c_str(), shape.t_q, shape.t_kv);
  }
  if (x.boolean) {
    a->params.mask_bool = x.data.data();
    return Status();
  }
  if (x.dtype != DType::kF32) {
    return Status::error(
        Code::kInvalidArgument,
        "--mask %s: dtype %s, expected bool ('|b1', True = visible) or f32 ('<f4', added to the logit)", t.path,
        dtype_name(x.dtype));
  }
  // The entries the call reads: every one, or in a packed batch each sequence's diagonal block.
  const float* m = x.f32();
  const std::vector<uint32_t>& cu_k = a->cu_k.empty() ? a->cu_q : a->cu_k;
  for (uint32_t i = 0, b = 0; i < shape.t_q; ++i) {
    while (!a->cu_q.empty() && a->cu_q[b + 1] <= i) ++b;
    const uint32_t j0 = a->cu_q.empty() ? 0 : cu_k[b], j1 = a->cu_q.empty() ? shape.t_kv : cu_k[b + 1];
    for (uint32_t j = j0; j < j1; ++j) {
      const float e = m[size_t{i} * shape.t_kv + j];
      if (std::isnan(e) || e == HUGE_VALF) {
        return Status::error(Code::kInvalidArgument,
                             "--mask %s: mask[%u][%u] = %g; an additive mask holds finite values or -inf (hidden)",
                             t.path, i, j, static_cast<double>(e));
      }
    }
  }
  a->params.mask_additive = m;
  return Status();
}

// --seq-lens and --kv-seq-lens into params' cumulative lengths.
Status load_seq_lens(AttendFlags* a, const AttentionShape& shape) {
  if (a->seq_lens == nullptr) {
    if (a->kv_seq_lens != nullptr) {
      return Status::error(Code::kInvalidArgument, "--kv-seq-lens needs --seq-lens (the queries' lengths)");
    }
    return Status();
  }
  HEADWAY_RETURN_IF_ERROR(parse_seq_lens("--seq-lens", a->seq_lens, shape.t_q, a->q.path, &a->cu_q));
  AttentionParams& p = a->params;
  p.cu_seqlens_q = a->cu_q.data();
  p.n_seqs = static_cast<uint32_t>(a->cu_q.size() - 1);
  if (a->kv_seq_lens == nullptr) {
    if (shape.t_kv != shape.t_q) {
      return Status::error(Code::kInvalidArgument,
                           "--seq-lens %s: %s has %u keys and %s %u queries; give --kv-seq-lens for the keys",
                           a->seq_lens, a->k.path, shape.t_kv, a->q.path, shape.t_q);
    }
    return Status();
  }
  HEADWAY_RETURN_IF_ERROR(parse_seq_lens("--kv-seq-lens", a->kv_seq_lens, shape.t_kv, a->k.path, &a->cu_k));
  if (a->cu_k.size() != a->cu_q.size()) {
    return Status::error(Code::kInvalidArgument, "--kv-seq-lens %s has %zu sequence(s), --seq-lens %s has %zu",
                         a->kv_seq_lens, a->cu_k.size() - 1, a->seq_lens, a->cu_q.size() - 1);
  }
  p.cu_seqlens_k = a->cu_k.data();
  return Status();
}

// --kv-rotate: over q8_0 or q4_0 K/V, and a head_dim the transform rotates (validate()'s rules).
Status check_rotation(const AttendFlags& a, uint32_t head_dim) {
  if (a.kv_rotation == KvRotation::kNone) return Status();
  if (!dtype_quantizes_kv(a.kv_dtype)) {
    return Status::error(Code::kInvalidArgument, "--kv-rotate (kv_rotation %s) needs --kv-dtype %s, not kv_dtype %s",
                         kv_rotation_name(a.kv_rotation), kQuantizedKvDTypeNames, dtype_name(a.kv_dtype));
  }
  if (hadamard_block(head_dim) == 0) {
    return Status::error(Code::kInvalidArgument,
                         "--kv-rotate cannot rotate head_dim %u: it rotates by blocks of the largest power of two "
                         "dividing head_dim, which must be at least 32",
                         head_dim);
  }
  return Status();
}

// A tensor's rows as f32, each row of head_dim rotated (--kv-rotate).
Status rotated_rows(const Tensor& t, std::vector<float>* out) {
  const formats::NpyArray& a = t.array;
  const size_t d = static_cast<size_t>(a.shape[2]);
  const size_t rows = d ? static_cast<size_t>(a.elements) / d : 0;
  out->resize(rows * d);
  HEADWAY_RETURN_IF_ERROR(
      convert_rows(a.data.data(), a.dtype, rows, d, DType::kF32, out->data(), out->size() * sizeof(float)));
  for (size_t r = 0; r < rows; ++r) hadamard_rotate(out->data() + r * d, static_cast<uint32_t>(d));
  return Status();
}

// K or V for --kv-rotate: its rows rotated, then stored as `want` (q8_0 or q4_0).
Status rotated_storage(const Tensor& t, DType want, std::vector<uint8_t>* out) {
  std::vector<float> rows;
  HEADWAY_RETURN_IF_ERROR(rotated_rows(t, &rows));
  const size_t d = static_cast<size_t>(t.array.shape[2]);
  const size_t n = d ? rows.size() / d : 0;
  out->resize(n * dtype_row_bytes(want, d));
  return convert_rows(rows.data(), DType::kF32, n, d, want, out->data(), out->size());
}

// Loads q, k and v and checks that they form one attention: f32 q, equal k and v shapes, one
// head_dim, query heads a multiple of kv heads, and one K/V dtype unless --kv-dtype converts.
Status load_inputs(AttendFlags* a, AttentionShape* shape) {
  HEADWAY_RETURN_IF_ERROR(load_3d("--q", &a->q, "[T_q, n_heads, head_dim]"));
  HEADWAY_RETURN_IF_ERROR(load_3d("--k", &a->k, "[T_kv, n_kv_heads, head_dim]"));
  HEADWAY_RETURN_IF_ERROR(load_3d("--v", &a->v, "[T_kv, n_kv_heads, head_dim]"));
  const Tensor& q = a->q;
  const Tensor& k = a->k;
  const Tensor& v = a->v;
  const uint64_t* qs = q.array.shape;
  const uint64_t* ks = k.array.shape;
  const uint64_t* vs = v.array.shape;
  using ull = unsigned long long;
  if (q.array.dtype != DType::kF32) {
    return Status::error(Code::kUnsupported, "npy file %s: q is %s, expected f32 ('<f4')", q.path,
                         dtype_name(q.array.dtype));
  }
  if (ks[0] != vs[0] || ks[1] != vs[1] || ks[2] != vs[2]) {
    return Status::error(Code::kInvalidArgument,
                         "k and v shapes differ: %s is %s, %s is %s (both [T_kv, n_kv_heads, head_dim])", k.path,
                         npy_shape_text(ks, 3).c_str(), v.path, npy_shape_text(vs, 3).c_str());
  }
  if (qs[2] != ks[2]) {
    return Status::error(Code::kInvalidArgument, "head_dim differs: %s has %llu, %s has %llu", q.path,
                         static_cast<ull>(qs[2]), k.path, static_cast<ull>(ks[2]));
  }
  if (qs[1] % ks[1] != 0) {
    return Status::error(
        Code::kInvalidArgument, "%s has %llu query heads and %s %llu kv heads: %llu is not divisible by %llu", q.path,
        static_cast<ull>(qs[1]), k.path, static_cast<ull>(ks[1]), static_cast<ull>(qs[1]), static_cast<ull>(ks[1]));
  }
  if (!a->kv_dtype_set) {
    if (k.array.dtype != v.array.dtype) {
      return Status::error(Code::kInvalidArgument, "%s is %s and %s is %s; give --kv-dtype to store both in one dtype",
                           k.path, dtype_name(k.array.dtype), v.path, dtype_name(v.array.dtype));
    }
    a->kv_dtype = k.array.dtype;
  }
  shape->t_q = static_cast<uint32_t>(qs[0]);
  shape->n_heads = static_cast<uint32_t>(qs[1]);
  shape->head_dim = static_cast<uint32_t>(qs[2]);
  shape->t_kv = static_cast<uint32_t>(ks[0]);
  shape->n_kv_heads = static_cast<uint32_t>(ks[1]);
  if (a->alibi) {
    a->alibi_slopes.resize(shape->n_heads);
    HEADWAY_RETURN_IF_ERROR(alibi_slopes(shape->n_heads, a->alibi_slopes.data(), a->alibi_max_bias));
    a->params.alibi_slopes = a->alibi_slopes.data();
  }
  HEADWAY_RETURN_IF_ERROR(check_rotation(*a, shape->head_dim));
  HEADWAY_RETURN_IF_ERROR(load_seq_lens(a, *shape));
  HEADWAY_RETURN_IF_ERROR(load_mask(a, *shape));
  return load_sinks(a, shape->n_heads);
}

// O into *o on the chosen backend, K/V converted to --kv-dtype first where they differ.
Status compute(const AttendFlags& a, const AttentionShape& shape, ThreadPool* pool, std::vector<float>* o) {
  const Result<size_t> ws_bytes = attention_workspace_bytes(shape, a.params, pool->threads());
  if (!ws_bytes.ok()) return ws_bytes.status();
  std::vector<uint8_t> k_converted, v_converted;
  // --kv-rotate: q rotated in a copy; k and v rotated, then stored as --kv-dtype; o rotated back.
  const bool rotate = a.kv_rotation == KvRotation::kHadamard;
  std::vector<float> q_rotated;
  const float* q = a.q.array.f32();
  if (rotate) {
    HEADWAY_RETURN_IF_ERROR(rotated_rows(a.q, &q_rotated));
    HEADWAY_RETURN_IF_ERROR(rotated_storage(a.k, a.kv_dtype, &k_converted));
    HEADWAY_RETURN_IF_ERROR(rotated_storage(a.v, a.kv_dtype, &v_converted));
    q = q_rotated.data();
  }
  const Result<const void*> k_data = rotate ? Result<const void*>(static_cast<const void*>(k_converted.data()))
                                            : kv_storage(a.k, a.kv_dtype, &k_converted);
  if (!k_data.ok()) return k_data.status();
  const Result<const void*> v_data = rotate ? Result<const void*>(static_cast<const void*>(v_converted.data()))
                                            : kv_storage(a.v, a.kv_dtype, &v_converted);
  if (!v_data.ok()) return v_data.status();
  o->resize(static_cast<size_t>(a.q.array.elements));
  const size_t ws_size = (ws_bytes.value() + kWorkspaceAlignment - 1) / kWorkspaceAlignment * kWorkspaceAlignment;
  AlignedBuffer workspace;
  workspace.p = ws_size ? std::aligned_alloc(kWorkspaceAlignment, ws_size) : nullptr;
  if (ws_size && workspace.p == nullptr) {
    return Status::error(Code::kInternal, "cannot allocate a %zu-byte workspace", ws_size);
  }
  const Status s = a.backend == BackendKind::kGpu
                       ? attend_gpu(q, k_data.value(), v_data.value(), a.kv_dtype, o->data(), shape, a.params)
                       : attend(q, k_data.value(), v_data.value(), a.kv_dtype, o->data(), shape, a.params, pool,
                                workspace.p, ws_size);
  HEADWAY_RETURN_IF_ERROR(s);
  if (rotate) {
    hadamard_rotate_heads(o->data(), shape.t_q, size_t{shape.n_heads} * shape.head_dim, shape.n_heads, shape.head_dim);
  }
  return Status();
}

int run(int argc, char** argv) {
  AttendFlags a;
  Status s = parse_flags(argc, argv, &a);
  if (!s.ok()) return report("attend", s);
  if (a.help) {
    std::fputs(kUsage, stdout);
    return kExitOk;
  }
  AttentionShape shape;
  s = check_flags(a);
  if (s.ok()) s = load_inputs(&a, &shape);
  if (!s.ok()) return report("attend", s);

  ThreadPool pool;
  s = pool.create(a.threads);
  if (!s.ok()) return report("attend", s);
  std::vector<float> o;
  s = compute(a, shape, &pool, &o);
  if (!s.ok()) return report("attend", s);
  s = formats::save_npy(a.out_path, DType::kF32, o.data(), a.q.array.shape, 3);
  if (!s.ok()) return report("attend", s);
  std::printf("attend: O [%u, %u, %u] f32 -> %s (t_kv %u, %u kv heads, kv %s%s, %u thread%s)\n", shape.t_q,
              shape.n_heads, shape.head_dim, a.out_path, shape.t_kv, shape.n_kv_heads, dtype_name(a.kv_dtype),
              a.kv_rotation == KvRotation::kHadamard ? " Hadamard-rotated" : "", pool.threads(),
              pool.threads() == 1 ? "" : "s");
  return kExitOk;
}

}  // namespace

int cmd_attend(int argc, char** argv) { return run(argc, argv); }

}  // namespace headway::cli
