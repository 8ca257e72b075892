#include "paratune/spec/option_error.h"

#include <fmt/format.h>

#include <utility>

namespace paratune {
namespace {

// An option_ref in a rule: the field between two ASCII separators, which no message text uses.
constexpr char kRefBegin = '\x1e';
constexpr char kRefEnd = '\x1f';

std::string render_message(const std::string& field, const std::string& value, const std::string& rule,
                           const OptionError::Namer& flag_of) {
  const auto name_of = [&](std::string_view f) -> std::string {
    if (flag_of)
      if (std::optional<std::string> flag = flag_of(f)) return *flag;
    return std::string(f);
  };
  std::string text;
  for (std::size_t at = 0; at < rule.size();) {
    const std::size_t begin = rule.find(kRefBegin, at);
    const std::size_t end = begin == std::string::npos ? std::string::npos : rule.find(kRefEnd, begin);
    if (end == std::string::npos) {
      text.append(rule, at);
      break;
    }
    text.append(rule, at, begin - at).append(name_of(std::string_view(rule).substr(begin + 1, end - begin - 1)));
    at = end + 1;
  }
  const std::optional<std::string> flag = flag_of ? flag_of(field) : std::nullopt;
  if (flag) return value.empty() ? fmt::format("{}: {}", *flag, text) : fmt::format("{} {}: {}", *flag, value, text);
  return value.empty() ? fmt::format("option {}: {}", field, text)
                       : fmt::format("option {} = {}: {}", field, value, text);
}

}  // namespace

std::string option_ref(std::string_view field) { return fmt::format("{}{}{}", kRefBegin, field, kRefEnd); }

OptionError::OptionError(std::string field, std::string value, std::string rule)
    : Error(render_message(field, value, rule, nullptr)),
      field_(std::move(field)),
      value_(std::move(value)),
      rule_(std::move(rule)) {}

std::string OptionError::render(const Namer& flag_of) const { return render_message(field_, value_, rule_, flag_of); }

}  // namespace paratune
