// Every sampler's feasibility model (hpo/feasibility.h).
#include "paratune/hpo/feasibility.h"

#include <cmath>

#include "paratune/spec/error.h"

namespace paratune::hpo {
namespace {

std::vector<double> feasibility_key(const Eigen::VectorXd& x) { return {x.data(), x.data() + x.size()}; }

}  // namespace

Feasibility::Feasibility(const std::vector<Observation>& observations, std::vector<std::string> column_names,
                         std::uint64_t seed, const gp::Hyperparameters* warm_start)
    : column_names_(std::move(column_names)) {
  fit(observations, {}, seed, warm_start);
}

Feasibility::Feasibility(const std::vector<TrialRecord>& trials, const Encoding& encoding, std::uint64_t seed)
    : encoding_(&encoding) {
  std::vector<Observation> observations;
  for (const TrialRecord& t : trials) {
    if (t.state == TrialRecord::State::kRunning) continue;
    const bool failed = t.state == TrialRecord::State::kFailed;
    // A record without its kind (built by hand) counts as crashed: learned from, not deterministic.
    const trial::FailureKind kind = !failed                                ? trial::FailureKind::kNone
                                    : t.failure == trial::FailureKind::kNone ? trial::FailureKind::kCrashed
                                                                             : t.failure;
    observations.push_back({encoding.encode(t.config), !failed, kind});
  }
  fit(observations, encoding.parameter_of_columns(), seed, nullptr);
}

void Feasibility::fit(const std::vector<Observation>& observations, const std::vector<int>& tied, std::uint64_t seed,
                      const gp::Hyperparameters* warm_start) {
  observations_ = observations.size();
  for (const Observation& o : observations) {
    if (o.ran) continue;
    ++failures_[trial::to_string(o.failure)];
    if (trial::is_deterministic(o.failure)) deterministic_.insert(feasibility_key(o.x));
  }
  if (failures_.empty()) return;
  const auto dimensions = observations.front().x.size();
  Eigen::MatrixXd x(static_cast<Eigen::Index>(observations.size()), dimensions);
  std::vector<bool> ran;
  for (std::size_t i = 0; i < observations.size(); ++i) {
    x.row(static_cast<Eigen::Index>(i)) = observations[i].x.transpose();
    ran.push_back(observations[i].ran);
  }
  gp::Hyperparameters start;
  if (warm_start && warm_start->lengthscales.size() == dimensions) {
    start = *warm_start;
  } else {
    start.lengthscales = Eigen::VectorXd::Constant(dimensions, 0.5);
    start.signal_variance = 1;
  }
  gp::ClassifierOptions options;
  options.tied = tied;  // empty: one lengthscale per column
  options.seed = seed ^ (0x9e3779b97f4a7c15ULL * static_cast<std::uint64_t>(observations.size()));
  model_.emplace(std::move(x), std::move(ran), start, options);
}

double Feasibility::probability(const Eigen::VectorXd& encoded) const {
  if (known_to_fail(encoded)) return 0;
  return model_ ? model_->probability(encoded) : 1.0;
}

Eigen::VectorXd Feasibility::probabilities(const Eigen::MatrixXd& encoded) const {
  if (!model_) return Eigen::VectorXd::Ones(encoded.rows());
  Eigen::VectorXd p = model_->probabilities(encoded);
  for (Eigen::Index i = 0; i < encoded.rows(); ++i)
    if (known_to_fail(Eigen::VectorXd(encoded.row(i).transpose()))) p(i) = 0;
  return p;
}

bool Feasibility::known_to_fail(const Eigen::VectorXd& encoded) const {
  return !deterministic_.empty() && deterministic_.contains(feasibility_key(encoded));
}

nlohmann::ordered_json Feasibility::describe() const {
  if (!model_) return nullptr;
  const gp::Hyperparameters& h = model_->hyperparameters();
  nlohmann::ordered_json lengthscales = nlohmann::ordered_json::object();
  if (encoding_) {
    lengthscales = encoding_->lengthscales(h.lengthscales);
  } else {
    for (std::size_t c = 0; c < column_names_.size(); ++c)
      lengthscales[column_names_[c]] = h.lengthscales(static_cast<Eigen::Index>(c));
  }
  return {{"model", "GP classifier (probit, Laplace), P(runs) weighs the proposals"},
          {"observations", observations_},
          {"failures", failures_},
          {"never_again", deterministic_.size()},
          {"lengthscales", lengthscales},
          {"signal_variance", h.signal_variance},
          {"prior_p_runs", 0.5 * std::erfc(-model_->prior_mean() / std::sqrt(2.0))}};
}

std::optional<Config> feasible_draw(const Feasibility& feasibility, const std::function<Config()>& draw,
                                    double& p_runs) {
  return likely_draw(draw, [&](const Config& c) { return feasibility.probability(c); }, p_runs);
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
