// The C API's hosted model files: a ModelFile on the heap (open allocates, close frees), its
// config into the caller's memory, and a model made from it.
#include <new>

#include "headway/tools/model_file.hpp"
#include "runtime/capi/capi_objects.hpp"

using namespace headway;

struct headway_model_file {
  ModelFile file;
};

extern "C" {

headway_status headway_model_file_open(const char* path, headway_model_file** file, headway_error* error) {
  constexpr const char* kCall = "headway_model_file_open";
  if (path == nullptr) return capi::report(capi::null_argument(kCall, "path"), error);
  if (file == nullptr) return capi::report(capi::null_argument(kCall, "file"), error);
  headway_model_file* h = new (std::nothrow) headway_model_file;
  if (h == nullptr) return capi::report(Status::error(Code::kInternal, "%s: out of memory", kCall), error);
  const Status s = h->file.open(path);
  if (!s.ok()) {
    delete h;
    return capi::report(s, error);
  }
  *file = h;
  return capi::report(s, error);
}

headway_status headway_model_file_config(const headway_model_file* file, void* memory, size_t memory_bytes,
                                         headway_config** config, headway_error* error) {
  constexpr const char* kCall = "headway_model_file_config";
  Status s = file == nullptr ? capi::null_argument(kCall, "file")
             : config == nullptr
                 ? capi::null_argument(kCall, "config")
                 : capi::check_memory(kCall, memory, memory_bytes, sizeof(headway_config), HEADWAY_OBJECT_ALIGNMENT);
  if (!s.ok()) return capi::report(s, error);
  const Result<Config> c = file->file.config();
  if (!c.ok()) return capi::report(c.status(), error);
  *config = new (memory) headway_config{c.value()};
  return capi::report(s, error);
}

headway_status headway_model_create_from_file(void* memory, size_t memory_bytes, const headway_plan* plan, void* arena,
                                              size_t arena_bytes, headway_model_file* file, headway_pool* pool,
                                              headway_model** model, headway_error* error) {
  constexpr const char* kCall = "headway_model_create_from_file";
  if (file == nullptr) return capi::report(capi::null_argument(kCall, "file"), error);
  return capi::report(
      capi::create_model(kCall, memory, memory_bytes, plan, arena, arena_bytes, file->file.source(), pool, model),
      error);
}

void headway_model_file_close(headway_model_file* file) { delete file; }

}  // extern "C"
