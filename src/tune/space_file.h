// What tune/space.cc and hpo/space.cc share in reading a search-space file.
#pragma once

#include <yaml-cpp/yaml.h>

#include <nlohmann/json.hpp>
#include <string_view>

namespace paratune::tune {

// Letters, digits and _, not starting with a digit, and not and/or/not/true/false (they mean
// something in expressions).
bool is_parameter_name(std::string_view name);
inline constexpr const char* kParameterNameRule =
    "letters, digits and _, not starting with a digit; not and/or/not/true/false";

// A YAML scalar as a typed JSON value: quoted scalars are strings; plain ones are booleans,
// integers or floats when they read as such, else strings.
nlohmann::json typed_scalar(const YAML::Node& node);

}  // namespace paratune::tune
