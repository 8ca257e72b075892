// The TPE sampler (hpo/tpe.h has the algorithm, its variant, defaults and sources).
#include "paratune/hpo/tpe.h"

#include <fmt/format.h>

#include <algorithm>
#include <cassert>
#include <cmath>
#include <limits>
#include <numbers>
#include <string>
#include <tuple>
#include <utility>

#include "paratune/spec/error.h"
#include "paratune/hpo/encoding.h"
#include "paratune/hpo/feasibility.h"
#include "paratune/hpo/pareto.h"

namespace paratune::hpo::tpe {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// Phi(z) = (1 + erf(z / sqrt 2)) / 2, the standard normal CDF.
double normal_cdf(double z) { return 0.5 * (1.0 + std::erf(z / std::numbers::sqrt2)); }

// log sum_k exp(a_k), shifted by the largest term so nothing overflows.
double log_sum_exp(const std::vector<double>& terms) {
  const double top = *std::max_element(terms.begin(), terms.end());
  if (!std::isfinite(top)) return top;
  double sum = 0;
  for (double t : terms) sum += std::exp(t - top);
  return top + std::log(sum);
}

// An index drawn with the given probabilities (which sum to 1; rounding left over goes to the last).
std::size_t draw_index(const std::vector<double>& probabilities, std::mt19937_64& rng) {
  double u = uniform01(rng);
  for (std::size_t k = 0; k + 1 < probabilities.size(); ++k) {
    if (u < probabilities[k]) return k;
    u -= probabilities[k];
  }
  return probabilities.size() - 1;
}

// A draw from N(mu, sigma^2) truncated to [0, 1], by rejection: with mu in [0, 1] and sigma <= 1
// at least Phi(1) - 1/2 = 34 % of the mass lies inside, so a few tries suffice (the cap only
// guards against a broken invariant).
double truncated_normal_draw(double mu, double sigma, std::mt19937_64& rng) {
  for (int attempt = 0; attempt < 1000; ++attempt) {
    const double x = mu + sigma * standard_normal(rng);
    if (x >= 0.0 && x <= 1.0) return x;
  }
  return std::clamp(mu, 0.0, 1.0);
}

}  // namespace

std::size_t good_count(std::size_t ranked) {
  // Optuna default_gamma: min(ceil(0.1 n), 25); ceil(n / 10) in integers.
  return std::min((ranked + 9) / 10, kMaxGood);
}

double bandwidth(std::size_t observations, std::size_t dimensions) {
  // Optuna 3.x multivariate rule on the unit interval: sigma = 0.2 n^(-1/(d+4)) (Scott's rule,
  // n^(-1/(d+4)), with Optuna's magnitude 0.2 of the range), n = max(observations, 1).
  const double n = static_cast<double>(std::max<std::size_t>(observations, 1));
  const double sigma = 0.2 * std::pow(n, -1.0 / (static_cast<double>(dimensions) + 4.0));
  // Magic clip (Bergstra et al. 2011's hyperopt, as Optuna applies it, unadjusted for
  // multivariate): at least range / min(100, 1 + kernels), kernels = observations + the prior;
  // at most the prior's sigma, the whole range.
  const double kernels = static_cast<double>(observations) + 1.0;
  const double min_sigma = 1.0 / std::min(100.0, 1.0 + kernels);
  return std::clamp(sigma, min_sigma, 1.0);
}

double uniform01(std::mt19937_64& rng) { return static_cast<double>(rng() >> 11) * 0x1.0p-53; }

double standard_normal(std::mt19937_64& rng) {
  const double u1 = 1.0 - uniform01(rng);  // (0, 1]: log(u1) is finite
  const double u2 = uniform01(rng);
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
}

