// headway.Tokenizer and headway.Model: a model file's tokenizer, and a whole decoder from a GGUF
// over one arena it owns, with the Generator's loop behind Model.generate (the Python generator
// itself is python/headway/__init__.py's: it calls _start once and _next per piece). The GIL is
// released while the model or the tokenizer runs; a mutex keeps one call at a time on the model.
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <cstring>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "headway/arena.hpp"
#include "headway/tools/chat_template.hpp"
#include "headway/tools/generator.hpp"
#include "headway/model.hpp"
#include "headway/tools/model_file.hpp"
#include "headway/sampler.hpp"
#include "headway/thread_pool.hpp"
#include "headway/tools/tokenizer.hpp"
#include "python/src/common.hpp"

namespace headway::python {
namespace {

// Rows of one prefill chunk: logits() needs every row's logits, [chunk, vocab] f32 in the arena
// (49152 × 128 × 4 = 24 MiB for SmolLM2), where generate needs only the last.
constexpr uint32_t kChunk = 128;

Tokenizer load_tokenizer(const std::optional<std::string>& gguf, const std::optional<std::string>& tokenizer_json,
                         const std::optional<std::string>& model_dir) {
  const int given = int{gguf.has_value()} + int{tokenizer_json.has_value()} + int{model_dir.has_value()};
  if (given != 1) HEADWAY_PY_INVALID("give exactly one of gguf=, tokenizer_json= and model_dir= (got %d)", given);
  Result<Tokenizer> t = gguf             ? Tokenizer::from_gguf(gguf->c_str())
                        : tokenizer_json ? Tokenizer::from_tokenizer_json(tokenizer_json->c_str())
                                         : Tokenizer::from_model_dir(model_dir->c_str());
  check(t.status());
  return std::move(t.value());
}

// Python ints as token ids: one outside int32 gets the library's wording for an id outside the
// vocabulary (the library checks the rest).
std::vector<int32_t> to_ids(const std::vector<int64_t>& ids, const char* who, uint32_t vocab) {
  std::vector<int32_t> out(ids.size());
  for (size_t i = 0; i < ids.size(); ++i) {
    if (ids[i] < INT32_MIN || ids[i] > INT32_MAX) {
      HEADWAY_PY_INVALID("%s: token id %lld at position %zu is outside the vocabulary (0..%u)", who,
                         static_cast<long long>(ids[i]), i, vocab - 1);
    }
    out[i] = static_cast<int32_t>(ids[i]);
  }
  return out;
}

class PyTokenizer {
 public:
  PyTokenizer(const std::optional<std::string>& gguf, const std::optional<std::string>& tokenizer_json,
              const std::optional<std::string>& model_dir)
      : tokenizer_(load_tokenizer(gguf, tokenizer_json, model_dir)) {}

  std::vector<int32_t> encode(const std::string& text, bool add_special) {
    std::vector<int32_t> ids;
    EncodeOptions options;
    options.add_special = add_special;
    Status s;
    {
      nb::gil_scoped_release release;
      std::lock_guard<std::mutex> lock(mutex_);
      s = tokenizer_.encode(text, &ids, options);
    }
    check(s);
    return ids;
  }

  nb::str decode(const std::vector<int64_t>& ids_in, bool skip_special) {
    const std::vector<int32_t> ids = to_ids(ids_in, "decode", tokenizer_.vocab_size());
    std::string text;
    DecodeOptions options;
    options.skip_special = skip_special;
    Status s;
    {
      nb::gil_scoped_release release;
      std::lock_guard<std::mutex> lock(mutex_);
      s = tokenizer_.decode(ids.data(), ids.size(), &text, options);
    }
    check(s);
    return nb::str(text.data(), text.size());
  }

  uint32_t vocab_size() const { return tokenizer_.vocab_size(); }
  std::optional<int32_t> id_or_none(int32_t id) const {
    return id == Tokenizer::kNone ? std::nullopt : std::optional<int32_t>(id);
  }
  std::optional<int32_t> bos_id() const { return id_or_none(tokenizer_.bos_id()); }
  std::optional<int32_t> eos_id() const { return id_or_none(tokenizer_.eos_id()); }

