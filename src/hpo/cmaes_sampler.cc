// cmaes: the covariance matrix adaptation evolution strategy (hpo/sampler.h), for continuous spaces
// of many dimensions, where a GP's or TPE's model of the whole space learns slowly (issue 44: on 10-d
// Levy, Optuna's CMA-ES beat paratune's GP and TPE at every budget).
//
// The (mu/mu_w, lambda)-CMA-ES of Hansen, "The CMA Evolution Strategy: A Tutorial" (arXiv:1604.00772,
// 2016), Appendix A with the default parameters of its Table 1 (negative weights included: "active"
// CMA), over the float and int parameters that are always active, each scaled
// to [0, 1] (Space::to_unit: a log-scaled one by its log). Categorical and conditional parameters are
// drawn from their prior, independently, as Optuna's CmaEsSampler does with its independent sampler.
//
//   generation   lambda = 4 + floor(3 ln n) candidates x = m + sigma B D z, z ~ N(0, I); the start
//                m = the centre of [0, 1]^n, sigma = 1/6 (Optuna's default: a sixth of the narrowest
//                range), C = I. A candidate outside [0, 1]^n is drawn again, up to 100 times, then
//                clipped; one that breaks the space's constraints is drawn again too.
//   update       once lambda trials have completed (failed and pruned ones do not count, as in
//                Optuna), from the best mu of them: the mean, the evolution paths p_sigma and p_c,
//                the rank-one and rank-mu updates of C, and sigma by cumulative step-size adaptation.
//   integers     the margin of Hamano et al., "CMA-ES with Margin" (GECCO 2022): an integer
//                parameter's marginal spread is kept wide enough that a draw leaves the mean's integer
//                with probability at least alpha = 1 / (n lambda) (a diagonal factor A >= 1 on the
//                draws, x = m + sigma A B D z, whose steps the update takes back out), so that the
//                search does not freeze on an integer while its continuous spread shrinks.
//   restarts     IPOP (Auger and Hansen, CEC 2005): when the search has converged -- the spread below
//                1e-10 of the range in every coordinate, the generation's values or the best of the
//                last 10 + 30 n / lambda generations within 1e-12 of each other, or C's condition
//                number above 1e14 (the tutorial's Appendix B criteria) -- it starts again from a
//                random mean with lambda doubled.
//   failures     draws are restricted to where configurations probably run (the one feasibility
//                model, feasibility.h: likely_draw), as TPE's and GP's are.
//   resume       a fresh sampler takes in the study's completed trials in trial order, lambda at a
//                time, so a resumed study goes on from where the distribution was.
// With parallel slots a generation's candidates run side by side; the trials that complete are
// counted in the order the loop reports them.
#include <fmt/format.h>

#include <Eigen/Dense>
#include <algorithm>
#include <cmath>
#include <numbers>
#include <set>

#include "paratune/hpo/encoding.h"
#include "paratune/hpo/feasibility.h"
#include "paratune/hpo/sampler.h"
#include "paratune/hpo/tpe.h"  // uniform01, standard_normal
#include "paratune/spec/error.h"

namespace paratune::hpo {
namespace {

constexpr int kBoundRedraws = 100;


class CmaEsSampler final : public Sampler {
 public:
  CmaEsSampler(const Space& space, const SamplerOptions& options)
      : space_(space), encoding_(space), options_(options), rng_(options.seed) {
    for (std::size_t i = 0; i < space.parameters().size(); ++i) {
      const ParamSpec& p = space.parameters()[i];
      if (p.type != ParamType::kCategorical && p.when.empty()) dimensions_.push_back(i);
    }
    if (space.is_listed() || dimensions_.empty())
      throw Error(fmt::format("{}: cmaes searches float and int parameters that are always active, and this space "
                              "has none (grid, random, tpe or gp search it)",
                              space.source()));
    const auto n = static_cast<double>(dimensions_.size());
    start(4 + static_cast<int>(std::floor(3 * std::log(n))), Eigen::VectorXd::Constant(static_cast<Eigen::Index>(n), 0.5));
  }

  [[nodiscard]] std::string name() const override { return "cmaes"; }

