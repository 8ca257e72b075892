// Grid and random search over a hyperparameter space (hpo/sampler.h).
//
// grid: every configuration of a finite space in odometer order (Space::enumerate), each once;
// spread evenly over the grid first when --max-trials is smaller than it (tune::grid_order).
// random: a finite space of at most kMaxShuffled configurations is visited in a random order drawn
// from the seed, each configuration once (sampling without replacement, so a small grid is covered
// in as many trials as it has points) and in proportion to its prior mass (Space::prior_mass: a
// log-scaled integer favours its small values as independent draws would); any other space gets
// independent draws from the prior (Space::sample).
#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <random>

#include "paratune/hpo/sampler.h"
#include "paratune/spec/error.h"
#include "paratune/tune/study.h"

namespace paratune::hpo {
namespace {

constexpr std::size_t kMaxShuffled = 100'000;

// A fixed order of configurations, skipping those some trial already has (any state).
class OrderedSampler final : public Sampler {
 public:
  OrderedSampler(std::string name, std::vector<Config> order) : name_(std::move(name)), order_(std::move(order)) {}
  [[nodiscard]] std::string name() const override { return name_; }
  std::optional<Config> propose(const std::vector<TrialRecord>& trials) override {
    for (; cursor_ < order_.size(); ++cursor_) {
      const Config& c = order_[cursor_];
      if (std::none_of(trials.begin(), trials.end(), [&](const TrialRecord& t) { return t.config == c; }))
        return order_[cursor_++];
    }
    return std::nullopt;
  }

 private:
  std::string name_;
  std::vector<Config> order_;
  std::size_t cursor_ = 0;
};

class PriorSampler final : public Sampler {
 public:
  PriorSampler(const Space& space, std::uint64_t seed) : space_(space), rng_(seed) {}
  [[nodiscard]] std::string name() const override { return "random"; }
  // The draws go on from the seed; one equal to a trial's configuration is skipped, so a resumed
  // study (a fresh sampler, the same seed) continues the sequence rather than repeating it.
  std::optional<Config> propose(const std::vector<TrialRecord>& trials) override {
    for (std::size_t attempt = 0;; ++attempt) {
      Config config = space_.sample(rng_);
      if (attempt > trials.size() + 1000 ||
          std::none_of(trials.begin(), trials.end(), [&](const TrialRecord& t) { return t.config == config; }))
        return config;
    }
  }

 private:
  const Space& space_;
  std::mt19937_64 rng_;
};

}  // namespace

std::unique_ptr<Sampler> make_grid_sampler(const Space& space, const SamplerOptions& options) {
  const std::vector<Config> points = space.enumerate();
  // Each parameter's value as a label for grid_order (-1: not active in that configuration).
  std::vector<std::vector<int>> labels(points.size(), std::vector<int>(space.parameters().size(), -1));
  std::vector<std::map<std::string, int>> label_of(space.parameters().size());
  for (std::size_t i = 0; i < points.size(); ++i)
    for (std::size_t p = 0; p < space.parameters().size(); ++p)
      if (const auto it = points[i].find(space.parameters()[p].name); it != points[i].end())
        labels[i][p] = label_of[p].emplace(it->dump(), static_cast<int>(label_of[p].size())).first->second;
  std::vector<Config> order;
  // A listed space keeps its order (the planner's derived space lists the model's favourites first).
  for (std::size_t i : tune::grid_order(labels, space.is_listed() ? 0 : options.max_trials)) order.push_back(points[i]);
  return std::make_unique<OrderedSampler>("grid", std::move(order));
}

std::unique_ptr<Sampler> make_random_sampler(const Space& space, const SamplerOptions& options) {
  if (space.finite()) {
    std::uint64_t combinations = 1;
    for (const ParamSpec& p : space.parameters()) {
      combinations *= p.type == ParamType::kCategorical ? p.choices.size() : static_cast<std::uint64_t>(p.high - p.low + 1);
      if (combinations > kMaxShuffled) break;
    }
    if (combinations <= kMaxShuffled) {
      // Weighted sampling without replacement (Efraimidis and Spirakis 2006): each configuration
      // draws the key log(u)/w, u uniform in (0, 1], w its prior mass; the largest keys come first.
      // Equal masses give a uniform random order.
      std::vector<Config> points = space.enumerate();
      std::mt19937_64 rng(options.seed);
      std::vector<std::pair<double, std::size_t>> keyed;
      keyed.reserve(points.size());
      for (std::size_t i = 0; i < points.size(); ++i) {
        const double u = 1.0 - static_cast<double>(rng() >> 11) * 0x1.0p-53;  // (0, 1]
        keyed.emplace_back(std::log(u) / space.prior_mass(points[i]), i);
      }
      std::sort(keyed.begin(), keyed.end(), std::greater<>());
      std::vector<Config> order;
      order.reserve(points.size());
      for (const auto& [key, i] : keyed) order.push_back(std::move(points[i]));
      return std::make_unique<OrderedSampler>("random", std::move(order));
    }
  }
  return std::make_unique<PriorSampler>(space, options.seed);
}

}  // namespace paratune::hpo
