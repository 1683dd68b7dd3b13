#include <doctest/doctest.h>

#include <string>

#include "headway/config.hpp"

namespace headway {
namespace {

TEST_CASE("the spec string from the README parses to every field") {
  const Result<Config> r = parse_spec(
      "d_model=4096 heads=32 kv_heads=8 head_dim=128 ctx=4096 layers=32 rope_theta=10000 window=4096 softcap=50");
  REQUIRE(r.ok());
  const Config& c = r.value();
  CHECK(c.d_model == 4096);
  CHECK(c.n_heads == 32);
  CHECK(c.n_kv_heads == 8);
  CHECK(c.head_dim == 128);
  CHECK(c.max_seq == 4096);
  CHECK(c.n_layers == 32);
  CHECK(c.rope.style == RopeStyle::kNeox);
  CHECK(c.rope.theta == 10000.0f);
  CHECK(c.window == 4096);
  CHECK(c.softcap == 50.0f);
  CHECK(validate(c).ok());
}

TEST_CASE("every key, separators and float forms") {
  const Result<Config> r = parse_spec(
      "  name=tiny,d_model=64\theads=4 kv_heads=2 ctx=128 layers=1 rope=gptj rope_theta=1e4 rope_dim=8 "
      "query_pre_attn_scalar=224 scale=0.125 causal=0 kv_dtype=bf16 qkv_bias=1 o_bias=true qk_norm=false\n");
  REQUIRE(r.ok());
  const Config& c = r.value();
  CHECK(std::string(c.name) == "tiny");
  CHECK(c.rope.style == RopeStyle::kGptj);
  CHECK(c.rope.theta == 10000.0f);
  CHECK(c.rope.rotary_dim == 8);
  CHECK(c.query_pre_attn_scalar == 224.0f);
  CHECK(c.scale == 0.125f);
  CHECK_FALSE(c.causal);
  CHECK(c.kv_dtype == DType::kBF16);
  CHECK(c.qkv_bias);
  CHECK(c.o_bias);
  CHECK_FALSE(c.qk_norm);
  CHECK(parse_spec("d_model=8 heads=1 ctx=4 softcap=2.5e-1").value().softcap == 0.25f);
  const Config rotated = parse_spec("d_model=256 heads=4 ctx=16 kv_dtype=q4_0 kv_rotation=hadamard").value();
  CHECK(rotated.kv_rotation == KvRotation::kHadamard);
  CHECK(validate(rotated).ok());
  CHECK(parse_spec("d_model=256 heads=4 kv_rotation=none").value().kv_rotation == KvRotation::kNone);
  CHECK(parse_spec("d_model=256 heads=4").value().kv_rotation == KvRotation::kNone);
  CHECK(parse_spec("d_model=8 heads=1 ctx=4").value().rope.style == RopeStyle::kNone);
  CHECK(parse_spec("rope=none rope_theta=5 d_model=8").value().rope.style == RopeStyle::kNone);
  const Config s = parse_spec(
                       "d_model=64 heads=4 ctx=128 window=32 sink_tokens=4 alibi=1 alibi_max_bias=16 "
                       "alibi_times_scale=true")
                       .value();
  CHECK(s.sink_tokens == 4);
  CHECK(s.alibi);
  CHECK(s.alibi_max_bias == 16.0f);
  CHECK(s.alibi_times_scale);
  CHECK(validate(s).ok());
}

TEST_CASE("bad specs name the key and the value") {
  struct Case {
    const char* spec;
    const char* expected;
  };
  const Case cases[] = {
      {"d_model=4096 colour=blue", "unknown key 'colour'"},
      {"heads=3x", "heads=3x is not a whole number"},
      {"heads=-3", "heads=-3 is not a whole number"},
      {"ctx=99999999999", "ctx=99999999999 is not a whole number 0..4294967295"},
      {"softcap=abc", "softcap=abc is not a non-negative number"},
      {"softcap=-1", "softcap=-1 is not a non-negative number"},
      {"rope_theta=1e", "rope_theta=1e is not a positive number"},
      {"softcap=1e999", "softcap=1e999 is not a non-negative number"},
      {"rope=alibi", "rope=alibi is not one of none, neox, gptj"},
      {"kv_dtype=f8", "kv_dtype=f8 is not one of f32, f16, bf16"},
      {"kv_rotation=walsh", "kv_rotation=walsh is not one of none, hadamard"},
      {"causal=maybe", "causal=maybe is not 0, 1, true or false"},
      {"sink_tokens=-1", "sink_tokens=-1 is not a whole number"},
      {"alibi=2", "alibi=2 is not 0, 1, true or false"},
      {"alibi_max_bias=x", "alibi_max_bias=x is not a non-negative number"},
      {"d_model", "'d_model' has no value"},
      {"d_model=", "d_model= has an empty value"},
      {"", "spec: empty"},
      {"   ,  ", "spec: empty"},
      {"d_model=1111111111111111111111111111111111111111111111111111111111111111111111", "longer than 64"},
  };
  for (const Case& c : cases) {
    INFO(c.spec);
    const Result<Config> r = parse_spec(c.spec);
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().code() == Code::kInvalidArgument);
    CHECK(std::string(r.status().message()).find(c.expected) != std::string::npos);
  }
  CHECK_FALSE(parse_spec(nullptr).ok());
}

}  // namespace
}  // namespace headway
