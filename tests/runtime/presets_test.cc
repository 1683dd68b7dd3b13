// One test visits every built-in config and checks it against its published numbers.
#include <doctest/doctest.h>

#include <string>

#include "headway/plan.hpp"
#include "headway/presets.hpp"

namespace headway {
namespace {

struct Published {
  const char* name;
  uint32_t d_model, n_heads, n_kv_heads, head_dim, max_seq, n_layers;
};

constexpr Published kPublished[] = {
    {"bert-base", 768, 12, 12, 64, 512, 12},       {"bert-large", 1024, 16, 16, 64, 512, 24},
    {"gpt2", 768, 12, 12, 64, 1024, 12},           {"llama-2-7b", 4096, 32, 32, 128, 4096, 32},
    {"llama-2-70b", 8192, 64, 8, 128, 4096, 80},   {"mistral-7b", 4096, 32, 8, 128, 32768, 32},
    {"llama-3-8b", 4096, 32, 8, 128, 8192, 32},    {"llama-3-70b", 8192, 64, 8, 128, 8192, 80},
    {"llama-3.2-1b", 2048, 32, 8, 64, 131072, 16}, {"gemma-2b", 2048, 8, 1, 256, 8192, 18},
    {"gemma-7b", 3072, 16, 16, 256, 8192, 28},     {"gemma-2-2b", 2304, 8, 4, 256, 8192, 26},
    {"qwen2.5-0.5b", 896, 14, 2, 64, 32768, 24},   {"qwen3-0.6b", 1024, 16, 8, 128, 40960, 28},
    {"smollm2-135m", 576, 9, 3, 64, 8192, 30},     {"tinyllama-1.1b", 2048, 32, 4, 64, 2048, 22},
    {"phi-2", 2560, 32, 32, 80, 2048, 32},         {"phi-3-mini", 3072, 32, 32, 96, 4096, 32},
    {"gemma-3-270m", 640, 4, 1, 256, 32768, 18},   {"gemma-3-1b", 1152, 4, 1, 256, 32768, 26},
    {"qwen3-1.7b", 2048, 16, 8, 128, 40960, 28},   {"smollm3-3b", 2048, 16, 4, 128, 65536, 36},
    {"gpt-oss-20b", 2880, 64, 8, 64, 131072, 24},  {"bloom-560m", 1024, 16, 16, 64, 2048, 24},
    {"mpt-7b", 4096, 32, 32, 128, 2048, 32},
};

TEST_CASE("every preset is valid, plannable and has its published numbers") {
  size_t n = 0;
  const presets::Entry* all = presets::all(&n);
  CHECK(n == sizeof(kPublished) / sizeof(kPublished[0]));
  for (size_t i = 0; i < n; ++i) {
    const Config c = all[i].make();
    INFO(all[i].name);
    CHECK(std::string(c.name) == all[i].name);
    CHECK(validate(c).ok());
    const Result<Plan> p = make_plan(c);
    REQUIRE(p.ok());
    CHECK(p.value().arena_bytes > 0);
    const Published* pub = nullptr;
    for (const Published& q : kPublished) {
      if (std::string(q.name) == all[i].name) pub = &q;
    }
    REQUIRE(pub != nullptr);
    CHECK(c.d_model == pub->d_model);
    CHECK(c.n_heads == pub->n_heads);
    CHECK(c.kv_heads() == pub->n_kv_heads);
    CHECK(c.head_size() == pub->head_dim);
    CHECK(c.max_seq == pub->max_seq);
    CHECK(c.n_layers == pub->n_layers);
    CHECK(presets::find(all[i].name) == &all[i]);
  }
  CHECK(presets::find("llama-5") == nullptr);
  CHECK(presets::find(nullptr) == nullptr);
}

TEST_CASE("family details: rope, windows, softcap, encoders") {
  CHECK_FALSE(presets::bert_base().causal);
  CHECK(presets::gpt2_small().rope.style == RopeStyle::kNone);
  CHECK(presets::llama3_8b().rope.theta == 500000.0f);
  CHECK(presets::phi2().rotary_dims() == 32);
  CHECK(presets::gemma2_2b().softcap == 50.0f);
  CHECK(presets::gemma2_2b().logit_scale() == doctest::Approx(1.0 / 16.0));
  CHECK(presets::mistral_7b().window == 4096);
  CHECK(presets::phi3_mini().window == 2047);
  CHECK(presets::qwen3_06b().qk_norm);
  CHECK(presets::qwen25_05b().qkv_bias);
}

TEST_CASE("layer kinds: Gemma 2 and 3, SmolLM3 and gpt-oss plan each layer as published") {
  const Plan g2 = plan_for(presets::gemma2_2b(), {});
  CHECK(g2.sliding_layers == 13);
  CHECK(g2.layer(0).window == 4096);
  CHECK(g2.layer(1).window == 0);
  for (const Config& c : {presets::gemma3_270m(), presets::gemma3_1b()}) {
    INFO(c.name);
    const Plan p = plan_for(c, {});
    CHECK(p.sliding_layers == c.n_layers - c.n_layers / 6);
    CHECK(p.layer(4).window == 512);
    CHECK(p.layer(4).rope_theta == 10000.0f);
    CHECK(p.layer(5).window == 0);
    CHECK(p.layer(5).rope_theta == 1000000.0f);
  }
  // Gemma 3 1B at 32K: 4 full caches and 22 rings of 512 + 511 rows (1 kv head × 256 × f16, K and V).
  CHECK(plan_for(presets::gemma3_1b(), {}).kv_cache_bytes == 4ull * 32768 * 1024 + 22ull * 1023 * 1024);
  const Plan s = plan_for(presets::smollm3_3b(), {});
  CHECK(s.layer(2).rope == RopeStyle::kNeox);
  CHECK(s.layer(3).rope == RopeStyle::kNone);
  CHECK(s.layer(35).rope == RopeStyle::kNone);
  const Plan g = plan_for(presets::gpt_oss_20b(), {});
  CHECK(g.layer(0).window == 128);
  CHECK(g.layer(1).window == 0);
  CHECK(g.layer(1).sinks);
  // ALiBi: no RoPE; the presets equal their config.json (tests/data/hf, read in formats_test).
  for (const Config& c : {presets::bloom_560m(), presets::mpt_7b()}) {
    INFO(c.name);
    const Plan p = plan_for(c, {});
    CHECK(p.layer(0).alibi);
    CHECK(p.layer(0).rope == RopeStyle::kNone);
    CHECK(p.alibi_bytes == align_up(uint64_t{c.n_heads} * 4));
  }
}

}  // namespace
}  // namespace headway
