// Hostile input at every public entry, as one table per area: each row is a call that must fail
// with a given code and a message that names the field and the value at fault ("needles"), and,
// where the call has state, leave it exactly as it was (the KV bytes compared with memcmp, size(),
// threads(), bound()). Areas: spec strings, validate/make_plan, Arena, KvCache, attend,
// ThreadPool, CpuBackend/dense_plan, AttentionLayer's sink logits and packed batches,
// Session::encode, Model::load_state and state files, config.json, GGUF metadata and tensors, .npy, tokenizer files and
// the C API (headway.h: the same checks, through codes and caller-owned memory).
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "headway/arena.hpp"
#include "headway/attention.hpp"
#include "headway/backend.hpp"
#include "headway/encoder.hpp"
#include "headway/headway.h"
#include "headway/kv_cache.hpp"
#include "headway/layer.hpp"
#include "headway/session.hpp"
#include "headway/tools/state_file.hpp"
#include "headway/tools/model_files.hpp"
#include "headway/tools/npy.hpp"
#include "headway/plan.hpp"
#include "headway/tools/plan_json.hpp"
#include "runtime/formats/gguf_tensors.hpp"
#include "tests/formats/gguf_writer.hpp"
#include "tests/support/tiny_model.hpp"
#include "headway/tools/chat_template.hpp"
#include "headway/tools/tokenizer.hpp"

