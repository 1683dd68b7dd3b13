// The sampler: the next token id from a row of logits, allocating nothing. The caller gives it
// scratch memory at init (Sampler::scratch_bytes(n_vocab): 8 bytes per vocabulary id); the
// filters run in that memory; the draws come from a PRNG of its own (SplitMix64: the same seed
// gives the same stream of numbers on every platform and standard library).
//
// The steps run in Hugging Face transformers' generate() order (its logits processors, then its
// warpers), each with transformers' definition:
//   1. repetition penalty (RepetitionPenaltyLogitsProcessor): every id in the window of recent ids
//      has its logit divided by the penalty when positive, multiplied by it when negative; then the
//      presence penalty (llama.cpp's penalties sampler; transformers has none): subtracted once from
//      every id in the window. Each id counts once however often it occurs in the window.
//   2. temperature 0: greedy. The argmax of the penalized logits, ties to the lowest id; no draw.
//   3. temperature (TemperatureLogitsWarper): logits / temperature.
//   4. top-k (TopKLogitsWarper): ids below the k-th largest logit are removed (ties with it stay).
//   5. top-p (TopPLogitsWarper): in order of falling probability, an id stays while the
//      probability of the ids before it is below top_p (the first always stays).
//   6. min-p (MinPLogitsWarper): ids whose probability is below min_p · the largest are removed.
//   7. softmax over what stays, and one draw: a uniform u in [0, 1) from the PRNG, and the first
//      id whose running sum of probabilities passes u, the ids taken by falling logit (ties: lower
//      id first) when a filter of 4-6 sorted them, else in id order.
// Filters that are off (top_k 0, top_p 1, min_p 0, penalties 1 and 0) cost nothing; the others
// sort the candidates by falling logit (ties: lower id first, so the order is the same on every
// platform): a partial sort of k when top-k is on, else a full sort when top-p or min-p is on.
// Logits are f32 and so is the arithmetic (std::exp): probabilities agree across platforms to a
// libm's rounding.
#pragma once

#include <cstddef>
#include <cstdint>

#include "headway/status.hpp"

namespace headway {

struct SamplerParams {
  float temperature = 1.0f;         // >= 0; 0: greedy (the steps after 2 do not run)
  uint32_t top_k = 0;               // 0: off; more than the vocabulary: off
  float top_p = 1.0f;               // (0, 1]; 1: off
  float min_p = 0.0f;               // [0, 1]; 0: off
  float repetition_penalty = 1.0f;  // > 0; 1: off
  float presence_penalty = 0.0f;    // finite, either sign; 0: off
  uint32_t penalty_window = 64;     // the penalties look at the last this many recent ids; 0: none
  uint64_t seed = 0;
};

class Sampler {
 public:
  // One candidate of scratch: an id and its working value.
  struct Candidate {
    int32_t id;
    float value;
  };

  // Scratch bytes for a vocabulary of n_vocab ids (aligned to alignof(Candidate) = 4).
  static constexpr size_t scratch_bytes(uint32_t n_vocab) { return size_t{n_vocab} * sizeof(Candidate); }

  // Checks the parameters (a Status naming the parameter and the value: a negative or NaN
  // temperature, top_p outside (0, 1], min_p outside [0, 1], a repetition penalty that is not a
  // positive finite number, a presence penalty that is not finite), the vocabulary (at least 1 id,
  // below 2^31) and the scratch (its size and alignment), and seeds the PRNG. On error the
  // sampler is left as it was.
  Status init(const SamplerParams& params, uint32_t n_vocab, void* scratch, size_t scratch_size);

  // The filtered distribution of steps 1-7 for one row of n_vocab logits: probs[i] for id i, 0
  // for every id a filter removed; they sum to 1 (within f32 rounding). Greedy gives 1 at the
  // argmax. recent[0..n_recent) are the ids so far (oldest first; the last penalty_window of them
  // count). Draws nothing: the PRNG is not advanced.
  Status probabilities(const float* logits, const int32_t* recent, size_t n_recent, float* probs);

  // The next id: steps 1-7 and one draw (greedy draws nothing). The PRNG advances by one number
  // per draw, so a sampler re-seeded with the same seed and given the same logits and recent ids
  // gives the same ids.
  Result<int32_t> sample(const float* logits, const int32_t* recent, size_t n_recent);

  // Restarts the PRNG stream at `seed`.
  void reseed(uint64_t seed) { state_ = seed; }
  // The next uniform number in [0, 1) of the stream (24 bits), as the draw uses it.
  float next_uniform();

  const SamplerParams& params() const { return params_; }
  uint32_t n_vocab() const { return n_vocab_; }

 private:
  // Steps 1-6 into scratch: candidates_[0..*kept) hold the ids that stay, by falling logit when
  // *sorted (otherwise in id order), their values the softmax numerators exp(l - max); *total
  // their sum. Greedy: *kept = 1, the argmax.
  Status filter(const float* logits, const int32_t* recent, size_t n_recent, uint32_t* kept, bool* sorted,
                float* total);

  SamplerParams params_{};
  uint32_t n_vocab_ = 0;
  Candidate* candidates_ = nullptr;
  uint64_t state_ = 0;
};

}  // namespace headway
