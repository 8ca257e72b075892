// What every model-based search of parallel configurations shares (tune/bayes.h): the study's
// trials taken in as observations of throughput, memory and failure; OPPA App. E.1's initial designs
// and random exploration; the one feasibility model (hpo/feasibility.h); and the prior's value at
// fitted coefficients. Each algorithm is a subclass in a file of its own that picks the next point
// among the untried ones:
//   oppa, bo   gp_ucb_search.cc     constrained UCB on throughput and memory GPs
//   costmodel  cost_model_search.cc the refitted prior's best prediction
//   xgboost    xgboost_search.cc    gradient-boosted trees (DeepSpeed's autotuner)
#pragma once

#include <Eigen/Dense>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "paratune/gp/gaussian_process.h"
#include "paratune/hpo/feasibility.h"
#include "paratune/hpo/sampler.h"
#include "paratune/tune/bayes.h"

namespace paratune::tune {

class ModelSearch : public hpo::Sampler {
 public:
  ModelSearch(const SearchSpace& view, std::optional<Prior> prior, const BayesOptions& options);

  [[nodiscard]] std::string name() const override { return to_string(options_.algorithm); }
  // Takes in the trials finished since the last call (each once: a trial a pruner stopped or rests
  // at an ASHA rung as stopped early, with the throughput of its steps so far, and not again if it
  // is promoted later), then proposes an untried point that is not running: an initial design, a
  // random one after a streak of out-of-memory trials, else the algorithm's pick.
  std::optional<hpo::Config> propose(const std::vector<hpo::TrialRecord>& trials) override;
  [[nodiscard]] nlohmann::ordered_json proposal_notes() const override { return notes_; }
  [[nodiscard]] nlohmann::ordered_json model_summary() const override { return summary_; }

 protected:
  struct Observation {
    Eigen::Index row;       // of the valid points (view.enumerate())
    double value;
    double noise_variance;  // in the observation's own units squared
  };

  // The algorithm's choice among `candidates` (untried, not running; a seeded sample of
  // options.max_candidates of them when there are more); `running`: the rows being trialed now.
  // Writes why, and what it predicted, into `notes`.
  virtual Eigen::Index pick(const std::vector<Eigen::Index>& candidates, const std::vector<Eigen::Index>& running,
                            nlohmann::ordered_json& notes) = 0;

  // E.1's weighted random choice among `candidates`, where configurations probably run.
  Eigen::Index random_among(const std::vector<Eigen::Index>& candidates);
  // The feasibility model over every finished trial (refitted when a trial finished since); none
  // until a trial failed.
  const hpo::Feasibility& feasibility();
  [[nodiscard]] Eigen::VectorXd p_runs(const std::vector<Eigen::Index>& rows);
  // The prior's value at a row for fitted log-coefficients (time: seconds -> throughput; memory
  // capped at the limit when the prior is relative, OPPA Eq. 21).
  [[nodiscard]] double prior_throughput(Eigen::Index row, const std::vector<double>& log_theta) const;
  [[nodiscard]] double prior_memory(Eigen::Index row, const std::vector<double>& log_theta) const;
  // Start and bounds of the prior's log-coefficients; a relative prior is scaled so that its initial
  // coefficients match the median observation; `warm` (when of the right size) is the start.
  [[nodiscard]] gp::MeanFunction prior_mean(const LinearTerms& terms, const std::vector<Observation>& obs, bool time,
                                            double scale, const std::vector<double>& warm) const;
  // {name: exp(log theta)} for the model summary.
  [[nodiscard]] static nlohmann::ordered_json coefficients(const LinearTerms& terms,
                                                           const std::vector<double>& log_theta);
  // The feasibility model's description in the summary, when it is active.
  void describe_feasibility();

  [[nodiscard]] Eigen::MatrixXd rows_of(const std::vector<Eigen::Index>& rows) const;

  const SearchSpace& view_;
  BayesOptions options_;
  std::optional<Prior> prior_;  // oppa and costmodel (their factories give one), none for bo and xgboost
  Eigen::MatrixXd x_all_;  // OPPA App. D.3's embedding of every valid point
  std::mt19937_64 rng_;
  std::vector<Observation> throughput_, memory_;  // measured (memory: of OOMs, 1.05 x the limit)
  std::vector<Eigen::Index> failures_;            // finished without a throughput
  bool changed_ = false;                          // observations added since the models' last fit
  nlohmann::ordered_json summary_ = nlohmann::ordered_json::object();

 private:
  void absorb(const std::vector<hpo::TrialRecord>& trials);
  Eigen::Index initial_design(const std::vector<bool>& busy, int designs, nlohmann::ordered_json& notes);
  [[nodiscard]] std::vector<Eigen::Index> prior_ranking() const;
  void add_prior_prediction(Eigen::Index row, nlohmann::ordered_json& notes) const;
  Eigen::Index weighted_random(const std::vector<bool>& busy);
  Eigen::Index uniform_design(const std::vector<bool>& busy);

  PointIndex index_;
  std::vector<int> group_of_;  // E.1 group of every valid point
  std::vector<std::vector<Eigen::Index>> groups_;
  std::vector<bool> tried_;    // finished (never proposed again)
  std::set<int> seen_;         // trial numbers taken in
  std::vector<hpo::Feasibility::Observation> ran_or_failed_;
  std::optional<hpo::Feasibility> feasibility_;  // fitted on ran_or_failed_
  std::size_t feasibility_observations_ = 0;     // how many it was fitted on
  int oom_run_ = 0;
  std::vector<Eigen::Index> seed_order_;
  std::set<int> seeded_groups_;
  nlohmann::ordered_json notes_;
};

// Each algorithm's search (one file each).
std::unique_ptr<hpo::Sampler> make_gp_ucb_search(const SearchSpace& view, std::optional<Prior> prior,
                                                  const BayesOptions& options);
std::unique_ptr<hpo::Sampler> make_cost_model_search(const SearchSpace& view, Prior prior, const BayesOptions& options);
std::unique_ptr<hpo::Sampler> make_xgboost_search(const SearchSpace& view, const BayesOptions& options);

}  // namespace paratune::tune
