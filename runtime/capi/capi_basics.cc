// The C API's plain calls: version, names, dtypes and row conversion.
#include "headway/build_info.hpp"
#include "headway/quantize.hpp"
#include "runtime/capi/capi_objects.hpp"

using namespace headway;

extern "C" {

// The numbers as the preprocessor spells them, so that any number of digits stays right.
#define HEADWAY_SPELL_NUMBER(x) #x
#define HEADWAY_SPELL(x) HEADWAY_SPELL_NUMBER(x)

const char* headway_version(void) {
  return HEADWAY_SPELL(HEADWAY_VERSION_MAJOR) "." HEADWAY_SPELL(HEADWAY_VERSION_MINOR) "." HEADWAY_SPELL(
      HEADWAY_VERSION_PATCH);
}

const char* headway_status_name(headway_status code) {
  if (static_cast<unsigned>(code) > HEADWAY_INTERNAL) return "unknown";
  return code_name(static_cast<Code>(code));
}

const char* headway_dtype_name(headway_dtype dtype) {
  if (!dtype_known(static_cast<DType>(dtype))) return nullptr;
  return dtype_name(static_cast<DType>(dtype));
}

headway_status headway_dtype_parse(const char* name, headway_dtype* dtype, headway_error* error) {
  if (dtype == nullptr) return capi::report(capi::null_argument("headway_dtype_parse", "dtype"), error);
  DType t{};
  if (!dtype_from_name(name, &t)) {
    return capi::report(Status::error(Code::kInvalidArgument, "headway_dtype_parse: '%s' is not one of %s",
                                      name ? name : "(null)", kDTypeNames),
                        error);
  }
  *dtype = static_cast<headway_dtype>(t);
  return capi::report(Status(), error);
}

size_t headway_dtype_row_bytes(headway_dtype dtype, size_t n) {
  if (!dtype_known(static_cast<DType>(dtype))) return 0;
  return static_cast<size_t>(dtype_row_bytes(static_cast<DType>(dtype), n));
}

headway_status headway_convert_row(headway_dtype dtype, const float* x, size_t n, void* out, size_t out_bytes,
                                   headway_error* error) {
  Status s = capi::check_dtype("headway_convert_row", "dtype", dtype);
  if (s.ok()) s = convert_rows(x, DType::kF32, 1, n, static_cast<DType>(dtype), out, out_bytes);
  return capi::report(s, error);
}

const char* headway_kernel_target(void) { return kernel_target_name(); }

int headway_built_with_xnnpack(void) { return built_with_xnnpack() ? 1 : 0; }

}  // extern "C"
