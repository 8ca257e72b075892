// The GP sampler (hpo/sampler.h): Gaussian-process regression on the trials' losses, log expected
// improvement over candidates drawn from the space.
//
// One proposal:
//   1. Encode every configuration into [0,1]^p (encoding.h).
//   2. Observations: completed trials at y = as_loss(direction, value); failed trials at the worst
//      completed loss (a crash or an OOM is information: the search should move away from it);
//      pruned trials are left out (their final value is unknown, and their early value would
//      read as a final one). y is standardized (mean 0, sd 1). The failures stay in although step
//      5 weighs by P(runs): without them the model is optimistic about a region it never measured,
//      and its log EI there outgrows log P(runs) (about -log(n + 1) where n trials failed) as the
//      region that runs is exploited (measured on issue 21 item 17's case, seeds 1-3: 20, 18 and 21
//      of 30 trials in the failing region, against 10, 8 and 9 before P(runs) and 4, 2 and 2 now).
//   3. Fit gp:: (Matérn 5/2 ARD, fitted constant mean, fitted noise) by maximum marginal likelihood
//      with a few random restarts.
//   4. Running trials (pending proposals of a parallel search) join as observations at the first
//      fit's posterior mean ("Kriging believer", Ginsbourger, Le Riche & Carraro 2010, "Kriging Is
//      Well-Suited to Parallelize Optimization", Sec. 3.2): the posterior variance collapses there,
//      so the next proposal goes elsewhere; the hyperparameters are not refitted.
//   5. Maximize log EI + log P(runs) (Ament et al. 2023, below, for log EI; EI x P(feasible) is
//      Gelbart, Snoek & Adams 2014's constrained EI) over 1,000 prior draws and local perturbations
//      of the best few observed configurations; configurations already tried are excluded.
// Several objectives (SamplerOptions::directions): one such GP per objective (independent), each on
// its own standardized losses with the failures at its worst, and in step 5 the expected
// hypervolume improvement over the front of the completed trials (and the running ones at their
// believed values) instead of EI: expected_hypervolume.h, estimated on kEhviDraws common normal
// draws. The reference point is each objective's worst completed loss plus a tenth of its range.
// The candidates' local perturbations centre on front members. Where no candidate's estimate is
// above 0 (a front the model is sure of), the best single-objective log EI of any objective
// decides.
// P(runs) is the feasibility model (feasibility.h: a GP classifier on every finished trial, failed
// ones of any kind against those that ran); a configuration that failed deterministically
// (trial/failure.h) is never proposed again. Before `startup_trials` trials have finished (or while
// fewer than two have completed) it draws from the prior, weighed by P(runs) once a trial failed
// (feasible_draw). A failed trial counts as a finished startup trial: it cost what it took.
//
// Deterministic: each proposal's random numbers come from a generator seeded with (seed, number of
// trials), so a proposal is a function of the seed and the trials alone (a resumed study proposes
// what an uninterrupted one would). Normal draws are Box-Muller on the generator's raw bits rather
// than std::normal_distribution, whose algorithm differs between standard libraries.
#include <fmt/format.h>

#include <Eigen/Dense>
#include <algorithm>
#include <cassert>
#include <cmath>
#include <limits>
#include <numbers>
#include <random>
#include <set>

#include "paratune/gp/gaussian_process.h"
#include "paratune/hpo/sampler.h"
#include "paratune/hpo/tpe.h"  // uniform01, standard_normal
#include "paratune/spec/error.h"
#include "paratune/hpo/encoding.h"
#include "paratune/hpo/feasibility.h"
#include "paratune/hpo/pareto.h"
#include "expected_hypervolume.h"

