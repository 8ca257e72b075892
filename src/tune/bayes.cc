// OPPA and the model-based baselines (tune/bayes.h).
#include "paratune/tune/bayes.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <nlopt.hpp>
#include <set>

#include "paratune/gp/classifier.h"
#include "paratune/gp/gaussian_process.h"
#include "paratune/spec/error.h"
#include "paratune/spec/option_error.h"
#include "paratune/trial/measurement.h"

namespace paratune::tune {
namespace {

double normal_cdf(double z) { return 0.5 * std::erfc(-z / std::sqrt(2.0)); }

// An out-of-memory trial's peak is unknown but above the limit M0: it is observed at 1.05 x M0, so
// that its neighbours come out above the limit rather than exactly at it.
constexpr double kOomMemoryFactor = 1.05;
// The memory model's predictive spread is at least 5% of the limit when judging P(fit): allocator
// behaviour, fragmentation and buffers vary in ways a GP fitted on a handful of trials cannot see,
// and an overconfident P(fit) sends the search into a streak of OOMs.
constexpr double kMemorySpreadFloor = 0.05;

// Once a trial failed, a random design is drawn again (up to this many times) while the feasibility
// model says it more likely fails than runs (trial::kLikelyToRun): the draw comes from E.1's
// distribution restricted to where configurations probably run. When no draw does, the one most
// likely to run is taken (a space where nearly everything fails must still be explored).
constexpr int kFeasibilityRedraws = 64;

// The parameters whose combinations E.1 weighs equally.
const std::set<std::string, std::less<>> kDegreeNames{"dp", "tp", "pp", "cp", "ep"};

// One GP with its prior mean: what the fit found and the posterior it gives.
struct FittedGp {
  gp::Hyperparameters hyper;
  std::vector<double> mean_parameters;  // log theta (informed prior) or the constant (constant mean)
  double log_likelihood = 0;
  double scale = 1;                     // observations were divided by it
  std::optional<gp::Posterior> posterior;
};

}  // namespace

void validate(const BayesOptions& o) {
  if (o.steps < 2) throw OptionError("steps", std::to_string(o.steps), "must be >= 2");
  if (o.initial_points < 1) throw OptionError("initial_points", std::to_string(o.initial_points), "must be >= 1");
  if (!(o.beta >= 0) || !std::isfinite(o.beta)) throw OptionError("beta", fmt::format("{}", o.beta), "must be >= 0");
  if (!(o.memory_limit_bytes >= 0))
    throw OptionError("memory_limit_bytes", fmt::format("{}", o.memory_limit_bytes), "must be >= 0");
}

namespace {

class ModelSearch final : public SearchAlgorithm {
 public:
  ModelSearch(const SearchSpace& space, std::optional<Prior> prior, const BayesOptions& options)
      : space_(space), options_(options), prior_(std::move(prior)), embedding_(space), index_(space),
        rng_(options.seed) {
    const std::vector<Point>& points = space.enumerate();
    x_all_ = embedding_.rows(points);
    // E.1's groups: points with the same parallel degrees.
    std::map<std::vector<int>, std::vector<Eigen::Index>> groups;
    const auto& params = space.parameters();
    for (std::size_t i = 0; i < points.size(); ++i) {
      std::vector<int> key;
      for (std::size_t d = 0; d < params.size(); ++d)
        if (kDegreeNames.contains(params[d].name)) key.push_back(points[i][d]);
      groups[key].push_back(static_cast<Eigen::Index>(i));
    }
    group_of_.assign(points.size(), 0);
    for (const auto& [key, rows] : groups) {
      for (Eigen::Index r : rows) group_of_[static_cast<std::size_t>(r)] = static_cast<int>(groups_.size());
      groups_.push_back(rows);
    }
    tried_.assign(points.size(), false);
  }

  [[nodiscard]] std::string name() const override { return to_string(options_.algorithm); }

  std::optional<Point> propose(const std::vector<FinishedTrial>& finished, const std::vector<Point>& running) override {
    absorb(finished);
    std::vector<bool> busy = tried_;
    for (const Point& p : running)
      if (const auto row = index_.find(p)) busy[static_cast<std::size_t>(*row)] = true;
    std::vector<Eigen::Index> untried;
    for (std::size_t i = 0; i < busy.size(); ++i)
      if (!busy[i]) untried.push_back(static_cast<Eigen::Index>(i));
    if (untried.empty()) return std::nullopt;

    Eigen::Index pick = -1;
    nlohmann::ordered_json notes;
    const int designs = static_cast<int>(finished.size() + running.size());
    if (designs < options_.initial_points) {
      pick = initial_design(busy, designs, notes);
    } else if (oom_run_ >= options_.oom_streak) {
      pick = weighted_random(busy);
      notes["source"] = fmt::format("random exploration after {} out-of-memory trials in a row", oom_run_);
      oom_run_ = 0;
    } else {
      pick = model_pick(untried, running, notes);
    }
    const Point& point = space_.enumerate()[static_cast<std::size_t>(pick)];
    notes_[point] = std::move(notes);
    return point;
  }

