// The extension module headway._headway; the package headway (python/headway/__init__.py)
// re-exports it.
#include "python/src/common.hpp"

#ifndef HEADWAY_VERSION
#error "HEADWAY_VERSION is set by python/CMakeLists.txt from the project's version"
#endif

NB_MODULE(_headway, m) {
  m.doc() = "headway: attention for edge devices (bindings over the C++ public API)";
  m.attr("__version__") = HEADWAY_VERSION;
  headway::python::add_errors(m);
  headway::python::bind_attend(m);
  headway::python::bind_plan(m);
  headway::python::bind_objects(m);
  headway::python::bind_model(m);
}
