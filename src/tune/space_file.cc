#include "space_file.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <string>

namespace paratune::tune {

bool is_parameter_name(std::string_view s) {
  if (s.empty() || !(std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_')) return false;
  if (s == "and" || s == "or" || s == "not" || s == "true" || s == "false") return false;
  return std::all_of(s.begin(), s.end(), [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; });
}

nlohmann::json typed_scalar(const YAML::Node& node) {
  const std::string text = node.Scalar();
  if (node.Tag() == "!") return text;  // quoted
  if (text == "true" || text == "True") return true;
  if (text == "false" || text == "False") return false;
  std::int64_t i = 0;
  if (auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), i);
      ec == std::errc() && end == text.data() + text.size())
    return i;
  double d = 0;
  if (auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), d);
      ec == std::errc() && end == text.data() + text.size() && std::isfinite(d))
    return d;
  return text;
}

}  // namespace paratune::tune
