// Shared by the binding sources: Status → Python exception, array views with the checks the
// library cannot make (NumPy dtype, rank, layout), config sources, owned aligned buffers.
// The only files of the project built with exceptions (nanobind reports errors through them);
// they include the public API only.
#pragma once

#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "headway/backend.hpp"
#include "headway/config.hpp"
#include "headway/plan.hpp"
#include "headway/status.hpp"

namespace headway::python {

namespace nb = nanobind;

// Any array-like nanobind can view without a copy (NumPy arrays, DLPack producers); read-only
// arrays are accepted, nothing is ever written through it.
using AnyArray = nb::ndarray<nb::ro>;
// The arrays the module returns: NumPy, float32, C-contiguous, owning their memory.
using OutArray = nb::ndarray<nb::numpy, float>;

// Registers headway.Error and its subclasses on the module (errors.cc).
void add_errors(nb::module_& m);
// Raises the headway.Error subclass of status.code() with status.message() verbatim.
[[noreturn]] void raise_status(const Status& status);
inline void check(const Status& status) {
  if (!status.ok()) raise_status(status);
}
// raise_status of a kInvalidArgument with a printf-style message (Status::error's formats).
#define HEADWAY_PY_INVALID(...) \
  ::headway::python::raise_status(::headway::Status::error(Code::kInvalidArgument, __VA_ARGS__))

// A checked view of a C-contiguous array: its data, storage dtype and shape. `array` keeps the
// producer alive while the view is used.
struct Tensor {
  AnyArray array;
  const void* data = nullptr;
  DType dtype = DType::kF32;
  bool boolean = false;  // numpy bool (one byte per entry); dtype is then meaningless
  std::vector<uint32_t> shape;
  size_t elements() const;
};

// Which element types a parameter takes.
enum class Accept : uint8_t { kF32, kF32OrF16, kF32OrBool };

// Views `obj` as the array parameter `name` with `ndim` dimensions (each below 2^32) and one of
// the `accept` dtypes, C-contiguous (no copy: a strided view is refused with the fix). `layout`
// names the dims for the message, e.g. "[T_q, n_heads, head_dim]".
Tensor view(nb::handle obj, const char* name, size_t ndim, Accept accept, const char* layout);

// A new float32 NumPy array of `shape`, uninitialized; made while the GIL is held, before the
// library writes it with the GIL released.
OutArray new_f32(const std::vector<size_t>& shape, float** data);

// "cpu" or "gpu" (backend_name's spellings) into a BackendKind; anything else is kInvalidArgument.
BackendKind parse_backend(const std::string& text);

// "f32", "f16", "bf16", "q8_0", "q4_0" (dtype_name's spellings) into a DType; anything else is
// kInvalidArgument naming `field`, the value and the valid ones.
DType parse_dtype(const std::string& text, const char* field, bool blocks_allowed);

// A Python int for a uint32 parameter: a negative or too large value is kInvalidArgument naming
// `field` (nanobind's own conversion would give a bare TypeError).
uint32_t to_u32(int64_t value, const char* field, uint32_t min = 0);

// The config of exactly one of a preset name, a config.json path, a GGUF path or a spec string.
struct ConfigSource {
  std::optional<std::string> preset, config, gguf, spec;
};
Config load_config(const ConfigSource& source);
// "none" or "hadamard" into a KvRotation; anything else is kInvalidArgument naming kv_rotation.
KvRotation parse_kv_rotation(const std::string& text);

// Plan options as plan(), KvCache and Session take them; kv_dtype and kv_rotation override the
// config's.
Plan make_checked_plan(Config config, const std::optional<std::string>& kv_dtype, int64_t threads, int64_t max_tokens,
                       const std::optional<std::string>& weight_dtype,
                       const std::optional<std::string>& kv_rotation = std::nullopt);

// A 64-byte aligned heap buffer, allocated once (at a call's or an object's start).
struct AlignedFree {
  void operator()(void* p) const { std::free(p); }
};
using AlignedBytes = std::unique_ptr<uint8_t, AlignedFree>;
AlignedBytes aligned_bytes(size_t bytes);  // bytes rounded up to 64; raises MemoryError on failure

void bind_attend(nb::module_& m);
void bind_plan(nb::module_& m);
void bind_objects(nb::module_& m);  // KvCache, Session
void bind_model(nb::module_& m);    // Tokenizer, Model

}  // namespace headway::python