  [[nodiscard]] nlohmann::ordered_json proposal_notes(const Point& point) const override {
    const auto it = notes_.find(point);
    return it == notes_.end() ? nlohmann::ordered_json() : it->second;
  }

  [[nodiscard]] nlohmann::ordered_json model_summary() const override { return summary_; }

 private:
  struct Observation {
    Eigen::Index row;
    double value;
    double noise_variance;  // in the observation's own units squared
  };

  [[nodiscard]] bool informed() const {
    return options_.algorithm == Algorithm::kOppa || options_.algorithm == Algorithm::kCostModel;
  }
  [[nodiscard]] const Point& point_at(Eigen::Index row) const { return space_.enumerate()[static_cast<std::size_t>(row)]; }

  // Takes in the trials finished since the last call.
  void absorb(const std::vector<FinishedTrial>& finished) {
    for (; seen_ < finished.size(); ++seen_) {
      const FinishedTrial& f = finished[seen_];
      const std::optional<Eigen::Index> row = index_.find(f.point);
      if (!row) continue;
      tried_[static_cast<std::size_t>(*row)] = true;
      const bool oom = f.status == trial::TrialStatus::kOom;
      oom_run_ = oom ? oom_run_ + 1 : 0;
      const bool measured = f.status == trial::TrialStatus::kCompleted || f.status == trial::TrialStatus::kEarlyStopped ||
                            f.status == trial::TrialStatus::kInfeasible;
      if (measured && f.throughput && *f.throughput > 0)
        throughput_.push_back({*row, *f.throughput, f.throughput_standard_error * f.throughput_standard_error});
      if (f.peak_memory_bytes && *f.peak_memory_bytes > 0)
        memory_.push_back({*row, *f.peak_memory_bytes, 0});
      else if (oom && options_.memory_limit_bytes > 0)  // only known to be above M0 (OPPA clips it there)
        memory_.push_back({*row, kOomMemoryFactor * options_.memory_limit_bytes, 0});
      // XGBoost learns from failures too (DeepSpeed's autotuner scores them 0).
      if (!measured || !f.throughput) failures_.push_back(*row);
      // The feasibility model: did the configuration run? Every failure counts, whatever its kind
      // (an OOM too: with --memory-limit the memory model also learns from it, by memory's own
      // trend; the classifier by whatever separates what runs from what does not). A trial over
      // the memory limit ran: the memory model judges it. A failure given without its kind is
      // judged from its status alone (exit code unknown: crashed, not refused).
      const bool ran = measured;
      const trial::FailureKind kind =
          ran || f.failure != trial::FailureKind::kNone ? f.failure : trial::classify_failure(f.status, -1, 0, f.steps);
      feasibility_.push_back({*row, ran, kind});
      changed_ = feasibility_changed_ = true;
    }
  }

  // --- Initial designs ---------------------------------------------------------------------------

  Eigen::Index initial_design(const std::vector<bool>& busy, int designs, nlohmann::ordered_json& notes) {
    const bool seeded = options_.seed_from_prior && prior_ && prior_->absolute && informed();
    if (seeded && designs < (options_.initial_points + 1) / 2) {
      if (seed_order_.empty()) seed_order_ = prior_ranking();
      // The best-predicted point of a parallel-degree group not seeded yet.
      for (Eigen::Index row : seed_order_) {
        if (busy[static_cast<std::size_t>(row)] || seeded_groups_.contains(group_of_[static_cast<std::size_t>(row)]))
          continue;
        seeded_groups_.insert(group_of_[static_cast<std::size_t>(row)]);
        notes["source"] = "initial design: the cost model's best prediction of its (dp, tp, pp) group";
        add_prior_prediction(row, notes);
        return row;
      }
    }
    notes["source"] = "initial design: weighted random (OPPA App. E.1)";
    const Eigen::Index row = weighted_random(busy);
    if (prior_ && prior_->absolute && informed()) add_prior_prediction(row, notes);
    return row;
  }

