// headway.KvCache (one layer's cache: a CpuBackend or GpuBackend over memory the object owns)
// and headway.Session (a stack of attention blocks over one Arena the object owns). Both are
// made from one config source as plan() takes it; their memory is allocated once, here, 64-byte
// aligned, and the library calls allocate nothing after. Each call on an object holds its mutex
// (taken with the GIL released), so two Python threads sharing one object take turns.
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <cmath>
#include <cstring>
#include <memory>
#include <mutex>
#include <random>

#include "headway/arena.hpp"
#include "headway/backend.hpp"
#include "headway/layer_tensors.hpp"
#include "headway/tools/plan_json.hpp"
#include "headway/session.hpp"
#include "python/src/common.hpp"

namespace headway::python {
namespace {

nb::object plan_dict(const Plan& p) { return nb::module_::import_("json").attr("loads")(plan_json(p)); }

// A [t, width] float32 array whose rows are `width` wide (the library takes t and trusts it).
Tensor rows_of(nb::handle obj, const char* name, uint32_t width, const char* layout) {
  Tensor t = view(obj, name, 2, Accept::kF32, layout);
  if (t.shape[1] != width) HEADWAY_PY_INVALID("%s: rows of %u values, expected %u %s", name, t.shape[1], width, layout);
  return t;
}

// A [n, heads, head_dim] float32 array with the plan's heads and head_dim.
Tensor heads_of(nb::handle obj, const char* name, uint32_t heads, uint32_t head_dim, const char* layout) {
  Tensor t = view(obj, name, 3, Accept::kF32, layout);
  if (t.shape[1] != heads || t.shape[2] != head_dim) {
    HEADWAY_PY_INVALID("%s: shape (%u, %u, %u), expected (n, %u, %u) %s", name, t.shape[0], t.shape[1], t.shape[2],
                       heads, head_dim, layout);
  }
  return t;
}

class PyKvCache {
 public:
  PyKvCache(const ConfigSource& source, std::optional<std::string> kv_dtype, int64_t threads, int64_t max_tokens,
            int64_t layer, const std::string& backend, std::optional<std::string> kv_rotation) {
    const Plan whole = make_checked_plan(load_config(source), kv_dtype, threads, max_tokens, std::nullopt, kv_rotation);
    const uint32_t l = to_u32(layer, "layer");
    if (l >= whole.config.n_layers) HEADWAY_PY_INVALID("layer %u: the config has %u layers", l, whole.config.n_layers);
    plan_ = layer_plan(whole, l);
    check(pool_.create(plan_.options.threads));
    if (parse_backend(backend) == BackendKind::kGpu) {
      gpu_context_ = std::make_unique<GpuContext>();
      check(gpu_context_->create());
      gpu_ = std::make_unique<GpuBackend>();
      check(gpu_->create(gpu_context_.get(), plan_));
    } else {
      const size_t bytes = CpuBackend::memory_bytes(plan_, pool_.threads());
      memory_ = aligned_bytes(bytes);
      check(cpu_.create(plan_, &pool_, memory_.get(), bytes));
    }
  }

  Backend backend() { return gpu_ ? Backend(gpu_.get()) : Backend(&cpu_); }

  void append(nb::handle k_obj, nb::handle v_obj) {
    const char* layout = "[n, n_kv_heads, head_dim]";
    const Tensor k = heads_of(k_obj, "k", plan_.config.kv_heads(), plan_.head_dim, layout);
    const Tensor v = heads_of(v_obj, "v", plan_.config.kv_heads(), plan_.head_dim, layout);
    if (k.shape[0] != v.shape[0]) HEADWAY_PY_INVALID("k has %u tokens and v %u", k.shape[0], v.shape[0]);
    Status s;
    {
      nb::gil_scoped_release release;
      std::lock_guard<std::mutex> lock(mutex_);
      s = backend().append(static_cast<const float*>(k.data), plan_.kv_width, static_cast<const float*>(v.data),
                           plan_.kv_width, k.shape[0]);
    }
    check(s);
  }