ParzenEstimator::ParzenEstimator(std::vector<Dimension> dimensions, const std::vector<Point>& observations,
                                 double prior_weight, const std::vector<double>& observation_weights)
    : dimensions_(std::move(dimensions)), observations_(observations.size()), prior_weight_(prior_weight) {
  assert(prior_weight_ > 0);
  assert(observation_weights.empty() || observation_weights.size() == observations.size());
  sigma_ = bandwidth(observations_, dimensions_.size());
  for (const Point& observation : observations) {
    assert(observation.size() == dimensions_.size());
    std::vector<Kernel> component;
    for (std::size_t d = 0; d < dimensions_.size(); ++d) {
      const std::size_t choices = dimensions_[d].choices;
      component.push_back(choices == 0 ? numerical_kernel(observation[d], sigma_)
                                       : categorical_kernel(choices, static_cast<std::size_t>(observation[d])));
    }
    components_.push_back(std::move(component));
  }
  // The prior component: N(0.5, 1) truncated to [0, 1]; uniform over the choices.
  std::vector<Kernel> prior;
  for (const Dimension& dimension : dimensions_)
    prior.push_back(dimension.choices == 0 ? numerical_kernel(0.5, 1.0) : categorical_kernel(dimension.choices, std::nullopt));
  components_.push_back(std::move(prior));
  // Equal weights: 1 per observation and prior_weight for the prior, normalised (see tpe.h on
  // why there is no ramp for old observations); or the weights given (multi-objective TPE's good
  // group, Optuna _ParzenEstimator predetermined_weights) and the prior's.
  weights_.assign(components_.size(), 1.0);
  if (!observation_weights.empty()) std::copy(observation_weights.begin(), observation_weights.end(), weights_.begin());
  weights_.back() = prior_weight_;
  double total = 0;
  for (double w : weights_) total += w;
  for (double& w : weights_) w /= total;
}

ParzenEstimator::Kernel ParzenEstimator::numerical_kernel(double mu, double sigma) const {
  Kernel k;
  k.mu = std::clamp(mu, 0.0, 1.0);
  k.sigma = sigma;
  // The truncated Gaussian's mass on [0, 1]: Phi((1 - mu) / sigma) - Phi((0 - mu) / sigma).
  k.log_mass = std::log(normal_cdf((1.0 - k.mu) / sigma) - normal_cdf(-k.mu / sigma));
  return k;
}

ParzenEstimator::Kernel ParzenEstimator::categorical_kernel(std::size_t choices,
                                                            std::optional<std::size_t> observed) const {
  Kernel k;
  if (!observed) {
    k.probabilities.assign(choices, 1.0 / static_cast<double>(choices));
    return k;
  }
  assert(*observed < choices);
  // Optuna 3.x: prior_weight / (n + 1) on every choice plus 1 on the observed one, normalised.
  const double floor = prior_weight_ / (static_cast<double>(observations_) + 1.0);
  k.probabilities.assign(choices, floor);
  k.probabilities[*observed] += 1.0;
  const double total = 1.0 + floor * static_cast<double>(choices);
  for (double& p : k.probabilities) p /= total;
  return k;
}

double ParzenEstimator::log_component(const std::vector<Kernel>& component, const Point& x) const {
  double log_p = 0;
  for (std::size_t d = 0; d < dimensions_.size(); ++d) {
    const Kernel& k = component[d];
    if (dimensions_[d].choices == 0) {
      if (x[d] < 0.0 || x[d] > 1.0) return -kInf;
      // log of the truncated Gaussian density: log N(x; mu, sigma^2) - log(mass on [0, 1]).
      const double z = (x[d] - k.mu) / k.sigma;
      log_p += -0.5 * z * z - std::log(k.sigma) - 0.5 * std::log(2.0 * std::numbers::pi) - k.log_mass;
    } else {
      const auto choice = static_cast<std::size_t>(x[d]);
      if (choice >= k.probabilities.size()) return -kInf;
      log_p += std::log(k.probabilities[choice]);
    }
  }
  return log_p;
}

double ParzenEstimator::log_pdf(const Point& x) const {
  assert(x.size() == dimensions_.size());
  std::vector<double> terms(components_.size());
  for (std::size_t c = 0; c < components_.size(); ++c) terms[c] = std::log(weights_[c]) + log_component(components_[c], x);
  return log_sum_exp(terms);
}

