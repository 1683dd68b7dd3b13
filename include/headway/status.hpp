// Status and Result: how every fallible headway call reports failure. No exceptions, no heap:
// a Status is a code plus a fixed-size message that names the field and the value at fault.
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>

namespace headway {

enum class Code : uint8_t {
  kOk = 0,
  kInvalidArgument,     // a value the caller gave is wrong (config field, shape, flag)
  kOutOfRange,          // a position or size beyond what the plan allows (KV append past capacity)
  kUnsupported,         // valid input that headway does not handle (MLA, an unknown dtype)
  kFailedPrecondition,  // a call in the wrong state (decode before init)
  kDataLoss,            // a file that is truncated or corrupt
  kNotFound,            // a file, preset or key that does not exist
  kInternal,            // a bug in headway
};

const char* code_name(Code code);

class Status {
 public:
  static constexpr size_t kMaxMessage = 384;

  constexpr Status() = default;
  // printf-style message; see runtime/core/format.hpp for the supported conversions. Truncated to
  // kMaxMessage - 1 characters, never allocates.
  static Status error(Code code, const char* fmt, ...) __attribute__((format(printf, 2, 3)));

  constexpr bool ok() const { return code_ == Code::kOk; }
  constexpr Code code() const { return code_; }
  const char* message() const { return ok() ? "ok" : message_; }

 private:
  Code code_ = Code::kOk;
  char message_[kMaxMessage] = {};
};

// A value or the Status that explains why there is none. T must be default-constructible.
template <class T>
class Result {
 public:
  constexpr Result(const T& value) : value_(value) {}        // NOLINT: implicit by design
  constexpr Result(T&& value) : value_(std::move(value)) {}  // NOLINT
  Result(const Status& status) : status_(status) {}          // NOLINT; status must not be ok

  constexpr bool ok() const { return status_.ok(); }
  const Status& status() const { return status_; }
  constexpr const T& value() const { return value_; }
  constexpr T& value() { return value_; }
  constexpr const T* operator->() const { return &value_; }
  constexpr const T& operator*() const { return value_; }

 private:
  T value_{};
  Status status_{};
};

}  // namespace headway

// Returns from the enclosing function when `expr` yields a failed Status.
#define HEADWAY_RETURN_IF_ERROR(expr)                  \
  do {                                                 \
    ::headway::Status headway_status_ = (expr);        \
    if (!headway_status_.ok()) return headway_status_; \
  } while (0)
