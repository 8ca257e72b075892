// Every sampler's feasibility model (issue 21 item 17): the probability that a configuration runs
// at all, learned from every finished trial, and the configurations that failed in a way that would
// repeat (trial/failure.h). TPE and GP (hpo) and the model-based searches of parallel configurations
// (tune/model_search.h) weigh their proposals by it; the hpo samplers also never propose a
// configuration known to fail again (the model-based searches never repeat any point).
#pragma once

#include <Eigen/Dense>
#include <cstdint>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "paratune/gp/classifier.h"
#include "paratune/hpo/encoding.h"
#include "paratune/hpo/trial_record.h"

namespace paratune::hpo {

class Feasibility {
 public:
  // A finished trial as the model sees it: its configuration encoded in [0,1]^p, whether it ran,
  // and how it failed when it did not.
  struct Observation {
    Eigen::VectorXd x;
    bool ran = true;
    trial::FailureKind failure = trial::FailureKind::kNone;
  };
  // gp::Classifier (gp/classifier.h) on the observations, one lengthscale per column (named by
  // `column_names` in describe()). Without a failure there is no model and probability() is 1
  // everywhere, so a study where nothing fails samples exactly as without it.
  // `warm_start`: the classifier's hyperparameters to start its fit from (the last model's, when a
  // sampler refits it as trials finish), else the default start.
  Feasibility(const std::vector<Observation>& observations, std::vector<std::string> column_names, std::uint64_t seed,
              const gp::Hyperparameters* warm_start = nullptr);
  // The hpo samplers': the trials' configurations by `encoding` (which must outlive it; one
  // lengthscale per parameter, a categorical's one-hot columns share theirs); completed and pruned
  // ones ran, failed ones (any kind: out of memory, refused, crashed, timed out) did not (a record
  // without its kind counts as crashed); running ones say nothing yet.
  Feasibility(const std::vector<TrialRecord>& trials, const Encoding& encoding, std::uint64_t seed);

  [[nodiscard]] bool active() const { return model_.has_value(); }
  // The fitted classifier's hyperparameters; null when inactive.
  [[nodiscard]] const gp::Hyperparameters* hyperparameters() const {
    return model_ ? &model_->hyperparameters() : nullptr;
  }
  // P(runs) of an encoded configuration (0 when known to fail), and of every row of a matrix.
  [[nodiscard]] double probability(const Eigen::VectorXd& encoded) const;
  [[nodiscard]] Eigen::VectorXd probabilities(const Eigen::MatrixXd& encoded) const;
  // A trial of exactly this configuration failed deterministically: it is never proposed again.
  [[nodiscard]] bool known_to_fail(const Eigen::VectorXd& encoded) const;
  // The same for a configuration, by the encoding given at construction (trials' constructor only).
  [[nodiscard]] double probability(const Config& config) const { return probability(encoding_->encode(config)); }
  [[nodiscard]] bool known_to_fail(const Config& config) const {
    return !deterministic_.empty() && known_to_fail(encoding_->encode(config));
  }
  // For model summaries: observations, failures by kind, the classifier's lengthscales; null when
  // inactive.
  [[nodiscard]] nlohmann::ordered_json describe() const;

 private:
  void fit(const std::vector<Observation>& observations, const std::vector<int>& tied, std::uint64_t seed,
           const gp::Hyperparameters* warm_start);

  const Encoding* encoding_ = nullptr;
  std::vector<std::string> column_names_;  // without an encoding
  std::optional<gp::Classifier> model_;
  std::set<std::vector<double>> deterministic_;  // encoded configurations
  std::map<std::string, int> failures_;           // by kind
  std::size_t observations_ = 0;
};

// A random proposal where the configuration probably runs: `draw` is called again (up to
// kFeasibilityRedraws times) while its proposal is more likely to fail than to run
// (trial::kLikelyToRun), so what is kept comes from the draws' distribution restricted to where
// configurations probably run; one known to fail (P(runs) = 0) is never kept. When no draw probably
// runs, the one most likely to run is taken (a space where nearly everything fails must still be
// explored), or nullopt when every draw was known to fail. `p_runs` receives the kept one's P(runs).
// Without a failure model, the first draw is kept as it is.
inline constexpr int kFeasibilityRedraws = 64;
template <class Draw, class PRuns>
auto likely_draw(Draw&& draw, PRuns&& p_runs_of, double& p_runs) -> std::optional<decltype(draw())> {
  std::optional<decltype(draw())> best;
  double best_p = -1;
  for (int attempt = 0; attempt <= kFeasibilityRedraws; ++attempt) {
    auto proposal = draw();
    const double p = p_runs_of(proposal);
    if (p <= 0) continue;  // known to fail
    if (p >= trial::kLikelyToRun) {
      p_runs = p;
      return proposal;
    }
    if (p > best_p) {
      best_p = p;
      best = std::move(proposal);
    }
  }
  p_runs = best_p;
  return best;
}
// likely_draw over configurations.
std::optional<Config> feasible_draw(const Feasibility& feasibility, const std::function<Config()>& draw,
                                    double& p_runs);

// When every draw was known to fail: a configuration of a finite space not known to fail, uniformly
// among them (nullopt when there is none: nothing is left that could run); in an infinite space (or
// one too large to enumerate) a plain draw from the prior.
std::optional<Config> draw_not_known_to_fail(const Space& space, const Feasibility& feasibility, std::mt19937_64& rng);

}  // namespace paratune::hpo
