#include "convert.h"

#include <fmt/format.h>

#include "paratune/spec/error.h"

namespace paratune::python {

py::object to_python(const nlohmann::json& value) {
  return py::module_::import("json").attr("loads")(value.dump());
}

py::object to_python(const nlohmann::ordered_json& value) {
  return py::module_::import("json").attr("loads")(value.dump());
}

nlohmann::ordered_json from_python(const py::handle& value, const std::string& what) {
  std::string text;
  try {
    // allow_nan=False: NaN and infinity are not JSON, and no field of paratune's takes them.
    text = py::module_::import("json").attr("dumps")(value, py::arg("allow_nan") = false).cast<std::string>();
  } catch (const py::error_already_set& e) {
    throw Error(fmt::format("{}: cannot be read as JSON ({})", what, e.what()));
  }
  return nlohmann::ordered_json::parse(text);
}

std::string text_or_path(const py::handle& value, const std::string& what) {
  if (py::isinstance<py::str>(value)) return value.cast<std::string>();
  if (py::hasattr(value, "__fspath__")) return py::module_::import("os").attr("fspath")(value).cast<std::string>();
  throw Error(fmt::format("{}: expected a str or a path, got {}", what,
                          py::str(py::type::of(value).attr("__name__")).cast<std::string>()));
}

}  // namespace paratune::python