namespace paratune::hpo {

// Exposed (not in a header) for tests/hpo/gp_sampler_test.cc.
namespace gp_detail {

double normal_pdf(double z) { return std::exp(-0.5 * z * z) / std::sqrt(2 * std::numbers::pi); }
double normal_cdf(double z) { return 0.5 * std::erfc(-z / std::numbers::sqrt2); }

// log(1 - exp(a)) for a < 0, accurate at both ends (Mächler 2012, "Accurately Computing
// log(1 - exp(-|a|))", Eq. 7): -expm1 near 0, log1p(-exp) far from it.
double log1mexp(double a) {
  return a > -std::numbers::ln2 ? std::log(-std::expm1(a)) : std::log1p(-std::exp(a));
}

// log h(z), h(z) = phi(z) + z Phi(z), so that EI = sigma h((best - mean) / sigma) when minimizing.
// Ament, Daulton, Eriksson, Balandat & Bakshy 2023, "Unexpected Improvements to Expected
// Improvement for Bayesian Optimization" (NeurIPS), Eq. 9:
//   log h(z) = log(phi(z) + z Phi(z))                                    z > -1
//            = -z^2/2 - c1 + log1mexp(log(erfcx(-z/sqrt2) |z|) + c2)      -1/sqrt(eps) < z <= -1
//            = -z^2/2 - c1 - 2 log|z|                                     z <= -1/sqrt(eps)
//   c1 = log(2 pi)/2, c2 = log(pi/2)/2, erfcx(x) = exp(x^2) erfc(x).
// (For z < 0: h = phi(z) (1 - t R(t)), t = -z, with R(t) = Phi(-t)/phi(t) = sqrt(pi/2) erfcx(t/sqrt2)
// the Mills ratio; log1mexp takes log(1 - t R).)
// Here the middle branch is split at t = 4: below, their form with erfcx = exp(x^2) erfc(x) (x^2 < 8,
// so neither factor loses accuracy); from t = 4 on, 1 - t R(t) without its cancellation, from
// Laplace's continued fraction of the Mills ratio (Abramowitz & Stegun 26.2.14)
//   R(t) = 1/(t + 1/(t + 2/(t + 3/(t + ...)))),  so  1 - t R(t) = 1/(1 + t D(t)),
//   D(t) = t + 2/(t + 3/(t + 4/(t + ...))),
// which converges to full precision within 40 terms for t >= 4 and covers their third branch too
// (t D(t) -> t^2, so log h -> -z^2/2 - c1 - 2 log|z|) without its switch at 1/sqrt(eps).
double log_h(double z) {
  const double c1 = 0.5 * std::log(2 * std::numbers::pi);
  const double c2 = 0.5 * std::log(std::numbers::pi / 2);
  if (z > -1) return std::log(normal_pdf(z) + z * normal_cdf(z));
  const double t = -z;
  if (t < 4) {
    const double x = t / std::numbers::sqrt2;
    const double erfcx = std::exp(x * x) * std::erfc(x);
    return -0.5 * z * z - c1 + log1mexp(std::log(erfcx * t) + c2);
  }
  double d = t;  // the fraction's tail, truncated after 60 terms
  for (int k = 60; k >= 2; --k) d = t + k / d;
  return -0.5 * z * z - c1 - std::log1p(t * d);
}

// log EI(mean, sd; best) = log sd + log h((best - mean) / sd) for a loss to minimize.
double log_expected_improvement(double mean, double sd, double best) {
  return std::log(sd) + log_h((best - mean) / sd);
}

}  // namespace gp_detail

namespace {

// Acquisition candidates: prior draws, plus Gaussian perturbations (sd in unit coordinates) of the
// best completed configurations, where EI's maximum usually lies once the model knows something.
constexpr int kPriorCandidates = 1000;
constexpr int kLocalCenters = 5;
constexpr int kPerturbationsPerCenter = 100;
constexpr double kPerturbationSd = 0.05;
constexpr double kCategoricalFlip = 0.1;  // chance that a perturbation changes a categorical value
// Redraws when a prior draw repeats a configuration already tried.
constexpr int kPriorRedraws = 100;
// Several objectives: normal draws of the Monte Carlo EHVI (2 objectives; 3 and more: fewer, since
// each hypervolume costs more there), and how many candidates get it: those whose optimistic point,
// mean - sd, improves the hypervolume most (one hypervolume each), so that 1,500 candidates cost
// kEhviCandidates x draws hypervolumes rather than 1,500 x draws.
constexpr int kEhviDraws2 = 128;
constexpr int kEhviDrawsMany = 32;
constexpr std::size_t kEhviCandidates = 128;

// Marginal-likelihood fit: random restarts besides the fixed start, and L-BFGS evaluations per start
// (100 observations in 7 dimensions: ~230 likelihood evaluations, ~0.2 s of CPU in a Release build,
// nearly all of it gp::fit; 200 observations: ~0.7 s).
constexpr int kFitRestarts = 3;
constexpr int kFitEvaluations = 150;
// Posterior variance floor (standardized units) so that log EI stays finite at observed points.
constexpr double kVarianceFloor = 1e-12;


std::size_t uniform_index(std::mt19937_64& rng, std::size_t n) { return static_cast<std::size_t>(rng() % n); }

// A generator for one proposal: seeded from the sampler's seed and how many trials exist.
std::mt19937_64 proposal_rng(std::uint64_t seed, std::uint64_t trials) {
  std::seed_seq seq{static_cast<std::uint32_t>(seed), static_cast<std::uint32_t>(seed >> 32),
                    static_cast<std::uint32_t>(trials), static_cast<std::uint32_t>(trials >> 32)};
  return std::mt19937_64(seq);
}

using EncodedKey = std::vector<double>;  // an encoded configuration, for exact-duplicate checks
EncodedKey encoded_key(const Eigen::VectorXd& x) { return {x.data(), x.data() + x.size()}; }

// The study's trials sorted into what the model uses.
struct History {
  std::vector<Eigen::VectorXd> completed_x, failed_x, pending_x;
  std::vector<pareto::Losses> completed_losses;  // per completed trial, a loss per objective
  std::vector<const Config*> completed_configs;
  std::set<EncodedKey> tried;  // every configuration of every trial, pruned ones included
  int finished = 0;     // trials not running
};

// A completed trial's losses, one per objective; nullopt without a finite value for each (a NaN
// loss, a diverged run, an objective not reported): no objective, like a failure.
std::optional<pareto::Losses> losses_of(const TrialRecord& t, const SamplerOptions& options) {
  if (options.directions.empty()) {
    if (!t.value || !std::isfinite(*t.value)) return std::nullopt;
    return pareto::Losses{as_loss(options.direction, *t.value)};
  }
  if (t.values.size() != options.directions.size()) return std::nullopt;
  for (const double v : t.values)
    if (!std::isfinite(v)) return std::nullopt;
  return pareto::losses_of(t.values, options.directions);
}

History sort_trials(const std::vector<TrialRecord>& trials, const Encoding& encoding, const SamplerOptions& options) {
  History h;
  for (const TrialRecord& t : trials) {
    Eigen::VectorXd x;
    try {
      x = encoding.encode(t.config);
    } catch (const Error& e) {
      throw e.with_context(fmt::format("gp sampler: trial {}", t.number));
    }
    h.tried.insert(encoded_key(x));
    if (t.state != TrialRecord::State::kRunning) ++h.finished;
    switch (t.state) {
      case TrialRecord::State::kRunning:
        h.pending_x.push_back(std::move(x));
        break;
      case TrialRecord::State::kCompleted: {
        std::optional<pareto::Losses> losses = losses_of(t, options);
        if (!losses) {
          h.failed_x.push_back(std::move(x));
          break;
        }
        h.completed_x.push_back(std::move(x));
        h.completed_losses.push_back(std::move(*losses));
        h.completed_configs.push_back(&t.config);
        break;
      }
      case TrialRecord::State::kFailed:
        h.failed_x.push_back(std::move(x));
        break;
      case TrialRecord::State::kPruned:  // final value unknown: not an observation
        break;
    }
  }
  return h;
}

Eigen::MatrixXd stack_rows(const std::vector<Eigen::VectorXd>& rows, int columns) {
  Eigen::MatrixXd m(static_cast<Eigen::Index>(rows.size()), columns);
  for (std::size_t i = 0; i < rows.size(); ++i) m.row(static_cast<Eigen::Index>(i)) = rows[i].transpose();
  return m;
}

// The observations of one objective in standardized units: completed losses, then failures at the
// worst one.
struct Observations {
  Eigen::MatrixXd x;
  Eigen::VectorXd y;          // (loss - loss_mean) / loss_sd
  double loss_mean = 0, loss_sd = 1;
};

Observations observations(const History& h, int dimensions, std::size_t objective) {
  std::vector<Eigen::VectorXd> rows = h.completed_x;
  rows.insert(rows.end(), h.failed_x.begin(), h.failed_x.end());
  double worst = -HUGE_VAL;
  for (const pareto::Losses& l : h.completed_losses) worst = std::max(worst, l[objective]);
  Eigen::VectorXd loss(static_cast<Eigen::Index>(rows.size()));
  for (std::size_t i = 0; i < rows.size(); ++i)
    loss(static_cast<Eigen::Index>(i)) = i < h.completed_losses.size() ? h.completed_losses[i][objective] : worst;
  Observations o;
  o.x = stack_rows(rows, dimensions);
  o.loss_mean = loss.mean();
  const double sd = std::sqrt((loss.array() - o.loss_mean).square().mean());
  o.loss_sd = sd > 0 ? sd : 1;  // all equal: nothing to scale
  o.y = (loss.array() - o.loss_mean) / o.loss_sd;
  return o;
}

// A constant prior mean c, fitted with the kernel (as tune/bayes.cc's constant_mean), bounded by the
// data's range widened by half a standard deviation.
gp::MeanFunction constant_mean(const Eigen::VectorXd& y) {
  gp::MeanFunction mean;
  mean.initial = {0};  // y is standardized: its mean
  mean.lower = {y.minCoeff() - 0.5};
  mean.upper = {y.maxCoeff() + 0.5};
  const auto n = y.size();
  mean.at_observations = [n](const std::vector<double>& c) { return Eigen::VectorXd::Constant(n, c[0]); };
  return mean;
}

struct Model {
  gp::FitResult fit;
  double constant = 0;                  // the fitted prior mean (standardized)
  std::optional<gp::Posterior> posterior;  // of y - constant, running trials included as believed
  double incumbent = 0;                 // the best standardized loss, believed values included
  Eigen::VectorXd believed;             // the running trials' believed standardized losses
};

Model fit_model(const Observations& o, const History& h, int dimensions, std::uint64_t seed) {
  gp::Hyperparameters start;
  start.lengthscales = Eigen::VectorXd::Constant(dimensions, 0.5);
  start.signal_variance = 1;  // y is standardized
  start.noise_variance = 1e-3;
  gp::FitOptions fo;
  fo.restarts = kFitRestarts;
  fo.seed = seed ^ (0x9e3779b97f4a7c15ULL * static_cast<std::uint64_t>(o.y.size()));
  fo.max_evaluations = kFitEvaluations;
  const gp::MeanFunction mean = constant_mean(o.y);
  const Eigen::VectorXd no_noise = Eigen::VectorXd::Zero(o.y.size());  // the fitted floor is the noise
  Model m;
  m.fit = gp::fit(o.x, o.y, no_noise, mean, start, fo);
  m.constant = m.fit.mean_parameters[0];
  const Eigen::VectorXd residual = o.y.array() - m.constant;
  gp::Posterior first(m.fit.hyperparameters, o.x, residual, no_noise);
  m.incumbent = o.y.minCoeff();
  if (h.pending_x.empty()) {
    m.posterior.emplace(std::move(first));
    return m;
  }
  // Kriging believer: each running trial observed at the first posterior's mean. The incumbent
  // counts the believed values too; else a pending point predicted better than the best would keep
  // its EI of (best - mean) > 0 and be proposed again.
  const Eigen::MatrixXd pending = stack_rows(h.pending_x, dimensions);
  Eigen::VectorXd believed, variance;
  first.predict(pending, believed, variance);
  m.incumbent = std::min(m.incumbent, m.constant + believed.minCoeff());
  m.believed = believed.array() + m.constant;
  Eigen::MatrixXd x(o.x.rows() + pending.rows(), dimensions);
  x << o.x, pending;
  Eigen::VectorXd y(residual.size() + believed.size());
  y << residual, believed;
  m.posterior.emplace(m.fit.hyperparameters, x, y, Eigen::VectorXd::Zero(y.size()));
  return m;
}

// The elements of `items` at `indices`, in that order.
template <class T>
std::vector<T> at_indices(const std::vector<T>& items, const std::vector<std::size_t>& indices) {
  std::vector<T> out;
  out.reserve(indices.size());
  for (const std::size_t i : indices) out.push_back(items[i]);
  return out;
}

class GpSampler : public Sampler {
 public:
  GpSampler(const Space& space, const SamplerOptions& options)
      : space_(space), options_(options), encoding_(space),
        startup_trials_(options.startup_trials >= 0 ? options.startup_trials
                                                    : std::max(5, 2 * static_cast<int>(space.size()))) {}

