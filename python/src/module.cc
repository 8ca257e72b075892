// `import paratune`: the library's cost model, planner, replay, launches and studies, and tune()
// with a Python objective. The package around it is python/paratune/ (__init__.py, stubs).
#include "modules.h"
#include "paratune/spec/error.h"
#include "paratune/version.h"

PYBIND11_MODULE(_core, m) {
  m.doc() = "paratune: plan and tune the parallel training of large models";
  m.attr("__version__") = paratune::version();
  // Every error of bad input (file, field, value and rule in its message), as the CLI prints it.
  pybind11::register_exception<paratune::Error>(m, "Error", PyExc_ValueError);
  paratune::python::bind_planning(m);
  paratune::python::bind_studies(m);
  paratune::python::bind_tuning(m);
  paratune::python::bind_define_by_run(m);
}
