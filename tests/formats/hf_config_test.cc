// config.json parsing: every real family in tests/data/hf parses to its published attention
// numbers and passes validate(); every malformed file fails with the right code and a message
// that names the file, the key and the value.
#include <doctest/doctest.h>

#include <cstdio>
#include <cstring>
#include <string>

#include "headway/config.hpp"
#include "headway/tools/model_files.hpp"

namespace headway {
namespace {

std::string hf_path(const char* name) { return std::string(HEADWAY_TEST_DATA) + "/hf/" + name; }

// Loads a real config, requires success and a valid Config.
Config load_valid(const char* name) {
  const std::string path = hf_path(name);
  INFO(path);
  const Result<Config> r = load_hf_config(path.c_str());
  REQUIRE_MESSAGE(r.ok(), std::string(r.status().message()));
  const Status v = validate(*r);
  CHECK_MESSAGE(v.ok(), std::string(v.message()));
  return *r;
}

Status load_error(const char* name) {
  const std::string path = hf_path(name);
  const Result<Config> r = load_hf_config(path.c_str());
  REQUIRE_MESSAGE(!r.ok(), path);
  return r.status();
}

Status parse_error(const std::string& text) {
  const Result<Config> r = parse_hf_config(text.data(), text.size());
  REQUIRE_MESSAGE(!r.ok(), text);
  return r.status();
}

Config parse_ok(const std::string& text) {
  const Result<Config> r = parse_hf_config(text.data(), text.size());
  REQUIRE_MESSAGE(r.ok(), std::string(r.status().message()));
  return *r;
}

bool contains(const Status& s, const char* part) { return std::strstr(s.message(), part) != nullptr; }

#define CHECK_HAS(status, part) CHECK_MESSAGE(contains(status, part), std::string((status).message()))

// A minimal decoder config with `extra` spliced in (`extra` begins with a comma when non-empty).
std::string with(const std::string& extra) {
  return R"({"model_type": "llama", "hidden_size": 4096, "num_attention_heads": 32,
             "max_position_embeddings": 4096)" +
         extra + "}";
}

TEST_CASE("hf: Llama-2 7B is multi-head attention with head_dim 128") {
  const Config c = load_valid("llama-2-7b.json");
  CHECK(std::strcmp(c.name, "llama") == 0);
  CHECK(c.d_model == 4096);
  CHECK(c.n_heads == 32);
  CHECK(c.kv_heads() == 32);
  CHECK(c.head_dim == 0);
  CHECK(c.head_size() == 128);
  CHECK(c.max_seq == 4096);
  CHECK(c.n_layers == 32);
  CHECK(c.rope.style == RopeStyle::kNeox);
  CHECK(c.rope.theta == 10000.0f);  // no rope_theta: the default
  CHECK(c.rotary_dims() == 128);
  CHECK(c.window == 0);
  CHECK(c.causal);
  CHECK_FALSE(c.qkv_bias);
  CHECK_FALSE(c.o_bias);
  CHECK_FALSE(c.qk_norm);
}

TEST_CASE("hf: Llama-3 8B is GQA 32/8 with theta 500000") {
  const Config c = load_valid("llama-3-8b.json");
  CHECK(c.d_model == 4096);
  CHECK(c.n_heads == 32);
  CHECK(c.n_kv_heads == 8);
  CHECK(c.head_size() == 128);
  CHECK(c.max_seq == 8192);
  CHECK(c.rope.theta == 500000.0f);
  CHECK_FALSE(c.qkv_bias);
}

TEST_CASE("hf: Mistral 7B v0.1 keeps its 4096-key sliding window") {
  const Config c = load_valid("mistral-7b-v0.1.json");
  CHECK(std::strcmp(c.name, "mistral") == 0);
  CHECK(c.n_heads == 32);
  CHECK(c.n_kv_heads == 8);
  CHECK(c.max_seq == 32768);
  CHECK(c.window == 4096);
  CHECK(c.rope.style == RopeStyle::kNeox);
}

TEST_CASE("hf: Gemma 7B has head_dim 256 wider than d_model / heads") {
  const Config c = load_valid("gemma-7b.json");
  CHECK(c.d_model == 3072);
  CHECK(c.n_heads == 16);
  CHECK(c.kv_heads() == 16);
  CHECK(c.head_dim == 256);
  CHECK(c.max_seq == 8192);
  CHECK(c.n_layers == 28);
  CHECK(c.query_pre_attn_scalar == 0.0f);
  CHECK(c.softcap == 0.0f);
}

TEST_CASE("hf: Gemma 2 2B has softcap 50 and query_pre_attn_scalar 256 and a 4096 window") {
  const Config c = load_valid("gemma-2-2b.json");
  CHECK(std::strcmp(c.name, "gemma2") == 0);
  CHECK(c.d_model == 2304);
  CHECK(c.n_heads == 8);
  CHECK(c.n_kv_heads == 4);
  CHECK(c.head_dim == 256);
  CHECK(c.softcap == 50.0f);
  CHECK(c.query_pre_attn_scalar == 256.0f);
  CHECK(c.window == 4096);
  CHECK(c.max_seq == 8192);
  CHECK(c.n_layers == 26);
}

TEST_CASE("hf: Qwen2.5 0.5B switches its window off and biases q/k/v") {
  const Config c = load_valid("qwen2.5-0.5b.json");
  CHECK(c.d_model == 896);
  CHECK(c.n_heads == 14);
  CHECK(c.n_kv_heads == 2);
  CHECK(c.head_size() == 64);
  CHECK(c.window == 0);  // use_sliding_window: false
  CHECK(c.max_seq == 32768);
  CHECK(c.rope.theta == 1000000.0f);
  CHECK(c.qkv_bias);
  CHECK_FALSE(c.o_bias);
}

TEST_CASE("hf: Qwen3 0.6B has head_dim 128 over d_model 1024 and qk norm") {
  const Config c = load_valid("qwen3-0.6b.json");
  CHECK(c.d_model == 1024);
  CHECK(c.n_heads == 16);
  CHECK(c.n_kv_heads == 8);
  CHECK(c.head_dim == 128);
  CHECK(c.qk_norm);
  CHECK_FALSE(c.qkv_bias);
  CHECK(c.window == 0);  // sliding_window: null
  CHECK(c.max_seq == 40960);
  CHECK(c.rope.theta == 1000000.0f);  // written as the integer 1000000
}

TEST_CASE("hf: Phi-2 rotates 0.4 of its 80-dim heads") {
  const Config c = load_valid("phi-2.json");
  CHECK(c.d_model == 2560);
  CHECK(c.n_heads == 32);
  CHECK(c.head_size() == 80);
  CHECK(c.rope.style == RopeStyle::kNeox);
  CHECK(c.rope.rotary_dim == 32);
  CHECK(c.qkv_bias);
  CHECK(c.o_bias);
  CHECK(c.max_seq == 2048);
}

TEST_CASE("hf: Phi-3 mini 4k has 96-dim heads and a 2047 window") {
  const Config c = load_valid("phi-3-mini-4k.json");
  CHECK(c.d_model == 3072);
  CHECK(c.n_heads == 32);
  CHECK(c.head_size() == 96);
  CHECK(c.window == 2047);
  CHECK(c.max_seq == 4096);
  CHECK_FALSE(c.qkv_bias);
}

TEST_CASE("hf: Falcon 7B is multi-query: 71 heads of 64 share one kv head") {
  const Config c = load_valid("falcon-7b.json");
  CHECK(c.d_model == 4544);
  CHECK(c.n_heads == 71);
  CHECK(c.n_kv_heads == 1);
  CHECK(c.head_size() == 64);
  CHECK(c.max_seq == 2048);  // FalconConfig's default: the file has no context length
  CHECK(c.n_layers == 32);
  CHECK(c.rope.style == RopeStyle::kNeox);
  CHECK_FALSE(c.qkv_bias);
}

TEST_CASE("hf: BLOOM, MPT and Falcon-RW run ALiBi in place of RoPE") {
  const Config bloom = load_valid("bloom-560m.json");
  CHECK(bloom.alibi);
  CHECK(bloom.alibi_max_bias == 8.0f);
  CHECK_FALSE(bloom.alibi_times_scale);
  CHECK(bloom.rope.style == RopeStyle::kNone);
  CHECK(bloom.n_heads == 16);
  CHECK(bloom.head_size() == 64);
  CHECK(bloom.n_layers == 24);
  CHECK(bloom.max_seq == 2048);  // BLOOM's training length: the file has no context length
  CHECK(bloom.qkv_bias);
  CHECK(bloom.o_bias);

  const Config mpt = load_valid("mpt-7b.json");
  CHECK(mpt.alibi);
  CHECK(mpt.alibi_max_bias == 8.0f);
  CHECK(mpt.rope.style == RopeStyle::kNone);
  CHECK(mpt.n_heads == 32);
  CHECK(mpt.head_size() == 128);
  CHECK(mpt.max_seq == 2048);
  CHECK_FALSE(mpt.qkv_bias);  // no_bias
  CHECK_FALSE(mpt.o_bias);
  CHECK(mpt.scale == 0.0f);  // softmax_scale null: 1/sqrt(head_dim)

  const Config rw = load_valid("falcon-rw-1b.json");
  CHECK(rw.alibi);
  CHECK(rw.alibi_times_scale);  // FalconAttention scales the biased logits by 1/sqrt(head_dim)
  CHECK(rw.rope.style == RopeStyle::kNone);
  CHECK(rw.kv_heads() == 32);  // multi_query false
  CHECK(rw.head_size() == 64);
  CHECK(rw.qkv_bias);

  const Config f7 = load_valid("falcon-7b.json");  // "alibi": false
  CHECK_FALSE(f7.alibi);
  CHECK(f7.rope.style == RopeStyle::kNeox);
}

TEST_CASE("hf: BLOOM 176B's config.json names the hidden size n_embed") {
  const Config c = parse_ok(R"({"model_type": "bloom", "n_embed": 14336, "n_head": 112, "n_layer": 70})");
  CHECK(c.d_model == 14336);
  CHECK(c.head_size() == 128);
  CHECK(c.alibi);
}

TEST_CASE("hf: MPT's attn_config") {
  const std::string head = R"({"model_type": "mpt", "d_model": 256, "n_heads": 4, "n_layers": 2, "max_seq_len": 512)";
  SUBCASE("no attn_config: ALiBi with bias 8 (MptAttentionConfig's defaults)") {
    const Config c = parse_ok(head + "}");
    CHECK(c.alibi);
    CHECK(c.alibi_max_bias == 8.0f);
  }
  SUBCASE("alibi_bias_max and softmax_scale") {
    const Config c =
        parse_ok(head + R"(, "attn_config": {"alibi": true, "alibi_bias_max": 16, "softmax_scale": 0.25}})");
    CHECK(c.alibi_max_bias == 16.0f);
    CHECK(c.scale == 0.25f);
  }
  SUBCASE("alibi false: no position encoding at all (MPT's learned positions live in the embedding)") {
    const Config c = parse_ok(head + R"(, "attn_config": {"alibi": false}})");
    CHECK_FALSE(c.alibi);
    CHECK(c.rope.style == RopeStyle::kNone);
  }
  SUBCASE("no_bias false: biased projections") {
    const Config c = parse_ok(head + R"(, "no_bias": false})");
    CHECK(c.qkv_bias);
    CHECK(c.o_bias);
  }
  SUBCASE("what headway does not run is refused, naming the key") {
    CHECK_HAS(parse_error(head + R"(, "attn_config": {"clip_qkv": 6}})"), "attn_config.clip_qkv");
    CHECK_HAS(parse_error(head + R"(, "attn_config": {"qk_ln": true}})"), "attn_config.qk_ln");
    CHECK_HAS(parse_error(head + R"(, "attn_config": {"alibi_bias_max": -1}})"), "attn_config.alibi_bias_max");
    CHECK_HAS(parse_error(head + R"(, "attn_config": 3})"), "attn_config");
  }
}

TEST_CASE("hf: GPT-2 has learned positions and biased projections") {
  const Config c = load_valid("gpt2.json");
  CHECK(c.d_model == 768);
  CHECK(c.n_heads == 12);
  CHECK(c.head_size() == 64);
  CHECK(c.max_seq == 1024);
  CHECK(c.n_layers == 12);
  CHECK(c.rope.style == RopeStyle::kNone);
  CHECK(c.causal);
  CHECK(c.qkv_bias);
  CHECK(c.o_bias);
}

TEST_CASE("hf: BERT base and DistilBERT are bidirectional encoders") {
  const Config bert = load_valid("bert-base-uncased.json");
  CHECK(bert.d_model == 768);
  CHECK(bert.n_heads == 12);
  CHECK(bert.max_seq == 512);
  CHECK(bert.n_layers == 12);
  CHECK_FALSE(bert.causal);
  CHECK(bert.rope.style == RopeStyle::kNone);
  CHECK(bert.qkv_bias);

  const Config distil = load_valid("distilbert-base-uncased.json");
  CHECK(distil.d_model == 768);  // "dim", not the FFN's "hidden_dim"
  CHECK(distil.n_heads == 12);
  CHECK(distil.n_layers == 6);
  CHECK(distil.max_seq == 512);
  CHECK_FALSE(distil.causal);
}

TEST_CASE("hf: SmolLM2 135M and TinyLlama are small GQA Llamas") {
  const Config smol = load_valid("smollm2-135m.json");
  CHECK(smol.d_model == 576);
  CHECK(smol.n_heads == 9);
  CHECK(smol.n_kv_heads == 3);
  CHECK(smol.head_size() == 64);
  CHECK(smol.max_seq == 8192);
  CHECK(smol.n_layers == 30);
  CHECK(smol.rope.theta == 100000.0f);

  const Config tiny = load_valid("tinyllama-1.1b.json");
  CHECK(tiny.d_model == 2048);
  CHECK(tiny.n_heads == 32);
  CHECK(tiny.n_kv_heads == 4);
  CHECK(tiny.head_size() == 64);
  CHECK(tiny.max_seq == 2048);
  CHECK(tiny.n_layers == 22);
}

TEST_CASE("hf: GPT-J rotates 64 interleaved dims and Pythia a quarter of its heads") {
  const Config gptj = load_valid("gpt-j-6b.json");
  CHECK(gptj.d_model == 4096);
  CHECK(gptj.n_heads == 16);
  CHECK(gptj.head_size() == 256);
  CHECK(gptj.rope.style == RopeStyle::kGptj);
  CHECK(gptj.rope.rotary_dim == 64);
  CHECK(gptj.max_seq == 2048);
  CHECK(gptj.n_layers == 28);

  const Config pythia = load_valid("pythia-160m.json");
  CHECK(pythia.head_size() == 64);
  CHECK(pythia.rope.style == RopeStyle::kNeox);
  CHECK(pythia.rope.rotary_dim == 16);  // rotary_pct 0.25
  CHECK(pythia.rope.theta == 10000.0f);
  CHECK(pythia.qkv_bias);
}

// ModernBERT: bidirectional, every third layer global (RoPE base 160000), the others local with
// a symmetric window of |i − j| <= 64 (local_attention 128: window 65) at base 10000.
TEST_CASE("hf: ModernBERT's global/local layers, symmetric window and two RoPE bases") {
  const Config c = load_valid("modernbert-base.json");
  CHECK(c.d_model == 768);
  CHECK(c.n_heads == 12);
  CHECK(c.head_size() == 64);
  CHECK(c.n_layers == 22);
  CHECK(c.max_seq == 8192);
  CHECK_FALSE(c.causal);
  CHECK(c.window == 65);
  CHECK(c.window_symmetric);
  CHECK_FALSE(c.qkv_bias);
  CHECK_FALSE(c.o_bias);
  CHECK(c.rope.style == RopeStyle::kNeox);
  for (uint32_t i = 0; i < c.n_layers; ++i) {
    INFO("layer " << i);
    CHECK(c.layer_slides(i) == (i % 3 != 0));
    CHECK(c.layer_rope_theta(i) == (i % 3 != 0 ? 10000.0f : 160000.0f));
    const Config one = c.layer_alone(i);
    CHECK(one.window == (i % 3 != 0 ? 65u : 0u));
    CHECK(one.window_symmetric == (i % 3 != 0));
    CHECK(validate(one).ok());
  }
}

// The same keys as transformers 5 writes them: layer_types and rope_parameters per layer type.
TEST_CASE("hf: ModernBERT as transformers 5 saves it (layer_types, rope_parameters)") {
  const Config c = load_valid("modernbert-transformers5.json");
  CHECK(c.n_layers == 7);
  CHECK(c.window == 33);
  CHECK(c.window_symmetric);
  CHECK_FALSE(c.causal);
  for (uint32_t i = 0; i < c.n_layers; ++i) {
    INFO("layer " << i);
    CHECK(c.layer_slides(i) == (i % 2 != 0));
    CHECK(c.layer_rope_theta(i) == (i % 2 != 0 ? 5000.0f : 80000.0f));
  }
}

TEST_CASE("hf: Llama 3.2's llama3 rope_scaling is read with its factors") {
  const Config c = load_valid("llama-3.2-1b.json");
  CHECK(c.d_model == 2048);
  CHECK(c.n_heads == 32);
  CHECK(c.kv_heads() == 8);
  CHECK(c.head_size() == 64);
  CHECK(c.max_seq == 131072);
  CHECK(c.n_layers == 16);
  CHECK(c.rope.theta == 500000.0f);
  CHECK(c.rope.scaling == RopeScaling::kLlama3);
  CHECK(c.rope.factor == 32.0f);
  CHECK(c.rope.low_freq_factor == 1.0f);
  CHECK(c.rope.high_freq_factor == 4.0f);
  CHECK(c.rope.original_max_seq == 8192);
}

TEST_CASE("hf: malformed files") {
  SUBCASE("not JSON: the parse error position") {
    const Status s = load_error("bad/not-json.json");
    CHECK(s.code() == Code::kInvalidArgument);
    CHECK_HAS(s, "not-json.json is not valid JSON");
    CHECK_HAS(s, "line 5");
  }
  SUBCASE("empty file") {
    const Status s = load_error("bad/empty.json");
    CHECK(s.code() == Code::kInvalidArgument);
    CHECK_HAS(s, "is not valid JSON");
  }
  SUBCASE("a string where a count belongs") {
    const Status s = load_error("bad/heads-string.json");
    CHECK(s.code() == Code::kInvalidArgument);
    CHECK_HAS(s, "heads-string.json: num_attention_heads is \"32\" (a string), expected a positive integer");
  }
  SUBCASE("negative heads") {
    const Status s = load_error("bad/heads-negative.json");
    CHECK(s.code() == Code::kInvalidArgument);
    CHECK_HAS(s, "num_attention_heads is -32, expected a positive integer");
  }
  SUBCASE("fractional heads") {
    const Status s = load_error("bad/heads-fractional.json");
    CHECK(s.code() == Code::kInvalidArgument);
    CHECK_HAS(s, "num_attention_heads is 32.5, expected a positive integer");
  }
  SUBCASE("no hidden size") {
    const Status s = load_error("bad/no-hidden-size.json");
    CHECK(s.code() == Code::kNotFound);
    CHECK_HAS(s, "no-hidden-size.json: no hidden size: expected one of hidden_size, n_embd, n_embed, d_model, dim");
  }
  SUBCASE("no context length") {
    const Status s = load_error("bad/no-context-length.json");
    CHECK(s.code() == Code::kNotFound);
    CHECK_HAS(s, "max_position_embeddings, n_positions, n_ctx, max_seq_len, seq_length");
  }
  SUBCASE("a hidden size beyond 2^31") {
    const Status s = load_error("bad/huge-hidden-size.json");
    CHECK(s.code() == Code::kInvalidArgument);
    CHECK_HAS(s, "hidden_size is 99999999999");
  }
  SUBCASE("a context length of 1e300") {
    const Status s = load_error("bad/huge-context.json");
    CHECK(s.code() == Code::kInvalidArgument);
    CHECK_HAS(s, "max_position_embeddings is 1e+300");
  }
  SUBCASE("an array at the top") {
    const Status s = load_error("bad/top-level-array.json");
    CHECK(s.code() == Code::kInvalidArgument);
    CHECK_HAS(s, "the top level is an array, expected a JSON object");
  }
}

TEST_CASE("hf: file errors name the path and the system's reason") {
  const std::string missing = hf_path("no-such-model.json");
  const Result<Config> r = load_hf_config(missing.c_str());
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().code() == Code::kNotFound);
  CHECK_HAS(r.status(), "cannot open");
  CHECK_HAS(r.status(), "no-such-model.json: No such file or directory");