  [[nodiscard]] std::string name() const override { return "gp"; }
  [[nodiscard]] nlohmann::ordered_json proposal_notes() const override { return notes_; }
  [[nodiscard]] nlohmann::ordered_json model_summary() const override { return summary_; }

  std::optional<Config> propose(const std::vector<TrialRecord>& trials) override {
    std::mt19937_64 rng = proposal_rng(options_.seed, trials.size());
    const History h = sort_trials(trials, encoding_, options_);
    const Feasibility feasibility(trials, encoding_, options_.seed);
    if (h.finished < startup_trials_)
      return from_prior(rng, h, feasibility, fmt::format("{} of {} startup trials finished", h.finished, startup_trials_));
    if (h.completed_losses.size() < 2)
      return from_prior(rng, h, feasibility,
                        fmt::format("{} trials completed with a value; the model needs 2", h.completed_losses.size()));
    if (!options_.directions.empty()) return from_models(rng, h, feasibility);
    return from_model(rng, h, feasibility);
  }

 private:
  // A prior draw not tried yet (kPriorRedraws), weighed by P(runs).
  std::optional<Config> from_prior(std::mt19937_64& rng, const History& h, const Feasibility& feasibility,
                                   const std::string& reason) {
    const auto draw = [&] {
      Config config = space_.sample(rng);
      for (int redraw = 0; redraw < kPriorRedraws && h.tried.contains(encoded_key(encoding_.encode(config))); ++redraw)
        config = space_.sample(rng);
      return config;
    };
    double p_runs = 1;
    std::optional<Config> config = feasible_draw(feasibility, draw, p_runs);
    if (!config) config = draw_not_known_to_fail(space_, feasibility, rng);
    notes_ = {{"sampler", "gp"}, {"startup", true}, {"reason", reason}};
    if (feasibility.active()) {
      notes_["p_runs"] = p_runs;
      summary_["feasibility"] = feasibility.describe();
    }
    return config;
  }

