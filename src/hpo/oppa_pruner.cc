// OPPA's early termination (data/papers/README.md#oppa-parallel-config-bayesian-optimization,
// Eq. 5 / Algorithm 3 line 16) as a pruner, usable with every sampler on the throughput objective.
//
// After q >= q_min reported steps, with r_q and se_q the throughput estimate of the steps so far and
// its standard error (App. F: warm-up and outliers dropped, TrialRecord::measured), stop the trial
// when
//   r_q + z se_q < r_best,   z = 1.96,
// r_best the best throughput of a completed trial (one that ran every step). That is Eq. 5 with
// tau_q = -z se_q: the trial goes on unless its 97.5% upper confidence bound is below the best.
// Before any trial completed nothing is stopped; an estimate of fewer than two steps has no spread,
// hence no confidence, and stops nothing either.
#include <fmt/format.h>

#include <memory>
#include <string>

#include "paratune/spec/option_error.h"

#include "paratune/hpo/pruner.h"

namespace paratune::hpo {

bool stop_early(const trial::ThroughputEstimate& so_far, std::int64_t steps_reported, std::optional<double> best_full,
                std::int64_t min_steps, double z) {
  if (!best_full || steps_reported < min_steps || so_far.steps_used < 2) return false;
  return so_far.steps_per_s + z * so_far.standard_error < *best_full;
}

namespace {

class OppaPruner final : public Pruner {
 public:
  explicit OppaPruner(const PrunerOptions& options) : options_(options) {}
  [[nodiscard]] std::string name() const override { return "oppa"; }
  Assignment assign_new_trial(const std::vector<TrialRecord>& /*trials*/) override { return {0, options_.max_resource}; }

  bool keep_running(const TrialRecord& trial, const std::vector<TrialRecord>& trials) override {
    std::optional<double> best_full;
    for (const TrialRecord& t : trials)
      if (t.state == TrialRecord::State::kCompleted && t.value && (!best_full || *t.value > *best_full))
        best_full = t.value;
    return !stop_early(trial.measured, trial.resource, best_full, options_.min_steps, options_.z);
  }

  [[nodiscard]] std::string stopped_status() const override { return "early-stopped"; }
  [[nodiscard]] nlohmann::ordered_json describe() const override {
    return {{"pruner", "oppa"}, {"min_steps", options_.min_steps}, {"z", options_.z}};
  }

 private:
  PrunerOptions options_;
};

}  // namespace

std::unique_ptr<Pruner> make_oppa_pruner(const PrunerOptions& options) {
  if (options.min_steps > options.max_resource)
    throw OptionError("min_steps", std::to_string(options.min_steps),
                      fmt::format("must be >= 1 and <= {} ({})", option_ref("max_resource"), options.max_resource));
  return std::make_unique<OppaPruner>(options);
}

}  // namespace paratune::hpo
