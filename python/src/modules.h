// The parts of the Python module, each in its own file (module.cc calls them in order).
#pragma once

#include <pybind11/pybind11.h>

namespace paratune::python {

void bind_planning(pybind11::module_& m);  // planning.cc: models, clusters, estimate, plan, simulate, launches
void bind_studies(pybind11::module_& m);   // studies.cc: stored studies and their trials
void bind_tuning(pybind11::module_& m);    // tuning.cc: tune() with a Python objective
void bind_define_by_run(pybind11::module_& m);  // define_by_run.cc: create_study's engine

}  // namespace paratune::python
