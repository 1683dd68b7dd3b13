// headway bench --tokenize FILE: a tokenizer's encode speed on one thread. FILE is a GGUF, a
// tokenizer.json or a model folder, as `headway tokenize` takes them; the text is a megabyte of
// mixed prose, code, scripts and emoji (bench/data/tokenize_text.txt repeated, cut at a character
// boundary) or --text-file's bytes. Each repetition encodes the whole text once, after one
// untimed encode that grows the tokenizer's scratch; MB/s (10^6 bytes) is the median over --reps
// (default 5), with the minimum and maximum. bench/tokenize_vs_hf.py runs the same text through the
// `tokenizers` package beside it.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <sys/stat.h>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench/command/bench_command.hpp"
#include "examples/cli/cli_common.hpp"
#include "headway/tools/tokenizer.hpp"

namespace headway::cli::bench_command {

extern const unsigned char kTokenizeText[];
extern const size_t kTokenizeTextBytes;

namespace {

constexpr size_t kTextBytes = size_t{1} << 20;

// The built-in sample repeated to kTextBytes, cut before a UTF-8 continuation byte.
std::string megabyte_of_text() {
  const std::string sample(reinterpret_cast<const char*>(kTokenizeText), kTokenizeTextBytes);
  std::string text;
  text.reserve(kTextBytes + sample.size());
  while (text.size() < kTextBytes) text += sample;
  size_t cut = kTextBytes;
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;
  text.resize(cut);
  return text;
}

Result<Tokenizer> load(const char* path) {
  struct stat st {};
  if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) return Tokenizer::from_model_dir(path);
  const size_t n = std::strlen(path);
  if (n >= 5 && std::strcmp(path + n - 5, ".gguf") == 0) return Tokenizer::from_gguf(path);
  return Tokenizer::from_tokenizer_json(path);
}

}  // namespace

Status run_tokenize(const Options& o) {
  Result<Tokenizer> loaded = load(o.tokenize);
  if (!loaded.ok()) return loaded.status();
  Tokenizer& tok = loaded.value();
  std::string text;
  if (o.text_file != nullptr) {
    HEADWAY_RETURN_IF_ERROR(read_text_file("--text-file", o.text_file, &text));
  } else {
    text = megabyte_of_text();
  }
  const uint32_t reps = o.reps == bench::kAutoReps ? 5 : o.reps;
  std::vector<int32_t> ids;
  HEADWAY_RETURN_IF_ERROR(tok.encode(text, &ids));  // untimed: the scratch grows to this text
  std::vector<double> mbps;
  for (uint32_t r = 0; r < reps; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    HEADWAY_RETURN_IF_ERROR(tok.encode(text, &ids));
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    mbps.push_back(static_cast<double>(text.size()) / 1e6 / s);
  }
  std::sort(mbps.begin(), mbps.end());
  const double median = mbps[mbps.size() / 2];
  if (o.json) {
    nlohmann::json j = {{"tokenizer", o.tokenize},
                        {"text_bytes", text.size()},
                        {"tokens", ids.size()},
                        {"threads", 1},
                        {"reps", reps},
                        {"mb_per_s", sig6(median)},
                        {"mb_per_s_min", sig6(mbps.front())},
                        {"mb_per_s_max", sig6(mbps.back())}};
    std::printf("%s\n", j.dump().c_str());
  } else {
    std::printf("headway bench --tokenize %s: %zu bytes -> %zu tokens, 1 thread, %u reps\n", o.tokenize, text.size(),
                ids.size(), reps);
    std::printf("encode %.1f MB/s (median; min %.1f, max %.1f)\n", median, mbps.front(), mbps.back());
  }
  return Status();
}

}  // namespace headway::cli::bench_command
