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

}  // namespace paratune::fuzz
