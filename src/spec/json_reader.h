// Strict reader over one JSON object of a user file: typed getters, and `finish()` rejects every
// key that no getter asked for (with a did-you-mean suggestion). Internal to the spec module.
#pragma once

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "paratune/spec/enums.h"
#include "paratune/spec/error.h"
#include "paratune/spec/units.h"

namespace paratune::detail {

// A JSON value as a 32-bit int: an integer, or a float with an integral value, in range (never
// wrapped: 4294967312 is not 16). nullopt otherwise; int_problem says why.
inline std::optional<int> json_int(const nlohmann::json& v) {
  constexpr double kMin = std::numeric_limits<int>::min(), kMax = std::numeric_limits<int>::max();
  if (v.is_number_unsigned())
    return v.get<std::uint64_t>() <= static_cast<std::uint64_t>(kMax) ? std::optional<int>(static_cast<int>(v.get<std::uint64_t>()))
                                                                      : std::nullopt;
  if (v.is_number_integer()) {
    const std::int64_t i = v.get<std::int64_t>();
    return i >= kMin && i <= kMax ? std::optional<int>(static_cast<int>(i)) : std::nullopt;
  }
  if (v.is_number_float()) {
    const double d = v.get<double>();
    if (std::isfinite(d) && d >= kMin && d <= kMax && d == std::floor(d)) return static_cast<int>(d);
  }
  return std::nullopt;
}
inline std::string int_problem(const nlohmann::json& v) {
  if (v.is_number() && !(v.is_number_float() && v.get<double>() != std::floor(v.get<double>())))
    return fmt::format("{} does not fit in a 32-bit integer (at most {})", v.dump(), std::numeric_limits<int>::max());
  return fmt::format("{} is not an integer", v.dump());
}

class JsonReader {
 public:
  // `context` prefixes every error, e.g. "cluster.yaml" or "cluster.yaml: gpu".
  JsonReader(const nlohmann::json& object, std::string context, std::vector<std::string> known_keys)
      : object_(object), context_(std::move(context)), known_(std::move(known_keys)) {
    if (!object_.is_object()) fail("", "must be a mapping of keys to values");
  }

  [[nodiscard]] bool has(const std::string& key) const { return object_.contains(key) && !object_[key].is_null(); }
  [[nodiscard]] const std::string& context() const { return context_; }

  int get_int(const std::string& key, int fallback) {
    if (!take(key)) return fallback;
    const std::optional<int> value = json_int(object_[key]);
    if (!value) fail(key, int_problem(object_[key]));
    return *value;
  }
  int require_int(const std::string& key) {
    if (!has(key)) fail(key, "is required");
    return get_int(key, 0);
  }
  double get_double(const std::string& key, double fallback) {
    if (!take(key)) return fallback;
    const auto& v = object_[key];
    if (v.is_number()) return v.get<double>();
    fail(key, fmt::format("{} is not a number", v.dump()));
  }
  bool get_bool(const std::string& key, bool fallback) {
    if (!take(key)) return fallback;
    const auto& v = object_[key];
    if (v.is_boolean()) return v.get<bool>();
    fail(key, fmt::format("{} is not a boolean (true/false)", v.dump()));
  }
  std::string get_string(const std::string& key, const std::string& fallback) {
    if (!take(key)) return fallback;
    const auto& v = object_[key];
    if (v.is_string()) return v.get<std::string>();
    if (v.is_number()) return v.dump();
    fail(key, fmt::format("{} is not a string", v.dump()));
  }
  template <typename E>
  E get_enum(const std::string& key, E fallback) {
    if (!take(key)) return fallback;
    const std::string text = get_raw_string(key);  // not a string: fails with the context once
    try {
      return parse_enum<E>(text);
    } catch (const Error& e) {
      fail(key, e.what());
    }
  }
  // A quantity with units ("450GB/s") or a bare number in base units; `parse` is one of units::parse_*.
  double get_quantity(const std::string& key, double fallback, double (*parse)(std::string_view)) {
    if (!take(key)) return fallback;
    const auto& v = object_[key];
    if (v.is_number()) return v.get<double>();
    const std::string text = get_raw_string(key);  // not a string: fails with the context once
    try {
      return parse(text);
    } catch (const Error& e) {
      fail(key, e.what());
    }
  }
  const nlohmann::json* get_object(const std::string& key) {
    if (!take(key)) return nullptr;
    return &object_[key];
  }

  // Rejects keys nobody read.
  void finish() const {
    for (const auto& [key, value] : object_.items()) {
      if (used_.contains(key)) continue;
      if (std::find(known_.begin(), known_.end(), key) != known_.end() && value.is_null()) continue;
      fail("", unknown_name_message("key", key, known_));
    }
  }

  [[noreturn]] void fail(const std::string& key, const std::string& message) const {
    throw Error(key.empty() ? fmt::format("{}: {}", context_, message) : fmt::format("{}: {}: {}", context_, key, message));
  }

 private:
  bool take(const std::string& key) {
    if (std::find(known_.begin(), known_.end(), key) == known_.end())
      throw std::logic_error("JsonReader: key '" + key + "' missing from known_keys");
    used_.insert(key);
    return has(key);
  }
  std::string get_raw_string(const std::string& key) const {
    const auto& v = object_[key];
    if (!v.is_string()) fail(key, fmt::format("{} is not a string", v.dump()));
    return v.get<std::string>();
  }

  const nlohmann::json& object_;
  std::string context_;
  std::vector<std::string> known_;
  std::set<std::string> used_;
};

}  // namespace paratune::detail
