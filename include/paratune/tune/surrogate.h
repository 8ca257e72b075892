// What the Bayesian search (tune/bayes.h) knows about a configuration before it is trialed: its
// embedding in [0,1]^p for the GP kernel, and the prior beliefs of its step time and peak memory
// (OPPA, data/papers/README.md#oppa-parallel-config-bayesian-optimization, Sec. 4.1 and App. D).
//
// Both priors are linear in positive coefficients theta over fixed per-point features:
//   step time   T(H; theta) = sum_k theta_k phi_k(H),   throughput prior R(H) = 1 / T(H)  (Eq. 20)
//   peak memory M(H; theta) = sum_k theta_k psi_k(H)                                      (Eq. 21)
// so the features are computed once per study for every valid point and a prior is a matrix-vector
// product during the GP fit (Eq. 23 fits theta with the kernel) and the acquisition.
//
// - cost_model_prior: paratune's own cost model (cost/estimate.h) on each point. The features are
//   the model's time components (compute incl. bubble and optimizer, TP, DP + ZeRO-3, PP, CP + EP
//   communication, fixed overhead) and memory components (weights + gradients + optimizer states,
//   activations, other), so theta = 1 is the calibrated model and a learned theta_k is a correction
//   of the matching Calibration coefficient: theta_compute = 1.2 is a GEMM efficiency 1/1.2 times
//   the calibrated one, theta_tp = 2 a TP bandwidth efficiency half of it, and so on.
// - simple_prior: OPPA's forms (App. D.1-D.2) for spaces without a model: compute
//   (mb + (pp-1)/mc) / n_gpus (Eq. 10), ring all-reduce volumes for DP ((dp-1)/dp / (tp pp), Eq. 11-12)
//   and TP ((tp-1)/tp x mb, Eq. 16), P2P transfers 2 mb (pp-1) (Eq. 18), a constant; memory
//   1/(pp tp), 1/(n_gpus mb) and a constant (Eq. 21). Its scale is unknown (seconds on which GPU?),
//   so its coefficients are relative: the search scales them by the first observations.
//
// Parameters are recognized by name: the keys of paratune's --config (dp tp pp vpp cp ep etp mbs
// sp zero op recompute schedule overlap_grad_reduce overlap_param_gather tp_comm_overlap
// overlap_p2p ...) and OPPA's names: mb | microbatches (micro-batches per replica: mbs =
// global_batch / (dp x mb)), mc | chunks (model chunks: vpp), ckpt | checkpointing (true: full
// recompute). Any other parameter (bucket sizes, ...) enters only the kernel.
#pragma once

#include <Eigen/Dense>
#include <initializer_list>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "paratune/cost/calibration.h"
#include "paratune/cost/stage_model.h"
#include "paratune/spec/hardware.h"
#include "paratune/spec/model.h"
#include "paratune/spec/parallel.h"
#include "paratune/spec/training.h"
#include "paratune/tune/space.h"

namespace paratune::tune {

// OPPA App. D.3: each parameter scaled to [0,1] over its values. Numbers spanning a factor >= 4 (all
// positive) on a log scale (so 1, 2, 4, 8 are evenly spaced), other numbers linearly, booleans 0/1,
// strings by their position in the declared list; a parameter with one value sits at 0.5.
class Embedding {
 public:
  explicit Embedding(const SearchSpace& space);
  [[nodiscard]] int dimensions() const { return static_cast<int>(coordinates_.size()); }
  [[nodiscard]] Eigen::VectorXd operator()(const Point& point) const;
  [[nodiscard]] Eigen::MatrixXd rows(const std::vector<Point>& points) const;  // one row per point

 private:
  std::vector<std::vector<double>> coordinates_;  // per parameter, per value index
};

// One linear prior (time or memory): a row of features per valid point, and the coefficients'
// names, start and bounds.
struct LinearTerms {
  std::vector<std::string> names;
  Eigen::MatrixXd features;  // rows: the space's valid points in enumerate() order
  std::vector<double> initial, lower, upper;
  [[nodiscard]] double value(Eigen::Index row, const std::vector<double>& theta) const;
};

struct Prior {
  std::string name;     // "cost model" or "OPPA App. D"
  bool absolute = true; // theta = 1 predicts seconds and bytes (else the search scales it first)
  LinearTerms time, memory;
  std::vector<std::string> kernel_only;  // parameters the prior does not read
  int unmapped_points = 0;               // points the cost model rejected (their features: the median row)
};

// The paratune configuration of a point (recognized parameters as above, the rest ignored).
// Throws Error if a value does not make a configuration (e.g. mb not dividing the batch).
ParallelConfig parallel_config_of(const SearchSpace& space, const Point& point, const TrainingSpec& training);
// The value of the first of `names` the space has, as a number (booleans 0/1), or `fallback` when it
// has none of them or the value is a string.
double parameter_number(const SearchSpace& space, const Point& point, std::initializer_list<const char*> names,
                        double fallback);
// The names parallel_config_of reads.
bool is_config_parameter(const std::string& name);

// `options`: the cost model's (a hardware profile among them).
Prior cost_model_prior(const SearchSpace& space, const ModelSpec& model, const ClusterSpec& cluster,
                       const TrainingSpec& training, const Calibration& calibration, const EstimateOptions& options = {});
Prior simple_prior(const SearchSpace& space);

// Where a point sits in space.enumerate() (the row of its features).
class PointIndex {
 public:
  explicit PointIndex(const SearchSpace& space);
  [[nodiscard]] std::optional<Eigen::Index> find(const Point& point) const;

 private:
  std::map<Point, Eigen::Index> rows_;
};

}  // namespace paratune::tune
