// Embedding and priors of the Bayesian search (tune/surrogate.h).
#include "paratune/tune/surrogate.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <set>

#include "paratune/cost/estimate.h"
#include "paratune/spec/error.h"

namespace paratune::tune {
namespace {

// OPPA's names for what paratune's --config calls otherwise.
const std::set<std::string, std::less<>> kMicrobatchNames{"mb", "microbatches"};
const std::set<std::string, std::less<>> kChunkNames{"mc", "chunks"};
const std::set<std::string, std::less<>> kCheckpointNames{"ckpt", "checkpointing"};

bool config_key(const std::string& name) {
  static const std::set<std::string, std::less<>> keys{
      "dp",       "tp",        "pp",        "vpp", "cp",       "ep",       "etp",       "mbs",
      "sp",       "zero",      "op",        "recompute",       "schedule", "grad_sync", "overlap_grad_reduce",
      "overlap_param_gather", "tp_comm_overlap", "overlap_p2p", "sequence_parallel"};
  return keys.contains(name);
}

// The median of each column: the features of points the cost model cannot evaluate.
Eigen::RowVectorXd median_row(const Eigen::MatrixXd& m, const std::vector<bool>& ok) {
  Eigen::RowVectorXd out = Eigen::RowVectorXd::Zero(m.cols());
  for (Eigen::Index c = 0; c < m.cols(); ++c) {
    std::vector<double> v;
    for (Eigen::Index r = 0; r < m.rows(); ++r)
      if (ok[static_cast<std::size_t>(r)]) v.push_back(m(r, c));
    if (v.empty()) continue;
    std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2), v.end());
    out(c) = v[v.size() / 2];
  }
  return out;
}

}  // namespace

double parameter_number(const SearchSpace& space, const Point& point, std::initializer_list<const char*> names,
                        double fallback) {
  const auto& params = space.parameters();
  for (std::size_t i = 0; i < params.size(); ++i)
    for (const char* n : names)
      if (params[i].name == n) {
        const nlohmann::json& v = params[i].values[static_cast<std::size_t>(point[i])];
        if (v.is_number()) return v.get<double>();
        if (v.is_boolean()) return v.get<bool>() ? 1 : 0;
      }
  return fallback;
}

Embedding::Embedding(const SearchSpace& space) {
  for (const Parameter& p : space.parameters()) {
    std::vector<double> c(p.values.size(), 0.5);
    const std::size_t n = p.values.size();
    const bool numeric = std::all_of(p.values.begin(), p.values.end(), [](const auto& v) { return v.is_number(); });
    const bool boolean = std::all_of(p.values.begin(), p.values.end(), [](const auto& v) { return v.is_boolean(); });
    if (n > 1 && numeric) {
      std::vector<double> v;
      for (const auto& x : p.values) v.push_back(x.get<double>());
      const auto [lo, hi] = std::minmax_element(v.begin(), v.end());
      const bool logarithmic = *lo > 0 && *hi / *lo >= 4;
      for (std::size_t i = 0; i < n; ++i) {
        if (*hi == *lo) break;
        c[i] = logarithmic ? std::log(v[i] / *lo) / std::log(*hi / *lo) : (v[i] - *lo) / (*hi - *lo);
      }
    } else if (n > 1 && boolean) {
      for (std::size_t i = 0; i < n; ++i) c[i] = p.values[i].get<bool>() ? 1 : 0;
    } else if (n > 1) {
      for (std::size_t i = 0; i < n; ++i) c[i] = static_cast<double>(i) / static_cast<double>(n - 1);
    }
    coordinates_.push_back(std::move(c));
  }
}

Eigen::VectorXd Embedding::operator()(const Point& point) const {
  Eigen::VectorXd x(dimensions());
  for (int d = 0; d < dimensions(); ++d) x(d) = coordinates_[d][static_cast<std::size_t>(point[d])];
  return x;
}

Eigen::MatrixXd Embedding::rows(const std::vector<Point>& points) const {
  Eigen::MatrixXd x(static_cast<Eigen::Index>(points.size()), dimensions());
  for (std::size_t i = 0; i < points.size(); ++i) x.row(static_cast<Eigen::Index>(i)) = (*this)(points[i]).transpose();
  return x;
}