namespace headway {
namespace {

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();

struct Row {
  const char* what;
  std::function<Status()> call;
  Code code;
  std::vector<const char*> needles;  // every one must appear in the message
};

void check_rows(const std::vector<Row>& rows) {
  for (const Row& r : rows) {
    const Status s = r.call();
    const std::string message = s.message();
    const std::string context = std::string(r.what) + " -> " + message;
    INFO(context);
    CHECK_FALSE(s.ok());
    CHECK(std::string(code_name(s.code())) == std::string(code_name(r.code)));
    for (const char* n : r.needles) {
      const std::string needle = n;
      const std::string missing = "missing: " + needle;
      INFO(missing);
      CHECK(message.find(needle) != std::string::npos);
    }
  }
}

template <class T>
Status status_of(const Result<T>& r) {
  return r.ok() ? Status() : r.status();
}

struct Aligned {
  explicit Aligned(size_t bytes) : size((bytes + 63) / 64 * 64), p(std::aligned_alloc(64, size ? size : 64)) {
    std::memset(p, 0, size ? size : 64);
  }
  ~Aligned() { std::free(p); }
  Aligned(const Aligned&) = delete;
  Aligned& operator=(const Aligned&) = delete;
  size_t size;
  void* p;
};

Status spec_plan(const char* spec) {
  const Result<Config> c = parse_spec(spec);
  if (!c.ok()) return c.status();
  return status_of(make_plan(c.value()));
}

TEST_CASE("bad input: spec strings name the key and the value") {
  const std::string long_key(300, 'k');
  const std::string long_value = "d_model=" + std::string(300, '7');
  check_rows({
      {"null", [] { return status_of(parse_spec(nullptr)); }, Code::kInvalidArgument, {"spec: no text given"}},
      {"empty", [] { return status_of(parse_spec("")); }, Code::kInvalidArgument, {"spec: empty"}},
      {"blank", [] { return status_of(parse_spec("  , ")); }, Code::kInvalidArgument, {"spec: empty"}},
      {"key without value",
       [] { return status_of(parse_spec("d_model")); },
       Code::kInvalidArgument,
       {"'d_model' has no value"}},
      {"empty value",
       [] { return status_of(parse_spec("heads=")); },
       Code::kInvalidArgument,
       {"heads= has an empty value"}},
      {"not a number", [] { return status_of(parse_spec("d_model=abc")); }, Code::kInvalidArgument, {"d_model=abc"}},
      {"negative", [] { return status_of(parse_spec("heads=-4")); }, Code::kInvalidArgument, {"heads=-4"}},
      {"fraction", [] { return status_of(parse_spec("heads=4.5")); }, Code::kInvalidArgument, {"heads=4.5"}},
      {"past u32", [] { return status_of(parse_spec("ctx=4294967296")); }, Code::kInvalidArgument, {"ctx=4294967296"}},
      {"huge",
       [] { return status_of(parse_spec("ctx=99999999999999999999999")); },
       Code::kInvalidArgument,
       {"ctx=99999999999999999999999"}},
      {"nan theta", [] { return status_of(parse_spec("rope_theta=nan")); }, Code::kInvalidArgument, {"rope_theta=nan"}},
      {"inf softcap", [] { return status_of(parse_spec("softcap=inf")); }, Code::kInvalidArgument, {"softcap=inf"}},
      {"negative scale", [] { return status_of(parse_spec("scale=-1")); }, Code::kInvalidArgument, {"scale=-1"}},
      {"float past f32",
       [] { return status_of(parse_spec("softcap=1e39")); },
       Code::kInvalidArgument,
       {"softcap=1e39"}},
      {"bad bool", [] { return status_of(parse_spec("causal=2")); }, Code::kInvalidArgument, {"causal=2"}},
      {"bad dtype", [] { return status_of(parse_spec("kv_dtype=f8")); }, Code::kInvalidArgument, {"kv_dtype=f8"}},
      {"bad kv_rotation",
       [] { return status_of(parse_spec("kv_rotation=yes")); },
       Code::kInvalidArgument,
       {"kv_rotation=yes is not one of none, hadamard"}},
      {"bad rope", [] { return status_of(parse_spec("rope=alibi")); }, Code::kInvalidArgument, {"rope=alibi"}},
      {"unknown key",
       [] { return status_of(parse_spec("d_model=8 colour=red")); },
       Code::kInvalidArgument,
       {"unknown key 'colour'"}},
      {"over-long key",
       [&] { return status_of(parse_spec((long_key + "=1").c_str())); },
       Code::kInvalidArgument,
       {"longer than"}},
      {"over-long value",
       [&] { return status_of(parse_spec(long_value.c_str())); },
       Code::kInvalidArgument,
       {"d_model", "longer than"}},
      {"sliding pattern 0",
       [] { return status_of(parse_spec("sliding_pattern=0")); },
       Code::kInvalidArgument,
       {"sliding_pattern=0"}},
      {"nope interval 0",
       [] { return status_of(parse_spec("nope_interval=0")); },
       Code::kInvalidArgument,
       {"nope_interval=0"}},
      {"bad layer type",
       [] { return status_of(parse_spec("layer_types=sfc")); },
       Code::kInvalidArgument,
       {"layer_types=sfc", "'c'"}},
      {"bad rope layer",
       [] { return status_of(parse_spec("rope_layers=112")); },
       Code::kInvalidArgument,
       {"rope_layers=112", "'2'"}},
      {"negative local theta",
       [] { return status_of(parse_spec("rope_local_theta=-5")); },
       Code::kInvalidArgument,
       {"rope_local_theta=-5"}},
      {"over-long layer list",
       [] { return status_of(parse_spec(("layer_types=" + std::string(129, 's')).c_str())); },
       Code::kInvalidArgument,
       {"layer_types", "longer than 128"}},
      {"list shorter than layers",
       [] { return spec_plan("d_model=64 heads=4 ctx=64 layers=3 window=8 layer_types=sf"); },
       Code::kInvalidArgument,
       {"layer_types has 2 entries", "num_hidden_layers is 3"}},
      {"pattern without window",
       [] { return spec_plan("d_model=64 heads=4 ctx=64 layers=4 sliding_pattern=2"); },
       Code::kInvalidArgument,
       {"sliding_pattern", "sliding_window is 0"}},
      {"NoPE without RoPE",
       [] { return spec_plan("d_model=64 heads=4 ctx=64 layers=4 rope_layers=1101"); },
       Code::kInvalidArgument,
       {"rope_layers", "rope none"}},
  });
}

TEST_CASE("bad input: validate and make_plan name the field and the value") {
  auto plan_of = [](auto edit) {
    return [edit] {
      Config c;
      c.d_model = 256;
      c.n_heads = 4;
      c.max_seq = 64;
      c.rope.style = RopeStyle::kNeox;
      edit(c);
      return status_of(make_plan(c));
    };
  };
  check_rows({
      {"sink tokens without a window",
       plan_of([](Config& c) { c.sink_tokens = 4; }),
       Code::kInvalidArgument,
       {"sink_tokens 4", "sliding_window is 0"}},
      {"sink tokens past the window",
       plan_of([](Config& c) {
         c.window = 8;
         c.sink_tokens = 9;
       }),
       Code::kInvalidArgument,
       {"sink_tokens 9", "sliding_window 8"}},
      {"ALiBi max bias NaN",
       plan_of([](Config& c) {
         c.alibi = true;
         c.alibi_max_bias = kNaN;
       }),
       Code::kInvalidArgument,
       {"alibi_bias_max nan"}},
      {"d_model 0", plan_of([](Config& c) { c.d_model = 0; }), Code::kInvalidArgument, {"hidden_size", "got 0"}},
      {"heads 0", plan_of([](Config& c) { c.n_heads = 0; }), Code::kInvalidArgument, {"num_heads", "got 0"}},
      {"heads past the limit",
       plan_of([](Config& c) {
         c.n_heads = 4096;
         c.d_model = 4096;
       }),
       Code::kInvalidArgument,
       {"num_heads 4096", "1024"}},
      {"kv heads above heads",
       plan_of([](Config& c) { c.n_kv_heads = 8; }),
       Code::kInvalidArgument,
       {"num_key_value_heads 8", "num_heads 4"}},
      {"kv heads not dividing",
       plan_of([](Config& c) { c.n_kv_heads = 3; }),
       Code::kInvalidArgument,
       {"num_heads 4 is not divisible by num_key_value_heads 3"}},
      {"d_model not dividing",
       plan_of([](Config& c) { c.d_model = 250; }),
       Code::kInvalidArgument,
       {"hidden_size 250 is not divisible by num_heads 4"}},
      {"head_dim past the kernels",
       plan_of([](Config& c) { c.head_dim = 1024; }),
       Code::kUnsupported,
       {"head_dim 1024", "576"}},
      {"ctx 0", plan_of([](Config& c) { c.max_seq = 0; }), Code::kInvalidArgument, {"max_seq", "got 0"}},
      {"layers 0", plan_of([](Config& c) { c.n_layers = 0; }), Code::kInvalidArgument, {"n_layers", "got 0"}},
      {"rope theta NaN", plan_of([](Config& c) { c.rope.theta = kNaN; }), Code::kInvalidArgument, {"rope_theta nan"}},
      {"rope theta Inf", plan_of([](Config& c) { c.rope.theta = kInf; }), Code::kInvalidArgument, {"rope_theta inf"}},
      {"rope theta 0", plan_of([](Config& c) { c.rope.theta = 0.0f; }), Code::kInvalidArgument, {"rope_theta 0"}},
      {"rope theta negative",
       plan_of([](Config& c) { c.rope.theta = -5.0f; }),
       Code::kInvalidArgument,
       {"rope_theta -5"}},
      {"rotary dim odd", plan_of([](Config& c) { c.rope.rotary_dim = 7; }), Code::kInvalidArgument, {"7"}},
      {"rotary dim past head_dim",
       plan_of([](Config& c) { c.rope.rotary_dim = 66; }),
       Code::kInvalidArgument,
       {"rotary dim 66", "head_dim 64"}},
      {"rope style out of range",
       plan_of([](Config& c) { c.rope.style = static_cast<RopeStyle>(9); }),
       Code::kInvalidArgument,
       {"rope style 9"}},
      {"rope factor NaN",
       plan_of([](Config& c) {
         c.rope.scaling = RopeScaling::kLinear;
         c.rope.factor = kNaN;
       }),
       Code::kInvalidArgument,
       {"factor nan"}},
      {"softcap NaN",
       plan_of([](Config& c) { c.softcap = kNaN; }),
       Code::kInvalidArgument,
       {"attn_logit_softcapping nan"}},
      {"softcap Inf",
       plan_of([](Config& c) { c.softcap = kInf; }),
       Code::kInvalidArgument,
       {"attn_logit_softcapping inf"}},
      {"softcap negative",
       plan_of([](Config& c) { c.softcap = -1.0f; }),
       Code::kInvalidArgument,
       {"attn_logit_softcapping -1"}},
      {"scale NaN", plan_of([](Config& c) { c.scale = kNaN; }), Code::kInvalidArgument, {"scale nan"}},
      {"scale Inf", plan_of([](Config& c) { c.scale = kInf; }), Code::kInvalidArgument, {"scale inf"}},
      {"query_pre_attn_scalar negative",
       plan_of([](Config& c) { c.query_pre_attn_scalar = -2.0f; }),
       Code::kInvalidArgument,
       {"query_pre_attn_scalar -2"}},
      {"kv dtype out of range",
       plan_of([](Config& c) { c.kv_dtype = static_cast<DType>(70); }),
       Code::kInvalidArgument,
       {"kv dtype unknown (70)"}},
      {"a weight format as the kv dtype",
       plan_of([](Config& c) { c.kv_dtype = DType::kQ5_1; }),
       Code::kInvalidArgument,
       {"kv dtype q5_1 (7) is not one of f32, f16, bf16, q8_0, q4_0"}},
      {"kv_rotation over an f16 cache",
       plan_of([](Config& c) { c.kv_rotation = KvRotation::kHadamard; }),
       Code::kInvalidArgument,
       {"kv_rotation hadamard needs kv_dtype q8_0 or q4_0, not kv_dtype f16"}},
      {"kv_rotation over a head_dim it cannot rotate",
       plan_of([](Config& c) {
         c.kv_dtype = DType::kQ4_0;
         c.head_dim = 80;
         c.kv_rotation = KvRotation::kHadamard;
       }),
       Code::kInvalidArgument,
       {"kv_rotation hadamard cannot rotate head_dim 80", "at least 32"}},
      {"kv_rotation out of the enum",
       plan_of([](Config& c) {
         c.kv_dtype = DType::kQ8_0;
         c.kv_rotation = static_cast<KvRotation>(9);
       }),
       Code::kInvalidArgument,
       {"kv_rotation 9 is not one of none, hadamard"}},
      {"byte counts past 64 bits",
       plan_of([](Config& c) {
         c.d_model = 1 << 17;
         c.n_heads = 256;
         c.max_seq = 0xffffffffu;
         c.n_layers = 0xffffffffu;
       }),
       Code::kOutOfRange,
       {"does not fit in 64 bits", "max_seq 4294967295"}},
      {"MLA whose attention head is not its latent row",
       plan_of([](Config& c) {
         c.mla = MlaShape{64, 0, 32, 16, 24};
         c.n_kv_heads = 1;
       }),
       Code::kInvalidArgument,
       {"MLA: the attention runs on one shared row of kv_lora_rank + qk_rope_head_dim = 80 values: head_dim must be 80 "
        "and n_kv_heads 1 (got 0 and 1)"}},
      {"MLA with an odd rope part",
       plan_of([](Config& c) {
         c.mla = MlaShape{64, 0, 32, 15, 24};
         c.head_dim = 79;
         c.n_kv_heads = 1;
       }),
       Code::kInvalidArgument,
       {"MLA: qk_rope_head_dim 15 must be even and positive"}},
      {"MLA rows past the kernels",
       plan_of([](Config& c) {
         c.mla = MlaShape{1024, 0, 128, 64, 128};
         c.head_dim = 1088;
         c.n_kv_heads = 1;
       }),
       Code::kUnsupported,
       {"MLA: kv_lora_rank 1024 + qk_rope_head_dim 64 = 1088 values per cache row, more than the 576"}},
      {"a layer sharing KV with no earlier layer of its kind (Gemma 3n, Gemma 4)",
       plan_of([](Config& c) {
         c.window = 8;
         c.n_layers = 4;
         c.layers.sliding_pattern = 2;
         c.layers.kv_shared_layers = 3;
       }),
       Code::kInvalidArgument,
       {"layer 1 reads the cache of an earlier full layer (num_kv_shared_layers 3), and no layer before 1 is one"}},
      {"a layer sharing KV that rotates where its owner does not",
       plan_of([](Config& c) {
         c.n_layers = 4;
         c.layers.kv_shared_layers = 1;
         c.layers.rope.count = 4;
         for (uint32_t l = 0; l < 4; ++l) c.layers.rope.set(l, l != 2);
       }),
       Code::kInvalidArgument,
       {"layer 3 reads layer 2's cache (num_kv_shared_layers 1), but has RoPE where layer 2 has none"}},
      {"layers sharing KV in a bidirectional stack",
       plan_of([](Config& c) {
         c.n_layers = 2;
         c.causal = false;
         c.layers.kv_shared_layers = 1;
       }),
       Code::kUnsupported,
       {"num_kv_shared_layers 1: layers read an earlier layer's K/V cache only in a causal stack",
        "bidirectional attention"}},
      {"full layers of their own head shape with MLA",
       plan_of([](Config& c) {
         c.mla = MlaShape{64, 0, 32, 16, 32};
         c.head_dim = 80;
         c.n_kv_heads = 1;
         c.rope.rotary_dim = 16;
         c.layers.full_head_dim = 128;
       }),
       Code::kInvalidArgument,
       {"full_head_dim 128 / full_kv_heads 0 with MLA (kv_lora_rank 64): its layers share one latent row shape"}},
      {"full layers of a head shape past the kernels (Gemma 4)",
       plan_of([](Config& c) {
         c.window = 8;
         c.n_layers = 2;
         c.layers.sliding_pattern = 2;
         c.layers.full_head_dim = 1024;
       }),
       Code::kUnsupported,
       {"head_dim 1024 is above the largest supported head size 576"}},
      {"linear attention layers (Qwen3.5) without their shape",
       plan_of([](Config& c) {
         c.n_layers = 4;
         c.layers.linear.count = 4;
         for (uint32_t i = 0; i < 3; ++i) c.layers.linear.set(i, true);
       }),
       Code::kInvalidArgument,
       {"3 linear_attention layers (Gated DeltaNet) need linear_num_key_heads 0", "linear_conv_kernel_dim 0"}},
      {"Gated DeltaNet value heads that are not a multiple of its key heads",
       plan_of([](Config& c) {
         c.n_layers = 2;
         c.layers.linear.count = 2;
         c.layers.linear.set(0, true);
         c.gated_delta = {2, 3, 16, 16, 4, false};
       }),
       Code::kInvalidArgument,
       {"linear_num_value_heads 3 is not a multiple of linear_num_key_heads 2"}},
      {"spec with a bad divisor",
       [] { return spec_plan("d_model=800 heads=12 ctx=128"); },
       Code::kInvalidArgument,
       {"hidden_size 800 is not divisible by num_heads 12"}},
      // Found by fuzz_spec: the search for a divisor above num_heads ran up to d_model (seconds
      // for a large prime); it stops at the head limit now.
      {"a large prime d_model",
       [] { return spec_plan("d_model=2016666689 heads=6 kv_heads=1 ctx=128"); },
       Code::kInvalidArgument,
       {"hidden_size 2016666689 is not divisible by num_heads 6", "1 (head_dim 2016666689)"}},
  });
  // 2062 = 2 · 1031: the next divisor above 4 is 1031, past the head limit, so it is not offered.
  const Status s = spec_plan("d_model=2062 heads=4 ctx=128");
  CHECK(std::string(s.message()).find("2 (head_dim 1031)") != std::string::npos);
  CHECK(std::string(s.message()).find("1031 (head_dim 2)") == std::string::npos);
}

// A plan made without validation whose byte counts overflow 64 bits (plan_for flags it; its
// byte counts are 0 from the overflow on, its shapes are not).
Plan overflowing_plan() {
  Config c;
  c.d_model = 1 << 17;
  c.n_heads = 256;
  c.max_seq = 0xffffffffu;
  c.n_layers = 0xffffffffu;
  return plan_for(c, {});
}

// A small valid plan: 4 heads of 16 over 2 kv heads, 40 positions, chunks of 8.
Plan small_plan(uint32_t window = 0, DType kv = DType::kF16) {
  Config c;
  c.kv_dtype = kv;
  c.d_model = 64;
  c.n_heads = 4;
  c.n_kv_heads = 2;
  c.max_seq = 40;
  c.window = window;
  c.rope.style = RopeStyle::kNeox;
  PlanOptions o;
  o.max_tokens = 8;
  return make_plan(c, o).value();
}

TEST_CASE("bad input: Arena::bind rejects null, misaligned and short buffers and keeps its binding") {
  const Plan p = small_plan();
  Aligned mem(p.arena_bytes + 64);
  Arena arena;
  check_rows({
      {"null", [&] { return arena.bind(p, nullptr, p.arena_bytes); }, Code::kInvalidArgument, {"buffer is null"}},
      {"misaligned",
       [&] { return arena.bind(p, static_cast<char*>(mem.p) + 8, p.arena_bytes); },
       Code::kInvalidArgument,
       {"not 64-byte aligned"}},
      {"short",
       [&] { return arena.bind(p, mem.p, p.arena_bytes - 1); },
       Code::kInvalidArgument,
       {std::to_string(p.arena_bytes - 1).c_str(), "the plan needs"}},
      {"an overflowing plan",
       [&] { return arena.bind(overflowing_plan(), mem.p, mem.size); },
       Code::kInvalidArgument,
       {"plan is not valid"}},
  });
  CHECK_FALSE(arena.bound());
  REQUIRE(arena.bind(p, mem.p, mem.size).ok());
  uint8_t* kv = arena.kv_layer(0);
  CHECK_FALSE(arena.bind(p, nullptr, 0).ok());
  CHECK(arena.bound());
  CHECK(arena.kv_layer(0) == kv);
}

TEST_CASE("bad input: KvCache calls in the wrong order, bad arguments and overflow leave the cache as it was") {
  // The same rows over an f16 cache and a q4_0 one (quantized on append: the bytes compared are
  // its blocks).
  for (DType kv : {DType::kF16, DType::kQ4_0}) {
    INFO(dtype_name(kv));
    const Plan p = small_plan(0, kv);
    const Plan ring = small_plan(16, kv);
    std::vector<float> k(size_t{40} * p.kv_width, 0.25f), v(k.size(), -0.5f), q(size_t{40} * p.q_width, 1.0f);
    std::vector<float> o(q.size());
    Aligned ws(1 << 20);
    const float inf_sinks[4] = {0.0f, 1.0f, kInf, -1.0f};

    KvCache unbound;
    check_rows({
        {"append before bind",
         [&] { return unbound.append(k.data(), p.kv_width, v.data(), p.kv_width, 1); },
         Code::kFailedPrecondition,
         {"append before bind"}},
        {"attend before bind",
         [&] { return unbound.attend(q.data(), p.q_width, o.data(), p.q_width, 1, nullptr, ws.p, ws.size); },
         Code::kFailedPrecondition,
         {"attend before bind"}},
        {"truncate before bind",
         [&] { return unbound.truncate(0); },
         Code::kFailedPrecondition,
         {"truncate before bind"}},
    });
    CHECK(unbound.size() == 0);

    Aligned region(p.kv_bytes_per_layer);
    std::vector<double> rope(rope_frequency_count(p.config.rope, p.head_dim));
    KvCache::make_rope_table(p, rope.data());
    KvCache cache;
    check_rows({
        {"bind null", [&] { return cache.bind(p, nullptr, region.size); }, Code::kInvalidArgument, {"region is null"}},
        {"bind short",
         [&] { return cache.bind(p, region.p, p.kv_bytes_per_layer - 1); },
         Code::kInvalidArgument,
         {std::to_string(p.kv_bytes_per_layer - 1).c_str(), std::to_string(p.kv_bytes_per_layer).c_str()}},
        // Its kv_bytes_per_layer is 0, so any region looked big enough; appends wrote past it.
        {"bind an overflowing plan",
         [&] { return cache.bind(overflowing_plan(), region.p, region.size); },
         Code::kInvalidArgument,
         {"plan is not valid"}},
        {"bind without the RoPE table",
         [&] { return cache.bind(p, region.p, region.size); },
         Code::kInvalidArgument,
         {"frequency table is null"}},
    });
    REQUIRE(cache.bind(p, region.p, region.size, rope.data()).ok());
    REQUIRE(cache.append(k.data(), p.kv_width, v.data(), p.kv_width, 5).ok());
    const std::vector<uint8_t> before(static_cast<uint8_t*>(region.p), static_cast<uint8_t*>(region.p) + region.size);

    check_rows({
        {"null k",
         [&] { return cache.append(nullptr, p.kv_width, v.data(), p.kv_width, 1); },
         Code::kInvalidArgument,
         {"null k or v"}},
        {"null v",
         [&] { return cache.append(k.data(), p.kv_width, nullptr, p.kv_width, 1); },
         Code::kInvalidArgument,
         {"null k or v"}},
        {"short stride",
         [&] { return cache.append(k.data(), 3, v.data(), p.kv_width, 1); },
         Code::kInvalidArgument,
         {"3 (k)", "kv_width 32"}},
        {"past the context",
         [&] { return cache.append(k.data(), p.kv_width, v.data(), p.kv_width, 36); },
         Code::kOutOfRange,
         {"appending 36 tokens at position 5", "context of 40"}},
        {"a count near 2^32",
         [&] { return cache.append(k.data(), p.kv_width, v.data(), p.kv_width, 0xffffffffu); },
         Code::kOutOfRange,
         {"4294967295"}},
        {"attend 0 queries",
         [&] { return cache.attend(q.data(), p.q_width, o.data(), p.q_width, 0, nullptr, ws.p, ws.size); },
         Code::kInvalidArgument,
         {"attend for 0 queries"}},
        {"attend more queries than held",
         [&] { return cache.attend(q.data(), p.q_width, o.data(), p.q_width, 6, nullptr, ws.p, ws.size); },
         Code::kInvalidArgument,
         {"6 queries", "holds 5 tokens"}},
        {"attend null q",
         [&] { return cache.attend(nullptr, p.q_width, o.data(), p.q_width, 1, nullptr, ws.p, ws.size); },
         Code::kInvalidArgument,
         {"q is null"}},
        {"attend short workspace",
         [&] { return cache.attend(q.data(), p.q_width, o.data(), p.q_width, 1, nullptr, ws.p, 64); },
         Code::kInvalidArgument,
         {"workspace is 64 bytes"}},
        {"attend short q stride",
         [&] { return cache.attend(q.data(), 5, o.data(), p.q_width, 1, nullptr, ws.p, ws.size); },
         Code::kInvalidArgument,
         {"q_token_stride 5"}},
        {"attend with an Inf sink",
         [&] { return cache.attend(q.data(), p.q_width, o.data(), p.q_width, 1, nullptr, ws.p, ws.size, inf_sinks); },
         Code::kInvalidArgument,
         {"sinks[2] = inf"}},
        {"truncate past the size",
         [&] { return cache.truncate(6); },
         Code::kOutOfRange,
         {"truncate to 6 tokens", "holds 5"}},
        {"truncate to a count near 2^32",
         [&] { return cache.truncate(0xffffffffu); },
         Code::kOutOfRange,
         {"4294967295"}},
    });
    CHECK(cache.size() == 5);
    CHECK(std::memcmp(before.data(), region.p, region.size) == 0);

    // Filling the context exactly works; one more token does not, and changes nothing.
    REQUIRE(cache.append(k.data(), p.kv_width, v.data(), p.kv_width, 35).ok());
    const std::vector<uint8_t> full(static_cast<uint8_t*>(region.p), static_cast<uint8_t*>(region.p) + region.size);
    check_rows({{"one past a full cache",
                 [&] { return cache.append(k.data(), p.kv_width, v.data(), p.kv_width, 1); },
                 Code::kOutOfRange,
                 {"appending 1 tokens at position 40"}}});
    CHECK(cache.size() == 40);
    CHECK(std::memcmp(full.data(), region.p, region.size) == 0);

    // A window ring takes at most max_tokens at once.
    Aligned ring_region(ring.kv_bytes_per_layer);
    KvCache rc;
    REQUIRE(rc.bind(ring, ring_region.p, ring_region.size, rope.data()).ok());
    check_rows({{"ring chunk too large",
                 [&] { return rc.append(k.data(), ring.kv_width, v.data(), ring.kv_width, 9); },
                 Code::kOutOfRange,
                 {"appending 9 tokens at once", "8"}}});
    CHECK(rc.size() == 0);
    // A ring that wrapped refuses a truncate that needs tokens it overwrote (at most cache_rows −
    // window + 1 can go), and changes nothing.
    for (uint32_t at = 0; at < 4; ++at) REQUIRE(rc.append(k.data(), ring.kv_width, v.data(), ring.kv_width, 8).ok());
    const std::vector<uint8_t> wrapped(static_cast<uint8_t*>(ring_region.p),
                                       static_cast<uint8_t*>(ring_region.p) + ring_region.size);
    const uint32_t removable = ring.cache_rows - 16 + 1;
    const std::string rows_words = "ring of " + std::to_string(ring.cache_rows) + " rows (window 16)";
    const std::string most_words = "at most " + std::to_string(removable) + " tokens";
    check_rows({{"truncate a wrapped ring too far",
                 [&] { return rc.truncate(32 - removable - 1); },
                 Code::kFailedPrecondition,
                 {rows_words.c_str(), most_words.c_str(), "nothing changed"}}});
    CHECK(rc.size() == 32);
    CHECK(std::memcmp(wrapped.data(), ring_region.p, ring_region.size) == 0);
  }
}

TEST_CASE("bad input: attend and attention_workspace_bytes with hostile shapes and parameters") {
  std::vector<float> q(64, 1.0f), k(64, 1.0f), v(64, 1.0f), o(64, 0.0f);
  Aligned ws(1 << 16);
  auto call = [&](AttentionShape s, AttentionParams p) {
    return
        [&, s, p] { return attend(q.data(), k.data(), v.data(), DType::kF32, o.data(), s, p, nullptr, ws.p, ws.size); };
  };
  const AttentionShape good{2, 2, 2, 1, 16};
  const float nan_sinks[2] = {0.5f, kNaN};
  const float inf_sinks[2] = {-kInf, 1.0f};
  const float nan_slopes[2] = {0.5f, kNaN};
  AttentionParams sink_tokens_no_window;
  sink_tokens_no_window.sink_tokens = 1;
  AttentionParams sink_tokens_at_window;
  sink_tokens_at_window.sink_tokens = 7;
  sink_tokens_at_window.window = 7;
  AttentionParams bad_slopes;
  bad_slopes.alibi_slopes = nan_slopes;
  float slopes_out[2] = {0.0f, 0.0f};
  // Packed batches over good's 2 rows: lengths that start elsewhere, are empty, miss rows.
  const uint32_t cu_ones[3] = {0, 1, 2}, cu_from_1[3] = {1, 1, 2}, cu_empty[3] = {0, 0, 2}, cu_short[2] = {0, 1},
                 cu_huge[2] = {0, 0xffffffffu};
  auto packed = [](const uint32_t* cu_q, const uint32_t* cu_k, uint32_t n_seqs) {
    AttentionParams p;
    p.cu_seqlens_q = cu_q;
    p.cu_seqlens_k = cu_k;
    p.n_seqs = n_seqs;
    return p;
  };
  // Prefix and symmetric windows that the call cannot run.
  AttentionParams prefix_alone, prefix_past_keys, symmetric_no_window, symmetric_causal;
  prefix_alone.prefix = 1;
  prefix_past_keys.causal = true;
  prefix_past_keys.prefix = 3;
  symmetric_no_window.window_symmetric = true;
  symmetric_causal.window_symmetric = symmetric_causal.causal = true;
  symmetric_causal.window = 2;
  // General masks the call cannot read: both kinds at once, rows shorter than the keys.
  const uint8_t visible[4] = {1, 1, 1, 1};
  const float additive[4] = {0.0f, 0.0f, 0.0f, 0.0f};
  AttentionParams two_masks, short_mask_rows;
  two_masks.mask_bool = visible;
  two_masks.mask_additive = additive;
  short_mask_rows.mask_additive = additive;
  short_mask_rows.mask_row_stride = 1;
  AttentionParams prefix_past_sequence = packed(cu_ones, nullptr, 2);
  prefix_past_sequence.causal = true;
  prefix_past_sequence.prefix = 2;
  check_rows({
      {"packed: cu_seqlens_q from 1",
       call(good, packed(cu_from_1, nullptr, 2)),
       Code::kInvalidArgument,
       {"cu_seqlens_q[0] is 1"}},
      {"packed: an empty sequence",
       call(good, packed(cu_empty, nullptr, 2)),
       Code::kInvalidArgument,
       {"cu_seqlens_q[1] = 0", "sequence 0 has length 0"}},
      {"packed: lengths short of t_q",
       call(good, packed(cu_short, nullptr, 1)),
       Code::kInvalidArgument,
       {"cu_seqlens_q[n_seqs = 1] is 1", "t_q is 2"}},
      {"packed: a length near 2^32",
       call(good, packed(cu_huge, nullptr, 1)),
       Code::kInvalidArgument,
       {"is 4294967295", "t_q is 2"}},
      {"packed: keys' lengths short of t_kv",
       call(good, packed(cu_empty + 1, cu_short, 1)),
       Code::kInvalidArgument,
       {"cu_seqlens_k[n_seqs = 1] is 1", "t_kv is 2"}},
      {"packed: n_seqs 0", call(good, packed(cu_short, nullptr, 0)), Code::kInvalidArgument, {"n_seqs 0"}},
      {"packed: cu_seqlens_k alone",
       call(good, packed(nullptr, cu_short, 1)),
       Code::kInvalidArgument,
       {"cu_seqlens_k without cu_seqlens_q"}},
      {"prefix without causal", call(good, prefix_alone), Code::kInvalidArgument, {"prefix 1 needs causal"}},
      {"prefix past the keys", call(good, prefix_past_keys), Code::kInvalidArgument, {"prefix 3", "2 keys"}},
      {"a symmetric window without a window",
       call(good, symmetric_no_window),
       Code::kInvalidArgument,
       {"symmetric window needs a window and no causal (window 0, causal false)"}},
      {"a symmetric causal window", call(good, symmetric_causal), Code::kInvalidArgument, {"(window 2, causal true)"}},
      {"prefix past a sequence",
       call(good, prefix_past_sequence),
       Code::kInvalidArgument,
       {"prefix 2 is longer than sequence 0's 1 key;"}},
      {"a bool and an additive mask",
       call(good, two_masks),
       Code::kInvalidArgument,
       {"mask_bool and mask_additive are both set"}},
      {"mask rows shorter than t_kv",
       call(good, short_mask_rows),
       Code::kInvalidArgument,
       {"mask_row_stride 1 is less than t_kv 2"}},
      {"packed: workspace for an empty sequence",
       [&] { return status_of(attention_workspace_bytes(good, packed(cu_empty, nullptr, 2), 1)); },
       Code::kInvalidArgument,
       {"sequence 0 has length 0"}},
  });
  check_rows({
      {"head_dim past 512", call({2, 2, 2, 1, 4096}, {}), Code::kInvalidArgument, {"head_dim 4096"}},
      {"heads near 2^32", call({1, 1, 0xffffffffu, 1, 16}, {}), Code::kInvalidArgument, {"n_heads 4294967295"}},
      {"t_q near 2^32: workspace",
       call({0xffffffffu, 0xffffffffu, 1024, 1, 512}, {}),
       Code::kInvalidArgument,
       {"workspace"}},
      {"NaN scale", call(good, {kNaN, 0.0f, false, 0}), Code::kInvalidArgument, {"scale nan"}},
      {"-Inf scale", call(good, {-kInf, 0.0f, false, 0}), Code::kInvalidArgument, {"scale -inf"}},
      {"Inf softcap", call(good, {0.0f, kInf, false, 0}), Code::kInvalidArgument, {"softcap inf"}},
      {"NaN sink", call(good, {0.0f, 0.0f, false, 0, nan_sinks}), Code::kInvalidArgument, {"sinks[1] = nan"}},
      {"-Inf sink", call(good, {0.0f, 0.0f, false, 0, inf_sinks}), Code::kInvalidArgument, {"sinks[0] = -inf"}},
      {"sink tokens without a window",
       call(good, sink_tokens_no_window),
       Code::kInvalidArgument,
       {"sink_tokens 1", "window 0"}},
      {"sink tokens as many as the window",
       call(good, sink_tokens_at_window),
       Code::kInvalidArgument,
       {"sink_tokens 7", "window 7"}},
      {"NaN ALiBi slope", call(good, bad_slopes), Code::kInvalidArgument, {"alibi_slopes[1] = nan"}},
      {"alibi_slopes of 0 heads", [&] { return alibi_slopes(0, slopes_out); }, Code::kInvalidArgument, {"n_heads 0"}},
      {"alibi_slopes of 2000 heads",
       [&] { return alibi_slopes(2000, slopes_out); },
       Code::kInvalidArgument,
       {"n_heads 2000"}},
      {"alibi_slopes with max_bias -8",
       [&] { return alibi_slopes(2, slopes_out, -8.0f); },
       Code::kInvalidArgument,
       {"max_bias -8"}},
      {"alibi_slopes into null", [&] { return alibi_slopes(2, nullptr); }, Code::kInvalidArgument, {"null"}},
      {"workspace threads 0",
       [&] { return status_of(attention_workspace_bytes(good, 0)); },
       Code::kInvalidArgument,
       {"threads 0"}},
      {"workspace threads 257",
       [&] { return status_of(attention_workspace_bytes(good, 257)); },
       Code::kInvalidArgument,
       {"threads 257"}},
      {"workspace for heads 0",
       [&] {
         return status_of(attention_workspace_bytes({1, 1, 0, 0, 16}, 1));
       },
       Code::kInvalidArgument,
       {"n_heads 0"}},
  });
  for (const float x : o) CHECK(x == 0.0f);  // nothing was written by any rejected call
  CHECK(slopes_out[0] == 0.0f);
  CHECK(slopes_out[1] == 0.0f);
}

TEST_CASE("bad input: AttentionOp in the wrong state, with hostile shapes, tensors and workspaces") {
  std::vector<float> q(64, 1.0f), k(64, 1.0f), v(64, 1.0f), o(64, 0.0f);
  Aligned ws(1 << 16);
  const AttentionShape good{2, 2, 2, 1, 16};
  AttentionOp op;
  auto reshape = [&](AttentionShape s, AttentionParams p, DType t, uint32_t threads) {
    return [&, s, p, t, threads] { return op.reshape(s, p, t, threads); };
  };
  auto run = [&](const float* qp, const void* kp, void* w, size_t bytes) {
    return [&, qp, kp, w, bytes] { return op.run(qp, kp, v.data(), o.data(), nullptr, w, bytes); };
  };
  check_rows({{"run before reshape",
               run(q.data(), k.data(), ws.p, ws.size),
               Code::kFailedPrecondition,
               {"run before reshape"}}});
  REQUIRE(op.reshape(good, {}, DType::kF32, 1).ok());
  check_rows({
      {"head_dim past 512", reshape({2, 2, 2, 1, 4096}, {}, DType::kF32, 1), Code::kInvalidArgument, {"head_dim 4096"}},
      {"heads near 2^32",
       reshape({1, 1, 0xffffffffu, 1, 16}, {}, DType::kF32, 1),
       Code::kInvalidArgument,
       {"n_heads 4294967295"}},
      {"NaN scale", reshape(good, {kNaN, 0.0f, false, 0}, DType::kF32, 1), Code::kInvalidArgument, {"scale nan"}},
      {"Inf softcap", reshape(good, {0.0f, kInf, false, 0}, DType::kF32, 1), Code::kInvalidArgument, {"softcap inf"}},
      {"kv dtype 90", reshape(good, {}, static_cast<DType>(90), 1), Code::kInvalidArgument, {"kv dtype unknown (90)"}},
      {"kv dtype q5_K",
       reshape(good, {}, DType::kQ5_K, 1),
       Code::kInvalidArgument,
       {"kv dtype q5_K (9) is not one of f32, f16, bf16, q8_0, q4_0"}},
      {"threads 0", reshape(good, {}, DType::kF32, 0), Code::kInvalidArgument, {"threads 0"}},
      {"threads 257", reshape(good, {}, DType::kF32, 257), Code::kInvalidArgument, {"threads 257"}},
      {"null q", run(nullptr, k.data(), ws.p, ws.size), Code::kInvalidArgument, {"q is null"}},
      {"null k", run(q.data(), nullptr, ws.p, ws.size), Code::kInvalidArgument, {"k is null"}},
      {"null workspace", run(q.data(), k.data(), nullptr, 0), Code::kInvalidArgument, {"workspace is null"}},
      {"short workspace", run(q.data(), k.data(), ws.p, 1), Code::kInvalidArgument, {"workspace is 1 bytes"}},
      {"misaligned workspace",
       run(q.data(), k.data(), static_cast<char*>(ws.p) + 1, ws.size - 64),
       Code::kInvalidArgument,
       {"64-byte aligned"}},
  });
  CHECK(op.shape().head_dim == 16);  // the rejected reshapes kept the good shape
  CHECK(op.run(q.data(), k.data(), v.data(), o.data(), nullptr, ws.p, ws.size).ok());
}

TEST_CASE("bad input: ThreadPool::create out of range keeps the pool it had") {
  ThreadPool pool;
  REQUIRE(pool.create(2).ok());
  const uint32_t threads = pool.threads();
  check_rows({
      {"0 threads", [&] { return pool.create(0); }, Code::kInvalidArgument, {"threads 0 is not in 1..256"}},
      {"257 threads", [&] { return pool.create(257); }, Code::kInvalidArgument, {"threads 257"}},
      {"2^32 - 1 threads", [&] { return pool.create(0xffffffffu); }, Code::kInvalidArgument, {"threads 4294967295"}},
  });
  CHECK(pool.threads() == threads);
  static int ran = 0;
  pool.run(
      3, [](void*, size_t) { ++ran; }, nullptr);
  CHECK(ran == 3);
}

TEST_CASE("bad input: CpuBackend and dense_plan") {
  const Plan p = small_plan();
  Plan invalid = plan_for(Config{}, {});  // never validated: all zeros
  const size_t need = CpuBackend::memory_bytes(p, 1);
  Aligned mem(need + 64);
  std::vector<float> k(size_t{40} * p.kv_width, 0.5f), q(size_t{8} * p.q_width, 1.0f), o(q.size());
  CpuBackend fresh;
  check_rows({
      {"create from an invalid plan",
       [&] { return fresh.create(invalid, nullptr, mem.p, mem.size); },
       Code::kInvalidArgument,
       {"plan is not valid"}},
      {"create with null memory",
       [&] { return fresh.create(p, nullptr, nullptr, need); },
       Code::kInvalidArgument,
       {"(null)", std::to_string(need).c_str()}},
      {"create with short memory",
       [&] { return fresh.create(p, nullptr, mem.p, need - 1); },
       Code::kInvalidArgument,
       {std::to_string(need - 1).c_str(), std::to_string(need).c_str()}},
      {"create with misaligned memory",
       [&] { return fresh.create(p, nullptr, static_cast<char*>(mem.p) + 4, need); },
       Code::kInvalidArgument,
       {"aligned"}},
      {"append before create",
       [&] { return fresh.append(k.data(), p.kv_width, k.data(), p.kv_width, 1); },
       Code::kFailedPrecondition,
       {"before bind"}},
      {"attend before create",
       [&] { return fresh.attend(q.data(), p.q_width, o.data(), p.q_width, 1); },
       Code::kFailedPrecondition,
       {"attend before create"}},
      {"dense before create",
       [&] {
         return fresh.attend_dense(q.data(), k.data(), k.data(), DType::kF32, o.data(), {1, 1, 4, 2, 16}, {});
       },
       Code::kFailedPrecondition,
       {"attend before create"}},
      {"dense_plan of a bad shape",
       [] {
         return status_of(dense_plan({1, 1, 4, 3, 16}, DType::kF32));
       },
       Code::kInvalidArgument,
       {"n_heads 4 is not divisible by n_kv_heads 3"}},
      {"dense_plan of an unknown dtype",
       [] {
         return status_of(dense_plan({1, 1, 4, 2, 16}, static_cast<DType>(50)));
       },
       Code::kInvalidArgument,
       {"kv dtype unknown (50)"}},
  });
  CHECK(CpuBackend::memory_bytes(invalid, 1) == 0);

  CpuBackend b;
  REQUIRE(b.create(p, nullptr, mem.p, mem.size).ok());
  REQUIRE(b.append(k.data(), p.kv_width, k.data(), p.kv_width, 3).ok());
  check_rows({
      {"append past the context",
       [&] { return b.append(k.data(), p.kv_width, k.data(), p.kv_width, 38); },
       Code::kOutOfRange,
       {"appending 38 tokens at position 3"}},
      {"attend past max_tokens",
       [&] { return b.attend(q.data(), p.q_width, o.data(), p.q_width, 9); },
       Code::kOutOfRange,
       {"9 queries", "max_tokens 8"}},
      {"dense shape unlike the plan",
       [&] {
         return b.attend_dense(q.data(), k.data(), k.data(), DType::kF32, o.data(), {1, 1, 8, 2, 16}, {});
       },
       Code::kInvalidArgument,
       {"8 heads", "the plan has 4"}},
      {"dense t_kv past cache_rows",
       [&] {
         return b.attend_dense(q.data(), k.data(), k.data(), DType::kF32, o.data(), {1, 41, 4, 2, 16}, {});
       },
       Code::kOutOfRange,
       {"t_kv 41", "cache_rows 40"}},
      {"dense dtype unlike the plan",
       [&] {
         return b.attend_dense(q.data(), k.data(), k.data(), DType::kF32, o.data(), {1, 1, 4, 2, 16}, {});
       },
       Code::kInvalidArgument,
       {"k and v are f32", "the plan stores f16"}},
      {"dense with null q",
       [&] {
         const std::vector<uint16_t> k16(size_t{2} * p.kv_width);
         return b.attend_dense(nullptr, k16.data(), k16.data(), DType::kF16, o.data(), {1, 2, 4, 2, 16}, {});
       },
       Code::kInvalidArgument,
       {"q is null"}},
  });
  CHECK(b.size() == 3);  // a rejected dense call keeps the cache too
}

// Sink logits (gpt-oss) where a layer or a backend takes them: every refusal names the layer, the
// tensor and the shape or the head and the value, and writes nothing (the arena compared
// byte for byte, the layer left uninitialized, the cache's size kept).
TEST_CASE("bad input: sink logits of AttentionLayer and CpuBackend") {
  Config c;
  c.d_model = 64;
  c.n_heads = 4;
  c.n_kv_heads = 2;
  c.max_seq = 40;
  c.rope.style = RopeStyle::kNeox;
  c.sinks = true;
  PlanOptions o;
  o.max_tokens = 8;
  const Plan p = make_plan(c, o).value();
  Aligned mem(p.arena_bytes);
  Arena arena;
  REQUIRE(arena.bind(p, mem.p, mem.size).ok());
  const std::vector<float> wq(size_t{64} * 64, 0.01f), wkv(size_t{32} * 64, 0.01f);
  const std::vector<float> good = {0.5f, -1.0f, 2.0f, 0.0f}, nan = {0.5f, kNaN, 2.0f, 0.0f};
  const std::vector<float> inf = {0.5f, -1.0f, 2.0f, kInf};
  const std::vector<uint16_t> f16_nan = {0x3800, 0x3800, 0x7E00, 0x3800};  // 0.5, 0.5, NaN, 0.5
  const std::vector<int32_t> ints = {1, 2, 3, 4};
  auto with_sinks = [&](TensorRef sinks) {
    LayerWeights w;
    w.wq = {wq.data(), DType::kF32, 64, 64};
    w.wk = {wkv.data(), DType::kF32, 32, 64};
    w.wv = {wkv.data(), DType::kF32, 32, 64};
    w.wo = {wq.data(), DType::kF32, 64, 64};
    w.sinks = sinks;
    return w;
  };
  AttentionLayer layer;
  auto init = [&](TensorRef sinks) {
    return [&layer, &arena, w = with_sinks(sinks)] { return layer.init(arena, 0, w); };
  };
  REQUIRE(layer.init(arena, 0, with_sinks({good.data(), DType::kF32, 1, 4})).ok());
  const std::vector<uint8_t> before(static_cast<uint8_t*>(mem.p), static_cast<uint8_t*>(mem.p) + mem.size);
  check_rows({
      {"no sinks tensor",
       init({}),
       Code::kInvalidArgument,
       {"layer 0: tensor sinks is missing; the config needs it [1, 4]"}},
      {"3 sinks for 4 heads",
       init({good.data(), DType::kF32, 1, 3}),
       Code::kInvalidArgument,
       {"layer 0: tensor sinks has shape [1, 3], expected [1, 4]"}},
      {"a column of sinks",
       init({good.data(), DType::kF32, 4, 1}),
       Code::kInvalidArgument,
       {"layer 0: tensor sinks has shape [4, 1], expected [1, 4]"}},
      {"int32 sinks",
       init({ints.data(), static_cast<DType>(70), 1, 4}),
       Code::kUnsupported,
       {"layer 0: tensor sinks has dtype code 70, expected one of f32, f16, bf16"}},
      {"q8_0 sinks",
       init({ints.data(), DType::kQ8_0, 1, 4}),
       Code::kUnsupported,
       {"layer 0: tensor sinks has dtype q8_0, expected one of f32, f16, bf16"}},
      {"a NaN sink",
       init({nan.data(), DType::kF32, 1, 4}),
       Code::kInvalidArgument,
       {"layer 0: tensor sinks: sinks[1] = nan is not finite"}},
      {"an infinite sink",
       init({inf.data(), DType::kF32, 1, 4}),
       Code::kInvalidArgument,
       {"layer 0: tensor sinks: sinks[3] = inf is not finite"}},
      {"a NaN f16 sink",
       init({f16_nan.data(), DType::kF16, 1, 4}),
       Code::kInvalidArgument,
       {"sinks[2] = nan is not finite"}},
  });
  CHECK_FALSE(layer.initialized());
  CHECK(std::memcmp(before.data(), mem.p, before.size()) == 0);

  CpuBackend b;
  Aligned bm(CpuBackend::memory_bytes(p, 1));
  REQUIRE(b.create(p, nullptr, bm.p, bm.size).ok());
  std::vector<float> k(size_t{2} * p.kv_width, 0.5f), q(p.q_width, 1.0f), out(q.size());
  REQUIRE(b.append(k.data(), p.kv_width, k.data(), p.kv_width, 2).ok());
  check_rows({
      {"cpu attend with a NaN sink",
       [&] { return b.attend(q.data(), p.q_width, out.data(), p.q_width, 1, nan.data()); },
       Code::kInvalidArgument,
       {"attention: sinks[1] = nan is not finite"}},
  });
  CHECK(b.size() == 2);
}

// A small stack in its own arena for the packed-batch rows: d_model 64, 4/2 heads of 16, a
// context of 8, constant weights (each layer the same).
struct SmallStack {
  Plan plan;
  std::unique_ptr<Aligned> mem;
  Arena arena;
  std::vector<float> wq = std::vector<float>(size_t{64} * 64, 0.01f), wkv = std::vector<float>(size_t{32} * 64, 0.01f);
  LayerWeights w;
  SmallStack(bool causal, uint32_t n_layers, uint32_t max_tokens) {
    Config c;
    c.d_model = 64;
    c.n_heads = 4;
    c.n_kv_heads = 2;
    c.max_seq = 8;
    c.n_layers = n_layers;
    c.causal = causal;
    c.rope.style = RopeStyle::kNeox;
    PlanOptions o;
    o.max_tokens = max_tokens;
    plan = make_plan(c, o).value();
    mem = std::make_unique<Aligned>(plan.arena_bytes);
    REQUIRE(arena.bind(plan, mem->p, mem->size).ok());
    w.wq = {wq.data(), DType::kF32, 64, 64};
    w.wk = {wkv.data(), DType::kF32, 32, 64};
    w.wv = {wkv.data(), DType::kF32, 32, 64};
    w.wo = {wq.data(), DType::kF32, 64, 64};
  }
};

TEST_CASE("bad input: a gated layer given an ungated Wq is refused by shape and changes nothing") {
  Config c;
  c.d_model = 64;
  c.n_heads = 4;
  c.n_kv_heads = 2;
  c.max_seq = 40;
  c.rope.style = RopeStyle::kNeox;
  c.output_gate = true;
  const Plan p = make_plan(c, PlanOptions{}).value();
  Aligned mem(p.arena_bytes);
  Arena arena;
  REQUIRE(arena.bind(p, mem.p, mem.size).ok());
  const std::vector<uint8_t> before(static_cast<uint8_t*>(mem.p), static_cast<uint8_t*>(mem.p) + mem.size);
  const std::vector<float> wq(size_t{128} * 64, 0.01f), wkv(size_t{32} * 64, 0.01f);
  LayerWeights w;
  w.wq = {wq.data(), DType::kF32, 64, 64};  // a Qwen3 layer's Wq: queries without their gates
  w.wk = {wkv.data(), DType::kF32, 32, 64};
  w.wv = {wkv.data(), DType::kF32, 32, 64};
  w.wo = {wq.data(), DType::kF32, 64, 64};
  AttentionLayer layer;
  check_rows({{"Wq without gate rows",
               [&] { return layer.init(arena, 0, w); },
               Code::kInvalidArgument,
               {"layer 0: tensor wq has shape [64, 64], expected [128, 64]"}}});
  CHECK_FALSE(layer.initialized());
  CHECK(std::memcmp(before.data(), mem.p, before.size()) == 0);
  w.wq.rows = 128;
  check_rows({{"Wq marked row_groups in f32",
               [&] {
                 LayerWeights bad = w;
                 bad.wq.row_groups = true;  // row groups hold ggml's blocks alone
                 return layer.init(arena, 0, bad);
               },
               Code::kInvalidArgument,
               {"layer 0: tensor wq is marked row_groups in dtype f32 (row groups hold matrices of q8_0, q4_0, q4_1, "
                "q5_0, q5_1, q4_K and q6_K)"}}});
  CHECK_FALSE(layer.initialized());
  CHECK(std::memcmp(before.data(), mem.p, before.size()) == 0);
  CHECK(layer.init(arena, 0, w).ok());
}

TEST_CASE("bad input: an MLA layer missing a latent tensor or given one of another shape changes nothing") {
  Config c;
  c.d_model = 64;
  c.n_heads = 4;
  c.max_seq = 40;
  c.rope.style = RopeStyle::kGptj;
  c.mla = MlaShape{32, 0, 16, 8, 16};
  c.head_dim = 40;
  c.n_kv_heads = 1;
  c.rope.rotary_dim = 8;
  const Plan p = make_plan(c, PlanOptions{}).value();
  Aligned mem(p.arena_bytes);
  Arena arena;
  REQUIRE(arena.bind(p, mem.p, mem.size).ok());
  const std::vector<uint8_t> before(static_cast<uint8_t*>(mem.p), static_cast<uint8_t*>(mem.p) + mem.size);
  const std::vector<float> big(size_t{128} * 64, 0.01f), norm(32, 1.0f);
  LayerWeights w;
  w.wq = {big.data(), DType::kF32, 96, 64};     // n_heads · (nope 16 + rope 8)
  w.wkv_a = {big.data(), DType::kF32, 40, 64};  // kv_lora 32 + rope 8
  w.kv_a_norm = {norm.data(), DType::kF32, 1, 32};
  w.wo = {big.data(), DType::kF32, 64, 64};  // n_heads · v 16
  AttentionLayer layer;
  check_rows({{"no kv_b_proj",
               [&] { return layer.init(arena, 0, w); },
               Code::kInvalidArgument,
               {"layer 0: tensor wkv_b is missing; the config needs it [128, 32]"}},
              {"kv_b_proj of another rank",
               [&] {
                 LayerWeights bad = w;
                 bad.wkv_b = {big.data(), DType::kF32, 128, 64};
                 return layer.init(arena, 0, bad);
               },
               Code::kInvalidArgument,
               {"layer 0: tensor wkv_b has shape [128, 64], expected [128, 32]"}}});
  CHECK_FALSE(layer.initialized());
  CHECK(std::memcmp(before.data(), mem.p, before.size()) == 0);
  w.wkv_b = {big.data(), DType::kF32, 128, 32};
  CHECK(layer.init(arena, 0, w).ok());
}

TEST_CASE("bad input: AttentionLayer::forward_packed lengths leave the layer and the arena as they were") {
  SmallStack st(true, 1, 8);
  const Aligned& mem = *st.mem;
  AttentionLayer layer;
  REQUIRE(layer.init(st.arena, 0, st.w).ok());
  std::vector<float> x(size_t{16} * 64, 1.0f), y(x.size(), 0.0f);
  REQUIRE(layer.forward(x.data(), y.data(), 3).ok());
  std::fill(y.begin(), y.end(), 0.0f);
  const std::vector<uint8_t> before(static_cast<uint8_t*>(mem.p), static_cast<uint8_t*>(mem.p) + mem.size);
  const uint32_t from_two[3] = {2, 3, 4}, shrinking[3] = {0, 5, 2}, wrapped[2] = {0, 0xffffffffu}, past[3] = {0, 4, 9};
  auto packed = [&](const uint32_t* cu, uint32_t n) {
    return [&layer, &x, &y, cu, n] { return layer.forward_packed(x.data(), y.data(), cu, n); };
  };
  check_rows({
      {"lengths from 2", packed(from_two, 2), Code::kInvalidArgument, {"cu_seqlens[0] is 2"}},
      {"a falling length", packed(shrinking, 2), Code::kInvalidArgument, {"cu_seqlens[2] = 2", "sequence 1 is empty"}},
      {"a length near 2^32", packed(wrapped, 1), Code::kOutOfRange, {"4294967295 tokens", "context of 8"}},
      {"more tokens than max_tokens", packed(past, 2), Code::kInvalidArgument, {"9 tokens", "max_tokens"}},
      {"no lengths", packed(nullptr, 2), Code::kInvalidArgument, {"needs cu_seqlens"}},
  });
  CHECK(layer.position() == 3);
  CHECK(std::memcmp(before.data(), mem.p, before.size()) == 0);
  for (const float v : y) CHECK(v == 0.0f);
}

TEST_CASE("bad input: Session::encode lengths and pointers leave the session and the arena as they were") {
  SmallStack st(false, 2, 12);  // a bidirectional model's batch may pass its context of 8
  const Aligned& mem = *st.mem;
  const LayerWeights layers[2] = {st.w, st.w};
  auto session = std::make_unique<Session>();
  Session never_initialized;
  REQUIRE(session->init(st.arena, layers, 2).ok());
  std::vector<float> x(size_t{16} * 64, 1.0f), y(x.size(), 0.0f);
  const uint32_t good[3] = {0, 5, 12};
  REQUIRE(session->encode(x.data(), good, 2, y.data()).ok());
  std::fill(y.begin(), y.end(), 0.0f);
  const std::vector<uint8_t> before(static_cast<uint8_t*>(mem.p), static_cast<uint8_t*>(mem.p) + mem.size);
  const uint32_t from_two[3] = {2, 3, 4}, shrinking[3] = {0, 5, 2}, wrapped[2] = {0, 0xffffffffu},
                 long_one[3] = {0, 9, 12}, past[3] = {0, 6, 13};
  auto encode = [&](Session* s, const float* in, const uint32_t* cu, uint32_t n) {
    return [s, in, &y, cu, n] { return s->encode(in, cu, n, y.data()); };
  };
  check_rows({
      {"lengths from 2", encode(session.get(), x.data(), from_two, 2), Code::kInvalidArgument, {"cu_seqlens[0] is 2"}},
      {"a falling length",
       encode(session.get(), x.data(), shrinking, 2),
       Code::kInvalidArgument,
       {"cu_seqlens[2] = 2", "sequence 1 is empty"}},
      {"a length near 2^32",
       encode(session.get(), x.data(), wrapped, 1),
       Code::kOutOfRange,
       {"4294967295 tokens", "context of 8"}},
      {"a sentence past the context",
       encode(session.get(), x.data(), long_one, 2),
       Code::kOutOfRange,
       {"sequence 0 has 9 tokens", "context of 8"}},
      {"more tokens than max_tokens", encode(session.get(), x.data(), past, 2), Code::kInvalidArgument, {"13 tokens"}},
      {"no lengths", encode(session.get(), x.data(), nullptr, 2), Code::kInvalidArgument, {"needs cu_seqlens"}},
      {"no sentences", encode(session.get(), x.data(), good, 0), Code::kInvalidArgument, {"n_seqs >= 1"}},
      {"x null", encode(session.get(), nullptr, good, 2), Code::kInvalidArgument, {"x or y is null"}},
      {"before init", encode(&never_initialized, x.data(), good, 2), Code::kFailedPrecondition, {"before init"}},
  });
  CHECK(session->position() == 0);
  CHECK(std::memcmp(before.data(), mem.p, before.size()) == 0);
  for (const float v : y) CHECK(v == 0.0f);
}

TEST_CASE("bad input: Model and Encoder refuse ids and lengths by name and change nothing") {
  test::TinyWeights dw(test::tiny_model_config(true), 41);
  test::TinyModel m;
  REQUIRE(m.init(dw, PlanOptions{}, nullptr).ok());
  const int32_t prompt[3] = {1, 2, 3};
  REQUIRE(m.model.prefill(prompt, 3).ok());
  Config ec = test::tiny_model_config(false);  // a post-norm encoder of the same shapes
  ec.causal = false;
  ec.rope.style = RopeStyle::kNone;
  ec.qkv_bias = ec.o_bias = true;
  ec.model.norm = NormKind::kLayer;
  ec.model.mlp = MlpKind::kGelu;
  ec.model.mlp_bias = ec.model.post_norm = ec.model.embedding_norm = true;
  ec.model.max_positions = 8;
  ec.model.type_vocab_size = 2;
  test::TinyWeights ew(ec, 43);
  PlanOptions eo;
  eo.max_tokens = 16;
  const Result<Plan> ep = make_plan(ec, eo);
  REQUIRE_MESSAGE(ep.ok(), ep.status().message());
  std::vector<uint8_t> arena_mem(ep->arena_bytes + kAlignment);
  void* aligned = arena_mem.data() + (kAlignment - reinterpret_cast<uintptr_t>(arena_mem.data()) % kAlignment);
  Arena arena;
  REQUIRE(arena.bind(ep.value(), aligned, ep->arena_bytes).ok());
  auto encoder = std::make_unique<Encoder>();
  REQUIRE(encoder->init(arena, ew.source(), LayerOptions{}).ok());
  std::vector<float> out(16 * ec.d_model);
  const int32_t ids[4] = {1, 2, 50, 3};
  const uint32_t cu2[3] = {0, 2, 4};
  const uint32_t cu_long[2] = {0, 9};
  const int32_t nine[9] = {};
  check_rows({
      {"a decoder id outside the vocabulary",
       [&] { return m.model.decode(50); },
       Code::kInvalidArgument,
       {"model: token id 50 at position 0 is outside the vocabulary (0..49)"}},
      {"a decoder prompt past the context",
       [&] {
         std::vector<int32_t> many(22, 1);
         return m.model.prefill(many.data(), 22);
       },
       Code::kOutOfRange,
       {"model: 22 tokens at position 3 go past the context of 24 tokens"}},
      {"an encoder id outside the vocabulary",
       [&] { return encoder->encode(ids, cu2, 2, out.data()); },
       Code::kInvalidArgument,
       {"encoder: token id 50 at 2 is outside the vocabulary (0..49)"}},
      {"an encoder sequence past its positions",
       [&] { return encoder->encode(nine, cu_long, 1, out.data()); },
       Code::kOutOfRange,
       {"encoder: sequence 0 has 9 tokens, the model has 8 positions"}},
      {"an encoder plan in a Model",
       [&] {
         auto wrong = std::make_unique<Model>();
         return wrong->init(arena, ew.source(), LayerOptions{});
       },
       Code::kInvalidArgument,
       {"model: the plan is an encoder's (bidirectional)"}},
  });
  CHECK(m.model.position() == 3);
}

TEST_CASE("bad input: Model::load_state and state files leave the model and its arena as they were") {
  test::TinyWeights w(test::tiny_model_config(true), 3);
  PlanOptions o;
  o.max_tokens = 8;
  test::TinyModel src, m;
  REQUIRE(src.init(w, o, nullptr).ok());
  REQUIRE(m.init(w, o, nullptr).ok());
  const std::vector<int32_t> ids = test::tiny_prompt(7, 1);
  REQUIRE(src.model.prefill(ids.data(), 7).ok());
  REQUIRE(m.model.prefill(ids.data(), 3).ok());
  std::vector<uint8_t> good(src.model.state_bytes());
  REQUIRE(src.model.save_state(good.data(), good.size(), nullptr).ok());
  const uint8_t* arena = static_cast<const uint8_t*>(m.buffer);
  const std::vector<uint8_t> before(arena, arena + m.plan.arena_bytes);

  // good with the u32 at byte `at` set to v (header fields: magic 0, version 4, d_model 8, ...,
  // kv_dtype 36, weight_dtype 40, position 44, has_logits 48, kv_rotation 52, fingerprint 56, layer
  // records 64).
  auto with = [&good](size_t at, uint32_t v) {
    std::vector<uint8_t> b = good;
    std::memcpy(b.data() + at, &v, 4);
    return b;
  };
  auto load = [&m](std::vector<uint8_t> b, size_t size) {
    return [&m, b, size] { return m.model.load_state(b.data(), size); };
  };
  auto all = [&load](const std::vector<uint8_t>& b) { return load(b, b.size()); };
  std::vector<uint8_t> flipped = good;
  flipped[good.size() / 2] ^= 1;
  Model never_initialized;
  const std::string dir = HEADWAY_TEST_DATA;
  check_rows({
      {"null",
       [&] { return m.model.load_state(nullptr, good.size()); },
       Code::kInvalidArgument,
       {"state: the buffer is null"}},
      {"empty", load(good, 0), Code::kDataLoss, {"0 bytes, shorter than its 64-byte header"}},
      {"a short header", load(good, 63), Code::kDataLoss, {"63 bytes", "64-byte header", "truncated"}},
      {"no layer records", load(good, 70), Code::kDataLoss, {"70 bytes", "2 layer records"}},
      {"magic", all(with(0, 0x46445547)), Code::kInvalidArgument, {"not a headway state", "0x47 0x55 0x44 0x46"}},
      {"version", all(with(4, 0xffffffffu)), Code::kUnsupported, {"format version 4294967295", "reads version 1"}},
      {"d_model", all(with(8, 64)), Code::kInvalidArgument, {"state: d_model 64, this plan's 32"}},
      {"head_dim", all(with(20, 0)), Code::kInvalidArgument, {"state: head_dim 0, this plan's 8"}},
      {"vocab", all(with(32, 49152)), Code::kInvalidArgument, {"state: vocab_size 49152, this plan's 50"}},
      {"kv_dtype out of the enum",
       all(with(36, 99)),
       Code::kInvalidArgument,
       {"state: kv_dtype unknown, this plan's f32"}},
      {"kv_dtype q4_0",
       all(with(36, static_cast<uint32_t>(DType::kQ4_0))),
       Code::kInvalidArgument,
       {"state: kv_dtype q4_0, this plan's f32"}},
      {"kv_rotation hadamard into a plan without it",
       all(with(52, static_cast<uint32_t>(KvRotation::kHadamard))),
       Code::kInvalidArgument,
       {"state: kv_rotation hadamard, this plan's none"}},
      {"kv_rotation out of the enum", all(with(52, 77)), Code::kInvalidArgument, {"state: kv_rotation unknown"}},
      {"weight_dtype",
       all(with(40, static_cast<uint32_t>(DType::kBF16))),
       Code::kInvalidArgument,
       {"state: weight_dtype bf16, this plan's f32"}},
      {"a sliding layer", all(with(64, 1)), Code::kInvalidArgument, {"layer 0 is sliding, this plan's is full"}},
      {"the weights", all(with(56, 12345)), Code::kInvalidArgument, {"made with other weights", "this model's"}},
      {"position past the context",
       all(with(44, 0xffffffffu)),
       Code::kOutOfRange,
       {"position 4294967295", "context of 24 tokens"}},
      {"logits at position 0", all(with(44, 0)), Code::kDataLoss, {"has_logits 1 at position 0"}},
      {"position 8 in 7's bytes", all(with(44, 8)), Code::kDataLoss, {"its header describes", "(truncated)"}},
      {"one byte short", load(good, good.size() - 1), Code::kDataLoss, {"(truncated)"}},
      {"a flipped bit", all(flipped), Code::kDataLoss, {"state: checksum", "(corrupt)"}},
      {"before init",
       [&] { return never_initialized.load_state(good.data(), good.size()); },
       Code::kFailedPrecondition,
       {"state: the model is not initialized"}},
      {"save before init",
       [&] { return never_initialized.save_state(nullptr, 0, nullptr); },
       Code::kFailedPrecondition,
       {"state: the model is not initialized"}},
      {"save into null",
       [&] { return src.model.save_state(nullptr, 1 << 20, nullptr); },
       Code::kOutOfRange,
       {"0 bytes (null)", "the state needs"}},
      {"file missing",
       [&] { return load_model_state(m.model, "no/such/state.bin"); },
       Code::kNotFound,
       {"no/such/state.bin"}},
      {"file a directory",
       [&] { return load_model_state(m.model, dir.c_str()); },
       Code::kInvalidArgument,
       {"it is a directory"}},
      {"file of another kind",
       [&] { return load_model_state(m.model, (dir + "/bad/garbage.gguf").c_str()); },
       Code::kDataLoss,
       {"garbage.gguf", "not a headway state file"}},
      {"ids of a missing file",
       [&] { return status_of(read_model_state_ids("no/such/state.bin")); },
       Code::kNotFound,
       {"cannot open no/such/state.bin"}},
      {"ids not matching the position",
       [&] { return save_model_state(src.model, "unused.bin", ids.data(), 3); },
       Code::kInvalidArgument,
       {"unused.bin", "3 token ids for a state at position 7"}},
  });
  CHECK(m.model.position() == 3);
  CHECK(std::memcmp(before.data(), arena, before.size()) == 0);
}

// A C API call as a Status: its code and the message it wrote into its headway_error.
std::function<Status()> c_call(std::function<headway_status(headway_error*)> fn) {
  return [fn] {
    headway_error e{};
    const headway_status code = fn(&e);
    if (code == HEADWAY_OK) return Status();
    if (e.code != code)
      return Status::error(Code::kInternal, "headway_error.code %d is not the returned %d", e.code, code);
    return Status::error(static_cast<Code>(code), "%s", e.message);
  };
}

TEST_CASE("bad input: the C API answers with the C++ API's codes and messages and changes nothing") {
  Aligned config_mem(headway_config_object_bytes()), plan_mem(headway_plan_object_bytes()), spare(4096);
  headway_config* config = nullptr;
  headway_plan* plan = nullptr;
  REQUIRE(headway_config_from_spec(config_mem.p, config_mem.size, "d_model=64 heads=4 kv_heads=2 ctx=8 layers=1",
                                   &config, nullptr) == HEADWAY_OK);
  REQUIRE(headway_plan_create(plan_mem.p, plan_mem.size, config, nullptr, &plan, nullptr) == HEADWAY_OK);
  size_t cache_bytes = 0;
  REQUIRE(headway_kv_cache_memory_bytes(plan, 0, 1, &cache_bytes, nullptr) == HEADWAY_OK);
  Aligned cache_mem(cache_bytes);
  headway_kv_cache* cache = nullptr;
  REQUIRE(headway_kv_cache_create(cache_mem.p, cache_mem.size, plan, 0, nullptr, &cache, nullptr) == HEADWAY_OK);
  std::vector<float> kv(size_t{16} * 32, 0.5f), q(size_t{2} * 64, 0.5f), o(q.size(), 0.0f);
  REQUIRE(headway_kv_cache_append(cache, kv.data(), kv.data(), 2, nullptr) == HEADWAY_OK);
  const std::vector<uint8_t> cache_before(static_cast<uint8_t*>(cache_mem.p),
                                          static_cast<uint8_t*>(cache_mem.p) + cache_mem.size);
  const std::vector<uint8_t> plan_before(static_cast<uint8_t*>(plan_mem.p),
                                         static_cast<uint8_t*>(plan_mem.p) + plan_mem.size);
  headway_config* no_config = nullptr;
  headway_plan* no_plan = nullptr;
  headway_pool* no_pool = nullptr;
  headway_kv_cache* no_cache = nullptr;
  headway_session* no_session = nullptr;
  headway_model* no_model = nullptr;
  headway_model_file* no_model_file = nullptr;
  headway_plan_options options;
  headway_plan_options_init(&options);
  headway_plan_options bad_weight_dtype = options;
  bad_weight_dtype.weight_dtype = HEADWAY_Q8_0;
  headway_plan_options old_size = options;
  old_size.struct_size = 2;
  headway_plan_info info{};
  headway_head_layout layout{};
  char json[16];
  size_t length = 0;
  headway_dtype dtype = HEADWAY_F16;
  const headway_attention_shape shape{2, 2, 4, 2, 16};
  headway_attention_params params;
  headway_attention_params_init(&params);
  params.struct_size = sizeof(params) + 8;
  headway_layer_weights weights;
  headway_layer_weights_init(&weights);
  weights.wq.data = kv.data();
  weights.wq.dtype = HEADWAY_Q4_K;  // rows of 64 values: not whole 256-value super-blocks
  weights.wq.rows = 64;
  weights.wq.cols = 64;
  const char* broken_json = "{\"hidden_size\": 64,";
  check_rows({
      {"config from a null spec",
       c_call([&](headway_error* e) { return headway_config_from_spec(spare.p, spare.size, nullptr, &no_config, e); }),
       Code::kInvalidArgument,
       {"headway_config_from_spec", "spec is null"}},
      {"config into short memory",
       c_call([&](headway_error* e) {
         return headway_config_from_spec(spare.p, headway_config_object_bytes() - 1, "d_model=64 heads=4", &no_config,
                                         e);
       }),
       Code::kInvalidArgument,
       {"memory is", "it needs"}},
      {"config into misaligned memory",
       c_call([&](headway_error* e) {
         return headway_config_from_spec(static_cast<char*>(spare.p) + 4, 1024, "d_model=64 heads=4", &no_config, e);
       }),
       Code::kInvalidArgument,
       {"16-byte aligned"}},
      {"config with an unknown key",
       c_call([&](headway_error* e) {
         return headway_config_from_spec(spare.p, spare.size, "heads=4 hue=3", &no_config, e);
       }),
       Code::kInvalidArgument,
       {"unknown key 'hue'"}},
      {"an unknown preset",
       c_call(
           [&](headway_error* e) { return headway_config_from_preset(spare.p, spare.size, "gpt-9", &no_config, e); }),
       Code::kNotFound,
       {"no preset named 'gpt-9'"}},
      {"config.json cut short",
       c_call([&](headway_error* e) {
         return headway_config_from_hf_json(spare.p, spare.size, broken_json, std::strlen(broken_json), &no_config, e);
       }),
       Code::kInvalidArgument,
       {"config.json"}},
      {"a kv dtype out of the enum",
       c_call([&](headway_error* e) { return headway_config_set_kv_dtype(config, static_cast<headway_dtype>(50), e); }),
       Code::kInvalidArgument,
       {"dtype 50", "q4_0"}},
      {"a weight format as the kv dtype",
       c_call([&](headway_error* e) { return headway_config_set_kv_dtype(config, HEADWAY_Q4_1, e); }),
       Code::kInvalidArgument,
       {"dtype q4_1 is not one a KV cache stores (f32, f16, bf16, q8_0, q4_0)"}},
      {"a kv rotation out of the enum",
       c_call([&](headway_error* e) {
         return headway_config_set_kv_rotation(config, static_cast<headway_kv_rotation>(7), e);
       }),
       Code::kInvalidArgument,
       {"headway_config_set_kv_rotation: rotation 7 is not one of 0 (none), 1 (hadamard)"}},
      {"a kv rotation over an f16 cache",
       c_call([&](headway_error* e) {
         REQUIRE(headway_config_set_kv_rotation(config, HEADWAY_KV_ROTATION_HADAMARD, nullptr) == HEADWAY_OK);
         const headway_status s = headway_config_validate(config, e);
         REQUIRE(headway_config_set_kv_rotation(config, HEADWAY_KV_ROTATION_NONE, nullptr) == HEADWAY_OK);
         return s;
       }),
       Code::kInvalidArgument,
       {"kv_rotation hadamard needs kv_dtype q8_0 or q4_0, not kv_dtype f16"}},
      {"a dtype name",
       c_call([&](headway_error* e) { return headway_dtype_parse("fp8", &dtype, e); }),
       Code::kInvalidArgument,
       {"'fp8' is not one of f32, f16, bf16, q8_0, q4_0"}},
      {"a row into too few bytes",
       c_call(
           [&](headway_error* e) { return headway_convert_row(HEADWAY_Q8_0, kv.data(), 64, json, sizeof(json), e); }),
       Code::kInvalidArgument,
       {"16"}},
      {"plan options from an unknown header",
       c_call(
           [&](headway_error* e) { return headway_plan_create(spare.p, spare.size, config, &old_size, &no_plan, e); }),
       Code::kInvalidArgument,
       {"options->struct_size 2"}},
      {"plan weights in q8_0",
       c_call([&](headway_error* e) {
         return headway_plan_create(spare.p, spare.size, config, &bad_weight_dtype, &no_plan, e);
       }),
       Code::kInvalidArgument,
       {"weight dtype q8_0"}},
      {"plan info of size 0",
       c_call([&](headway_error* e) { return headway_plan_get_info(plan, &info, e); }),
       Code::kInvalidArgument,
       {"info->struct_size 0"}},
      {"head past n_heads",
       c_call([&](headway_error* e) { return headway_plan_head(plan, 4, &layout, e); }),
       Code::kOutOfRange,
       {"head 4", "n_heads 4"}},
      {"plan JSON into 16 bytes",
       c_call([&](headway_error* e) { return headway_plan_json(plan, json, sizeof(json), &length, e); }),
       Code::kOutOfRange,
       {"text is 16 bytes", "the JSON needs"}},
      {"a pool of 0 threads",
       c_call([&](headway_error* e) { return headway_pool_create(spare.p, spare.size, 0, &no_pool, e); }),
       Code::kInvalidArgument,
       {"threads"}},
      {"attend with params from a newer header",
       c_call([&](headway_error* e) {
         return headway_attend(q.data(), kv.data(), kv.data(), HEADWAY_F32, o.data(), &shape, &params, nullptr, spare.p,
                               spare.size, e);
       }),
       Code::kInvalidArgument,
       {"params->struct_size"}},
      {"attend with a kv dtype out of the enum",
       c_call([&](headway_error* e) {
         return headway_attend(q.data(), kv.data(), kv.data(), static_cast<headway_dtype>(90), o.data(), &shape,
                               nullptr, nullptr, spare.p, spare.size, e);
       }),
       Code::kInvalidArgument,
       {"kv_dtype 90"}},
      {"attend without a shape",
       c_call([&](headway_error* e) {
         return headway_attend(q.data(), kv.data(), kv.data(), HEADWAY_F32, o.data(), nullptr, nullptr, nullptr,
                               spare.p, spare.size, e);
       }),
       Code::kInvalidArgument,
       {"shape is null"}},
      {"cache memory of layer 1 of 1",
       c_call([&](headway_error* e) { return headway_kv_cache_memory_bytes(plan, 1, 1, &length, e); }),
       Code::kOutOfRange,
       {"layer 1", "n_layers 1"}},
      {"a cache in short memory",
       c_call([&](headway_error* e) {
         return headway_kv_cache_create(spare.p, spare.size, plan, 0, nullptr, &no_cache, e);
       }),
       Code::kInvalidArgument,
       {"memory is 4096 bytes"}},
      {"append past the context",
       c_call([&](headway_error* e) { return headway_kv_cache_append(cache, kv.data(), kv.data(), 7, e); }),
       Code::kOutOfRange,
       {"8"}},
      {"append of null K",
       c_call([&](headway_error* e) { return headway_kv_cache_append(cache, nullptr, kv.data(), 1, e); }),
       Code::kInvalidArgument,
       {"null"}},
      {"rotate more queries than appended",
       c_call([&](headway_error* e) { return headway_kv_cache_rotate_queries(cache, q.data(), 3, e); }),
       Code::kInvalidArgument,
       {"rotate_queries of 3 tokens", "1..2"}},
      {"attend more queries than appended",
       c_call([&](headway_error* e) { return headway_kv_cache_attend(cache, q.data(), o.data(), 3, nullptr, e); }),
       Code::kInvalidArgument,
       {"3"}},
      {"a session of 2 layers on a 1-layer plan",
       c_call([&](headway_error* e) {
         return headway_session_create(spare.p, spare.size, plan, spare.p, spare.size, &weights, 2, nullptr,
                                       &no_session, e);
       }),
       Code::kInvalidArgument,
       {"n_layers 2", "plan's 1"}},
      {"a session with q4_K weights in rows of 64",
       c_call([&](headway_error* e) {
         Aligned session_mem(headway_session_object_bytes());
         headway_plan_info p{};
         p.struct_size = sizeof(p);
         headway_plan_get_info(plan, &p, nullptr);
         Aligned arena(p.arena_bytes);
         return headway_session_create(session_mem.p, session_mem.size, plan, arena.p, arena.size, &weights, 1, nullptr,
                                       &no_session, e);
       }),
       Code::kInvalidArgument,
       {"layer 0", "tensor wq has rows of 64 values, not whole q4_K blocks of 256"}},
      {"prefill of no session",
       c_call([&](headway_error* e) { return headway_session_prefill(nullptr, q.data(), 1, o.data(), e); }),
       Code::kInvalidArgument,
       {"session is null"}},
      {"a model on a plan without one",
       c_call([&](headway_error* e) {
         Aligned model_mem(headway_model_object_bytes());
         headway_plan_info p{};
         p.struct_size = sizeof(p);
         headway_plan_get_info(plan, &p, nullptr);
         Aligned arena(p.arena_bytes);
         headway_model_source source;
         headway_model_source_init(&source);
         source.attention = [](void*, uint32_t, headway_layer_weights*) { return HEADWAY_OK; };
         source.rows = [](void*, int, uint32_t, uint64_t, uint64_t, uint32_t, float*) { return HEADWAY_OK; };
         return headway_model_create(model_mem.p, model_mem.size, plan, arena.p, arena.size, &source, nullptr,
                                     &no_model, e);
       }),
       Code::kInvalidArgument,
       {"model: the plan has no model (vocab_size 0)"}},
      {"a model source without its rows function",
       c_call([&](headway_error* e) {
         headway_model_source source;
         headway_model_source_init(&source);
         source.attention = [](void*, uint32_t, headway_layer_weights*) { return HEADWAY_OK; };
         return headway_model_create(spare.p, spare.size, plan, spare.p, spare.size, &source, nullptr, &no_model, e);
       }),
       Code::kInvalidArgument,
       {"headway_model_create: source->rows is null"}},
      {"prefill of no model",
       c_call([&](headway_error* e) {
         const int32_t id = 1;
         return headway_model_prefill(nullptr, &id, 1, e);
       }),
       Code::kInvalidArgument,
       {"model is null"}},
      {"a model file that is not there",
       c_call([&](headway_error* e) { return headway_model_file_open("no-such-model.gguf", &no_model_file, e); }),
       Code::kNotFound,
       {"no-such-model.gguf"}},
      {"a sampler with a NaN temperature",
       c_call([&](headway_error* e) {
         headway_sampler_params params;
         headway_sampler_params_init(&params);
         params.temperature = std::numeric_limits<float>::quiet_NaN();
         Aligned mem(headway_sampler_memory_bytes(8));
         headway_sampler* sampler = nullptr;
         return headway_sampler_create(mem.p, mem.size, &params, 8, &sampler, e);
       }),
       Code::kInvalidArgument,
       {"headway_sampler_create", "temperature"}},
      {"a sampler in too little memory",
       c_call([&](headway_error* e) {
         headway_sampler_params params;
         headway_sampler_params_init(&params);
         Aligned mem(16);
         headway_sampler* sampler = nullptr;
         return headway_sampler_create(mem.p, mem.size, &params, 8, &sampler, e);
       }),
       Code::kInvalidArgument,
       {"headway_sampler_create: memory is 64 bytes, it needs 128"}},
  });
  CHECK(no_model == nullptr);
  CHECK(no_model_file == nullptr);
  CHECK(no_config == nullptr);
  CHECK(no_plan == nullptr);
  CHECK(no_cache == nullptr);
  CHECK(no_session == nullptr);
  CHECK(dtype == HEADWAY_F16);
  CHECK(headway_kv_cache_size(cache) == 2);
  CHECK(std::memcmp(cache_before.data(), cache_mem.p, cache_before.size()) == 0);
  CHECK(std::memcmp(plan_before.data(), plan_mem.p, plan_before.size()) == 0);
  for (const float v : o) CHECK(v == 0.0f);
}

TEST_CASE("bad input: a model name that is not UTF-8 reaches the plan's JSON as U+FFFD") {
  const Result<Config> c = parse_spec("name=tin\xe1y d_model=64 heads=4 ctx=8");
  REQUIRE(c.ok());
  const Result<Plan> p = make_plan(c.value());
  REQUIRE(p.ok());
  CHECK(plan_json(p.value()).rfind("{\"model\":\"tin\xef\xbf\xbdy\",", 0) == 0);
}

TEST_CASE("bad input: config.json text") {
  auto hf = [](std::string text) {
    return [text] { return status_of(parse_hf_config(text.data(), text.size(), "c.json")); };
  };
  const std::string ok = R"({"model_type": "llama", "hidden_size": 256, "num_attention_heads": 4,
                             "max_position_embeddings": 64, "num_hidden_layers": 2})";
  REQUIRE(parse_hf_config(ok.data(), ok.size(), "c.json").ok());
  check_rows({
      {"empty", hf(""), Code::kInvalidArgument, {"c.json is not valid JSON", "line 1, column 1"}},
      {"truncated", hf(ok.substr(0, ok.size() / 2)), Code::kInvalidArgument, {"c.json is not valid JSON", "line 2"}},
      {"not an object", hf("[1, 2]"), Code::kInvalidArgument, {"c.json"}},
      {"MPT attn_config not an object",
       hf(R"({"model_type": "mpt", "d_model": 256, "n_heads": 4, "max_seq_len": 64, "attn_config": "alibi"})"),
       Code::kInvalidArgument,
       {"attn_config is a string, expected an object"}},
      {"MPT alibi_bias_max 0",
       hf(R"({"model_type": "mpt", "d_model": 256, "n_heads": 4, "max_seq_len": 64,
              "attn_config": {"alibi_bias_max": 0}})"),
       Code::kInvalidArgument,
       {"attn_config.alibi_bias_max"}},
      {"MPT clip_qkv",
       hf(R"({"model_type": "mpt", "d_model": 256, "n_heads": 4, "max_seq_len": 64, "attn_config": {"clip_qkv": 8}})"),
       Code::kUnsupported,
       {"attn_config.clip_qkv"}},
      {"Falcon alibi not a bool",
       hf(R"({"model_type": "falcon", "hidden_size": 256, "num_attention_heads": 4, "alibi": "yes"})"),
       Code::kInvalidArgument,
       {"alibi"}},
      {"string count",
       hf(R"({"hidden_size": "256", "num_attention_heads": 4, "max_position_embeddings": 64})"),
       Code::kInvalidArgument,
       {"hidden_size"}},
      {"negative heads",
       hf(R"({"hidden_size": 256, "num_attention_heads": -4, "max_position_embeddings": 64})"),
       Code::kInvalidArgument,
       {"num_attention_heads", "-4"}},
      {"huge ctx",
       hf(R"({"hidden_size": 256, "num_attention_heads": 4, "max_position_embeddings": 1e300})"),
       Code::kInvalidArgument,
       {"max_position_embeddings"}},
      {"count past 2^31",
       hf(R"({"hidden_size": 4294967296, "num_attention_heads": 4, "max_position_embeddings": 64})"),
       Code::kInvalidArgument,
       {"hidden_size", "4294967296"}},
      {"theta past float",
       hf(R"({"hidden_size": 256, "num_attention_heads": 4, "max_position_embeddings": 64, "rope_theta": 1e39})"),
       Code::kInvalidArgument,
       {"rope_theta"}},
      {"layer_types length",
       hf(R"({"hidden_size": 256, "num_attention_heads": 4, "max_position_embeddings": 64,
             "num_hidden_layers": 3, "sliding_window": 16, "layer_types": ["sliding_attention", "full_attention"]})"),
       Code::kInvalidArgument,
       {"c.json", "layer_types has 2 entries", "num_hidden_layers is 3"}},
      {"unknown layer type",
       hf(R"({"hidden_size": 256, "num_attention_heads": 4, "max_position_embeddings": 64,
             "num_hidden_layers": 2, "sliding_window": 16, "layer_types": ["sliding_attention", "global"]})"),
       Code::kInvalidArgument,
       {"c.json", "layer_types[1] is \"global\""}},
      {"chunked attention",
       hf(R"({"hidden_size": 256, "num_attention_heads": 4, "max_position_embeddings": 64,
             "num_hidden_layers": 2, "layer_types": ["chunked_attention", "full_attention"]})"),
       Code::kUnsupported,
       {"c.json", "layer_types[0]", "chunked_attention"}},
      {"pattern 0",
       hf(R"({"hidden_size": 256, "num_attention_heads": 4, "max_position_embeddings": 64,
             "sliding_window": 16, "sliding_window_pattern": 0})"),
       Code::kInvalidArgument,
       {"c.json", "sliding_window_pattern is 0"}},
      {"no_rope_layers entry",
       hf(R"({"hidden_size": 256, "num_attention_heads": 4, "max_position_embeddings": 64,
             "num_hidden_layers": 2, "no_rope_layers": [1, "0"]})"),
       Code::kInvalidArgument,
       {"c.json", "no_rope_layers[1] is \"0\""}},
      {"no_rope_layer_interval 0",
       hf(R"({"hidden_size": 256, "num_attention_heads": 4, "max_position_embeddings": 64,
             "no_rope_layer_interval": 0})"),
       Code::kInvalidArgument,
       {"c.json", "no_rope_layer_interval is 0"}},
      {"local base not a number",
       hf(R"({"hidden_size": 256, "num_attention_heads": 4, "max_position_embeddings": 64,
             "rope_local_base_freq": "10000"})"),
       Code::kInvalidArgument,
       {"c.json", "rope_local_base_freq"}},
      {"PLM's MLA with DeepSeek's YaRN logit mscale",
       hf(R"({"model_type": "plm", "hidden_size": 256, "num_attention_heads": 4, "max_position_embeddings": 64,
             "kv_lora_rank": 32, "rope_scaling": {"type": "yarn", "factor": 4.0,
             "original_max_position_embeddings": 16, "mscale_all_dim": 0.707}})"),
       Code::kUnsupported,
       {"c.json", "rope_scaling's mscale_all_dim 0.707 with model_type plm"}},
  });
  CHECK_FALSE(parse_hf_config(nullptr, 5, "c.json").ok());
  CHECK(std::string(load_hf_config("no/such/dir/config.json").status().message()).find("no/such/dir/config.json") !=
        std::string::npos);
  CHECK_FALSE(load_hf_config(HEADWAY_TEST_DATA).ok());  // a directory
}