 private:
  Tokenizer tokenizer_;
  std::mutex mutex_;  // encode/decode share the tokenizer's scratch
};

class PyModel {
 public:
  PyModel(const std::string& gguf, const std::string& kv_dtype, const std::optional<std::string>& weight_dtype,
          int64_t threads, std::optional<int64_t> ctx, const std::string& kv_rotation) {
    // The caller's values first: a bad one fails before the file is read.
    const DType kv = parse_dtype(kv_dtype, "kv_dtype", true);
    const KvRotation rotation = parse_kv_rotation(kv_rotation);
    PlanOptions options;
    options.threads = to_u32(threads, "threads", 1);
    // None: the weights stay in the file in its own types (a GGUF's blocks); else converted into
    // the arena.
    options.weights_in_arena = weight_dtype.has_value();
    if (weight_dtype) options.weight_dtype = parse_dtype(*weight_dtype, "weight_dtype", false);
    ModelFile& file = file_;
    check(file.open(gguf.c_str()));
    Result<Config> config = file.config();
    check(config.status());
    Result<Tokenizer> tokenizer = Tokenizer::from_gguf(gguf.c_str());
    check(tokenizer.status());
    tokenizer_ = std::move(tokenizer.value());
    const Result<ChatTemplate> chat = ChatTemplate::of(tokenizer_, gguf.c_str());
    if (chat.ok()) chat_ = chat.value();
    else chat_error_ = chat.status();

    Config c = config.value();
    if (ctx) {
      const uint32_t n = to_u32(*ctx, "ctx", 1);
      if (n > c.max_seq) HEADWAY_PY_INVALID("ctx %u is longer than the model's context of %u", n, c.max_seq);
      c.max_seq = n;
    }
    c.kv_dtype = kv;
    c.kv_rotation = rotation;
    options.max_tokens = c.max_seq < kChunk ? c.max_seq : kChunk;
    options.all_logits = true;
    Result<Plan> plan = make_plan(c, options);
    check(plan.status());
    plan_ = plan.value();
    memory_ = aligned_bytes(plan_.arena_bytes);
    check(arena_.bind(plan_, memory_.get(), plan_.arena_bytes));
    check(pool_.create(options.threads));
    LayerOptions layer_options;
    layer_options.pool = &pool_;
    model_ = std::make_unique<Model>();
    Status s;
    {
      nb::gil_scoped_release release;
      s = model_->init(arena_, file.source(), layer_options);
      if (s.ok()) s = generator_.init(model_.get(), arena_, &tokenizer_);
    }
    check(s);
    piece_.resize(generator_.piece_bytes());
  }

  // A fresh sequence: every position's next-token logits [T, vocab], as `headway logits`.
  OutArray logits(const std::vector<int64_t>& ids_in) {
    const std::vector<int32_t> ids = to_ids(ids_in, "model", vocab_size());
    if (ids.empty()) HEADWAY_PY_INVALID("logits: ids is empty");
    float* out = nullptr;
    OutArray array = new_f32({ids.size(), vocab_size()}, &out);
    Status s;
    {
      nb::gil_scoped_release release;
      std::lock_guard<std::mutex> lock(mutex_);
      ++generation_;
      model_->reset();
      s = model_->prefill(ids.data(), static_cast<uint32_t>(ids.size()), out);
    }
    check(s);
    return array;
  }

  // Starts a generation from a fresh sequence; returns its ticket for _next.
  uint64_t start(const std::optional<std::string>& prompt, const std::optional<std::vector<int64_t>>& ids_in,
                 int64_t max_tokens, float temperature, int64_t top_k, float top_p, float min_p, float repeat_penalty,
                 int64_t seed, bool chat) {
    if (prompt.has_value() == ids_in.has_value()) HEADWAY_PY_INVALID("give exactly one of prompt= and ids=");
    if (chat && !prompt) HEADWAY_PY_INVALID("chat=True wraps prompt= in the chat template: give prompt=");
    if (seed < 0) HEADWAY_PY_INVALID("seed %lld is negative", static_cast<long long>(seed));
    SamplerParams params;
    params.temperature = temperature;
    params.top_k = to_u32(top_k, "top_k");
    params.top_p = top_p;
    params.min_p = min_p;
    params.repetition_penalty = repeat_penalty;
    params.seed = static_cast<uint64_t>(seed);
    const uint32_t budget = to_u32(max_tokens, "max_tokens");
    std::vector<int32_t> ids;
    if (ids_in) {
      ids = to_ids(*ids_in, "model", vocab_size());
    } else {
      if (chat) {
        // As apply_chat_template tokenizes the rendered prompt: no BOS added.
        if (!chat_) raise_status(chat_error_);
        std::string text;
        check(chat_->render({{"user", *prompt}}, &text));
        check(encode(text, &ids, false));
      } else {
        check(encode(*prompt, &ids, true));
      }
    }
    if (ids.empty()) HEADWAY_PY_INVALID("the prompt has no tokens");
    Status s;
    uint64_t ticket = 0;
    {
      nb::gil_scoped_release release;
      std::lock_guard<std::mutex> lock(mutex_);
      ticket = ++generation_;
      model_->reset();
      s = generator_.start(ids.data(), ids.size(), budget, params);
      done_ = !s.ok();
    }
    check(s);
    return ticket;
  }

  // The next piece of text (possibly empty while a character is incomplete), or None when the
  // generation has ended.
  nb::object next(uint64_t ticket) {
    std::string piece;
    Status s;
    bool ended = false;
    {
      nb::gil_scoped_release release;
      std::lock_guard<std::mutex> lock(mutex_);
      if (ticket != generation_) {
        s = Status::error(Code::kFailedPrecondition,
                          "this generate() was overtaken: a later generate(), logits() or reset() restarted the model");
      } else if (done_) {
        ended = true;
      } else {
        size_t len = 0;
        bool done = false;
        s = generator_.next(piece_.data(), piece_.size(), &len, &done);
        done_ = done || !s.ok();
        piece.assign(piece_.data(), len);
      }
    }
    check(s);
    if (ended) return nb::none();
    return nb::steal(PyUnicode_DecodeUTF8(piece.data(), static_cast<Py_ssize_t>(piece.size()), "replace"));
  }

