// oppa and bo (tune/bayes.h): GPs on throughput and peak memory, the next point by constrained UCB
// (OPPA Eq. 2-4, App. D-G). oppa's GP means are the prior with fitted coefficients (Eq. 23), bo's a
// constant.
#include <fmt/format.h>

#include <chrono>
#include <cmath>

#include "model_search.h"
#include "paratune/trial/failure.h"

namespace paratune::tune {
namespace {

double normal_cdf(double z) { return 0.5 * std::erfc(-z / std::sqrt(2.0)); }

// The memory model's predictive spread is at least 5% of the limit when judging P(fit): allocator
// behaviour, fragmentation and buffers vary in ways a GP fitted on a handful of trials cannot see,
// and an overconfident P(fit) sends the search into a streak of OOMs.
constexpr double kMemorySpreadFloor = 0.05;
// Observation noise floor (scaled units): (0.1% of the largest observation)^2.
constexpr double kNoiseFloor = 1e-6;

// One GP with its prior mean: what the fit found and the posterior it gives.
struct FittedGp {
  gp::Hyperparameters hyper;
  std::vector<double> mean_parameters;  // log theta (informed prior) or the constant (constant mean)
  double log_likelihood = 0;
  double scale = 1;                     // observations were divided by it
  std::optional<gp::Posterior> posterior;
};

class GpUcbSearch final : public ModelSearch {
 public:
  using ModelSearch::ModelSearch;

