// Asynchronous successive halving (ASHA) and asynchronous Hyperband.
//
// ASHA: Li et al. 2020, "A System for Massively Parallel Hyperparameter Tuning", MLSys, Alg. 2.
// Rungs (one "ladder"):
//   r_k = floor(r_0 eta^k) steps, k = 0 .. K, K the largest with r_K < max_resource,
//   plus a final rung at max_resource: a trial that reaches it is complete.
//   r_0 = min_resource, or when that is 0: floor(max_resource / eta^3), at least 1 (three halvings
//   below a full trial, Optuna's "auto" spirit with a fixed depth).
//   Rounding can repeat a value when eta is small (eta 1.5 from 1: 1, 1.5 -> 1, 2.25 -> 2, ...): a
//   repeated value is dropped, so rungs are strictly increasing and the top-1/eta rule compares
//   trials at distinct resources.
// A free slot (get_job in Alg. 2):
//   for k = K, K-1, .., 0: rank the trials that completed rung k (rung >= k, including those promoted
//   beyond it, running or failed after it) by their loss at r_k (value_at; a missing or non-finite
//   value is the worst; ties: lower trial number first); among the top floor(n_k / eta), promote the
//   best one still resting at rung k (state kPruned, rung == k) to rung k + 1.
//   If no rung has one, a new trial starts at r_0.
//
// Hyperband, asynchronous: Li et al. 2018, "Hyperband: A Novel Bandit-Based Approach to
// Hyperparameter Optimization", JMLR 18(185), Alg. 1, run as brackets of ASHA (Li et al. 2020,
// Sec. 3.4). Brackets b = 0 .. s_max; bracket b's rungs are the ASHA rungs from r_b on:
//   bracket b = r_b, r_(b+1), .., r_K, max_resource.
//   s_max = floor(log_eta(max_resource / r_0)): the largest b with r_0 eta^b <= max_resource, as in
//   Li et al. 2020 Sec. 3.4 and Optuna's HyperbandPruner. It gives Hyperband's s_max + 1 brackets;
//   when max_resource / r_0 is a power of eta (Hyperband's own setting) the last bracket is
//   [max_resource] alone, Hyperband's s = 0 bracket of full trials (plain random search, its hedge
//   against a first rung too small to tell good from bad); otherwise every bracket stops early at
//   least once (our brackets grow from r_0 upward, Hyperband's from R downward).
// Each bracket is its own ASHA: trials are ranked and promoted only within their bracket.
// New trials: bracket b's share is proportional to the configurations synchronous Hyperband starts
// in it, Alg. 1 line 3:
//   n_s = ceil((s_max + 1) / (s + 1) * eta^s),  s = number of halvings in the bracket,
// Hyperband's s counts down from the most aggressive bracket, so our bracket b is its s = s_max - b:
//   w_b = ceil((s_max + 1) eta^(s_max - b) / (s_max - b + 1))
// (eta 3, three brackets: w = 9, 5, 3: the most aggressive bracket gets the most trials).
// A new trial goes to the bracket furthest behind its share once this trial is counted:
//   argmax_b  w_b (N + 1) / W - c_b      (N trials assigned so far, c_b of them to b, W = sum w)
// ties to the lower bracket. Every chosen bracket has a positive deficit (the deficits sum to 1),
// so c_b never exceeds ceil(w_b N / W); after each W trials c_b = w_b exactly.
// Promotions: brackets are checked in order b = 0, 1, .., s_max (most aggressive first, the order
// new trials fill them); within one, rungs from the highest down as in ASHA. The brackets are
// independent, so any fixed order is ASHA in each; this one is deterministic.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "paratune/hpo/pruner.h"

