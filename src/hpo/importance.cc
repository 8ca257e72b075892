#include "paratune/hpo/importance.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

namespace paratune::hpo {
namespace {
constexpr int kBins = 4;
}  // namespace

std::optional<double> explained_share(const std::vector<int>& group, const std::vector<double>& values) {
  const std::size_t n = values.size();
  // The share is the same for the values times any factor: divided by their largest magnitude first,
  // so that the sums of squares cannot overflow (objectives of 1e200 made them inf / inf).
  double scale = 0;
  for (double v : values) scale = std::max(scale, std::abs(v));
  if (!(scale > 0 && std::isfinite(scale))) scale = 1;
  std::vector<double> scaled;
  scaled.reserve(n);
  for (double v : values) scaled.push_back(v / scale);
  std::map<int, std::pair<double, int>> sums;  // group -> (sum of values, count)
  for (std::size_t t = 0; t < n; ++t) {
    auto& [sum, count] = sums[group[t]];
    sum += scaled[t];
    ++count;
  }
  const std::size_t k = sums.size();
  // Each group must average two trials: with one each, the groups' means are the trials themselves
  // and there is no within-group variance to tell an effect from noise.
  if (n < 2 * k || n < 2) return std::nullopt;
  double mean = 0;
  for (double v : scaled) mean += v;
  mean /= static_cast<double>(n);
  double total = 0;
  for (double v : scaled) total += (v - mean) * (v - mean);
  if (!(total > 0)) return 0.0;  // every trial the same: nothing to explain
  double between = 0;
  for (const auto& [g, sc] : sums) {
    const double group_mean = sc.first / sc.second;
    between += sc.second * (group_mean - mean) * (group_mean - mean);
  }
  const double within = total - between;
  const double corrected = between - static_cast<double>(k - 1) * within / static_cast<double>(n - k);
  return std::clamp(corrected / total, 0.0, 1.0);
}

std::vector<Importance> parameter_importance(const Space& space, const std::vector<TrialRecord>& trials) {
  std::vector<const TrialRecord*> done;
  for (const TrialRecord& t : trials)
    if (t.state == TrialRecord::State::kCompleted && t.value && std::isfinite(*t.value)) done.push_back(&t);
  if (done.size() < kMinImportanceTrials) return {};
  std::vector<double> values;
  values.reserve(done.size());
  for (const TrialRecord* t : done) values.push_back(*t->value);

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
    std::vector<int> groups;
    groups.reserve(done.size());
    for (const TrialRecord* t : done) groups.push_back(group_of(*t));
    const std::optional<double> share = explained_share(groups, values);
    if (!share) continue;  // too many groups for the trials: not measurable yet
    const auto distinct = std::set<int>(groups.begin(), groups.end()).size();
    out.push_back({p.name, *share, static_cast<int>(distinct), static_cast<int>(done.size())});
  }
  std::stable_sort(out.begin(), out.end(), [](const Importance& a, const Importance& b) { return a.share > b.share; });
  return out;
}

}  // namespace paratune::hpo