TEST_CASE("bad input: GGUF metadata") {
  auto gguf = [](std::vector<uint8_t> b) {
    return [b] { return status_of(parse_gguf_metadata(b.data(), b.size(), "m.gguf")); };
  };
  // Gemma 4's keys around w's: four layers, sliding then full, twice (a pattern of `pattern` entries).
  auto gemma4 = [](test::GgufWriter w, size_t pattern = 4) {
    std::vector<bool> swa;
    for (size_t i = 0; i < pattern; ++i) swa.push_back(i % 2 == 0);
    return w.str("general.architecture", "gemma4")
        .u32kv("gemma4.context_length", 4096)
        .u32kv("gemma4.embedding_length", 256)
        .u32kv("gemma4.block_count", 4)
        .u32kv("gemma4.attention.head_count", 4)
        .u32kv("gemma4.attention.key_length", 128)
        .u32kv("gemma4.attention.sliding_window", 512)
        .bool_array("gemma4.attention.sliding_window_pattern", swa)
        .bytes();
  };
  std::vector<uint8_t> header = {'G', 'G', 'U', 'F', 3, 0, 0, 0};
  std::vector<uint8_t> huge_count = header;
  for (int i = 0; i < 8; ++i) huge_count.push_back(0);     // tensor count
  for (int i = 0; i < 8; ++i) huge_count.push_back(0xff);  // kv count 2^64 - 1
  check_rows({
      {"empty", gguf({}), Code::kDataLoss, {"m.gguf"}},
      {"wrong magic", gguf({'G', 'G', 'M', 'L', 3, 0, 0, 0}), Code::kInvalidArgument, {"m.gguf", "magic 47 47 4d 4c"}},
      {"truncated header", gguf(header), Code::kDataLoss, {"m.gguf"}},
      {"kv count 2^64 - 1", gguf(huge_count), Code::kDataLoss, {"m.gguf"}},
      {"gemma4 without key_length_swa",
       gguf(gemma4(test::GgufWriter())),
       Code::kNotFound,
       {"m.gguf", "no gemma4.attention.key_length_swa"}},
      {"gemma4 sliding value head unlike its key head",
       gguf(gemma4(test::GgufWriter()
                       .u32kv("gemma4.attention.key_length_swa", 64)
                       .u32kv("gemma4.attention.value_length_swa", 32))),
       Code::kUnsupported,
       {"m.gguf", "gemma4.attention.value_length_swa is 32, attention.key_length_swa 64"}},
      {"gemma4 sliding layers partly rotated",
       gguf(gemma4(test::GgufWriter()
                       .u32kv("gemma4.attention.key_length_swa", 64)
                       .u32kv("gemma4.rope.dimension_count_swa", 16))),
       Code::kUnsupported,
       {"m.gguf", "gemma4.rope.dimension_count_swa is 16"}},
      {"gemma4 full layers partly rotated",
       gguf(gemma4(
           test::GgufWriter().u32kv("gemma4.attention.key_length_swa", 64).u32kv("gemma4.rope.dimension_count", 32))),
       Code::kUnsupported,
       {"m.gguf", "gemma4.rope.dimension_count is 32, attention.key_length 128"}},
      {"gemma4 full layers with two kv head counts",
       gguf(gemma4(test::GgufWriter()
                       .u32kv("gemma4.attention.key_length_swa", 64)
                       .u32_array("gemma4.attention.head_count_kv", {4, 1, 4, 2}))),
       Code::kUnsupported,
       {"m.gguf", "gemma4.attention.head_count_kv[3] is 2 where the earlier full layers have 1"}},
      {"gemma4 pattern of another length",
       gguf(gemma4(test::GgufWriter().u32kv("gemma4.attention.key_length_swa", 64), 3)),
       Code::kInvalidArgument,
       {"m.gguf", "gemma4.attention.sliding_window_pattern is an array of 3 bool, expected 4 bools"}},
  });
  CHECK_FALSE(parse_gguf_metadata(nullptr, 10, "m.gguf").ok());
  CHECK_FALSE(load_gguf_config("no/such/model.gguf").ok());
  CHECK_FALSE(load_gguf_config(HEADWAY_TEST_DATA).ok());  // a directory
}

