#include "paratune/gp/gaussian_process.h"

#include <nlopt.hpp>

#include <cassert>
#include <cmath>
#include <numbers>
#include <random>

namespace paratune::gp {
namespace {

const double kSqrt5 = std::sqrt(5.0);

// Squared scaled distance sum_d ((a_d - b_d) / l_d)^2.
double scaled_distance_squared(const Eigen::VectorXd& lengthscales, const Eigen::VectorXd& a, const Eigen::VectorXd& b) {
  return ((a - b).array() / lengthscales.array()).square().sum();
}

}  // namespace

double matern52(double r) { return (1 + kSqrt5 * r + 5.0 / 3.0 * r * r) * std::exp(-kSqrt5 * r); }

double kernel(const Hyperparameters& h, const Eigen::VectorXd& a, const Eigen::VectorXd& b) {
  return h.signal_variance * matern52(std::sqrt(scaled_distance_squared(h.lengthscales, a, b)));
}

Eigen::MatrixXd covariance(const Hyperparameters& h, const Eigen::MatrixXd& x) {
  const Eigen::Index n = x.rows();
  Eigen::MatrixXd k(n, n);
  for (Eigen::Index i = 0; i < n; ++i) {
    k(i, i) = h.signal_variance;
    for (Eigen::Index j = 0; j < i; ++j) k(i, j) = k(j, i) = kernel(h, x.row(i).transpose(), x.row(j).transpose());
  }
  return k;
}

Posterior::Posterior(Hyperparameters h, Eigen::MatrixXd x, Eigen::VectorXd y, Eigen::VectorXd noise_variance)
    : h_(std::move(h)), x_(std::move(x)), y_(std::move(y)), noise_(std::move(noise_variance)) {
  assert(x_.rows() == y_.size() && y_.size() == noise_.size() && x_.cols() == h_.lengthscales.size());
  Eigen::MatrixXd k = covariance(h_, x_);
  k.diagonal() += noise_ + Eigen::VectorXd::Constant(noise_.size(), h_.noise_variance);
  llt_.compute(k);
  const double scale = k.size() > 0 ? k.diagonal().mean() : 1.0;
  for (double jitter = 1e-10 * scale; llt_.info() != Eigen::Success && jitter < scale; jitter *= 10) {
    k.diagonal().array() += jitter;
    llt_.compute(k);
  }
  alpha_ = llt_.solve(y_);
}

double Posterior::log_marginal_likelihood() const {
  const double n = static_cast<double>(y_.size());
  const Eigen::MatrixXd& l = llt_.matrixLLT();  // lower triangle holds L
  return -0.5 * y_.dot(alpha_) - l.diagonal().array().log().sum() - 0.5 * n * std::log(2 * std::numbers::pi);
}

Eigen::VectorXd Posterior::log_marginal_likelihood_gradient() const {
  const Eigen::Index n = x_.rows(), p = x_.cols();
  // W = alpha alpha^T - K^-1; d log p / d theta = 1/2 sum_ij W_ij dK_ij / d theta.
  const Eigen::MatrixXd w = alpha_ * alpha_.transpose() - llt_.solve(Eigen::MatrixXd::Identity(n, n));
  Eigen::VectorXd grad = Eigen::VectorXd::Zero(p + 2);
  for (Eigen::Index i = 0; i < n; ++i) {
    for (Eigen::Index j = 0; j < n; ++j) {
      const Eigen::ArrayXd scaled = (x_.row(i) - x_.row(j)).transpose().array() / h_.lengthscales.array();
      const double r = std::sqrt(scaled.square().sum());
      const double k = h_.signal_variance * matern52(r);
      // d k / d log l_d = sigma^2 (5/3) (1 + sqrt5 r) exp(-sqrt5 r) (delta_d / l_d)^2  (f'(r) dr/dlog l_d;
      // the 1/r of dr cancels with f'(r)'s r, so r = 0 is harmless).
      const double common = h_.signal_variance * 5.0 / 3.0 * (1 + kSqrt5 * r) * std::exp(-kSqrt5 * r);
      grad.head(p) += 0.5 * w(i, j) * common * scaled.square().matrix();
      grad(p) += 0.5 * w(i, j) * k;  // d k / d log sigma^2 = k
    }
    grad(p + 1) += 0.5 * w(i, i) * h_.noise_variance;  // d K_ii / d log noise = noise
  }
  return grad;
}

Prediction Posterior::predict(const Eigen::VectorXd& x) const {
  Eigen::VectorXd mean, variance;
  predict(Eigen::MatrixXd(x.transpose()), mean, variance);
  return {mean(0), variance(0)};
}

void Posterior::predict(const Eigen::MatrixXd& x, Eigen::VectorXd& mean, Eigen::VectorXd& variance) const {
  const Eigen::Index n = x_.rows(), m = x.rows();
  Eigen::MatrixXd k_star(n, m);  // k(x_i, candidate_j)
  for (Eigen::Index j = 0; j < m; ++j)
    for (Eigen::Index i = 0; i < n; ++i) k_star(i, j) = kernel(h_, x_.row(i).transpose(), x.row(j).transpose());
  mean = k_star.transpose() * alpha_;
  const Eigen::MatrixXd v = llt_.matrixL().solve(k_star);
  variance = (Eigen::VectorXd::Constant(m, h_.signal_variance) - v.colwise().squaredNorm().transpose()).cwiseMax(0.0);
}

namespace {

// The optimizer's vector: log l_1..log l_p, log sigma^2, [log noise], mean parameters.
struct Packing {
  int p = 0;
  bool fit_noise = true;
  std::size_t mean_count = 0;
  [[nodiscard]] std::size_t size() const { return static_cast<std::size_t>(p) + 1 + (fit_noise ? 1 : 0) + mean_count; }