  // A rotated copy of q [t_q, n_heads, head_dim]: the RoPE the keys of the last t_q tokens got.
  OutArray rotate_queries(nb::handle q_obj) {
    const Tensor q = heads_of(q_obj, "q", plan_.config.n_heads, plan_.head_dim, "[t_q, n_heads, head_dim]");
    float* rotated = nullptr;
    OutArray out = new_f32({q.shape[0], plan_.config.n_heads, plan_.head_dim}, &rotated);
    Status s;
    {
      nb::gil_scoped_release release;
      std::lock_guard<std::mutex> lock(mutex_);
      std::memcpy(rotated, q.data, q.elements() * sizeof(float));
      s = backend().rotate_queries(rotated, plan_.q_width, q.shape[0]);
    }
    check(s);
    return out;
  }

  OutArray attend(nb::handle q_obj, nb::handle sinks_obj) {
    const Tensor q = heads_of(q_obj, "q", plan_.config.n_heads, plan_.head_dim, "[t_q, n_heads, head_dim]");
    Tensor sinks;
    if (!sinks_obj.is_none()) {
      sinks = view(sinks_obj, "sinks", 1, Accept::kF32, "[n_heads]");
      if (sinks.shape[0] != plan_.config.n_heads) {
        HEADWAY_PY_INVALID("sinks: shape (%u,), expected (%u,) (one per query head)", sinks.shape[0],
                           plan_.config.n_heads);
      }
    }
    float* o = nullptr;
    OutArray out = new_f32({q.shape[0], plan_.config.n_heads, plan_.head_dim}, &o);
    Status s;
    {
      nb::gil_scoped_release release;
      std::lock_guard<std::mutex> lock(mutex_);
      s = backend().attend(static_cast<const float*>(q.data), plan_.q_width, o, plan_.q_width, q.shape[0],
                           static_cast<const float*>(sinks.data));
    }
    check(s);
    return out;
  }

  void reset(int64_t start) {
    const uint32_t p = to_u32(start, "start");
    nb::gil_scoped_release release;
    std::lock_guard<std::mutex> lock(mutex_);
    backend().reset(p);
  }

  void truncate(int64_t tokens) {
    const uint32_t n = to_u32(tokens, "tokens");
    Status s;
    {
      nb::gil_scoped_release release;
      std::lock_guard<std::mutex> lock(mutex_);
      s = backend().truncate(n);
    }
    check(s);
  }

  uint32_t size() { return backend().size(); }
  uint32_t position() { return backend().position(); }
  uint32_t start_position() { return backend().position() - backend().size(); }
  uint32_t rows() const { return plan_.cache_rows; }
  nb::object plan() const { return plan_dict(plan_); }

 private:
  Plan plan_{};
  ThreadPool pool_;
  AlignedBytes memory_;
  CpuBackend cpu_;
  std::unique_ptr<GpuContext> gpu_context_;  // before gpu_: destroyed after it
  std::unique_ptr<GpuBackend> gpu_;
  std::mutex mutex_;
};

// Random weights for a plan, one layer at a time into one reusable buffer (the Session copies
// each into its arena before asking for the next): N(0, 1/in_features) matrices, small biases,
// norm weights near 1 (with the config's offset), N(0, 1) sink logits.
struct RandomWeights {
  const Plan* plan = nullptr;
  std::mt19937_64 rng;
  std::vector<float> buffer;

