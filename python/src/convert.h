// Values between Python and the library: JSON documents as Python dicts and lists (through the json
// module, the one exact mapping both sides agree on), and the library's errors as Python exceptions.
#pragma once

#include <pybind11/pybind11.h>

#include <nlohmann/json.hpp>
#include <string>

namespace paratune::python {

namespace py = pybind11;

// A JSON document as Python objects (dict, list, str, int, float, bool, None).
py::object to_python(const nlohmann::json& value);
py::object to_python(const nlohmann::ordered_json& value);
// Python objects as a JSON document (keys in their order); Error naming `what` when it cannot be
// one (a set, an object of a class, a float NaN, ...).
nlohmann::ordered_json from_python(const py::handle& value, const std::string& what);

// A str or an os.PathLike as text; Error naming `what` otherwise.
std::string text_or_path(const py::handle& value, const std::string& what);

}  // namespace paratune::python
