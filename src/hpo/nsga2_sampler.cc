// The NSGA-II sampler: the non-dominated sorting genetic algorithm II (Deb, Pratap, Agarwal &
// Meyarivan 2002, "A fast and elitist multiobjective genetic algorithm: NSGA-II", IEEE TEVC 6(2)),
// one offspring per proposal, as Optuna's NSGAIISampler asks it (optuna/samplers/nsgaii/_sampler.py,
// 3.1.0), for studies of several objectives (hpo/pareto.h) and of one.
//
// Generations. Trial number n (1, 2, ...) belongs to generation (n - 1) / population_size: the
// generations follow from the stored trials alone, so a resumed study or another worker computes
// the same ones (Optuna stores each trial's generation instead). Generation 0 draws from the prior.
// The parents of generation g (Deb et al. 2002, Sec. III-C, elitism): P_0 = {}, and P_{k+1} = the
// best population_size of P_k together with generation k's completed trials, best meaning by
// non-domination rank, the last front that does not fit whole cut by crowding distance (larger
// first; ties by trial number). A trial still running (parallel workers) is not a parent yet; a
// failed or pruned one never is (they have no objective vector), but the feasibility model below
// learns from the failed ones.
//
// One offspring (Deb et al. 2002, Sec. III-C and IV; the operators of Deb's reference code,
// nsga2-v1.1, crossover.c and mutation.c):
//   parents      two binary tournaments among the parents by the crowded-comparison operator
//                (lower rank wins; equal rank: the larger crowding distance; equal: either).
//   crossover    with probability 0.9 (Optuna's crossover_prob), else a copy of the first parent.
//                Parameters in declaration order, each only where it is active given those decided
//                (conditional spaces): active in both parents and numerical (float, int: their
//                unit coordinate, Space::to_unit, log already folded in) -> simulated binary
//                crossover (Deb & Agrawal 1995) bounded to [0, 1], eta_c = 20, applied to each
//                variable with probability 1/2 (else the first parent's value), one of its two
//                children at random; categorical -> either parent's value with probability 1/2
//                (uniform crossover, Optuna's default for every type); active in one parent -> its
//                value; in neither -> a draw from the prior.
//   mutation     each active parameter with probability 1 / (active parameters) (Optuna's default
//                mutation_prob): numerical -> polynomial mutation bounded to [0, 1], eta_m = 20
//                (Deb & Goyal 1996, as mutation.c); categorical -> a uniform choice.
//   constraints  an offspring breaking the space's constraints is bred again (up to 100 times),
//                then drawn from the prior.
// Failures: like tpe, gp and cmaes, an offspring is kept where it probably runs (feasibility.h:
// feasible_draw, bred again otherwise), and a configuration that failed deterministically is never
// proposed again.
//
// Randomness: one std::mt19937_64 per proposal seeded with (seed, trials in the history, repeat), as
// tpe.h describes, so the same seed and history give the same proposal, resumed or not.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <random>
#include <utility>

#include "paratune/hpo/encoding.h"
#include "paratune/hpo/feasibility.h"
#include "paratune/hpo/pareto.h"
#include "paratune/hpo/sampler.h"
#include "paratune/hpo/tpe.h"
#include "paratune/spec/error.h"

