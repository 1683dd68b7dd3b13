// Model::load_state over random bytes into a tiny model (tests/support/tiny_model.hpp): a refused
// state leaves the model exactly as it was (its whole arena compared); an accepted one holds a
// position within the context, saves again, and the model decodes on from it. Every other input
// gets its trailing checksum recomputed first, so that mutations reach the checks behind it and
// the writes (the hash is the format's: FNV-1a over 8-byte words, then the tail's bytes).
//
// The seed corpus (corpus/model_state/) is states of this target's model at positions 0, 3 and 7:
// HEADWAY_FUZZ_WRITE_SEEDS=DIR fuzz_model_state writes them again (make_corpus.py cannot: the
// weights' fingerprint comes from the C++ test weights).
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "tests/fuzz/fuzz_common.hpp"
#include "tests/support/state_fnv.hpp"
#include "tests/support/tiny_model.hpp"

namespace {

using namespace headway;

struct Fixture {
  test::TinyWeights weights{test::tiny_model_config(true), 3};
  test::TinyModel model;
  test::TinyModel other;  // loads what the model saves again
  Fixture() {
    PlanOptions o;
    o.max_tokens = 8;
    FUZZ_CHECK(model.init(weights, o, nullptr).ok());
    FUZZ_CHECK(other.init(weights, o, nullptr).ok());
  }
};

Fixture& fixture() {
  static Fixture* f = new Fixture();
  return *f;
}

// The model at position `n` of a fixed prompt (its arena rewritten from a reset).
void prefill(test::TinyModel& m, uint32_t n) {
  m.model.reset();
  if (n == 0) return;
  const std::vector<int32_t> ids = test::tiny_prompt(n, 1);
  FUZZ_CHECK(m.model.prefill(ids.data(), n).ok());
}

void write_seeds(const char* dir) {
  Fixture& f = fixture();
  for (uint32_t n : {0u, 3u, 7u}) {
    prefill(f.model, n);
    std::vector<uint8_t> bytes(f.model.model.state_bytes());
    FUZZ_CHECK(f.model.model.save_state(bytes.data(), bytes.size(), nullptr).ok());
    const std::string path = std::string(dir) + "/position_" + std::to_string(n);
    std::FILE* out = std::fopen(path.c_str(), "wb");
    FUZZ_CHECK(out != nullptr && std::fwrite(bytes.data(), 1, bytes.size(), out) == bytes.size());
    std::fclose(out);
  }
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  if (const char* dir = std::getenv("HEADWAY_FUZZ_WRITE_SEEDS")) {
    write_seeds(dir);
    std::exit(0);
  }
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Fixture& f = fixture();
  prefill(f.model, 3);
  const uint8_t* arena = static_cast<const uint8_t*>(f.model.buffer);
  const std::vector<uint8_t> before(arena, arena + f.model.plan.arena_bytes);
  std::vector<uint8_t> in(data, data + size);
  if (size >= 8 && (data[size - 1] & 1) == 0) {  // fix the checksum of every other input
    const uint64_t sum = test::state_fnv(in.data(), size - 8);
    std::memcpy(in.data() + size - 8, &sum, 8);
  }
  Model& m = f.model.model;
  const Status s = m.load_state(in.empty() ? nullptr : in.data(), in.size());
  if (!s.ok()) {
    FUZZ_CHECK(s.message()[0] != '\0');
    FUZZ_CHECK(m.position() == 3);
    FUZZ_CHECK(std::memcmp(arena, before.data(), before.size()) == 0);
    return 0;
  }
  FUZZ_CHECK(m.position() <= f.model.plan.config.max_seq);
  std::vector<uint8_t> again(m.state_bytes());
  FUZZ_CHECK(m.save_state(again.data(), again.size(), nullptr).ok());
  FUZZ_CHECK(f.other.model.load_state(again.data(), again.size()).ok());
  if (m.position() < f.model.plan.config.max_seq) FUZZ_CHECK(m.decode(1).ok());
  return 0;
}
