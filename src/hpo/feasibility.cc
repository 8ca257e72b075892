// The samplers' feasibility model (feasibility.h).
#include "feasibility.h"

#include <cmath>

#include "paratune/spec/error.h"

namespace paratune::hpo {
namespace {

std::vector<double> feasibility_key(const Eigen::VectorXd& x) { return {x.data(), x.data() + x.size()}; }

}  // namespace

Feasibility::Feasibility(const std::vector<TrialRecord>& trials, const Encoding& encoding, std::uint64_t seed)
    : encoding_(encoding) {
  std::vector<Eigen::VectorXd> rows;
  std::vector<bool> ran;
  for (const TrialRecord& t : trials) {
    if (t.state == TrialRecord::State::kRunning) continue;
    const bool failed = t.state == TrialRecord::State::kFailed;
    rows.push_back(encoding.encode(t.config));
    ran.push_back(!failed);
    if (!failed) continue;
    // A record without its kind (built by hand) counts as crashed: learned from, not deterministic.
    ++failures_[trial::to_string(t.failure == trial::FailureKind::kNone ? trial::FailureKind::kCrashed : t.failure)];
    if (trial::is_deterministic(t.failure)) deterministic_.insert(feasibility_key(rows.back()));
  }
  observations_ = rows.size();
  if (failures_.empty()) return;
  Eigen::MatrixXd x(static_cast<Eigen::Index>(rows.size()), encoding.dimensions());
  for (std::size_t i = 0; i < rows.size(); ++i) x.row(static_cast<Eigen::Index>(i)) = rows[i].transpose();
  gp::Hyperparameters start;
  start.lengthscales = Eigen::VectorXd::Constant(encoding.dimensions(), 0.5);
  start.signal_variance = 1;
  gp::ClassifierOptions options;
  options.tied = encoding.parameter_of_columns();  // one lengthscale per parameter
  options.seed = seed ^ (0x9e3779b97f4a7c15ULL * static_cast<std::uint64_t>(rows.size()));
  model_.emplace(std::move(x), std::move(ran), start, options);
}

double Feasibility::probability(const Config& config) const {
  if (known_to_fail(config)) return 0;
  return model_ ? model_->probability(encoding_.encode(config)) : 1.0;
}

Eigen::VectorXd Feasibility::probabilities(const Eigen::MatrixXd& encoded) const {
  if (!model_) return Eigen::VectorXd::Ones(encoded.rows());
  Eigen::VectorXd p = model_->probabilities(encoded);
  for (Eigen::Index i = 0; i < encoded.rows(); ++i)
    if (deterministic_.contains(feasibility_key(encoded.row(i).transpose()))) p(i) = 0;
  return p;
}

bool Feasibility::known_to_fail(const Config& config) const {
  return !deterministic_.empty() && deterministic_.contains(feasibility_key(encoding_.encode(config)));
}

nlohmann::ordered_json Feasibility::describe() const {
  if (!model_) return nullptr;
  const gp::Hyperparameters& h = model_->hyperparameters();
  return {{"model", "GP classifier (probit, Laplace), P(runs) weighs the proposals"},
          {"observations", observations_},
          {"failures", failures_},
          {"never_again", deterministic_.size()},
          {"lengthscales", encoding_.lengthscales(h.lengthscales)},
          {"signal_variance", h.signal_variance},
          {"prior_p_runs", 0.5 * std::erfc(-model_->prior_mean() / std::sqrt(2.0))}};
}

std::optional<Config> feasible_draw(const Feasibility& feasibility, const std::function<Config()>& draw,
                                    double& p_runs) {
  std::optional<Config> best;
  double best_p = -1;
  for (int attempt = 0; attempt <= kFeasibilityRedraws; ++attempt) {
    Config config = draw();
    const double p = feasibility.probability(config);
    if (p <= 0) continue;  // known to fail
    if (p >= trial::kLikelyToRun) {
      p_runs = p;
      return config;
    }
    if (p > best_p) {
      best_p = p;
      best = std::move(config);
    }
  }
  p_runs = best_p;
  return best;
}

std::optional<Config> draw_not_known_to_fail(const Space& space, const Feasibility& feasibility, std::mt19937_64& rng) {
  if (!space.finite()) return space.sample(rng);
  std::vector<Config> all;
  try {
    all = space.enumerate();
  } catch (const Error&) {
    return space.sample(rng);  // too large to list
  }
  std::vector<Config> open;
  for (Config& c : all)
    if (!feasibility.known_to_fail(c)) open.push_back(std::move(c));
  if (open.empty()) return std::nullopt;
  return open[static_cast<std::size_t>(rng() % open.size())];
}

}  // namespace paratune::hpo
