// What this build of headway holds and where its kernels run on this CPU, for tools that
// report it (headway run, headway bench, headway doctor).
#pragma once

namespace headway {

// True when this build has XNNPACK (HEADWAY_XNNPACK): only then can an AttentionLayer or a
// Session run a plan with Projection::kXnnpack (their init refuses it otherwise).
bool built_with_xnnpack();

// The Highway target the attention kernels dispatch to on this CPU ("AVX2", "NEON", "SVE2_128",
// ...; the one fixed target on bare metal), or "MVE": headway's Helium kernels on Armv8.1-M with
// MVE-F (Cortex-M55, M85). A static string.
const char* kernel_target_name();

// The Highway targets the attention kernels were compiled for, and those this CPU supports, best
// first, separated by spaces ("AVX3_DL AVX3 AVX2 SSE4 SSSE3 SSE2"). Static strings.
const char* kernel_compiled_targets();
const char* cpu_simd_targets();

}  // namespace headway