  // Valid points by the prior's predicted throughput at its initial coefficients, fastest first;
  // points predicted not to fit under M0 go last.
  std::vector<Eigen::Index> prior_ranking() const {
    std::vector<Eigen::Index> rows(static_cast<std::size_t>(x_all_.rows()));
    for (std::size_t i = 0; i < rows.size(); ++i) rows[i] = static_cast<Eigen::Index>(i);
    const auto key = [&](Eigen::Index r) {
      const bool fits = options_.memory_limit_bytes <= 0 ||
                        prior_->memory.value(r, prior_->memory.initial) <= options_.memory_limit_bytes;
      return std::make_pair(!fits, prior_->time.value(r, prior_->time.initial));
    };
    std::stable_sort(rows.begin(), rows.end(), [&](Eigen::Index a, Eigen::Index b) { return key(a) < key(b); });
    return rows;
  }

  void add_prior_prediction(Eigen::Index row, nlohmann::ordered_json& notes) const {
    notes["prior_throughput"] = 1 / prior_->time.value(row, prior_->time.initial);
    notes["prior_memory_bytes"] = prior_->memory.value(row, prior_->memory.initial);
  }

  // App. E.1: a group of parallel degrees uniformly among those with untried points, then a point
  // of it uniformly; once trials have failed, only where the configuration probably runs
  // (kFeasibilityRedraws).
  Eigen::Index weighted_random(const std::vector<bool>& busy) {
    refit_feasibility_if_needed();
    Eigen::Index row = uniform_design(busy);
    if (!feasibility_model_) return row;
    Eigen::Index best = row;
    double best_p = -1;
    for (int draw = 0; draw <= kFeasibilityRedraws; ++draw) {
      if (draw > 0) row = uniform_design(busy);
      const double p = p_feasible(row);
      if (p >= trial::kLikelyToRun) return row;
      if (p > best_p) {
        best_p = p;
        best = row;
      }
    }
    return best;
  }

  Eigen::Index uniform_design(const std::vector<bool>& busy) {
    std::vector<std::size_t> open;
    for (std::size_t g = 0; g < groups_.size(); ++g)
      if (std::any_of(groups_[g].begin(), groups_[g].end(), [&](Eigen::Index r) { return !busy[static_cast<std::size_t>(r)]; }))
        open.push_back(g);
    const std::vector<Eigen::Index>& group = groups_[open[uniform_below(rng_, open.size())]];
    std::vector<Eigen::Index> free;
    for (Eigen::Index r : group)
      if (!busy[static_cast<std::size_t>(r)]) free.push_back(r);
    return free[uniform_below(rng_, free.size())];
  }

  // E.1's weighted random choice restricted to `candidates`.
  Eigen::Index random_among(const std::vector<Eigen::Index>& candidates) {
    std::vector<bool> busy(tried_.size(), true);
    for (Eigen::Index r : candidates) busy[static_cast<std::size_t>(r)] = false;
    return weighted_random(busy);
  }

  // --- Model picks ---------------------------------------------------------------------------------

  Eigen::Index model_pick(const std::vector<Eigen::Index>& untried, const std::vector<Point>& running,
                          nlohmann::ordered_json& notes) {
    std::vector<Eigen::Index> candidates = untried;
    if (static_cast<int>(candidates.size()) > options_.max_candidates) {
      for (int i = 0; i < options_.max_candidates; ++i)
        std::swap(candidates[static_cast<std::size_t>(i)],
                  candidates[static_cast<std::size_t>(i) + uniform_below(rng_, candidates.size() - static_cast<std::size_t>(i))]);
      candidates.resize(static_cast<std::size_t>(options_.max_candidates));
    }
    switch (options_.algorithm) {
      case Algorithm::kXgboost: return xgboost_pick(candidates, notes);
      case Algorithm::kCostModel: return cost_model_pick(candidates, notes);
      default: return ucb_pick(candidates, running, notes);
    }
  }

  // The prior's value at a row for fitted log-coefficients (time: seconds -> throughput).
  [[nodiscard]] double prior_throughput(Eigen::Index row, const std::vector<double>& log_theta) const {
    double t = 0;
    for (Eigen::Index k = 0; k < prior_->time.features.cols(); ++k)
      t += std::exp(log_theta[static_cast<std::size_t>(k)]) * prior_->time.features(row, k);
    return t > 0 ? 1 / t : 0;
  }
  [[nodiscard]] double prior_memory(Eigen::Index row, const std::vector<double>& log_theta) const {
    double m = 0;
    for (Eigen::Index k = 0; k < prior_->memory.features.cols(); ++k)
      m += std::exp(log_theta[static_cast<std::size_t>(k)]) * prior_->memory.features(row, k);
    if (!prior_->absolute && options_.memory_limit_bytes > 0) m = std::min(m, options_.memory_limit_bytes);  // Eq. 21
    return m;
  }

