// What the C API's opaque handles hold, and the helpers every headway_* call shares: the Status
// to headway_error conversion, the checks of a caller's memory, and reading a caller's growable
// struct (struct_size first).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <new>

#include "headway/arena.hpp"
#include "headway/backend.hpp"
#include "headway/config.hpp"
#include "headway/headway.h"
#include "headway/plan.hpp"
#include "headway/model.hpp"
#include "headway/sampler.hpp"
#include "headway/session.hpp"
#include "headway/weights.hpp"
#include "headway/status.hpp"
#include "headway/thread_pool.hpp"

struct headway_config {
  headway::Config config;
};
struct headway_plan {
  headway::Plan plan;
};
struct headway_pool {
  headway::ThreadPool pool;
};
// The memory after the object (from the next 64-byte boundary) is the backend's.
struct headway_kv_cache {
  headway::CpuBackend backend;
};
// The arena object the layers read, then the session.
struct headway_session {
  headway::Arena arena;
  headway::Session session;
};

// The arena object the layers read, then the model (a Model holds its layer objects: large).
struct headway_model {
  headway::Arena arena;
  headway::Model model;
};
// The sampler; its scratch follows in the same memory (from the next 16-byte boundary).
struct headway_sampler {
  headway::Sampler sampler;
};

namespace headway::capi {

static_assert(HEADWAY_MAX_MESSAGE == Status::kMaxMessage, "headway_error holds a whole Status message");
static_assert(HEADWAY_INVALID_ARGUMENT == static_cast<int>(Code::kInvalidArgument) &&
                  HEADWAY_OUT_OF_RANGE == static_cast<int>(Code::kOutOfRange) &&
                  HEADWAY_UNSUPPORTED == static_cast<int>(Code::kUnsupported) &&
                  HEADWAY_FAILED_PRECONDITION == static_cast<int>(Code::kFailedPrecondition) &&
                  HEADWAY_DATA_LOSS == static_cast<int>(Code::kDataLoss) &&
                  HEADWAY_NOT_FOUND == static_cast<int>(Code::kNotFound) &&
                  HEADWAY_INTERNAL == static_cast<int>(Code::kInternal),
              "headway_status mirrors headway::Code");
static_assert(HEADWAY_F32 == static_cast<int>(DType::kF32) && HEADWAY_F16 == static_cast<int>(DType::kF16) &&
                  HEADWAY_BF16 == static_cast<int>(DType::kBF16) && HEADWAY_Q8_0 == static_cast<int>(DType::kQ8_0) &&
                  HEADWAY_Q4_0 == static_cast<int>(DType::kQ4_0),
              "headway_dtype mirrors headway::DType");

// The caller's weights of one layer (struct_size bytes of them), dtypes checked: `call` and the
// layer name the tensor in an error (capi_session.cc).
Status weights_of(const char* call, const headway_layer_weights* in, uint32_t l, LayerWeights* out);

// Binds a model's arena and inits the model in `memory` from `source` (capi_model.cc); *model
// on success, nothing left in `memory` on failure.
Status create_model(const char* call, void* memory, size_t memory_bytes, const headway_plan* plan, void* arena,
                    size_t arena_bytes, const ModelWeightsSource& source, headway_pool* pool, headway_model** model);

// Writes `s` into *error (when not null) and returns its code.
inline headway_status report(const Status& s, headway_error* error) {
  if (error != nullptr) {
    error->code = static_cast<headway_status>(s.code());
    const char* m = s.message();
    size_t n = 0;
    for (; m[n] != '\0' && n + 1 < HEADWAY_MAX_MESSAGE; ++n) error->message[n] = m[n];
    error->message[n] = '\0';
  }
  return static_cast<headway_status>(s.code());
}

inline Status null_argument(const char* call, const char* name) {
  return Status::error(Code::kInvalidArgument, "%s: %s is null", call, name);
}

// memory must hold `need` bytes at `alignment`.
inline Status check_memory(const char* call, const void* memory, size_t bytes, size_t need, size_t alignment) {
  if (memory == nullptr) return null_argument(call, "memory");
  if (reinterpret_cast<uintptr_t>(memory) % alignment != 0) {
    return Status::error(Code::kInvalidArgument, "%s: memory is not %zu-byte aligned", call, alignment);
  }
  if (bytes < need) {
    return Status::error(Code::kInvalidArgument, "%s: memory is %zu bytes, it needs %zu", call, bytes, need);
  }
  return Status();
}

inline Status check_dtype(const char* call, const char* name, headway_dtype dtype) {
  if (!dtype_known(static_cast<DType>(dtype))) {
    return Status::error(Code::kInvalidArgument, "%s: %s %d is not a headway_dtype (%s)", call, name,
                         static_cast<int>(dtype), kDTypeNames);
  }
  return Status();
}

// A caller's growable struct: the fields its struct_size covers over the defaults in *out.
template <class T>
Status read_struct(const char* call, const char* name, const T* in, T* out) {
  if (in == nullptr) return Status();
  if (in->struct_size < sizeof(size_t) || in->struct_size > sizeof(T)) {
    return Status::error(Code::kInvalidArgument, "%s: %s->struct_size %zu is not in %zu..%zu (call its _init)", call,
                         name, in->struct_size, sizeof(size_t), sizeof(T));
  }
  std::memcpy(static_cast<void*>(out), in, in->struct_size);
  out->struct_size = sizeof(T);
  return Status();
}

// Places `config` in the caller's memory, after the checks of the handle and the memory (and of
// `config` itself: a parse error), and returns its handle in *out.
headway_status place_config(const char* call, void* memory, size_t memory_bytes, const Result<Config>& config,
                            headway_config** out, headway_error* error);

inline constexpr size_t round_up(size_t n) { return (n + kAlignment - 1) / kAlignment * kAlignment; }

}  // namespace headway::capi
