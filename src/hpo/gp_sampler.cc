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
  std::vector<double> completed_loss;
  std::vector<const Config*> completed_configs;
  std::set<EncodedKey> tried;  // every configuration of every trial, pruned ones included
  int finished = 0;     // trials not running
};

bool has_finite_value(const TrialRecord& t) { return t.value && std::isfinite(*t.value); }

History sort_trials(const std::vector<TrialRecord>& trials, const Encoding& encoding, Direction direction) {
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
      case TrialRecord::State::kCompleted:
        // Completed without a finite value (NaN loss, diverged): no objective, like a failure.
        if (!has_finite_value(t)) {
          h.failed_x.push_back(std::move(x));
          break;
        }
        h.completed_x.push_back(std::move(x));
        h.completed_loss.push_back(as_loss(direction, *t.value));
        h.completed_configs.push_back(&t.config);
        break;
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

// The observations in standardized units: completed losses, then failures at the worst one.
struct Observations {
  Eigen::MatrixXd x;
  Eigen::VectorXd y;          // (loss - loss_mean) / loss_sd
  double loss_mean = 0, loss_sd = 1;
};

Observations observations(const History& h, int dimensions) {
  std::vector<Eigen::VectorXd> rows = h.completed_x;
  rows.insert(rows.end(), h.failed_x.begin(), h.failed_x.end());
  const double worst = *std::max_element(h.completed_loss.begin(), h.completed_loss.end());
  Eigen::VectorXd loss(static_cast<Eigen::Index>(rows.size()));
  for (std::size_t i = 0; i < rows.size(); ++i)
    loss(static_cast<Eigen::Index>(i)) = i < h.completed_loss.size() ? h.completed_loss[i] : worst;
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
  Eigen::MatrixXd x(o.x.rows() + pending.rows(), dimensions);
  x << o.x, pending;
  Eigen::VectorXd y(residual.size() + believed.size());
  y << residual, believed;
  m.posterior.emplace(m.fit.hyperparameters, x, y, Eigen::VectorXd::Zero(y.size()));
  return m;
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
    const History h = sort_trials(trials, encoding_, options_.direction);
    const Feasibility feasibility(trials, encoding_, options_.seed);
    if (h.finished < startup_trials_)
      return from_prior(rng, h, feasibility, fmt::format("{} of {} startup trials finished", h.finished, startup_trials_));
    if (h.completed_loss.size() < 2)
      return from_prior(rng, h, feasibility,
                        fmt::format("{} trials completed with a value; the model needs 2", h.completed_loss.size()));
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
    const Observations o = observations(h, encoding_.dimensions());
    const Model m = fit_model(o, h, encoding_.dimensions(), options_.seed);
    const std::vector<Config> candidates = make_candidates(rng, h);
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

  // Prior draws (they respect conditions and constraints) and perturbations of the best completed
  // configurations that the space accepts.
  std::vector<Config> make_candidates(std::mt19937_64& rng, const History& h) const {
    std::vector<Config> out;
    out.reserve(kPriorCandidates + kLocalCenters * kPerturbationsPerCenter);
    for (int i = 0; i < kPriorCandidates; ++i) out.push_back(space_.sample(rng));
    std::vector<std::size_t> order(h.completed_loss.size());
    for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
    const std::size_t centers = std::min<std::size_t>(kLocalCenters, order.size());
    std::partial_sort(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(centers), order.end(),
                      [&](std::size_t a, std::size_t b) { return h.completed_loss[a] < h.completed_loss[b]; });
    for (std::size_t c = 0; c < centers; ++c)
      for (int j = 0; j < kPerturbationsPerCenter; ++j) {
        Config candidate = perturb(*h.completed_configs[order[c]], rng);
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
    const gp::Hyperparameters& hp = m.fit.hyperparameters;
    const double scale2 = o.loss_sd * o.loss_sd;
    summary_ = {{"lengthscales", encoding_.lengthscales(hp.lengthscales)},
                {"signal_variance", hp.signal_variance * scale2},
                {"noise_variance", hp.noise_variance * scale2},
                {"constant_mean", sign * (m.constant * o.loss_sd + o.loss_mean)},
                {"log_marginal_likelihood", m.fit.log_marginal_likelihood},
                {"likelihood_evaluations", m.fit.evaluations},
                {"observations", o.y.size()}};
    if (feasibility.active()) summary_["feasibility"] = feasibility.describe();
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
