// The C API's hosted calls (headway_tools): a config from config.json text, a plan's JSON.
#include <cstring>
#include <string>

#include "headway/tools/model_files.hpp"
#include "headway/tools/plan_json.hpp"
#include "runtime/capi/capi_objects.hpp"

using namespace headway;

extern "C" {

headway_status headway_config_from_hf_json(void* memory, size_t memory_bytes, const char* text, size_t size,
                                           headway_config** config, headway_error* error) {
  constexpr const char* kCall = "headway_config_from_hf_json";
  if (text == nullptr) return capi::report(capi::null_argument(kCall, "text"), error);
  return capi::place_config(kCall, memory, memory_bytes, parse_hf_config(text, size), config, error);
}

headway_status headway_plan_json(const headway_plan* plan, char* text, size_t size, size_t* length,
                                 headway_error* error) {
  constexpr const char* kCall = "headway_plan_json";
  if (plan == nullptr) return capi::report(capi::null_argument(kCall, "plan"), error);
  const std::string json = plan_json(plan->plan);
  if (length != nullptr) *length = json.size();
  if (text == nullptr || size <= json.size()) {
    return capi::report(Status::error(Code::kOutOfRange, "%s: text is %zu bytes%s, the JSON needs %zu", kCall,
                                      text ? size : size_t{0}, text ? "" : " (null)", json.size() + 1),
                        error);
  }
  std::memcpy(text, json.c_str(), json.size() + 1);
  return capi::report(Status(), error);
}

}  // extern "C"
