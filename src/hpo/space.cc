#include "paratune/hpo/space.h"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <fstream>
#include <set>
#include <sstream>

#include "space_file.h"
#include "paratune/spec/error.h"
#include "paratune/spec/input_file.h"
#include "paratune/tune/expression.h"
#include "paratune/tune/study.h"

namespace paratune::hpo {
namespace {

constexpr std::uint64_t kMaxGrid = 10'000'000;
constexpr int kMaxSampleTries = 10'000;
// Finite spaces with at most this many combinations are enumerated when built, so constraints that
// no combination satisfies are an error at once rather than after kMaxSampleTries rejected draws.
constexpr double kCheckedGrid = 4096;
constexpr std::array<const char*, 3> kTypeNames{"float", "int", "categorical"};
const std::vector<std::string> kTypedKeys{"type", "low", "high", "log", "choices", "when"};

// The number of combinations of a finite space's values, inactive parameters counted as active
// (an upper bound on its configurations).
double combinations(const std::vector<ParamSpec>& parameters) {
  double n = 1;
  for (const ParamSpec& p : parameters)
    n *= p.type == ParamType::kCategorical ? static_cast<double>(p.choices.size()) : p.high - p.low + 1;
  return n;
}

// A uniform double in [0, 1) from the top 53 bits: the same draws on every platform.
double unit_draw(std::mt19937_64& rng) { return static_cast<double>(rng() >> 11) * 0x1.0p-53; }

double transform(const ParamSpec& p, double x) { return p.log ? std::log(x) : x; }
double untransform(const ParamSpec& p, double t) { return p.log ? std::exp(t) : t; }

// The interval the unit coordinate spans: ints widened by 1/2 on each side, so that each integer
// owns a cell of equal width (in log space when log).
std::pair<double, double> unit_interval(const ParamSpec& p) {
  if (p.type == ParamType::kInt) return {transform(p, p.low - 0.5), transform(p, p.high + 0.5)};
  return {transform(p, p.low), transform(p, p.high)};
}

ParamType parse_type(const std::string& name, const std::string& where) {
  for (std::size_t i = 0; i < kTypeNames.size(); ++i)
    if (name == kTypeNames[i]) return static_cast<ParamType>(i);
  throw Error(fmt::format("{}.type: '{}' is not a parameter type (valid: float, int, categorical)", where, name));
}

// A range end: any plain number a double holds (a large integer too: a float range's end needs no
// exact integer), finite.
double number_field(const YAML::Node& node, const std::string& where, const char* field) {
  if (!node.IsScalar() || node.Tag() == "!")
    throw Error(fmt::format("{}.{}: expected a number (unquoted)", where, field));
  const std::string& text = node.Scalar();
  const bool yaml_plus = text.size() > 1 && text[0] == '+' && text[1] != '-' && text[1] != '+';  // from_chars takes no '+'
  const char* const begin = yaml_plus ? text.data() + 1 : text.data();
  const char* const end = text.data() + text.size();
  double d = 0;
  const auto [stop, ec] = std::from_chars(begin, end, d);
  if (text.empty() || stop != end || ec != std::errc() || !std::isfinite(d))
    throw Error(fmt::format("{}.{}: {} is not a finite number", where, field, text.empty() ? "(empty)" : text));
  return d;
}

ParamSpec typed_parameter(const std::string& name, const YAML::Node& node, const std::string& where) {
  ParamSpec p;
  p.name = name;
  for (const auto& kv : node) {
    const std::string key = kv.first.Scalar();
    if (std::find(kTypedKeys.begin(), kTypedKeys.end(), key) == kTypedKeys.end())
      throw Error(fmt::format("{}: {}", where, unknown_name_message("field", key, kTypedKeys)));
  }
  if (node["type"]) p.type = parse_type(node["type"].Scalar(), where);
  else if (node["choices"]) p.type = ParamType::kCategorical;
  else throw Error(fmt::format("{}.type: missing (float, int or categorical)", where));
  if (p.type == ParamType::kCategorical) {
    if (!node["choices"]) throw Error(fmt::format("{}.choices: a categorical parameter needs its choices", where));
    for (const char* field : {"low", "high", "log"})
      if (node[field]) throw Error(fmt::format("{}.{}: not a field of a categorical parameter (it has choices)", where, field));
    p.choices = value_list(node["choices"], where + ".choices");
  } else {
    if (node["choices"]) throw Error(fmt::format("{}.choices: a {} parameter has low and high, not choices", where, to_string(p.type)));
    for (const char* field : {"low", "high"})
      if (!node[field]) throw Error(fmt::format("{}.{}: missing (a {} parameter needs low and high)", where, field, to_string(p.type)));
    p.low = number_field(node["low"], where, "low");
    p.high = number_field(node["high"], where, "high");
    if (const YAML::Node log = node["log"]) {
      const nlohmann::json v = log.IsScalar() ? typed_scalar(log, where + ".log") : nlohmann::json();
      if (!v.is_boolean()) throw Error(fmt::format("{}.log: expected true or false", where));
      p.log = v.get<bool>();
    }
  }
  if (const YAML::Node when = node["when"]) {
    if (!when.IsScalar() || when.Scalar().empty())
      throw Error(fmt::format("{}.when: expected an expression like \"optimizer == 'sgd'\"", where));
    p.when = utf8_scalar(when, where + ".when");
  }
  return p;
}

void check_parameter(const ParamSpec& p, const std::string& where) {
  if (p.type == ParamType::kCategorical) {
    if (p.choices.empty()) throw Error(fmt::format("{}: needs at least one value", where));
    // A set, not a scan of the earlier values: 100k values took over 30 s pairwise. json's '<'
    // orders numbers by value across types, so 1 and 1.0 are one value, as with '=='.
    std::set<nlohmann::json> seen;
    for (std::size_t i = 0; i < p.choices.size(); ++i) {
      // null is a choice too (Python's None, as Optuna's categorical takes it).
      if (!p.choices[i].is_primitive())
        throw Error(fmt::format("{}[{}]: {} is not a number, boolean, string or null", where, i, p.choices[i].dump()));
      // A value reaches the trial's command as an argument (a C string): a NUL would end it there.
      if (p.choices[i].is_string() && p.choices[i].get_ref<const std::string&>().find('\0') != std::string::npos)
        throw Error(fmt::format("{}[{}]: {} contains a NUL character, which a command argument cannot hold",
                                where, i, p.choices[i].dump()));
      if (!seen.insert(p.choices[i]).second)
        throw Error(fmt::format("{}: value {} is listed twice", where, p.choices[i].dump()));
    }
    return;
  }
  if (!std::isfinite(p.low) || !std::isfinite(p.high))
    throw Error(fmt::format("{}: low {} and high {} must be finite", where, p.low, p.high));
  if (p.type == ParamType::kInt) {
    if (p.low != std::floor(p.low)) throw Error(fmt::format("{}.low: {} is not an integer (type int)", where, p.low));
    if (p.high != std::floor(p.high)) throw Error(fmt::format("{}.high: {} is not an integer (type int)", where, p.high));
    if (std::fabs(p.low) > 1e15 || std::fabs(p.high) > 1e15)
      throw Error(fmt::format("{}: low {} and high {} must be within +-1e15 (exact as doubles)", where, p.low, p.high));
  }
  if (!(p.low < p.high))
    throw Error(fmt::format("{}: low {} must be below high {} (a single value is a list: [{}])", where, p.low, p.high, p.low));
  if (p.log && !(p.low > 0))
    throw Error(fmt::format("{}.low: {} must be > 0 with log: true (sampled uniformly in log(value))", where, p.low));
}

}  // namespace

const char* to_string(ParamType type) { return kTypeNames[static_cast<std::size_t>(type)]; }

// The conditions and constraints, compiled over one variable per parameter.
struct Space::Expressions {
  std::vector<double> values;                        // per parameter; never resized after binding
  std::vector<std::optional<tune::Expression>> when;  // per parameter
  std::vector<std::vector<std::size_t>> parents;      // per parameter: what its `when` uses
  std::vector<tune::Expression> constraints;
};

Space::Space(std::vector<ParamSpec> parameters, std::vector<std::string> constraints, std::string source)
    : parameters_(std::move(parameters)),
      constraints_(std::move(constraints)),
      source_(std::move(source)),
      expressions_(std::make_unique<Expressions>()) {
  if (parameters_.empty()) throw Error(fmt::format("{}: parameters: at least one parameter is needed", source_));
  std::set<std::string> seen;
  std::vector<std::string> names;
  for (const ParamSpec& p : parameters_) {
    const std::string where = fmt::format("{}: parameters.{}", source_, p.name);
    if (!is_parameter_name(p.name))
      throw Error(fmt::format("{}: '{}' is not a usable name ({})", where, p.name, kParameterNameRule));
    if (!seen.insert(p.name).second) throw Error(fmt::format("{}: defined twice", where));
    check_parameter(p, where);
    names.push_back(p.name);
  }
  Expressions& ex = *expressions_;
  ex.values.assign(parameters_.size(), 0);
  ex.when.resize(parameters_.size());
  ex.parents.resize(parameters_.size());
  for (std::size_t i = 0; i < parameters_.size(); ++i) {
    if (parameters_[i].when.empty()) continue;
    const std::string where = fmt::format("{}: parameters.{}.when '{}'", source_, parameters_[i].name, parameters_[i].when);
    try {
      ex.when[i].emplace(parameters_[i].when, names, ex.values.data());
    } catch (const Error& e) {
      throw Error(fmt::format("{}: {}", where, e.what()));
    }
    for (std::size_t used : ex.when[i]->used())
      if (used >= i)
        throw Error(fmt::format("{}: refers to '{}', which is {}; a condition may use only parameters declared before it",
                                where, names[used], used == i ? "the parameter itself" : "declared after it"));
    ex.parents[i] = ex.when[i]->used();
  }
  for (std::size_t c = 0; c < constraints_.size(); ++c) {
    try {
      ex.constraints.emplace_back(constraints_[c], names, ex.values.data());
    } catch (const Error& e) {
      throw Error(fmt::format("{}: constraints[{}] '{}': {}", source_, c, constraints_[c], e.what()));
    }
  }
  if (!constraints_.empty() && finite() && combinations(parameters_) <= kCheckedGrid)
    (void)enumerate();  // throws when no combination satisfies every constraint
}

Space Space::listed(std::vector<ParamSpec> parameters, std::vector<Config> configurations, std::string source) {
  Space space(std::move(parameters), {}, std::move(source));
  if (configurations.empty()) throw Error(fmt::format("{}: no configuration is listed", space.source_));
  for (const ParamSpec& p : space.parameters_)
    if (!p.when.empty())
      throw Error(fmt::format("{}: parameters.{}: a listed space's parameters have no conditions", space.source_, p.name));
  for (const Config& c : configurations) {  // checked as configurations of the parameters, before any is listed
    if (const std::string problem = space.check(c); !problem.empty())
      throw Error(fmt::format("{}: listed configuration {}: {}", space.source_, c.dump(), problem));
    if (!space.listed_keys_.insert(space.listed_key(c)).second)
      throw Error(fmt::format("{}: configuration {} is listed twice", space.source_, c.dump()));
  }
  space.listed_ = std::move(configurations);
  return space;
}

std::string Space::listed_key(const Config& config) const {
  std::string key;
  for (const ParamSpec& p : parameters_) {
    const auto it = config.find(p.name);
    key += (it == config.end() ? "-" : it->dump()) + ",";
  }
  return key;
}

Space::Space(Space&&) noexcept = default;
Space& Space::operator=(Space&&) noexcept = default;
Space::~Space() = default;

Space Space::parse(std::string_view text, std::string_view source) {
  SpaceFile file = read_space_file(text, source);
  std::vector<ParamSpec> parameters;
  for (const auto& kv : file.parameters) {
    const std::string name = kv.first.Scalar();
    const std::string where = fmt::format("{}: parameters.{}", source, name);
    if (kv.second.IsMap()) {
      parameters.push_back(typed_parameter(name, kv.second, where));
    } else if (kv.second.IsSequence()) {
      ParamSpec p;
      p.name = name;
      p.type = ParamType::kCategorical;
      p.choices = value_list(kv.second, where);
      parameters.push_back(std::move(p));
    } else {
      throw Error(fmt::format("{}: expected a list of values like [64, 128] or a typed parameter like "
                              "{{type: float, low: 1.0e-5, high: 0.1, log: true}}",
                              where));
    }
  }
  return Space(std::move(parameters), std::move(file.constraints), std::string(source));
}

Space Space::load(const std::filesystem::path& file) {
  return parse(read_input_file(file.string(), "search space file"), file.string());
}

std::optional<std::size_t> Space::index_of(std::string_view name) const {
  for (std::size_t i = 0; i < parameters_.size(); ++i)
    if (parameters_[i].name == name) return i;
  return std::nullopt;
}

const std::vector<std::size_t>& Space::condition_parents(std::size_t i) const { return expressions_->parents[i]; }

bool Space::is_active(std::size_t i, const Config& partial) const {
  Expressions& ex = *expressions_;
  if (!ex.when[i]) return true;
  for (std::size_t parent : ex.parents[i]) {
    const auto it = partial.find(parameters_[parent].name);
    if (it == partial.end()) return false;  // the parent is inactive: so is this one
    ex.values[parent] = tune::expression_value(*it);
  }
  try {
    return ex.when[i]->evaluate() != 0;
  } catch (const Error& e) {
    throw Error(fmt::format("{}: parameters.{}.when '{}' at {}: {}", source_, parameters_[i].name, parameters_[i].when,
                            partial.dump(), e.what()));
  }
}

bool Space::satisfies(const Config& config) const {
  if (is_listed()) return listed_keys_.contains(listed_key(config));
  Expressions& ex = *expressions_;
  for (std::size_t c = 0; c < ex.constraints.size(); ++c) {
    bool defined = true;
    for (std::size_t used : ex.constraints[c].used()) {
      const auto it = config.find(parameters_[used].name);
      if (it == config.end()) {
        defined = false;  // about an inactive parameter: holds
        break;
      }
      ex.values[used] = tune::expression_value(*it);
    }
    if (!defined) continue;
    try {
      if (ex.constraints[c].evaluate() == 0) return false;
    } catch (const Error& e) {
      throw Error(fmt::format("{}: constraints[{}] '{}' at {}: {}", source_, c, constraints_[c], config.dump(), e.what()));
    }
  }
  return true;
}

std::string Space::check(const Config& config) const {
  if (!config.is_object()) return fmt::format("{} is not an object of parameter values", config.dump());
  for (const auto& [name, value] : config.items())
    if (!index_of(name)) return fmt::format("'{}' is not a parameter of {}", name, source_);
  for (std::size_t i = 0; i < parameters_.size(); ++i) {
    const ParamSpec& p = parameters_[i];
    const auto it = config.find(p.name);
    const bool active = is_active(i, config);
    if (!active) {
      if (it != config.end()) return fmt::format("{} is given but inactive (when: {})", p.name, p.when);
      continue;
    }
    if (it == config.end()) return fmt::format("{} is active but missing", p.name);
    const nlohmann::json& v = *it;
    switch (p.type) {
      case ParamType::kCategorical:
        if (std::find(p.choices.begin(), p.choices.end(), v) == p.choices.end())
          return fmt::format("{} = {} is not one of its values", p.name, v.dump());
        break;
      case ParamType::kInt:
        if (!v.is_number_integer()) return fmt::format("{} = {} is not an integer", p.name, v.dump());
        [[fallthrough]];
      case ParamType::kFloat:
        if (!v.is_number() || !(v.get<double>() >= p.low && v.get<double>() <= p.high))
          return fmt::format("{} = {} is outside [{}, {}]", p.name, v.dump(), p.low, p.high);
        break;
    }
  }
  if (!satisfies(config))
    return config.dump() + (is_listed() ? " is not one of the listed configurations" : " breaks a constraint");
  return {};
}

bool Space::finite() const {
  return is_listed() || std::all_of(parameters_.begin(), parameters_.end(), [](const ParamSpec& p) { return p.type != ParamType::kFloat; });
}

std::vector<Config> Space::enumerate() const {
  if (is_listed()) return listed_;
  if (!finite())
    throw Error(fmt::format("{}: grid search needs every parameter categorical or int (a float parameter has no grid)", source_));
  std::vector<std::vector<nlohmann::json>> values(parameters_.size());
  for (std::size_t i = 0; i < parameters_.size(); ++i) {
    const ParamSpec& p = parameters_[i];
    if (p.type == ParamType::kCategorical) {
      values[i] = p.choices;
    } else {
      if (p.high - p.low >= static_cast<double>(kMaxGrid))
        throw Error(fmt::format("{}: parameters.{} has more than {} values; narrow it", source_, p.name, kMaxGrid));
      for (auto v = static_cast<std::int64_t>(p.low); v <= static_cast<std::int64_t>(p.high); ++v) values[i].push_back(v);
    }
  }
  // Depth first in declaration order: the last parameter varies fastest; inactive ones are skipped.
  std::vector<Config> out;
  std::uint64_t visited = 0;
  Config partial = Config::object();
  const auto visit = [&](const auto& self, std::size_t i) -> void {
    if (i == parameters_.size()) {
      if (++visited > kMaxGrid)
        throw Error(fmt::format("{}: the parameters span more than {} configurations; narrow them", source_, kMaxGrid));
      if (satisfies(partial)) out.push_back(partial);
      return;
    }
    if (!is_active(i, partial)) return self(self, i + 1);
    for (const nlohmann::json& v : values[i]) {
      partial[parameters_[i].name] = v;
      self(self, i + 1);
      partial.erase(parameters_[i].name);
    }
  };
  visit(visit, 0);
  if (out.empty()) throw Error(fmt::format("{}: no combination of the parameters satisfies every constraint", source_));
  return out;
}

Config Space::sample(std::mt19937_64& rng) const {
  if (is_listed()) return listed_[tune::uniform_below(rng, listed_.size())];
  for (int attempt = 0; attempt < kMaxSampleTries; ++attempt) {
    Config config = Config::object();
    for (std::size_t i = 0; i < parameters_.size(); ++i) {
      if (!is_active(i, config)) continue;
      const ParamSpec& p = parameters_[i];
      config[p.name] = p.type == ParamType::kCategorical ? p.choices[tune::uniform_below(rng, p.choices.size())]
                                                         : from_unit(i, unit_draw(rng));
    }
    if (satisfies(config)) return config;
  }
  throw Error(fmt::format("{}: {} random configurations all broke the constraints; are they satisfiable?", source_,
                          kMaxSampleTries));
}

double Space::prior_mass(const Config& config) const {
  if (is_listed()) return 1.0 / static_cast<double>(listed_.size());
  double mass = 1;
  for (std::size_t i = 0; i < parameters_.size(); ++i) {
    const ParamSpec& p = parameters_[i];
    const auto it = config.find(p.name);
    if (it == config.end()) continue;  // inactive
    if (p.type == ParamType::kCategorical) {
      mass /= static_cast<double>(p.choices.size());
    } else {
      const auto [lo, hi] = unit_interval(p);
      const double v = it->get<double>();
      mass *= p.type == ParamType::kInt ? (transform(p, v + 0.5) - transform(p, v - 0.5)) / (hi - lo) : 1;
    }
  }
  return mass;
}

double Space::to_unit(std::size_t i, const nlohmann::json& value) const {
  const ParamSpec& p = parameters_[i];
  if (p.type == ParamType::kCategorical) return static_cast<double>(choice_index(i, value));
  const auto [lo, hi] = unit_interval(p);
  return (transform(p, value.get<double>()) - lo) / (hi - lo);
}

nlohmann::json Space::from_unit(std::size_t i, double u) const {
  const ParamSpec& p = parameters_[i];
  if (p.type == ParamType::kCategorical) {
    const double index = std::clamp(std::round(u), 0.0, static_cast<double>(p.choices.size() - 1));
    return p.choices[static_cast<std::size_t>(index)];
  }
  u = std::clamp(std::isfinite(u) ? u : 0.5, 0.0, 1.0);
  const auto [lo, hi] = unit_interval(p);
  const double x = untransform(p, lo + u * (hi - lo));
  if (p.type == ParamType::kInt) return static_cast<std::int64_t>(std::clamp(std::round(x), p.low, p.high));
  return std::clamp(x, p.low, p.high);
}

std::size_t Space::choice_index(std::size_t i, const nlohmann::json& value) const {
  const ParamSpec& p = parameters_[i];
  const auto it = std::find(p.choices.begin(), p.choices.end(), value);
  if (it == p.choices.end())
    throw Error(fmt::format("{}: parameters.{}: {} is not one of its values", source_, p.name, value.dump()));
  return static_cast<std::size_t>(it - p.choices.begin());
}

nlohmann::ordered_json Space::describe() const {
  nlohmann::ordered_json params = nlohmann::ordered_json::object();
  for (const ParamSpec& p : parameters_) {
    nlohmann::ordered_json d{{"type", to_string(p.type)}};
    if (p.type == ParamType::kCategorical) d["choices"] = p.choices;
    else {
      d["low"] = p.low;
      d["high"] = p.high;
      d["log"] = p.log;
    }
    if (!p.when.empty()) d["when"] = p.when;
    params[p.name] = d;
  }
  nlohmann::ordered_json described{{"parameters", params}, {"constraints", constraints_}};
  if (is_listed()) described["listed"] = listed_;
  return described;
}

}  // namespace paratune::hpo