Point ParzenEstimator::sample(std::mt19937_64& rng) const {
  const std::vector<Kernel>& component = components_[draw_index(weights_, rng)];
  Point x(dimensions_.size());
  for (std::size_t d = 0; d < dimensions_.size(); ++d) {
    const Kernel& k = component[d];
    x[d] = dimensions_[d].choices == 0 ? truncated_normal_draw(k.mu, k.sigma, rng)
                                       : static_cast<double>(draw_index(k.probabilities, rng));
  }
  return x;
}

namespace multi_objective {

constexpr double kEpsilon = 1e-12;  // Optuna's EPS in _tpe/sampler.py

// Optuna's reference point for a set of losses: max(1.1 w, 0.9 w) of the worst w in each
// objective (above w whatever its sign), EPS where that is 0.
pareto::Losses reference_of(const std::vector<pareto::Losses>& points) {
  pareto::Losses worst = points.front();
  for (const pareto::Losses& p : points)
    for (std::size_t i = 0; i < p.size(); ++i) worst[i] = std::max(worst[i], p[i]);
  for (double& w : worst) {
    w = std::max(1.1 * w, 0.9 * w);
    if (w == 0) w = kEpsilon;
  }
  return worst;
}

// The completed trials with every objective finite, as losses, ranked into good and bad (tpe.h,
// "Several objectives"); the good ones' weights by hypervolume contribution.
void split(const std::vector<TrialRecord>& trials, const std::vector<std::size_t>& completed,
           const std::vector<Direction>& directions, Split& out) {
  std::vector<pareto::Losses> points;
  points.reserve(completed.size());
  for (std::size_t i : completed) points.push_back(pareto::losses_of(trials[i].values, directions));
  const std::size_t n_good = std::min(good_count(points.size()), points.size());
  const std::vector<int> ranks = pareto::nondomination_ranks(points);
  std::vector<std::size_t> good;  // positions in points
  for (int r = 0; good.size() < n_good; ++r) {
    std::vector<std::size_t> front;
    for (std::size_t k = 0; k < points.size(); ++k)
      if (ranks[k] == r) front.push_back(k);
    if (good.size() + front.size() <= n_good) {
      good.insert(good.end(), front.begin(), front.end());
      continue;
    }
    // The front that does not fit whole: the subset of it with the most hypervolume, greedily
    // (Optuna _solve_hssp), against the reference point of that front.
    std::vector<pareto::Losses> front_points;
    front_points.reserve(front.size());
    for (std::size_t k : front) front_points.push_back(points[k]);
    for (std::size_t chosen : pareto::greedy_hypervolume_subset(front_points, n_good - good.size(), reference_of(front_points)))
      good.push_back(front[chosen]);
  }
  std::vector<bool> is_good(points.size(), false);
  for (std::size_t k : good) is_good[k] = true;
  for (std::size_t k : good) out.good.push_back(completed[k]);
  for (std::size_t k = 0; k < points.size(); ++k)
    if (!is_good[k]) out.bad.push_back(completed[k]);
  // Weights (Optuna _calculate_weights_below_for_multi_objective): each good point's hypervolume
  // contribution among the good ones plus EPS, over the largest; one good point weighs 1.
  if (good.size() == 1) out.good_weights = {1.0};
  if (good.size() > 1) {
    std::vector<pareto::Losses> good_points;
    good_points.reserve(good.size());
    for (std::size_t k : good) good_points.push_back(points[k]);
    std::vector<double> contribution = pareto::hypervolume_contributions(good_points, reference_of(good_points));
    for (double& c : contribution) c += kEpsilon;
    const double top = *std::max_element(contribution.begin(), contribution.end());
    for (double c : contribution) out.good_weights.push_back(std::clamp(c / top, 0.0, 1.0));
  }
}

}  // namespace multi_objective

