// The C API's configs (spec string, preset) and presets list.
#include "headway/presets.hpp"
#include "runtime/capi/capi_objects.hpp"

using namespace headway;

namespace headway::capi {

headway_status place_config(const char* call, void* memory, size_t memory_bytes, const Result<Config>& config,
                            headway_config** out, headway_error* error) {
  Status s = out == nullptr ? null_argument(call, "config") : Status();
  if (s.ok()) s = check_memory(call, memory, memory_bytes, sizeof(headway_config), HEADWAY_OBJECT_ALIGNMENT);
  if (s.ok()) s = config.status();
  if (!s.ok()) return report(s, error);
  *out = new (memory) headway_config{config.value()};
  return report(s, error);
}

}  // namespace headway::capi

extern "C" {

size_t headway_config_object_bytes(void) { return sizeof(headway_config); }

headway_status headway_config_from_spec(void* memory, size_t memory_bytes, const char* spec, headway_config** config,
                                        headway_error* error) {
  constexpr const char* kCall = "headway_config_from_spec";
  if (spec == nullptr) return capi::report(capi::null_argument(kCall, "spec"), error);
  return capi::place_config(kCall, memory, memory_bytes, parse_spec(spec), config, error);
}

headway_status headway_config_from_preset(void* memory, size_t memory_bytes, const char* name, headway_config** config,
                                          headway_error* error) {
  constexpr const char* kCall = "headway_config_from_preset";
  if (name == nullptr) return capi::report(capi::null_argument(kCall, "name"), error);
  const presets::Entry* e = presets::find(name);
  if (e == nullptr) {
    return capi::report(
        Status::error(Code::kNotFound, "%s: no preset named '%s' (headway_preset_name lists them)", kCall, name),
        error);
  }
  return capi::place_config(kCall, memory, memory_bytes, e->make(), config, error);
}

headway_status headway_config_validate(const headway_config* config, headway_error* error) {
  if (config == nullptr) return capi::report(capi::null_argument("headway_config_validate", "config"), error);
  return capi::report(validate(config->config), error);
}

headway_status headway_config_set_kv_dtype(headway_config* config, headway_dtype dtype, headway_error* error) {
  constexpr const char* kCall = "headway_config_set_kv_dtype";
  Status s = config == nullptr ? capi::null_argument(kCall, "config") : capi::check_dtype(kCall, "dtype", dtype);
  if (s.ok() && !dtype_stores_kv(static_cast<DType>(dtype))) {
    s = Status::error(Code::kInvalidArgument, "%s: dtype %s is not one a KV cache stores (%s)", kCall,
                      dtype_name(static_cast<DType>(dtype)), kKvDTypeNames);
  }
  if (s.ok()) config->config.kv_dtype = static_cast<DType>(dtype);
  return capi::report(s, error);
}

headway_status headway_config_set_kv_rotation(headway_config* config, headway_kv_rotation rotation,
                                              headway_error* error) {
  constexpr const char* kCall = "headway_config_set_kv_rotation";
  Status s;
  if (config == nullptr) {
    s = capi::null_argument(kCall, "config");
  } else if (rotation != HEADWAY_KV_ROTATION_NONE && rotation != HEADWAY_KV_ROTATION_HADAMARD) {
    s = Status::error(Code::kInvalidArgument, "%s: rotation %d is not one of 0 (none), 1 (hadamard)", kCall,
                      static_cast<int>(rotation));
  } else {
    config->config.kv_rotation = static_cast<KvRotation>(rotation);
  }
  return capi::report(s, error);
}

size_t headway_preset_count(void) {
  size_t n = 0;
  presets::all(&n);
  return n;
}

const char* headway_preset_name(size_t index) {
  size_t n = 0;
  const presets::Entry* all = presets::all(&n);
  return index < n ? all[index].name : nullptr;
}

}  // extern "C"
