// The sampler's steps (headway/sampler.hpp) over caller scratch: one Candidate per id, filtered
// in place. No heap: std::partial_sort, std::sort and std::partition work in the range they are
// given.
#include "headway/sampler.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

namespace headway {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

// Falling value, ties to the lower id: a total order (no NaN gets here), so every sort gives the
// same order on every platform.
bool before(const Sampler::Candidate& a, const Sampler::Candidate& b) {
  return a.value > b.value || (a.value == b.value && a.id < b.id);
}

bool is_finite(float v) { return v == v && v != kInf && v != -kInf; }

// transformers' RepetitionPenaltyLogitsProcessor: divide a positive logit, multiply a negative one.
float penalize(float v, float repetition, float presence) {
  if (repetition != 1.0f) v = v < 0.0f ? v * repetition : v / repetition;
  return v - presence;
}

}  // namespace

Status Sampler::init(const SamplerParams& p, uint32_t n_vocab, void* scratch, size_t scratch_size) {
  if (!(p.temperature >= 0.0f) || p.temperature == kInf) {
    return Status::error(Code::kInvalidArgument, "sampler: temperature %g must be a finite number >= 0 (0: greedy)",
                         static_cast<double>(p.temperature));
  }
  if (!(p.top_p > 0.0f && p.top_p <= 1.0f)) {
    return Status::error(Code::kInvalidArgument, "sampler: top_p %g must be in (0, 1] (1: off)",
                         static_cast<double>(p.top_p));
  }
  if (!(p.min_p >= 0.0f && p.min_p <= 1.0f)) {
    return Status::error(Code::kInvalidArgument, "sampler: min_p %g must be in [0, 1] (0: off)",
                         static_cast<double>(p.min_p));
  }
  if (!(p.repetition_penalty > 0.0f) || p.repetition_penalty == kInf) {
    return Status::error(Code::kInvalidArgument,
                         "sampler: repetition_penalty %g must be a positive finite number (1: off)",
                         static_cast<double>(p.repetition_penalty));
  }
  if (!is_finite(p.presence_penalty)) {
    return Status::error(Code::kInvalidArgument, "sampler: presence_penalty %g must be a finite number (0: off)",
                         static_cast<double>(p.presence_penalty));
  }
  if (n_vocab == 0 || n_vocab > static_cast<uint32_t>(INT32_MAX)) {
    return Status::error(Code::kInvalidArgument, "sampler: n_vocab %u must be in 1..%d", n_vocab, INT32_MAX);
  }
  if (scratch == nullptr || scratch_size < scratch_bytes(n_vocab)) {
    return Status::error(Code::kInvalidArgument, "sampler: scratch of %zu bytes%s; a vocabulary of %u ids needs %zu",
                         scratch == nullptr ? size_t{0} : scratch_size, scratch == nullptr ? " (null)" : "", n_vocab,
                         scratch_bytes(n_vocab));
  }
  if (reinterpret_cast<uintptr_t>(scratch) % alignof(Candidate) != 0) {
    return Status::error(Code::kInvalidArgument, "sampler: scratch is not %zu-byte aligned", alignof(Candidate));
  }
  params_ = p;
  n_vocab_ = n_vocab;
  candidates_ = static_cast<Candidate*>(scratch);
  state_ = p.seed;
  return Status();
}

// SplitMix64 (Steele, Lea, Flood 2014): the top 24 bits of each output as a float in [0, 1).
float Sampler::next_uniform() {
  state_ += 0x9e3779b97f4a7c15ull;
  uint64_t z = state_;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  z ^= z >> 31;
  return static_cast<float>(z >> 40) * 0x1.0p-24f;
}

