// Reading a search-space file's YAML (hpo/space.h): names, typed scalars, value lists.
#pragma once

#include <yaml-cpp/yaml.h>

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

namespace paratune::hpo {

// Letters, digits and _, not starting with a digit, and not and/or/not/true/false (they mean
// something in expressions).
bool is_parameter_name(std::string_view name);
inline constexpr const char* kParameterNameRule =
    "letters, digits and _, not starting with a digit; not and/or/not/true/false";

// A YAML scalar as a typed JSON value: quoted scalars are strings; plain ones are booleans,
// integers or floats when they read as such, else strings. A plain scalar that is a number paratune
// cannot hold exactly -- an integer beyond 64 bits, a float beyond double's range, nan or inf in any
// spelling (.nan, .inf, -inf) -- is an Error naming `where`, never a rounded number or a string.
nlohmann::json typed_scalar(const YAML::Node& node, std::string_view where);

// A search-space file's two parts: `parameters` (a mapping, checked to be one) and `constraints`
// (expressions). Throws Error naming `source` for bad YAML, another top-level key (with a
// suggestion), or parts of the wrong shape.
struct SpaceFile {
  YAML::Node parameters;
  std::vector<std::string> constraints;
};
SpaceFile read_space_file(std::string_view text, std::string_view source);

// A scalar's text; Error naming `where` when it is not UTF-8 once YAML's escapes are decoded
// (yaml-cpp decodes \N and \_ to Latin-1 bytes). Every string of a space is stored with a study as
// JSON, which holds only UTF-8.
std::string utf8_scalar(const YAML::Node& node, std::string_view where);

// A list of scalar values, typed (`where` names it in messages: "space.yaml: parameters.tp"). YAML's
// null (`~`, `null`) is a value too: a categorical choice may be None, as in Optuna (a configuration
// study's view refuses it where a command needs a word: tune::SearchSpace::of).
std::vector<nlohmann::json> value_list(const YAML::Node& list, const std::string& where);

}  // namespace paratune::hpo
