// Dense projections: y = x · Wᵀ for the Q/K/V/O projections when XNNPACK is not there (bare
// metal, HEADWAY_XNNPACK=OFF) or not chosen. Highway dispatch happens inside (dynamic on hosted
// x86/ARM, static where the target is fixed). Pure functions over pointers and shapes: no
// allocation, no I/O, no threads; callers split the output rows across threads.
//
//   x [t, in] f32, token i at x + i · x_stride floats
//   W [out, in] row-major in f32, f16 or bf16 (Hugging Face / GGUF layout), row o at
//     w + o · w_stride elements; or in one of ggml's block formats (q8_0 ... q6_K, as GGUF files
//     hold them: headway/ggml_types.hpp), row o at w + o · dtype_row_bytes(w_type, w_stride)
//     bytes, in and w_stride whole blocks (matmul_blocks-inl.h); or with w_row_groups, q8_0, q4_0,
//     q4_1, q5_0, q5_1, q4_K or q6_K rows interleaved in groups of 16 (headway/detail/row_groups.hpp)
//   y [t, out] f32, token i at y + i · y_stride floats
//   y[i][o] = Σ_k x[i][k] · W[o][k], accumulated in f32, for o in [out_begin, out_end).
//
// Reads exactly the `in` elements of each x and W row (never past them) and writes only y[i][o]
// for the rows asked. For a given (t, in, w_type) the result of an element does not depend on
// out_begin/out_end, so any row split gives bitwise the same y.
#pragma once

#include <cstddef>
#include <cstdint>

#include "headway/dtype.hpp"

namespace headway {
namespace simd {

// The weight storage the GEMM reads: the DTypes dtype_holds_weights admits (headway/dtype.hpp).
using WeightType = DType;

struct MatmulArgs {
  const float* x = nullptr;
  size_t x_stride = 0;
  const void* w = nullptr;
  WeightType w_type = WeightType::kF32;
  size_t w_stride = 0;  // elements
  float* y = nullptr;
  size_t y_stride = 0;
  size_t t = 0;    // tokens (rows of x and y)
  size_t in = 0;   // reduction length
  size_t out = 0;  // rows of W (columns of y)
  // Block-format W: x keeps 16 bits or more in the products — a decode step quantizes it to 16-bit
  // codes per block (q8_0 W) or W is decoded to f32 — never to the 8 bits of the integer decode
  // step (matmul_int8-inl.h). For outputs a decision reads directly (a model's logits): half an
  // 8-bit code step of x's blocks moves a logit by ~0.1, as much as the gap between the top two
  // in a confident answer.
  bool precise_x = false;
  // W (q8_0, q4_0, q4_1, q5_0, q5_1, q4_K or q6_K, w_stride == in) with its rows in groups of 16 (headway/detail/
  // row_groups.hpp), as a model lays its matrices out where matmul_reads_row_groups says the
  // decode step reads them so; there a decode step and a prefill alike keep x at 16 bits whatever
  // precise_x says.
  bool w_row_groups = false;
  // x prepared by matmul_prepare_x over these same arguments (and x unchanged since), or null:
  // then each call prepares its own.
  const void* x_prepared = nullptr;
};

// Whether a target of this build may read weights in row groups (x86-64: AVX-512 VNNI):
// elsewhere nothing lays matrices out so, or allocates for it (microcontrollers have no heap).
#if defined(__x86_64__) || defined(_M_X64)
#define HEADWAY_MATMUL_ROW_GROUPS 1
#else
#define HEADWAY_MATMUL_ROW_GROUPS 0
#endif

// The bytes matmul_prepare_x may write (0 where no target prepares x: no caller needs the room).
inline constexpr size_t kMatmulPreparedXBytes = HEADWAY_MATMUL_ROW_GROUPS ? 20480 : 0;

// The weight types the integer decode GEMVs of x86 and AArch64 read (matmul_int8-inl.h,
// matmul_avx2_int8-inl.h, matmul_sdot-inl.h, all with the same codes of x): with precise_x, q8_0
// alone (x at 16 bits).
inline bool integer_gemv_reads(WeightType w, bool precise_x) {
  if (precise_x) return w == WeightType::kQ8_0;
  return w == WeightType::kQ8_0 || w == WeightType::kQ4_0 || w == WeightType::kQ4_1 || w == WeightType::kQ5_0 ||
         w == WeightType::kQ5_1 || w == WeightType::kQ4_K || w == WeightType::kQ6_K;
}

// Whether this machine's decode GEMV reads W of type w in row groups (AVX-512 VNNI: q8_0, q4_0,
// q4_1, q5_0, q5_1, q4_K, q6_K), faster than in the file's layout: where a model lays its matrices out so at
// init.
bool matmul_reads_row_groups(WeightType w);

// Prepares x once for every row range of a decode step, where this machine's kernel for args
// quantizes x (W in row groups on AVX-512 VNNI: its 16-bit codes per block): into out
// [kMatmulPreparedXBytes, 64-byte aligned], true then, and the calls that follow may set
// args.x_prepared = out. A GEMV split into row tasks over a pool quantizes x once instead of once
// per task (runtime/linear/dense.cc). False, nothing written, elsewhere.
bool matmul_prepare_x(const MatmulArgs& args, void* out);

// The tokens of a GEMM (t > 1) each task should hold where a caller splits it over threads by
// tokens, every row in each task: where this machine's kernel for args quantizes x in each call
// (W in row groups on AVX-512 VNNI, a panel of this many tokens at a time), a split by rows would
// quantize every token once per task. 0 elsewhere: split the rows (y does not depend on either
// split).
size_t matmul_token_task(const MatmulArgs& args);

// Null when the arguments are usable, else what is wrong with them.
const char* matmul_args_error(const MatmulArgs& args);

// Computes y[:, out_begin:out_end). Preconditions: matmul_args_error(args) == nullptr,
// out_begin <= out_end <= args.out. t == 1 runs the GEMV path (bandwidth-bound: 4 weight rows
// share each x load), t > 1 the register-blocked GEMM (4 tokens × 4 weight rows per block); block
// formats decode tiles of W to f32 first (matmul_blocks-inl.h), but for W in row groups on
// AVX-512 VNNI, whose GEMM runs in integers as its GEMV does (matmul_row_groups_gemm-inl.h).
void matmul(const MatmulArgs& args, size_t out_begin, size_t out_end);

// The largest code of x's quantization when matmul(args) runs on this machine's target: 127 where
// a decode step runs in integers (x in 8-bit codes per block of 32, matmul_int8-inl.h), 32767 where
// it runs in 16-bit codes (precise_x over q8_0), 32639 over W in row groups (16-bit codes as two
// signed bytes, matmul_row_groups-inl.h), 0 where x meets W in f32. Tests choose their reference
// by it.
int matmul_x_code_max(const MatmulArgs& args);

// The Highway target the kernels dispatch to on this machine ("AVX3", "NEON", ...).
const char* matmul_target_name();

// Whether the AVX2 target's integer GEMV may take AVX-VNNI's VPDPBUSD where the CPU has it (true
// unless a test said otherwise): false runs the VPMADDUBSW products of AVX2 CPUs without it, whose
// y is the same bit for bit, so that one machine tests both.
bool matmul_avx_vnni_allowed();
void matmul_allow_avx_vnni(bool allow);

}  // namespace simd
}  // namespace headway