  const std::string dir = hf_path("");
  const Result<Config> d = load_hf_config(dir.c_str());
  REQUIRE_FALSE(d.ok());
  CHECK_HAS(d.status(), "is a directory");

  const Result<Config> none = load_hf_config(nullptr);
  CHECK_FALSE(none.ok());
}

TEST_CASE("hf: value types and ranges") {
  SUBCASE("a boolean count") {
    const Status s = parse_error(R"({"hidden_size": true, "num_attention_heads": 32, "max_position_embeddings": 8})");
    CHECK_HAS(s, "config.json: hidden_size is true (a boolean), expected a positive integer");
  }
  SUBCASE("zero heads") {
    const Status s = parse_error(R"({"hidden_size": 64, "num_attention_heads": 0, "max_position_embeddings": 8})");
    CHECK_HAS(s, "num_attention_heads is 0, expected a positive integer");
  }
  SUBCASE("2^31 is one too many; 2^31 - 1 is stored") {
    const Status s = parse_error(with(R"(, "num_hidden_layers": 2147483648)"));
    CHECK_HAS(s, "num_hidden_layers is 2147483648");
    CHECK(parse_ok(with(R"(, "num_hidden_layers": 2147483647)")).n_layers == 2147483647u);
  }
  SUBCASE("an integral float is a count") { CHECK(parse_ok(with(R"(, "num_hidden_layers": 24.0)")).n_layers == 24); }
  SUBCASE("a string theta") {
    const Status s = parse_error(with(R"(, "rope_theta": "10000")"));
    CHECK_HAS(s, "rope_theta is \"10000\" (a string), expected a positive number");
  }
  SUBCASE("a theta beyond float") {
    const Status s = parse_error(with(R"(, "rope_theta": 1e39)"));
    CHECK_HAS(s, "rope_theta is 1e+39");
  }
  SUBCASE("a non-boolean flag") {
    const Status s = parse_error(with(R"(, "sliding_window": 512, "use_sliding_window": "yes")"));
    CHECK_HAS(s, "use_sliding_window is \"yes\" (a string), expected true or false");
  }
  SUBCASE("a deeply nested array value is described, not dumped") {
    std::string deep(100000, '[');
    deep += std::string(100000, ']');
    const Status s =
        parse_error(R"({"hidden_size": )" + deep + R"(, "num_attention_heads": 2, "max_position_embeddings": 8})");
    CHECK_HAS(s, "hidden_size is [...] (an array)");
  }
  SUBCASE("the source name is the one given") {
    const std::string text = R"({"n_embd": -1})";
    const Result<Config> r = parse_hf_config(text.data(), text.size(), "models/x/config.json");
    REQUIRE_FALSE(r.ok());
    CHECK_HAS(r.status(), "models/x/config.json: n_embd is -1");
  }
  SUBCASE("no text") {
    const Result<Config> r = parse_hf_config(nullptr, 0);
    CHECK_FALSE(r.ok());
  }
  SUBCASE("invalid UTF-8 in a string") {
    const Status s = parse_error("{\"model_type\": \"ll\xff\", \"hidden_size\": 64}");
    CHECK_HAS(s, "is not valid JSON");
  }
}

