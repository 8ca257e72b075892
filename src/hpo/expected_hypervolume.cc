#include "expected_hypervolume.h"

#include <cstddef>

namespace paratune::hpo::gp_detail {

double hypervolume_improvement(const std::vector<pareto::Losses>& front, const pareto::Losses& reference,
                               double front_hv, const pareto::Losses& y) {
  for (std::size_t j = 0; j < y.size(); ++j)
    if (!(y[j] < reference[j])) return 0;
  for (const pareto::Losses& p : front) {
    bool weakly_dominates = true;
    for (std::size_t j = 0; j < y.size() && weakly_dominates; ++j) weakly_dominates = p[j] <= y[j];
    if (weakly_dominates) return 0;
  }
  std::vector<pareto::Losses> with_y = front;
  with_y.push_back(y);
  // Rounding can leave a hair below zero where y adds almost nothing.
  const double improvement = pareto::hypervolume(with_y, reference) - front_hv;
  return improvement > 0 ? improvement : 0;
}

double expected_hypervolume_improvement(const std::vector<pareto::Losses>& front, const pareto::Losses& reference,
                                        double front_hv, std::span<const double> mean, std::span<const double> sd,
                                        const std::vector<pareto::Losses>& draws) {
  if (draws.empty()) return 0;
  pareto::Losses y(mean.size());
  double sum = 0;
  for (const pareto::Losses& z : draws) {
    for (std::size_t j = 0; j < y.size(); ++j) y[j] = mean[j] + sd[j] * z[j];
    sum += hypervolume_improvement(front, reference, front_hv, y);
  }
  return sum / static_cast<double>(draws.size());
}

}  // namespace paratune::hpo::gp_detail
