// paratune::Error — the one exception type for bad user input.
//
// A user error carries the context it happened in ("cluster.yaml: gpu.memory"), so the message a
// person reads names the file, the field, the value and the rule it broke. Each stage boundary
// re-throws with its own context prepended (see `with_context`). Broken invariants (bugs) are
// assertions, not Errors. The CLI maps Error to exit code 2.
#pragma once

#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace paratune {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message) : std::runtime_error(message) {}

  // Returns a copy of this error whose message is "context: <message>".
  [[nodiscard]] Error with_context(std::string_view context) const;
};

// Levenshtein edit distance, used to suggest the closest valid name for a typo.
std::size_t edit_distance(std::string_view a, std::string_view b);

// The candidate closest to `name` if it is close enough to be a plausible typo, else "".
std::string closest_match(std::string_view name, std::span<const std::string> candidates);

// "unknown X 'name' (did you mean 'y'?); valid: a, b, c" — the standard unknown-name message.
std::string unknown_name_message(std::string_view what, std::string_view name,
                                 std::span<const std::string> valid);

// Joins names with ", ".
std::string join(std::span<const std::string> names, std::string_view separator = ", ");

}  // namespace paratune