  std::optional<Config> from_model(std::mt19937_64& rng, const History& h, const Feasibility& feasibility) {
    const Observations o = observations(h, encoding_.dimensions(), 0);
    const Model m = fit_model(o, h, encoding_.dimensions(), options_.seed);
    std::vector<std::size_t> order(h.completed_losses.size());
    for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
    const std::size_t centers = std::min<std::size_t>(kLocalCenters, order.size());
    std::partial_sort(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(centers), order.end(),
                      [&](std::size_t a, std::size_t b) { return h.completed_losses[a][0] < h.completed_losses[b][0]; });
    order.resize(centers);
    const std::vector<Config> candidates = make_candidates(rng, h, order);
    Eigen::MatrixXd x(static_cast<Eigen::Index>(candidates.size()), encoding_.dimensions());
    for (std::size_t i = 0; i < candidates.size(); ++i) x.row(static_cast<Eigen::Index>(i)) = encoding_.encode(candidates[i]).transpose();
    Eigen::VectorXd mean, variance;
    m.posterior->predict(x, mean, variance);
    const Eigen::VectorXd p_runs = feasibility.probabilities(x);

    // The best log EI + log P(runs), preferring candidates that probably run (trial::kLikelyToRun)
    // and then new configurations (a repeat only when every candidate is one: a finite space nearly
    // exhausted); never one known to fail (P(runs) = 0).
    Eigen::Index best = -1;
    std::tuple<bool, bool, double> best_key{false, false, -HUGE_VAL};
    Eigen::VectorXd log_ei = Eigen::VectorXd::Constant(x.rows(), -HUGE_VAL);
    for (Eigen::Index i = 0; i < x.rows(); ++i) {
      if (!(p_runs(i) > 0)) continue;
      log_ei(i) = gp_detail::log_expected_improvement(m.constant + mean(i), std::sqrt(std::max(variance(i), kVarianceFloor)),
                                                      m.incumbent);
      const std::tuple<bool, bool, double> key{p_runs(i) >= trial::kLikelyToRun,
                                               !h.tried.contains(encoded_key(x.row(i).transpose())),
                                               log_ei(i) + std::log(p_runs(i))};
      if (best < 0 || key > best_key) {
        best = i;
        best_key = key;
      }
    }
    if (best < 0) return from_prior(rng, h, feasibility, "every candidate is known to fail");
    record(o, m, h, mean(best), variance(best), log_ei(best), p_runs(best), candidates.size(), feasibility);
    return candidates[static_cast<std::size_t>(best)];
  }