  std::optional<Config> propose(const std::vector<TrialRecord>& trials) override {
    for (const TrialRecord& t : trials) {
      if (t.state == TrialRecord::State::kRunning || !seen_.insert(t.number).second) continue;
      if (t.state != TrialRecord::State::kCompleted || !t.value) continue;
      generation_.push_back({unit_point(t.config), as_loss(options_.direction, *t.value)});
      if (static_cast<int>(generation_.size()) == lambda_) update();
    }
    const Feasibility feasibility(trials, encoding_, options_.seed);
    double p_runs = 1;
    std::optional<Config> config =
        likely_draw([&] { return draw(); }, [&](const Config& c) { return feasibility.probability(c); }, p_runs);
    if (!config) config = draw();  // every draw known to fail: the distribution's own
    notes_ = {{"generation", generations_},
              {"restarts", restarts_},
              {"sigma", sigma_},
              {"completed_in_generation", generation_.size()},
              {"lambda", lambda_}};
    if (feasibility.active()) notes_["p_runs"] = p_runs;
    return config;
  }

  [[nodiscard]] nlohmann::ordered_json proposal_notes() const override { return notes_; }

  [[nodiscard]] nlohmann::ordered_json model_summary() const override {
    nlohmann::ordered_json mean = nlohmann::ordered_json::object();
    nlohmann::ordered_json spread = nlohmann::ordered_json::object();
    for (std::size_t d = 0; d < dimensions_.size(); ++d) {
      const std::size_t i = dimensions_[d];
      const auto k = static_cast<Eigen::Index>(d);
      mean[space_.parameters()[i].name] = space_.from_unit(i, mean_(k));
      spread[space_.parameters()[i].name] = sigma_ * margin_(k) * std::sqrt(cov_(k, k));  // in [0, 1] units
    }
    return {{"generations", generations_}, {"restarts", restarts_}, {"lambda", lambda_}, {"sigma", sigma_},
            {"mean", mean}, {"sd_unit", spread}};
  }

 private:
  struct Result {
    Eigen::VectorXd x;  // in [0, 1]^n
    double loss;
  };

  // A fresh search from `mean` with `lambda` candidates a generation: Table 1's defaults.
  void start(int lambda, Eigen::VectorXd mean) {
    const auto n = static_cast<double>(mean.size());
    lambda_ = lambda;
    const int mu = lambda_ / 2;
    // Eq. 49-53: w'_i = ln((lambda + 1) / 2) - ln i for every candidate; the best mu (positive)
    // sum to 1, the rest (negative: active CMA, which shrinks C along bad steps) are scaled by the
    // smallest of alpha_mu^-, alpha_mu_eff^- and alpha_posdef^-.
    Eigen::VectorXd raw(lambda_);
    for (int i = 0; i < lambda_; ++i) raw(i) = std::log((lambda_ + 1) / 2.0) - std::log(i + 1.0);
    const Eigen::VectorXd positive = raw.head(mu), negative = raw.tail(lambda_ - mu);
    mu_eff_ = positive.sum() * positive.sum() / positive.squaredNorm();
    const double mu_eff_minus = negative.sum() * negative.sum() / negative.squaredNorm();
    c_sigma_ = (mu_eff_ + 2) / (n + mu_eff_ + 5);
    d_sigma_ = 1 + 2 * std::max(0.0, std::sqrt((mu_eff_ - 1) / (n + 1)) - 1) + c_sigma_;
    c_c_ = (4 + mu_eff_ / n) / (n + 4 + 2 * mu_eff_ / n);
    c_1_ = 2 / ((n + 1.3) * (n + 1.3) + mu_eff_);
    c_mu_ = std::min(1 - c_1_, 2 * (mu_eff_ - 2 + 1 / mu_eff_) / ((n + 2) * (n + 2) + mu_eff_));
    const double alpha_minus = std::min({1 + c_1_ / c_mu_, 1 + 2 * mu_eff_minus / (mu_eff_ + 2),
                                         (1 - c_1_ - c_mu_) / (n * c_mu_)});
    weights_.resize(lambda_);
    weights_.head(mu) = positive / positive.sum();
    weights_.tail(lambda_ - mu) = negative * (alpha_minus / -negative.sum());
    chi_n_ = std::sqrt(n) * (1 - 1 / (4 * n) + 1 / (21 * n * n));  // E||N(0, I)||
    margin_alpha_ = 1 / (n * lambda_);
    mean_ = std::move(mean);
    sigma_ = 1.0 / 6;
    cov_ = basis_ = Eigen::MatrixXd::Identity(mean_.size(), mean_.size());
    scales_ = margin_ = Eigen::VectorXd::Ones(mean_.size());
    p_sigma_ = p_c_ = Eigen::VectorXd::Zero(mean_.size());
    generations_since_start_ = 0;
    best_history_.clear();
    apply_margin();
  }

