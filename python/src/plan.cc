// headway.plan(), headway.presets(): a config from one source, checked and planned, as the
// object `headway plan --json` prints (plan_json, the tools layer).
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "headway/tools/model_files.hpp"
#include "headway/tools/plan_json.hpp"
#include "headway/presets.hpp"
#include "python/src/common.hpp"

namespace headway::python {

Config load_config(const ConfigSource& s) {
  const int given = s.preset.has_value() + s.config.has_value() + s.gguf.has_value() + s.spec.has_value();
  if (given != 1) {
    raise_status(Status::error(Code::kInvalidArgument,
                               "give exactly one of preset=NAME, config=PATH, gguf=PATH, spec=TEXT (got %d)", given));
  }
  Result<Config> c = Status::error(Code::kInternal, "no config source");
  if (s.preset) {
    const presets::Entry* e = presets::find(s.preset->c_str());
    if (e == nullptr) {
      raise_status(
          Status::error(Code::kNotFound, "no preset named '%s' (headway.presets() lists them)", s.preset->c_str()));
    }
    return e->make();
  }
  if (s.config) c = load_hf_config(s.config->c_str());
  else if (s.gguf) c = load_gguf_config(s.gguf->c_str());
  else c = parse_spec(s.spec->c_str());
  check(c.status());
  return c.value();
}

Plan make_checked_plan(Config config, const std::optional<std::string>& kv_dtype, int64_t threads, int64_t max_tokens,
                       const std::optional<std::string>& weight_dtype, const std::optional<std::string>& kv_rotation) {
  PlanOptions options;
  options.threads = to_u32(threads, "threads", 1);
  options.max_tokens = to_u32(max_tokens, "max_tokens");
  if (kv_dtype) config.kv_dtype = parse_dtype(*kv_dtype, "kv_dtype", true);
  if (kv_rotation) config.kv_rotation = parse_kv_rotation(*kv_rotation);
  if (weight_dtype) options.weight_dtype = parse_dtype(*weight_dtype, "weight_dtype", false);
  const Result<Plan> plan = make_plan(config, options);
  check(plan.status());
  return plan.value();
}

namespace {

nb::object py_plan(std::optional<std::string> preset, std::optional<std::string> config,
                   std::optional<std::string> gguf, std::optional<std::string> spec,
                   std::optional<std::string> kv_dtype, int64_t threads, int64_t max_tokens,
                   std::optional<std::string> weight_dtype, std::optional<std::string> kv_rotation) {
  const Plan p = make_checked_plan(load_config({preset, config, gguf, spec}), kv_dtype, threads, max_tokens,
                                   weight_dtype, kv_rotation);
  // The CLI's exact bytes, parsed by Python's json: one source for every key.
  return nb::module_::import_("json").attr("loads")(plan_json(p));
}

std::vector<std::string> py_presets() {
  size_t n = 0;
  const presets::Entry* all = presets::all(&n);
  std::vector<std::string> names;
  for (size_t i = 0; i < n; ++i) names.emplace_back(all[i].name);
  return names;
}

}  // namespace

void bind_plan(nb::module_& m) {
  m.def("plan", &py_plan, nb::kw_only(), nb::arg("preset") = nb::none(), nb::arg("config") = nb::none(),
        nb::arg("gguf") = nb::none(), nb::arg("spec") = nb::none(), nb::arg("kv_dtype") = nb::none(),
        nb::arg("threads") = 1, nb::arg("max_tokens") = 0, nb::arg("weight_dtype") = nb::none(),
        nb::arg("kv_rotation") = nb::none(),
        "The plan of one config source, as the dict `headway plan --json` prints.");
  m.def("presets", &py_presets, "The built-in preset names, in `headway presets` order.");
}

}  // namespace headway::python
