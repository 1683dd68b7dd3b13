// The sampler's filtered distribution for rows of logits, for sampler_check.py:
//   sampler_probs V TEMPERATURE TOP_K TOP_P MIN_P REPETITION PRESENCE WINDOW logits.f32 recent.i32 out.f32
// logits.f32 holds R rows of V little-endian f32 logits, recent.i32 the recent ids (int32, oldest
// first; the same for every row; may be empty); out.f32 gets the R rows of Sampler::probabilities.
// Exits 2 with the Status message on any error.
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "headway/sampler.hpp"

namespace {

int fail(const char* what) {
  std::fprintf(stderr, "sampler_probs: %s\n", what);
  return 2;
}

template <class T>
bool read_all(const char* path, std::vector<T>& out) {
  std::FILE* f = std::fopen(path, "rb");
  if (f == nullptr) return false;
  T buf[1024];
  size_t got = 0;
  while ((got = std::fread(buf, sizeof(T), 1024, f)) > 0) out.insert(out.end(), buf, buf + got);
  const bool ok = std::ferror(f) == 0;
  std::fclose(f);
  return ok;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 12) {
    return fail(
        "usage: sampler_probs V TEMPERATURE TOP_K TOP_P MIN_P REPETITION PRESENCE WINDOW logits.f32 "
        "recent.i32 out.f32");
  }
  const uint32_t n_vocab = static_cast<uint32_t>(std::strtoul(argv[1], nullptr, 10));
  headway::SamplerParams p;
  p.temperature = std::strtof(argv[2], nullptr);
  p.top_k = static_cast<uint32_t>(std::strtoul(argv[3], nullptr, 10));
  p.top_p = std::strtof(argv[4], nullptr);
  p.min_p = std::strtof(argv[5], nullptr);
  p.repetition_penalty = std::strtof(argv[6], nullptr);
  p.presence_penalty = std::strtof(argv[7], nullptr);
  p.penalty_window = static_cast<uint32_t>(std::strtoul(argv[8], nullptr, 10));
  std::vector<float> logits;
  std::vector<int32_t> recent;
  if (!read_all(argv[9], logits) || !read_all(argv[10], recent)) return fail("cannot read the input files");
  if (n_vocab == 0 || logits.size() % n_vocab != 0) return fail("the logits are not whole rows of V");
  std::vector<headway::Sampler::Candidate> scratch(n_vocab);
  headway::Sampler sampler;
  headway::Status s = sampler.init(p, n_vocab, scratch.data(), scratch.size() * sizeof(scratch[0]));
  if (!s.ok()) return fail(s.message());
  std::vector<float> probs(logits.size());
  for (size_t r = 0; r < logits.size() / n_vocab; ++r) {
    s = sampler.probabilities(logits.data() + r * n_vocab, recent.data(), recent.size(), probs.data() + r * n_vocab);
    if (!s.ok()) return fail(s.message());
  }
  std::FILE* out = std::fopen(argv[11], "wb");
  if (out == nullptr) return fail("cannot write the output file");
  const bool ok = std::fwrite(probs.data(), sizeof(float), probs.size(), out) == probs.size();
  return std::fclose(out) == 0 && ok ? 0 : fail("cannot write the output file");
}