  [[nodiscard]] Eigen::VectorXd unit_point(const Config& config) const {
    Eigen::VectorXd x(static_cast<Eigen::Index>(dimensions_.size()));
    for (std::size_t d = 0; d < dimensions_.size(); ++d)
      x(static_cast<Eigen::Index>(d)) = space_.to_unit(dimensions_[d], config.at(space_.parameters()[dimensions_[d]].name));
    return x;
  }

  // One candidate of the current distribution inside [0, 1]^n that satisfies the constraints, with
  // the other parameters from their prior.
  Config draw() {
    for (int attempt = 0; attempt <= kBoundRedraws; ++attempt) {
      Eigen::VectorXd z(mean_.size());
      for (Eigen::Index k = 0; k < z.size(); ++k) z(k) = tpe::standard_normal(rng_);
      Eigen::VectorXd x = mean_ + sigma_ * margin_.cwiseProduct(basis_ * scales_.cwiseProduct(z));
      const bool inside = (x.array() >= 0).all() && (x.array() <= 1).all();
      if (!inside && attempt < kBoundRedraws) continue;
      x = x.cwiseMax(0).cwiseMin(1);
      Config config = space_.sample(rng_);  // the categorical and conditional parameters
      for (std::size_t d = 0; d < dimensions_.size(); ++d)
        config[space_.parameters()[dimensions_[d]].name] = space_.from_unit(dimensions_[d], x(static_cast<Eigen::Index>(d)));
      if (space_.satisfies(config)) return config;
    }
    return space_.sample(rng_);  // the constraints keep rejecting the distribution's draws
  }

  // Appendix A, one generation's update from its lambda completed candidates; then the restart test.
  void update() {
    std::sort(generation_.begin(), generation_.end(), [](const Result& a, const Result& b) { return a.loss < b.loss; });
    const auto n = mean_.size();
    const auto mu = static_cast<Eigen::Index>(lambda_ / 2);
    Eigen::MatrixXd y(n, lambda_);  // every step, best first, in units of sigma, the margin taken out
    for (Eigen::Index i = 0; i < lambda_; ++i)
      y.col(i) = (generation_[static_cast<std::size_t>(i)].x - mean_).cwiseQuotient(margin_) / sigma_;
    const Eigen::VectorXd y_w = y.leftCols(mu) * weights_.head(mu);  // the mean moves by the best mu
    mean_ += sigma_ * margin_.cwiseProduct(y_w);  // c_m = 1
    const Eigen::MatrixXd inv_sqrt_c = basis_ * scales_.cwiseInverse().asDiagonal() * basis_.transpose();
    // Eq. 46's weights for C: a negative one scaled by n / ||C^-1/2 y_i||^2.
    Eigen::VectorXd c_weights = weights_;
    for (Eigen::Index i = mu; i < lambda_; ++i)
      c_weights(i) *= static_cast<double>(n) / std::max((inv_sqrt_c * y.col(i)).squaredNorm(), 1e-300);
    p_sigma_ = (1 - c_sigma_) * p_sigma_ + std::sqrt(c_sigma_ * (2 - c_sigma_) * mu_eff_) * inv_sqrt_c * y_w;
    ++generations_;
    ++generations_since_start_;
    const double p_sigma_norm = p_sigma_.norm();
    const bool h_sigma = p_sigma_norm / std::sqrt(1 - std::pow(1 - c_sigma_, 2.0 * generations_since_start_)) <
                         (1.4 + 2 / (static_cast<double>(n) + 1)) * chi_n_;
    p_c_ = (1 - c_c_) * p_c_ + (h_sigma ? std::sqrt(c_c_ * (2 - c_c_) * mu_eff_) : 0.0) * y_w;
    const double delta = (h_sigma ? 0.0 : 1.0) * c_c_ * (2 - c_c_);
    cov_ = (1 + c_1_ * delta - c_1_ - c_mu_ * weights_.sum()) * cov_ + c_1_ * p_c_ * p_c_.transpose() +
           c_mu_ * y * c_weights.asDiagonal() * y.transpose();
    sigma_ *= std::exp((c_sigma_ / d_sigma_) * (p_sigma_norm / chi_n_ - 1));
    // C = B D^2 B^T (symmetrised against rounding; eigenvalues floored so that D stays invertible).
    cov_ = (cov_ + cov_.transpose()) / 2;
    const Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> eigen(cov_);
    basis_ = eigen.eigenvectors();
    scales_ = eigen.eigenvalues().cwiseMax(1e-20).cwiseSqrt();
    apply_margin();
    const double generation_range = generation_.back().loss - generation_.front().loss;
    best_history_.push_back(generation_.front().loss);
    generation_.clear();
    if (converged(generation_range)) restart();
  }