TEST_CASE("bad input: GGUF tensors") {
  // Parsed from 8-byte-aligned storage, as a mapping would be.
  auto tensors = [](test::GgufWriter w) {
    const std::vector<uint8_t> b = w.str("general.architecture", "llama").bytes();
    return [b] {
      std::vector<uint64_t> storage(b.size() / 8 + 1);
      std::memcpy(storage.data(), b.data(), b.size());
      formats::GgufFile f;
      return f.parse(reinterpret_cast<const uint8_t*>(storage.data()), b.size(), "w.gguf");
    };
  };
  auto dequantized = [](test::GgufWriter w, const char* name, uint64_t first, uint64_t rows, uint64_t out_values) {
    const std::vector<uint8_t> b = w.str("general.architecture", "llama").bytes();
    return [=] {
      std::vector<uint64_t> storage(b.size() / 8 + 1);
      std::memcpy(storage.data(), b.data(), b.size());
      formats::GgufFile f;
      HEADWAY_RETURN_IF_ERROR(f.parse(reinterpret_cast<const uint8_t*>(storage.data()), b.size(), "w.gguf"));
      std::vector<float> out(static_cast<size_t>(out_values));
      return f.dequantize_rows(name, first, rows, out.data(), out_values);
    };
  };
  const std::vector<uint8_t> q4_k(2 * 144);
  check_rows({
      {"truncated q4_K tensor",
       tensors(test::GgufWriter().tensor("blk.0.ffn_up.weight", {256, 3}, 12, q4_k)),
       Code::kDataLoss,
       {"w.gguf", "'blk.0.ffn_up.weight'", "q4_K", "ne [256, 3]", "needs 432 bytes", "288 are left"}},
      {"truncated q8_0 tensor",
       tensors(test::GgufWriter().tensor("token_embd.weight", {64, 2}, 8, std::vector<uint8_t>(135))),
       Code::kDataLoss,
       {"'token_embd.weight'", "q8_0", "needs 136 bytes (2 rows, each 2 blocks of 34 bytes), 135 are left"}},
      {"q6_K rows of part blocks",
       tensors(test::GgufWriter().tensor("output.weight", {320, 2}, 14, std::vector<uint8_t>(420))),
       Code::kDataLoss,
       {"'output.weight'", "rows of 320 values", "q6_K's 256-value blocks"}},
      {"unknown ggml type 77",
       tensors(test::GgufWriter().tensor("blk.0.attn_q.weight", {32}, 77, std::vector<uint8_t>(32))),
       Code::kUnsupported,
       {"w.gguf", "'blk.0.attn_q.weight'", "ggml type 77", "not a ggml type"}},
      {"removed ggml type 4 (q4_2)",
       tensors(test::GgufWriter().tensor("t", {32}, 4, std::vector<uint8_t>(32))),
       Code::kUnsupported,
       {"'t'", "ggml type 4"}},
      {"ggml type headway does not read",
       dequantized(test::GgufWriter().tensor("t", {256}, 23, std::vector<uint8_t>(136)), "t", 0, 1, 256),
       Code::kUnsupported,
       {"'t'", "iq4_xs (23)"}},
      {"rows past the tensor",
       dequantized(test::GgufWriter().tensor("t", {256, 2}, 12, q4_k), "t", 1, 2, 512),
       Code::kOutOfRange,
       {"'t' (q4_K) has 2 rows", "rows 1 to 3"}},
      {"output too small",
       dequantized(test::GgufWriter().tensor("t", {256, 2}, 12, q4_k), "t", 0, 2, 511),
       Code::kInvalidArgument,
       {"2 rows of 256 values", "511 floats"}},
  });
}