  // Several objectives: a GP per objective, the candidate with the best log EHVI + log P(runs)
  // (the order of preferences as from_model's).
  std::optional<Config> from_models(std::mt19937_64& rng, const History& h, const Feasibility& feasibility) {
    const std::size_t objectives = options_.directions.size();
    const int dimensions = encoding_.dimensions();
    std::vector<Observations> obs;
    std::vector<Model> models;
    for (std::size_t j = 0; j < objectives; ++j) {
      obs.push_back(observations(h, dimensions, j));
      models.push_back(fit_model(obs[j], h, dimensions, options_.seed + j));
    }
    // The front in standardized losses: the completed trials (obs[j].y starts with them) and the
    // running ones at their believed values; the reference a tenth of each range beyond the worst.
    std::vector<pareto::Losses> points(h.completed_losses.size() + h.pending_x.size(), pareto::Losses(objectives));
    pareto::Losses reference(objectives);
    for (std::size_t j = 0; j < objectives; ++j) {
      const auto completed = static_cast<Eigen::Index>(h.completed_losses.size());
      const Eigen::VectorXd y = obs[j].y.head(completed);
      for (Eigen::Index i = 0; i < completed; ++i) points[static_cast<std::size_t>(i)][j] = y(i);
      for (Eigen::Index i = 0; i < models[j].believed.size(); ++i)
        points[static_cast<std::size_t>(completed + i)][j] = models[j].believed(i);
      const double range = y.maxCoeff() - y.minCoeff();
      reference[j] = y.maxCoeff() + 0.1 * (range > 0 ? range : 1.0);
    }
    const std::vector<pareto::Losses> front = at_indices(points, pareto::pareto_front(points));
    const double front_hv = pareto::hypervolume(front, reference);

    // Local search around completed front members (at most kLocalCenters, the most hypervolume).
    std::vector<pareto::Losses> completed_points(points.begin(), points.begin() + static_cast<std::ptrdiff_t>(h.completed_losses.size()));
    const std::vector<std::size_t> completed_front = pareto::pareto_front(completed_points);
    const std::vector<std::size_t> centers = at_indices(
        completed_front, pareto::greedy_hypervolume_subset(at_indices(completed_points, completed_front), kLocalCenters, reference));
    const std::vector<Config> candidates = make_candidates(rng, h, centers);

    const auto n = static_cast<Eigen::Index>(candidates.size());
    Eigen::MatrixXd x(n, dimensions);
    for (Eigen::Index i = 0; i < n; ++i) x.row(i) = encoding_.encode(candidates[static_cast<std::size_t>(i)]).transpose();
    Eigen::MatrixXd mean(n, static_cast<Eigen::Index>(objectives)), sd(n, static_cast<Eigen::Index>(objectives));
    for (std::size_t j = 0; j < objectives; ++j) {
      Eigen::VectorXd m, v;
      models[j].posterior->predict(x, m, v);
      mean.col(static_cast<Eigen::Index>(j)) = m.array() + models[j].constant;
      sd.col(static_cast<Eigen::Index>(j)) = v.array().max(kVarianceFloor).sqrt();
    }
    const Eigen::VectorXd p_runs = feasibility.probabilities(x);
    const auto values_of = [&](const Eigen::MatrixXd& m, Eigen::Index i) {
      std::vector<double> out(objectives);
      for (std::size_t j = 0; j < objectives; ++j) out[j] = m(i, static_cast<Eigen::Index>(j));
      return out;
    };

    // The screen: the hypervolume improvement of the optimistic point mean - sd.
    std::vector<std::pair<double, Eigen::Index>> screened;
    for (Eigen::Index i = 0; i < n; ++i) {
      if (!(p_runs(i) > 0)) continue;
      pareto::Losses optimistic = values_of(mean, i);
      for (std::size_t j = 0; j < objectives; ++j) optimistic[j] -= sd(i, static_cast<Eigen::Index>(j));
      screened.emplace_back(gp_detail::hypervolume_improvement(front, reference, front_hv, optimistic), i);
    }
    if (screened.empty()) return from_prior(rng, h, feasibility, "every candidate is known to fail");
    const std::size_t kept = std::min(kEhviCandidates, screened.size());
    std::partial_sort(screened.begin(), screened.begin() + static_cast<std::ptrdiff_t>(kept), screened.end(),
                      [](const auto& a, const auto& b) { return a.first > b.first || (a.first == b.first && a.second < b.second); });
    screened.resize(kept);

    std::vector<pareto::Losses> draws(objectives == 2 ? kEhviDraws2 : kEhviDrawsMany, pareto::Losses(objectives));
    for (pareto::Losses& z : draws)
      for (double& v : z) v = tpe::standard_normal(rng);
    // Where every estimate is 0: the best log EI of any one objective against its best completed loss.
    const auto best_single_log_ei = [&](Eigen::Index i) {
      double best = -HUGE_VAL;
      for (std::size_t j = 0; j < objectives; ++j)
        best = std::max(best, gp_detail::log_expected_improvement(mean(i, static_cast<Eigen::Index>(j)),
                                                                  sd(i, static_cast<Eigen::Index>(j)),
                                                                  obs[j].y.head(static_cast<Eigen::Index>(h.completed_losses.size())).minCoeff()));
      return best;
    };
    std::vector<double> ehvi(kept);
    bool any_positive = false;
    for (std::size_t c = 0; c < kept; ++c) {
      const Eigen::Index i = screened[c].second;
      const std::vector<double> m = values_of(mean, i), s = values_of(sd, i);
      ehvi[c] = gp_detail::expected_hypervolume_improvement(front, reference, front_hv, m, s, draws);
      any_positive = any_positive || ehvi[c] > 0;
    }
    std::size_t best = 0;
    std::tuple<bool, bool, double> best_key{false, false, -HUGE_VAL};
    for (std::size_t c = 0; c < kept; ++c) {
      const Eigen::Index i = screened[c].second;
      const double score = any_positive ? std::log(ehvi[c]) : best_single_log_ei(i);
      const std::tuple<bool, bool, double> key{p_runs(i) >= trial::kLikelyToRun,
                                               !h.tried.contains(encoded_key(x.row(i).transpose())),
                                               score + std::log(p_runs(i))};
      if (c == 0 || key > best_key) {
        best = c;
        best_key = key;
      }
    }
    const Eigen::Index chosen = screened[best].second;
    record_many(obs, models, h, values_of(mean, chosen), values_of(sd, chosen), ehvi[best], any_positive,
                p_runs(chosen), candidates.size(), feasibility);
    return candidates[static_cast<std::size_t>(chosen)];
  }