Split split_trials(const std::vector<TrialRecord>& trials, Direction direction, const std::vector<Direction>& directions) {
  if (!directions.empty()) {
    // Several objectives: completed trials with a finite value of each are ranked; pruned ones
    // (no pruner runs with several objectives) and failed ones are bad, and so are running ones.
    Split split;
    std::vector<std::size_t> completed, failed, running;
    for (std::size_t i = 0; i < trials.size(); ++i) {
      const TrialRecord& t = trials[i];
      if (t.state == TrialRecord::State::kRunning) {
        running.push_back(i);
        continue;
      }
      ++split.finished;
      const bool usable = t.state == TrialRecord::State::kCompleted && t.values.size() == directions.size() &&
                          std::all_of(t.values.begin(), t.values.end(), [](double v) { return std::isfinite(v); });
      (usable ? completed : failed).push_back(i);
    }
    split.ranked = completed.size();
    if (!completed.empty()) multi_objective::split(trials, completed, directions, split);
    split.bad.insert(split.bad.end(), failed.begin(), failed.end());
    split.bad.insert(split.bad.end(), running.begin(), running.end());
    return split;
  }
  using State = TrialRecord::State;
  // Rank key, smaller first: completed (tier 0) by loss; pruned (tier 1) by resource reached,
  // more first, then by the loss at it (none: last) (Optuna _split_complete_and_pruned_trials).
  struct Ranked {
    int tier;
    double first, second;
    std::size_t index;
  };
  std::vector<Ranked> ranked;
  std::vector<std::size_t> failed, running;
  Split split;
  for (std::size_t i = 0; i < trials.size(); ++i) {
    const TrialRecord& t = trials[i];
    // A running promotion (ASHA) has a measured curve up to its rung: it ranks as the resting trial
    // it was, not as a pending proposal (the constant liar would count the best trials as bad).
    const bool running_promotion = t.state == State::kRunning && t.rung >= 0 && !t.curve.empty();
    if (t.state == State::kRunning && !running_promotion) {
      running.push_back(i);
      continue;
    }
    ++split.finished;
    if (t.state == State::kCompleted && t.value && std::isfinite(*t.value)) {
      ranked.push_back({0, as_loss(direction, *t.value), 0, i});
    } else if (t.state == State::kPruned || running_promotion) {
      const std::optional<double> last = value_at(t, t.resource);
      const double loss = last && std::isfinite(*last) ? as_loss(direction, *last) : kInf;
      ranked.push_back({1, -static_cast<double>(t.resource), loss, i});
    } else {
      failed.push_back(i);  // failed, or completed without a usable value
    }
  }
  // Stable: equal keys keep start order, so the split is deterministic.
  std::stable_sort(ranked.begin(), ranked.end(), [](const Ranked& a, const Ranked& b) {
    return std::tie(a.tier, a.first, a.second) < std::tie(b.tier, b.first, b.second);
  });
  split.ranked = ranked.size();
  const std::size_t n_good = std::min(good_count(ranked.size()), ranked.size());
  for (std::size_t r = 0; r < ranked.size(); ++r) (r < n_good ? split.good : split.bad).push_back(ranked[r].index);
  split.bad.insert(split.bad.end(), failed.begin(), failed.end());
  split.bad.insert(split.bad.end(), running.begin(), running.end());
  return split;
}

namespace {

// The best candidate of one tier and why.
struct TierChoice {
  bool found = false;
  Config values = Config::object();  // the tier's parameters
  double score = -kInf;              // log l(x) - log g(x)
  double p_runs = 1;                 // of the configuration it completes (1: it completes none)
  nlohmann::ordered_json notes;
};

class TpeSampler final : public Sampler {
 public:
  TpeSampler(const Space& space, const SamplerOptions& options)
      : space_(space),
        options_(options),
        encoding_(space),
        startup_trials_(options.startup_trials == -1 ? static_cast<std::size_t>(kStartupTrials)
                                                     : static_cast<std::size_t>(options.startup_trials)) {}

  [[nodiscard]] std::string name() const override { return "tpe"; }
  std::optional<Config> propose(const std::vector<TrialRecord>& trials) override;
  [[nodiscard]] nlohmann::ordered_json proposal_notes() const override { return notes_; }
  [[nodiscard]] nlohmann::ordered_json model_summary() const override;