  static Result<LayerWeights> next(void* ctx, uint32_t layer) {
    RandomWeights& r = *static_cast<RandomWeights*>(ctx);
    const Plan& p = *r.plan;
    const Config& c = p.config;
    const LayerTensorShapes shapes = layer_tensor_shapes(p, layer);
    auto stddev = [&](const LayerTensorShape& t) {
      switch (t.kind) {
        case LayerTensorKind::kMatrix: return 1.0f / std::sqrt(float(t.cols));
        case LayerTensorKind::kBias: return 0.02f;
        case LayerTensorKind::kNorm:
        case LayerTensorKind::kScale: return 0.1f;
        case LayerTensorKind::kSinks: return 1.0f;
      }
      return 0.0f;
    };
    const float norm_mean = 1.0f - c.qk_norm_offset;
    size_t total = 0;
    for (uint32_t i = 0; i < shapes.count; ++i) total += size_t{shapes.tensor[i].rows} * shapes.tensor[i].cols;
    r.buffer.resize(total);
    LayerWeights lw;
    std::normal_distribution<float> normal(0.0f, 1.0f);
    size_t at = 0;
    for (uint32_t i = 0; i < shapes.count; ++i) {
      const LayerTensorShape& t = shapes.tensor[i];
      const size_t n = size_t{t.rows} * t.cols;
      const float mean = t.kind == LayerTensorKind::kNorm ? norm_mean : t.kind == LayerTensorKind::kScale ? 1.0f : 0.0f;
      for (size_t j = 0; j < n; ++j) r.buffer[at + j] = mean + stddev(t) * normal(r.rng);
      lw.*t.member = TensorRef{r.buffer.data() + at, DType::kF32, t.rows, t.cols};
      at += n;
    }
    return lw;
  }
};

class PySession {
 public:
  PySession(const ConfigSource& source, nb::handle weights, std::optional<uint64_t> seed,
            std::optional<std::string> kv_dtype, int64_t threads, int64_t max_tokens,
            std::optional<std::string> weight_dtype, const std::string& backend,
            std::optional<std::string> kv_rotation) {
    plan_ = make_checked_plan(load_config(source), kv_dtype, threads, max_tokens, weight_dtype, kv_rotation);
    const BackendKind kind = parse_backend(backend);
    if (weights.is_none() == !seed.has_value()) {
      HEADWAY_PY_INVALID("give exactly one of weights= (a list of %u per-layer dicts) or seed= (random weights)",
                         plan_.config.n_layers);
    }
    memory_ = aligned_bytes(plan_.arena_bytes);
    check(arena_.bind(plan_, memory_.get(), plan_.arena_bytes));
    check(pool_.create(plan_.options.threads));
    LayerOptions options;
    options.pool = &pool_;
    options.backend = kind;
    if (kind == BackendKind::kGpu) {
      gpu_ = std::make_unique<GpuContext>();
      check(gpu_->create());
      options.gpu = gpu_.get();
    }
    session_ = std::make_unique<Session>();
    if (seed) {
      RandomWeights random;
      random.plan = &plan_;
      random.rng.seed(*seed);
      check(session_->init(arena_, &RandomWeights::next, &random, options));
      return;
    }
    // The caller's arrays, viewed in place; init copies them into the arena (weights_in_arena).
    std::vector<LayerWeights> layers;
    std::vector<Tensor> keep;
    const nb::list list = nb::cast<nb::list>(weights);
    if (list.size() != plan_.config.n_layers) {
      HEADWAY_PY_INVALID("weights: %zu layer dicts, the config has %u layers", list.size(), plan_.config.n_layers);
    }
    keep.reserve(list.size() * 11);
    for (size_t l = 0; l < list.size(); ++l) {
      LayerWeights lw;
      nb::dict d;
      if (!nb::try_cast<nb::dict>(list[l], d)) HEADWAY_PY_INVALID("weights[%zu]: expected a dict of arrays", l);
      for (auto [key_obj, value] : d) {
        const std::string key = nb::cast<std::string>(key_obj);
        static const struct {
          const char* name;
          TensorRef LayerWeights::*field;
          size_t ndim;
        } kFields[] = {{"wq", &LayerWeights::wq, 2},         {"wk", &LayerWeights::wk, 2},
                       {"wv", &LayerWeights::wv, 2},         {"wo", &LayerWeights::wo, 2},
                       {"bq", &LayerWeights::bq, 1},         {"bk", &LayerWeights::bk, 1},
                       {"bv", &LayerWeights::bv, 1},         {"bo", &LayerWeights::bo, 1},
                       {"q_norm", &LayerWeights::q_norm, 1}, {"k_norm", &LayerWeights::k_norm, 1},
                       {"sinks", &LayerWeights::sinks, 1}};
        bool found = false;
        for (const auto& f : kFields) {
          if (key != f.name) continue;
          const std::string name = "weights[" + std::to_string(l) + "]['" + key + "']";
          keep.push_back(view(value, name.c_str(), f.ndim, Accept::kF32OrF16, f.ndim == 2 ? "[out, in]" : "[n]"));
          const Tensor& t = keep.back();
          lw.*f.field = TensorRef{t.data, t.dtype, f.ndim == 2 ? t.shape[0] : 1, f.ndim == 2 ? t.shape[1] : t.shape[0]};
          found = true;
        }
        if (!found) {
          HEADWAY_PY_INVALID("weights[%zu]: unknown key '%s' (wq, wk, wv, wo, bq, bk, bv, bo, q_norm, k_norm, sinks)",
                             l, key.c_str());
        }
      }
      layers.push_back(lw);
    }
    check(session_->init(arena_, layers.data(), static_cast<uint32_t>(layers.size()), options));
  }

