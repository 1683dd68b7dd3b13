// Sharded safetensors checkpoints (model.safetensors.index.json and the shards its weight_map
// names): a small model written as one file and as shards reads the same through WeightFile and
// ModelFile, the BERT prefix is found across shards, and a malformed index, a missing shard and a
// tensor its shard lacks are errors that name the file and the tensor.
#include <doctest/doctest.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "headway/config.hpp"
#include "headway/tools/model_file.hpp"
#include "headway/tools/model_files.hpp"
#include "headway/model_tensors.hpp"
#include "runtime/formats/safetensors.hpp"
#include "runtime/formats/weights_loader.hpp"
#include "tests/support/temp_dir.hpp"

namespace headway::formats {
namespace {

using test::TempDir;

struct Tensor {
  std::string name;
  std::vector<uint64_t> shape;
  std::vector<float> values;
};

// Distinct values per tensor, so that a view into the wrong tensor or shard shows.
Tensor tensor(const std::string& name, std::vector<uint64_t> shape, float seed) {
  uint64_t n = 1;
  for (uint64_t d : shape) n *= d;
  Tensor t{name, shape, std::vector<float>(n)};
  for (uint64_t i = 0; i < n; ++i) t.values[i] = seed + 0.001f * static_cast<float>(i % 997);
  return t;
}

void write_text(const std::string& path, const std::string& text) {
  std::ofstream f(path, std::ios::binary);
  f << text;
}

// One safetensors file of `ts` in F32: u64 header length, the header, the data back to back.
void write_safetensors(const std::string& path, const std::vector<Tensor>& ts) {
  std::string h = "{";
  uint64_t offset = 0;
  for (const Tensor& t : ts) {
    h += (h.size() > 1 ? ",\"" : "\"") + t.name + "\":{\"dtype\":\"F32\",\"shape\":[";
    for (size_t i = 0; i < t.shape.size(); ++i) h += (i ? "," : "") + std::to_string(t.shape[i]);
    const uint64_t end = offset + t.values.size() * 4;
    h += "],\"data_offsets\":[" + std::to_string(offset) + "," + std::to_string(end) + "]}";
    offset = end;
  }
  h += "}";
  while (h.size() % 8) h += ' ';
  std::ofstream f(path, std::ios::binary);
  for (int i = 0; i < 8; ++i) f.put(static_cast<char>(uint64_t{h.size()} >> (8 * i)));
  f << h;
  for (const Tensor& t : ts)
    f.write(reinterpret_cast<const char*>(t.values.data()), std::streamsize(t.values.size() * 4));
}

// `ts` as `n` shards named as save_pretrained names them, tensor i in shard i % n, and their
// index; returns the index's path.
std::string write_shards(const TempDir& dir, const std::vector<Tensor>& ts, size_t n) {
  std::vector<std::vector<Tensor>> shards(n);
  std::string map;
  for (size_t i = 0; i < ts.size(); ++i) {
    char file[64];
    std::snprintf(file, sizeof(file), "model-%05zu-of-%05zu.safetensors", i % n + 1, n);
    shards[i % n].push_back(ts[i]);
    map += (map.empty() ? "\"" : ",\"") + ts[i].name + "\":\"" + file + "\"";
  }
  for (size_t s = 0; s < n; ++s) {
    char file[64];
    std::snprintf(file, sizeof(file), "model-%05zu-of-%05zu.safetensors", s + 1, n);
    write_safetensors(dir / file, shards[s]);
  }
  write_text(dir / "model.safetensors.index.json", "{\"metadata\":{\"total_size\":0},\"weight_map\":{" + map + "}}");
  return dir / "model.safetensors.index.json";
}

constexpr uint32_t kVocab = 40, kModel = 16, kFfn = 24, kLayers = 2;

// A Llama of kLayers layers: config.json's text and every tensor the model reads.
std::string llama_json() {
  return "{\"model_type\":\"llama\",\"hidden_size\":16,\"num_attention_heads\":2,\"num_key_value_heads\":1,"
         "\"num_hidden_layers\":2,\"max_position_embeddings\":32,\"vocab_size\":40,\"intermediate_size\":24,"
         "\"hidden_act\":\"silu\",\"rms_norm_eps\":1e-6,\"tie_word_embeddings\":false}";
}

std::vector<Tensor> llama_tensors() {
  std::vector<Tensor> ts;
  float seed = 1.0f;
  auto add = [&](const std::string& name, std::vector<uint64_t> shape) { ts.push_back(tensor(name, shape, seed++)); };
  add("model.embed_tokens.weight", {kVocab, kModel});
  add("model.norm.weight", {kModel});
  add("lm_head.weight", {kVocab, kModel});
  for (uint32_t l = 0; l < kLayers; ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".";
    add(p + "input_layernorm.weight", {kModel});
    add(p + "post_attention_layernorm.weight", {kModel});
    add(p + "self_attn.q_proj.weight", {kModel, kModel});
    add(p + "self_attn.k_proj.weight", {kModel / 2, kModel});
    add(p + "self_attn.v_proj.weight", {kModel / 2, kModel});
    add(p + "self_attn.o_proj.weight", {kModel, kModel});
    add(p + "mlp.gate_proj.weight", {kFfn, kModel});
    add(p + "mlp.up_proj.weight", {kFfn, kModel});
    add(p + "mlp.down_proj.weight", {kModel, kFfn});
  }
  return ts;
}

bool same(const TensorRef& a, const TensorRef& b) {
  return a.dtype == b.dtype && a.rows == b.rows && a.cols == b.cols && a.bytes() == b.bytes() &&
         (a.bytes() == 0 || std::memcmp(a.data, b.data, a.bytes()) == 0);
}

bool contains(const Status& s, const char* part) { return std::strstr(s.message(), part) != nullptr; }
#define CHECK_HAS(status, part) CHECK_MESSAGE(contains(status, part), std::string((status).message()))

TEST_CASE("sharded safetensors: every tensor reads from its shard as from the one file") {
  TempDir one("shards_one"), many("shards_many");
  const std::vector<Tensor> ts = llama_tensors();
  write_safetensors(one / "model.safetensors", ts);
  const std::string index = write_shards(many, ts, 3);
  WeightFile a, b;
  REQUIRE(a.open((one / "model.safetensors").c_str()).ok());
  const Status opened = b.open(index.c_str());
  REQUIRE_MESSAGE(opened.ok(), opened.message());
  CHECK(a.shard_count() == 1);
  CHECK(b.shard_count() == 3);
  CHECK(b.format() == WeightFormat::kSafetensors);
  CHECK(b.naming() == Naming::kHfDecoder);
  for (const Tensor& t : ts) {
    INFO(t.name);
    CHECK(b.has(t.name.c_str()));
    const Result<TensorRef> x = a.find(t.name.c_str()), y = b.find(t.name.c_str());
    REQUIRE(x.ok());
    REQUIRE(y.ok());
    CHECK(same(x.value(), y.value()));
  }
  CHECK_FALSE(b.has("model.layers.9.mlp.up_proj.weight"));
  const Result<TensorRef> absent = b.find("model.layers.9.mlp.up_proj.weight");
  REQUIRE_FALSE(absent.ok());
  CHECK(absent.status().code() == Code::kNotFound);
  CHECK_HAS(absent.status(), "model.safetensors.index.json: no tensor 'model.layers.9.mlp.up_proj.weight'");

  Result<Config> c = parse_hf_config(llama_json().c_str(), llama_json().size(), "config.json");
  REQUIRE(c.ok());
  for (uint32_t l = 0; l < kLayers; ++l) {
    const Result<LayerWeights> x = load_layer_weights(a, c.value(), l), y = load_layer_weights(b, c.value(), l);
    REQUIRE_MESSAGE(y.ok(), y.status().message());
    CHECK(same(x->wq, y->wq));
    CHECK(same(x->wk, y->wk));
    CHECK(same(x->wv, y->wv));
    CHECK(same(x->wo, y->wo));
  }
}

TEST_CASE("sharded safetensors: a model directory with only an index runs as with one file") {
  TempDir one("shards_one"), many("shards_many");
  const std::vector<Tensor> ts = llama_tensors();
  write_text(one / "config.json", llama_json());
  write_text(many / "config.json", llama_json());
  write_safetensors(one / "model.safetensors", ts);
  write_shards(many, ts, 4);
  ModelFile a, b, c;
  REQUIRE(a.open(std::string(one / "").c_str()).ok());
  const Status opened = b.open(std::string(many / "").c_str());
  REQUIRE_MESSAGE(opened.ok(), opened.message());
  // --config C --weights INDEX
  REQUIRE(c.open((many / "config.json").c_str(), (many / "model.safetensors.index.json").c_str()).ok());
  const Result<Config> ca = a.config(), cb = b.config();
  REQUIRE_MESSAGE(cb.ok(), cb.status().message());
  CHECK(cb->model.vocab_size == kVocab);
  CHECK(cb->model.intermediate_size == kFfn);
  const Result<ModelFile::WeightBytes> wa = a.weight_bytes(), wb = b.weight_bytes(), wc = c.weight_bytes();
  REQUIRE_MESSAGE(wb.ok(), wb.status().message());
  CHECK(wb->total == wa->total);
  CHECK(wb->per_token == wa->per_token);
  CHECK(wc->total == wa->total);
  // Every tensor of the model's table, as f32 rows, from each.
  const ModelWeightsSource sa = a.source(), sb = b.source();
  for (const ModelTensorInfo& info : kModelTensors) {
    if (!model_has_tensor(ca.value(), info.tensor)) continue;
    for (uint32_t l = 0; l < (info.per_layer ? kLayers : 1); ++l) {
      INFO(info.name << " layer " << l);
      const TensorShape shape = model_tensor_shape(ca.value(), info.tensor);
      std::vector<float> x(size_t{shape.rows} * shape.cols), y(x.size(), -1.0f);
      REQUIRE(sa.rows(sa.ctx, info.tensor, l, shape, 0, shape.rows, x.data()).ok());
      const Status s = sb.rows(sb.ctx, info.tensor, l, shape, 0, shape.rows, y.data());
      REQUIRE_MESSAGE(s.ok(), s.message());
      CHECK(x == y);
    }
  }
}

TEST_CASE("sharded safetensors: a BERT checkpoint's prefix is found across its shards") {
  TempDir many("shards_bert");
  std::vector<Tensor> ts;
  for (const char* part : {"query", "key", "value"}) {
    ts.push_back(tensor(std::string("bert.encoder.layer.0.attention.self.") + part + ".weight", {8, 8}, 2.0f));
  }
  ts.push_back(tensor("bert.embeddings.word_embeddings.weight", {10, 8}, 3.0f));
  WeightFile f;
  REQUIRE(f.open(write_shards(many, ts, 2).c_str()).ok());
  CHECK(f.naming() == Naming::kHfBert);
  CHECK(f.name_prefix() == "bert.");
}

TEST_CASE("sharded safetensors: a bad index, a missing shard and a tensor its shard lacks are errors") {
  TempDir dir("shards_bad");
  const std::vector<Tensor> ts = llama_tensors();
  const std::string index = write_shards(dir, ts, 2);
  WeightFile f;
  auto error_of = [&](const std::string& text) {
    write_text(index, text);
    const Status s = f.open(index.c_str());
    REQUIRE_FALSE(s.ok());
    return s;
  };
  CHECK_HAS(error_of("{\"weight_map\": {"), "model.safetensors.index.json is not valid JSON: ");
  CHECK_HAS(error_of("[1, 2]"), "model.safetensors.index.json: no weight_map object");
  CHECK_HAS(error_of("{\"metadata\": {}}"), "no weight_map object");
  CHECK_HAS(error_of("{\"weight_map\": [\"a\"]}"), "no weight_map object");
  CHECK_HAS(error_of("{\"weight_map\": {}}"), "weight_map names no tensor");
  CHECK_HAS(error_of("{\"weight_map\": {\"w\": 3}}"), "weight_map gives tensor 'w' a number, expected a shard's file");
  CHECK_HAS(error_of("{\"weight_map\": {\"w\": \"\"}}"), "gives tensor 'w' an empty name");
  CHECK_HAS(error_of("{\"weight_map\": {\"w\": \"/models/model.safetensors\"}}"), "gives tensor 'w' an absolute path");
  const Status missing = error_of("{\"weight_map\": {\"w\": \"model-00009-of-00009.safetensors\"}}");
  CHECK(missing.code() == Code::kNotFound);
  CHECK_HAS(missing, "model.safetensors.index.json: shard model-00009-of-00009.safetensors: cannot open ");
  const Status lacks = error_of("{\"weight_map\": {\"model.norm.weight\": \"model-00001-of-00002.safetensors\"}}");
  CHECK_HAS(lacks,
            "weight_map puts tensor 'model.norm.weight' in model-00001-of-00002.safetensors, which has no such tensor");
  write_text(dir / "model-00001-of-00002.safetensors", "not a safetensors file");
  const Status garbage = error_of("{\"weight_map\": {\"w\": \"model-00001-of-00002.safetensors\"}}");
  CHECK_HAS(garbage, "shard model-00001-of-00002.safetensors: ");
  CHECK_FALSE(f.has("w"));
  CHECK_FALSE(f.find("w").ok());

  // The library's model over such a directory: an error Status, never an abort.
  write_text(dir / "config.json", llama_json());
  ModelFile m;
  const Status s = m.open(std::string(dir / "").c_str());
  REQUIRE_FALSE(s.ok());
  CHECK_HAS(s, "model.safetensors.index.json: shard model-00001-of-00002.safetensors: ");
}

}  // namespace
}  // namespace headway::formats
