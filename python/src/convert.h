// Values between Python and the library: JSON documents as Python dicts and lists (through the json
// module, the one exact mapping both sides agree on), and the library's errors as Python exceptions.
#pragma once

#include <pybind11/pybind11.h>

#include <nlohmann/json.hpp>
#include <optional>
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
// str(value) as UTF-8, for an argument given as text (a dict key, a configuration value, an option):
// Error naming `what` when str() raises or the text has characters UTF-8 cannot hold.
std::string text_arg(const py::handle& value, const std::string& what);

// Texts of objects the user's code made (an exception's message, an objective's return value), for
// messages and stored reasons. They never raise and never throw, because they run where an error
// would hide the one being reported (in a catch block): Python's own conversion to std::string
// throws on text UTF-8 cannot hold, such as the lone surrogate "\udc80" that os.fsdecode makes of
// an undecodable byte, and str() runs user code that may raise or return something else than a str.
//
// A Python str as UTF-8, each character UTF-8 cannot hold written as a backslash escape ("\udc80").
std::string utf8_of(const py::handle& text);
// A type's __name__ ("ValueError"), as utf8_of writes it.
std::string type_name(const py::handle& type);
// str(value), or repr(value) when `repr`, as utf8_of writes it. nullopt when the call raises or gives
// no str; then `why` (when given) says what it raised: "TypeError: __str__ returned non-string (type
// int)". The Python error is cleared either way.
std::optional<std::string> text_of(const py::handle& value, bool repr = false, std::string* why = nullptr);
// repr(value) for a message, as text_of writes it; "<a TYPE>" when repr() raises.
std::string shown(const py::handle& value);
// A Python exception as "Type: message" ("Type" when the message is empty; "Type (its message could
// not be read: ...)" when its str() raises), as text_of writes it.
std::string exception_text(const py::error_already_set& e);

}  // namespace paratune::python