  Hyperparameters hyper(const std::vector<double>& v, double fixed_noise) const {
    Hyperparameters h;
    h.lengthscales.resize(p);
    for (int d = 0; d < p; ++d) h.lengthscales(d) = std::exp(v[static_cast<std::size_t>(d)]);
    h.signal_variance = std::exp(v[static_cast<std::size_t>(p)]);
    h.noise_variance = fit_noise ? std::exp(v[static_cast<std::size_t>(p) + 1]) : fixed_noise;
    return h;
  }
  std::vector<double> mean(const std::vector<double>& v) const {
    return {v.end() - static_cast<std::ptrdiff_t>(mean_count), v.end()};
  }
};

struct LikelihoodObjective {
  const Eigen::MatrixXd& x;
  const Eigen::VectorXd& y;
  const Eigen::VectorXd& noise;
  const MeanFunction& mean;
  Packing packing;
  double fixed_noise;
  int evaluations = 0;

  double operator()(const std::vector<double>& v, std::vector<double>& grad) {
    ++evaluations;
    const std::vector<double> theta = packing.mean(v);
    const Eigen::VectorXd prior = mean.at_observations ? mean.at_observations(theta) : Eigen::VectorXd::Zero(y.size());
    const Posterior post(packing.hyper(v, fixed_noise), x, y - prior, noise);
    const double value = post.log_marginal_likelihood();
    if (!grad.empty()) {
      const Eigen::VectorXd g = post.log_marginal_likelihood_gradient();
      const int p = packing.p;
      for (int d = 0; d <= p; ++d) grad[static_cast<std::size_t>(d)] = g(d);
      if (packing.fit_noise) grad[static_cast<std::size_t>(p) + 1] = g(p + 1);
      // d log p / d theta_m = alpha^T d prior / d theta_m (the residual is y - prior).
      const std::size_t first = v.size() - packing.mean_count;
      for (std::size_t m = 0; m < packing.mean_count; ++m) {
        std::vector<double> up = theta, down = theta;
        const double step = 1e-6 * std::max(1.0, std::abs(theta[m]));
        up[m] += step;
        down[m] -= step;
        const Eigen::VectorXd d_prior = (mean.at_observations(up) - mean.at_observations(down)) / (2 * step);
        grad[first + m] = post.alpha().dot(d_prior);
      }
    }
    return std::isfinite(value) ? value : -1e300;
  }
};

}  // namespace

FitResult fit(const Eigen::MatrixXd& x, const Eigen::VectorXd& y, const Eigen::VectorXd& noise_variance,
              const MeanFunction& mean, const Hyperparameters& start, const FitOptions& options) {
  Packing packing{static_cast<int>(x.cols()), options.fit_noise, mean.initial.size()};
  LikelihoodObjective objective{x, y, noise_variance, mean, packing, start.noise_variance};
  // Bounds in log space; the signal variance relative to the spread of the data around the start mean.
  const Eigen::VectorXd start_prior =
      mean.at_observations ? mean.at_observations(mean.initial) : Eigen::VectorXd::Zero(y.size());
  const Eigen::VectorXd residual = y - start_prior;
  const double spread = std::max(residual.squaredNorm() / std::max<Eigen::Index>(1, y.size()), 1e-12);
  std::vector<double> lower, upper, x0;
  for (int d = 0; d < packing.p; ++d) {
    lower.push_back(std::log(options.min_lengthscale));
    upper.push_back(std::log(options.max_lengthscale));
    x0.push_back(std::log(std::clamp(start.lengthscales(d), options.min_lengthscale, options.max_lengthscale)));
  }
  lower.push_back(std::log(spread * 1e-4));
  upper.push_back(std::log(spread * 1e2));
  x0.push_back(std::clamp(std::log(start.signal_variance), lower.back(), upper.back()));
  if (options.fit_noise) {
    lower.push_back(std::log(spread * 1e-8));
    upper.push_back(std::log(spread));
    x0.push_back(std::clamp(std::log(start.noise_variance), lower.back(), upper.back()));
  }
  for (std::size_t m = 0; m < mean.initial.size(); ++m) {
    lower.push_back(mean.lower[m]);
    upper.push_back(mean.upper[m]);
    x0.push_back(mean.initial[m]);
  }

  std::mt19937_64 rng(options.seed);
  std::vector<double> best_v = x0;
  std::vector<double> no_grad;
  double best = objective(x0, no_grad);
  for (int attempt = 0; attempt <= options.restarts; ++attempt) {
    std::vector<double> v = x0;
    if (attempt > 0)  // a random start, uniform in the (log) box
      for (std::size_t i = 0; i < v.size(); ++i)
        v[i] = lower[i] + (upper[i] - lower[i]) * std::uniform_real_distribution<double>(0, 1)(rng);
    nlopt::opt optimizer(nlopt::LD_LBFGS, static_cast<unsigned>(v.size()));
    optimizer.set_lower_bounds(lower);
    optimizer.set_upper_bounds(upper);
    optimizer.set_max_objective(
        [](const std::vector<double>& z, std::vector<double>& g, void* data) {
          return (*static_cast<LikelihoodObjective*>(data))(z, g);
        },
        &objective);
    optimizer.set_maxeval(options.max_evaluations);
    optimizer.set_ftol_rel(1e-9);
    double value = -HUGE_VAL;
    try {
      optimizer.optimize(v, value);
    } catch (const std::exception&) {
      // NLopt gives up on round-off or a failed line search: keep whatever point it reached.
      value = objective(v, no_grad);
    }
    if (value > best) {
      best = value;
      best_v = v;
    }
  }
  FitResult result;
  result.hyperparameters = packing.hyper(best_v, start.noise_variance);
  result.mean_parameters = packing.mean(best_v);
  result.log_marginal_likelihood = best;
  result.evaluations = objective.evaluations;
  return result;
}

}  // namespace paratune::gp
