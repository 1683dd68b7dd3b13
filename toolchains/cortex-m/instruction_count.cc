#include "instruction_count.hpp"

#include "semihosting.hpp"

namespace cortex_m {

namespace {

// SysTick (Armv7-M / Armv8-M system control space) and the SCB's interrupt control register.
volatile uint32_t& syst_csr() { return *reinterpret_cast<volatile uint32_t*>(0xE000E010u); }
volatile uint32_t& syst_rvr() { return *reinterpret_cast<volatile uint32_t*>(0xE000E014u); }
volatile uint32_t& syst_cvr() { return *reinterpret_cast<volatile uint32_t*>(0xE000E018u); }
volatile uint32_t& scb_icsr() { return *reinterpret_cast<volatile uint32_t*>(0xE000ED04u); }

constexpr uint32_t kCsrEnable = 1u << 0;
constexpr uint32_t kCsrTickInt = 1u << 1;
constexpr uint32_t kCsrProcessorClock = 1u << 2;
constexpr uint32_t kIcsrPendSysTick = 1u << 26;  // PENDSTSET
constexpr uint32_t kReload = 0xFFFFFFu;          // 24 bits: one wrap every 2^24 ticks
constexpr uint32_t kPeriod = kReload + 1;

// 2 instructions per iteration (subs, bne), so 4,000,000 instructions: about 128000 ticks on
// mps3-an547, which puts the tick's phase (±1) at 1e-5 of the result, and a few milliseconds of
// qemu.
constexpr uint32_t kCalibrationIterations = 2000000;
constexpr uint64_t kCalibrationInstructions = 2 * uint64_t{kCalibrationIterations};

volatile uint32_t g_wraps = 0;
InstructionCalibration g_calibration;

// Exactly 2 · iterations instructions between its first and its last (the final, untaken bne
// included); the call, the return and the counter reads around it add about one tick's worth,
// which the calibration counts as loop (1e-5 of it).
__attribute__((noinline)) void run_known_instructions(uint32_t iterations) {
  __asm__ volatile(
      "1:\n"
      "subs %0, %0, #1\n"
      "bne 1b\n"
      : "+r"(iterations)
      :
      : "cc");
}

uint64_t time_known_instructions() {
  const uint64_t t0 = systick_ticks();
  run_known_instructions(kCalibrationIterations);
  return systick_ticks() - t0;
}

}  // namespace

bool instruction_count_start() {
  syst_csr() = 0;
  syst_rvr() = kReload;
  syst_cvr() = 0;  // any write clears it; the first tick loads kReload
  g_wraps = 0;
  syst_csr() = kCsrEnable | kCsrTickInt | kCsrProcessorClock;
  InstructionCalibration c;
  c.instructions = kCalibrationInstructions;
  for (uint64_t& t : c.ticks) t = time_known_instructions();
  uint64_t lo = c.ticks[0], hi = c.ticks[0];
  for (const uint64_t t : c.ticks) {
    lo = t < lo ? t : lo;
    hi = t > hi ? t : hi;
  }
  c.counting = lo > 0 && hi - lo <= 1;
  g_calibration = c;
  return c.counting;
}

bool instruction_counting() { return g_calibration.counting; }

const InstructionCalibration& instruction_calibration() { return g_calibration; }

// Ticks since the start, M: CVR is 0 at M = 0, then kReload at M = 1, counting down to 0 at
// M = kPeriod, where the wrap exception fires; so M = wraps · kPeriod + (kPeriod − CVR), or
// wraps · kPeriod when CVR is 0. With interrupts masked, a wrap that happened since the handler
// last ran shows as PENDSTSET: it is counted here, and CVR read again after it.
uint64_t systick_ticks() {
  uint32_t primask;
  __asm__ volatile(
      "mrs %0, primask\n"
      "cpsid i\n"
      : "=r"(primask)
      :
      : "memory");
  uint32_t wraps = g_wraps;
  uint32_t current = syst_cvr();
  if ((scb_icsr() & kIcsrPendSysTick) != 0) {
    ++wraps;
    current = syst_cvr();
  }
  __asm__ volatile("msr primask, %0\n" : : "r"(primask) : "memory");
  return uint64_t{wraps} * kPeriod + (current == 0 ? 0 : kPeriod - current);
}

uint64_t ticks_to_instructions(uint64_t ticks) {
  const InstructionCalibration& c = g_calibration;
  if (!c.counting) return 0;
  uint64_t calibration_ticks = 0;
  for (const uint64_t t : c.ticks) calibration_ticks += t;
  const uint64_t calibration_instructions = c.instructions * InstructionCalibration::kRuns;
  return (ticks * calibration_instructions + calibration_ticks / 2) / calibration_ticks;
}

void print_instruction_calibration() {
  const InstructionCalibration& c = g_calibration;
  Text t;
  uint64_t sum = 0;
  for (const uint64_t ticks : c.ticks) sum += ticks;
  auto runs = [&] {
    for (int i = 0; i < InstructionCalibration::kRuns; ++i) t.str(i == 0 ? "" : ", ").u64(c.ticks[i]);
  };
  if (sum == 0) {
    t.str("instruction counter: off, SysTick does not advance (run qemu-system-arm with -icount shift=0)\n");
  } else if (!c.counting) {
    t.str("instruction counter: off, SysTick does not follow the instruction count (");
    runs();
    t.str(" ticks for the same loop; qemu-system-arm -icount shift=0 makes it)\n");
  } else {
    t.str("instruction counter: ").u64(c.instructions).str(" instructions of a subs/bne loop in ");
    runs();
    t.str(" SysTick ticks: ")
        .fixed(static_cast<double>(c.instructions * InstructionCalibration::kRuns) / static_cast<double>(sum), 4)
        .str(" instructions per tick (qemu -icount; instructions, not cycles)\n");
  }
  t.print();
}

}  // namespace cortex_m

extern "C" void headway_systick() { cortex_m::g_wraps = cortex_m::g_wraps + 1; }