namespace paratune::hpo {
namespace {

using Rungs = std::vector<std::int64_t>;  // steps, strictly increasing; back() == max_resource

// pow and divisions can land a few ulps off an integer (81 as 80.99999999999999): the roundings
// forgive that much, and far less than the 0.5 that would round a step count wrongly below 1e11.
constexpr double kRelativeSlack = 1e-12;

std::int64_t floor_steps(double steps) { return static_cast<std::int64_t>(std::floor(steps * (1 + kRelativeSlack))); }
std::int64_t ceil_count(double count) { return static_cast<std::int64_t>(std::ceil(count * (1 - kRelativeSlack))); }

// r_0: min_resource, or 0 -> floor(max_resource / eta^3), at least 1.
std::int64_t first_rung_steps(const PrunerOptions& o) {
  if (o.min_resource > 0) return o.min_resource;
  return std::max<std::int64_t>(1, floor_steps(static_cast<double>(o.max_resource) / std::pow(o.eta, 3)));
}

// The distinct values of floor(r_0 eta^k), k = 0, 1, .., below max_resource; and whether the first
// value not below it is max_resource itself (max_resource / r_0 a power of eta).
struct RungGrid {
  Rungs below_max;
  bool lands_on_max = false;
};

RungGrid rung_grid(const PrunerOptions& o) {
  const double r0 = static_cast<double>(first_rung_steps(o));
  const double max = static_cast<double>(o.max_resource);
  RungGrid grid;
  for (double k = 0;;) {
    const double raw = r0 * std::pow(o.eta, k);
    if (raw >= max + 1) break;  // before the integer conversion: raw can be huge
    const std::int64_t steps = floor_steps(raw);
    if (steps >= o.max_resource) {
      grid.lands_on_max = steps == o.max_resource;
      break;
    }
    if (grid.below_max.empty() || steps > grid.below_max.back()) grid.below_max.push_back(steps);
    // Skip the exponents that round to the same step (eta near 1): the next distinct value needs
    // eta^k >= (steps + 1) / r_0; flooring the bound can only land one short, never past it.
    k = std::max(k + 1, std::floor(std::log((static_cast<double>(steps) + 1) / r0) / std::log(o.eta)));
  }
  return grid;
}

// ASHA's single ladder: every rung below max_resource, then max_resource.
Rungs asha_rungs(const PrunerOptions& o) {
  Rungs rungs = rung_grid(o).below_max;
  rungs.push_back(o.max_resource);
  return rungs;
}

// Hyperband's brackets b = 0 .. s_max (see the top of this file).
std::vector<Rungs> hyperband_brackets(const PrunerOptions& o) {
  const RungGrid grid = rung_grid(o);
  std::vector<Rungs> brackets;
  for (std::size_t b = 0; b < grid.below_max.size(); ++b) {
    Rungs rungs(grid.below_max.begin() + static_cast<std::ptrdiff_t>(b), grid.below_max.end());
    rungs.push_back(o.max_resource);
    brackets.push_back(std::move(rungs));
  }
  if (grid.lands_on_max || brackets.empty()) brackets.push_back({o.max_resource});
  return brackets;
}

// w_b = ceil((s_max + 1) eta^s / (s + 1)) with s = s_max - b (Li et al. 2018, Alg. 1 line 3).
std::vector<std::int64_t> hyperband_weights(std::size_t bracket_count, double eta) {
  const auto s_max = static_cast<double>(bracket_count - 1);
  std::vector<std::int64_t> weights;
  for (std::size_t b = 0; b < bracket_count; ++b) {
    const double s = s_max - static_cast<double>(b);
    weights.push_back(ceil_count((s_max + 1) * std::pow(eta, s) / (s + 1)));
  }
  return weights;
}

// The rung a trial has completed: the controller's `rung`, or what its steps show when they show
// more (a trial that reached max_resource is at the final rung whatever its rung field says).
int completed_rung(const TrialRecord& trial, const Rungs& rungs) {
  const auto passed = std::upper_bound(rungs.begin(), rungs.end(), trial.resource) - rungs.begin() - 1;
  return std::max(trial.rung, static_cast<int>(passed));
}

// The ranking key at a rung: the loss at its resource; missing or non-finite is the worst.
double loss_at(const TrialRecord& trial, std::int64_t resource, Direction direction) {
  const std::optional<double> value = value_at(trial, resource);
  if (!value) return std::numeric_limits<double>::infinity();
  const double loss = as_loss(direction, *value);
  return std::isfinite(loss) ? loss : std::numeric_limits<double>::infinity();
}

class SuccessiveHalvingPruner final : public Pruner {
 public:
  SuccessiveHalvingPruner(std::string name, const PrunerOptions& options, std::vector<Rungs> brackets,
                          std::vector<std::int64_t> weights)
      : name_(std::move(name)),
        options_(options),
        brackets_(std::move(brackets)),
        weights_(std::move(weights)) {}