  // Start and bounds of the prior's log-coefficients; a relative prior is scaled so that its
  // initial coefficients match the median observation.
  gp::MeanFunction prior_mean(const LinearTerms& terms, const std::vector<Observation>& obs, bool time,
                              double scale, const std::vector<double>& warm) const {
    gp::MeanFunction mean;
    double shift = 0;  // log of the relative prior's scale
    if (!prior_->absolute) {
      std::vector<double> ratios;
      for (const Observation& o : obs) {
        const double model = terms.value(o.row, terms.initial);
        if (model > 0) ratios.push_back((time ? 1 / o.value : o.value) / model);
      }
      std::nth_element(ratios.begin(), ratios.begin() + static_cast<std::ptrdiff_t>(ratios.size() / 2), ratios.end());
      shift = ratios.empty() ? 0 : std::log(ratios[ratios.size() / 2]);
    }
    for (std::size_t k = 0; k < terms.initial.size(); ++k) {
      mean.initial.push_back(std::log(terms.initial[k]) + shift);
      mean.lower.push_back(std::log(terms.lower[k]) + shift);
      mean.upper.push_back(std::log(terms.upper[k]) + shift);
    }
    if (warm.size() == mean.initial.size())
      for (std::size_t k = 0; k < warm.size(); ++k) mean.initial[k] = std::clamp(warm[k], mean.lower[k], mean.upper[k]);
    mean.at_observations = [this, &obs, time, scale](const std::vector<double>& log_theta) {
      Eigen::VectorXd m(static_cast<Eigen::Index>(obs.size()));
      for (std::size_t i = 0; i < obs.size(); ++i)
        m(static_cast<Eigen::Index>(i)) =
            (time ? prior_throughput(obs[i].row, log_theta) : prior_memory(obs[i].row, log_theta)) / scale;
      return m;
    };
    return mean;
  }

  static gp::MeanFunction constant_mean(std::size_t n, double start) {
    gp::MeanFunction mean;
    mean.initial = {start};
    mean.lower = {0};
    mean.upper = {2};
    mean.at_observations = [n](const std::vector<double>& c) { return Eigen::VectorXd::Constant(static_cast<Eigen::Index>(n), c[0]); };
    return mean;
  }

  // Fits one GP (OPPA Eq. 23) on observations scaled by their largest value.
  FittedGp fit(const std::vector<Observation>& obs, bool time, const FittedGp* warm, double noise_floor) {
    FittedGp out;
    double largest = 0;
    for (const Observation& o : obs) largest = std::max(largest, o.value);
    out.scale = largest > 0 ? largest : 1;
    const auto n = static_cast<Eigen::Index>(obs.size());
    Eigen::MatrixXd x(n, embedding_.dimensions());
    Eigen::VectorXd y(n), noise(n);
    for (Eigen::Index i = 0; i < n; ++i) {
      const Observation& o = obs[static_cast<std::size_t>(i)];
      x.row(i) = x_all_.row(o.row);
      y(i) = o.value / out.scale;
      noise(i) = std::max(o.noise_variance / (out.scale * out.scale), noise_floor);
    }
    gp::MeanFunction mean;
    if (informed()) {
      mean = prior_mean(time ? prior_->time : prior_->memory, obs, time, out.scale,
                        warm ? warm->mean_parameters : std::vector<double>{});
    } else {
      mean = constant_mean(obs.size(), warm && !warm->mean_parameters.empty() ? warm->mean_parameters[0] : y.mean());
    }
    gp::Hyperparameters start;
    if (warm) {
      start = warm->hyper;
    } else {
      start.lengthscales = Eigen::VectorXd::Constant(embedding_.dimensions(), 0.5);
      start.signal_variance = 0.1;
      start.noise_variance = 1e-4;
    }
    gp::FitOptions fo;
    fo.restarts = options_.fit_restarts;
    fo.seed = options_.seed + 7919 * static_cast<std::uint64_t>(obs.size()) + (time ? 0 : 1);
    fo.max_evaluations = 200;
    const gp::FitResult r = gp::fit(x, y, noise, mean, start, fo);
    out.hyper = r.hyperparameters;
    out.mean_parameters = r.mean_parameters;
    out.log_likelihood = r.log_marginal_likelihood;
    const Eigen::VectorXd residual = y - mean.at_observations(r.mean_parameters);
    out.posterior.emplace(out.hyper, x, residual, noise);
    return out;
  }

  // The prior mean (scaled) at a row for a fitted GP.
  [[nodiscard]] double mean_at(const FittedGp& g, Eigen::Index row, bool time) const {
    if (!informed()) return g.mean_parameters[0];
    return (time ? prior_throughput(row, g.mean_parameters) : prior_memory(row, g.mean_parameters)) / g.scale;
  }