namespace paratune::hpo {
namespace {
namespace nsga2 {  // unity builds: names unique beside the other samplers'

constexpr int kDefaultPopulation = 50;      // Optuna NSGAIISampler population_size
constexpr double kCrossoverProbability = 0.9;  // Optuna crossover_prob; Deb et al. 2002, Sec. IV
constexpr double kSwapProbability = 0.5;    // per variable (SBX in nsga2-v1.1; Optuna swapping_prob)
constexpr double kEtaCrossover = 20;        // SBX distribution index (Deb et al. 2002, Sec. IV)
constexpr double kEtaMutation = 20;         // polynomial mutation's (same)
constexpr int kBreedAttempts = 100;

using tpe::uniform01;

// A parent: a completed trial's index into the history, its losses, rank and crowding distance
// within the parent population.
struct Member {
  std::size_t trial = 0;
  pareto::Losses losses;
  int rank = 0;
  double crowding = 0;
};

// Ranks and crowding distances of `members` among themselves (pareto.h).
void rank_members(std::vector<Member>& members) {
  std::vector<pareto::Losses> points;
  points.reserve(members.size());
  for (const Member& m : members) points.push_back(m.losses);
  const std::vector<int> ranks = pareto::nondomination_ranks(points);
  for (std::size_t i = 0; i < members.size(); ++i) members[i].rank = ranks[i];
  const int top = members.empty() ? -1 : *std::max_element(ranks.begin(), ranks.end());
  for (int r = 0; r <= top; ++r) {
    std::vector<std::size_t> front;
    for (std::size_t i = 0; i < members.size(); ++i)
      if (ranks[i] == r) front.push_back(i);
    const std::vector<double> distance = pareto::crowding_distances(points, front);
    for (std::size_t k = 0; k < front.size(); ++k) members[front[k]].crowding = distance[k];
  }
}

// The best `size` of `pool` (Deb et al. 2002, Sec. III-C): by rank, then crowding distance (larger
// first), then trial (earlier first); ranked among themselves again.
std::vector<Member> elite(std::vector<Member> pool, std::size_t size) {
  rank_members(pool);
  std::sort(pool.begin(), pool.end(), [](const Member& a, const Member& b) {
    if (a.rank != b.rank) return a.rank < b.rank;
    if (a.crowding != b.crowding) return a.crowding > b.crowding;
    return a.trial < b.trial;
  });
  if (pool.size() > size) pool.resize(size);
  rank_members(pool);
  return pool;
}

// SBX on the unit interval (nsga2-v1.1 crossover.c realcross, bounds 0 and 1): one of the two
// children of y1 and y2, at random.
double simulated_binary_crossover(double y1, double y2, std::mt19937_64& rng) {
  if (std::abs(y1 - y2) <= 1e-14) return y1;
  const double low = std::min(y1, y2), high = std::max(y1, y2);
  const double r = uniform01(rng);
  const auto spread = [&](double beta) {
    const double alpha = 2.0 - std::pow(beta, -(kEtaCrossover + 1.0));
    return r <= 1.0 / alpha ? std::pow(r * alpha, 1.0 / (kEtaCrossover + 1.0))
                            : std::pow(1.0 / (2.0 - r * alpha), 1.0 / (kEtaCrossover + 1.0));
  };
  const double c1 = 0.5 * ((low + high) - spread(1.0 + 2.0 * low / (high - low)) * (high - low));
  const double c2 = 0.5 * ((low + high) + spread(1.0 + 2.0 * (1.0 - high) / (high - low)) * (high - low));
  return std::clamp(uniform01(rng) < 0.5 ? c1 : c2, 0.0, 1.0);
}

// Polynomial mutation on the unit interval (nsga2-v1.1 mutation.c real_mutate_ind, bounds 0 and 1).
double polynomial_mutation(double y, std::mt19937_64& rng) {
  const double r = uniform01(rng);
  const double power = 1.0 / (kEtaMutation + 1.0);
  double delta = 0;
  if (r <= 0.5) {
    const double value = 2.0 * r + (1.0 - 2.0 * r) * std::pow(1.0 - y, kEtaMutation + 1.0);
    delta = std::pow(value, power) - 1.0;
  } else {
    const double value = 2.0 * (1.0 - r) + 2.0 * (r - 0.5) * std::pow(y, kEtaMutation + 1.0);
    delta = 1.0 - std::pow(value, power);
  }
  return std::clamp(y + delta, 0.0, 1.0);
}

class Nsga2Sampler final : public Sampler {
 public:
  Nsga2Sampler(const Space& space, const SamplerOptions& options)
      : space_(space),
        options_(options),
        encoding_(space),
        population_(options.population_size == -1 ? kDefaultPopulation : options.population_size) {}

  [[nodiscard]] std::string name() const override { return "nsga2"; }
  std::optional<Config> propose(const std::vector<TrialRecord>& trials) override;
  [[nodiscard]] nlohmann::ordered_json proposal_notes() const override { return notes_; }
  [[nodiscard]] nlohmann::ordered_json model_summary() const override;

 private:
  [[nodiscard]] std::optional<pareto::Losses> losses(const TrialRecord& trial) const;
  [[nodiscard]] std::size_t generation_of(int number) const {
    return static_cast<std::size_t>(std::max(number - 1, 0)) / static_cast<std::size_t>(population_);
  }
  [[nodiscard]] std::vector<Member> parents(const std::vector<TrialRecord>& trials, std::size_t generation) const;
  [[nodiscard]] const Member& tournament(const std::vector<Member>& parents, std::mt19937_64& rng) const;
  [[nodiscard]] Config prior_value(std::size_t param, std::mt19937_64& rng) const;
  [[nodiscard]] Config breed(const std::vector<TrialRecord>& trials, const std::vector<Member>& parents,
                             std::mt19937_64& rng, nlohmann::ordered_json& notes) const;

