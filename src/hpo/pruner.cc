// The pruner name table, option validation, the factory and the `none` pruner. The algorithms live
// one per file: median_pruner.cc (median, percentile), asha.cc (asha, hyperband), oppa_pruner.cc.
#include "paratune/hpo/pruner.h"

#include <fmt/format.h>

#include <array>
#include <cmath>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "paratune/spec/error.h"
#include "paratune/spec/option_error.h"

namespace paratune::hpo {

namespace {

// The one name table of PrunerKind: parsing, printing and --help all read it.
constexpr std::array<std::pair<PrunerKind, const char*>, 6> kPrunerNames{{{PrunerKind::kNone, "none"},
                                                                          {PrunerKind::kMedian, "median"},
                                                                          {PrunerKind::kPercentile, "percentile"},
                                                                          {PrunerKind::kAsha, "asha"},
                                                                          {PrunerKind::kHyperband, "hyperband"},
                                                                          {PrunerKind::kOppa, "oppa"}}};

std::vector<std::string> pruner_names() {
  std::vector<std::string> names;
  names.reserve(kPrunerNames.size());
  for (const auto& [kind, name] : kPrunerNames) names.emplace_back(name);
  return names;
}

// Every trial runs the full resource; nothing is stopped or promoted.
class NonePruner final : public Pruner {
 public:
  explicit NonePruner(std::int64_t max_resource) : max_resource_(max_resource) {}
  [[nodiscard]] std::string name() const override { return "none"; }
  Assignment assign_new_trial(const std::vector<TrialRecord>& /*trials*/) override { return {0, max_resource_}; }
  [[nodiscard]] nlohmann::ordered_json describe() const override { return {{"pruner", "none"}}; }

 private:
  std::int64_t max_resource_;
};

}  // namespace

const char* to_string(PrunerKind kind) {
  for (const auto& [k, name] : kPrunerNames)
    if (k == kind) return name;
  return "?";
}

PrunerKind parse_pruner(std::string_view name) {
  for (const auto& [kind, n] : kPrunerNames)
    if (name == n) return kind;
  const std::vector<std::string> names = pruner_names();
  throw Error(unknown_name_message("pruner", name, names));
}

// Every rule holds for the defaults except max_resource, which the study sets from its steps.
void validate(const PrunerOptions& o) {
  if (o.max_resource < 1)
    throw OptionError("max_resource", std::to_string(o.max_resource), "must be >= 1 (the steps of a full trial)");
  if (!(o.eta > 1) || !std::isfinite(o.eta))
    throw OptionError("eta", fmt::format("{}", o.eta), "must be > 1 (each rung keeps the best 1/eta of the trials)");
  if (o.min_resource < 0)
    throw OptionError("min_resource", std::to_string(o.min_resource),
                      fmt::format("must be >= 0 (the first rung's steps; 0: {} / eta^3)", option_ref("max_resource")));
  if (o.min_resource > 0 && o.min_resource >= o.max_resource)
    throw OptionError("min_resource", std::to_string(o.min_resource),
                      fmt::format("must be below {} ({}) (the first rung is a partial trial)",
                                  option_ref("max_resource"), o.max_resource));
  if (!(o.percentile > 0 && o.percentile < 100))
    throw OptionError("percentile", fmt::format("{}", o.percentile),
                      "must be in (0, 100) (keep a trial within the best p %)");
  if (o.startup_trials < 0)
    throw OptionError("startup_trials", std::to_string(o.startup_trials),
                      "must be >= 0 (completed trials before any is stopped)");
  if (o.min_steps < 1)
    throw OptionError("min_steps", std::to_string(o.min_steps), "must be >= 1 (steps before a trial may be stopped)");
  if (!(o.z >= 0) || !std::isfinite(o.z)) throw OptionError("z", fmt::format("{}", o.z), "must be >= 0");
  if (o.warmup_steps < 0)
    throw OptionError("warmup_steps", std::to_string(o.warmup_steps), "must be >= 0 (no stop at steps below this)");
}

std::unique_ptr<Pruner> make_pruner(PrunerKind kind, const PrunerOptions& options) {
  validate(options);
  switch (kind) {
    case PrunerKind::kNone: return std::make_unique<NonePruner>(options.max_resource);
    case PrunerKind::kMedian:
    case PrunerKind::kPercentile: return make_median_pruner(options, kind);
    case PrunerKind::kAsha: return make_asha_pruner(options);
    case PrunerKind::kHyperband: return make_hyperband_pruner(options);
    case PrunerKind::kOppa: return make_oppa_pruner(options);
  }
  // Not reachable from any name in the table: a PrunerKind made by a cast is a bug, not bad input.
  throw std::logic_error(fmt::format("make_pruner: PrunerKind {} is not in the name table", static_cast<int>(kind)));
}

}  // namespace paratune::hpo
