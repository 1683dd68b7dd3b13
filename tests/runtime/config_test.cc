// Every validation rule: the config that breaks it, the code, and the words of the message.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <string>

#include "headway/config.hpp"
#include "headway/plan.hpp"
#include "headway/presets.hpp"

namespace headway {
namespace {

Config base() {
  Config c;
  c.set_name("test");
  c.d_model = 4096;
  c.n_heads = 32;
  c.max_seq = 4096;
  c.n_layers = 2;
  c.rope.style = RopeStyle::kNeox;
  return c;
}

std::string message_of(const Config& c) { return validate(c).message(); }

TEST_CASE("a plain MHA config is valid and derives head_dim") {
  const Config c = base();
  CHECK(validate(c).ok());
  CHECK(c.head_size() == 128);
  CHECK(c.kv_heads() == 32);
  CHECK(c.rotary_dims() == 128);
  CHECK(c.logit_scale() == doctest::Approx(1.0 / std::sqrt(128.0)));
}

TEST_CASE("d_model not divisible by n_heads teaches the nearby head counts") {
  Config c = base();
  c.d_model = 800;
  c.n_heads = 12;
  const Status s = validate(c);
  CHECK(s.code() == Code::kInvalidArgument);
  CHECK(std::string(s.message()) ==
        "hidden_size 800 is not divisible by num_heads 12 (800 / 12 = 66.67); head counts that divide 800 near 12: "
        "10 (head_dim 80), 16 (head_dim 50); or set head_dim explicitly");
  c.head_dim = 64;  // explicit head_dim decouples the widths (Gemma 7B style)
  CHECK(validate(c).ok());
}

TEST_CASE("n_heads not divisible by n_kv_heads lists the kv head counts that work") {
  Config c = base();
  c.n_kv_heads = 5;
  const std::string m = message_of(c);
  CHECK(validate(c).code() == Code::kInvalidArgument);
  CHECK(m.find("num_heads 32 is not divisible by num_key_value_heads 5") != std::string::npos);
  CHECK(m.find("1, 2, 4, 8, 16, 32") != std::string::npos);
  c.n_kv_heads = 64;
  CHECK(message_of(c).find("num_key_value_heads 64 is more than num_heads 32") != std::string::npos);
  c.n_kv_heads = 8;
  CHECK(validate(c).ok());
  c.n_kv_heads = 1;  // MQA
  CHECK(validate(c).ok());
}

TEST_CASE("zero sizes are errors naming the field") {
  Config c = base();
  c.d_model = 0;
  CHECK(message_of(c).find("hidden_size (d_model) must be positive, got 0") != std::string::npos);
  c = base();
  c.n_heads = 0;
  CHECK(message_of(c).find("num_heads must be positive, got 0") != std::string::npos);
  c = base();
  c.max_seq = 0;
  CHECK(message_of(c).find("max_position_embeddings (max_seq) must be positive") != std::string::npos);
  c = base();
  c.n_layers = 0;
  CHECK(message_of(c).find("num_hidden_layers (n_layers) must be positive") != std::string::npos);
  c = base();
  c.d_model = 16;
  c.n_heads = 32;  // 16 % 32 != 0
  CHECK(validate(c).code() == Code::kInvalidArgument);
}

TEST_CASE("rotary dim must be even and at most head_dim, theta positive") {
  Config c = base();
  c.rope.rotary_dim = 33;
  CHECK(message_of(c).find("rotary dim 33 is odd") != std::string::npos);
  c.rope.rotary_dim = 130;
  CHECK(message_of(c).find("rotary dim 130 is larger than head_dim 128") != std::string::npos);
  c.rope.rotary_dim = 32;
  CHECK(validate(c).ok());
  c.rope.theta = 0;
  CHECK(message_of(c).find("rope_theta 0 must be a positive finite number") != std::string::npos);
  c.rope.theta = std::numeric_limits<float>::quiet_NaN();
  CHECK(validate(c).code() == Code::kInvalidArgument);
  c.rope.style = RopeStyle::kNone;  // no rope: its fields do not matter
  CHECK(validate(c).ok());
}

TEST_CASE("rope_scaling factors must make sense, unknown scaling types still plan") {
  Config c = base();
  c.rope.scaling = RopeScaling::kLinear;
  c.rope.factor = 0;
  CHECK(message_of(c).find("rope_scaling factor 0 must be a positive finite number") != std::string::npos);
  c.rope.scaling = RopeScaling::kLlama3;
  c.rope.factor = 8;
  c.rope.low_freq_factor = 4;
  c.rope.high_freq_factor = 1;
  CHECK(message_of(c).find("rope_scaling llama3 needs 0 < low_freq_factor < high_freq_factor") != std::string::npos);
  c.rope.low_freq_factor = 1;
  c.rope.high_freq_factor = 4;
  CHECK(validate(c).ok());
  c.rope.scaling = RopeScaling::kOther;
  CHECK(validate(c).ok());
}

TEST_CASE("window above max_seq, negative or non-finite softcap and scales are errors") {
  Config c = base();
  c.window = 8192;
  CHECK(message_of(c).find("sliding_window 8192 is larger than max_position_embeddings 4096") != std::string::npos);
  c.window = 4096;
  CHECK(validate(c).ok());
  c = base();
  c.softcap = -1;
  CHECK(message_of(c).find("attn_logit_softcapping -1 must be 0 (off) or positive") != std::string::npos);
  c.softcap = std::numeric_limits<float>::infinity();
  CHECK_FALSE(validate(c).ok());
  c = base();
  c.query_pre_attn_scalar = -2;
  CHECK(message_of(c).find("query_pre_attn_scalar -2") != std::string::npos);
  c = base();
  c.scale = std::numeric_limits<float>::quiet_NaN();
  CHECK(message_of(c).find("scale nan") != std::string::npos);
}

TEST_CASE("sink tokens need a larger window, ALiBi a positive max bias") {
  Config c = base();
  c.sink_tokens = 4;
  CHECK(message_of(c).find("sink_tokens 4 needs a sliding window (sliding_window is 0)") != std::string::npos);
  c.window = 4;
  CHECK(message_of(c).find("sink_tokens 4 must be less than sliding_window 4") != std::string::npos);
  c.window = 5;
  CHECK(validate(c).ok());
  c = base();
  c.alibi = true;
  CHECK(validate(c).ok());
  for (float bad : {0.0f, -8.0f, std::numeric_limits<float>::infinity(), std::numeric_limits<float>::quiet_NaN()}) {
    c.alibi_max_bias = bad;
    CHECK(message_of(c).find("alibi_bias_max") != std::string::npos);
  }
  c.alibi = false;  // the bias is not read without ALiBi
  CHECK(validate(c).ok());
}

TEST_CASE("head_dim above the kernels' limit and too many heads are rejected") {
  Config c = base();
  c.head_dim = 1024;
  CHECK(validate(c).code() == Code::kUnsupported);
  CHECK(message_of(c).find("head_dim 1024 is above the largest supported head size 576") != std::string::npos);
  c = base();
  c.d_model = 4096;
  c.n_heads = 2048;
  CHECK(message_of(c).find("num_heads 2048 is above the supported maximum 1024") != std::string::npos);
}

TEST_CASE("enum fields out of range are errors, not UB") {
  Config c = base();
  c.kv_dtype = static_cast<DType>(70);
  CHECK(message_of(c).find("kv dtype unknown (70) is not one of f32, f16, bf16") != std::string::npos);
  c = base();
  c.rope.style = static_cast<RopeStyle>(9);
  CHECK(message_of(c).find("rope style 9") != std::string::npos);
}

TEST_CASE("kv_rotation: only over q8_0 or q4_0, only a head_dim it rotates, every layout's bytes unchanged") {
  Config c = base();
  c.kv_rotation = KvRotation::kHadamard;
  for (DType dt : {DType::kF32, DType::kF16, DType::kBF16}) {
    c.kv_dtype = dt;
    CHECK(message_of(c) == std::string("kv_rotation hadamard needs kv_dtype q8_0 or q4_0, not kv_dtype ") +
                               dtype_name(dt) +
                               " (the rotation spreads a quantized block's outliers; other dtypes "
                               "gain nothing)");
  }
  for (DType dt : {DType::kQ8_0, DType::kQ4_0}) {
    c.kv_dtype = dt;
    for (uint32_t hd : {32u, 64u, 96u, 128u, 256u, 288u, 512u}) {
      c.head_dim = hd;
      INFO(std::string(dtype_name(dt)) << " head_dim " << hd);
      CHECK(validate(c).ok());
    }
    for (uint32_t hd : {16u, 40u, 80u, 100u}) {
      c.head_dim = hd;
      INFO(std::string(dtype_name(dt)) << " head_dim " << hd);
      CHECK(message_of(c).find("kv_rotation hadamard cannot rotate head_dim " + std::to_string(hd)) == 0);
    }
  }
  CHECK(std::string(kv_rotation_name(KvRotation::kHadamard)) == "hadamard");
  CHECK(std::string(kv_rotation_name(KvRotation::kNone)) == "none");
  KvRotation r = KvRotation::kNone;
  CHECK(kv_rotation_from_name("hadamard", &r));
  CHECK(r == KvRotation::kHadamard);
  CHECK_FALSE(kv_rotation_from_name("hadamar", &r));
  CHECK_FALSE(kv_rotation_from_name("hadamards", &r));
  CHECK_FALSE(kv_rotation_from_name(nullptr, &r));
}

TEST_CASE("byte counts that overflow 64 bits are an error") {
  Config c = base();
  c.d_model = 4000000000u;
  c.n_heads = 1000;
  c.head_dim = 512;
  c.n_kv_heads = 1000;
  c.max_seq = 4000000000u;
  c.n_layers = 4000000000u;
  CHECK(validate(c).ok());  // each field is plausible on its own
  const Result<Plan> p = make_plan(c);
  REQUIRE_FALSE(p.ok());
  CHECK(p.status().code() == Code::kOutOfRange);
  CHECK(std::string(p.status().message()).find("does not fit in 64 bits") != std::string::npos);
}

TEST_CASE("set_name truncates and terminates") {
  Config c;
  c.set_name("a-model-name-that-is-far-longer-than-forty-seven-characters-in-total");
  CHECK(std::string(c.name).size() == kMaxNameLength);
  c.set_name(nullptr);
  CHECK(std::string(c.name).empty());
}

}  // namespace
}  // namespace headway
