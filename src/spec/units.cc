#include "paratune/spec/units.h"

#include <fmt/format.h>

#include <array>
#include <cctype>
#include <cmath>
#include <string>
#include <utility>

#include "paratune/spec/error.h"

namespace paratune::units {
namespace {

struct Suffix {
  std::string_view text;
  double factor;
};

// Splits "450 GB/s" into the number 450 and the suffix "GB/s" (spaces trimmed).
std::pair<double, std::string> split_number(std::string_view text, std::string_view what) {
  std::string s(text);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.pop_back();
  std::size_t start = 0;
  while (start < s.size() && std::isspace(static_cast<unsigned char>(s[start]))) ++start;
  s = s.substr(start);
  if (s.empty()) throw Error(fmt::format("empty {} value", what));
  std::size_t consumed = 0;
  double value = 0;
  try {
    value = std::stod(s, &consumed);
  } catch (const std::exception&) {
    throw Error(fmt::format("'{}' is not a {}: it must start with a number", text, what));
  }
  std::string suffix = s.substr(consumed);
  std::size_t i = 0;
  while (i < suffix.size() && std::isspace(static_cast<unsigned char>(suffix[i]))) ++i;
  suffix = suffix.substr(i);
  if (!std::isfinite(value) || value < 0)
    throw Error(fmt::format("'{}' is not a valid {}: it must be a finite, non-negative number", text, what));
  return {value, suffix};
}

template <std::size_t N>
double apply_suffix(std::string_view text, std::string_view what, const std::array<Suffix, N>& table) {
  auto [value, suffix] = split_number(text, what);
  for (const auto& entry : table)
    if (suffix == entry.text) {
      // 1e308h is a finite number but no finite duration.
      if (!std::isfinite(value * entry.factor))
        throw Error(fmt::format("'{}' is not a valid {}: it must be finite in base units", text, what));
      return value * entry.factor;
    }
  std::string valid;
  for (const auto& entry : table) {
    if (!valid.empty()) valid += ", ";
    valid += entry.text.empty() ? "(none)" : std::string(entry.text);
  }
  throw Error(fmt::format("'{}': unknown unit '{}' for a {}; valid units: {}", text, suffix, what, valid));
}

}  // namespace

double parse_bytes(std::string_view text) {
  static constexpr std::array<Suffix, 13> kTable{{{"", 1},
                                                  {"B", 1},
                                                  {"KB", 1e3},
                                                  {"MB", 1e6},
                                                  {"GB", 1e9},
                                                  {"TB", 1e12},
                                                  {"KiB", kKiB},
                                                  {"MiB", kMiB},
                                                  {"GiB", kGiB},
                                                  {"TiB", kGiB * 1024},
                                                  {"K", kKiB},
                                                  {"M", kMiB},
                                                  {"G", kGiB}}};
  return apply_suffix(text, "size in bytes", kTable);
}

double parse_bandwidth(std::string_view text) {
  static constexpr std::array<Suffix, 13> kTable{{{"", 1},
                                                  {"B/s", 1},
                                                  {"KB/s", 1e3},
                                                  {"MB/s", 1e6},
                                                  {"GB/s", 1e9},
                                                  {"TB/s", 1e12},
                                                  {"GiB/s", kGiB},
                                                  {"Mbps", 1e6 / 8},
                                                  {"Gbps", 1e9 / 8},
                                                  {"Tbps", 1e12 / 8},
                                                  {"Mb/s", 1e6 / 8},
                                                  {"Gb/s", 1e9 / 8},
                                                  {"Tb/s", 1e12 / 8}}};
  return apply_suffix(text, "bandwidth", kTable);
}

double parse_duration(std::string_view text) {
  static constexpr std::array<Suffix, 9> kTable{{{"", 1},
                                                 {"s", 1},
                                                 {"ns", 1e-9},
                                                 {"us", 1e-6},
                                                 {"\xC2\xB5s", 1e-6},
                                                 {"ms", 1e-3},
                                                 {"m", 60},
                                                 {"min", 60},
                                                 {"h", 3600}}};
  return apply_suffix(text, "duration", kTable);
}

std::string format_bytes(double bytes) {
  if (bytes >= kGiB) return fmt::format("{:.1f} GiB", bytes / kGiB);
  if (bytes >= kMiB) return fmt::format("{:.1f} MiB", bytes / kMiB);
  if (bytes >= kKiB) return fmt::format("{:.1f} KiB", bytes / kKiB);
  return fmt::format("{:.0f} B", bytes);
}

std::string format_bandwidth(double bytes_per_s) {
  if (bytes_per_s >= 1e12) return fmt::format("{:.2f} TB/s", bytes_per_s / 1e12);
  return fmt::format("{:.1f} GB/s", bytes_per_s / 1e9);
}

std::string format_duration(double seconds) {
  if (seconds >= 1) return fmt::format("{:.3f} s", seconds);
  if (seconds >= 1e-3) return fmt::format("{:.2f} ms", seconds * 1e3);
  if (seconds >= 1e-6) return fmt::format("{:.2f} us", seconds * 1e6);
  return fmt::format("{:.0f} ns", seconds * 1e9);
}

std::string format_count(double count) {
  if (count >= 1e12) return fmt::format("{:.2f}T", count / 1e12);
  if (count >= 1e9) return fmt::format("{:.2f}B", count / 1e9);
  if (count >= 1e6) return fmt::format("{:.1f}M", count / 1e6);
  if (count >= 1e3) return fmt::format("{:.1f}K", count / 1e3);
  return fmt::format("{:.0f}", count);
}

}  // namespace paratune::units