 private:
  Eigen::Index pick(const std::vector<Eigen::Index>& candidates, const std::vector<Eigen::Index>& running,
                    nlohmann::ordered_json& notes) override {
    refit_if_needed();
    if (!throughput_gp_) {  // fewer than two measured trials (everything failed so far): explore
      notes["source"] = "random: fewer than two trials measured a throughput";
      return random_among(candidates);
    }
    const auto t0 = std::chrono::steady_clock::now();
    const FittedGp& r_gp = *throughput_gp_;
    const gp::Posterior r_post = running.empty() ? *r_gp.posterior : believer(r_gp, throughput_, running, true);
    std::optional<gp::Posterior> m_post;
    if (memory_gp_) m_post = running.empty() ? *memory_gp_->posterior : believer(*memory_gp_, memory_, running, false);

    const Eigen::MatrixXd x = rows_of(candidates);
    Eigen::VectorXd r_mean, r_var, m_mean, m_var;
    r_post.predict(x, r_mean, r_var);
    if (m_post) m_post->predict(x, m_mean, m_var);
    const Eigen::VectorXd p_run = feasibility().probabilities(x);

    const double limit = options_.memory_limit_bytes;
    // Only candidates that probably run, while there is any (trial::kLikelyToRun).
    const bool any_likely = (p_run.array() >= trial::kLikelyToRun).any();
    Eigen::Index best = 0;
    double best_score = -HUGE_VAL;
    struct Chosen {
      double mu = 0, sd = 0, m_mu = 0, m_sd = 0, p_fit = 1, p_run = 1, score = 0;
    } chosen;
    for (Eigen::Index i = 0; i < x.rows(); ++i) {
      if (any_likely && p_run(i) < trial::kLikelyToRun) continue;
      const Eigen::Index row = candidates[static_cast<std::size_t>(i)];
      const double mu = mean_at(r_gp, row, true) + r_mean(i);
      const double sd = std::sqrt(std::max(r_var(i), 0.0));
      double p_fit = 1, m_mu = 0, m_sd = 0;
      if (limit > 0 && m_post) {
        m_mu = (mean_at(*memory_gp_, row, false) + m_mean(i)) * memory_gp_->scale;
        m_sd = std::sqrt(std::max(m_var(i), 0.0)) * memory_gp_->scale;
        p_fit = normal_cdf((limit - m_mu) / std::hypot(m_sd, kMemorySpreadFloor * limit));
      } else if (limit > 0 && prior_ && prior_->absolute) {
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
    const double acquisition_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    notes["source"] = running.empty() ? "constrained UCB (Eq. 4)" : "constrained UCB (Eq. 4), kriging believer for the running trials";
    notes["predicted_throughput"] = chosen.mu * r_gp.scale;
    notes["predicted_throughput_sd"] = chosen.sd * r_gp.scale;
    if (prior_) notes["prior_throughput"] = mean_at(r_gp, best, true) * r_gp.scale;
    if (limit > 0 && chosen.m_mu > 0) {
      notes["predicted_memory_bytes"] = chosen.m_mu;
      notes["predicted_memory_sd"] = chosen.m_sd;
    }
    notes["p_fit"] = chosen.p_fit;
    if (feasibility().active()) notes["p_runs"] = chosen.p_run;
    notes["acquisition"] = chosen.score * r_gp.scale;
    notes["fit_ms"] = last_fit_ms_;
    notes["acquisition_ms"] = acquisition_ms;
    notes["candidates"] = x.rows();
    return best;
  }

  // Fits one GP (OPPA Eq. 23) on observations scaled by their largest value, warm-started from the
  // last fit.
  FittedGp fit(const std::vector<Observation>& obs, bool time, const std::optional<FittedGp>& warm) const {
    FittedGp out;
    double largest = 0;
    for (const Observation& o : obs) largest = std::max(largest, o.value);
    out.scale = largest > 0 ? largest : 1;
    const auto n = static_cast<Eigen::Index>(obs.size());
    Eigen::MatrixXd x(n, x_all_.cols());
    Eigen::VectorXd y(n), noise(n);
    for (Eigen::Index i = 0; i < n; ++i) {
      const Observation& o = obs[static_cast<std::size_t>(i)];
      x.row(i) = x_all_.row(o.row);
      y(i) = o.value / out.scale;
      noise(i) = std::max(o.noise_variance / (out.scale * out.scale), kNoiseFloor);
    }
    gp::MeanFunction mean;
    if (prior_) {
      mean = prior_mean(time ? prior_->time : prior_->memory, obs, time, out.scale,
                        warm ? warm->mean_parameters : std::vector<double>{});
    } else {
      mean = constant_mean(obs.size(), warm && !warm->mean_parameters.empty() ? warm->mean_parameters[0] : y.mean());
    }
    gp::Hyperparameters start;
    if (warm) {
      start = warm->hyper;
    } else {
      start.lengthscales = Eigen::VectorXd::Constant(x_all_.cols(), 0.5);
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

  static gp::MeanFunction constant_mean(std::size_t n, double start) {
    gp::MeanFunction mean;
    mean.initial = {start};
    mean.lower = {0};
    mean.upper = {2};
    mean.at_observations = [n](const std::vector<double>& c) { return Eigen::VectorXd::Constant(static_cast<Eigen::Index>(n), c[0]); };
    return mean;
  }

  // The GP's prior mean (scaled) at a row.
  [[nodiscard]] double mean_at(const FittedGp& g, Eigen::Index row, bool time) const {
    if (!prior_) return g.mean_parameters[0];
    return (time ? prior_throughput(row, g.mean_parameters) : prior_memory(row, g.mean_parameters)) / g.scale;
  }

  void refit_if_needed() {
    if (!changed_) return;
    changed_ = false;
    const auto t0 = std::chrono::steady_clock::now();
    throughput_gp_.reset();
    memory_gp_.reset();
    if (throughput_.size() >= 2) {
      throughput_gp_ = fit(throughput_, true, last_throughput_);
      last_throughput_ = throughput_gp_;
    }
    if (memory_.size() >= 2) {
      memory_gp_ = fit(memory_, false, last_memory_);
      last_memory_ = memory_gp_;
    }
    last_fit_ms_ = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    summarize();
  }

  // Kriging believer (Ginsbourger et al. 2010): the posterior with each running point added at its
  // own predicted mean, which shrinks the uncertainty around it so the next pick goes elsewhere.
  gp::Posterior believer(const FittedGp& g, const std::vector<Observation>& obs, const std::vector<Eigen::Index>& running,
                         bool time) const {
    const auto n = static_cast<Eigen::Index>(obs.size());
    const auto m = static_cast<Eigen::Index>(running.size());
    Eigen::MatrixXd x(n + m, x_all_.cols());
    Eigen::VectorXd y(n + m), noise(n + m);
    for (Eigen::Index i = 0; i < n; ++i) {
      const Observation& o = obs[static_cast<std::size_t>(i)];
      x.row(i) = x_all_.row(o.row);
      y(i) = o.value / g.scale - mean_at(g, o.row, time);
      noise(i) = std::max(o.noise_variance / (g.scale * g.scale), kNoiseFloor);
    }
    for (Eigen::Index j = 0; j < m; ++j) {
      x.row(n + j) = x_all_.row(running[static_cast<std::size_t>(j)]);
      y(n + j) = g.posterior->predict(x.row(n + j).transpose()).mean;
      noise(n + j) = kNoiseFloor;
    }
    return gp::Posterior(g.hyper, x, y, noise);
  }

  // --- What is stored with the study --------------------------------------------------------------

  [[nodiscard]] nlohmann::ordered_json describe(const FittedGp& g, bool time) const {
    nlohmann::ordered_json out;
    nlohmann::ordered_json lengthscales = nlohmann::ordered_json::object();
    for (std::size_t d = 0; d < view_.parameters().size(); ++d)
      lengthscales[view_.parameters()[d].name] = g.hyper.lengthscales(static_cast<Eigen::Index>(d));
    out["lengthscales"] = lengthscales;
    out["signal_variance"] = g.hyper.signal_variance * g.scale * g.scale;
    out["noise_variance"] = g.hyper.noise_variance * g.scale * g.scale;
    out["log_marginal_likelihood"] = g.log_likelihood;
    if (prior_)
      out["prior_coefficients"] = coefficients(time ? prior_->time : prior_->memory, g.mean_parameters);
    else
      out["constant_mean"] = g.mean_parameters[0] * g.scale;
    return out;
  }

  void summarize() {
    summary_ = nlohmann::ordered_json::object();
    summary_["algorithm"] = name();
    summary_["prior"] = prior_ ? prior_->name : "constant";
    if (prior_ && prior_->absolute) summary_["prior_note"] = "a coefficient of 1 is the calibrated cost model";
    summary_["throughput_observations"] = throughput_.size();
    summary_["memory_observations"] = memory_.size();
    if (throughput_gp_) summary_["throughput"] = describe(*throughput_gp_, true);
    if (memory_gp_) summary_["memory"] = describe(*memory_gp_, false);
    summary_["fit_ms"] = last_fit_ms_;
    describe_feasibility();
  }

  std::optional<FittedGp> throughput_gp_, memory_gp_, last_throughput_, last_memory_;
  double last_fit_ms_ = 0;
};

}  // namespace

std::unique_ptr<hpo::Sampler> make_gp_ucb_search(const SearchSpace& view, std::optional<Prior> prior,
                                                  const BayesOptions& options) {
  return std::make_unique<GpUcbSearch>(view, std::move(prior), options);
}

}  // namespace paratune::tune
