// Gaussian-process classification by Laplace's method (gp/classifier.h has the model and sources).
#include "paratune/gp/classifier.h"

#include <nlopt.hpp>

#include <algorithm>
#include <cassert>
#include <cmath>
#include <numbers>
#include <random>

namespace paratune::gp {
namespace {

double normal_cdf(double z) { return 0.5 * std::erfc(-z / std::numbers::sqrt2); }

// Phi^-1(p) for p in (0, 1), by bisection on normal_cdf (called once per fit: speed is no concern).
double normal_quantile(double p) {
  double lo = -10, hi = 10;
  for (int i = 0; i < 100; ++i) {
    const double mid = 0.5 * (lo + hi);
    (normal_cdf(mid) < p ? lo : hi) = mid;
  }
  return 0.5 * (lo + hi);
}

// Below this z, Phi(z) and phi(z) / Phi(z) come from their asymptotic series (erfc underflows
// near z = -37): Phi(z) ~ phi(z) / |z| (1 - 1/z^2), so log Phi(z) ~ -z^2/2 - log(sqrt(2 pi) |z|)
// and phi(z) / Phi(z) ~ |z| + 1/|z|.
constexpr double kTailZ = -30;

double log_normal_cdf(double z) {
  if (z >= kTailZ) return std::log(normal_cdf(z));
  return -0.5 * z * z - std::log(std::sqrt(2 * std::numbers::pi) * -z) + std::log1p(-1 / (z * z));
}

// phi(z) / Phi(z) (the inverse Mills ratio).
double inverse_mills(double z) {
  if (z >= kTailZ) return std::exp(-0.5 * z * z) / std::sqrt(2 * std::numbers::pi) / normal_cdf(z);
  return -z - 1 / z;
}


// Laplace's approximation at given hyperparameters: the mode and what predictions need.
struct Laplace {
  Eigen::VectorXd a;  // K^-1 (f_hat - m): at the mode, the gradient below (R&W Eq. 3.17)
  Eigen::VectorXd gradient, sqrt_w;
  Eigen::LLT<Eigen::MatrixXd> llt;
  double log_q = -HUGE_VAL;
};

// Probit log-likelihood terms at latent f (R&W Eq. 3.16, z = y f): log Phi(z), its first
// derivative y r and minus its second r^2 + z r, r = phi(z) / Phi(z).
struct Terms {
  double log_likelihood = 0;
  Eigen::VectorXd gradient, w;
};
Terms terms(const Eigen::VectorXd& y, const Eigen::VectorXd& f) {
  Terms t;
  t.gradient.resize(f.size());
  t.w.resize(f.size());
  for (Eigen::Index i = 0; i < f.size(); ++i) {
    const double z = y(i) * f(i);
    const double r = inverse_mills(z);
    t.log_likelihood += log_normal_cdf(z);
    t.gradient(i) = y(i) * r;
    t.w(i) = std::max(r * r + z * r, 1e-12);  // > 0: the probit is log-concave
  }
  return t;
}

// R&W Alg. 3.1 on g = f - m, g ~ GP(0, K), with step halving, from g = K a_start (a previous
// mode's a: it changes little with the hyperparameters, so Newton needs fewer steps; empty: g = 0).
Laplace laplace(const Eigen::MatrixXd& k, const Eigen::VectorXd& y, double mean, const Eigen::VectorXd& a_start) {
  const Eigen::Index n = y.size();
  Eigen::VectorXd a = a_start.size() == n ? a_start : Eigen::VectorXd::Zero(n);
  Eigen::VectorXd g = k * a;
  const auto psi = [&](const Eigen::VectorXd& a_, const Eigen::VectorXd& g_) {
    // The objective Newton's method climbs: log p(y | f) - 1/2 g^T K^-1 g, with K^-1 g = a.
    double s = -0.5 * a_.dot(g_);
    for (Eigen::Index i = 0; i < n; ++i) s += log_normal_cdf(y(i) * (mean + g_(i)));
    return s;
  };
  double value = psi(a, g);
  if (!std::isfinite(value)) {  // a start too far for these hyperparameters: from the prior mean
    a.setZero();
    g.setZero();
    value = psi(a, g);
  }
  Laplace out;
  for (int iteration = 0; iteration < 100; ++iteration) {
    const Terms t = terms(y, (g.array() + mean).matrix());
    const Eigen::VectorXd sw = t.w.cwiseSqrt();
    Eigen::MatrixXd b_matrix = (sw * sw.transpose()).cwiseProduct(k);
    b_matrix.diagonal().array() += 1;
    const Eigen::LLT<Eigen::MatrixXd> llt(b_matrix);
    const Eigen::VectorXd b = t.w.cwiseProduct(g) + t.gradient;
    const Eigen::VectorXd c = llt.matrixL().solve(sw.cwiseProduct(k * b));
    Eigen::VectorXd a_new = b - sw.cwiseProduct(llt.matrixU().solve(c));
    Eigen::VectorXd g_new = k * a_new;
    double value_new = psi(a_new, g_new);
    for (int halving = 0; halving < 30 && !(value_new >= value); ++halving) {
      a_new = 0.5 * (a + a_new);
      g_new = k * a_new;
      value_new = psi(a_new, g_new);
    }
    if (!(value_new >= value)) break;  // no step improves it: at the mode up to round-off
    const bool done = value_new - value < 1e-10 * (1 + std::abs(value));
    a = std::move(a_new);
    g = std::move(g_new);
    value = value_new;
    if (done) break;
  }
  const Terms t = terms(y, (g.array() + mean).matrix());
  out.sqrt_w = t.w.cwiseSqrt();
  Eigen::MatrixXd b_matrix = (out.sqrt_w * out.sqrt_w.transpose()).cwiseProduct(k);
  b_matrix.diagonal().array() += 1;
  out.llt.compute(b_matrix);
  out.gradient = t.gradient;
  out.a = a;
  const Eigen::MatrixXd& l = out.llt.matrixLLT();
  out.log_q = value - l.diagonal().array().log().sum();  // Eq. 3.32: log|B|/2 = sum log L_ii
  if (!std::isfinite(out.log_q)) out.log_q = -HUGE_VAL;
  return out;
}

// The optimizer's vector: log lengthscale of each group, log signal variance. `tied[d]` is input
// dimension d's group.
Hyperparameters unpack(const std::vector<double>& v, const std::vector<int>& tied) {
  Hyperparameters h;
  const auto p = static_cast<Eigen::Index>(tied.size());
  h.lengthscales.resize(p);
  for (Eigen::Index d = 0; d < p; ++d) h.lengthscales(d) = std::exp(v[static_cast<std::size_t>(tied[static_cast<std::size_t>(d)])]);
  h.signal_variance = std::exp(v.back());
  h.noise_variance = 0;
  return h;
}

struct LaplaceObjective {
  const Eigen::MatrixXd& x;
  const Eigen::VectorXd& y;
  const std::vector<int>& tied;
  double mean;
  int evaluations = 0;
  Eigen::VectorXd last_a;  // the previous evaluation's mode, where the next one's Newton starts
  double operator()(const std::vector<double>& v) {
    ++evaluations;
    Laplace l = laplace(covariance(unpack(v, tied), x), y, mean, last_a);
    last_a = std::move(l.a);
    return l.log_q;
  }
};

}  // namespace

Classifier::Classifier(Eigen::MatrixXd x, std::vector<bool> feasible, const Hyperparameters& start,
                       const ClassifierOptions& options)
    : x_(std::move(x)) {
  assert(x_.rows() == static_cast<Eigen::Index>(feasible.size()) && !feasible.empty());
  assert(start.lengthscales.size() == x_.cols());
  const auto n = static_cast<Eigen::Index>(feasible.size());
  y_.resize(n);
  double ran = 0;
  for (Eigen::Index i = 0; i < n; ++i) {
    y_(i) = feasible[static_cast<std::size_t>(i)] ? 1 : -1;
    ran += feasible[static_cast<std::size_t>(i)] ? 1 : 0;
  }
  mean_ = normal_quantile((ran + 1) / (static_cast<double>(n) + 2));

  std::vector<int> tied = options.tied;
  if (tied.empty())
    for (Eigen::Index d = 0; d < x_.cols(); ++d) tied.push_back(static_cast<int>(d));
  assert(static_cast<Eigen::Index>(tied.size()) == x_.cols());
  const int groups = tied.empty() ? 0 : *std::max_element(tied.begin(), tied.end()) + 1;
  std::vector<double> lower, upper, x0;
  for (int g = 0; g < groups; ++g) {
    // A group starts at its first dimension's start lengthscale.
    const auto first = static_cast<Eigen::Index>(std::find(tied.begin(), tied.end(), g) - tied.begin());
    lower.push_back(std::log(options.min_lengthscale));
    upper.push_back(std::log(options.max_lengthscale));
    x0.push_back(std::clamp(std::log(start.lengthscales(first)), lower.back(), upper.back()));
  }
  lower.push_back(std::log(options.min_signal_variance));
  upper.push_back(std::log(options.max_signal_variance));
  x0.push_back(std::clamp(std::log(start.signal_variance), lower.back(), upper.back()));

  LaplaceObjective objective{x_, y_, tied, mean_, 0, {}};
  std::vector<double> best_v = x0;
  double best = objective(x0);
  std::mt19937_64 rng(options.seed);
  for (int attempt = 0; attempt <= options.restarts; ++attempt) {
    std::vector<double> v = x0;
    if (attempt > 0)  // a random start, uniform in the (log) box; raw bits, the same on every platform
      for (std::size_t i = 0; i < v.size(); ++i)
        v[i] = lower[i] + (upper[i] - lower[i]) * static_cast<double>(rng() >> 11) * 0x1.0p-53;
    nlopt::opt optimizer(nlopt::LN_BOBYQA, static_cast<unsigned>(v.size()));
    optimizer.set_lower_bounds(lower);
    optimizer.set_upper_bounds(upper);
    optimizer.set_max_objective(
        [](const std::vector<double>& z, std::vector<double>&, void* data) { return (*static_cast<LaplaceObjective*>(data))(z); },
        &objective);
    optimizer.set_maxeval(options.max_evaluations);
    optimizer.set_ftol_abs(1e-4);
    double value = -HUGE_VAL;
    try {
      optimizer.optimize(v, value);
    } catch (const std::exception&) {
      value = objective(v);  // NLopt gave up on round-off: keep the point it reached
    }
    if (value > best) {
      best = value;
      best_v = v;
    }
  }
  evaluations_ = objective.evaluations;
  h_ = unpack(best_v, tied);
  Laplace fitted = laplace(covariance(h_, x_), y_, mean_, Eigen::VectorXd());
  gradient_ = std::move(fitted.gradient);
  sqrt_w_ = std::move(fitted.sqrt_w);
  llt_ = std::move(fitted.llt);
  log_q_ = fitted.log_q;
}

Eigen::VectorXd Classifier::probabilities(const Eigen::MatrixXd& x) const {
  // R&W Alg. 3.2: mean* = m + k*^T grad log p(y | f_hat), var* = k(x*, x*) - v^T v, v = L \ (W^1/2 k*).
  const Eigen::Index n = x_.rows(), m = x.rows();
  Eigen::MatrixXd k_star(n, m);
  for (Eigen::Index j = 0; j < m; ++j)
    for (Eigen::Index i = 0; i < n; ++i) k_star(i, j) = kernel(h_, x_.row(i).transpose(), x.row(j).transpose());
  const Eigen::VectorXd mean = (k_star.transpose() * gradient_).array() + mean_;
  const Eigen::MatrixXd v = llt_.matrixL().solve(sqrt_w_.asDiagonal() * k_star);
  const Eigen::VectorXd variance =
      (Eigen::VectorXd::Constant(m, h_.signal_variance) - v.colwise().squaredNorm().transpose()).cwiseMax(0.0);
  Eigen::VectorXd p(m);
  for (Eigen::Index j = 0; j < m; ++j) p(j) = normal_cdf(mean(j) / std::sqrt(1 + variance(j)));
  return p;
}

double Classifier::probability(const Eigen::VectorXd& x) const {
  return probabilities(Eigen::MatrixXd(x.transpose()))(0);
}

}  // namespace paratune::gp