  [[nodiscard]] std::string name() const override { return name_; }

  Assignment assign_new_trial(const std::vector<TrialRecord>& trials) override {
    const int bracket = furthest_behind_share(trials);
    return {bracket, brackets_[static_cast<std::size_t>(bracket)].front()};
  }

  std::optional<Promotion> promotion(const std::vector<TrialRecord>& trials) override {
    for (std::size_t b = 0; b < brackets_.size(); ++b)
      if (std::optional<Promotion> p = promotion_in(static_cast<int>(b), trials)) return p;
    return std::nullopt;
  }

  [[nodiscard]] int rung_of(std::int64_t resource, int bracket) const override {
    if (bracket < 0 || static_cast<std::size_t>(bracket) >= brackets_.size()) return -1;
    const Rungs& rungs = brackets_[static_cast<std::size_t>(bracket)];
    return static_cast<int>(std::upper_bound(rungs.begin(), rungs.end(), resource) - rungs.begin()) - 1;
  }

  [[nodiscard]] bool judges_rungs() const override { return true; }
  // The trial goes on while it is among the best max(1, floor(n_k / eta)) of the n_k trials of its
  // bracket that completed its latest rung k, itself included (Optuna's _is_trial_promotable_to_next_rung:
  // the first trial at a rung always goes on); ranked as promotable_at ranks them.
  [[nodiscard]] bool keep_running_at_rung(const TrialRecord& trial, const std::vector<TrialRecord>& trials) const override {
    if (trial.bracket < 0 || static_cast<std::size_t>(trial.bracket) >= brackets_.size()) return true;
    const Rungs& rungs = brackets_[static_cast<std::size_t>(trial.bracket)];
    const int k = completed_rung(trial, rungs);
    if (k < 0 || k + 1 >= static_cast<int>(rungs.size())) return true;  // before the first rung, or complete
    const std::int64_t resource = rungs[static_cast<std::size_t>(k)];
    const double own = loss_at(trial, resource, options_.direction);
    std::int64_t reached = 0, ahead = 0;
    for (const TrialRecord& t : trials) {
      if (t.bracket != trial.bracket || completed_rung(t, rungs) < k) continue;
      ++reached;
      const double loss = loss_at(t, resource, options_.direction);
      if (t.number != trial.number && (loss < own || (loss == own && t.number < trial.number))) ++ahead;
    }
    const std::int64_t top = std::max<std::int64_t>(1, floor_steps(static_cast<double>(reached) / options_.eta));
    return ahead < top;
  }

  [[nodiscard]] nlohmann::ordered_json describe() const override {
    nlohmann::ordered_json out;
    out["pruner"] = name_;
    // An integral eta prints as 3, not 3.0.
    if (options_.eta == std::floor(options_.eta) && options_.eta < 1e15) out["eta"] = static_cast<std::int64_t>(options_.eta);
    else out["eta"] = options_.eta;
    out["brackets"] = brackets_;
    if (brackets_.size() > 1) out["weights"] = weights_;
    return out;
  }

 private:
  // argmax_b w_b (N + 1) - c_b W (the deficit times W; ties to the lower b). long double holds
  // these integers exactly far beyond any study's size.
  [[nodiscard]] int furthest_behind_share(const std::vector<TrialRecord>& trials) const {
    std::vector<long double> counts(brackets_.size(), 0);
    long double assigned = 0;
    for (const TrialRecord& t : trials)
      if (t.bracket >= 0 && static_cast<std::size_t>(t.bracket) < brackets_.size()) {
        counts[static_cast<std::size_t>(t.bracket)] += 1;
        assigned += 1;
      }
    long double total_weight = 0;
    for (std::int64_t w : weights_) total_weight += static_cast<long double>(w);
    int best = 0;
    long double best_deficit = -std::numeric_limits<long double>::infinity();
    for (std::size_t b = 0; b < brackets_.size(); ++b) {
      const long double deficit = static_cast<long double>(weights_[b]) * (assigned + 1) - counts[b] * total_weight;
      if (deficit > best_deficit) {
        best_deficit = deficit;
        best = static_cast<int>(b);
      }
    }
    return best;
  }

