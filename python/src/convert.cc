#include "convert.h"

#include <fmt/format.h>

#include "paratune/spec/error.h"

namespace paratune::python {

namespace {
const char* const kNotUtf8 =
    "has characters UTF-8 cannot hold (a lone surrogate such as \\udc80, which os.fsdecode makes of bytes that are "
    "not UTF-8); paratune takes UTF-8 text and paths";
}  // namespace

py::object to_python(const nlohmann::json& value) {
  return py::module_::import("json").attr("loads")(value.dump());
}

py::object to_python(const nlohmann::ordered_json& value) {
  return py::module_::import("json").attr("loads")(value.dump());
}

nlohmann::ordered_json from_python(const py::handle& value, const std::string& what) {
  std::string text;
  try {
    // allow_nan=False: NaN and infinity are not JSON, and no field of paratune's takes them. The
    // text is ASCII (ensure_ascii, the default): every other character is a \u escape.
    text = py::module_::import("json").attr("dumps")(value, py::arg("allow_nan") = false).cast<std::string>();
  } catch (const py::error_already_set& e) {
    throw Error(fmt::format("{}: cannot be read as JSON ({})", what, exception_text(e)));
  }
  try {
    return nlohmann::ordered_json::parse(text);
  } catch (const nlohmann::json::parse_error&) {
    // The one JSON text json.dumps writes that is not valid: a \udc80 escape of a lone surrogate.
    throw Error(fmt::format("{}: {}", what, kNotUtf8));
  }
}

std::string text_or_path(const py::handle& value, const std::string& what) {
  if (py::isinstance<py::str>(value)) return text_arg(value, what);
  if (py::hasattr(value, "__fspath__")) return text_arg(py::module_::import("os").attr("fspath")(value), what);
  throw Error(fmt::format("{}: expected a str or a path, got {}", what, type_name(py::type::handle_of(value))));
}

std::string text_arg(const py::handle& value, const std::string& what) {
  const auto text = py::reinterpret_steal<py::object>(PyObject_Str(value.ptr()));  // always a str, or an error
  if (!text) {
    const py::error_already_set raised;
    throw Error(fmt::format("{}: a {} whose str() raised {}", what, type_name(py::type::handle_of(value)),
                            exception_text(raised)));
  }
  Py_ssize_t size = 0;
  const char* utf8 = PyUnicode_AsUTF8AndSize(text.ptr(), &size);
  if (utf8 == nullptr) {
    PyErr_Clear();
    throw Error(fmt::format("{}: '{}': {}", what, utf8_of(text), kNotUtf8));
  }
  return {utf8, static_cast<std::size_t>(size)};
}

std::string shown(const py::handle& value) {
  return text_of(value, /*repr=*/true).value_or(fmt::format("<a {}>", type_name(py::type::handle_of(value))));
}

std::string exception_text(const py::error_already_set& e) {
  const std::string type = type_name(e.type());
  std::string why;
  const std::optional<std::string> message = text_of(e.value(), /*repr=*/false, &why);
  if (!message) return fmt::format("{} (its message could not be read: {})", type, why);
  return message->empty() ? type : fmt::format("{}: {}", type, *message);
}

std::string utf8_of(const py::handle& text) {
  // "backslashreplace" writes what UTF-8 cannot hold as \udc80 escapes instead of raising.
  const auto bytes =
      py::reinterpret_steal<py::object>(PyUnicode_AsEncodedString(text.ptr(), "utf-8", "backslashreplace"));
  if (!bytes) {  // not a str, or no memory left
    PyErr_Clear();
    return "?";
  }
  return {PyBytes_AS_STRING(bytes.ptr()), static_cast<std::size_t>(PyBytes_GET_SIZE(bytes.ptr()))};
}

std::string type_name(const py::handle& type) {
  const auto name = py::reinterpret_steal<py::object>(PyObject_GetAttrString(type.ptr(), "__name__"));
  if (name && PyUnicode_Check(name.ptr())) return utf8_of(name);
  PyErr_Clear();
  // A type's C name, which a class gets from its __name__ when it is made.
  return PyType_Check(type.ptr()) ? reinterpret_cast<PyTypeObject*>(type.ptr())->tp_name : "?";
}

std::optional<std::string> text_of(const py::handle& value, bool repr, std::string* why) {
  const auto text = py::reinterpret_steal<py::object>(repr ? PyObject_Repr(value.ptr()) : PyObject_Str(value.ptr()));
  if (text) return utf8_of(text);
  if (why != nullptr) {
    // What str() raised, read the same way (one level deep: its own text is read without a `why`).
    const py::error_already_set raised;  // takes the error, which clears it
    const std::optional<std::string> message = text_of(raised.value());
    *why = type_name(raised.type()) + (message && !message->empty() ? ": " + *message : "");
  }
  PyErr_Clear();
  return std::nullopt;
}

}  // namespace paratune::python