  const Space& space_;
  SamplerOptions options_;
  Encoding encoding_;
  int population_;
  std::size_t last_history_ = std::numeric_limits<std::size_t>::max();
  std::uint32_t repeat_ = 0;
  nlohmann::ordered_json notes_;
};

// A completed trial's losses (one per objective); nullopt for any other trial or one without every
// finite value.
std::optional<pareto::Losses> Nsga2Sampler::losses(const TrialRecord& trial) const {
  if (trial.state != TrialRecord::State::kCompleted) return std::nullopt;
  if (options_.directions.empty()) {
    if (!trial.value || !std::isfinite(*trial.value)) return std::nullopt;
    return pareto::Losses{as_loss(options_.direction, *trial.value)};
  }
  if (trial.values.size() != options_.directions.size()) return std::nullopt;
  for (double v : trial.values)
    if (!std::isfinite(v)) return std::nullopt;
  return pareto::losses_of(trial.values, options_.directions);
}

std::vector<Member> Nsga2Sampler::parents(const std::vector<TrialRecord>& trials, std::size_t generation) const {
  std::vector<std::vector<Member>> by_generation(generation);
  for (std::size_t i = 0; i < trials.size(); ++i) {
    const std::size_t g = generation_of(trials[i].number);
    if (g >= generation) continue;
    if (std::optional<pareto::Losses> l = losses(trials[i])) by_generation[g].push_back(Member{i, std::move(*l)});
  }
  std::vector<Member> population;
  for (std::vector<Member>& offspring : by_generation) {
    population.insert(population.end(), std::make_move_iterator(offspring.begin()),
                      std::make_move_iterator(offspring.end()));
    population = elite(std::move(population), static_cast<std::size_t>(population_));
  }
  return population;
}

const Member& Nsga2Sampler::tournament(const std::vector<Member>& parents, std::mt19937_64& rng) const {
  const std::size_t n = parents.size();
  const std::size_t a = static_cast<std::size_t>(uniform01(rng) * static_cast<double>(n)) % n;
  std::size_t b = static_cast<std::size_t>(uniform01(rng) * static_cast<double>(n - 1)) % (n - 1);
  if (b >= a) ++b;  // two different members
  const Member& x = parents[a];
  const Member& y = parents[b];
  if (x.rank != y.rank) return x.rank < y.rank ? x : y;
  if (x.crowding != y.crowding) return x.crowding > y.crowding ? x : y;
  return uniform01(rng) < 0.5 ? x : y;
}

Config Nsga2Sampler::prior_value(std::size_t param, std::mt19937_64& rng) const {
  const ParamSpec& p = space_.parameters()[param];
  if (p.type == ParamType::kCategorical)
    return p.choices[static_cast<std::size_t>(uniform01(rng) * static_cast<double>(p.choices.size())) % p.choices.size()];
  return Config(space_.from_unit(param, uniform01(rng)));
}

Config Nsga2Sampler::breed(const std::vector<TrialRecord>& trials, const std::vector<Member>& parents,
                           std::mt19937_64& rng, nlohmann::ordered_json& notes) const {
  const Member& first = tournament(parents, rng);
  const Member& second = tournament(parents, rng);
  const bool cross = uniform01(rng) < kCrossoverProbability;
  const Config& a = trials[first.trial].config;
  const Config& b = trials[second.trial].config;
  notes["parents"] = {trials[first.trial].number, trials[second.trial].number};
  notes["crossover"] = cross;
  Config child = Config::object();
  for (std::size_t i = 0; i < space_.size(); ++i) {
    if (!space_.is_active(i, child)) continue;
    const ParamSpec& p = space_.parameters()[i];
    const auto in_a = a.find(p.name);
    const auto in_b = b.find(p.name);
    const bool has_a = in_a != a.end(), has_b = in_b != b.end();
    Config value;
    if (!cross) {
      value = has_a ? *in_a : prior_value(i, rng);
    } else if (has_a && has_b) {
      if (p.type == ParamType::kCategorical) {
        value = uniform01(rng) < 0.5 ? *in_a : *in_b;
      } else {
        const double ua = space_.to_unit(i, *in_a), ub = space_.to_unit(i, *in_b);
        value = uniform01(rng) < kSwapProbability ? Config(space_.from_unit(i, simulated_binary_crossover(ua, ub, rng)))
                                                  : *in_a;
      }
    } else if (has_a || has_b) {
      value = has_a ? *in_a : *in_b;
    } else {
      value = prior_value(i, rng);
    }
    child[p.name] = value;
  }
  // Mutation over the parameters the child has (their count decides the rate).
  const double rate = 1.0 / static_cast<double>(std::max<std::size_t>(child.size(), 1));
  Config mutated = Config::object();
  for (std::size_t i = 0; i < space_.size(); ++i) {
    if (!space_.is_active(i, mutated)) continue;
    const ParamSpec& p = space_.parameters()[i];
    const auto it = child.find(p.name);
    // A parameter a mutation made active draws from the prior.
    Config value = it != child.end() ? *it : prior_value(i, rng);
    if (uniform01(rng) < rate)
      value = p.type == ParamType::kCategorical
                  ? prior_value(i, rng)
                  : Config(space_.from_unit(i, polynomial_mutation(space_.to_unit(i, value), rng)));
    mutated[p.name] = value;
  }
  return mutated;
}

std::optional<Config> Nsga2Sampler::propose(const std::vector<TrialRecord>& trials) {
  const std::size_t history = trials.size();
  repeat_ = history == last_history_ ? repeat_ + 1 : 0;
  last_history_ = history;
  std::seed_seq seeds{static_cast<std::uint32_t>(options_.seed), static_cast<std::uint32_t>(options_.seed >> 32),
                      static_cast<std::uint32_t>(history), repeat_};
  std::mt19937_64 rng(seeds);

  int next_number = 1;
  for (const TrialRecord& t : trials) next_number = std::max(next_number, t.number + 1);
  const std::size_t generation = generation_of(next_number);
  const std::vector<Member> population = parents(trials, generation);
  const bool from_prior = population.size() < 2;
  const Feasibility feasibility(trials, encoding_, options_.seed);
  // The notes of each draw, so that the one kept goes with its own (feasible_draw may keep any).
  std::vector<std::pair<Config, nlohmann::ordered_json>> attempts;
  const auto draw = [&] {
    nlohmann::ordered_json notes = {
        {"sampler", "nsga2"}, {"generation", generation}, {"parents_in_population", population.size()}};
    Config config = Config::object();
    if (from_prior) {
      notes["startup"] = true;
      config = space_.sample(rng);
    } else {
      bool bred = false;
      for (int attempt = 0; attempt < kBreedAttempts && !bred; ++attempt) {
        config = breed(trials, population, rng, notes);
        bred = space_.satisfies(config);
      }
      if (!bred) {
        notes["fallback"] = "no offspring satisfied the constraints; drawn from the prior";
        config = space_.sample(rng);
      }
    }
    attempts.emplace_back(config, std::move(notes));
    return config;
  };
  double p_runs = 1;
  std::optional<Config> config = feasible_draw(feasibility, draw, p_runs);
  if (!config) {
    notes_ = {{"sampler", "nsga2"}, {"fallback", "every draw was a configuration known to fail"}};
    return draw_not_known_to_fail(space_, feasibility, rng);
  }
  notes_ = std::find_if(attempts.rbegin(), attempts.rend(), [&](const auto& a) { return a.first == *config; })->second;
  if (feasibility.active()) notes_["p_runs"] = p_runs;
  return config;
}

nlohmann::ordered_json Nsga2Sampler::model_summary() const {
  return {{"sampler", "nsga2"},
          {"population_size", population_},
          {"crossover", "SBX (eta 20) on numerical parameters, uniform on categorical, probability 0.9"},
          {"mutation", "polynomial (eta 20) / uniform choice, probability 1 / parameters"},
          {"objectives", std::max<std::size_t>(options_.directions.size(), 1)}};
}

}  // namespace nsga2
}  // namespace

std::unique_ptr<Sampler> make_nsga2_sampler(const Space& space, const SamplerOptions& options) {
  if (options.population_size != -1 && options.population_size < 2)
    throw Error(fmt::format("population_size: {} must be -1 (the sampler's default, {}) or at least 2",
                            options.population_size, nsga2::kDefaultPopulation));
  return std::make_unique<nsga2::Nsga2Sampler>(space, options);
}

}  // namespace paratune::hpo
