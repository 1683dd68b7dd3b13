// The whole decoder of tiny_decoder.hpp on the Cortex-M, checked against the double reference
// (decoder_run.cc).
#pragma once

namespace tiny_decoder {

// Runs the model (prefill, then greedy decoding fed back), prints what it ran and how close it
// came to the reference (with its instruction counts when `counting`: qemu -icount), and returns
// whether every greedy token equals the reference's and every logit is within tolerance.
bool run(bool counting);

}  // namespace tiny_decoder
