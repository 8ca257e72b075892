#include "paratune/hpo/importance.h"

#include <algorithm>
#include <cmath>
#include <map>

namespace paratune::hpo {
namespace {
constexpr int kBins = 4;
constexpr std::size_t kMinTrials = 4;
}  // namespace

std::vector<Importance> parameter_importance(const Space& space, const std::vector<TrialRecord>& trials) {
  std::vector<const TrialRecord*> done;
  for (const TrialRecord& t : trials)
    if (t.state == TrialRecord::State::kCompleted && t.value && std::isfinite(*t.value)) done.push_back(&t);
  if (done.size() < kMinTrials) return {};
  double mean = 0;
  for (const TrialRecord* t : done) mean += *t->value;
  mean /= static_cast<double>(done.size());
  double total = 0;
  for (const TrialRecord* t : done) total += (*t->value - mean) * (*t->value - mean);

  std::vector<Importance> out;
  for (std::size_t i = 0; i < space.size(); ++i) {
    const ParamSpec& p = space.parameters()[i];
    // Each trial's group: -1 inactive, a choice's index, or a quantile bin of the unit coordinate.
    std::vector<double> coordinates;
    for (const TrialRecord* t : done)
      if (t->config.contains(p.name) && p.type != ParamType::kCategorical)
        coordinates.push_back(space.to_unit(i, t->config[p.name]));
    std::sort(coordinates.begin(), coordinates.end());
    const auto group_of = [&](const TrialRecord& t) -> int {
      if (!t.config.contains(p.name)) return -1;
      if (p.type == ParamType::kCategorical) return static_cast<int>(space.choice_index(i, t.config[p.name]));
      const double u = space.to_unit(i, t.config[p.name]);
      const auto rank = static_cast<double>(std::lower_bound(coordinates.begin(), coordinates.end(), u) - coordinates.begin());
      return std::min(kBins - 1, static_cast<int>(rank * kBins / static_cast<double>(coordinates.size())));
    };
    std::map<int, std::pair<double, int>> sums;  // group -> (sum of y, count)
    for (const TrialRecord* t : done) {
      auto& [sum, count] = sums[group_of(*t)];
      sum += *t->value;
      ++count;
    }
    double between = 0;
    for (const auto& [group, sc] : sums) {
      const double group_mean = sc.first / sc.second;
      between += sc.second * (group_mean - mean) * (group_mean - mean);
    }
    out.push_back({p.name, total > 0 ? between / total : 0, static_cast<int>(sums.size())});
  }
  std::stable_sort(out.begin(), out.end(), [](const Importance& a, const Importance& b) { return a.share > b.share; });
  return out;
}

}  // namespace paratune::hpo
