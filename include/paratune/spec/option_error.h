// paratune::OptionError — bad input in an options struct, named by its field.
//
// The library speaks of the fields of its options structs (`StudyOptions::max_trials`,
// `BayesOptions::initial_points`, `HarvestOptions::job_argv`), never of the flags a program maps
// them to. A `validate()` that finds a bad field throws an OptionError carrying the field, the value
// and the rule it broke:
//
//   option max_trials = -1: must be >= 0 (0: no limit)
//   option min_steps = 7: must be >= 1 and <= steps (5)
//
// Another option named inside the rule is written with `option_ref("steps")`, so that a program
// can show each option under its own name: the `paratune` CLI catches OptionError and renders it
// with its flags (`--min-steps 7: must be >= 1 and <= --steps (5)`, src/cli/option_flags.h). A field
// with no flag keeps the library's name.
//
// Nested fields are written with a dot (`limits.timeout_s`). `with_context()` (inherited) returns a
// plain Error with the library's names: re-throw an OptionError as it is where a program should
// still be able to rename its fields.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "paratune/spec/error.h"

namespace paratune {

// A reference to the option `field` inside an OptionError's rule (rendered by OptionError::render).
std::string option_ref(std::string_view field);

class OptionError : public Error {
 public:
  // `field`: the option as the library names it; `value`: the offending value as text, quoted by
  // the caller where that helps ("" when the rule speaks of the option as a whole); `rule`: what is
  // wrong, with other options as option_ref(...).
  OptionError(std::string field, std::string value, std::string rule);

  [[nodiscard]] const std::string& field() const { return field_; }
  [[nodiscard]] const std::string& value() const { return value_; }

  // How a program names an option: its flag ("--max-trials"), or nullopt to keep the field's name.
  using Namer = std::function<std::optional<std::string>(std::string_view field)>;

  // The message with each option named by `flag_of`. The option at fault leads: "FLAG VALUE: RULE"
  // where it has a flag, else "option FIELD = VALUE: RULE" (what() is render of no flags).
  [[nodiscard]] std::string render(const Namer& flag_of) const;

 private:
  std::string field_, value_, rule_;
};

}  // namespace paratune
