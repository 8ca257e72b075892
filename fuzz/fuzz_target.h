// What the fuzz targets share: the rule for what counts as a bug.
//
// Every parser here must answer any input either with a result or with a paratune::Error (bad
// input, exit 2 in the CLI). Anything else is a bug libFuzzer reports and stops on: another
// exception type escaping (std::terminate -> abort), an AddressSanitizer or UndefinedBehavior-
// Sanitizer report, an input that runs past -timeout or allocates past -rss_limit_mb, and a
// property a target checks failing (`require`).
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "paratune/spec/error.h"

namespace paratune::fuzz {

// A property of a successful parse that must hold (a round trip, a count); aborts when it fails,
// which libFuzzer reports as a crash with the input that broke it.
inline void require(bool holds, const char* property) {
  if (holds) return;
  std::fprintf(stderr, "fuzz property broken: %s\n", property);
  std::abort();
}

// Runs `parse`; a paratune::Error is the expected answer to bad input.
template <typename F>
int expect_result_or_error(F&& parse) {
  try {
    parse();
  } catch (const Error&) {
  }
  return 0;
}

inline std::string_view as_text(const std::uint8_t* data, std::size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

// The round-trip property of a parser with a printer: `value`, once accepted, printed as JSON by
// to_json and read back by `read_back(json)`, is accepted again and prints the same. `what` names
// the thing in the broken property ("model", "cluster", "calibration").
template <typename T, typename ReadBack>
void check_round_trip(const T& value, ReadBack&& read_back, const char* what) {
  const auto written = to_json(value);
  T again;
  try {
    again = read_back(written);
  } catch (const Error& e) {
    std::fprintf(stderr, "%s\n%s accepted once, refused from its own JSON\n", e.what(), what);
    std::abort();
  }
  if (to_json(again) != written) {
    std::fprintf(stderr, "fuzz property broken: a %s read back from its own JSON is not the same\n", what);
    std::abort();
  }
}

}  // namespace paratune::fuzz