  void refit_if_needed() {
    if (!changed_) return;
    changed_ = false;
    const auto t0 = std::chrono::steady_clock::now();
    throughput_gp_.reset();
    memory_gp_.reset();
    if (throughput_.size() >= 2) {
      // Noise floor: (0.1% of the best throughput)^2 besides each observation's own variance.
      throughput_gp_ = fit(throughput_, true, last_throughput_ ? &*last_throughput_ : nullptr, 1e-6);
      last_throughput_ = throughput_gp_;
    }
    if (memory_.size() >= 2) {
      memory_gp_ = fit(memory_, false, last_memory_ ? &*last_memory_ : nullptr, 1e-6);
      last_memory_ = memory_gp_;
    }
    last_fit_ms_ = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    summarize();
  }

  // The feasibility classifier (gp/classifier.h) on every finished trial, once any has failed;
  // before that P(feasible) = 1 everywhere and the searches behave as without it.
  void refit_feasibility_if_needed() {
    if (!feasibility_changed_) return;
    feasibility_changed_ = false;
    const bool any_failed = std::any_of(feasibility_.begin(), feasibility_.end(), [](const Feasibility& f) { return !f.ran; });
    if (!any_failed) return;
    const auto n = static_cast<Eigen::Index>(feasibility_.size());
    Eigen::MatrixXd x(n, embedding_.dimensions());
    std::vector<bool> ran;
    for (Eigen::Index i = 0; i < n; ++i) {
      x.row(i) = x_all_.row(feasibility_[static_cast<std::size_t>(i)].row);
      ran.push_back(feasibility_[static_cast<std::size_t>(i)].ran);
    }
    gp::Hyperparameters start;
    if (feasibility_model_) {
      start = feasibility_model_->hyperparameters();
    } else {
      start.lengthscales = Eigen::VectorXd::Constant(embedding_.dimensions(), 0.5);
      start.signal_variance = 1;
    }
    gp::ClassifierOptions co;
    co.seed = options_.seed + 104729 * static_cast<std::uint64_t>(n);
    feasibility_model_.emplace(std::move(x), std::move(ran), start, co);
    describe_feasibility();
  }

  [[nodiscard]] double p_feasible(Eigen::Index row) const {
    return feasibility_model_ ? feasibility_model_->probability(Eigen::VectorXd(x_all_.row(row).transpose())) : 1.0;
  }

  // Kriging believer: the posterior with each running point added at its own predicted mean.
  gp::Posterior believer(const FittedGp& g, const std::vector<Observation>& obs, const std::vector<Point>& running,
                         bool time) const {
    std::vector<Eigen::Index> rows;
    for (const Point& p : running)
      if (const auto r = index_.find(p)) rows.push_back(*r);
    const auto n = static_cast<Eigen::Index>(obs.size());
    const auto m = static_cast<Eigen::Index>(rows.size());
    Eigen::MatrixXd x(n + m, embedding_.dimensions());
    Eigen::VectorXd y(n + m), noise(n + m);
    for (Eigen::Index i = 0; i < n; ++i) {
      const Observation& o = obs[static_cast<std::size_t>(i)];
      x.row(i) = x_all_.row(o.row);
      y(i) = o.value / g.scale - mean_at(g, o.row, time);
      noise(i) = std::max(o.noise_variance / (g.scale * g.scale), 1e-6);
    }
    for (Eigen::Index j = 0; j < m; ++j) {
      x.row(n + j) = x_all_.row(rows[static_cast<std::size_t>(j)]);
      y(n + j) = g.posterior->predict(x_all_.row(rows[static_cast<std::size_t>(j)]).transpose()).mean;
      noise(n + j) = 1e-6;
    }
    return gp::Posterior(g.hyper, x, y, noise);
  }