  std::optional<Promotion> finishing_promotion(const std::vector<TrialRecord>& trials) override {
    std::optional<Promotion> best;
    std::int64_t best_resource = -1;
    double best_loss = 0;
    for (const TrialRecord& t : trials) {
      if (t.state != TrialRecord::State::kPruned || t.bracket < 0 || static_cast<std::size_t>(t.bracket) >= brackets_.size())
        continue;
      const Rungs& rungs = brackets_[static_cast<std::size_t>(t.bracket)];
      const int k = completed_rung(t, rungs);
      if (k < 0 || k + 1 >= static_cast<int>(rungs.size())) continue;
      const std::int64_t resource = rungs[static_cast<std::size_t>(k)];
      const double loss = loss_at(t, resource, options_.direction);
      // Furthest first (the most steps behind it), then the best value there; a tie keeps the earlier.
      if (resource > best_resource || (resource == best_resource && loss < best_loss)) {
        best = Promotion{t.number, rungs[static_cast<std::size_t>(k) + 1], k + 1};
        best_resource = resource;
        best_loss = loss;
      }
    }
    return best;
  }

  // ASHA's get_job within one bracket: highest non-final rung first.
  [[nodiscard]] std::optional<Promotion> promotion_in(int bracket, const std::vector<TrialRecord>& trials) const {
    const Rungs& rungs = brackets_[static_cast<std::size_t>(bracket)];
    for (int k = static_cast<int>(rungs.size()) - 2; k >= 0; --k) {
      const auto next = static_cast<std::size_t>(k) + 1;
      if (const std::optional<int> number = promotable_at(bracket, k, trials))
        return Promotion{*number, rungs[next], k + 1};
    }
    return std::nullopt;
  }

  // The best trial resting at rung k among the top floor(n_k / eta) of those that completed it.
  [[nodiscard]] std::optional<int> promotable_at(int bracket, int k, const std::vector<TrialRecord>& trials) const {
    const Rungs& rungs = brackets_[static_cast<std::size_t>(bracket)];
    const std::int64_t resource = rungs[static_cast<std::size_t>(k)];
    struct Ranked {
      double loss;
      int number;
      bool resting_here;
    };
    std::vector<Ranked> ranked;
    for (const TrialRecord& t : trials) {
      if (t.bracket != bracket) continue;
      const int completed = completed_rung(t, rungs);
      if (completed < k) continue;
      const bool resting_here = t.state == TrialRecord::State::kPruned && completed == k;
      ranked.push_back({loss_at(t, resource, options_.direction), t.number, resting_here});
    }
    std::sort(ranked.begin(), ranked.end(), [](const Ranked& a, const Ranked& b) {
      return a.loss != b.loss ? a.loss < b.loss : a.number < b.number;
    });
    // floor(n_k / eta), Li et al. 2020 Alg. 2 (top_k(rung k, |rung k| / eta)).
    const auto top = static_cast<std::size_t>(
        std::max<std::int64_t>(0, floor_steps(static_cast<double>(ranked.size()) / options_.eta)));
    for (std::size_t i = 0; i < std::min(top, ranked.size()); ++i)
      if (ranked[i].resting_here) return ranked[i].number;
    return std::nullopt;
  }

  std::string name_;
  PrunerOptions options_;
  std::vector<Rungs> brackets_;        // brackets_[b]: bracket b's rungs; ASHA has one
  std::vector<std::int64_t> weights_;  // w_b: bracket b's share of new trials
};

}  // namespace

std::unique_ptr<Pruner> make_asha_pruner(const PrunerOptions& options) {
  return std::make_unique<SuccessiveHalvingPruner>("asha", options, std::vector<Rungs>{asha_rungs(options)},
                                                   std::vector<std::int64_t>{1});
}

std::unique_ptr<Pruner> make_hyperband_pruner(const PrunerOptions& options) {
  std::vector<Rungs> brackets = hyperband_brackets(options);
  std::vector<std::int64_t> weights = hyperband_weights(brackets.size(), options.eta);
  return std::make_unique<SuccessiveHalvingPruner>("hyperband", options, std::move(brackets), std::move(weights));
}

}  // namespace paratune::hpo