  OutArray prefill(nb::handle x_obj) {
    const Tensor x = rows_of(x_obj, "x", plan_.config.d_model, "[t, d_model]");
    float* y = nullptr;
    OutArray out = new_f32({x.shape[0], plan_.config.d_model}, &y);
    Status s;
    {
      nb::gil_scoped_release release;
      std::lock_guard<std::mutex> lock(mutex_);
      s = session_->prefill(static_cast<const float*>(x.data), x.shape[0], y);
    }
    check(s);
    return out;
  }

  OutArray decode(nb::handle x_obj) {
    Tensor x = view(x_obj, "x", 1, Accept::kF32, "[d_model]");
    if (x.shape[0] != plan_.config.d_model) {
      HEADWAY_PY_INVALID("x: %u values, expected d_model %u (one token)", x.shape[0], plan_.config.d_model);
    }
    float* y = nullptr;
    OutArray out = new_f32({plan_.config.d_model}, &y);
    Status s;
    {
      nb::gil_scoped_release release;
      std::lock_guard<std::mutex> lock(mutex_);
      s = session_->decode(static_cast<const float*>(x.data), y);
    }
    check(s);
    return out;
  }

  OutArray encode(nb::handle x_obj, const std::vector<int64_t>& seq_lens) {
    const Tensor x = rows_of(x_obj, "x", plan_.config.d_model, "[sum(seq_lens), d_model]");
    std::vector<uint32_t> cu{0};
    for (size_t i = 0; i < seq_lens.size(); ++i) {
      const uint32_t n = to_u32(seq_lens[i], "seq_lens item");
      if (uint64_t{cu.back()} + n > UINT32_MAX) HEADWAY_PY_INVALID("seq_lens: the lengths sum past %u", UINT32_MAX);
      cu.push_back(cu.back() + n);
    }
    if (cu.back() != x.shape[0]) {
      HEADWAY_PY_INVALID("seq_lens sum to %u, x has %u rows", cu.back(), x.shape[0]);
    }
    float* y = nullptr;
    OutArray out = new_f32({x.shape[0], plan_.config.d_model}, &y);
    Status s;
    {
      nb::gil_scoped_release release;
      std::lock_guard<std::mutex> lock(mutex_);
      s = session_->encode(static_cast<const float*>(x.data), cu.data(), static_cast<uint32_t>(cu.size() - 1), y);
    }
    check(s);
    return out;
  }

  void reset() {
    nb::gil_scoped_release release;
    std::lock_guard<std::mutex> lock(mutex_);
    session_->reset();
  }
  uint32_t position() const { return session_->position(); }
  uint32_t n_layers() const { return session_->n_layers(); }
  nb::object plan() const { return plan_dict(plan_); }

