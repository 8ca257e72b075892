// What the model-based searches share (model_search.h), their options and their factories
// (tune/bayes.h).
#include "model_search.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "paratune/spec/error.h"
#include "paratune/spec/option_error.h"

namespace paratune::tune {
namespace {

// An out-of-memory trial's peak is unknown but above the limit M0: it is observed at 1.05 x M0, so
// that its neighbours come out above the limit rather than exactly at it.
constexpr double kOomMemoryFactor = 1.05;

// The parameters whose combinations E.1 weighs equally.
const std::set<std::string, std::less<>> kDegreeNames{"dp", "tp", "pp", "cp", "ep"};

std::vector<std::string> parameter_names(const SearchSpace& view) {
  std::vector<std::string> names;
  for (const Parameter& p : view.parameters()) names.push_back(p.name);
  return names;
}

}  // namespace

void validate(const BayesOptions& o) {
  if (o.steps < 2) throw OptionError("steps", std::to_string(o.steps), "must be >= 2");
  if (o.initial_points < 1) throw OptionError("initial_points", std::to_string(o.initial_points), "must be >= 1");
  if (!(o.beta >= 0) || !std::isfinite(o.beta)) throw OptionError("beta", fmt::format("{}", o.beta), "must be >= 0");
  if (!(o.memory_limit_bytes >= 0))
    throw OptionError("memory_limit_bytes", fmt::format("{}", o.memory_limit_bytes), "must be >= 0");
}

ModelSearch::ModelSearch(const SearchSpace& view, std::optional<Prior> prior, const BayesOptions& options)
    : view_(view), options_(options), prior_(std::move(prior)), x_all_(Embedding(view).rows(view.enumerate())),
      rng_(options.seed), index_(view) {
  const std::vector<Point>& points = view.enumerate();
  // E.1's groups: points with the same parallel degrees.
  std::map<std::vector<int>, std::vector<Eigen::Index>> groups;
  const auto& params = view.parameters();
  for (std::size_t i = 0; i < points.size(); ++i) {
    std::vector<int> key;
    for (std::size_t d = 0; d < params.size(); ++d)
      if (kDegreeNames.contains(params[d].name)) key.push_back(points[i][d]);
    groups[key].push_back(static_cast<Eigen::Index>(i));
  }
  group_of_.assign(points.size(), 0);
  for (const auto& [key, rows] : groups) {
    for (Eigen::Index r : rows) group_of_[static_cast<std::size_t>(r)] = static_cast<int>(groups_.size());
    groups_.push_back(rows);
  }
  tried_.assign(points.size(), false);
}

std::optional<hpo::Config> ModelSearch::propose(const std::vector<hpo::TrialRecord>& trials) {
  absorb(trials);
  std::vector<Eigen::Index> running;
  for (const hpo::TrialRecord& r : trials) {
    if (r.state != hpo::TrialRecord::State::kRunning) continue;
    if (const std::optional<Point> point = view_.point_of(r.config))
      if (const auto row = index_.find(*point)) running.push_back(*row);
  }
  std::vector<bool> busy = tried_;
  for (Eigen::Index row : running) busy[static_cast<std::size_t>(row)] = true;
  std::vector<Eigen::Index> candidates;
  for (std::size_t i = 0; i < busy.size(); ++i)
    if (!busy[i]) candidates.push_back(static_cast<Eigen::Index>(i));
  if (candidates.empty()) return std::nullopt;

  notes_ = nlohmann::ordered_json::object();
  Eigen::Index pick_row = -1;
  const int designs = static_cast<int>(seen_.size() + running.size());
  if (designs < options_.initial_points) {
    pick_row = initial_design(busy, designs, notes_);
  } else if (oom_run_ >= options_.oom_streak) {
    pick_row = weighted_random(busy);
    notes_["source"] = fmt::format("random exploration after {} out-of-memory trials in a row", oom_run_);
    oom_run_ = 0;
  } else {
    if (static_cast<int>(candidates.size()) > options_.max_candidates) {  // a seeded sample
      for (std::size_t i = 0; i < static_cast<std::size_t>(options_.max_candidates); ++i)
        std::swap(candidates[i], candidates[i + uniform_below(rng_, candidates.size() - i)]);
      candidates.resize(static_cast<std::size_t>(options_.max_candidates));
    }
    pick_row = pick(candidates, running, notes_);
  }
  return hpo::Config(view_.to_json(view_.enumerate()[static_cast<std::size_t>(pick_row)]));
}

void ModelSearch::absorb(const std::vector<hpo::TrialRecord>& trials) {
  using State = hpo::TrialRecord::State;
  for (const hpo::TrialRecord& r : trials) {
    if (r.state == State::kRunning) continue;
    const std::optional<Point> point = view_.point_of(r.config);
    const std::optional<Eigen::Index> row = point ? index_.find(*point) : std::nullopt;
    if (!row || !seen_.insert(r.number).second) continue;
    tried_[static_cast<std::size_t>(*row)] = true;
    const bool oom = r.failure == trial::FailureKind::kOom;
    oom_run_ = oom ? oom_run_ + 1 : 0;
    // A trial over the memory limit ran: the memory model judges it.
    const bool ran = r.state == State::kCompleted || r.state == State::kPruned ||
                     r.failure == trial::FailureKind::kOverMemory;
    const bool has_throughput = ran && r.measured.steps_used > 0 && r.measured.steps_per_s > 0;
    if (has_throughput)
      throughput_.push_back({*row, r.measured.steps_per_s, r.measured.standard_error * r.measured.standard_error});
    if (r.peak_memory_bytes && *r.peak_memory_bytes > 0)
      memory_.push_back({*row, *r.peak_memory_bytes, 0});
    else if (oom && options_.memory_limit_bytes > 0)  // only known to be above M0 (OPPA clips it there)
      memory_.push_back({*row, kOomMemoryFactor * options_.memory_limit_bytes, 0});
    // XGBoost learns from failures too (DeepSpeed's autotuner scores them 0).
    if (!has_throughput) failures_.push_back(*row);
    // The feasibility model: did the configuration run? Every failure counts, whatever its kind (an
    // OOM too: with --memory-limit the memory model also learns from it, by memory's own trend; the
    // classifier by whatever separates what runs from what does not). A failure given without its
    // kind counts as crashed.
    const trial::FailureKind kind = ran || r.failure != trial::FailureKind::kNone ? r.failure : trial::FailureKind::kCrashed;
    ran_or_failed_.push_back({x_all_.row(*row).transpose(), ran, kind});
    changed_ = true;
  }
}

const hpo::Feasibility& ModelSearch::feasibility() {
  if (!feasibility_ || feasibility_observations_ != ran_or_failed_.size()) {
    // Warm-started from the last fit: the classifier moves little between two trials.
    std::optional<gp::Hyperparameters> last;
    if (feasibility_ && feasibility_->hyperparameters()) last = *feasibility_->hyperparameters();
    feasibility_.emplace(ran_or_failed_, parameter_names(view_), options_.seed, last ? &*last : nullptr);
    feasibility_observations_ = ran_or_failed_.size();
    describe_feasibility();
  }
  return *feasibility_;
}

Eigen::VectorXd ModelSearch::p_runs(const std::vector<Eigen::Index>& rows) {
  return feasibility().probabilities(rows_of(rows));
}

Eigen::MatrixXd ModelSearch::rows_of(const std::vector<Eigen::Index>& rows) const {
  Eigen::MatrixXd x(static_cast<Eigen::Index>(rows.size()), x_all_.cols());
  for (std::size_t i = 0; i < rows.size(); ++i) x.row(static_cast<Eigen::Index>(i)) = x_all_.row(rows[i]);
  return x;
}

void ModelSearch::describe_feasibility() {
  if (feasibility_ && feasibility_->active()) summary_["feasibility"] = feasibility_->describe();
}

// --- Initial designs (OPPA App. E.1) ------------------------------------------------------------

Eigen::Index ModelSearch::initial_design(const std::vector<bool>& busy, int designs, nlohmann::ordered_json& notes) {
  const bool seeded = options_.seed_from_prior && prior_ && prior_->absolute;
  if (seeded && designs < (options_.initial_points + 1) / 2) {
    if (seed_order_.empty()) seed_order_ = prior_ranking();
    // The best-predicted point of a parallel-degree group not seeded yet.
    for (Eigen::Index row : seed_order_) {
      const auto r = static_cast<std::size_t>(row);
      if (busy[r] || seeded_groups_.contains(group_of_[r])) continue;
      seeded_groups_.insert(group_of_[r]);
      notes["source"] = "initial design: the cost model's best prediction of its (dp, tp, pp) group";
      add_prior_prediction(row, notes);
      return row;
    }
  }
  notes["source"] = "initial design: weighted random (OPPA App. E.1)";
  const Eigen::Index row = weighted_random(busy);
  if (prior_ && prior_->absolute) add_prior_prediction(row, notes);
  return row;
}

// Valid points by the prior's predicted throughput at its initial coefficients, fastest first;
// points predicted not to fit under M0 go last.
std::vector<Eigen::Index> ModelSearch::prior_ranking() const {
  std::vector<Eigen::Index> rows(static_cast<std::size_t>(x_all_.rows()));
  for (std::size_t i = 0; i < rows.size(); ++i) rows[i] = static_cast<Eigen::Index>(i);
  const auto key = [&](Eigen::Index r) {
    const bool fits = options_.memory_limit_bytes <= 0 ||
                      prior_->memory.value(r, prior_->memory.initial) <= options_.memory_limit_bytes;
    return std::make_pair(!fits, prior_->time.value(r, prior_->time.initial));
  };
  std::stable_sort(rows.begin(), rows.end(), [&](Eigen::Index a, Eigen::Index b) { return key(a) < key(b); });
  return rows;
}

void ModelSearch::add_prior_prediction(Eigen::Index row, nlohmann::ordered_json& notes) const {
  notes["prior_throughput"] = 1 / prior_->time.value(row, prior_->time.initial);
  notes["prior_memory_bytes"] = prior_->memory.value(row, prior_->memory.initial);
}

// App. E.1: a group of parallel degrees uniformly among those with untried points, then a point of
// it uniformly; once trials have failed, where the configuration probably runs (hpo::likely_draw).
Eigen::Index ModelSearch::weighted_random(const std::vector<bool>& busy) {
  const hpo::Feasibility& model = feasibility();
  double p = 1;
  const std::optional<Eigen::Index> row = hpo::likely_draw(
      [&] { return uniform_design(busy); },
      [&](Eigen::Index r) { return model.probability(Eigen::VectorXd(x_all_.row(r).transpose())); }, p);
  return row ? *row : uniform_design(busy);  // an untried point is never known to fail
}

Eigen::Index ModelSearch::uniform_design(const std::vector<bool>& busy) {
  const auto is_free = [&](Eigen::Index r) { return !busy[static_cast<std::size_t>(r)]; };
  std::vector<std::size_t> open;
  for (std::size_t g = 0; g < groups_.size(); ++g)
    if (std::any_of(groups_[g].begin(), groups_[g].end(), is_free)) open.push_back(g);
  std::vector<Eigen::Index> free;
  for (Eigen::Index r : groups_[open[uniform_below(rng_, open.size())]])
    if (is_free(r)) free.push_back(r);
  return free[uniform_below(rng_, free.size())];
}

Eigen::Index ModelSearch::random_among(const std::vector<Eigen::Index>& candidates) {
  std::vector<bool> busy(tried_.size(), true);
  for (Eigen::Index r : candidates) busy[static_cast<std::size_t>(r)] = false;
  return weighted_random(busy);
}

// --- The prior at fitted coefficients -----------------------------------------------------------

double ModelSearch::prior_throughput(Eigen::Index row, const std::vector<double>& log_theta) const {
  double t = 0;
  for (Eigen::Index k = 0; k < prior_->time.features.cols(); ++k)
    t += std::exp(log_theta[static_cast<std::size_t>(k)]) * prior_->time.features(row, k);
  return t > 0 ? 1 / t : 0;
}

double ModelSearch::prior_memory(Eigen::Index row, const std::vector<double>& log_theta) const {
  double m = 0;
  for (Eigen::Index k = 0; k < prior_->memory.features.cols(); ++k)
    m += std::exp(log_theta[static_cast<std::size_t>(k)]) * prior_->memory.features(row, k);
  if (!prior_->absolute && options_.memory_limit_bytes > 0) m = std::min(m, options_.memory_limit_bytes);  // Eq. 21
  return m;
}

gp::MeanFunction ModelSearch::prior_mean(const LinearTerms& terms, const std::vector<Observation>& obs, bool time,
                                         double scale, const std::vector<double>& warm) const {
  gp::MeanFunction mean;
  double shift = 0;  // log of the relative prior's scale
  if (!prior_->absolute) {
    std::vector<double> ratios;
    for (const Observation& o : obs) {
      const double model = terms.value(o.row, terms.initial);
      if (model > 0) ratios.push_back((time ? 1 / o.value : o.value) / model);
    }
    std::nth_element(ratios.begin(), ratios.begin() + static_cast<std::ptrdiff_t>(ratios.size() / 2), ratios.end());
    shift = ratios.empty() ? 0 : std::log(ratios[ratios.size() / 2]);
  }
  for (std::size_t k = 0; k < terms.initial.size(); ++k) {
    mean.initial.push_back(std::log(terms.initial[k]) + shift);
    mean.lower.push_back(std::log(terms.lower[k]) + shift);
    mean.upper.push_back(std::log(terms.upper[k]) + shift);
  }
  if (warm.size() == mean.initial.size())
    for (std::size_t k = 0; k < warm.size(); ++k) mean.initial[k] = std::clamp(warm[k], mean.lower[k], mean.upper[k]);
  mean.at_observations = [this, &obs, time, scale](const std::vector<double>& log_theta) {
    Eigen::VectorXd m(static_cast<Eigen::Index>(obs.size()));
    for (std::size_t i = 0; i < obs.size(); ++i)
      m(static_cast<Eigen::Index>(i)) =
          (time ? prior_throughput(obs[i].row, log_theta) : prior_memory(obs[i].row, log_theta)) / scale;
    return m;
  };
  return mean;
}

nlohmann::ordered_json ModelSearch::coefficients(const LinearTerms& terms, const std::vector<double>& log_theta) {
  nlohmann::ordered_json c = nlohmann::ordered_json::object();
  for (std::size_t k = 0; k < terms.names.size(); ++k) c[terms.names[k]] = std::exp(log_theta[k]);
  return c;
}

// --- Factories -----------------------------------------------------------------------------------

std::unique_ptr<hpo::Sampler> make_model_search(const SearchSpace& view, std::optional<Prior> prior,
                                                const BayesOptions& options) {
  validate(options);
  switch (options.algorithm) {
    case Algorithm::kOppa: return make_gp_ucb_search(view, prior ? std::move(prior) : simple_prior(view), options);
    case Algorithm::kBo: return make_gp_ucb_search(view, std::nullopt, options);
    case Algorithm::kCostModel: return make_cost_model_search(view, prior ? std::move(*prior) : simple_prior(view), options);
    case Algorithm::kXgboost: return make_xgboost_search(view, options);
    default: throw Error(fmt::format("make_model_search: {} is not model-based", to_string(options.algorithm)));
  }
}

std::unique_ptr<hpo::Sampler> make_configuration_sampler(const hpo::Space& space, const SearchSpace& view,
                                                         std::optional<Prior> prior, const BayesOptions& options,
                                                         std::size_t max_trials) {
  hpo::SamplerOptions sampler_options;
  sampler_options.direction = hpo::Direction::kMaximize;
  sampler_options.seed = options.seed;
  sampler_options.max_trials = max_trials;
  switch (options.algorithm) {
    case Algorithm::kGrid: return hpo::make_grid_sampler(space, sampler_options);
    case Algorithm::kRandom: return hpo::make_random_sampler(space, sampler_options);
    default: return make_model_search(view, std::move(prior), options);
  }
}

}  // namespace paratune::tune