  Eigen::Index ucb_pick(const std::vector<Eigen::Index>& candidates, const std::vector<Point>& running,
                        nlohmann::ordered_json& notes) {
    refit_if_needed();
    refit_feasibility_if_needed();
    if (!throughput_gp_) {  // fewer than two measured trials (everything failed so far): explore
      notes["source"] = "random: fewer than two trials measured a throughput";
      return random_among(candidates);
    }
    const auto t0 = std::chrono::steady_clock::now();
    const FittedGp& r_gp = *throughput_gp_;
    const gp::Posterior r_post = running.empty() ? *r_gp.posterior : believer(r_gp, throughput_, running, true);
    std::optional<gp::Posterior> m_post;
    if (memory_gp_) m_post = running.empty() ? *memory_gp_->posterior : believer(*memory_gp_, memory_, running, false);

    const auto n = static_cast<Eigen::Index>(candidates.size());
    Eigen::MatrixXd x(n, embedding_.dimensions());
    for (Eigen::Index i = 0; i < n; ++i) x.row(i) = x_all_.row(candidates[static_cast<std::size_t>(i)]);
    Eigen::VectorXd r_mean, r_var, m_mean, m_var;
    r_post.predict(x, r_mean, r_var);
    if (m_post) m_post->predict(x, m_mean, m_var);
    const Eigen::VectorXd p_run = feasibility_model_ ? feasibility_model_->probabilities(x) : Eigen::VectorXd::Ones(n);

    const double limit = options_.memory_limit_bytes;
    // Only candidates that probably run, while there is any (trial::kLikelyToRun).
    const bool any_likely = (p_run.array() >= trial::kLikelyToRun).any();
    Eigen::Index best = 0;
    double best_score = -HUGE_VAL;
    struct Chosen {
      double mu = 0, sd = 0, m_mu = 0, m_sd = 0, p_fit = 1, p_run = 1, score = 0;
    } chosen;
    for (Eigen::Index i = 0; i < n; ++i) {
      if (any_likely && p_run(i) < trial::kLikelyToRun) continue;
      const Eigen::Index row = candidates[static_cast<std::size_t>(i)];
      const double mu = mean_at(r_gp, row, true) + r_mean(i);
      const double sd = std::sqrt(std::max(r_var(i), 0.0));
      double p_fit = 1, m_mu = 0, m_sd = 0;
      if (limit > 0 && m_post) {
        m_mu = (mean_at(*memory_gp_, row, false) + m_mean(i)) * memory_gp_->scale;
        m_sd = std::sqrt(std::max(m_var(i), 0.0)) * memory_gp_->scale;
        p_fit = normal_cdf((limit - m_mu) / std::hypot(m_sd, kMemorySpreadFloor * limit));
      } else if (limit > 0 && prior_ && prior_->absolute && informed()) {
        // No memory model yet: the calibrated prior, with twice the spread floor.
        m_mu = prior_->memory.value(row, prior_->memory.initial);
        m_sd = 2 * kMemorySpreadFloor * limit;
        p_fit = normal_cdf((limit - m_mu) / m_sd);
      }
      // Gelbart et al. 2014's weighting for each constraint, the memory limit and "it runs".
      const double score = (mu + options_.beta * sd) * p_fit * p_run(i);
      if (score > best_score) {
        best_score = score;
        best = row;
        chosen = {mu, sd, m_mu, m_sd, p_fit, p_run(i), score};
      }
    }
    last_acquisition_ms_ = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    notes["source"] = running.empty() ? "constrained UCB (Eq. 4)" : "constrained UCB (Eq. 4), kriging believer for the running trials";
    notes["predicted_throughput"] = chosen.mu * r_gp.scale;
    notes["predicted_throughput_sd"] = chosen.sd * r_gp.scale;
    if (informed()) notes["prior_throughput"] = mean_at(r_gp, best, true) * r_gp.scale;
    if (limit > 0 && chosen.m_mu > 0) {
      notes["predicted_memory_bytes"] = chosen.m_mu;
      notes["predicted_memory_sd"] = chosen.m_sd;
    }
    notes["p_fit"] = chosen.p_fit;
    if (feasibility_model_) notes["p_runs"] = chosen.p_run;
    notes["acquisition"] = chosen.score * r_gp.scale;
    notes["fit_ms"] = last_fit_ms_;
    notes["acquisition_ms"] = last_acquisition_ms_;
    notes["candidates"] = n;
    return best;
  }

  // costmodel: least squares of log throughput and log memory over the prior's log-coefficients.
  std::vector<double> least_squares(const LinearTerms& terms, const std::vector<Observation>& obs, bool time) const {
    gp::MeanFunction start = prior_mean(terms, obs, time, 1, {});
    if (obs.empty()) return start.initial;
    nlopt::opt optimizer(nlopt::LN_BOBYQA, static_cast<unsigned>(start.initial.size()));
    optimizer.set_lower_bounds(start.lower);
    optimizer.set_upper_bounds(start.upper);
    struct Data {
      const ModelSearch* self;
      const std::vector<Observation>* obs;
      bool time;
    } data{this, &obs, time};
    optimizer.set_min_objective(
        [](const std::vector<double>& u, std::vector<double>&, void* p) {
          const Data& d = *static_cast<Data*>(p);
          double sum = 0;
          for (const Observation& o : *d.obs) {
            const double model = d.time ? d.self->prior_throughput(o.row, u) : d.self->prior_memory(o.row, u);
            const double e = std::log(std::max(model, 1e-300)) - std::log(o.value);
            sum += e * e;
          }
          return sum;
        },
        &data);
    optimizer.set_maxeval(2000);
    optimizer.set_xtol_rel(1e-6);
    std::vector<double> u = start.initial;
    double value = 0;
    try {
      optimizer.optimize(u, value);
    } catch (const std::exception&) {
      // keep the point reached
    }
    return u;
  }

