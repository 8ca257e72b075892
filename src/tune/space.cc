#include "paratune/tune/space.h"

#include <fmt/format.h>

#include <algorithm>
#include <cassert>
#include <charconv>
#include <cmath>
#include <fstream>
#include <set>
#include <sstream>

#include "paratune/hpo/space.h"
#include "paratune/spec/error.h"
#include "paratune/tune/expression.h"
#include "../hpo/space_file.h"

namespace paratune::tune {
namespace {

constexpr std::uint64_t kMaxCartesian = 10'000'000;
}  // namespace

std::string word(const nlohmann::json& value) {
  if (value.is_string()) return value.get<std::string>();
  if (value.is_boolean()) return value.get<bool>() ? "true" : "false";
  return value.dump();  // integers as such; floats in their shortest round-trip form
}

// The constraints, compiled over one variable per parameter.
struct SearchSpace::Evaluator {
  std::vector<double> variables;  // per parameter; stable addresses (never resized after binding)
  std::vector<Expression> constraints;  // they point into `variables`
};

SearchSpace::SearchSpace(std::vector<Parameter> parameters, std::vector<std::string> constraints, std::string source)
    : parameters_(std::move(parameters)),
      constraints_(std::move(constraints)),
      source_(std::move(source)),
      evaluator_(std::make_unique<Evaluator>()) {
  if (parameters_.empty()) throw Error(fmt::format("{}: parameters: at least one parameter is needed", source_));
  std::set<std::string> names;
  for (const Parameter& p : parameters_) {
    const std::string where = fmt::format("{}: parameters.{}", source_, p.name);
    if (!hpo::is_parameter_name(p.name))
      throw Error(fmt::format("{}: '{}' is not a usable name ({})", where, p.name, hpo::kParameterNameRule));
    if (!names.insert(p.name).second) throw Error(fmt::format("{}: defined twice", where));
    if (p.values.empty()) throw Error(fmt::format("{}: needs at least one value", where));
    // A set, not a scan of the earlier values: 100k values took over 30 s pairwise. json's '<'
    // orders numbers by value across types, so 1 and 1.0 are one value, as with '=='.
    std::set<nlohmann::json> seen;
    for (std::size_t i = 0; i < p.values.size(); ++i) {
      if (!p.values[i].is_primitive() || p.values[i].is_null())
        throw Error(fmt::format("{}[{}]: {} is not a number, boolean or string", where, i, p.values[i].dump()));
      // A value reaches the trial's command as an argument (a C string): a NUL would end it there.
      if (p.values[i].is_string() && p.values[i].get_ref<const std::string&>().find('\0') != std::string::npos)
        throw Error(fmt::format("{}[{}]: {} contains a NUL character, which a command argument cannot hold",
                                where, i, p.values[i].dump()));
      if (!seen.insert(p.values[i]).second)
        throw Error(fmt::format("{}: value {} is listed twice", where, p.values[i].dump()));
    }
  }
  Evaluator& ev = *evaluator_;
  ev.variables.assign(parameters_.size(), 0);
  std::vector<std::string> variable_names;
  for (const Parameter& p : parameters_) variable_names.push_back(p.name);
  for (std::size_t c = 0; c < constraints_.size(); ++c) {
    try {
      ev.constraints.emplace_back(constraints_[c], variable_names, ev.variables.data());
    } catch (const Error& e) {
      throw Error(fmt::format("{}: constraints[{}] '{}': {}", source_, c, constraints_[c], e.what()));
    }
  }
}

SearchSpace::SearchSpace(SearchSpace&&) noexcept = default;
SearchSpace& SearchSpace::operator=(SearchSpace&&) noexcept = default;
SearchSpace::~SearchSpace() = default;

SearchSpace SearchSpace::parse(std::string_view text, std::string_view source) {
  return of(hpo::Space::parse(text, source));
}

SearchSpace SearchSpace::load(const std::filesystem::path& file) { return of(hpo::Space::load(file)); }

SearchSpace SearchSpace::of(const hpo::Space& space) {
  const std::string why = "the searches of parallel configurations (grid, random, bo, xgboost, costmodel, oppa) "
                          "index a finite space";
  std::vector<Parameter> parameters;
  for (const hpo::ParamSpec& spec : space.parameters()) {
    const std::string where = fmt::format("{}: parameters.{}", space.source(), spec.name);
    if (!spec.when.empty())
      throw Error(fmt::format("{}: conditional (when: {}); {} whose every configuration has every parameter (tpe and "
                              "gp search conditional spaces)",
                              where, spec.when, why));
    Parameter p;
    p.name = spec.name;
    switch (spec.type) {
      case hpo::ParamType::kCategorical: p.values = spec.choices; break;
      case hpo::ParamType::kInt:
        if (spec.high - spec.low >= static_cast<double>(kMaxCartesian))
          throw Error(fmt::format("{}: more than {} values; {}: narrow it", where, kMaxCartesian, why));
        for (auto v = static_cast<std::int64_t>(spec.low); v <= static_cast<std::int64_t>(spec.high); ++v)
          p.values.emplace_back(v);
        break;
      case hpo::ParamType::kFloat:
        throw Error(fmt::format("{}: a float range; {}: give its values as a list like [0.5, 1.0] (tpe and gp "
                                "search float ranges)",
                                where, why));
    }
    parameters.push_back(std::move(p));
  }
  if (!space.is_listed()) return SearchSpace(std::move(parameters), space.constraints(), space.source());
  std::vector<Point> points;
  for (const hpo::Config& config : space.enumerate()) {
    Point point(parameters.size());
    for (std::size_t i = 0; i < parameters.size(); ++i) {
      const std::vector<nlohmann::json>& values = parameters[i].values;
      const nlohmann::json value = config.at(parameters[i].name);  // a plain json: compared with the values
      point[i] = static_cast<int>(std::find(values.begin(), values.end(), value) - values.begin());
    }
    points.push_back(std::move(point));
  }
  return listed(std::move(parameters), std::move(points), space.source());
}

SearchSpace SearchSpace::listed(std::vector<Parameter> parameters, std::vector<Point> points, std::string source) {
  if (points.empty()) throw Error(fmt::format("{}: no configuration to search", source));
  SearchSpace space(std::move(parameters), {}, std::move(source));
  for (const Point& p : points) {
    assert(p.size() == space.parameters_.size());
    for (std::size_t i = 0; i < p.size(); ++i)
      assert(p[i] >= 0 && p[i] < static_cast<int>(space.parameters_[i].values.size()));
  }
  space.listed_sorted_ = points;
  std::sort(space.listed_sorted_.begin(), space.listed_sorted_.end());
  assert(std::adjacent_find(space.listed_sorted_.begin(), space.listed_sorted_.end()) == space.listed_sorted_.end());
  space.listed_ = std::move(points);
  return space;
}

bool SearchSpace::satisfies(const Point& point) const {
  if (!listed_.empty() && !std::binary_search(listed_sorted_.begin(), listed_sorted_.end(), point)) return false;
  Evaluator& ev = *evaluator_;
  for (std::size_t i = 0; i < parameters_.size(); ++i)
    ev.variables[i] = expression_value(parameters_[i].values[static_cast<std::size_t>(point[i])]);
  for (std::size_t c = 0; c < ev.constraints.size(); ++c) {
    try {
      if (ev.constraints[c].evaluate() == 0) return false;
    } catch (const Error& e) {
      throw Error(fmt::format("{}: constraints[{}] '{}' at {}: {}", source_, c, constraints_[c], to_json(point).dump(),
                              e.what()));
    }
  }
  return true;
}

std::uint64_t SearchSpace::cartesian_size() const {
  std::uint64_t n = 1;
  for (const Parameter& p : parameters_) {
    n *= p.values.size();
    if (n > kMaxCartesian) return n;
  }
  return n;
}

const std::vector<Point>& SearchSpace::enumerate() const {
  if (valid_) return *valid_;
  if (!listed_.empty()) return listed_;
  if (cartesian_size() > kMaxCartesian)
    throw Error(fmt::format("{}: the parameters span more than {} points; narrow their value lists", source_,
                            kMaxCartesian));
  std::vector<Point> out;
  Point point(parameters_.size(), 0);
  for (;;) {
    if (satisfies(point)) out.push_back(point);
    std::size_t i = parameters_.size();
    while (i > 0) {
      --i;
      if (++point[i] < static_cast<int>(parameters_[i].values.size())) break;
      point[i] = 0;
      if (i == 0) {
        if (out.empty())
          throw Error(fmt::format("{}: no combination of the parameters satisfies every constraint", source_));
        return valid_.emplace(std::move(out));
      }
    }
  }
}

nlohmann::ordered_json SearchSpace::to_json(const Point& point) const {
  nlohmann::ordered_json out = nlohmann::ordered_json::object();
  for (std::size_t i = 0; i < parameters_.size(); ++i) out[parameters_[i].name] = parameters_[i].values[static_cast<std::size_t>(point[i])];
  return out;
}

std::optional<Point> SearchSpace::point_of(const nlohmann::json& values) const {
  if (!values.is_object() || values.size() != parameters_.size()) return std::nullopt;
  Point point;
  for (const Parameter& p : parameters_) {
    const auto it = values.find(p.name);
    if (it == values.end()) return std::nullopt;
    const auto v = std::find(p.values.begin(), p.values.end(), *it);
    if (v == p.values.end()) return std::nullopt;
    point.push_back(static_cast<int>(v - p.values.begin()));
  }
  return point;
}

std::map<std::string, std::string> SearchSpace::words(const Point& point) const {
  std::map<std::string, std::string> out;
  for (std::size_t i = 0; i < parameters_.size(); ++i)
    out[parameters_[i].name] = word(parameters_[i].values[static_cast<std::size_t>(point[i])]);
  return out;
}

nlohmann::ordered_json SearchSpace::describe() const {
  nlohmann::ordered_json params = nlohmann::ordered_json::object();
  for (const Parameter& p : parameters_) params[p.name] = p.values;
  nlohmann::ordered_json out{{"parameters", params}, {"constraints", constraints_}};
  if (!listed_.empty()) {
    nlohmann::ordered_json points = nlohmann::ordered_json::array();
    for (const Point& p : listed_) points.push_back(p);
    out["points"] = points;  // value indices per parameter
  }
  return out;
}

}  // namespace paratune::tune