Status Sampler::filter(const float* logits, const int32_t* recent, size_t n_recent, uint32_t* kept, bool* sorted,
                       float* total) {
  if (candidates_ == nullptr) return Status::error(Code::kFailedPrecondition, "sampler: init() has not succeeded");
  if (logits == nullptr || (recent == nullptr && n_recent > 0)) {
    return Status::error(Code::kInvalidArgument, "sampler: the %s are null",
                         logits == nullptr ? "logits" : "recent ids");
  }
  const uint32_t n = n_vocab_;
  Candidate* c = candidates_;
  for (uint32_t i = 0; i < n; ++i) {
    if (logits[i] != logits[i] || logits[i] == kInf) {
      return Status::error(Code::kInvalidArgument, "sampler: logit %u is %s", i, logits[i] == kInf ? "inf" : "nan");
    }
    c[i] = {static_cast<int32_t>(i), logits[i]};
  }
  const size_t window = std::min<size_t>(n_recent, params_.penalty_window);
  const int32_t* ids = recent + (n_recent - window);
  for (size_t j = 0; j < window; ++j) {
    if (ids[j] < 0 || static_cast<uint32_t>(ids[j]) >= n) {
      return Status::error(Code::kInvalidArgument, "sampler: recent id %d (at %zu) is outside the vocabulary of %u",
                           ids[j], n_recent - window + j, n);
    }
  }

  // 1. Penalties, once per distinct id of the window: a penalized id's candidate is marked by a
  // negative id (-1 - id) until the pass ends.
  if (params_.repetition_penalty != 1.0f || params_.presence_penalty != 0.0f) {
    for (size_t j = 0; j < window; ++j) {
      Candidate& k = c[ids[j]];
      if (k.id < 0) continue;
      k.value = penalize(k.value, params_.repetition_penalty, params_.presence_penalty);
      k.id = -1 - k.id;
    }
    for (size_t j = 0; j < window; ++j) c[ids[j]].id = ids[j];
  }

  // 2. Greedy: the argmax, ties to the lowest id. Also the limit of a temperature so small that a
  // logit / temperature overflows to inf.
  auto greedy = [&]() -> Status {
    uint32_t best = 0;
    for (uint32_t i = 1; i < n; ++i) {
      if (c[i].value > c[best].value) best = i;
    }
    if (c[best].value == -kInf) {
      return Status::error(Code::kInvalidArgument, "sampler: all %u logits are -inf", n);
    }
    c[0] = {static_cast<int32_t>(best), 1.0f};
    *kept = 1, *sorted = true, *total = 1.0f;
    return Status();
  };
  if (params_.temperature == 0.0f) return greedy();

  // 3. Temperature; greedy when the largest logit / temperature overflows (its limit).
  if (params_.temperature != 1.0f) {
    float max = -kInf;
    for (uint32_t i = 0; i < n; ++i) max = std::max(max, c[i].value);
    if (max / params_.temperature == kInf) return greedy();
    for (uint32_t i = 0; i < n; ++i) c[i].value /= params_.temperature;
  }

  // 4. Top-k: the k largest, and every id tied with the k-th.
  uint32_t m = n;
  *sorted = false;
  if (params_.top_k > 0 && params_.top_k < n) {
    const uint32_t k = params_.top_k;
    std::partial_sort(c, c + k, c + n, before);
    const float kth = c[k - 1].value;
    Candidate* ties = std::partition(c + k, c + n, [kth](const Candidate& x) { return x.value == kth; });
    std::sort(c + k, ties, before);
    m = static_cast<uint32_t>(ties - c);
    *sorted = true;
  }

  // 5, 6. Top-p and min-p on the candidates by falling logit: numerators exp(l - max), the first
  // is 1.
  const bool top_p = params_.top_p<1.0f, min_p = params_.min_p> 0.0f;
  if ((top_p || min_p) && !*sorted) {
    std::sort(c, c + m, before);
    *sorted = true;
  }
  float max = -kInf;
  for (uint32_t i = 0; i < m; ++i) max = std::max(max, c[i].value);
  if (max == -kInf) return Status::error(Code::kInvalidArgument, "sampler: all %u logits are -inf", n);
  float sum = 0.0f;
  for (uint32_t i = 0; i < m; ++i) {
    c[i].value = std::exp(c[i].value - max);
    sum += c[i].value;
  }
  if (top_p) {
    const float limit = params_.top_p * sum;
    float before_i = 0.0f;
    uint32_t i = 0;
    while (i < m && (i == 0 || before_i < limit)) before_i += c[i++].value;
    m = i;
  }
  if (min_p) {
    uint32_t i = 1;
    while (i < m && c[i].value >= params_.min_p) ++i;  // c[0].value is 1: p_i / p_max = c[i].value
    m = i;
  }
  if (top_p || min_p) {
    sum = 0.0f;
    for (uint32_t i = 0; i < m; ++i) sum += c[i].value;
  }
  *kept = m;
  *total = sum;
  return Status();
}

Status Sampler::probabilities(const float* logits, const int32_t* recent, size_t n_recent, float* probs) {
  if (probs == nullptr) return Status::error(Code::kInvalidArgument, "sampler: the probabilities output is null");
  uint32_t kept = 0;
  bool sorted = false;
  float total = 0.0f;
  HEADWAY_RETURN_IF_ERROR(filter(logits, recent, n_recent, &kept, &sorted, &total));
  std::fill(probs, probs + n_vocab_, 0.0f);
  for (uint32_t i = 0; i < kept; ++i) probs[candidates_[i].id] = candidates_[i].value / total;
  return Status();
}

Result<int32_t> Sampler::sample(const float* logits, const int32_t* recent, size_t n_recent) {
  uint32_t kept = 0;
  bool sorted = false;
  float total = 0.0f;
  const Status s = filter(logits, recent, n_recent, &kept, &sorted, &total);
  if (!s.ok()) return s;
  if (params_.temperature == 0.0f) return candidates_[0].id;  // greedy: no draw
  const float target = next_uniform() * total;
  float sum = 0.0f;
  int32_t last = candidates_[0].id;
  for (uint32_t i = 0; i < kept; ++i) {
    if (candidates_[i].value <= 0.0f) continue;
    sum += candidates_[i].value;
    last = candidates_[i].id;
    if (sum > target) return last;
  }
  return last;  // u · total rounded up to the total: the last id with a nonzero probability
}

}  // namespace headway
