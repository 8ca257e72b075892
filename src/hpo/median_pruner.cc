// The median stopping rule and its percentile form.
//
// Golovin et al. 2017, "Google Vizier: A Service for Black-Box Optimization", KDD, Sec. 3.2.2
// (median stopping rule), in the form of Optuna's MedianPruner / PercentilePruner:
//   after a running trial x reported its value at step t (t >= warmup_steps), and once at least
//   startup_trials trials are completed, let V_t = { loss of trial y at step t : y != x, y not
//   failed, y reported at exactly step t }. If V_t is empty, x keeps running; otherwise
//       stop x  <=>  loss_x(t) > P_p(V_t)        (strictly worse: a tie keeps running)
//   with p = 50 for `median` and p = options.percentile for `percentile` (p = 25: only a trial within
//   the best quarter at that step keeps running).
// Deviations from Optuna, on purpose (the module's specification):
//   - V_t holds every other trial that reached step t (running and stopped ones too), not only the
//     completed ones: early in a parallel study few trials are complete, and a trial stopped at a
//     later step still tells how good a value at step t is.
//   - x is judged by its value at t, not by its best value so far.
//   - non-finite values (NaN, +-inf: diverged) count as the worst loss, +inf, instead of being
//     dropped; so a diverged trial is stopped unless the others diverged too.
// Steps are the 0-based steps of TrialRecord.curve.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <vector>

#include "paratune/hpo/pruner.h"

namespace paratune::hpo {

namespace {

constexpr double kWorstLoss = std::numeric_limits<double>::infinity();

// The loss of a reported value, smaller better; a non-finite value is the worst there is.
double loss_of(Direction direction, double value) {
  const double loss = as_loss(direction, value);
  return std::isfinite(loss) ? loss : kWorstLoss;
}

// The value `trial` reported at exactly `step` (the last one, should a resumed run repeat a step).
std::optional<double> value_at_step(const TrialRecord& trial, std::int64_t step) {
  std::optional<double> value;
  for (const IntermediateValue& v : trial.curve)
    if (v.step == step) value = v.value;
  return value;
}

int completed_count(const std::vector<TrialRecord>& trials) {
  return static_cast<int>(std::count_if(trials.begin(), trials.end(), [](const TrialRecord& t) {
    return t.state == TrialRecord::State::kCompleted;
  }));
}

// The p-th percentile (0 < p < 100) of a non-empty sample by linear interpolation between closest
// ranks, numpy's default (method "linear", Hyndman & Fan 1996 definition 7), as Optuna uses it:
//   h = (n - 1) p / 100,  P_p = x_(floor h) + (h - floor h) (x_(floor h + 1) - x_(floor h))
// with x_(0) <= ... <= x_(n-1). An infinite upper neighbour gives +inf (not inf * 0 = NaN).
double percentile_of(std::vector<double> sample, double p) {
  std::sort(sample.begin(), sample.end());
  const double h = static_cast<double>(sample.size() - 1) * p / 100;
  const auto lower = static_cast<std::size_t>(std::floor(h));
  const double fraction = h - static_cast<double>(lower);
  if (fraction == 0 || lower + 1 >= sample.size()) return sample[lower];
  const double below = sample[lower];
  const double above = sample[lower + 1];
  if (std::isinf(above)) return above;
  return below + fraction * (above - below);
}

class MedianPruner final : public Pruner {
 public:
  MedianPruner(const PrunerOptions& options, PrunerKind kind)
      : options_(options), kind_(kind), percentile_(kind == PrunerKind::kMedian ? 50 : options.percentile) {}

  [[nodiscard]] std::string name() const override { return to_string(kind_); }

  // No rungs: every trial is meant to run the full resource; keep_running stops it earlier.
  Assignment assign_new_trial(const std::vector<TrialRecord>& /*trials*/) override {
    return {0, options_.max_resource};
  }

  bool keep_running(const TrialRecord& trial, const std::vector<TrialRecord>& trials) override {
    if (trial.curve.empty()) return true;
    const IntermediateValue& latest = trial.curve.back();
    if (latest.step < options_.warmup_steps) return true;
    if (completed_count(trials) < options_.startup_trials) return true;
    const std::vector<double> others = other_losses_at(latest.step, trial.number, trials);
    if (others.empty()) return true;  // nothing to compare with at this step
    return !(loss_of(options_.direction, latest.value) > percentile_of(others, percentile_));
  }

  // What decides which trials stop: part of a study's identity.
  [[nodiscard]] nlohmann::ordered_json describe() const override {
    return {{"pruner", name()},
            {"percentile", percentile_},
            {"startup_trials", options_.startup_trials},
            {"warmup_steps", options_.warmup_steps}};
  }

 private:
  // V_t: the losses at exactly `step` of the trials other than `self` that did not fail.
  [[nodiscard]] std::vector<double> other_losses_at(std::int64_t step, int self,
                                                    const std::vector<TrialRecord>& trials) const {
    std::vector<double> losses;
    for (const TrialRecord& other : trials) {
      if (other.number == self || other.state == TrialRecord::State::kFailed) continue;
      if (const std::optional<double> value = value_at_step(other, step))
        losses.push_back(loss_of(options_.direction, *value));
    }
    return losses;
  }

  PrunerOptions options_;
  PrunerKind kind_;    // kMedian or kPercentile
  double percentile_;  // p: 50 for `median`
};

}  // namespace

std::unique_ptr<Pruner> make_median_pruner(const PrunerOptions& options, PrunerKind kind) {
  return std::make_unique<MedianPruner>(options, kind);
}

}  // namespace paratune::hpo
