// YAML::Load for paratune's YAML and JSON inputs, with JSON's surrogate pairs accepted.
#pragma once

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <charconv>
#include <string>
#include <string_view>

namespace paratune {

// yaml-cpp refuses the \u escape of a UTF-16 surrogate ("invalid unicode: 55357"), but JSON writes
// every character beyond U+FFFF as a pair of them: Python's json.dumps writes the rocket emoji as
// "\ud83d\ude80". A JSON file is read as YAML, so each pair is rewritten as the one escape YAML has
// for that character (\U0001F680) and the text is loaded again. Only the escape yaml-cpp itself
// refused is rewritten (its mark points just past it): the same six characters in a plain or
// single-quoted scalar are text, not an escape, and stay as they are. A surrogate without its
// pair stays an error, now saying so.
inline YAML::Node load_yaml(std::string text) {
  const auto hex4 = [&](std::size_t at) -> int {  // the 4 hex digits of a "\uXXXX" at `at`, or -1
    if (at + 6 > text.size() || text[at] != '\\' || text[at + 1] != 'u') return -1;
    int value = 0;
    const auto [end, ec] = std::from_chars(text.data() + at + 2, text.data() + at + 6, value, 16);
    return ec == std::errc() && end == text.data() + at + 6 ? value : -1;
  };
  // yaml-cpp's positions leave out a byte order mark.
  const std::size_t bom = std::string_view(text).starts_with("\xEF\xBB\xBF") ? 3 : 0;
  for (;;) {
    try {
      return YAML::Load(text);
    } catch (const YAML::ParserException& e) {
      constexpr std::string_view kInvalid = "invalid unicode: ";
      if (!std::string_view(e.msg).starts_with(kInvalid)) throw;
      const std::size_t past = static_cast<std::size_t>(e.mark.pos) + bom;  // just past the refused escape
      const int high = past >= 6 ? hex4(past - 6) : -1;
      if (high < 0xD800 || high > 0xDFFF) throw;  // not a surrogate (above U+10FFFF, say)
      const int low = hex4(past);
      if (high > 0xDBFF || low < 0xDC00 || low > 0xDFFF)
        throw YAML::ParserException(
            e.mark, fmt::format("\\u{:04x} is half of a UTF-16 surrogate pair without its other half (a character "
                                "beyond U+FFFF is written as a pair like \\ud83d\\ude80, or as \\U0001F680)",
                                high));
      const int code_point = 0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00);
      text.replace(past - 6, 12, fmt::format("\\U{:08X}", code_point));
    }
  }
}

}  // namespace paratune