  // Prior draws (they respect conditions and constraints) and perturbations of the completed
  // configurations `centers` (indices into h.completed_configs) that the space accepts.
  std::vector<Config> make_candidates(std::mt19937_64& rng, const History& h, const std::vector<std::size_t>& centers) const {
    std::vector<Config> out;
    out.reserve(kPriorCandidates + centers.size() * kPerturbationsPerCenter);
    for (int i = 0; i < kPriorCandidates; ++i) out.push_back(space_.sample(rng));
    for (const std::size_t center : centers)
      for (int j = 0; j < kPerturbationsPerCenter; ++j) {
        Config candidate = perturb(*h.completed_configs[center], rng);
        if (space_.check(candidate).empty()) out.push_back(std::move(candidate));
      }
    return out;
  }

  // A neighbour of `center`, built in declaration order so conditions are decided as in the space:
  // float/int values move by N(0, kPerturbationSd^2) in unit coordinates (from_unit clamps and
  // rounds), categorical ones change with probability kCategoricalFlip, and a parameter that
  // becomes active (its parent changed) is drawn from its prior.
  Config perturb(const Config& center, std::mt19937_64& rng) const {
    Config out = Config::object();
    const std::vector<ParamSpec>& params = space_.parameters();
    for (std::size_t i = 0; i < params.size(); ++i) {
      if (!space_.is_active(i, out)) continue;
      const ParamSpec& p = params[i];
      const auto it = center.find(p.name);
      if (p.type == ParamType::kCategorical) {
        const std::size_t n = p.choices.size();
        std::size_t k = it != center.end() ? space_.choice_index(i, *it) : uniform_index(rng, n);
        if (it != center.end() && n > 1 && tpe::uniform01(rng) < kCategoricalFlip) k = (k + 1 + uniform_index(rng, n - 1)) % n;
        out[p.name] = p.choices[k];
      } else {
        const double u = it != center.end() ? space_.to_unit(i, *it) + kPerturbationSd * tpe::standard_normal(rng) : tpe::uniform01(rng);
        out[p.name] = space_.from_unit(i, u);
      }
    }
    return out;
  }

