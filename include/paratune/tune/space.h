// The search space of a configuration study as the searches of parallel configurations index it:
// named parameters with discrete values and constraints, built from the one space of every study
// (hpo/space.h, whose file format this is: SearchSpace::of).
//
// A YAML or JSON file:
//   parameters:
//     dp: [1, 2, 4, 8]
//     mbs: [1, 2, 4]
//     zero: [0, 1, 2, 3]
//     ckpt: [false, true]
//     schedule: [1f1b, interleaved]
//   constraints:
//     - dp * tp * pp == 8
//     - pp == 1 or mbs <= 4
//     - schedule != "interleaved" or pp > 1
// Values are integers, floats, booleans (true/false) or strings (anything else, or quoted).
// Constraints are arithmetic and logical expressions over the parameters, evaluated by muparser
// (Debian libmuparser-dev): + - * / ^ %, == != < <= > >=, and/&&, or/||, not/!, parentheses, and
// muparser's functions (min, max, abs, ...). A boolean is 1 or 0; a string compares equal to the
// same quoted string literal. A point is valid when every constraint is non-zero.
//
// A space may instead list its valid points (SearchSpace::listed, e.g. the configurations the
// planner's model says fit, tune/derived_space.h): then exactly those are valid, in that order.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace paratune::hpo {
class Space;
}

namespace paratune::tune {

struct Parameter {
  std::string name;
  std::vector<nlohmann::json> values;  // scalars: integer, float, boolean or string
};

// A point: for each parameter (in declaration order), the index of its value.
using Point = std::vector<int>;

class SearchSpace {
 public:
  // The one space of every study (hpo/space.h), finite and without conditions, as value lists
  // indexed by points: a categorical parameter's choices, an integer range's every value, and its
  // constraints or its listed configurations. Throws Error naming the parameter that is a float
  // range or conditional, or a value a command cannot take (null, a NUL character).
  static SearchSpace of(const hpo::Space& space);
  // A space file read as hpo::Space reads it (one format for every study), then of(). Throws Error
  // naming the file, the field, the value and the rule it broke.
  static SearchSpace load(const std::filesystem::path& file);
  // The same from text; `source` names it in messages.
  static SearchSpace parse(std::string_view text, std::string_view source);

  SearchSpace(std::vector<Parameter> parameters, std::vector<std::string> constraints, std::string source);
  // A space whose valid points are exactly `points` (each valid for `parameters`, no duplicates),
  // enumerated in the given order. Throws Error if `points` is empty.
  static SearchSpace listed(std::vector<Parameter> parameters, std::vector<Point> points, std::string source);

  SearchSpace(SearchSpace&&) noexcept;
  SearchSpace& operator=(SearchSpace&&) noexcept;
  ~SearchSpace();

  [[nodiscard]] const std::vector<Parameter>& parameters() const { return parameters_; }
  [[nodiscard]] const std::vector<std::string>& constraints() const { return constraints_; }
  [[nodiscard]] const std::string& source() const { return source_; }  // the file it came from, for messages
  // Whether the valid points are listed in an order of their own (SearchSpace::listed).
  [[nodiscard]] bool is_listed() const { return !listed_.empty(); }
  [[nodiscard]] bool satisfies(const Point& point) const;
  // Every valid point, in odometer order (the last parameter varies fastest) or in the listed
  // order. Throws Error if the cartesian product exceeds 10 million points or nothing satisfies
  // the constraints. Computed once (the constraints are evaluated on every combination), then kept.
  [[nodiscard]] const std::vector<Point>& enumerate() const;
  [[nodiscard]] std::uint64_t cartesian_size() const;

  // {"dp": 2, "ckpt": true, ...} in declaration order.
  [[nodiscard]] nlohmann::ordered_json to_json(const Point& point) const;
  // The point with these parameter values ({"dp": 2, ...}, every parameter, nothing else), if it
  // is one of this space's points at all (valid or not).
  [[nodiscard]] std::optional<Point> point_of(const nlohmann::json& values) const;
  // name -> the value as a command-line word: 2, 0.5, true, 1f1b.
  [[nodiscard]] std::map<std::string, std::string> words(const Point& point) const;
  // The whole space (parameters, constraints, listed points) as JSON, e.g. to store with a study.
  [[nodiscard]] nlohmann::ordered_json describe() const;

 private:
  struct Evaluator;
  std::vector<Parameter> parameters_;
  std::vector<std::string> constraints_;
  std::string source_;
  std::vector<Point> listed_;  // non-empty: the valid points, in order (sorted copy for lookups)
  std::vector<Point> listed_sorted_;
  mutable std::optional<std::vector<Point>> valid_;  // enumerate()'s result once computed
  std::unique_ptr<Evaluator> evaluator_;
};

// A value as a command-line word (strings unquoted, numbers in their shortest exact form).
std::string word(const nlohmann::json& value);

}  // namespace paratune::tune
