// NumPy .npy files (format versions 1.0, 2.0 and 3.0) holding f32 ('<f4') or f16 ('<f2')
// arrays in C order, and bool ('|b1') where the caller asks for it (a mask): what `headway
// attend` reads and writes. Part of the hosted tools layer.
// Every length in the header is checked against the bytes present; errors name the file and
// the header field ("npy file k.npy: descr '>f4' is big-endian; ...").
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "headway/config.hpp"
#include "headway/status.hpp"

namespace headway::formats {

inline constexpr uint32_t kNpyMaxDims = 8;

struct NpyArray {
  DType dtype = DType::kF32;  // kF32 ('<f4') or kF16 ('<f2'); unused when boolean
  // '|b1': one byte per element, 0 or 1. Only where the caller accepts bool (NpyBool::kAccept);
  // elsewhere such a file is an error, so a reader of f32 never takes bytes for floats.
  bool boolean = false;
  uint32_t ndim = 0;  // 0 for a scalar (shape ())
  uint64_t shape[kNpyMaxDims] = {};
  uint64_t elements = 0;  // product of the dims, 1 for a scalar
  // [elements] in C order, little-endian, starting at data.data() (aligned for float).
  std::vector<uint8_t> data;

  const float* f32() const { return reinterpret_cast<const float*>(data.data()); }
  const uint16_t* f16_bits() const { return reinterpret_cast<const uint16_t*>(data.data()); }
};

// Whether a bool array is accepted.
enum class NpyBool : uint8_t { kRefuse, kAccept };

// Parses a whole .npy file held in memory; `source` names it in messages.
Result<NpyArray> parse_npy(const uint8_t* bytes, size_t size, const char* source, NpyBool bools = NpyBool::kRefuse);
Result<NpyArray> load_npy(const char* path, NpyBool bools = NpyBool::kRefuse);

// The bytes of a version 1.0 .npy file (header padded so the data starts on a 64-byte boundary)
// holding `data`: [shape[0], ..., shape[ndim-1]] elements of dtype f32 (float) or f16 (uint16_t
// bit patterns). ndim <= kNpyMaxDims.
std::vector<uint8_t> encode_npy(DType dtype, const void* data, const uint64_t* shape, uint32_t ndim);
Status save_npy(const char* path, DType dtype, const void* data, const uint64_t* shape, uint32_t ndim);
// The same for a bool array ('|b1'): one byte per element, 0 or 1.
std::vector<uint8_t> encode_npy_bool(const uint8_t* data, const uint64_t* shape, uint32_t ndim);

// "(2, 3, 4)", "(5,)", "()": the shape as Python prints it, for messages.
void format_npy_shape(const uint64_t* shape, uint32_t ndim, char* out, size_t out_size);

}  // namespace headway::formats