  // Notes in the objective's units: mean and sd of the predicted objective, log EI of the loss
  // (log of an improvement in objective units) plus log P(runs), and P(runs).
  void record(const Observations& o, const Model& m, const History& h, double mean, double variance, double log_ei,
              double p_runs, std::size_t candidates, const Feasibility& feasibility) {
    const double sign = options_.direction == Direction::kMinimize ? 1.0 : -1.0;
    const double loss = (m.constant + mean) * o.loss_sd + o.loss_mean;
    notes_ = {{"sampler", "gp"},
              {"startup", false},
              {"mean", sign * loss},
              {"sd", std::sqrt(std::max(variance, 0.0)) * o.loss_sd},
              {"log_ei", log_ei + std::log(o.loss_sd)},
              {"observations", o.y.size()},
              {"pending", h.pending_x.size()},
              {"candidates", candidates}};
    if (feasibility.active()) notes_["p_runs"] = p_runs;
    summary_ = model_summary_of(o, m, options_.direction);
    if (feasibility.active()) summary_["feasibility"] = feasibility.describe();
  }

  // Several objectives: each objective's predicted mean and sd in its units, the EHVI in the
  // objectives' units (the product of their scales), or the fallback's log EI when it decided.
  void record_many(const std::vector<Observations>& obs, const std::vector<Model>& models, const History& h,
                   const std::vector<double>& mean, const std::vector<double>& sd, double ehvi, bool by_ehvi,
                   double p_runs, std::size_t candidates, const Feasibility& feasibility) {
    nlohmann::ordered_json means = nlohmann::ordered_json::array(), sds = nlohmann::ordered_json::array(),
                           per_objective = nlohmann::ordered_json::array();
    double scale = 1;
    for (std::size_t j = 0; j < obs.size(); ++j) {
      const double sign = options_.directions[j] == Direction::kMinimize ? 1.0 : -1.0;
      means.push_back(sign * (mean[j] * obs[j].loss_sd + obs[j].loss_mean));
      sds.push_back(sd[j] * obs[j].loss_sd);
      scale *= obs[j].loss_sd;
      per_objective.push_back(model_summary_of(obs[j], models[j], options_.directions[j]));
    }
    notes_ = {{"sampler", "gp"}, {"startup", false}, {"mean", means}, {"sd", sds}};
    if (by_ehvi)
      notes_["ehvi"] = ehvi * scale;
    else
      notes_["acquisition"] = "no candidate improves the front in expectation: the best log EI of one objective";
    notes_["observations"] = obs.front().y.size();
    notes_["pending"] = h.pending_x.size();
    notes_["candidates"] = candidates;
    if (feasibility.active()) notes_["p_runs"] = p_runs;
    summary_ = {{"objectives", per_objective}};
    if (feasibility.active()) summary_["feasibility"] = feasibility.describe();
  }

