// The tree-structured Parzen estimator sampler (TPE) and its internals, exposed for tests.
//
// Variant: multivariate TPE (Falkner et al. 2018, "BOHB"; Optuna's TPESampler with
// multivariate=True, group=True, constant_liar=True), on the model of Bergstra et al. 2011,
// "Algorithms for hyper-parameter optimization", Sec. 4. The defaults are Optuna 3.x's, which
// Watanabe 2023 ("Tree-structured Parzen estimator: understanding its algorithm components")
// examines component by component and finds robust across benchmarks. Multivariate rather than
// univariate because a kernel over the joint vector keeps interactions between parameters (lr and
// batch size) that a product of independent one-dimensional estimators loses (Watanabe 2023).
//
// One proposal:
//   1. Startup: while fewer than `startup_trials` (default 10) trials have finished (any state
//      but running, failed ones included: a failure costs what it took), draw from the prior
//      (Space::sample), where configurations probably run once any failed (step 5).
//   2. Split (split_trials): completed trials ranked by loss (as_loss: smaller is better), then
//      pruned trials ranked by the resource they reached (more first), then by their last value
//      (value_at(trial, trial.resource)), as Optuna ranks pruned trials. The first
//      gamma(n) = min(ceil(0.1 n), 25) of them are "good" (Optuna's default gamma; n = completed +
//      pruned); the rest are "bad", and so are every failed trial (a crash or an OOM is
//      information: steer away from it) and every running one (the constant liar: a pending
//      proposal counts as bad, so parallel proposals spread out; Optuna's constant_liar=True).
//      Optuna itself does not look at failed trials at all (TPESampler._sample fetches COMPLETE
//      and PRUNED trials, RUNNING ones too with constant_liar); its _split_trials puts trials that
//      break constraints_func after the completed and pruned ones, so mostly in the bad group:
//      paratune treats a failure as such an infeasible trial.
//   3. Tiers (conditional parameters): decide first, jointly, the parameters active with nothing
//      decided (no `when`); then, repeatedly, every undecided parameter that is active given the
//      decided ones, jointly, until none is. Each tier is fitted on the history trials in which all
//      of its parameters are active (close to Optuna's group decomposition, which groups
//      parameters that appear together). A result holds every active parameter and no inactive one.
//   4. Per tier: l(x) = Parzen estimator of the good trials, g(x) = of the bad ones (below). Draw
//      24 candidates from l, keep those satisfying the constraints (Space::satisfies on the values
//      decided so far; at most 240 draws), take the one maximising log l(x) - log g(x) (Bergstra et
//      al. 2011, Sec. 4.1: expected improvement is monotone in l(x) / g(x)). No valid candidate: the
//      whole configuration is drawn from the prior instead.
//   5. Feasibility (issue 21 item 17; src/hpo/feasibility.h). Failures in the bad group are not
//      enough: g(x) of an explored region that runs grows with every trial there, so a region
//      where a few trials failed soon scores as well (measured: 9-11 of 30 trials in a refused
//      region, issue 21's case, seeds 1-3). Once a trial failed, a GP classifier on every finished
//      trial gives P(runs) of a configuration (gp/classifier.h). TPE's own way would be a ratio of
//      Parzen estimators of the trials that ran and failed (c-TPE, Watanabe & Hutter 2023), but
//      with categorical values seen once or twice the estimators' prior floor keeps it near 1/2
//      (worked by hand: one failure at a = 4 beside three trials that ran gives P(runs) = 0.45 at
//      a = 4), while the classifier's lengthscales learn from a few failures that one parameter
//      alone decides. A candidate of step 4 that completes the configuration is scored
//      log l - log g + log P(runs), those that probably run (P >= 1/2, trial::kLikelyToRun) first;
//      a whole proposal that probably fails is drawn again (feasible_draw), and when none of TPE's
//      probably runs, a prior draw that does is taken instead. A configuration whose failure is
//      deterministic (trial/failure.h) is never proposed again.
//
// Several objectives (SamplerOptions::directions; multi-objective TPE, Ozaki, Tanigaki, Watanabe &
// Onishi 2020, "Multiobjective tree-structured Parzen estimator for computationally expensive
// optimization problems", GECCO, and 2022, JAIR 73, as Optuna 3.1's TPESampler does for a
// multi-objective study, optuna/samplers/_tpe/sampler.py _split_observation_pairs and
// _calculate_weights_below_for_multi_objective): step 2 ranks the completed trials with a finite
// value of every objective by non-domination rank (hpo/pareto.h); gamma(n) of them are good, whole
// fronts first, and of the front that does not fit whole the subset with the most hypervolume
// (greedy HSSP, pareto.h) against that front's reference point max(1.1 w, 0.9 w), w its worst value
// per objective (EPS = 1e-12 where 0). The good trials' components of l(x) are weighted by their
// hypervolume contributions among the good ones (plus EPS, over the largest; the prior keeps
// weight 1); g(x)'s are equal. Everything else (tiers, candidates, feasibility, randomness) is as
// above. gamma is TPE's min(ceil(0.1 n), 25) (Optuna 3.1's TPESampler on a multi-objective study;
// its deprecated MOTPESampler uses floor(0.1 n) with no cap), and the estimator multivariate (Optuna's
// default is univariate).
//
// The Parzen estimator, in the unit cube (floats and ints via Space::to_unit, log already folded
// in, ints as equal-width cells; categoricals by choice index), one mixture component per
// observation plus one prior component, all of equal weight (prior weight 1.0; Optuna ramps down
// old observations' weights once there are more than 25, a refinement Watanabe 2023 finds of
// small effect and which has no meaning for trials that finish out of order). A component is
// a product over dimensions:
//   numerical:   a Gaussian truncated to [0, 1]; observation components centred at the
//                observation with the multivariate bandwidth (Optuna 3.x, _parzen_estimator.py,
//                Scott's rule scaled to the unit interval)
//                  sigma = 0.2 n^(-1/(d+4)),   n = max(observations, 1), d = the tier's dimensions
//                                              (categorical ones included, as Optuna counts them),
//                clipped to [1 / min(100, n_obs + 2), 1] (Optuna's "magic clip": the lower bound is
//                1 / min(100, 1 + kernels), kernels = observations + the prior component);
//                the prior component centred at 0.5 with sigma 1.
//   categorical: observation components put mass 1 on the observed choice plus
//                prior_weight / (n_obs + 1) on every choice, normalised; the prior component is
//                uniform (Optuna 3.x _calculate_categorical_distributions).
//
// Randomness: one std::mt19937_64 per proposal, seeded with std::seed_seq{seed, number of trials in
// the history, repeat}: both are specified bit for bit by the standard, so the same seed and
// history give the same proposal on every platform (up to the last bits of libm's exp, log and erf),
// and a resumed study goes on as an uninterrupted one would (the draws depend on the history's size,
// not on how many proposals this object made; `repeat` counts proposals made here on a history of
// the same size, so asking twice without recording the first still gives two different draws).
// Gaussian draws are Box-Muller by hand (std::normal_distribution is implementation-defined).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <random>
#include <vector>