  std::vector<int32_t> tokenize(const std::string& text) {
    std::vector<int32_t> ids;
    Status s;
    {
      nb::gil_scoped_release release;
      s = encode(text, &ids);
    }
    check(s);
    return ids;
  }

  nb::str detokenize(const std::vector<int64_t>& ids_in) {
    const std::vector<int32_t> ids = to_ids(ids_in, "detokenize", tokenizer_.vocab_size());
    std::string text;
    Status s;
    {
      nb::gil_scoped_release release;
      std::lock_guard<std::mutex> lock(tokenizer_mutex_);
      s = tokenizer_.decode(ids.data(), ids.size(), &text);
    }
    check(s);
    return nb::str(text.data(), text.size());
  }

  void reset() {
    nb::gil_scoped_release release;
    std::lock_guard<std::mutex> lock(mutex_);
    ++generation_;
    done_ = true;
    model_->reset();
  }

  uint32_t position() {
    std::lock_guard<std::mutex> lock(mutex_);
    return model_->position();
  }
  uint32_t vocab_size() const { return plan_.config.model.vocab_size; }
  uint32_t ctx() const { return plan_.config.max_seq; }

 private:
  // The file's tokenizer as the CLI uses it: special tokens parsed, BOS where the file says.
  Status encode(const std::string& text, std::vector<int32_t>* ids, bool add_special = true) {
    std::lock_guard<std::mutex> lock(tokenizer_mutex_);
    EncodeOptions options;
    options.add_special = add_special;
    return tokenizer_.encode(text, ids, options);
  }

  ModelFile file_;  // the mapped file: the weights the model borrows live there
  Plan plan_{};
  AlignedBytes memory_;  // the arena's buffer: plan.arena_bytes
  Arena arena_;
  ThreadPool pool_;
  Tokenizer tokenizer_;
  std::optional<ChatTemplate> chat_;
  Status chat_error_;             // why chat=True cannot run, when chat_ is empty
  std::unique_ptr<Model> model_;  // ~130 layer objects: on the heap, made once
  Generator generator_;           // over model_, arena_ and tokenizer_
  std::vector<char> piece_;       // generator_.piece_bytes()
  uint64_t generation_ = 0;       // the ticket of the latest start (logits and reset move it on)
  bool done_ = true;              // the latest generation has ended
  std::mutex mutex_;              // the model, the generator and the fields above
  std::mutex tokenizer_mutex_;    // the tokenizer's scratch
};

}  // namespace

void bind_model(nb::module_& m) {
  nb::class_<PyTokenizer>(m, "Tokenizer", "A model file's tokenizer: Hugging Face's tokens for the same file.")
      .def(nb::init<const std::optional<std::string>&, const std::optional<std::string>&,
                    const std::optional<std::string>&>(),
           nb::kw_only(), nb::arg("gguf") = nb::none(), nb::arg("tokenizer_json") = nb::none(),
           nb::arg("model_dir") = nb::none())
      .def("encode", &PyTokenizer::encode, nb::arg("text"), nb::arg("add_special") = true)
      .def("decode", &PyTokenizer::decode, nb::arg("ids"), nb::arg("skip_special") = true)
      .def_prop_ro("vocab_size", &PyTokenizer::vocab_size)
      .def_prop_ro("bos_id", &PyTokenizer::bos_id)
      .def_prop_ro("eos_id", &PyTokenizer::eos_id);

  nb::class_<PyModel>(m, "_Model", "A whole decoder from a GGUF file over one arena it owns (headway.Model).")
      .def(nb::init<const std::string&, const std::string&, const std::optional<std::string>&, int64_t,
                    std::optional<int64_t>, const std::string&>(),
           nb::kw_only(), nb::arg("gguf"), nb::arg("kv_dtype") = "f16", nb::arg("weight_dtype") = nb::none(),
           nb::arg("threads") = 1, nb::arg("ctx") = nb::none(), nb::arg("kv_rotation") = "none")
      .def("logits", &PyModel::logits, nb::arg("ids"))
      .def("_start", &PyModel::start, nb::arg("prompt").none(), nb::arg("ids").none(), nb::arg("max_tokens"),
           nb::arg("temperature"), nb::arg("top_k"), nb::arg("top_p"), nb::arg("min_p"), nb::arg("repeat_penalty"),
           nb::arg("seed"), nb::arg("chat"))
      .def("_next", &PyModel::next, nb::arg("ticket"))
      .def("tokenize", &PyModel::tokenize, nb::arg("text"))
      .def("detokenize", &PyModel::detokenize, nb::arg("ids"))
      .def("reset", &PyModel::reset)
      .def_prop_ro("position", &PyModel::position)
      .def_prop_ro("vocab_size", &PyModel::vocab_size)
      .def_prop_ro("ctx", &PyModel::ctx);
}

}  // namespace headway::python