std::vector<uint8_t> npy_bytes(const std::string& dict, size_t payload) {
  std::string header = dict;
  while ((10 + header.size() + 1) % 64) header += ' ';
  header += '\n';
  std::vector<uint8_t> b = {0x93,
                            'N',
                            'U',
                            'M',
                            'P',
                            'Y',
                            1,
                            0,
                            static_cast<uint8_t>(header.size()),
                            static_cast<uint8_t>(header.size() >> 8)};
  b.insert(b.end(), header.begin(), header.end());
  b.resize(b.size() + payload, 0);
  return b;
}

TEST_CASE("bad input: .npy files") {
  auto npy = [](std::vector<uint8_t> b) {
    return [b] { return status_of(formats::parse_npy(b.data(), b.size(), "x.npy")); };
  };
  auto dict = [](const char* descr, const char* shape) {
    return std::string("{'descr': '") + descr + "', 'fortran_order': False, 'shape': " + shape + ", }";
  };
  const std::vector<uint8_t> good = npy_bytes(dict("<f4", "(2, 3)"), 24);
  REQUIRE(formats::parse_npy(good.data(), good.size(), "x.npy").ok());
  check_rows({
      {"empty", npy({}), Code::kDataLoss, {"x.npy is empty"}},
      {"truncated data",
       npy(std::vector<uint8_t>(good.begin(), good.end() - 1)),
       Code::kDataLoss,
       {"x.npy", "(2, 3)", "24 bytes"}},
      {"truncated header",
       npy(std::vector<uint8_t>(good.begin(), good.begin() + 20)),
       Code::kDataLoss,
       {"x.npy is truncated"}},
      {"f64", npy(npy_bytes(dict("<f8", "(2,)"), 16)), Code::kUnsupported, {"<f8"}},
      {"big-endian", npy(npy_bytes(dict(">f4", "(2,)"), 8)), Code::kUnsupported, {">f4"}},
      {"int", npy(npy_bytes(dict("<i4", "(2,)"), 8)), Code::kUnsupported, {"<i4"}},
      {"negative dim", npy(npy_bytes(dict("<f4", "(2, -3)"), 0)), Code::kDataLoss, {"dim 1 is negative"}},
      {"zero dim", npy(npy_bytes(dict("<f4", "(0, 3)"), 0)), Code::kUnsupported, {"dim 0 is 0"}},
      {"dim past 64 bits",
       npy(npy_bytes(dict("<f4", "(99999999999999999999,)"), 0)),
       Code::kDataLoss,
       {"dim 0 does not fit in 64 bits"}},
      {"product past 64 bits",
       npy(npy_bytes(dict("<f4", "(4294967296, 4294967296)"), 0)),
       Code::kDataLoss,
       {"(4294967296, 4294967296)", "too large"}},
      {"oversized claim",
       npy(npy_bytes(dict("<f4", "(1000000000,)"), 8)),
       Code::kDataLoss,
       {"(1000000000,)", "4000000000 bytes"}},
      {"fortran order",
       npy(npy_bytes("{'descr': '<f4', 'fortran_order': True, 'shape': (2,), }", 8)),
       Code::kUnsupported,
       {"x.npy", "Fortran order"}},
      {"garbage header", npy(npy_bytes("this is not a dict", 0)), Code::kDataLoss, {"x.npy", "dict"}},
  });
  CHECK_FALSE(formats::load_npy("no/such/q.npy").ok());
  CHECK_FALSE(formats::load_npy(HEADWAY_TEST_DATA).ok());  // a directory
}

}  // namespace
}  // namespace headway