#include "paratune/hpo/sampler.h"
#include "paratune/hpo/space.h"
#include "paratune/hpo/trial_record.h"

namespace paratune::hpo::tpe {

// The defaults above (Optuna 3.x TPESampler).
inline constexpr int kStartupTrials = 10;       // n_startup_trials
inline constexpr int kCandidates = 24;          // n_ei_candidates
inline constexpr int kMaxCandidateDraws = 240;  // draws per tier before falling back to the prior
inline constexpr double kPriorWeight = 1.0;     // prior_weight
inline constexpr std::size_t kMaxGood = 25;     // gamma's cap

// The number of good trials among n ranked ones: min(ceil(0.1 n), 25) (Optuna default_gamma).
std::size_t good_count(std::size_t ranked);

// The bandwidth of the observation components of a numerical dimension of the unit interval:
// 0.2 max(n, 1)^(-1/(d+4)) clipped to [1 / min(100, n + 2), 1] (see the header comment).
double bandwidth(std::size_t observations, std::size_t dimensions);

// A uniform double in [0, 1) from the top 53 bits of one draw.
double uniform01(std::mt19937_64& rng);
// A standard normal draw: Box & Muller 1958, z = sqrt(-2 ln u1) cos(2 pi u2), u1 in (0, 1].
double standard_normal(std::mt19937_64& rng);

// One coordinate of the estimator: choices == 0 for a numerical dimension (a unit coordinate in
// [0, 1]), else a categorical one with that many choices (a choice index 0 .. choices - 1, held
// as a double).
struct Dimension {
  std::size_t choices = 0;
};

// A point of the estimator's space: one value per dimension, as Dimension describes.
using Point = std::vector<double>;

// The mixture above, fitted on `observations`. With none it is the prior alone.
class ParzenEstimator {
 public:
  // `observation_weights`: one per observation (empty: 1 each); the prior weighs prior_weight.
  ParzenEstimator(std::vector<Dimension> dimensions, const std::vector<Point>& observations,
                  double prior_weight = kPriorWeight, const std::vector<double>& observation_weights = {});