  // Hamano et al. 2022: for each integer parameter, the margin factor that keeps P(a draw leaves the
  // mean's integer) >= alpha: the marginal sd sigma A_d sqrt(C_dd) at least the distance from the
  // mean to the nearer edge of its integer's cell over Phi^-1(1 - alpha) (one side; at the ends of
  // the range the inner edge, the only one there is).
  void apply_margin() {
    const double z = normal_quantile(1 - margin_alpha_);
    for (std::size_t d = 0; d < dimensions_.size(); ++d) {
      const std::size_t i = dimensions_[d];
      const auto k = static_cast<Eigen::Index>(d);
      margin_(k) = 1;
      const ParamSpec& p = space_.parameters()[i];
      if (p.type != ParamType::kInt || p.low == p.high) continue;
      mean_(k) = std::clamp(mean_(k), 0.0, 1.0);
      const double value = space_.from_unit(i, mean_(k)).get<double>();
      const double low_edge = space_.to_unit(i, value - 0.5), high_edge = space_.to_unit(i, value + 0.5);
      double distance = INFINITY;
      if (value > p.low) distance = std::min(distance, mean_(k) - low_edge);
      if (value < p.high) distance = std::min(distance, high_edge - mean_(k));
      const double sd = sigma_ * std::sqrt(cov_(k, k));
      if (sd > 0) margin_(k) = std::max(1.0, std::max(distance, 0.0) / z / sd);
    }
  }

  // Phi^-1 by bisection on erfc (alpha is small: far in the tail, where accuracy matters more than
  // speed; 100 halvings of [0, 40]).
  static double normal_quantile(double p) {
    double low = 0, high = 40;
    for (int i = 0; i < 100; ++i) {
      const double mid = (low + high) / 2;
      (0.5 * std::erfc(-mid / std::numbers::sqrt2) < p ? low : high) = mid;
    }
    return (low + high) / 2;
  }

  [[nodiscard]] bool converged(double generation_range) const {
    const double spread = sigma_ * (margin_.cwiseProduct(cov_.diagonal().cwiseSqrt())).maxCoeff();
    const auto window = static_cast<std::size_t>(10 + std::ceil(30.0 * static_cast<double>(mean_.size()) / lambda_));
    bool flat_history = false;
    if (best_history_.size() >= window) {
      const auto [lo, hi] = std::minmax_element(best_history_.end() - static_cast<std::ptrdiff_t>(window), best_history_.end());
      flat_history = *hi - *lo < 1e-12;
    }
    const double condition = (scales_.maxCoeff() / scales_.minCoeff()) * (scales_.maxCoeff() / scales_.minCoeff());
    return spread < 1e-10 || generation_range < 1e-12 || flat_history || condition > 1e14;
  }

  // IPOP: lambda doubled, a mean drawn uniformly in [0, 1]^n.
  void restart() {
    Eigen::VectorXd mean(mean_.size());
    for (Eigen::Index k = 0; k < mean.size(); ++k) mean(k) = tpe::uniform01(rng_);
    ++restarts_;
    start(2 * lambda_, std::move(mean));
  }

  const Space& space_;
  Encoding encoding_;
  SamplerOptions options_;
  std::mt19937_64 rng_;
  std::vector<std::size_t> dimensions_;  // the parameters CMA-ES searches
  int lambda_ = 0;
  Eigen::VectorXd weights_;
  double mu_eff_ = 0, c_sigma_ = 0, d_sigma_ = 0, c_c_ = 0, c_1_ = 0, c_mu_ = 0, chi_n_ = 0, margin_alpha_ = 0;
  Eigen::VectorXd mean_, p_sigma_, p_c_, scales_, margin_;
  Eigen::MatrixXd cov_, basis_;
  double sigma_ = 0;
  int generations_ = 0, generations_since_start_ = 0, restarts_ = 0;
  std::vector<double> best_history_;  // the best loss of each generation since the last start
  std::vector<Result> generation_;    // completed candidates not yet used in an update
  std::set<int> seen_;
  nlohmann::ordered_json notes_;
};

}  // namespace

std::unique_ptr<Sampler> make_cmaes_sampler(const Space& space, const SamplerOptions& options) {
  return std::make_unique<CmaEsSampler>(space, options);
}

}  // namespace paratune::hpo