TEST_CASE("hf: random byte corruptions of a real config give a result or an error and never a crash") {
  const std::string path = hf_path("gemma-2-2b.json");
  std::FILE* f = std::fopen(path.c_str(), "rb");
  REQUIRE(f);
  std::string valid;
  char chunk[4096];
  for (size_t n; (n = std::fread(chunk, 1, sizeof(chunk), f)) > 0;) valid.append(chunk, n);
  std::fclose(f);
  uint64_t state = 0x2545f4914f6cdd1dull;  // xorshift64: the same corruptions on every run
  auto next = [&state] {
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    return state;
  };
  static constexpr char kBytes[] = "{}[]\",:-.0123456789eE \ntruefalsnul\x80\xff";
  for (int round = 0; round < 2000; ++round) {
    std::string text = valid;
    const int flips = 1 + static_cast<int>(next() % 3);
    for (int i = 0; i < flips; ++i) text[next() % text.size()] = kBytes[next() % (sizeof(kBytes) - 1)];
    const Result<Config> r = parse_hf_config(text.data(), text.size());
    if (!r.ok()) CHECK(r.status().message()[0] != '\0');
  }
}

TEST_CASE("hf: family rules") {
  SUBCASE("a wrapper's text_config holds the language model") {
    const Config c = parse_ok(R"({"model_type": "llava", "vision_config": {"hidden_size": 1024},
      "text_config": {"model_type": "llama", "hidden_size": 4096, "num_attention_heads": 32,
                      "num_key_value_heads": 8, "max_position_embeddings": 4096}})");
    CHECK(std::strcmp(c.name, "llama") == 0);
    CHECK(c.d_model == 4096);
    CHECK(c.n_kv_heads == 8);
    const Status s = parse_error(R"({"text_config": {"hidden_size": 64, "num_attention_heads": "8"}})");
    CHECK_HAS(s, "config.json: text_config.num_attention_heads is \"8\" (a string)");
  }
  SUBCASE("Falcon-40B's new decoder architecture reads num_kv_heads") {
    const Config c = parse_ok(R"({"model_type": "falcon", "hidden_size": 8192, "num_attention_heads": 128,
      "num_kv_heads": 8, "new_decoder_architecture": true, "max_position_embeddings": 2048})");
    CHECK(c.n_kv_heads == 8);
  }
  SUBCASE("Falcon without multi_query follows FalconConfig's default: one kv head") {
    const Config c = parse_ok(R"({"model_type": "falcon", "hidden_size": 64, "num_attention_heads": 4})");
    CHECK(c.n_kv_heads == 1);
    const Config mha = parse_ok(R"({"model_type": "falcon", "hidden_size": 64, "num_attention_heads": 4,
                                    "multi_query": false})");
    CHECK(mha.kv_heads() == 4);
  }
  SUBCASE("Falcon's alibi flag turns RoPE off and ALiBi on") {
    const Config c =
        parse_ok(R"({"model_type": "falcon", "alibi": true, "hidden_size": 64, "num_attention_heads": 4})");
    CHECK(c.alibi);
    CHECK(c.rope.style == RopeStyle::kNone);
  }
  SUBCASE("a window counts only when use_sliding_window allows it") {
    CHECK(parse_ok(with(R"(, "sliding_window": 512, "use_sliding_window": true)")).window == 512);
    CHECK(parse_ok(with(R"(, "sliding_window": 512, "use_sliding_window": false)")).window == 0);
    CHECK(parse_ok(with(R"(, "sliding_window": null)")).window == 0);
    // One wider than the context hides nothing: the context (Phi-4-mini: 262144 over 131072).
    CHECK(parse_ok(with(R"(, "sliding_window": 262144)")).window == 4096);
  }
  SUBCASE("null softcap is off") { CHECK(parse_ok(with(R"(, "attn_logit_softcapping": null)")).softcap == 0.0f); }
  SUBCASE("attention_bias sets q/k/v and o biases") {
    const Config c = parse_ok(with(R"(, "attention_bias": true)"));
    CHECK(c.qkv_bias);
    CHECK(c.o_bias);
  }
  SUBCASE("a rotary fraction that is not a whole even number of dims") {
    const Status s = parse_error(with(R"(, "partial_rotary_factor": 0.3)"));
    CHECK(s.code() == Code::kInvalidArgument);
    CHECK_HAS(s, "partial_rotary_factor 0.3 * head_dim 128 = 38.4 rotary dims");
    const Status odd = parse_error(with(R"(, "partial_rotary_factor": 0.0078125)"));
    CHECK_HAS(odd, "= 1 rotary dims");
  }
  SUBCASE("MLA in a family whose module headway does not know") {
    const Status s = parse_error(with(R"(, "qk_rope_head_dim": 64)"));
    CHECK(s.code() == Code::kUnsupported);
    CHECK_HAS(s, "multi-head latent attention (kv_lora_rank) of model_type llama");
  }
  SUBCASE("rope_scaling of type default is plain RoPE") {
    CHECK(parse_ok(with(R"(, "rope_scaling": {"rope_type": "default"})")).rope.style == RopeStyle::kNeox);
    const Config lin = parse_ok(with(R"(, "rope_scaling": {"type": "linear", "factor": 2.0})"));
    CHECK(lin.rope.scaling == RopeScaling::kLinear);
    CHECK(lin.rope.factor == 2.0f);
    const Config dynamic = parse_ok(with(R"(, "rope_scaling": {"rope_type": "dynamic", "factor": 4.0})"));
    CHECK(dynamic.rope.scaling == RopeScaling::kDynamic);
    CHECK(dynamic.rope.original_max_seq == 4096);  // max_position_embeddings
    CHECK(dynamic.max_seq == 16384);               // which the factor extends
    CHECK(parse_ok(with(R"(, "rope_scaling": {"rope_type": "su-per", "factor": 4.0})")).rope.scaling ==
          RopeScaling::kOther);
    CHECK(parse_ok(with(R"(, "rope_scaling": null)")).rope.scaling == RopeScaling::kNone);
    CHECK_HAS(parse_error(with(R"(, "rope_scaling": {"rope_type": "llama3", "factor": 8.0})")),
              "has no low_freq_factor");
    CHECK_HAS(parse_error(with(R"(, "rope_scaling": {"type": "linear"})")),
              "rope_scaling of type linear has no factor");
    CHECK_HAS(parse_error(with(R"(, "rope_scaling": {"type": "linear", "factor": "x"})")), "factor");
    CHECK_HAS(parse_error(with(R"(, "rope_scaling": 3)")), "rope_scaling is 3");
  }
  SUBCASE("rope_scaling of type yarn: its keys, Hugging Face's defaults, and its errors") {
    const Config y = parse_ok(with(R"(, "rope_scaling": {"rope_type": "yarn", "factor": 32.0, "beta_fast": 32.0,
      "beta_slow": 1.0, "original_max_position_embeddings": 4096, "truncate": false})"));
    CHECK(y.rope.scaling == RopeScaling::kYarn);
    CHECK(y.rope.factor == 32.0f);
    CHECK(y.rope.original_max_seq == 4096);
    CHECK_FALSE(y.rope.yarn_truncate);
    const Config d = parse_ok(with(R"(, "rope_scaling": {"type": "yarn", "factor": 40, "mscale": 0.707,
      "mscale_all_dim": 0.707, "beta_fast": null, "attention_factor": null})"));
    CHECK(d.rope.mscale == 0.707f);
    CHECK(d.rope.beta_fast == 32.0f);  // null: the default
    CHECK(d.rope.attention_factor == 0.0f);
    CHECK(d.rope.original_max_seq == d.max_seq);  // absent: the model's own context
    CHECK(d.rope.yarn_truncate);
    CHECK_HAS(parse_error(with(R"(, "rope_scaling": {"rope_type": "yarn"})")),
              "rope_scaling of type yarn has no factor");
    CHECK_HAS(parse_error(with(R"(, "rope_scaling": {"rope_type": "yarn", "factor": 4, "truncate": 1})")),
              "truncate is 1");
    const Config inverted = parse_ok(with(R"(, "rope_scaling": {"rope_type": "yarn", "factor": 4, "beta_fast": 1,
      "beta_slow": 2})"));
    CHECK_HAS(validate(inverted), "rope_scaling yarn needs beta_fast > beta_slow > 0; got 1, 2");
  }
  SUBCASE("transformers 5's rope_parameters: one object, or one per layer type") {
    const Config flat = parse_ok(R"({"model_type": "llama", "hidden_size": 64, "num_attention_heads": 4,
      "max_position_embeddings": 4096, "rope_parameters": {"rope_type": "yarn", "rope_theta": 500000.0,
      "factor": 8.0, "original_max_position_embeddings": 512, "partial_rotary_factor": 0.5}})");
    CHECK(flat.rope.theta == 500000.0f);
    CHECK(flat.rope.scaling == RopeScaling::kYarn);
    CHECK(flat.rope.original_max_seq == 512);
    CHECK(flat.rope.rotary_dim == 8);
    const Config plain = parse_ok(R"({"model_type": "llama", "hidden_size": 64, "num_attention_heads": 4,
      "max_position_embeddings": 4096, "rope_parameters": {"rope_theta": 1000.0}})");
    CHECK(plain.rope.theta == 1000.0f);
    CHECK(plain.rope.scaling == RopeScaling::kNone);
    const Config typed = parse_ok(R"({"model_type": "gemma3_text", "hidden_size": 64, "num_attention_heads": 4,
      "head_dim": 16, "max_position_embeddings": 4096, "num_hidden_layers": 6, "sliding_window": 512,
      "rope_parameters": {"full_attention": {"rope_type": "linear", "factor": 8.0, "rope_theta": 1000000.0},
                          "sliding_attention": {"rope_type": "default", "rope_theta": 10000.0}}})");
    CHECK(typed.rope.theta == 1000000.0f);
    CHECK(typed.rope.scaling == RopeScaling::kLinear);
    CHECK(typed.layers.local_rope_theta == 10000.0f);
    CHECK(typed.layers.sliding_pattern == 6);
    CHECK(typed.qk_norm);
    CHECK(typed.qk_norm_offset == 1.0f);
    CHECK(typed.layer_rope(0).scaling == RopeScaling::kNone);  // sliding: plain, at its own base
    CHECK(typed.layer_rope(0).theta == 10000.0f);
    CHECK(typed.layer_rope(5).scaling == RopeScaling::kLinear);
  }
  SUBCASE("an encoder marked is_decoder is causal") {
    const Config c = parse_ok(R"({"model_type": "bert", "hidden_size": 64, "num_attention_heads": 4,
                                  "max_position_embeddings": 32, "is_decoder": true})");
    CHECK(c.causal);
  }
  SUBCASE("unknown keys are ignored; an over-long model_type is cut to the name size") {
    const Config c = parse_ok(R"({"model_type": "a-model-type-name-that-is-longer-than-forty-seven-characters",
      "hidden_size": 64, "num_attention_heads": 4, "max_position_embeddings": 32, "whatever": [1, {"x": null}]})");
    CHECK(std::strlen(c.name) == kMaxNameLength);
  }
}

