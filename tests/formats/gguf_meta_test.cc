// GGUF metadata parsing. The tests write their own GGUF buffers (GgufWriter): valid
// llama/gemma2/phi2/bert metadata, every truncation of a valid buffer, lengths and counts of
// 2^63, wrong magic, version 1, per-layer head counts, and large skipped string arrays.
#include <doctest/doctest.h>

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "headway/config.hpp"
#include "headway/tools/model_files.hpp"
#include "tests/formats/gguf_writer.hpp"

namespace headway {
namespace {

using test::GgufWriter;
using namespace test::gguf_types;

std::vector<std::string> tokens(size_t n) {
  std::vector<std::string> t;
  t.reserve(n);
  for (size_t i = 0; i < n; ++i) t.push_back("tok" + std::to_string(i));
  return t;
}

// Llama-2 7B's attention metadata as llama.cpp's converter writes it, with a small tokenizer.
GgufWriter llama2_7b(size_t vocab = 300) {
  GgufWriter w;
  w.str("general.architecture", "llama")
      .str("general.name", "Llama 2 7B")
      .u32kv("llama.context_length", 4096)
      .u32kv("llama.embedding_length", 4096)
      .u32kv("llama.block_count", 32)
      .u32kv("llama.feed_forward_length", 11008)
      .u32kv("llama.rope.dimension_count", 128)
      .u32kv("llama.attention.head_count", 32)
      .u32kv("llama.attention.head_count_kv", 32)
      .f32kv("llama.attention.layer_norm_rms_epsilon", 1e-5f)
      .u32kv("general.file_type", 15)
      .str("tokenizer.ggml.model", "llama")
      .string_array("tokenizer.ggml.tokens", tokens(vocab))
      .f32_array("tokenizer.ggml.scores", vocab)
      .u32kv("tokenizer.ggml.bos_token_id", 1)
      .u32kv("general.quantization_version", 2);
  return w;
}

// Gemma 2 2B: head_dim 256 over d_model 2304, softcap, sliding window. The architecture key
// comes last, after the keys it prefixes.
GgufWriter gemma2_2b() {
  GgufWriter w;
  w.str("general.name", "gemma-2-2b")
      .u32kv("gemma2.context_length", 8192)
      .u32kv("gemma2.embedding_length", 2304)
      .u32kv("gemma2.block_count", 26)
      .u32kv("gemma2.feed_forward_length", 9216)
      .u32kv("gemma2.attention.head_count", 8)
      .u32kv("gemma2.attention.head_count_kv", 4)
      .u32kv("gemma2.attention.key_length", 256)
      .u32kv("gemma2.attention.value_length", 256)
      .f32kv("gemma2.attention.layer_norm_rms_epsilon", 1e-6f)
      .f32kv("gemma2.attn_logit_softcapping", 50.0f)
      .f32kv("gemma2.final_logit_softcapping", 30.0f)
      .u32kv("gemma2.attention.sliding_window", 4096)
      .str("general.architecture", "gemma2");
  return w;
}

Result<Config> parse(const std::vector<uint8_t>& b) { return parse_gguf_metadata(b.data(), b.size()); }

bool contains(const Status& s, const char* part) { return std::strstr(s.message(), part) != nullptr; }
#define CHECK_HAS(status, part) CHECK_MESSAGE(contains(status, part), std::string((status).message()))

Status parse_error(const std::vector<uint8_t>& b) {
  const Result<Config> r = parse(b);
  REQUIRE_FALSE(r.ok());
  return r.status();
}

TEST_CASE("gguf: Llama-2 7B metadata") {
  const Result<Config> r = parse(llama2_7b().bytes());
  REQUIRE_MESSAGE(r.ok(), std::string(r.status().message()));
  const Config& c = *r;
  CHECK(std::strcmp(c.name, "Llama 2 7B") == 0);
  CHECK(c.d_model == 4096);
  CHECK(c.n_heads == 32);
  CHECK(c.kv_heads() == 32);
  CHECK(c.head_size() == 128);
  CHECK(c.max_seq == 4096);
  CHECK(c.n_layers == 32);
  // llama GGUFs store Q/K rows permuted for adjacent-pair RoPE (llama.cpp's "normal" mode).
  CHECK(c.rope.style == RopeStyle::kGptj);
  CHECK(c.rope.rotary_dim == 0);
  CHECK(c.rope.theta == 10000.0f);
  CHECK(c.causal);
  CHECK_FALSE(c.qkv_bias);
  const Status v = validate(c);
  CHECK_MESSAGE(v.ok(), std::string(v.message()));
}

TEST_CASE("gguf: Gemma 2 2B metadata with the architecture key last") {
  const Result<Config> r = parse(gemma2_2b().bytes());
  REQUIRE_MESSAGE(r.ok(), std::string(r.status().message()));
  const Config& c = *r;
  CHECK(c.d_model == 2304);
  CHECK(c.n_heads == 8);
  CHECK(c.n_kv_heads == 4);
  CHECK(c.head_dim == 256);
  CHECK(c.max_seq == 8192);
  CHECK(c.n_layers == 26);
  CHECK(c.window == 4096);
  CHECK(c.softcap == 50.0f);
  CHECK(c.query_pre_attn_scalar == 0.0f);  // 256 = head_dim for the 2B
  CHECK(c.rope.style == RopeStyle::kNeox);
  const Status v = validate(c);
  CHECK_MESSAGE(v.ok(), std::string(v.message()));
}

TEST_CASE("gguf: Gemma 2 27B scales queries by d_model / heads") {
  GgufWriter w;
  w.str("general.architecture", "gemma2")
      .u32kv("gemma2.context_length", 8192)
      .u32kv("gemma2.embedding_length", 4608)
      .u32kv("gemma2.block_count", 46)
      .u32kv("gemma2.attention.head_count", 32)
      .u32kv("gemma2.attention.head_count_kv", 16)
      .u32kv("gemma2.attention.key_length", 128);
  const Result<Config> r = parse(w.bytes());
  REQUIRE_MESSAGE(r.ok(), std::string(r.status().message()));
  CHECK(r->query_pre_attn_scalar == 144.0f);
}

TEST_CASE("gguf: Phi-2 rotates 32 of 80 dims and BERT is bidirectional without RoPE") {
  GgufWriter phi;
  phi.str("general.architecture", "phi2")
      .u32kv("phi2.context_length", 2048)
      .u32kv("phi2.embedding_length", 2560)
      .u32kv("phi2.block_count", 32)
      .u32kv("phi2.attention.head_count", 32)
      .u32kv("phi2.attention.head_count_kv", 32)
      .u32kv("phi2.rope.dimension_count", 32);
  const Result<Config> p = parse(phi.bytes());
  REQUIRE_MESSAGE(p.ok(), std::string(p.status().message()));
  CHECK(p->head_size() == 80);
  CHECK(p->rope.style == RopeStyle::kNeox);
  CHECK(p->rope.rotary_dim == 32);
  CHECK(p->qkv_bias);
  CHECK(validate(*p).ok());

  GgufWriter bert;
  bert.str("general.architecture", "bert")
      .u32kv("bert.context_length", 512)
      .u32kv("bert.embedding_length", 768)
      .u32kv("bert.block_count", 12)
      .u32kv("bert.attention.head_count", 12)
      .boolkv("bert.attention.causal", false);
  const Result<Config> b = parse(bert.bytes());
  REQUIRE_MESSAGE(b.ok(), std::string(b.status().message()));
  CHECK_FALSE(b->causal);
  CHECK(b->rope.style == RopeStyle::kNone);
  CHECK(std::strcmp(b->name, "bert") == 0);  // no general.name: the architecture
  CHECK(validate(*b).ok());
}

TEST_CASE("gguf: every truncation of a valid buffer is an error and never a crash") {
  const std::vector<uint8_t> full = llama2_7b(40).bytes();
  REQUIRE(parse(full).ok());
  for (size_t n = 0; n < full.size(); ++n) {
    // An exact-size heap copy, so that a sanitizer sees any read past the end.
    const std::vector<uint8_t> prefix(full.begin(), full.begin() + static_cast<std::ptrdiff_t>(n));
    const Result<Config> r = parse_gguf_metadata(prefix.empty() ? nullptr : prefix.data(), n);
    INFO("prefix of " << n << " bytes: " << r.status().message());
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().code() == Code::kDataLoss);
  }
}

TEST_CASE("gguf: random byte corruptions give a result or an error and never a crash") {
  const std::vector<uint8_t> valid = gemma2_2b().bytes();
  uint64_t state = 0x9e3779b97f4a7c15ull;  // xorshift64: the same corruptions on every run
  auto next = [&state] {
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    return state;
  };
  int failures = 0;
  for (int round = 0; round < 3000; ++round) {
    std::vector<uint8_t> b = valid;
    const int flips = 1 + static_cast<int>(next() % 4);
    for (int f = 0; f < flips; ++f) b[next() % b.size()] = static_cast<uint8_t>(next());
    const Result<Config> r = parse(b);
    if (!r.ok()) {
      ++failures;
      CHECK(r.status().message()[0] != '\0');
    }
  }
  CHECK(failures > 0);
}

TEST_CASE("gguf: a truncated string array names its key") {
  const std::vector<uint8_t> full = llama2_7b().bytes();
  const std::vector<uint8_t> cut(full.begin(), full.begin() + static_cast<std::ptrdiff_t>(full.size() / 2));
  const Status s = parse_error(cut);
  CHECK(s.code() == Code::kDataLoss);
  CHECK_HAS(s, "tokenizer.ggml.tokens");
}

TEST_CASE("gguf: lengths and counts of 2^63 are clean DataLoss errors naming the key") {
  const uint64_t huge = uint64_t{1} << 63;
  SUBCASE("a string value") {
    GgufWriter w;
    w.str("general.architecture", "llama").begin("general.name", kString).u64(huge).raw("abc", 3);
    const Status s = parse_error(w.bytes());
    CHECK(s.code() == Code::kDataLoss);
    CHECK_HAS(s, "general.name");
    CHECK_HAS(s, "9223372036854775808");
  }
  SUBCASE("a key") {
    GgufWriter w;
    w.u64(huge).raw("general.architecture", 20);
    const Status s = parse_error(w.bytes(1));
    CHECK(s.code() == Code::kDataLoss);
    CHECK_HAS(s, "kv pair 0 of 1 has a key of 9223372036854775808 bytes");
  }
  SUBCASE("an array of floats") {
    GgufWriter w;
    w.str("general.architecture", "llama").begin("tokenizer.ggml.scores", kArray).u32(kF32).u64(huge).u32(0);
    const Status s = parse_error(w.bytes());
    CHECK(s.code() == Code::kDataLoss);
    CHECK_HAS(s, "tokenizer.ggml.scores holds an array of 9223372036854775808 f32");
  }
  SUBCASE("an array of 2^62 u64: count times size overflows 64 bits") {
    GgufWriter w;
    w.str("general.architecture", "llama").begin("x.big", kArray).u32(kU64).u64(uint64_t{1} << 62).u64(0);
    const Status s = parse_error(w.bytes());
    CHECK(s.code() == Code::kDataLoss);
    CHECK_HAS(s, "x.big");
  }
  SUBCASE("an array of strings") {
    GgufWriter w;
    w.str("general.architecture", "llama").begin("tokenizer.ggml.tokens", kArray).u32(kString).u64(huge);
    const Status s = parse_error(w.bytes());
    CHECK(s.code() == Code::kDataLoss);
    CHECK_HAS(s, "tokenizer.ggml.tokens");
  }
  SUBCASE("a string inside an array") {
    GgufWriter w;
    w.str("general.architecture", "llama").begin("tokenizer.ggml.merges", kArray).u32(kString).u64(2);
    w.gguf_string("a b");
    w.u64(huge);
    const Status s = parse_error(w.bytes());
    CHECK(s.code() == Code::kDataLoss);
    CHECK_HAS(s, "tokenizer.ggml.merges has a string of 9223372036854775808 bytes");
  }
  SUBCASE("kv_count") {
    const Status s = parse_error(llama2_7b().bytes(huge));
    CHECK(s.code() == Code::kDataLoss);
    CHECK_HAS(s, "kv_count 9223372036854775808");
  }
}

TEST_CASE("gguf: header errors") {
  SUBCASE("wrong magic") {
    std::vector<uint8_t> b = llama2_7b().bytes();
    std::memcpy(b.data(), "GGML", 4);
    const Status s = parse_error(b);
    CHECK(s.code() == Code::kInvalidArgument);
    CHECK_HAS(s, "model.gguf is not a GGUF file (magic 47 47 4d 4c");
  }
  SUBCASE("version 1") {
    const Status s = parse_error(GgufWriter(1).bytes());
    CHECK(s.code() == Code::kUnsupported);
    CHECK_HAS(s, "GGUF version 1 is not supported");
  }
  SUBCASE("version 2 parses like 3") {
    GgufWriter w(2);
    w.str("general.architecture", "qwen2")
        .u32kv("qwen2.context_length", 32768)
        .u32kv("qwen2.embedding_length", 896)
        .u32kv("qwen2.attention.head_count", 14)
        .u32kv("qwen2.attention.head_count_kv", 2)
        .f32kv("qwen2.rope.freq_base", 1000000.0f);
    const Result<Config> r = parse(w.bytes());
    REQUIRE_MESSAGE(r.ok(), std::string(r.status().message()));
    CHECK(r->rope.theta == 1000000.0f);
    CHECK(r->qkv_bias);
  }
  SUBCASE("big-endian") {
    const Status s = parse_error(GgufWriter(0x03000000u).bytes());
    CHECK(s.code() == Code::kUnsupported);
    CHECK_HAS(s, "big-endian");
  }
  SUBCASE("an unknown value type names its key") {
    GgufWriter w;
    w.str("general.architecture", "llama").begin("general.odd", 13).u32(0);
    const Status s = parse_error(w.bytes());
    CHECK(s.code() == Code::kDataLoss);
    CHECK_HAS(s, "general.odd has unknown value type 13");
  }
}

TEST_CASE("gguf: per-layer head counts") {
  auto with_kv = [](const std::vector<uint32_t>& kv) {
    GgufWriter w;
    w.str("general.architecture", "llama")
        .u32kv("llama.context_length", 2048)
        .u32kv("llama.embedding_length", 2048)
        .u32kv("llama.attention.head_count", 32)
        .u32_array("llama.attention.head_count_kv", kv);
    return w.bytes();
  };
  const Result<Config> same = parse(with_kv({8, 8, 8, 8}));
  REQUIRE_MESSAGE(same.ok(), std::string(same.status().message()));
  CHECK(same->n_kv_heads == 8);

  const Status s = parse_error(with_kv({8, 8, 8, 4}));
  CHECK(s.code() == Code::kUnsupported);
  CHECK_HAS(s, "llama.attention.head_count_kv differs per layer (layer 0: 8, layer 3: 4)");
}

TEST_CASE("gguf: values of the wrong type or range name the key") {
  SUBCASE("a string context length") {
    GgufWriter w;
    w.str("general.architecture", "llama")
        .str("llama.context_length", "4096")
        .u32kv("llama.embedding_length", 4096)
        .u32kv("llama.attention.head_count", 32);
    const Status s = parse_error(w.bytes());
    CHECK(s.code() == Code::kInvalidArgument);
    CHECK_HAS(s, "llama.context_length has type string, expected an integer");
  }
  SUBCASE("a negative head count") {
    GgufWriter w;
    w.str("general.architecture", "llama")
        .u32kv("llama.context_length", 4096)
        .u32kv("llama.embedding_length", 4096)
        .i32kv("llama.attention.head_count", -32);
    const Status s = parse_error(w.bytes());
    CHECK_HAS(s, "llama.attention.head_count is -32, expected a positive integer");
  }
  SUBCASE("a context length beyond 2^31") {
    GgufWriter w;
    w.str("general.architecture", "llama")
        .u64kv("llama.context_length", uint64_t{1} << 40)
        .u32kv("llama.embedding_length", 4096)
        .u32kv("llama.attention.head_count", 32);
    const Status s = parse_error(w.bytes());
    CHECK_HAS(s, "llama.context_length is 1099511627776");
  }
  SUBCASE("a missing context length") {
    GgufWriter w;
    w.str("general.architecture", "llama")
        .u32kv("llama.embedding_length", 4096)
        .u32kv("llama.attention.head_count", 32);
    const Status s = parse_error(w.bytes());
    CHECK(s.code() == Code::kNotFound);
    CHECK_HAS(s, "no llama.context_length");
  }
  SUBCASE("no architecture") {
    const Status s = parse_error(GgufWriter().u32kv("llama.context_length", 4096).bytes());
    CHECK(s.code() == Code::kNotFound);
    CHECK_HAS(s, "general.architecture");
  }
  SUBCASE("a duplicated key") {
    GgufWriter w;
    w.str("general.architecture", "llama").u32kv("llama.context_length", 4096).u32kv("llama.context_length", 2048);
    CHECK_HAS(parse_error(w.bytes()), "llama.context_length appears twice");
  }
  SUBCASE("a duplicated key after a valid file's keys") {
    GgufWriter w = gemma2_2b();
    w.u32kv("gemma2.attention.value_length", 128);
    CHECK_HAS(parse_error(w.bytes()), "appears twice");
  }
}

TEST_CASE("gguf: BLOOM and MPT run ALiBi (max_alibi_bias, or 8), MPT's clamp_kqv is refused") {
  GgufWriter bloom;
  bloom.str("general.architecture", "bloom")
      .u32kv("bloom.context_length", 2048)
      .u32kv("bloom.embedding_length", 1024)
      .u32kv("bloom.attention.head_count", 16)
      .u32kv("bloom.block_count", 24);
  const Result<Config> rb = parse(bloom.bytes());
  REQUIRE_MESSAGE(rb.ok(), std::string(rb.status().message()));
  const Config& b = *rb;
  CHECK(validate(b).ok());
  CHECK(b.alibi);
  CHECK(b.alibi_max_bias == 8.0f);
  CHECK(b.rope.style == RopeStyle::kNone);
  CHECK(b.qkv_bias);
  CHECK(b.o_bias);
  CHECK(b.head_size() == 64);

  GgufWriter mpt;
  mpt.str("general.architecture", "mpt")
      .u32kv("mpt.context_length", 2048)
      .u32kv("mpt.embedding_length", 4096)
      .u32kv("mpt.attention.head_count", 32)
      .f32kv("mpt.attention.max_alibi_bias", 16.0f);
  const Result<Config> rm = parse(mpt.bytes());
  REQUIRE_MESSAGE(rm.ok(), std::string(rm.status().message()));
  const Config& m = *rm;
  CHECK(m.alibi);
  CHECK(m.alibi_max_bias == 16.0f);
  CHECK_FALSE(m.qkv_bias);

  mpt.f32kv("mpt.attention.clamp_kqv", 8.0f);
  const Status s = parse_error(mpt.bytes());
  CHECK(s.code() == Code::kUnsupported);
  CHECK_HAS(s, "mpt.attention.clamp_kqv");
}

TEST_CASE("gguf: unsupported architectures say why") {
  SUBCASE("an unknown architecture") {
    const Status s = parse_error(GgufWriter().str("general.architecture", "mamba").bytes());
    CHECK(s.code() == Code::kUnsupported);
    CHECK_HAS(s, "architecture \"mamba\" is not one headway knows");
  }
  SUBCASE("K and V head sizes that differ") {
    GgufWriter w;
    w.str("general.architecture", "qwen3")
        .u32kv("qwen3.context_length", 4096)
        .u32kv("qwen3.embedding_length", 1024)
        .u32kv("qwen3.attention.head_count", 16)
        .u32kv("qwen3.attention.key_length", 128)
        .u32kv("qwen3.attention.value_length", 64);
    const Status s = parse_error(w.bytes());
    CHECK(s.code() == Code::kUnsupported);
    CHECK_HAS(s, "qwen3.attention.value_length 64 differs from the key head size 128");
  }
}

TEST_CASE("gguf: nested arrays and empty arrays are skipped") {
  GgufWriter w = llama2_7b(4);
  w.begin("custom.nested", kArray).u32(kArray).u64(2);
  w.u32(kU8).u64(3).raw("\x01\x02\x03", 3);
  w.u32(kString).u64(1);
  w.gguf_string("x");
  w.begin("custom.empty", kArray).u32(kString).u64(0);
  const Result<Config> r = parse(w.bytes());
  CHECK_MESSAGE(r.ok(), std::string(r.status().message()));
}

// A temporary file removed at scope exit.
struct TempFile {
  std::string path;
  explicit TempFile(const std::vector<uint8_t>& bytes) {
    char name[] = "/tmp/headway_gguf_XXXXXX";
    const int fd = mkstemp(name);
    REQUIRE(fd >= 0);
    path = name;
    size_t done = 0;
    while (done < bytes.size()) {
      const ssize_t n = write(fd, bytes.data() + done, bytes.size() - done);
      REQUIRE(n > 0);
      done += static_cast<size_t>(n);
    }
    close(fd);
  }
  ~TempFile() { std::remove(path.c_str()); }
};

TEST_CASE("gguf: load_gguf_config reads metadata larger than its first read") {
  // ~4 MiB of tokenizer before the architecture's keys, then tensor "data".
  GgufWriter w;
  w.str("general.architecture", "llama")
      .string_array("tokenizer.ggml.tokens", tokens(300000))
      .u32kv("llama.context_length", 4096)
      .u32kv("llama.embedding_length", 4096)
      .u32kv("llama.attention.head_count", 32)
      .u32kv("llama.attention.head_count_kv", 8);
  std::vector<uint8_t> file = w.bytes();
  REQUIRE(file.size() > (size_t{4} << 20));
  file.resize(file.size() + (size_t{1} << 20), 0xab);
  const TempFile tmp(file);
  const Result<Config> r = load_gguf_config(tmp.path.c_str());
  REQUIRE_MESSAGE(r.ok(), std::string(r.status().message()));
  CHECK(r->n_kv_heads == 8);
  CHECK(r->max_seq == 4096);
}

TEST_CASE("gguf: load_gguf_config errors name the path") {
  const Result<Config> missing = load_gguf_config("no-such-model.gguf");
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.status().code() == Code::kNotFound);
  CHECK_HAS(missing.status(), "cannot open no-such-model.gguf: No such file or directory");

  // A file cut inside its metadata: DataLoss naming the file, not a retry loop.
  const std::vector<uint8_t> full = llama2_7b(1000).bytes();
  const TempFile cut(std::vector<uint8_t>(full.begin(), full.begin() + 3000));
  const Result<Config> r = load_gguf_config(cut.path.c_str());
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().code() == Code::kDataLoss);
  CHECK_HAS(r.status(), cut.path.c_str());
}

}  // namespace
}  // namespace headway