 private:
  std::mt19937_64 proposal_rng(std::size_t history);
  [[nodiscard]] Dimension dimension_of(std::size_t param) const;
  [[nodiscard]] double coordinate(std::size_t param, const nlohmann::json& value) const;
  [[nodiscard]] nlohmann::json value_of(std::size_t param, double coordinate) const;
  // `kept`: where given, the positions in `which` of the trials the points are of.
  [[nodiscard]] std::vector<Point> observations(const std::vector<TrialRecord>& trials,
                                                const std::vector<std::size_t>& which,
                                                const std::vector<std::size_t>& group,
                                                std::vector<std::size_t>* kept = nullptr) const;
  [[nodiscard]] std::vector<std::size_t> next_tier(const Config& decided) const;
  // One TPE proposal (steps 2-4 of tpe.h) with its notes.
  Config model_proposal(const std::vector<TrialRecord>& trials, const Split& split, const Feasibility& feasibility,
                        std::mt19937_64& rng, nlohmann::ordered_json& notes) const;
  TierChoice decide_tier(const std::vector<std::size_t>& group, const std::vector<TrialRecord>& trials,
                         const Split& split, const Config& decided, const Feasibility& feasibility,
                         std::mt19937_64& rng) const;

  const Space& space_;
  SamplerOptions options_;
  Encoding encoding_;  // for the feasibility model
  std::size_t startup_trials_;
  std::size_t last_history_ = std::numeric_limits<std::size_t>::max();
  std::uint32_t repeat_ = 0;
  nlohmann::ordered_json notes_;
  nlohmann::ordered_json feasibility_summary_;  // the last proposal's feasibility model (null: none)
};

// Seeded from (seed, history size, repeat): see tpe.h. `repeat` counts proposals made here on a
// history of the same size, so a caller that asks twice without recording the first still gets two
// different draws.
std::mt19937_64 TpeSampler::proposal_rng(std::size_t history) {
  repeat_ = history == last_history_ ? repeat_ + 1 : 0;
  last_history_ = history;
  std::seed_seq seeds{static_cast<std::uint32_t>(options_.seed), static_cast<std::uint32_t>(options_.seed >> 32),
                      static_cast<std::uint32_t>(history), repeat_};
  return std::mt19937_64(seeds);
}

Dimension TpeSampler::dimension_of(std::size_t param) const {
  const ParamSpec& p = space_.parameters()[param];
  return Dimension{p.type == ParamType::kCategorical ? p.choices.size() : 0};
}

double TpeSampler::coordinate(std::size_t param, const nlohmann::json& value) const {
  return space_.parameters()[param].type == ParamType::kCategorical
             ? static_cast<double>(space_.choice_index(param, value))
             : space_.to_unit(param, value);
}

nlohmann::json TpeSampler::value_of(std::size_t param, double coordinate) const {
  const ParamSpec& p = space_.parameters()[param];
  return p.type == ParamType::kCategorical ? p.choices[static_cast<std::size_t>(coordinate)]
                                           : space_.from_unit(param, coordinate);
}

// The points of the trials `which` on the dimensions `group`, for those trials in which every
// parameter of the group is active (present in the configuration).
std::vector<Point> TpeSampler::observations(const std::vector<TrialRecord>& trials, const std::vector<std::size_t>& which,
                                            const std::vector<std::size_t>& group, std::vector<std::size_t>* kept) const {
  std::vector<Point> points;
  for (std::size_t position = 0; position < which.size(); ++position) {
    const std::size_t t = which[position];
    const Config& config = trials[t].config;
    Point x;
    for (std::size_t param : group) {
      const auto it = config.find(space_.parameters()[param].name);
      if (it == config.end()) break;
      x.push_back(coordinate(param, *it));
    }
    if (x.size() != group.size()) continue;
    points.push_back(std::move(x));
    if (kept) kept->push_back(position);
  }
  return points;
}

// The undecided parameters active given the decided ones (tpe.h, step 3).
std::vector<std::size_t> TpeSampler::next_tier(const Config& decided) const {
  std::vector<std::size_t> group;
  for (std::size_t i = 0; i < space_.size(); ++i)
    if (!decided.contains(space_.parameters()[i].name) && space_.is_active(i, decided)) group.push_back(i);
  return group;
}

TierChoice TpeSampler::decide_tier(const std::vector<std::size_t>& group, const std::vector<TrialRecord>& trials,
                                   const Split& split, const Config& decided, const Feasibility& feasibility,
                                   std::mt19937_64& rng) const {
  std::vector<Dimension> dimensions;
  dimensions.reserve(group.size());
  for (std::size_t param : group) dimensions.push_back(dimension_of(param));
  // Several objectives: the good trials weighted by their hypervolume contributions (tpe.h).
  std::vector<std::size_t> kept;
  const std::vector<Point> good_points = observations(trials, split.good, group, &kept);
  std::vector<double> good_weights;
  if (!split.good_weights.empty())
    for (std::size_t position : kept) good_weights.push_back(split.good_weights[position]);
  const ParzenEstimator good(dimensions, good_points, kPriorWeight, good_weights);
  const ParzenEstimator bad(dimensions, observations(trials, split.bad, group));
  TierChoice best;
  int valid = 0;
  for (int draw = 0; draw < kMaxCandidateDraws && valid < kCandidates; ++draw) {
    Point x = good.sample(rng);
    Config candidate = decided;
    Config values = Config::object();
    for (std::size_t d = 0; d < group.size(); ++d) {
      const std::size_t param = group[d];
      const nlohmann::json value = value_of(param, x[d]);
      // Score the value proposed, not the draw: an int's draw moves to its cell's centre.
      x[d] = coordinate(param, value);
      candidate[space_.parameters()[param].name] = value;
      values[space_.parameters()[param].name] = value;
    }
    if (!space_.constraints().empty() && !space_.satisfies(candidate)) continue;
    // Step 5 (tpe.h): a candidate that completes the configuration is judged with its P(runs).
    const double p_runs = feasibility.active() && next_tier(candidate).empty() ? feasibility.probability(candidate) : 1.0;
    if (p_runs <= 0) continue;  // known to fail
    ++valid;
    const double score = good.log_pdf(x) - bad.log_pdf(x);
    const std::pair<bool, double> key{p_runs >= trial::kLikelyToRun, score + std::log(p_runs)};
    if (!best.found || key > std::pair<bool, double>{best.p_runs >= trial::kLikelyToRun, best.score + std::log(best.p_runs)}) {
      best.found = true;
      best.score = score;
      best.p_runs = p_runs;
      best.values = std::move(values);
    }
  }
  nlohmann::ordered_json names = nlohmann::ordered_json::array();
  for (std::size_t param : group) names.push_back(space_.parameters()[param].name);
  best.notes = {{"parameters", names},        {"good", good.observations()},  {"bad", bad.observations()},
                {"bandwidth", good.sigma()},  {"candidates", valid},          {"log_l_minus_log_g", best.score}};
  return best;
}

std::optional<Config> TpeSampler::propose(const std::vector<TrialRecord>& trials) {
  std::mt19937_64 rng = proposal_rng(trials.size());
  const Split split = split_trials(trials, options_.direction, options_.directions);
  const Feasibility feasibility(trials, encoding_, options_.seed);
  feasibility_summary_ = feasibility.describe();
  const bool startup = split.finished < startup_trials_;
  // Step 5 (tpe.h): a draw, from the prior or from TPE, is kept where it probably runs
  // (feasible_draw); the notes of each attempt are kept so that the kept one's go with it.
  std::vector<std::pair<Config, nlohmann::ordered_json>> attempts;
  const auto draw = [&] {
    nlohmann::ordered_json notes = {{"sampler", "tpe"}, {"startup", startup}};
    Config config = startup ? space_.sample(rng) : model_proposal(trials, split, feasibility, rng, notes);
    if (startup) notes["observed"] = split.finished;
    attempts.emplace_back(config, std::move(notes));
    return config;
  };
  double p_runs = 1;
  std::optional<Config> config = feasible_draw(feasibility, draw, p_runs);
  if (!startup && (!config || p_runs < trial::kLikelyToRun)) {
    // TPE's proposals all probably fail (its good group can pull it into a failing region where the
    // bad group is thin): a draw from the prior where configurations probably run, if there is one.
    double prior_p = 1;
    std::optional<Config> prior = feasible_draw(feasibility, [&] {
      Config c = space_.sample(rng);
      attempts.emplace_back(c, nlohmann::ordered_json{{"sampler", "tpe"},
                                                     {"startup", false},
                                                     {"fallback", "TPE's proposals probably fail; drawn from the prior"}});
      return c;
    }, prior_p);
    if (prior && prior_p >= trial::kLikelyToRun) {
      config = prior;
      p_runs = prior_p;
    }
  }
  if (!config) {
    config = draw_not_known_to_fail(space_, feasibility, rng);
    notes_ = {{"sampler", "tpe"}, {"fallback", "every draw was a configuration known to fail"}};
    return config;
  }
  notes_ = std::find_if(attempts.rbegin(), attempts.rend(), [&](const auto& a) { return a.first == *config; })->second;
  if (feasibility.active()) {
    notes_["p_runs"] = p_runs;
    notes_["draws"] = attempts.size();
  }
  return config;
}

Config TpeSampler::model_proposal(const std::vector<TrialRecord>& trials, const Split& split,
                                  const Feasibility& feasibility, std::mt19937_64& rng,
                                  nlohmann::ordered_json& notes) const {
  Config decided = Config::object();
  double total_score = 0;
  nlohmann::ordered_json tiers = nlohmann::ordered_json::array();
  for (std::vector<std::size_t> group = next_tier(decided); !group.empty(); group = next_tier(decided)) {
    TierChoice choice = decide_tier(group, trials, split, decided, feasibility, rng);
    tiers.push_back(choice.notes);
    if (!choice.found) {
      // No candidate of l satisfied the constraints: fall back to the prior for everything.
      notes["fallback"] = "no candidate satisfied the constraints; drawn from the prior";
      notes["tiers"] = tiers;
      return space_.sample(rng);
    }
    total_score += choice.score;
    for (const auto& [name, value] : choice.values.items()) decided[name] = value;
  }
  notes["log_l_minus_log_g"] = total_score;
  notes["good"] = split.good.size();
  notes["observed"] = split.finished;
  notes["tiers"] = tiers;
  // Declaration order, as every configuration is written.
  Config config = Config::object();
  for (const ParamSpec& p : space_.parameters())
    if (const auto it = decided.find(p.name); it != decided.end()) config[p.name] = *it;
  return config;
}

nlohmann::ordered_json TpeSampler::model_summary() const {
  nlohmann::ordered_json summary = {{"sampler", "tpe"},
          {"variant", "multivariate, tiers of conditional parameters, constant liar"},
          {"startup_trials", startup_trials_},
          {"candidates", kCandidates},
          {"gamma", "min(ceil(0.1 n), 25)"},
          {"prior_weight", kPriorWeight},
          {"bandwidth", "0.2 n^(-1/(d+4)) clipped to [1/min(100, n+2), 1]"}};
  if (!feasibility_summary_.is_null()) summary["feasibility"] = feasibility_summary_;
  return summary;
}

}  // namespace
}  // namespace paratune::hpo::tpe

namespace paratune::hpo {

std::unique_ptr<Sampler> make_tpe_sampler(const Space& space, const SamplerOptions& options) {
  if (options.startup_trials < -1)
    throw Error(fmt::format("startup_trials: {} must be -1 (the sampler's default, {}) or >= 0", options.startup_trials,
                            tpe::kStartupTrials));
  return std::make_unique<tpe::TpeSampler>(space, options);
}

}  // namespace paratune::hpo
