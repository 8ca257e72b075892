// Range checks of the paratune program's numeric flags (CLI11 validators, attached with
// ->transform()). Each names the rule it enforces, so a bad value stops the program at once with exit
// 2 and a message such as
//   --memory-margin: -1 must be a finite number >= 0 and < 1 (the fraction of GPU memory kept free)
// instead of a long search that finds nothing (or a plan at 121 GiB on an 80 GB GPU).
//
// Numbers are decimal: CLI11 alone reads "010" as octal 8, "0x10" as 16, "-1" as 2^64 - 1 for an
// unsigned flag and "nan" or "inf" as a double. The validators accept what they check and rewrite
// it in canonical decimal form, so the value CLI11 stores is the one checked.
//
// The library checks its options again (validate() per options struct, naming fields); these name
// the flag the user typed.
#pragma once

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <charconv>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>

namespace paratune::cli {

// An integer from `lowest` to `highest`. `meaning` (optional) says what the flag is, in the message.
inline CLI::Validator whole_number(std::int64_t lowest, std::int64_t highest, const std::string& meaning = "") {
  const std::string rule = highest == std::numeric_limits<std::int64_t>::max()
                               ? fmt::format("an integer >= {}", lowest)
                               : fmt::format("an integer from {} to {}", lowest, highest);
  return CLI::Validator(
      [=](std::string& text) -> std::string {
        std::int64_t value = 0;
        const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
        if (ec != std::errc() || end != text.data() + text.size() || value < lowest || value > highest)
          return fmt::format("{} must be {}{}", text, rule, meaning.empty() ? "" : " (" + meaning + ")");
        text = std::to_string(value);
        return {};
      },
      // --help: "INT:>=1", "INT:1..1024" (an upper end at the type's own is left out)
      highest >= std::numeric_limits<int>::max() ? fmt::format(">={}", lowest) : fmt::format("{}..{}", lowest, highest));
}

// A seed: any integer from 0 to 2^64 - 1.
inline CLI::Validator seed_number() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        std::uint64_t value = 0;
        const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
        if (ec != std::errc() || end != text.data() + text.size())
          return fmt::format("{} must be an integer from 0 to {}", text, std::numeric_limits<std::uint64_t>::max());
        text = std::to_string(value);
        return {};
      },
      "0..2^64-1");
}

// Which ends of a real range belong to it.
enum class Ends { kClosed, kOpenLow, kOpenHigh, kOpen };

// A finite real number between `lowest` and `highest` (ends as `ends` says); never NaN or infinity.
inline CLI::Validator real_number(double lowest, double highest, Ends ends, const std::string& meaning = "") {
  const bool open_low = ends == Ends::kOpenLow || ends == Ends::kOpen;
  const bool open_high = ends == Ends::kOpenHigh || ends == Ends::kOpen;
  const std::string low = fmt::format("{} {:g}", open_low ? ">" : ">=", lowest);
  const std::string rule = std::isfinite(highest)
                               ? fmt::format("a finite number {} and {} {:g}", low, open_high ? "<" : "<=", highest)
                               : fmt::format("a finite number {}", low);
  return CLI::Validator(
      [=](std::string& text) -> std::string {
        double value = 0;
        const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
        const bool in_range = (open_low ? value > lowest : value >= lowest) &&
                              (open_high ? value < highest : value <= highest);
        if (ec != std::errc() || end != text.data() + text.size() || !std::isfinite(value) || !in_range)
          return fmt::format("{} must be {}{}", text, rule, meaning.empty() ? "" : " (" + meaning + ")");
        text = fmt::format("{}", value);  // shortest form that reads back as the same double
        return {};
      },
      // --help: "FLOAT:[0,1)", "FLOAT:>1"
      std::isfinite(highest) ? fmt::format("{}{:g},{:g}{}", open_low ? "(" : "[", lowest, highest, open_high ? ")" : "]")
                             : fmt::format("{}{:g}", open_low ? ">" : ">=", lowest));
}

// An MoE expert capacity factor: 0 (dropless) or a finite number >= 1 (TrainingSpec's rule).
inline CLI::Validator capacity_factor() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        double value = 0;
        const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
        if (ec != std::errc() || end != text.data() + text.size() || !std::isfinite(value) ||
            !(value == 0 || value >= 1))
          return fmt::format("{} must be 0 (dropless) or a finite number >= 1", text);
        text = fmt::format("{}", value);
        return {};
      },
      "0|>=1");
}

// The ends of the flags' ranges.
constexpr std::int64_t kIntMax = std::numeric_limits<int>::max();
constexpr std::int64_t kInt64Max = std::numeric_limits<std::int64_t>::max();
constexpr double kInf = std::numeric_limits<double>::infinity();
// Slots and ranks of one host (trial slots, a harvest job's ranks): more is not a machine.
constexpr std::int64_t kMaxHostSlots = 4096;

}  // namespace paratune::cli
