// Startup of headway's Cortex-M images (sections.ld lays them out): the vector table, then on
// reset: FPU (and Helium) on, .data copied, .bss zeroed, static constructors, main(), and an
// exit through semihosting with main's status. No C library startup (-nostartfiles): newlib's
// rdimon crt0 sizes a heap from the host's answer, wrongly on mps3-an547, and there is no heap.
// A fault prints its name, the faulting pc and the fault status registers, and exits with
// status 3.
#include <cstdint>

#include "instruction_count.hpp"
#include "semihosting.hpp"

extern "C" {
extern uint32_t __stack_top;
extern uint32_t __data_start, __data_end, __data_load, __bss_start, __bss_end;
extern void (*__preinit_array_start[])();
extern void (*__preinit_array_end[])();
extern void (*__init_array_start[])();
extern void (*__init_array_end[])();
int main();
void Reset_Handler();
[[noreturn]] void headway_cortex_m_start();
}

namespace {

[[noreturn]] void report(const char* what, const uint32_t* frame) {
  cortex_m::Text t;
  t.str(what).str(": fault, stopping");
  if (frame != nullptr) {
    // Exception frame: r0-r3, r12, lr, pc, xpsr. CFSR and BFAR say which access failed.
    t.str(" (pc 0x").hex(frame[6]).str(", lr 0x").hex(frame[5]).str(", cfsr 0x");
    t.hex(*reinterpret_cast<volatile uint32_t*>(0xE000ED28u)).str(", bfar 0x");
    t.hex(*reinterpret_cast<volatile uint32_t*>(0xE000ED38u)).str(")");
  }
  t.str("\n").print();
  cortex_m::exit(3);
}

}  // namespace

// The handlers pass the stacked exception frame (MSP or PSP, per EXC_RETURN bit 2) to C.
#define HEADWAY_FAULT_HANDLER(name, label)                                                    \
  extern "C" [[noreturn]] void name##_report(const uint32_t* frame) { report(label, frame); } \
  extern "C" __attribute__((naked)) void name() {                                             \
    __asm__ volatile(                                                                         \
        "tst lr, #4\n"                                                                        \
        "ite eq\n"                                                                            \
        "mrseq r0, msp\n"                                                                     \
        "mrsne r0, psp\n"                                                                     \
        "b " #name "_report\n");                                                              \
  }
HEADWAY_FAULT_HANDLER(headway_nmi, "NMI")
HEADWAY_FAULT_HANDLER(headway_hard_fault, "HardFault")
HEADWAY_FAULT_HANDLER(headway_mem_manage, "MemManage")
HEADWAY_FAULT_HANDLER(headway_bus_fault, "BusFault")
HEADWAY_FAULT_HANDLER(headway_usage_fault, "UsageFault")
HEADWAY_FAULT_HANDLER(headway_secure_fault, "SecureFault")
HEADWAY_FAULT_HANDLER(headway_unexpected, "unexpected exception")
#undef HEADWAY_FAULT_HANDLER

using Handler = void (*)();

// Initial SP, then the 15 system exceptions; no external interrupts are enabled.
__attribute__((section(".vectors"), used)) const Handler headway_vector_table[16] = {
    reinterpret_cast<Handler>(&__stack_top),
    Reset_Handler,
    headway_nmi,
    headway_hard_fault,
    headway_mem_manage,
    headway_bus_fault,
    headway_usage_fault,
    headway_secure_fault,  // Armv8-M only; reserved on the M4
    nullptr,
    nullptr,
    nullptr,
    headway_unexpected,  // SVCall
    headway_unexpected,  // DebugMonitor
    nullptr,
    headway_unexpected,  // PendSV
    headway_systick,     // SysTick: counts the counter's wraps (instruction_count.cc)
};

// Naked: with -mfloat-abi=hard the compiler may touch FP (or, on the M55, Helium) registers in
// any function, so CP10/CP11 must be granted full access in CPACR before the first one runs.
extern "C" __attribute__((naked, noreturn)) void Reset_Handler() {
  __asm__ volatile(
      "ldr r0, =0xE000ED88\n"  // CPACR
      "ldr r1, [r0]\n"
      "orr r1, r1, #(0xF << 20)\n"  // CP10, CP11: full access
      "str r1, [r0]\n"
      "dsb\n"
      "isb\n"
      "b headway_cortex_m_start\n");
}

extern "C" void headway_cortex_m_start() {
  const uint32_t* src = &__data_load;
  for (uint32_t* p = &__data_start; p < &__data_end;) *p++ = *src++;
  for (uint32_t* p = &__bss_start; p < &__bss_end;) *p++ = 0;
  for (auto f = __preinit_array_start; f < __preinit_array_end; ++f) (*f)();
  for (auto f = __init_array_start; f < __init_array_end; ++f) (*f)();
  cortex_m::exit(main());
}