double LinearTerms::value(Eigen::Index row, const std::vector<double>& theta) const {
  double v = 0;
  for (Eigen::Index k = 0; k < features.cols(); ++k) v += theta[static_cast<std::size_t>(k)] * features(row, k);
  return v;
}

PointIndex::PointIndex(const SearchSpace& space) {
  const std::vector<Point>& points = space.enumerate();
  for (std::size_t i = 0; i < points.size(); ++i) rows_.emplace(points[i], static_cast<Eigen::Index>(i));
}

std::optional<Eigen::Index> PointIndex::find(const Point& point) const {
  const auto it = rows_.find(point);
  if (it == rows_.end()) return std::nullopt;
  return it->second;
}

bool is_config_parameter(const std::string& name) {
  return config_key(name) || kMicrobatchNames.contains(name) || kChunkNames.contains(name) ||
         kCheckpointNames.contains(name);
}

ParallelConfig parallel_config_of(const SearchSpace& space, const Point& point, const TrainingSpec& training) {
  std::string text;
  std::optional<int> microbatches;
  const std::map<std::string, std::string> words = space.words(point);
  for (const Parameter& p : space.parameters()) {
    const std::string& w = words.at(p.name);
    std::string key = p.name, value = w;
    if (kMicrobatchNames.contains(p.name)) {
      microbatches = static_cast<int>(parameter_number(space, point, {p.name.c_str()}, 1));
      continue;
    }
    if (kChunkNames.contains(p.name)) key = "vpp";
    if (kCheckpointNames.contains(p.name)) {
      key = "recompute";
      value = (w == "true" || w == "1") ? "full" : "none";
    }
    if (!config_key(key)) continue;
    text += (text.empty() ? "" : ",") + key + "=" + value;
  }
  ParallelConfig config = parse_parallel_config(text);
  if (microbatches) {
    const int per_replica = training.global_batch / std::max(1, config.dp);
    if (*microbatches < 1 || per_replica % *microbatches != 0 || training.global_batch % config.dp != 0)
      throw Error(fmt::format("mb={} micro-batches do not divide the batch of {} per data-parallel replica "
                              "(global batch {}, dp={})",
                              *microbatches, per_replica, training.global_batch, config.dp));
    config.mbs = per_replica / *microbatches;
  }
  return config;
}

Prior cost_model_prior(const SearchSpace& space, const ModelSpec& model, const ClusterSpec& cluster,
                       const TrainingSpec& training, const Calibration& calibration, const EstimateOptions& options) {
  Prior prior;
  prior.name = "cost model";
  prior.absolute = true;
  prior.time.names = {"compute", "tp_comm", "dp_comm", "pp_comm", "cp_ep_comm", "overhead"};
  prior.memory.names = {"model_states", "activations", "other"};
  const std::vector<Point>& points = space.enumerate();
  const auto n = static_cast<Eigen::Index>(points.size());
  prior.time.features.resize(n, 6);
  prior.memory.features.resize(n, 3);
  std::vector<bool> ok(points.size(), false);
  for (Eigen::Index i = 0; i < n; ++i) {
    try {
      const Estimate e = estimate(model, cluster, training,
                                  parallel_config_of(space, points[static_cast<std::size_t>(i)], training), calibration, options);
      const TimeBreakdown& b = e.breakdown;
      Eigen::RowVectorXd t(6);
      t << b.compute_s + b.bubble_s + b.optimizer_s, b.tp_comm_s, b.dp_comm_s + b.zero3_comm_s, b.pp_comm_s,
          b.cp_comm_s + b.ep_comm_s, b.overhead_s;
      // The components as the model reports them need not add up to its iteration time exactly
      // (overlaps are resolved by the pipeline replay): scale them so that theta = 1 is the model.
      const double sum = t.sum();
      prior.time.features.row(i) = sum > 0 ? Eigen::RowVectorXd(t * (e.iteration_time_s / sum)) : t;
      // The peak is on the stage with the most memory.
      const StageEstimate* peak = &e.stages.front();
      for (const StageEstimate& s : e.stages)
        if (s.memory.total_bytes() > peak->memory.total_bytes()) peak = &s;
      const MemoryBreakdown& m = peak->memory;
      prior.memory.features.row(i) << m.weights_bytes + m.grads_bytes + m.optimizer_bytes, m.activations_bytes,
          m.other_bytes;
      ok[static_cast<std::size_t>(i)] = true;
    } catch (const Error&) {
      ++prior.unmapped_points;
    }
  }
  if (prior.unmapped_points == static_cast<int>(n))
    throw Error(fmt::format("the cost model rejects every point of the search space (e.g. {})",
                            space.to_json(points.front()).dump()));
  const Eigen::RowVectorXd time_median = median_row(prior.time.features, ok);
  const Eigen::RowVectorXd memory_median = median_row(prior.memory.features, ok);
  for (Eigen::Index i = 0; i < n; ++i)
    if (!ok[static_cast<std::size_t>(i)]) {
      prior.time.features.row(i) = time_median;
      prior.memory.features.row(i) = memory_median;
    }
  // theta = 1 is the calibrated model; the fit may move each coefficient by up to 5x either way.
  prior.time.initial.assign(6, 1.0);
  prior.time.lower.assign(6, 0.2);
  prior.time.upper.assign(6, 5.0);
  prior.memory.initial.assign(3, 1.0);
  prior.memory.lower.assign(3, 0.2);
  prior.memory.upper.assign(3, 5.0);
  for (const Parameter& p : space.parameters())
    if (!is_config_parameter(p.name)) prior.kernel_only.push_back(p.name);
  return prior;
}

