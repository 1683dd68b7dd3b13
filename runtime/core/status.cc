#include "headway/status.hpp"

#include <cstdarg>

#include "runtime/core/format.hpp"

namespace headway {

const char* code_name(Code code) {
  switch (code) {
    case Code::kOk: return "ok";
    case Code::kInvalidArgument: return "invalid argument";
    case Code::kOutOfRange: return "out of range";
    case Code::kUnsupported: return "unsupported";
    case Code::kFailedPrecondition: return "failed precondition";
    case Code::kDataLoss: return "data loss";
    case Code::kNotFound: return "not found";
    case Code::kInternal: return "internal";
  }
  return "unknown";
}

Status Status::error(Code code, const char* fmt, ...) {
  Status s;
  s.code_ = code == Code::kOk ? Code::kInternal : code;
  va_list args;
  va_start(args, fmt);
  vformat_to(s.message_, kMaxMessage, fmt, args);
  va_end(args);
  return s;
}

}  // namespace headway
