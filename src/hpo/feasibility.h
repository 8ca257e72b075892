// The hyperparameter samplers' feasibility model (issue 21 item 17): the probability that a
// configuration runs at all, learned from every finished trial, and the configurations that failed
// in a way that would repeat (trial/failure.h). The TPE and GP samplers weigh their proposals by it
// and never propose such a configuration again.
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
#include "paratune/hpo/trial_record.h"
#include "encoding.h"

namespace paratune::hpo {

class Feasibility {
 public:
  // gp::Classifier (gp/classifier.h) on the encoded configurations of the finished trials: completed
  // and pruned ones ran, failed ones (any kind: out of memory, refused, crashed, timed out) did not;
  // running ones say nothing yet. Without a failure there is no model and probability() is 1
  // everywhere, so a study where nothing fails samples exactly as before. `encoding` must outlive it.
  Feasibility(const std::vector<TrialRecord>& trials, const Encoding& encoding, std::uint64_t seed);

  [[nodiscard]] bool active() const { return model_.has_value(); }
  // P(runs) of a configuration, and of every row of an encoded matrix.
  [[nodiscard]] double probability(const Config& config) const;
  [[nodiscard]] Eigen::VectorXd probabilities(const Eigen::MatrixXd& encoded) const;
  // A trial of exactly this configuration failed deterministically: it is never proposed again.
  [[nodiscard]] bool known_to_fail(const Config& config) const;
  // For model summaries: observations, failures by kind, the classifier's lengthscales; null when
  // inactive.
  [[nodiscard]] nlohmann::ordered_json describe() const;

 private:
  const Encoding& encoding_;
  std::optional<gp::Classifier> model_;
  std::set<std::vector<double>> deterministic_;  // encoded configurations
  std::map<std::string, int> failures_;           // by kind
  std::size_t observations_ = 0;
};

// A random proposal where the configuration probably runs: `draw` is called again (up to
// kFeasibilityRedraws times) while its configuration is more likely to fail than to run
// (trial::kLikelyToRun), so what is kept comes from the draws' distribution restricted to where
// configurations probably run; a configuration known to fail is never kept. When no draw probably
// runs, the one most likely to run is taken (a space where nearly everything fails must still be
// explored), or nullopt when every draw was known to fail. `p_runs` receives the kept one's P(runs).
// Without a failure, the first draw is kept as it is.
inline constexpr int kFeasibilityRedraws = 64;
std::optional<Config> feasible_draw(const Feasibility& feasibility, const std::function<Config()>& draw,
                                    double& p_runs);

// When every draw was known to fail: a configuration of a finite space not known to fail, uniformly
// among them (nullopt when there is none: nothing is left that could run); in an infinite space (or
// one too large to enumerate) a plain draw from the prior.
std::optional<Config> draw_not_known_to_fail(const Space& space, const Feasibility& feasibility, std::mt19937_64& rng);

}  // namespace paratune::hpo
