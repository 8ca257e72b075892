// Internal to src/calib: reading typed values out of a PublishedRun's text fields.
#pragma once

#include <fmt/format.h>

#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <optional>
#include <string>

#include "paratune/calib/published_runs.h"
#include "paratune/spec/parallel.h"

namespace paratune::calib_detail {

inline std::string lower(std::string s) {
  for (auto& ch : s) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return s;
}
// Case-insensitive substring test.
inline bool contains(const std::string& haystack, const std::string& needle) {
  return lower(haystack).find(lower(needle)) != std::string::npos;
}

// The column as a number; nullopt when empty; Error when not a number.
inline std::optional<double> number(const PublishedRun& run, const std::string& column) {
  const std::string text = run.get(column);
  if (text.empty()) return std::nullopt;
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (end == text.c_str() || *end != '\0' || !std::isfinite(v))
    throw Error(fmt::format("{}: '{}' is not a number", column, text));
  return v;
}

// A token count as sources write it: "4194304", "16M", "2M", "1.5B", "512K". A suffix is ambiguous --
// "16M tokens" is 16 x 2^20 when it is a power-of-two batch of power-of-two sequences (Llama 3's
// 16M = 4096 x 4096), 16 x 10^6 elsewhere -- so each reading is tried and the one that is a whole
// number of `seq_len`-token sequences is taken (`reading` says which). Both or neither: an error.
inline std::optional<double> token_count(const PublishedRun& run, const std::string& column, int seq_len,
                                         std::string& reading) {
  std::string text = run.get(column);
  if (text.empty()) return std::nullopt;
  const char suffix = static_cast<char>(std::toupper(static_cast<unsigned char>(text.back())));
  const int power = suffix == 'K' ? 1 : suffix == 'M' ? 2 : (suffix == 'B' || suffix == 'G') ? 3 : 0;
  if (power == 0) return number(run, column);
  text.pop_back();
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (end == text.c_str() || *end != '\0' || !std::isfinite(v) || v <= 0)
    throw Error(fmt::format("{}: '{}' is not a token count (a number, optionally with K, M or B)", column,
                            run.get(column)));
  const double decimal = v * std::pow(1000.0, power), binary = v * std::pow(1024.0, power);
  auto whole = [&](double tokens) { return seq_len > 0 && tokens == std::floor(tokens) && std::fmod(tokens, seq_len) == 0; };
  if (whole(decimal) && !whole(binary)) {
    reading = fmt::format("'{}' read as {:.0f} (x 10^{})", run.get(column), decimal, 3 * power);
    return decimal;
  }
  if (whole(binary) && !whole(decimal)) {
    reading = fmt::format("'{}' read as {:.0f} (x 2^{})", run.get(column), binary, 10 * power);
    return binary;
  }
  throw Error(fmt::format("{}: '{}' is {} sequences of {} tokens read as x 10^{} and {} read as x 2^{}: {}", column,
                          run.get(column), decimal / std::max(1, seq_len), seq_len, 3 * power,
                          binary / std::max(1, seq_len), 10 * power,
                          whole(decimal) ? "both are whole batches, state the exact count"
                                         : "neither is a whole batch, state the exact count"));
}

// The column as a non-negative integer; `fallback` when empty.
inline int integer(const PublishedRun& run, const std::string& column, int fallback) {
  const auto v = number(run, column);
  if (!v) return fallback;
  if (*v != std::floor(*v) || *v < 0 || *v > std::numeric_limits<int>::max())
    throw Error(fmt::format("{}: '{}' is not a non-negative integer of at most {}", column, run.get(column),
                            std::numeric_limits<int>::max()));
  return static_cast<int>(*v);
}

// "GA = 32; ETP = 4" -> the integer after "KEY =" in other_result; nullopt when absent.
inline std::optional<int> other_result_int(const PublishedRun& run, const std::string& key) {
  const std::string text = run.get("other_result");
  const std::string low = lower(text);
  std::size_t pos = 0;
  const std::string k = lower(key);
  while ((pos = low.find(k, pos)) != std::string::npos) {
    const bool word_start = pos == 0 || !std::isalnum(static_cast<unsigned char>(low[pos - 1]));
    std::size_t i = pos + k.size();
    pos = i;
    if (!word_start) continue;
    while (i < low.size() && low[i] == ' ') ++i;
    if (i >= low.size() || low[i] != '=') continue;
    ++i;
    while (i < low.size() && low[i] == ' ') ++i;
    if (i < low.size() && std::isdigit(static_cast<unsigned char>(low[i]))) {
      int value = 0;
      if (std::from_chars(low.data() + i, low.data() + low.size(), value).ec != std::errc())
        throw Error(fmt::format("other_result: '{} = {}' does not fit in a 32-bit integer", key,
                                low.substr(i, low.find_first_not_of("0123456789", i) - i)));
      return value;
    }
  }
  return std::nullopt;
}

// "dp=8 tp=1 pp=1 cp=2 mbs=1 rc=full sp zero=1" from to_string(ParallelConfig): the axes a reader
// compares with the source (report.cc).
std::string compact(const std::string& config_text);

// Megatron's --recompute-modules where a row states them: "recompute of modules [layernorm, mlp]"
// (or "recompute_modules [...]") in the given text, as a recompute_modules set of spec/parallel.h;
// nullopt when not stated. Only stated text counts: a recipe known to set modules is not guessed.
// A name that is not a module is an Error naming the text.
inline std::optional<unsigned> stated_recompute_modules(const std::string& text) {
  const std::string low = lower(text);
  for (const char* lead : {"recompute of modules", "recompute_modules", "recompute-modules"}) {
    const std::size_t at = low.find(lead);
    if (at == std::string::npos) continue;
    const std::size_t open = low.find('[', at), close = low.find(']', at);
    if (open == std::string::npos || close == std::string::npos || open > close) continue;
    unsigned modules = 0;
    std::string name;
    for (std::size_t i = open + 1; i <= close; ++i) {
      const char ch = low[i];
      if (std::isalnum(static_cast<unsigned char>(ch)) || ch == '_') {
        name += ch;
      } else if (!name.empty()) {
        modules |= recompute_module_bit(parse_enum<RecomputeModule>(name));
        name.clear();
      }
    }
    return modules;
  }
  return std::nullopt;
}

}  // namespace paratune::calib_detail
