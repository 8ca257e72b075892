#include "space_file.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "paratune/spec/error.h"
#include "paratune/spec/input_file.h"
#include "../spec/yaml_load.h"

namespace paratune::hpo {

bool is_parameter_name(std::string_view name) {
  if (name.empty() || !(std::isalpha(static_cast<unsigned char>(name[0])) || name[0] == '_')) return false;
  if (name == "and" || name == "or" || name == "not" || name == "true" || name == "false") return false;
  return std::all_of(name.begin(), name.end(),
                     [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; });
}

nlohmann::json typed_scalar(const YAML::Node& node, std::string_view where) {
  const std::string& text = node.Scalar();
  if (node.Tag() == "!" || text.empty()) return text;  // quoted, or nothing to read as a number
  if (text == "true" || text == "True") return true;
  if (text == "false" || text == "False") return false;
  const char* const begin = text.data();
  const char* const end = begin + text.size();
  const auto unheld = [&](std::string_view why) {
    return Error(fmt::format("{}: line {}: {} {} (quote it for a string)", where, node.Mark().line + 1, text, why));
  };
  // A leading '+' is YAML's, not from_chars' (one sign only: "+-5" is no number).
  const char* const digits = text.size() > 1 && text[0] == '+' && text[1] != '-' && text[1] != '+' ? begin + 1 : begin;
  std::int64_t i = 0;
  if (auto [stop, ec] = std::from_chars(digits, end, i); stop == end) {
    if (ec == std::errc()) return i;
    throw unheld("is beyond a 64-bit integer's range");
  }
  double d = 0;
  if (auto [stop, ec] = std::from_chars(digits, end, d); stop == end) {
    if (ec == std::errc() && std::isfinite(d)) return d;
    throw unheld(ec == std::errc() ? "is not a finite number" : "is beyond a double's range");
  }
  // YAML 1.2's spellings of infinity and not-a-number.
  static const std::vector<std::string> specials{".nan", ".NaN", ".NAN", ".inf", ".Inf", ".INF",
                                                 "+.inf", "+.Inf", "+.INF", "-.inf", "-.Inf", "-.INF"};
  if (std::find(specials.begin(), specials.end(), text) != specials.end()) throw unheld("is not a finite number");
  return text;
}

SpaceFile read_space_file(std::string_view text, std::string_view source) {
  check_utf8(text, source);
  YAML::Node root;
  try {
    root = load_yaml(std::string(text));  // JSON's surrogate pairs (\ud83d\ude80) accepted
  } catch (const YAML::Exception& e) {
    throw Error(fmt::format("{}: not valid YAML/JSON: {}", source, e.what()));
  }
  if (!root.IsMap()) throw Error(fmt::format("{}: expected a mapping with 'parameters' (and 'constraints')", source));
  const std::vector<std::string> keys{"parameters", "constraints"};
  for (const auto& kv : root)
    if (std::find(keys.begin(), keys.end(), kv.first.Scalar()) == keys.end())
      throw Error(fmt::format("{}: {}", source, unknown_name_message("key", kv.first.Scalar(), keys)));
  SpaceFile file;
  file.parameters = root["parameters"];
  if (!file.parameters || !file.parameters.IsMap())
    throw Error(fmt::format("{}: parameters: expected a mapping of name: [values] (or name: {{type: ...}})", source));
  if (const YAML::Node list = root["constraints"]) {
    if (!list.IsSequence()) throw Error(fmt::format("{}: constraints: expected a list of expressions", source));
    for (const YAML::Node& c : list) {
      if (!c.IsScalar() || c.Scalar().empty())
        throw Error(fmt::format("{}: constraints: each entry must be an expression like 'dp * tp == 8'", source));
      file.constraints.push_back(utf8_scalar(c, fmt::format("{}: constraints", source)));
    }
  }
  return file;
}

std::string utf8_scalar(const YAML::Node& node, std::string_view where) {
  std::string text = node.Scalar();
  if (first_non_utf8(text) != std::string::npos)
    throw Error(fmt::format("{}: line {}: a string is not UTF-8 once YAML's escapes are decoded (yaml-cpp decodes "
                            "\\N and \\_ to Latin-1 bytes: write those characters themselves)",
                            where, node.Mark().line + 1));
  return text;
}

std::vector<nlohmann::json> value_list(const YAML::Node& list, const std::string& where) {
  if (!list.IsSequence()) throw Error(fmt::format("{}: expected a list of values like [1, 2, 4]", where));
  std::vector<nlohmann::json> out;
  for (const YAML::Node& v : list) {
    if (v.IsNull()) {
      out.emplace_back(nullptr);
      continue;
    }
    if (!v.IsScalar())
      throw Error(fmt::format("{}: values must be numbers, booleans or strings (or null)", where));
    utf8_scalar(v, where);
    out.push_back(typed_scalar(v, where));
  }
  return out;
}

}  // namespace paratune::hpo
