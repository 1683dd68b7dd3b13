// Instruction counts of a Cortex-M image under qemu-system-arm -icount shift=0, read from SysTick.
//
// With -icount shift=0 qemu advances guest time by exactly 1 ns per executed instruction, and
// SysTick on the processor clock follows guest time: one tick per 31.25 instructions on
// mps3-an547 (32 MHz), the same in every run. Without -icount SysTick stands still or follows the
// host's clock. The conversion is not assumed: instruction_count_start() times a loop of known
// length (subs/bne in inline asm) three times and derives instructions per tick from them in the
// same run; when SysTick stands still, or the three timings are more than a tick apart (the
// host's clock), counting is off and instruction_counting() says so.
//
// Instructions are not cycles. A Cortex-M55 issues a 128-bit MVE instruction in two beats
// (overlapping the beats of its neighbours), loads and branches cost what the memory system and
// pipeline make them, and qemu models none of it. Counts compare code paths on the same input;
// they do not time them. On a board SysTick counts cycles and the conversion has no meaning:
// read the ticks there.
//
// Resolution is one tick (about 31 instructions on mps3-an547), and a timed interval includes the
// counter reads at its ends (a few dozen instructions). The SysTick exception counts the wraps of
// the 24-bit counter (startup.cc's vector 15), so an interval may be longer than 2^24 ticks.
//
//   if (cortex_m::instruction_count_start()) {
//     const uint64_t t0 = cortex_m::systick_ticks();
//     work();
//     const uint64_t n = cortex_m::instructions_since(t0);
//   }
#pragma once

#include <cstdint>

namespace cortex_m {

struct InstructionCalibration {
  static constexpr int kRuns = 3;
  uint64_t instructions = 0;   // executed by the calibration loop in each run
  uint64_t ticks[kRuns] = {};  // SysTick ticks of each run (0: SysTick stands still)
  bool counting = false;       // ticks follow instructions: moving, and the runs within a tick
};

// Starts SysTick (processor clock, reload 0xFFFFFF, the wrap exception on) from zero and
// calibrates. Returns instruction_counting(). Calling it again restarts and recalibrates.
bool instruction_count_start();

bool instruction_counting();
const InstructionCalibration& instruction_calibration();

// SysTick ticks since instruction_count_start(), 64 bits (wraps included).
uint64_t systick_ticks();

// ticks × the calibration's instructions / its ticks (all runs), rounded; 0 when counting is off.
uint64_t ticks_to_instructions(uint64_t ticks);

inline uint64_t instructions_since(uint64_t start_ticks) {
  return ticks_to_instructions(systick_ticks() - start_ticks);
}

// One line: the calibration and its instructions per tick, or why there is no count.
void print_instruction_calibration();

}  // namespace cortex_m

// Vector 15 (startup.cc): counts the wraps of SysTick's 24-bit counter.
extern "C" void headway_systick();
