// Model-based searches over a configuration study's space: OPPA (data/papers/README.md#oppa-parallel-config-bayesian-optimization,
// Sec. 4, App. D-G, Algorithm 3) and the baselines it is compared with (App. H.2), each a sampler of
// the one study loop (hpo/sampler.h), one file each (src/tune/model_search.h says which).
//
//   oppa       throughput R(H) = prior_R(H; theta_R) + GP, peak memory M(H) = prior_M(H; theta_M) + GP
//              (Eq. 2-3; priors from tune/surrogate.h: paratune's cost model when a model is given,
//              else OPPA's App. D forms), next point by constrained UCB, early termination (Eq. 5).
//   bo         the same GPs with a constant mean, the same acquisition, no early termination.
//   costmodel  fit the prior's coefficients to the trials so far (least squares on log throughput
//              and log memory), trial its predicted best untried point that fits; repeat.
//   xgboost    as DeepSpeed's autotuner: gradient-boosted trees on the observed throughputs
//              (failed and out-of-memory trials count as 0), trial the best predicted untried point
//              (times P(runs), below: the one respect in which it differs from DeepSpeed's).
//
// Every model-based search starts with `initial_points` designs: the prior's top predictions from
// different (dp, tp, pp, ...) groups (--seed-from-plan, oppa and costmodel with a model), then
// random points weighted so that each combination of the parallel degrees present (dp, tp, pp,
// cp, ep) is equally likely (App. E.1). After `oom_streak` out-of-memory trials in a row the next
// point is again such a random one (App. E.1, case 2).
//
// Constrained UCB (Eq. 4). OPPA takes E[X + beta |X - E X|] with X = r (1 - sigmoid(m)) by Monte
// Carlo; we use the closed form of the same idea (Gelbart et al. 2014, which OPPA cites):
//   cUCB(H) = (mu_R(H) + beta sigma_R(H)) x P(M(H) <= M0),  P = Phi((M0 - mu_M(H)) / sigma_M(H)),
// M0 = the memory limit (--memory-limit, else the GPU's memory when a cluster is given); without
// one every point counts as fitting. beta = 2 (fixed, as GP-UCB practice; OPPA leaves beta_i open).
// It is evaluated on every valid point not yet trialed or running (a seeded sample of 20,000 of
// them when there are more).
//
// Batches (--parallel K): kriging believer — each running trial is added to the GPs as if it had
// measured the posterior mean at its point (no refit), which shrinks the uncertainty around it so
// the next pick goes elsewhere (Ginsbourger et al. 2010).
//
// Failures (issue 21 item 17). A trial that failed — out of memory, refused at start-up, crashed,
// timed out — has no throughput, but it says where configurations do not run. Every search fits the
// feasibility model every sampler uses (hpo/feasibility.h: a GP classifier, probit likelihood,
// Laplace's approximation, on the points' embedding; it ran vs it failed, the failure's kind kept
// for the model summary; a trial over the memory limit ran: the memory model judges it) once any
// trial failed, and then
//   - proposes only points that probably run, P(runs) >= 1/2, while there are any
//     (trial::kLikelyToRun says why a weight alone is not enough), random designs included;
//   - weighs the acquisition by P(runs): cUCB x P(runs) (Gelbart et al. 2014 weigh by each
//     constraint's probability; "it runs" is one more constraint), costmodel's and xgboost's
//     predicted throughput x P(runs).
// With --memory-limit an out-of-memory trial informs both the memory model (by memory's own trend)
// and the classifier. No point is ever proposed twice (finished or running), so a configuration
// whose failure is deterministic (trial/failure.h) never runs again; on resume the store's failed
// trials count as tried. A failure costs the study a trial of --max-trials and its time of
// --budget like any other trial (the summary shows what the failures cost: report's failure_line).
//
// Early termination (oppa; Eq. 5 / Algorithm 3 line 16) is the pruner oppa (hpo/pruner.h), which
// `paratune tune --algo oppa` uses unless the study names another. The returned best is a completed
// trial (all steps, fits: Algorithm 3 line 26), see hpo::best_hpo_trial.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>

#include "paratune/tune/study.h"
#include "paratune/tune/surrogate.h"

namespace paratune::hpo {
class Sampler;
class Space;
}

namespace paratune::tune {

struct BayesOptions {
  Algorithm algorithm = Algorithm::kOppa;  // kOppa, kBo, kCostModel or kXgboost
  int steps = 20;                 // q_max (the study's steps per trial)
  double beta = 2.0;              // UCB exploration weight
  int initial_points = 4;         // designs before the model picks
  bool seed_from_prior = false;   // --seed-from-plan: the first designs are the prior's top predictions
  int oom_streak = 3;             // random exploration after this many OOMs in a row
  double memory_limit_bytes = 0;  // M0; 0: unknown
  std::uint64_t seed = 0;
  int max_candidates = 20000;     // acquisition sample when more points are untried
  int fit_restarts = 2;           // random restarts of each GP fit besides the warm start
};
// Throws OptionError naming the field (steps >= 2, initial_points >= 1, ...).
void validate(const BayesOptions& options);

// The search for options.algorithm (oppa, bo, xgboost, costmodel) as a sampler of the one study loop
// (hpo/study.h run_hpo): the study's configurations are points of `view` (SearchSpace::of(the
// study's space)), which must outlive it; it learns from each finished trial's throughput estimate,
// peak memory and failure (hpo/trial_record.h), once, in the order they come: a trial a pruner
// stopped or rests at an ASHA rung as stopped early, with the throughput of its steps so far, and
// not again if it is promoted later. `prior` is used by kOppa and kCostModel (when absent they use
// OPPA's App. D prior, simple_prior) and ignored by kBo and kXgboost. OPPA's early termination is
// the pruner oppa (hpo/pruner.h). Throws OptionError on bad options, Error for grid or random.
std::unique_ptr<hpo::Sampler> make_model_search(const SearchSpace& view, std::optional<Prior> prior,
                                                const BayesOptions& options);

// The sampler of a configuration study for options.algorithm: grid and random are the one loop's
// own (hpo/sampler.h: a listed space's grid keeps its order, random is a seeded permutation of the
// configurations); oppa, bo, xgboost and costmodel the model-based searches over `view`
// (SearchSpace::of(space), outliving the sampler) with `prior` (make_model_search). `max_trials`:
// the study's --max-trials (0: none), over which a grid is sampled evenly.
std::unique_ptr<hpo::Sampler> make_configuration_sampler(const hpo::Space& space, const SearchSpace& view,
                                                         std::optional<Prior> prior, const BayesOptions& options,
                                                         std::size_t max_trials);

// Gradient-boosted trees (libxgboost): fit on (x, y), predict every row of `query`. 100 rounds of
// depth-6 trees, eta 0.3 (XGBoost's defaults, as DeepSpeed's autotuner uses them), one thread,
// seeded. Throws Error when XGBoost fails.
Eigen::VectorXd xgboost_fit_predict(const Eigen::MatrixXd& x, const Eigen::VectorXd& y, const Eigen::MatrixXd& query,
                                    std::uint64_t seed);

}  // namespace paratune::tune
