// Gaussian-process regression against closed forms: the Matérn 5/2 kernel against the general
// Matérn formula with a Bessel function, one observation, the likelihood's gradient against finite
// differences, batch = single prediction, and fitting that recovers a known prior mean.
#include "paratune/gp/gaussian_process.h"

#include <gtest/gtest.h>

#include <cmath>
#include <numbers>
#include <random>

namespace paratune::gp {
namespace {

Hyperparameters hyper(std::vector<double> lengthscales, double signal, double noise) {
  Hyperparameters h;
  h.lengthscales = Eigen::Map<Eigen::VectorXd>(lengthscales.data(), static_cast<Eigen::Index>(lengthscales.size()));
  h.signal_variance = signal;
  h.noise_variance = noise;
  return h;
}

TEST(Gp, Matern52IsTheGeneralMaternFormulaAtNuFiveHalves) {
  // 2^(1-nu) / Gamma(nu) (sqrt(2 nu) r)^nu K_nu(sqrt(2 nu) r)  (R&W Eq. 4.14), nu = 5/2.
  const double nu = 2.5;
  EXPECT_DOUBLE_EQ(matern52(0), 1.0);
  for (double r : {0.01, 0.1, 0.5, 1.0, 2.0, 5.0}) {
    const double z = std::sqrt(2 * nu) * r;
    const double general = std::pow(2.0, 1 - nu) / std::tgamma(nu) * std::pow(z, nu) * std::cyl_bessel_k(nu, z);
    EXPECT_NEAR(matern52(r), general, 1e-12) << r;
  }
  // ARD: each dimension scaled by its own lengthscale.
  const Hyperparameters h = hyper({0.5, 2.0}, 3.0, 0);
  Eigen::Vector2d a(0.1, 0.2), b(0.4, 1.0);
  EXPECT_NEAR(kernel(h, a, b), 3.0 * matern52(std::sqrt(0.36 + 0.16)), 1e-15);
}

TEST(Gp, OneObservationHasClosedFormPosteriorAndLikelihood) {
  const Hyperparameters h = hyper({0.3}, 2.0, 0.01);
  Eigen::MatrixXd x(1, 1);
  x << 0.2;
  const double y = 1.5, obs_noise = 0.04;
  const Posterior post(h, x, Eigen::VectorXd::Constant(1, y), Eigen::VectorXd::Constant(1, obs_noise));
  const double s = 2.0 + 0.01 + obs_noise;  // k(x,x) + noise floor + observation noise
  EXPECT_NEAR(post.log_marginal_likelihood(), -0.5 * y * y / s - 0.5 * std::log(s) - 0.5 * std::log(2 * std::numbers::pi),
              1e-12);
  Eigen::VectorXd at(1);
  at << 0.5;
  const double k = 2.0 * matern52(0.3 / 0.3);
  const Prediction p = post.predict(at);
  EXPECT_NEAR(p.mean, k * y / s, 1e-12);
  EXPECT_NEAR(p.variance, 2.0 - k * k / s, 1e-12);
  // Far away: back to the prior.
  at << 50;
  EXPECT_NEAR(post.predict(at).mean, 0, 1e-12);
  EXPECT_NEAR(post.predict(at).variance, 2.0, 1e-12);
}

struct Data {
  Eigen::MatrixXd x;
  Eigen::VectorXd y, noise;
};

Data smooth_data(int n, int p, unsigned seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(0, 1);
  Data d{Eigen::MatrixXd(n, p), Eigen::VectorXd(n), Eigen::VectorXd(n)};
  for (int i = 0; i < n; ++i) {
    for (int j = 0; j < p; ++j) d.x(i, j) = u(rng);
    d.y(i) = std::sin(6 * d.x(i, 0)) + (p > 1 ? 0.3 * d.x(i, 1) * d.x(i, 1) : 0);
    d.noise(i) = 1e-4 * (1 + i % 3);
  }
  return d;
}

TEST(Gp, LikelihoodGradientMatchesFiniteDifferences) {
  const Data d = smooth_data(12, 3, 1);
  const Hyperparameters h = hyper({0.3, 0.7, 2.0}, 1.3, 1e-3);
  const Eigen::VectorXd g = Posterior(h, d.x, d.y, d.noise).log_marginal_likelihood_gradient();
  auto lml = [&](int which, double delta) {
    Hyperparameters moved = h;
    if (which < 3) moved.lengthscales(which) *= std::exp(delta);
    else if (which == 3) moved.signal_variance *= std::exp(delta);
    else moved.noise_variance *= std::exp(delta);
    return Posterior(moved, d.x, d.y, d.noise).log_marginal_likelihood();
  };
  for (int which = 0; which < 5; ++which) {
    const double fd = (lml(which, 1e-5) - lml(which, -1e-5)) / 2e-5;
    EXPECT_NEAR(g(which), fd, 1e-5 * std::max(1.0, std::abs(fd))) << which;
  }
}

TEST(Gp, BatchPredictionEqualsSinglePredictionsAndInterpolates) {
  const Data d = smooth_data(15, 2, 2);
  const Posterior post(hyper({0.2, 0.5}, 1.0, 1e-8), d.x, d.y, Eigen::VectorXd::Zero(15));
  Eigen::VectorXd mean, variance;
  post.predict(d.x, mean, variance);
  for (int i = 0; i < 15; ++i) {
    const Prediction p = post.predict(d.x.row(i).transpose());
    EXPECT_NEAR(p.mean, mean(i), 1e-12);
    EXPECT_NEAR(p.variance, variance(i), 1e-12);
    EXPECT_NEAR(mean(i), d.y(i), 1e-4);  // nearly noise-free: through the data
    EXPECT_LT(variance(i), 1e-4);
  }
}

TEST(Gp, FitImprovesTheLikelihoodAndRecoversAKnownPriorMean) {
  // y = 3 + 2 x0 exactly: a mean theta0 + theta1 x0 explains everything.
  const int n = 20;
  Data d = smooth_data(n, 2, 3);
  for (int i = 0; i < n; ++i) d.y(i) = 3 + 2 * d.x(i, 0);
  MeanFunction mean;
  mean.initial = {0, 0};
  mean.lower = {-10, -10};
  mean.upper = {10, 10};
  mean.at_observations = [&](const std::vector<double>& t) {
    return Eigen::VectorXd((t[0] + t[1] * d.x.col(0).array()).matrix());
  };
  const Hyperparameters start = hyper({0.5, 0.5}, 1.0, 1e-3);
  const FitResult r = fit(d.x, d.y, d.noise, mean, start, FitOptions{.restarts = 3, .seed = 7});
  EXPECT_NEAR(r.mean_parameters[0], 3, 0.05);
  EXPECT_NEAR(r.mean_parameters[1], 2, 0.05);
  const double at_start =
      Posterior(start, d.x, d.y - mean.at_observations(mean.initial), d.noise).log_marginal_likelihood();
  EXPECT_GT(r.log_marginal_likelihood, at_start);
  EXPECT_GT(r.evaluations, 0);

  // Without a mean, on a function of x0 only: x1's lengthscale ends up longer (it matters less),
  // which is what tells a user which knobs matter (OPPA Table 5).
  const Data s = smooth_data(30, 2, 4);
  Eigen::VectorXd y0(30);
  for (int i = 0; i < 30; ++i) y0(i) = std::sin(6 * s.x(i, 0));
  const FitResult f = fit(s.x, y0, s.noise, MeanFunction{}, start, FitOptions{.restarts = 3, .seed = 1});
  EXPECT_GT(f.hyperparameters.lengthscales(1), 2 * f.hyperparameters.lengthscales(0));
}

}  // namespace
}  // namespace paratune::gp
