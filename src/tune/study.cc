// Configuration studies in the one study loop (tune/study.h), and what their searches share.
#include "paratune/tune/study.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <map>
#include <random>

#include "paratune/hpo/study.h"
#include "paratune/spec/error.h"

namespace paratune::tune {
namespace {

constexpr std::array<std::string_view, 6> kAlgorithmNames{"grid", "random", "bo", "xgboost", "costmodel", "oppa"};
constexpr std::array<std::string_view, 4> kStopNames{"every point was tried", "max trials reached", "budget spent",
                                                     "interrupted"};

}  // namespace

std::uint64_t uniform_below(std::mt19937_64& rng, std::uint64_t n) {
  const std::uint64_t limit = std::numeric_limits<std::uint64_t>::max() - std::numeric_limits<std::uint64_t>::max() % n;
  for (;;) {
    const std::uint64_t x = rng();
    if (x < limit) return x % n;
  }
}

const char* to_string(Algorithm algorithm) { return kAlgorithmNames[static_cast<std::size_t>(algorithm)].data(); }

Algorithm parse_algorithm(std::string_view name) {
  for (std::size_t i = 0; i < kAlgorithmNames.size(); ++i)
    if (name == kAlgorithmNames[i]) return static_cast<Algorithm>(i);
  const std::vector<std::string> valid(kAlgorithmNames.begin(), kAlgorithmNames.end());
  throw Error(unknown_name_message("search algorithm", name, valid));
}

const char* to_string(StopReason reason) { return kStopNames[static_cast<std::size_t>(reason)].data(); }

std::vector<std::size_t> grid_order(const std::vector<std::vector<int>>& points, std::size_t budget) {
  const std::size_t n = points.size();
  std::vector<std::size_t> order;
  order.reserve(n);
  std::vector<char> taken(n, 0);
  if (budget > 0 && budget < n) {
    // How often each parameter's values were picked so far.
    std::vector<std::map<int, int>> used(points.front().size());
    for (std::size_t i = 0; i < budget; ++i) {
      // The i-th part of the grid (no overflow: n <= 10^7 points); neighbouring parts share at most
      // their boundary point, so each has a free one.
      const std::size_t low = i * n / budget, high = ((i + 1) * n + budget - 1) / budget;
      const double middle = 0.5 * static_cast<double>(low + high - 1);
      std::size_t best = n;
      long long best_score = 0;
      for (std::size_t j = low; j < high; ++j) {
        if (taken[j]) continue;
        long long score = 0;  // the picks so far that share a value with point j
        for (std::size_t p = 0; p < used.size(); ++p)
          if (const auto it = used[p].find(points[j][p]); it != used[p].end()) score += it->second;
        const bool nearer = best < n && std::abs(static_cast<double>(j) - middle) <
                                             std::abs(static_cast<double>(best) - middle);
        if (best == n || score < best_score || (score == best_score && nearer)) {
          best = j;
          best_score = score;
        }
      }
      order.push_back(best);
      taken[best] = 1;
      for (std::size_t p = 0; p < used.size(); ++p) ++used[p][points[best][p]];
    }
  }
  for (std::size_t i = 0; i < n; ++i)
    if (!taken[i]) order.push_back(i);
  return order;
}

std::vector<std::size_t> grid_order(std::size_t n, std::size_t budget) {
  std::vector<std::vector<int>> distinct(n);
  for (std::size_t i = 0; i < n; ++i) distinct[i] = {static_cast<int>(i)};
  return grid_order(distinct, budget);
}

nlohmann::ordered_json configuration_identity(const SearchSpace& view, const hpo::HpoOptions& options,
                                              const hpo::Pruner* stated_pruner) {
  nlohmann::ordered_json identity{{"space", view.describe()},
                                  {"command", options.command},
                                  {"steps", options.steps},
                                  {"memory_limit_bytes", options.limits.memory_limit_bytes},
                                  {"step_time_regex", options.step_time_regex}};
  if (stated_pruner) identity["pruner"] = stated_pruner->describe();
  return identity;
}

SpaceSize space_size(const SearchSpace& view) {
  return {view.enumerate().size(), view.is_listed() ? 0 : view.cartesian_size(), 0};
}

hpo::HpoSummary run_configuration_study(const hpo::Space& space, const SearchSpace& view, hpo::HpoOptions options,
                                        store::StudyStore& store, const trial::Backend& backend, hpo::Sampler& sampler,
                                        hpo::Pruner& pruner, const hpo::Pruner* stated_pruner,
                                        StudyObserver& observer, const std::atomic<int>& stop_requested) {
  options.objective = hpo::kThroughputObjective;
  options.direction = hpo::Direction::kMaximize;
  options.identity = configuration_identity(view, options, stated_pruner);
  hpo::HpoSummary summary = hpo::run_hpo(space, options, store, backend, sampler, pruner, observer, stop_requested);
  summary.space = space_size(view);
  return summary;
}

}  // namespace paratune::tune