  Eigen::Index cost_model_pick(const std::vector<Eigen::Index>& candidates, nlohmann::ordered_json& notes) {
    refit_feasibility_if_needed();
    const std::vector<double> time_theta = least_squares(prior_->time, throughput_, true);
    const std::vector<double> memory_theta = least_squares(prior_->memory, memory_, false);
    const double limit = options_.memory_limit_bytes;
    Eigen::Index best = candidates.front();
    std::tuple<bool, bool, double> best_key{false, false, -1};
    for (Eigen::Index row : candidates) {
      const bool fits = limit <= 0 || prior_memory(row, memory_theta) <= limit;
      // Fits, then probably runs (trial::kLikelyToRun), then the expected throughput: the
      // model's, times the chance that the configuration runs at all.
      const double p = p_feasible(row);
      const std::tuple<bool, bool, double> key{fits, p >= trial::kLikelyToRun, prior_throughput(row, time_theta) * p};
      if (key > best_key) {
        best_key = key;
        best = row;
      }
    }
    notes["source"] = feasibility_model_ ? "the fitted cost model's best prediction times P(runs)"
                                         : "the fitted cost model's best prediction";
    notes["predicted_throughput"] = prior_throughput(best, time_theta);
    if (feasibility_model_) notes["p_runs"] = p_feasible(best);
    notes["predicted_memory_bytes"] = prior_memory(best, memory_theta);
    summary_ = {{"prior", prior_->name},
                {"throughput_coefficients", coefficients(prior_->time, time_theta)},
                {"memory_coefficients", coefficients(prior_->memory, memory_theta)}};
    describe_feasibility();
    return best;
  }

  Eigen::Index xgboost_pick(const std::vector<Eigen::Index>& candidates, nlohmann::ordered_json& notes) {
    const auto n = static_cast<Eigen::Index>(throughput_.size() + failures_.size());
    if (n < 2) {  // nothing to learn from yet (e.g. --parallel with every design still running)
      notes["source"] = "random: fewer than two trials finished";
      return random_among(candidates);
    }
    Eigen::MatrixXd x(n, embedding_.dimensions());
    Eigen::VectorXd y(n);
    Eigen::Index i = 0;
    for (const Observation& o : throughput_) {
      x.row(i) = x_all_.row(o.row);
      y(i++) = o.value;
    }
    for (Eigen::Index row : failures_) {
      x.row(i) = x_all_.row(row);
      y(i++) = 0;
    }
    Eigen::MatrixXd query(static_cast<Eigen::Index>(candidates.size()), embedding_.dimensions());
    for (std::size_t c = 0; c < candidates.size(); ++c) query.row(static_cast<Eigen::Index>(c)) = x_all_.row(candidates[c]);
    const Eigen::VectorXd predicted = xgboost_fit_predict(x, y, query, options_.seed + static_cast<std::uint64_t>(n));
    // DeepSpeed's rule, then as every search here: probably runs first (trial::kLikelyToRun),
    // then the prediction times P(runs).
    refit_feasibility_if_needed();
    const Eigen::VectorXd p_run = feasibility_model_ ? feasibility_model_->probabilities(query)
                                                     : Eigen::VectorXd::Ones(query.rows());
    Eigen::Index best = 0;
    std::pair<bool, double> best_key{false, -HUGE_VAL};
    for (Eigen::Index c = 0; c < query.rows(); ++c) {
      const std::pair<bool, double> key{p_run(c) >= trial::kLikelyToRun, std::max(predicted(c), 0.0) * p_run(c)};
      if (key > best_key) {
        best_key = key;
        best = c;
      }
    }
    notes["source"] = feasibility_model_ ? "XGBoost's best prediction times P(runs)" : "XGBoost's best prediction";
    notes["predicted_throughput"] = predicted(best);
    if (feasibility_model_) notes["p_runs"] = p_run(best);
    return candidates[static_cast<std::size_t>(best)];
  }

  // --- What is stored with the study --------------------------------------------------------------

  [[nodiscard]] nlohmann::ordered_json coefficients(const LinearTerms& terms, const std::vector<double>& log_theta) const {
    nlohmann::ordered_json c = nlohmann::ordered_json::object();
    for (std::size_t k = 0; k < terms.names.size(); ++k) c[terms.names[k]] = std::exp(log_theta[k]);
    return c;
  }

