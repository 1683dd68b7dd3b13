// headway.attend(): attend() over NumPy arrays, the CLI's `headway attend` without files.
//   q [T_q, n_heads, head_dim] float32; k, v [T_kv, n_kv_heads, head_dim] float32 or float16, read
//   in place when they are already in the storage dtype (kv_dtype); otherwise converted once
//   (convert_rows, row by row of head_dim values, as the CLI does). Returns a new float32 array [T_q, n_heads,
//   head_dim].
// Every buffer (output, converted K/V, workspace, pool) is made with the GIL held; the conversion
// and the attention run with it released, over arrays the call keeps alive.
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <cstring>

#include "headway/attention.hpp"
#include "headway/backend.hpp"
#include "headway/quantize.hpp"
#include "headway/thread_pool.hpp"
#include "python/src/common.hpp"

namespace headway::python {
namespace {

// K or V in `want` storage: the caller's array when it already is, else `out`, sized here and
// written by convert_rows once the GIL is released (one row per token and kv head).
const void* kv_target(const Tensor& t, DType want, std::vector<uint8_t>* out) {
  if (t.dtype == want) return t.data;
  const size_t d = t.shape[2];
  out->resize((d ? t.elements() / d : 0) * dtype_row_bytes(want, d));
  return out->data();
}

Status convert_kv(const Tensor& t, DType want, std::vector<uint8_t>* out) {
  if (t.dtype == want) return Status();
  const size_t d = t.shape[2];
  return convert_rows(t.data, t.dtype, d ? t.elements() / d : 0, d, want, out->data(), out->size());
}

// Cumulative lengths [0, l0, l0 + l1, ...] of a packed batch; the library checks the rest (no
// empty sequence, the sum).
std::vector<uint32_t> cumulative(const std::vector<int64_t>& lens, const char* field) {
  std::vector<uint32_t> cu{0};
  uint64_t sum = 0;
  for (size_t i = 0; i < lens.size(); ++i) {
    if (lens[i] < 1)
      HEADWAY_PY_INVALID("%s[%zu] = %lld: every sequence needs at least one token", field, i,
                         static_cast<long long>(lens[i]));
    sum += static_cast<uint64_t>(lens[i]);
    if (sum > UINT32_MAX) HEADWAY_PY_INVALID("%s: the lengths sum past %u", field, UINT32_MAX);
    cu.push_back(static_cast<uint32_t>(sum));
  }
  if (lens.empty()) HEADWAY_PY_INVALID("%s is empty: give one length per sequence", field);
  return cu;
}

OutArray py_attend(nb::handle q_obj, nb::handle k_obj, nb::handle v_obj, bool causal, int64_t window, float softcap,
                   std::optional<float> scale, std::optional<std::string> kv_dtype_name, nb::handle sinks_obj,
                   int64_t sink_tokens, bool alibi, float alibi_max_bias, int64_t prefix, bool window_symmetric,
                   std::optional<std::vector<int64_t>> seq_lens, std::optional<std::vector<int64_t>> kv_seq_lens,
                   nb::handle mask_obj, int64_t threads, const std::string& backend) {
  const Tensor q = view(q_obj, "q", 3, Accept::kF32, "[T_q, n_heads, head_dim]");
  const Tensor k = view(k_obj, "k", 3, Accept::kF32OrF16, "[T_kv, n_kv_heads, head_dim]");
  const Tensor v = view(v_obj, "v", 3, Accept::kF32OrF16, "[T_kv, n_kv_heads, head_dim]");
  if (k.shape != v.shape) {
    HEADWAY_PY_INVALID(
        "k and v shapes differ: k is (%u, %u, %u), v is (%u, %u, %u) (both [T_kv, n_kv_heads, head_dim])", k.shape[0],
        k.shape[1], k.shape[2], v.shape[0], v.shape[1], v.shape[2]);
  }
  if (q.shape[2] != k.shape[2]) HEADWAY_PY_INVALID("head_dim differs: q has %u, k has %u", q.shape[2], k.shape[2]);
  if (k.shape[1] != 0 && q.shape[1] % k.shape[1] != 0) {  // 0 heads: attend()'s message
    HEADWAY_PY_INVALID("q has %u query heads and k %u kv heads: %u is not divisible by %u", q.shape[1], k.shape[1],
                       q.shape[1], k.shape[1]);
  }
  DType kv_dtype = k.dtype;
  if (kv_dtype_name) {
    kv_dtype = parse_dtype(*kv_dtype_name, "kv_dtype", true);
  } else if (k.dtype != v.dtype) {
    HEADWAY_PY_INVALID("k is %s and v is %s; give kv_dtype to store both in one dtype", dtype_name(k.dtype),
                       dtype_name(v.dtype));
  }
  const BackendKind backend_kind = parse_backend(backend);

  AttentionShape shape;
  shape.t_q = q.shape[0];
  shape.n_heads = q.shape[1];
  shape.head_dim = q.shape[2];
  shape.t_kv = k.shape[0];
  shape.n_kv_heads = k.shape[1];
  AttentionParams p;
  p.causal = causal;
  p.window = to_u32(window, "window");
  p.softcap = softcap;
  if (softcap < 0.0f) HEADWAY_PY_INVALID("softcap %g must be >= 0 (0 = off)", static_cast<double>(softcap));
  if (scale) {
    if (!(*scale > 0.0f))
      HEADWAY_PY_INVALID("scale %g must be > 0 (None = 1/sqrt(head_dim))", static_cast<double>(*scale));
    p.scale = *scale;
  }
  p.sink_tokens = to_u32(sink_tokens, "sink_tokens");
  p.prefix = to_u32(prefix, "prefix");
  p.window_symmetric = window_symmetric;

  Tensor sinks;
  if (!sinks_obj.is_none()) {
    sinks = view(sinks_obj, "sinks", 1, Accept::kF32, "[n_heads]");
    if (sinks.shape[0] != shape.n_heads) {
      HEADWAY_PY_INVALID("sinks: shape (%u,), expected (%u,) (one sink logit per query head, n_heads of q)",
                         sinks.shape[0], shape.n_heads);
    }
    p.sinks = static_cast<const float*>(sinks.data);
  }
  std::vector<float> slopes;
  if (alibi) {
    slopes.resize(shape.n_heads);
    check(alibi_slopes(shape.n_heads, slopes.data(), alibi_max_bias));
    p.alibi_slopes = slopes.data();
  }
  std::vector<uint32_t> cu_q, cu_k;
  if (seq_lens) {
    cu_q = cumulative(*seq_lens, "seq_lens");
    p.cu_seqlens_q = cu_q.data();
    p.n_seqs = static_cast<uint32_t>(cu_q.size() - 1);
    if (kv_seq_lens) {
      cu_k = cumulative(*kv_seq_lens, "kv_seq_lens");
      if (cu_k.size() != cu_q.size()) {
        HEADWAY_PY_INVALID("kv_seq_lens has %zu sequence(s), seq_lens has %zu", cu_k.size() - 1, cu_q.size() - 1);
      }
      p.cu_seqlens_k = cu_k.data();
    } else if (shape.t_kv != shape.t_q) {
      HEADWAY_PY_INVALID("seq_lens: k has %u keys and q %u queries; give kv_seq_lens for the keys", shape.t_kv,
                         shape.t_q);
    }
  } else if (kv_seq_lens) {
    HEADWAY_PY_INVALID("kv_seq_lens needs seq_lens (the queries' lengths)");
  }
  Tensor mask;
  if (!mask_obj.is_none()) {
    mask = view(mask_obj, "mask", 2, Accept::kF32OrBool, "[T_q, T_kv]");
    if (mask.shape[0] != shape.t_q || mask.shape[1] != shape.t_kv) {
      HEADWAY_PY_INVALID("mask: shape (%u, %u), expected (%u, %u) (T_q of q by T_kv of k: one entry per query and key)",
                         mask.shape[0], mask.shape[1], shape.t_q, shape.t_kv);
    }
    if (mask.boolean) p.mask_bool = static_cast<const uint8_t*>(mask.data);
    else p.mask_additive = static_cast<const float*>(mask.data);
  }

  const uint32_t n_threads = to_u32(threads, "threads");
  ThreadPool pool;
  check(pool.create(n_threads));
  const Result<size_t> ws_bytes = attention_workspace_bytes(shape, p, pool.threads());
  check(ws_bytes.status());
  AlignedBytes workspace = aligned_bytes(ws_bytes.value());
  std::vector<uint8_t> k_converted, v_converted;
  const void* k_data = kv_target(k, kv_dtype, &k_converted);
  const void* v_data = kv_target(v, kv_dtype, &v_converted);
  float* o = nullptr;
  OutArray out = new_f32({shape.t_q, shape.n_heads, shape.head_dim}, &o);
  const float* q_data = static_cast<const float*>(q.data);
  const size_t ws_size = (ws_bytes.value() + kAlignment - 1) / kAlignment * kAlignment;
  Status s;
  {
    nb::gil_scoped_release release;
    s = convert_kv(k, kv_dtype, &k_converted);
    if (s.ok()) s = convert_kv(v, kv_dtype, &v_converted);
    if (s.ok() && backend_kind == BackendKind::kGpu) s = attend_gpu_once(q_data, k_data, v_data, kv_dtype, o, shape, p);
    else if (s.ok()) s = attend(q_data, k_data, v_data, kv_dtype, o, shape, p, &pool, workspace.get(), ws_size);
  }
  check(s);
  return out;
}

// The address attend() would read an array parameter at: the caller's own buffer for a
// C-contiguous float32 / float16 array (no copy), which a test compares with the array's.
uintptr_t input_address(nb::handle obj) {
  return reinterpret_cast<uintptr_t>(view(obj, "array", 3, Accept::kF32OrF16, "[T, heads, head_dim]").data);
}

// quantize_row over each row of x [rows, n] float32: the q8_0 / q4_0 rows back to back as bytes
// (dtype_row_bytes(kv_dtype, n) each), as the KV caches and attend() hold them
// (headway.executorch writes its caches with it).
nb::bytes quantize_rows(nb::handle x_obj, const std::string& kv_dtype_name) {
  const Tensor x = view(x_obj, "x", 2, Accept::kF32, "[rows, n]");
  const DType t = parse_dtype(kv_dtype_name, "kv_dtype", true);
  if (!dtype_quantizes_kv(t))
    HEADWAY_PY_INVALID("kv_dtype '%s': give %s", kv_dtype_name.c_str(), kQuantizedKvDTypeNames);
  const size_t rows = x.shape[0], n = x.shape[1], row_bytes = dtype_row_bytes(t, n);
  std::vector<uint8_t> out(rows * row_bytes);
  check(convert_rows(x.data, DType::kF32, rows, n, t, out.data(), out.size()));
  return nb::bytes(reinterpret_cast<const char*>(out.data()), out.size());
}

// The inverse: rows of q8_0 / q4_0 bytes (a uint8 array [rows, row_bytes]) to float32 [rows, n].
OutArray dequantize_rows(nb::ndarray<nb::ro, uint8_t, nb::ndim<2>, nb::c_contig> b, const std::string& kv_dtype_name,
                         int64_t n_values) {
  const DType t = parse_dtype(kv_dtype_name, "kv_dtype", true);
  if (!dtype_quantizes_kv(t))
    HEADWAY_PY_INVALID("kv_dtype '%s': give %s", kv_dtype_name.c_str(), kQuantizedKvDTypeNames);
  const uint32_t n = to_u32(n_values, "n", 1);
  const size_t rows = b.shape(0), row_bytes = dtype_row_bytes(t, n);
  if (b.shape(1) != row_bytes)
    HEADWAY_PY_INVALID("rows of %zu bytes; %s rows of %u values take %zu", static_cast<size_t>(b.shape(1)),
                       kv_dtype_name.c_str(), n, row_bytes);
  float* y = nullptr;
  OutArray out = new_f32({rows, n}, &y);
  for (size_t r = 0; r < rows; ++r) {
    check(dequantize_row(quant_type_of(t), b.data() + r * row_bytes, row_bytes, n, y + r * n));
  }
  return out;
}

}  // namespace

void bind_attend(nb::module_& m) {
  m.def("_quantize_rows", &quantize_rows, nb::arg("x"), nb::arg("kv_dtype"));
  m.def("_dequantize_rows", &dequantize_rows, nb::arg("b"), nb::arg("kv_dtype"), nb::arg("n"));
  m.def("attend", &py_attend, nb::arg("q"), nb::arg("k"), nb::arg("v"), nb::kw_only(), nb::arg("causal") = false,
        nb::arg("window") = 0, nb::arg("softcap") = 0.0f, nb::arg("scale") = nb::none(),
        nb::arg("kv_dtype") = nb::none(), nb::arg("sinks") = nb::none(), nb::arg("sink_tokens") = 0,
        nb::arg("alibi") = false, nb::arg("alibi_max_bias") = 8.0f, nb::arg("prefix") = 0,
        nb::arg("window_symmetric") = false, nb::arg("seq_lens") = nb::none(), nb::arg("kv_seq_lens") = nb::none(),
        nb::arg("mask") = nb::none(), nb::arg("threads") = 1, nb::arg("backend") = "cpu",
        "O = softmax(scale * Q K^T + mask) V over NumPy arrays (see the package docstring).");
  m.def("_input_address", &input_address, nb::arg("array"));
  m.def("gpu_compiled", &GpuContext::compiled, "True when this build has the Vulkan GPU backend.");
}

}  // namespace headway::python
