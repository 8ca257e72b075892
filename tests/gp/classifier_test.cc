// Gaussian-process classification (gp/classifier.h): one observation against the scalar Laplace
// equations solved here by bisection, the prior mean's rule of succession, a separable boundary, an
// irrelevant input found by ARD, and tied lengthscales.
#include "paratune/gp/classifier.h"

#include <gtest/gtest.h>

#include <cmath>
#include <numbers>

namespace paratune::gp {
namespace {

double phi(double z) { return std::exp(-0.5 * z * z) / std::sqrt(2 * std::numbers::pi); }
double cdf(double z) { return 0.5 * std::erfc(-z / std::numbers::sqrt2); }

Hyperparameters start(int dimensions) {
  Hyperparameters h;
  h.lengthscales = Eigen::VectorXd::Constant(dimensions, 0.5);
  h.signal_variance = 1;
  return h;
}

TEST(Classifier, OneObservationSolvesTheScalarLaplaceEquations) {
  // Hyperparameters pinned (bounds equal): lengthscale 0.3, signal variance s2 = 2. One feasible
  // observation (y = +1): prior mean m = Phi^-1(2/3). The mode g = f - m solves g = s2 r(m + g),
  // r = phi / Phi (R&W Eq. 3.13 with K = s2); then W = r^2 + z r, and at the observation
  // mean = m + g, var = s2 / (1 + W s2), P = Phi(mean / sqrt(1 + var)) (R&W Alg. 3.2, Sec. 3.9),
  // log q = -g^2 / (2 s2) + log Phi(m + g) - log(1 + W s2) / 2 (R&W Eq. 3.32).
  const double s2 = 2;
  ClassifierOptions o;
  o.min_lengthscale = o.max_lengthscale = 0.3;
  o.min_signal_variance = o.max_signal_variance = s2;
  Eigen::MatrixXd x(1, 1);
  x(0, 0) = 0.4;
  const Classifier c(x, {true}, start(1), o);

  double m = 0;  // Phi^-1(2/3) by bisection
  for (double lo = -5, hi = 5, k = 0; k < 200; ++k) {
    m = 0.5 * (lo + hi);
    (cdf(m) < 2.0 / 3 ? lo : hi) = m;
  }
  EXPECT_NEAR(c.prior_mean(), m, 1e-9);
  double g = 0;  // g - s2 r(m + g) is increasing in g
  for (double lo = 0, hi = 10, k = 0; k < 200; ++k) {
    g = 0.5 * (lo + hi);
    (g - s2 * phi(m + g) / cdf(m + g) < 0 ? lo : hi) = g;
  }
  const double z = m + g, r = phi(z) / cdf(z), w = r * r + z * r;
  const double var = s2 / (1 + w * s2);
  EXPECT_NEAR(c.probability(Eigen::VectorXd::Constant(1, 0.4)), cdf(z / std::sqrt(1 + var)), 1e-7);
  EXPECT_NEAR(c.log_marginal_likelihood(), -g * g / (2 * s2) + std::log(cdf(z)) - 0.5 * std::log(1 + w * s2), 1e-7);
  EXPECT_EQ(c.hyperparameters().lengthscales(0), 0.3);
}

TEST(Classifier, FarFromTheDataPIsTheShareThatRanSmoothed) {
  // Three that ran: the prior mean is Phi^-1((3 + 1) / (3 + 2)), Laplace's rule of succession.
  Eigen::MatrixXd x(3, 1);
  x << 0.0, 0.1, 0.2;
  const Classifier c(x, {true, true, true}, start(1));
  EXPECT_NEAR(cdf(c.prior_mean()), 0.8, 1e-9);
}

TEST(Classifier, LearnsASeparatingBoundary) {
  // Runs below 0.5, fails above, each point twice.
  Eigen::MatrixXd x(12, 1);
  std::vector<bool> ran;
  for (int i = 0; i < 12; ++i) {
    x(i, 0) = (i % 6) / 5.0;
    ran.push_back(x(i, 0) < 0.5);
  }
  const Classifier c(x, ran, start(1));
  const auto p = [&](double v) { return c.probability(Eigen::VectorXd::Constant(1, v)); };
  for (double v : {0.0, 0.1, 0.2, 0.3}) EXPECT_GT(p(v), 0.8) << v;
  for (double v : {0.7, 0.8, 0.9, 1.0}) EXPECT_LT(p(v), 0.2) << v;
  EXPECT_GT(p(0.4), p(0.5));  // falls across the boundary
  EXPECT_GT(p(0.5), p(0.6));
}

TEST(Classifier, FindsTheInputThatDecidesAndTiesLengthscales) {
  // Fails where x0 > 0.5 whatever x1 is.
  Eigen::MatrixXd x(16, 2);
  std::vector<bool> ran;
  for (int i = 0; i < 16; ++i) {
    x(i, 0) = (i % 4) / 3.0;
    x(i, 1) = (i / 4) / 3.0;
    ran.push_back(x(i, 0) < 0.5);
  }
  const Classifier c(x, ran, start(2));
  EXPECT_GT(c.hyperparameters().lengthscales(1), 2 * c.hyperparameters().lengthscales(0));
  EXPECT_LT(c.probability(Eigen::Vector2d(0.9, 0.5)), 0.2);
  EXPECT_GT(c.probability(Eigen::Vector2d(0.1, 0.5)), 0.8);
  const Eigen::VectorXd both = c.probabilities((Eigen::MatrixXd(2, 2) << 0.9, 0.5, 0.1, 0.5).finished());
  EXPECT_DOUBLE_EQ(both(0), c.probability(Eigen::Vector2d(0.9, 0.5)));

  ClassifierOptions tied;
  tied.tied = {0, 0};
  const Classifier t(x, ran, start(2), tied);
  EXPECT_EQ(t.hyperparameters().lengthscales(0), t.hyperparameters().lengthscales(1));
}

}  // namespace
}  // namespace paratune::gp