  [[nodiscard]] nlohmann::ordered_json describe(const FittedGp& g, bool time) const {
    nlohmann::ordered_json out;
    nlohmann::ordered_json lengthscales = nlohmann::ordered_json::object();
    for (std::size_t d = 0; d < space_.parameters().size(); ++d)
      lengthscales[space_.parameters()[d].name] = g.hyper.lengthscales(static_cast<Eigen::Index>(d));
    out["lengthscales"] = lengthscales;
    out["signal_variance"] = g.hyper.signal_variance * g.scale * g.scale;
    out["noise_variance"] = g.hyper.noise_variance * g.scale * g.scale;
    out["log_marginal_likelihood"] = g.log_likelihood;
    if (informed())
      out["prior_coefficients"] = coefficients(time ? prior_->time : prior_->memory, g.mean_parameters);
    else
      out["constant_mean"] = g.mean_parameters[0] * g.scale;
    return out;
  }

  void summarize() {
    summary_ = nlohmann::ordered_json::object();
    summary_["algorithm"] = name();
    summary_["prior"] = informed() ? prior_->name : "constant";
    if (informed() && prior_->absolute) summary_["prior_note"] = "a coefficient of 1 is the calibrated cost model";
    summary_["throughput_observations"] = throughput_.size();
    summary_["memory_observations"] = memory_.size();
    if (throughput_gp_) summary_["throughput"] = describe(*throughput_gp_, true);
    if (memory_gp_) summary_["memory"] = describe(*memory_gp_, false);
    summary_["fit_ms"] = last_fit_ms_;
    describe_feasibility();
  }

  // The feasibility classifier, with what it learned from: failures by kind.
  void describe_feasibility() {
    if (!feasibility_model_) return;
    nlohmann::ordered_json out;
    std::map<std::string, int> failures;
    for (const Feasibility& f : feasibility_)
      if (!f.ran) ++failures[trial::to_string(f.kind)];
    out["observations"] = feasibility_.size();
    out["failures"] = failures;
    nlohmann::ordered_json lengthscales = nlohmann::ordered_json::object();
    const gp::Hyperparameters& h = feasibility_model_->hyperparameters();
    for (std::size_t d = 0; d < space_.parameters().size(); ++d)
      lengthscales[space_.parameters()[d].name] = h.lengthscales(static_cast<Eigen::Index>(d));
    out["lengthscales"] = lengthscales;
    out["signal_variance"] = h.signal_variance;
    out["prior_p_runs"] = normal_cdf(feasibility_model_->prior_mean());
    summary_["feasibility"] = out;
  }

  const SearchSpace& space_;
  BayesOptions options_;
  std::optional<Prior> prior_;
  Embedding embedding_;
  PointIndex index_;
  std::mt19937_64 rng_;
  Eigen::MatrixXd x_all_;                          // embedding of every valid point
  std::vector<int> group_of_;                      // E.1 group of every valid point
  std::vector<std::vector<Eigen::Index>> groups_;
  std::vector<bool> tried_;                        // finished (never proposed again)
  std::size_t seen_ = 0;                           // finished trials taken in
  std::vector<Observation> throughput_, memory_;
  std::vector<Eigen::Index> failures_;
  // Every finished trial for the feasibility classifier: did its configuration run, and if not how
  // it failed.
  struct Feasibility {
    Eigen::Index row;
    bool ran;
    trial::FailureKind kind;
  };
  std::vector<Feasibility> feasibility_;
  std::optional<gp::Classifier> feasibility_model_;  // none until a trial failed
  bool feasibility_changed_ = false;
  int oom_run_ = 0;
  bool changed_ = false;
  std::optional<FittedGp> throughput_gp_, memory_gp_, last_throughput_, last_memory_;
  double last_fit_ms_ = 0, last_acquisition_ms_ = 0;
  std::vector<Eigen::Index> seed_order_;
  std::set<int> seeded_groups_;
  std::map<Point, nlohmann::ordered_json> notes_;
  nlohmann::ordered_json summary_ = nlohmann::ordered_json::object();
};

}  // namespace

std::unique_ptr<SearchAlgorithm> make_model_search(const SearchSpace& space, std::optional<Prior> prior,
                                                   const BayesOptions& options) {
  validate(options);
  const Algorithm a = options.algorithm;
  if (a == Algorithm::kGrid || a == Algorithm::kRandom)
    throw Error(fmt::format("make_model_search: {} is not model-based (tune::make_search)", to_string(a)));
  if ((a == Algorithm::kOppa || a == Algorithm::kCostModel) && !prior) prior = simple_prior(space);
  if (a == Algorithm::kBo || a == Algorithm::kXgboost) prior.reset();
  return std::make_unique<ModelSearch>(space, std::move(prior), options);
}

}  // namespace paratune::tune