 private:
  Plan plan_{};
  AlignedBytes memory_;  // the arena's buffer: plan.arena_bytes
  Arena arena_;
  ThreadPool pool_;
  std::unique_ptr<GpuContext> gpu_;   // declared before session_: outlives its layers
  std::unique_ptr<Session> session_;  // ~130 layer objects: on the heap, made once
  std::mutex mutex_;
};

}  // namespace

void bind_objects(nb::module_& m) {
  nb::class_<PyKvCache>(m, "KvCache", "One layer's KV cache, planned from a config source, over memory it owns.")
      .def(
          "__init__",
          [](PyKvCache* self, std::optional<std::string> preset, std::optional<std::string> config,
             std::optional<std::string> gguf, std::optional<std::string> spec, std::optional<std::string> kv_dtype,
             int64_t threads, int64_t max_tokens, int64_t layer, const std::string& backend,
             std::optional<std::string> kv_rotation) {
            new (self)
                PyKvCache({preset, config, gguf, spec}, kv_dtype, threads, max_tokens, layer, backend, kv_rotation);
          },
          nb::kw_only(), nb::arg("preset") = nb::none(), nb::arg("config") = nb::none(), nb::arg("gguf") = nb::none(),
          nb::arg("spec") = nb::none(), nb::arg("kv_dtype") = nb::none(), nb::arg("threads") = 1,
          nb::arg("max_tokens") = 0, nb::arg("layer") = 0, nb::arg("backend") = "cpu",
          nb::arg("kv_rotation") = nb::none())
      .def("append", &PyKvCache::append, nb::arg("k"), nb::arg("v"))
      .def("rotate_queries", &PyKvCache::rotate_queries, nb::arg("q"))
      .def("attend", &PyKvCache::attend, nb::arg("q"), nb::kw_only(), nb::arg("sinks") = nb::none())
      .def("reset", &PyKvCache::reset, nb::arg("start") = 0)
      .def("truncate", &PyKvCache::truncate, nb::arg("tokens"),
           "Keeps the first `tokens` appended since the reset (a sliding-window ring: while it still holds what a "
           "later query sees); raises OutOfRange past size, FailedPrecondition where the ring refuses.")
      .def_prop_ro("size", &PyKvCache::size)
      .def_prop_ro("position", &PyKvCache::position)
      .def_prop_ro("start_position", &PyKvCache::start_position)
      .def_prop_ro("rows", &PyKvCache::rows)
      .def_prop_ro("plan", &PyKvCache::plan);

  nb::class_<PySession>(m, "Session", "A stack of attention blocks over one arena it owns.")
      .def(
          "__init__",
          [](PySession* self, std::optional<std::string> preset, std::optional<std::string> config,
             std::optional<std::string> gguf, std::optional<std::string> spec, nb::handle weights,
             std::optional<uint64_t> seed, std::optional<std::string> kv_dtype, int64_t threads, int64_t max_tokens,
             std::optional<std::string> weight_dtype, const std::string& backend,
             std::optional<std::string> kv_rotation) {
            new (self) PySession({preset, config, gguf, spec}, weights, seed, kv_dtype, threads, max_tokens,
                                 weight_dtype, backend, kv_rotation);
          },
          nb::kw_only(), nb::arg("preset") = nb::none(), nb::arg("config") = nb::none(), nb::arg("gguf") = nb::none(),
          nb::arg("spec") = nb::none(), nb::arg("weights") = nb::none(), nb::arg("seed") = nb::none(),
          nb::arg("kv_dtype") = nb::none(), nb::arg("threads") = 1, nb::arg("max_tokens") = 0,
          nb::arg("weight_dtype") = nb::none(), nb::arg("backend") = "cpu", nb::arg("kv_rotation") = nb::none())
      .def("prefill", &PySession::prefill, nb::arg("x"))
      .def("decode", &PySession::decode, nb::arg("x"))
      .def("encode", &PySession::encode, nb::arg("x"), nb::arg("seq_lens"))
      .def("reset", &PySession::reset)
      .def_prop_ro("position", &PySession::position)
      .def_prop_ro("n_layers", &PySession::n_layers)
      .def_prop_ro("plan", &PySession::plan);
}

}  // namespace headway::python