  // One objective's fitted GP in its units.
  nlohmann::ordered_json model_summary_of(const Observations& o, const Model& m, Direction direction) const {
    const double sign = direction == Direction::kMinimize ? 1.0 : -1.0;
    const gp::Hyperparameters& hp = m.fit.hyperparameters;
    const double scale2 = o.loss_sd * o.loss_sd;
    return {{"lengthscales", encoding_.lengthscales(hp.lengthscales)},
            {"signal_variance", hp.signal_variance * scale2},
            {"noise_variance", hp.noise_variance * scale2},
            {"constant_mean", sign * (m.constant * o.loss_sd + o.loss_mean)},
            {"log_marginal_likelihood", m.fit.log_marginal_likelihood},
            {"likelihood_evaluations", m.fit.evaluations},
            {"observations", o.y.size()}};
  }

  const Space& space_;  // the caller keeps it alive for the sampler's lifetime
  SamplerOptions options_;
  Encoding encoding_;
  int startup_trials_;
  nlohmann::ordered_json notes_, summary_;
};

}  // namespace

std::unique_ptr<Sampler> make_gp_sampler(const Space& space, const SamplerOptions& options) {
  if (options.startup_trials < -1)
    throw Error(fmt::format("gp sampler: startup_trials {}: must be -1 (the default, max(5, 2 x parameters)) or >= 0",
                            options.startup_trials));
  if (space.size() == 0) throw Error(fmt::format("gp sampler: {}: the space has no parameters", space.source()));
  return std::make_unique<GpSampler>(space, options);
}

}  // namespace paratune::hpo