TEST_CASE("hf: Phi-3.5's LongRoPE is read whole: both factor tables, the original context, the factor") {
  const std::string head = R"({"model_type": "phi3", "hidden_size": 64, "num_attention_heads": 4,
      "max_position_embeddings": 128, "original_max_position_embeddings": 32, "rope_scaling": {"type": ")";
  const std::string factors = R"(", "short_factor": [1, 1.1, 1.2, 1.3, 1.4, 1.5, 1.6, 1.7],
      "long_factor": [1, 2, 3, 4, 5, 6, 7, 8])";
  for (const char* type : {"longrope", "su"}) {  // Phi3Config reads the older "su" as longrope
    const Config c = parse_ok(head + type + factors + "}}");
    CHECK(c.rope.scaling == RopeScaling::kLongRope);
    CHECK(c.rope.longrope_pairs == 8);
    CHECK(c.rope.short_factor[7] == 1.7f);
    CHECK(c.rope.long_factor[7] == 8.0f);
    CHECK(c.rope.original_max_seq == 32);
    CHECK(c.rope.factor == 4.0f);  // max_position_embeddings / original, as transformers derives it
  }
  CHECK(parse_ok(head + "longrope" + factors + R"(, "factor": 2.5}})").rope.factor == 2.5f);
  // The count against the rotated pairs: validate()'s, a cross-field rule.
  const Config two = parse_ok(head + R"(longrope", "short_factor": [1, 2], "long_factor": [1, 2]}})");
  CHECK_HAS(validate(two), "rope_scaling longrope has 2 short and long factors; the 8 rotated pairs need one each");
  CHECK(validate(parse_ok(head + "longrope" + factors + "}}")).ok());
  CHECK_HAS(parse_error(head + R"(longrope", "short_factor": [1, 1, 1, 1, 1, 1, 1, -1],
      "long_factor": [1, 1, 1, 1, 1, 1, 1, 1]}})"),
            "short_factor");
  CHECK_HAS(parse_error(head + R"(longrope", "short_factor": [1, 2], "long_factor": [1]}})"), "2 short and 1 long");
  CHECK_HAS(parse_error(R"({"model_type": "phi3", "hidden_size": 64, "num_attention_heads": 4,
      "max_position_embeddings": 128, "rope_scaling": {"type": "longrope", "short_factor": [1], "long_factor": [1]}})"),
            "longrope has no original_max_position_embeddings");
}

}  // namespace
}  // namespace headway