#if HEADWAY_TEST_TOKENIZERS  // a build with the tokenizers (HEADWAY_TOKENIZERS)
namespace headway {
namespace {

TEST_CASE("bad input: tokenizer files and calls on an empty Tokenizer") {
  auto load = [](Result<Tokenizer> (*from)(const char*), std::string path) {
    return [from, path] { return status_of(from(path.c_str())); };
  };
  const std::string data = HEADWAY_TEST_DATA;
  check_rows({
      {"no GGUF", load(Tokenizer::from_gguf, "no/such/model.gguf"), Code::kNotFound, {"no/such/model.gguf"}},
      {"empty GGUF", load(Tokenizer::from_gguf, data + "/bad/empty.gguf"), Code::kDataLoss, {"empty.gguf"}},
      {"garbage GGUF",
       load(Tokenizer::from_gguf, data + "/bad/garbage.gguf"),
       Code::kInvalidArgument,
       {"garbage.gguf"}},
      {"truncated GGUF", load(Tokenizer::from_gguf, data + "/bad/truncated.gguf"), Code::kDataLoss, {"truncated.gguf"}},
      {"no tokenizer.json",
       load(Tokenizer::from_tokenizer_json, "no/such/tokenizer.json"),
       Code::kNotFound,
       {"no/such/tokenizer.json"}},
      {"config.json as tokenizer.json",
       load(Tokenizer::from_tokenizer_json, data + "/hf/gemma-7b.json"),
       Code::kInvalidArgument,
       {"gemma-7b.json: no model"}},
      {"no model dir", load(Tokenizer::from_model_dir, "no/such/dir"), Code::kNotFound, {"no/such/dir/vocab.txt"}},
      {"empty tokenizer encode",
       [] {
         Tokenizer t;
         int32_t ids[4];
         size_t n = 0;
         return t.encode("hi", ids, 4, &n);
       },
       Code::kFailedPrecondition,
       {"not loaded"}},
      {"empty tokenizer decode",
       [] {
         Tokenizer t;
         const int32_t ids[1] = {0};
         char out[4];
         size_t n = 0;
         return t.decode(ids, 1, out, 4, &n);
       },
       Code::kFailedPrecondition,
       {"not loaded"}},
      {"chat template of an empty tokenizer",
       [] { return status_of(ChatTemplate::of(Tokenizer(), "x.gguf")); },
       Code::kFailedPrecondition,
       {"not loaded"}},
      {"unknown chat template",
       [] { return status_of(ChatTemplate::recognize("{{ messages }}", "t.jinja")); },
       Code::kUnsupported,
       {"t.jinja: its chat template is not one headway recognizes"}},
      {"chat without messages",
       [] {
         std::string out;
         return ChatTemplate{}.render({}, &out);
       },
       Code::kInvalidArgument,
       {"chat: no messages"}},
  });
}

}  // namespace
}  // namespace headway
#endif  // HEADWAY_TEST_TOKENIZERS