Prior simple_prior(const SearchSpace& space) {
  Prior prior;
  prior.name = "OPPA App. D";
  prior.absolute = false;
  prior.time.names = {"compute", "dp_allreduce", "tp_allreduce", "pp_p2p", "constant"};
  prior.memory.names = {"parameters", "activations", "constant"};
  const std::vector<Point>& points = space.enumerate();
  const auto n = static_cast<Eigen::Index>(points.size());
  prior.time.features.resize(n, 5);
  prior.memory.features.resize(n, 3);
  const auto ring = [](double d) { return (d - 1) / d; };  // Eq. 11's (D-1)/D
  for (Eigen::Index i = 0; i < n; ++i) {
    const Point& p = points[static_cast<std::size_t>(i)];
    const double dp = parameter_number(space, p, {"dp"}, 1), tp = parameter_number(space, p, {"tp"}, 1), pp = parameter_number(space, p, {"pp"}, 1);
    const double cp = parameter_number(space, p, {"cp"}, 1);
    const double mb = std::max(1.0, parameter_number(space, p, {"mb", "microbatches"}, 1));
    const double mc = std::max(1.0, parameter_number(space, p, {"mc", "chunks", "vpp"}, 1));
    const double zero = parameter_number(space, p, {"zero"}, 0);
    const double gpus = std::max(1.0, dp * tp * pp * cp);
    const double ckpt = parameter_number(space, p, {"ckpt", "checkpointing"}, 0);
    // Eq. 10, with full recomputation adding one forward (of forward + backward = 3 forwards).
    const double compute = (mb + (pp - 1) / mc) / gpus * (1 + ckpt / 3);
    const double lambda_z = zero >= 3 ? 1.5 : 1.0;  // Eq. 12's ZeRO fudge: ZeRO-3 gathers parameters twice
    prior.time.features.row(i) << compute, lambda_z * ring(dp) / (tp * pp), ring(tp) * mb,
        2 * mb * std::max(0.0, pp - 1), 1.0;
    prior.memory.features.row(i) << 1 / (pp * tp), 1 / (gpus * mb), 1.0;  // Eq. 21
  }
  // Relative coefficients: the search multiplies them by a scale taken from the first observations.
  prior.time.initial.assign(5, 1.0);
  prior.time.lower.assign(5, 1e-3);
  prior.time.upper.assign(5, 1e3);
  prior.memory.initial.assign(3, 1.0);
  prior.memory.lower.assign(3, 1e-3);
  prior.memory.upper.assign(3, 1e3);
  for (const Parameter& p : space.parameters())
    if (!is_config_parameter(p.name)) prior.kernel_only.push_back(p.name);
  return prior;
}

}  // namespace paratune::tune
