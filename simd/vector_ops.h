// The vector ops the kernels are written in, chosen once for every kernel file: Highway's for the
// target being compiled, or, on Armv8.1-M with MVE-F (Cortex-M55, M85), headway's Helium ops
// (simd/helium.h), for which Highway 1.0.3 has no target (it compiles SCALAR there). Each kernel
// file says `namespace hn = HEADWAY_SIMD_OPS;` inside its per-target namespace.
//
// HEADWAY_SIMD_HELIUM is 1 where the Helium ops are in use. The build turns them off with
// HEADWAY_KERNELS_NO_HELIUM (CMake: HEADWAY_KERNELS_HELIUM=OFF), which leaves Highway's SCALAR
// code: the second opinion, and the baseline of the instruction counts (make bench-baremetal).
#pragma once

#if defined(__ARM_FEATURE_MVE) && (__ARM_FEATURE_MVE & 2) && !defined(HEADWAY_KERNELS_NO_HELIUM)
#define HEADWAY_SIMD_HELIUM 1
#include "simd/helium.h"
#define HEADWAY_SIMD_OPS ::headway::simd::helium
#else
#define HEADWAY_SIMD_HELIUM 0
#define HEADWAY_SIMD_OPS ::hwy::HWY_NAMESPACE
#endif

// Before a loop along head_dim whose body is a register block: on Helium, unroll it at most twice.
// GCC 12 unrolls such loops completely at the specialized head_dims, then keeps every address of
// the unrolled body in its own register and spills them (and the vectors) to the stack: MVE has 8
// vector registers and fewer spare core ones than the AArch64 and x86 targets.
#if HEADWAY_SIMD_HELIUM
#define HEADWAY_SIMD_HEAD_DIM_LOOP _Pragma("GCC unroll 2")
#else
#define HEADWAY_SIMD_HEAD_DIM_LOOP
#endif

// The name of the code the kernels run: "MVE" for the Helium ops, else Highway's target name.
#if HEADWAY_SIMD_HELIUM
#define HEADWAY_SIMD_TARGET_NAME "MVE"
#else
#define HEADWAY_SIMD_TARGET_NAME hwy::TargetName(HWY_TARGET)
#endif