  // log of the mixture density at x: log sum_k w_k prod_d p_kd(x_d), w_k the normalised weights
  // (equal, 1 / (n + 1), with prior weight 1 and no observation weights).
  [[nodiscard]] double log_pdf(const Point& x) const;
  // A draw: a component with probability w_k, then each dimension from that component.
  [[nodiscard]] Point sample(std::mt19937_64& rng) const;

  [[nodiscard]] std::size_t observations() const { return observations_; }
  [[nodiscard]] const std::vector<Dimension>& dimensions() const { return dimensions_; }
  // The observation components' bandwidth (bandwidth(observations, dimensions)).
  [[nodiscard]] double sigma() const { return sigma_; }

 private:
  // One dimension of one component: a truncated Gaussian (numerical) or a distribution over the
  // choices (categorical).
  struct Kernel {
    double mu = 0.5, sigma = 1.0;
    double log_mass = 0;             // log(Phi((1 - mu) / sigma) - Phi(-mu / sigma)): truncation
    std::vector<double> probabilities;  // categorical
  };
  [[nodiscard]] Kernel numerical_kernel(double mu, double sigma) const;
  [[nodiscard]] Kernel categorical_kernel(std::size_t choices, std::optional<std::size_t> observed) const;
  [[nodiscard]] double log_component(const std::vector<Kernel>& component, const Point& x) const;

  std::vector<Dimension> dimensions_;
  std::size_t observations_ = 0;
  double prior_weight_ = kPriorWeight;
  double sigma_ = 1.0;
  std::vector<std::vector<Kernel>> components_;  // [component][dimension]; the prior last
  std::vector<double> weights_;                  // normalised
};

// The good / bad split of step 2 (indices into the trials).
struct Split {
  std::vector<std::size_t> good;
  // Several objectives: each good trial's weight in l(x), in the order of `good`; empty: equal.
  std::vector<double> good_weights;
  std::vector<std::size_t> bad;   // ranked beyond the good ones, then failed, then running
  std::size_t ranked = 0;         // completed + pruned (with a finite loss)
  std::size_t finished = 0;       // every trial not running (a running promotion counts: it has a curve)
};
// Completed trials without a finite value count as failed. `directions`: a study of several
// objectives (SamplerOptions::directions; the split of "Several objectives" above), else empty.
Split split_trials(const std::vector<TrialRecord>& trials, Direction direction,
                   const std::vector<Direction>& directions = {});

}  // namespace paratune::hpo::tpe

namespace paratune::hpo {
// Declared in sampler.h; here for the record: throws Error when options.startup_trials < -1. The
// sampler keeps a reference to `space`, which must outlive it.
std::unique_ptr<Sampler> make_tpe_sampler(const Space& space, const SamplerOptions& options);
}  // namespace paratune::hpo
