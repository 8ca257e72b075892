// The search space of a hyperparameter study: typed parameters (continuous, integer, categorical),
// conditional parameters and constraints.
//
// A YAML or JSON file, the same form as tune/space.h's with typed parameters next to value lists:
//   parameters:
//     lr: {type: float, low: 1.0e-5, high: 1.0e-1, log: true}
//     epochs: {type: int, low: 1, high: 20}
//     batch_size: [64, 128, 256]            # categorical: the values as listed
//     optimizer: [sgd, adam]
//     momentum: {type: float, low: 0.5, high: 0.99, when: "optimizer == 'sgd'"}
//   constraints:
//     - batch_size <= 128 or lr < 0.05
// Typed fields: type (float | int | categorical), low and high (float, int; low < high, both > 0
// with log), log (false by default: sampled uniformly in log(value) when true), choices
// (categorical: the values), when (optional: the parameter exists only where the expression holds).
//
// Conditions and constraints are expressions as in tune/space.h (muparser: arithmetic, comparison,
// and/or/not, quoted strings compare equal to string values). A `when` may refer only to
// parameters declared before it, so a configuration is decided in declaration order and a
// parameter whose condition refers to an inactive one is itself inactive. A constraint that refers
// to an inactive parameter holds (it is about a value that does not exist).
//
// A space may instead list its configurations (Space::listed: e.g. the parallel configurations the
// planner's model says fit, tune/derived_space.h): then exactly those are its configurations, in
// that order.
//
// A configuration is a JSON object of the active parameters only, in declaration order:
//   {"lr": 0.003, "epochs": 7, "batch_size": 128, "optimizer": "adam"}
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace paratune::hpo {

enum class ParamType { kFloat, kInt, kCategorical };
const char* to_string(ParamType type);

struct ParamSpec {
  std::string name;
  ParamType type = ParamType::kFloat;
  double low = 0, high = 0;              // kFloat, kInt (integers for kInt)
  bool log = false;                      // kFloat, kInt: uniform in log(value)
  std::vector<nlohmann::json> choices;   // kCategorical: scalars (number, boolean or string)
  std::string when;                      // empty: always active
};

using Config = nlohmann::ordered_json;

class Space {
 public:
  // Throws Error naming the file, the parameter, the field and the rule it broke.
  static Space load(const std::filesystem::path& file);
  static Space parse(std::string_view text, std::string_view source);

  // Checks every field (names, bounds, choices, conditions, constraints); throws Error as above,
  // also when a finite space of at most 4,096 combinations has none that satisfies the constraints.
  Space(std::vector<ParamSpec> parameters, std::vector<std::string> constraints, std::string source);
  // A space whose configurations are exactly `configurations`, in that order: each a configuration of
  // `parameters` (which have no conditions), none twice. Throws Error naming `source` otherwise or
  // when there is none.
  static Space listed(std::vector<ParamSpec> parameters, std::vector<Config> configurations, std::string source);
  Space(Space&&) noexcept;
  Space& operator=(Space&&) noexcept;
  ~Space();

  [[nodiscard]] const std::vector<ParamSpec>& parameters() const { return parameters_; }
  [[nodiscard]] const std::vector<std::string>& constraints() const { return constraints_; }
  [[nodiscard]] const std::string& source() const { return source_; }
  [[nodiscard]] std::size_t size() const { return parameters_.size(); }
  [[nodiscard]] std::optional<std::size_t> index_of(std::string_view name) const;
  // Whether the configurations are listed (Space::listed) rather than every combination that
  // satisfies the constraints.
  [[nodiscard]] bool is_listed() const { return !listed_.empty(); }

  // Whether parameter `i` is active given the values decided so far (`partial` holds parameters
  // declared before `i`; a condition on one absent from it is false).
  [[nodiscard]] bool is_active(std::size_t i, const Config& partial) const;
  // The parameters parameter i's condition refers to (indices, all < i); empty without `when`.
  [[nodiscard]] const std::vector<std::size_t>& condition_parents(std::size_t i) const;
  // Every constraint holds (those on inactive parameters hold by definition); in a listed space: the
  // configuration is one of the listed.
  [[nodiscard]] bool satisfies(const Config& config) const;
  // Empty when `config` is one of this space's configurations: exactly the active parameters, each
  // of its type and within its bounds or choices, the constraints holding; else why not (one line).
  [[nodiscard]] std::string check(const Config& config) const;

  // Every parameter categorical or int, or the configurations listed, so the space is a finite set.
  [[nodiscard]] bool finite() const;
  // Every configuration of a finite space in odometer order (last parameter fastest; inactive
  // parameters skipped), constraints applied; a listed space's in the listed order. Throws Error if
  // the space is not finite, has more than 10 million combinations or none that satisfies the
  // constraints.
  [[nodiscard]] std::vector<Config> enumerate() const;

  // A configuration drawn from the prior (each active parameter uniform, in log space when log),
  // redrawn until the constraints hold; throws Error after 10,000 draws that all broke them.
  [[nodiscard]] Config sample(std::mt19937_64& rng) const;
  // The chance that one draw of the prior, before the constraints, is this configuration of a finite
  // space: the product over its active parameters of 1/choices (categorical) or the integer's cell
  // width in the unit interval (int; unequal under log: 1..1024 gives 1 about 15% and 1024 0.01%).
  [[nodiscard]] double prior_mass(const Config& config) const;

  // The unit-cube coordinate of a value of parameter i (float/int: (t(v) - t(low)) / (t(high) -
  // t(low)) with t = log when log, ints widened by 1/2 on each side so every integer has an equal
  // share; categorical: the choice's index, not a coordinate) and back (clamped, ints rounded,
  // floats kept within [low, high]).
  [[nodiscard]] double to_unit(std::size_t i, const nlohmann::json& value) const;
  [[nodiscard]] nlohmann::json from_unit(std::size_t i, double u) const;
  // The index of a categorical value among the choices; throws Error if it is none of them.
  [[nodiscard]] std::size_t choice_index(std::size_t i, const nlohmann::json& value) const;

  // The whole space as JSON (stored with a study: its identity).
  [[nodiscard]] nlohmann::ordered_json describe() const;

 private:
  struct Expressions;
  std::vector<ParamSpec> parameters_;
  std::vector<std::string> constraints_;
  std::string source_;
  std::unique_ptr<Expressions> expressions_;
  std::vector<Config> listed_;     // Space::listed's configurations, in order; empty otherwise
  std::set<std::string> listed_keys_;  // listed_key() of each
  // A configuration's values in declaration order, as text: the same configuration, whatever the
  // order of its keys, gives the same key.
  [[nodiscard]] std::string listed_key(const Config& config) const;
};

}  // namespace paratune::hpo
