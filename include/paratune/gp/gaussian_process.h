// Gaussian-process regression for the tuner's surrogates. Knows nothing of training: inputs are
// points of [0,1]^p (the tuner embeds configurations, OPPA App. D.3), outputs are numbers whose
// prior mean the caller supplies.
//
// Sources: Rasmussen & Williams, "Gaussian Processes for Machine Learning" (2006) — R&W below —
// Alg. 2.1 (prediction and log marginal likelihood through a Cholesky factor, never an explicit
// inverse), Eq. 4.17 (Matérn 5/2), Eq. 5.9 (likelihood gradient); OPPA
// (data/papers/README.md#oppa-parallel-config-bayesian-optimization) Eq. 22-25 (ARD distance, posterior with
// per-observation noise) and Eq. 23 (hyperparameters by maximum marginal likelihood).
#pragma once

#include <Eigen/Dense>
#include <functional>
#include <vector>

namespace paratune::gp {

// Matérn nu = 5/2 correlation at scaled distance r >= 0 (R&W Eq. 4.17):
//   f(r) = (1 + sqrt(5) r + 5 r^2 / 3) exp(-sqrt(5) r).
double matern52(double r);

struct Hyperparameters {
  Eigen::VectorXd lengthscales;  // l_d > 0, one per input dimension (ARD)
  double signal_variance = 1;    // sigma_k^2
  double noise_variance = 1e-6;  // added to every observation's own noise variance (a floor; lambda of Eq. 26)
};

// k(a, b) = sigma_k^2 f(r), r = sqrt(sum_d ((a_d - b_d) / l_d)^2)  (OPPA Eq. 22 under the square
// root, as the Matérn form requires).
double kernel(const Hyperparameters& h, const Eigen::VectorXd& a, const Eigen::VectorXd& b);
// The n x n matrix of kernel() over the rows of x (no noise on the diagonal).
Eigen::MatrixXd covariance(const Hyperparameters& h, const Eigen::MatrixXd& x);

struct Prediction {
  double mean = 0;      // of the residual (add the prior mean back)
  double variance = 0;  // of the latent function, without observation noise
};

// The posterior given observations y (residuals: measurement minus prior mean) at inputs x (one
// row each) with per-observation noise variances (OPPA App. F.1: the measured throughput's
// variance of the mean).
class Posterior {
 public:
  // Sizes must agree (assert). If K + noise is not numerically positive definite, jitter is added to
  // its diagonal (1e-10 x its mean diagonal, growing tenfold) until the Cholesky factor exists.
  Posterior(Hyperparameters h, Eigen::MatrixXd x, Eigen::VectorXd y, Eigen::VectorXd noise_variance);

  // log p(y | x) = -1/2 y^T alpha - sum_i log L_ii - n/2 log(2 pi)  (R&W Alg. 2.1).
  [[nodiscard]] double log_marginal_likelihood() const;
  // d log p / d(log l_1 .. log l_p, log sigma_k^2, log noise_variance): 1/2 tr((alpha alpha^T - K^-1) dK)
  // (R&W Eq. 5.9).
  [[nodiscard]] Eigen::VectorXd log_marginal_likelihood_gradient() const;
  // alpha = K^-1 y: d log p / d y = -alpha, so a prior mean's parameters get their gradient from it.
  [[nodiscard]] const Eigen::VectorXd& alpha() const { return alpha_; }

  // mean = k*^T alpha, variance = k(x,x) - v^T v with v = L^-1 k*  (R&W Alg. 2.1, OPPA Eq. 24-25).
  [[nodiscard]] Prediction predict(const Eigen::VectorXd& x) const;
  // The same for every row of `x` at once (one triangular solve for all: for acquisitions over
  // thousands of candidates).
  void predict(const Eigen::MatrixXd& x, Eigen::VectorXd& mean, Eigen::VectorXd& variance) const;

  [[nodiscard]] const Hyperparameters& hyperparameters() const { return h_; }
  [[nodiscard]] int size() const { return static_cast<int>(y_.size()); }

 private:
  Hyperparameters h_;
  Eigen::MatrixXd x_;
  Eigen::VectorXd y_, noise_;
  Eigen::LLT<Eigen::MatrixXd> llt_;
  Eigen::VectorXd alpha_;
};

// A prior mean with parameters fitted together with the kernel (OPPA Eq. 23: theta_R, theta_M).
struct MeanFunction {
  std::vector<double> initial, lower, upper;  // the parameters' start and bounds (may be empty: a zero mean)
  // The prior mean at each observation for parameters theta.
  std::function<Eigen::VectorXd(const std::vector<double>& theta)> at_observations;
};

struct FitOptions {
  int restarts = 4;             // random starts besides the given one
  unsigned long long seed = 0;  // for the random starts
  double min_lengthscale = 0.02, max_lengthscale = 20;  // inputs live in [0,1]
  bool fit_noise = true;        // fit the noise floor too (else keep the given one)
  int max_evaluations = 300;    // per start
};

struct FitResult {
  Hyperparameters hyperparameters;
  std::vector<double> mean_parameters;
  double log_marginal_likelihood = 0;
  int evaluations = 0;
};

// Maximizes the log marginal likelihood over the kernel's log-hyperparameters and the mean's
// parameters (L-BFGS, NLopt, from `start` and `options.restarts` random points; the best wins).
// Kernel gradients are analytic (R&W Eq. 5.9); the mean's by central differences of
// at_observations chained with -alpha.
FitResult fit(const Eigen::MatrixXd& x, const Eigen::VectorXd& y, const Eigen::VectorXd& noise_variance,
              const MeanFunction& mean, const Hyperparameters& start, const FitOptions& options = {});

}  // namespace paratune::gp
