// Gaussian-process binary classification: the probability that a configuration runs at all (issue
// 21 item 17: every model-based search weighs its acquisition by it). Knows nothing of training:
// inputs are points of [0,1]^p, labels are "feasible" or not.
//
// Model (Rasmussen & Williams 2006, "Gaussian Processes for Machine Learning", Ch. 3 — R&W below):
// a latent f ~ GP(m, k), k the Matérn 5/2 ARD kernel of gaussian_process.h, and the probit
// likelihood p(y | f) = Phi(y f) with y = +1 for a configuration that ran, -1 for one that failed
// (R&W Eq. 3.16 gives its derivatives). The posterior of f is approximated by Laplace's method: its
// mode by Newton's method (R&W Alg. 3.1, with step halving when a step does not increase the
// objective, as R&W Sec. 3.4.1 advises), predictions by R&W Alg. 3.2, and the probit averaged over
// the latent's Gaussian has a closed form (R&W Sec. 3.9):
//   P(feasible | x*) = integral Phi(f) N(f; mean*, var*) df = Phi(mean* / sqrt(1 + var*)).
// The prior mean m is fixed, not fitted: Phi^-1((ran + 1) / (n + 2)) (Laplace's rule of succession
// on the labels), so that far from every observation P(feasible) is the share of trials that ran,
// smoothed, rather than 1/2.
// Hyperparameters (lengthscales, signal variance) maximize Laplace's approximation of the log
// marginal likelihood (R&W Eq. 3.32):
//   log q(y | X, theta) = -1/2 a^T f_hat + sum_i log Phi(y_i (m + f_hat_i)) - sum_i log L_ii,
//   a = K^-1 f_hat, L L^T = I + W^1/2 K W^1/2, W = -d^2 log p / d f^2 at the mode,
// derivative-free (NLopt BOBYQA) from a given start and a few random ones. The signal variance is
// bounded above: with labels a surface separates perfectly (the usual case: a framework refuses a
// whole region) the likelihood grows without bound with it; a latent sd of 4 lets P(feasible) go
// down to Phi(-4) ~ 3e-5 and no further.
//
// Cost: each likelihood evaluation is a handful of Newton steps, each a Cholesky factor of an n x n
// matrix; a fit with the default options took 0.02 s at n = 30, 0.2-0.35 s at n = 100 and 1.5-2 s at
// n = 200 (3 and 10 inputs; Release build on a loaded 2-core machine). The searches fit it only once
// a trial failed.
//
// This is the classifier Gelbart, Snoek & Adams 2014 ("Bayesian Optimization with Unknown
// Constraints", UAI, Sec. 3-4) use for constraints observed only as "it worked or it did not"
// (they sample its hyperparameters; a maximum-likelihood fit is enough here).
#pragma once

#include <Eigen/Dense>
#include <cstdint>
#include <vector>

#include "paratune/gp/gaussian_process.h"

namespace paratune::gp {

struct ClassifierOptions {
  int restarts = 1;                 // random starts besides the given one
  std::uint64_t seed = 0;           // for the random starts
  double min_lengthscale = 0.02, max_lengthscale = 20;   // inputs live in [0,1]
  double min_signal_variance = 0.25, max_signal_variance = 16;  // latent sd in [0.5, 4]
  int max_evaluations = 120;        // marginal-likelihood evaluations per start
  // Lengthscales tied in groups: input dimension d takes group tied[d]'s (groups 0 .. G-1), e.g. the
  // one-hot columns of one categorical parameter share one. Empty: one per dimension. Fewer
  // hyperparameters are better identified from the handful of trials a study has.
  std::vector<int> tied;
};

class Classifier {
 public:
  // Fits on the rows of `x` labelled `feasible` (same length, at least one row); `start` is where
  // the hyperparameter search begins (a previous fit's, else e.g. lengthscales 0.5 and signal
  // variance 1; its noise_variance is ignored).
  Classifier(Eigen::MatrixXd x, std::vector<bool> feasible, const Hyperparameters& start,
             const ClassifierOptions& options = {});

  // P(feasible | x) for one point, and for every row of `x`.
  [[nodiscard]] double probability(const Eigen::VectorXd& x) const;
  [[nodiscard]] Eigen::VectorXd probabilities(const Eigen::MatrixXd& x) const;

  [[nodiscard]] const Hyperparameters& hyperparameters() const { return h_; }
  [[nodiscard]] double prior_mean() const { return mean_; }  // m, in latent units
  [[nodiscard]] double log_marginal_likelihood() const { return log_q_; }
  [[nodiscard]] int evaluations() const { return evaluations_; }
  [[nodiscard]] int size() const { return static_cast<int>(y_.size()); }

 private:
  Hyperparameters h_;
  Eigen::MatrixXd x_;
  Eigen::VectorXd y_;         // +1 / -1
  double mean_ = 0;
  Eigen::VectorXd gradient_;  // d log p(y | f) / d f at the mode: the predictive mean's weights (Alg. 3.2)
  Eigen::VectorXd sqrt_w_;    // W^1/2 at the mode
  Eigen::LLT<Eigen::MatrixXd> llt_;  // of B = I + W^1/2 K W^1/2
  double log_q_ = 0;
  int evaluations_ = 0;
};

}  // namespace paratune::gp
