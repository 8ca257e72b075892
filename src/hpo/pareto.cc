// Pareto ranking, crowding distance and hypervolume (hpo/pareto.h has the definitions and sources).
#include "paratune/hpo/pareto.h"

#include <fmt/format.h>

#include <algorithm>
#include <cassert>
#include <cmath>
#include <limits>
#include <numeric>

#include "paratune/spec/error.h"

namespace paratune::hpo::pareto {
namespace hypervolume_detail {

constexpr double kInfinity = std::numeric_limits<double>::infinity();

// The points strictly below the reference in every objective that no other such point dominates;
// of equal points one is kept.
std::vector<Losses> nondominated_below(const std::vector<Losses>& points, const Losses& reference) {
  std::vector<Losses> below;
  for (const Losses& p : points) {
    bool inside = true;
    for (std::size_t i = 0; i < reference.size(); ++i) inside = inside && p[i] < reference[i];
    if (inside) below.push_back(p);
  }
  std::sort(below.begin(), below.end());
  below.erase(std::unique(below.begin(), below.end()), below.end());
  std::vector<Losses> kept;
  for (std::size_t i = 0; i < below.size(); ++i) {
    bool dominated = false;
    for (std::size_t j = 0; j < below.size() && !dominated; ++j) dominated = j != i && dominates(below[j], below[i]);
    if (!dominated) kept.push_back(below[i]);
  }
  return kept;
}

// Two objectives: the points by the first objective (then the second); each adds the strip
// [x, r_x] x [y, lowest y so far), so a dominated point adds nothing.
double sweep_2d(std::vector<Losses> points, const Losses& reference) {
  std::sort(points.begin(), points.end());
  double volume = 0;
  double lowest = reference[1];
  for (const Losses& p : points) {
    if (p[1] >= lowest) continue;
    volume += (reference[0] - p[0]) * (lowest - p[1]);
    lowest = p[1];
  }
  return volume;
}

// HSO over the first `objectives` coordinates of points all below the reference: slabs of the last
// objective, each times the hypervolume of one objective fewer of the points at or below it.
double slice(std::vector<Losses> points, const Losses& reference, std::size_t objectives) {
  if (points.empty()) return 0;
  if (objectives == 2) return sweep_2d(std::move(points), reference);
  const std::size_t last = objectives - 1;
  std::sort(points.begin(), points.end(), [last](const Losses& a, const Losses& b) { return a[last] < b[last]; });
  double volume = 0;
  std::vector<Losses> below;
  for (std::size_t i = 0; i < points.size(); ++i) {
    below.push_back(points[i]);
    const double top = i + 1 < points.size() ? points[i + 1][last] : reference[last];
    const double thickness = top - points[i][last];
    if (thickness > 0) volume += thickness * slice(below, reference, objectives - 1);
  }
  return volume;
}

}  // namespace hypervolume_detail

Losses losses_of(std::span<const double> values, std::span<const Direction> directions) {
  assert(values.size() == directions.size());
  Losses losses(values.size());
  for (std::size_t i = 0; i < values.size(); ++i) losses[i] = as_loss(directions[i], values[i]);
  return losses;
}

bool dominates(std::span<const double> a, std::span<const double> b) {
  assert(a.size() == b.size());
  bool better_somewhere = false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (a[i] > b[i]) return false;
    better_somewhere = better_somewhere || a[i] < b[i];
  }
  return better_somewhere;
}

std::vector<int> nondomination_ranks(const std::vector<Losses>& points) {
  // Deb et al. 2002, Sec. III-A: S_p = the points p dominates, n_p = how many dominate p; the
  // front F_1 = {n_p = 0}; removing a front lowers n_q of the points it dominated.
  const std::size_t n = points.size();
  std::vector<std::vector<std::size_t>> dominated_by(n);
  std::vector<int> dominators(n, 0);
  for (std::size_t p = 0; p < n; ++p)
    for (std::size_t q = p + 1; q < n; ++q) {
      if (dominates(points[p], points[q])) {
        dominated_by[p].push_back(q);
        ++dominators[q];
      } else if (dominates(points[q], points[p])) {
        dominated_by[q].push_back(p);
        ++dominators[p];
      }
    }
  std::vector<int> rank(n, -1);
  std::vector<std::size_t> front;
  for (std::size_t p = 0; p < n; ++p)
    if (dominators[p] == 0) front.push_back(p);
  for (int r = 0; !front.empty(); ++r) {
    std::vector<std::size_t> next;
    for (std::size_t p : front) {
      rank[p] = r;
      for (std::size_t q : dominated_by[p])
        if (--dominators[q] == 0) next.push_back(q);
    }
    front = std::move(next);
  }
  return rank;
}

std::vector<std::size_t> pareto_front(const std::vector<Losses>& points) {
  const std::vector<int> rank = nondomination_ranks(points);
  std::vector<std::size_t> front;
  for (std::size_t i = 0; i < points.size(); ++i)
    if (rank[i] == 0) front.push_back(i);
  return front;
}

std::vector<double> crowding_distances(const std::vector<Losses>& points, const std::vector<std::size_t>& members) {
  const std::size_t n = members.size();
  std::vector<double> distance(n, 0.0);
  if (n == 0) return distance;
  const std::size_t objectives = points[members[0]].size();
  std::vector<std::size_t> order(n);
  for (std::size_t m = 0; m < objectives; ++m) {
    std::iota(order.begin(), order.end(), std::size_t{0});
    std::stable_sort(order.begin(), order.end(),
                     [&](std::size_t a, std::size_t b) { return points[members[a]][m] < points[members[b]][m]; });
    const double low = points[members[order.front()]][m];
    const double high = points[members[order.back()]][m];
    distance[order.front()] = hypervolume_detail::kInfinity;
    distance[order.back()] = hypervolume_detail::kInfinity;
    if (!(high > low)) continue;  // every member equal in this objective: it separates none
    for (std::size_t k = 1; k + 1 < n; ++k)
      distance[order[k]] += (points[members[order[k + 1]]][m] - points[members[order[k - 1]]][m]) / (high - low);
  }
  return distance;
}

double hypervolume(const std::vector<Losses>& points, const Losses& reference) {
  const std::size_t objectives = reference.size();
  for (const Losses& p : points)
    if (p.size() != objectives)
      throw Error(fmt::format("hypervolume: a point has {} objectives, the reference point {}", p.size(), objectives));
  std::vector<Losses> front = hypervolume_detail::nondominated_below(points, reference);
  if (front.empty()) return 0;
  if (objectives == 1) return reference[0] - front[0][0];
  if (objectives > 2) {
    const double work = std::pow(static_cast<double>(front.size()), static_cast<double>(objectives - 2));
    if (work > kMaxHypervolumeWork)
      throw Error(fmt::format("hypervolume: {} non-dominated points in {} objectives exceed the exact algorithm's limit "
                              "(points^(objectives - 2) <= {:g}, hpo/pareto.h)",
                              front.size(), objectives, kMaxHypervolumeWork));
  }
  return hypervolume_detail::slice(std::move(front), reference, objectives);
}

std::vector<double> hypervolume_contributions(const std::vector<Losses>& points, const Losses& reference) {
  const double whole = hypervolume(points, reference);
  std::vector<double> contribution(points.size());
  std::vector<Losses> others;
  for (std::size_t i = 0; i < points.size(); ++i) {
    others.assign(points.begin(), points.end());
    others.erase(others.begin() + static_cast<std::ptrdiff_t>(i));
    // Rounding may leave a dominated point's share a hair below zero.
    contribution[i] = std::max(0.0, whole - hypervolume(others, reference));
  }
  return contribution;
}

std::vector<std::size_t> greedy_hypervolume_subset(const std::vector<Losses>& points, std::size_t count,
                                                   const Losses& reference) {
  std::vector<std::size_t> chosen;
  if (count >= points.size()) {
    chosen.resize(points.size());
    std::iota(chosen.begin(), chosen.end(), std::size_t{0});
    return chosen;
  }
  std::vector<bool> taken(points.size(), false);
  std::vector<Losses> selected;
  double selected_volume = 0;
  while (chosen.size() < count) {
    std::size_t best = points.size();
    double best_gain = -1;
    for (std::size_t i = 0; i < points.size(); ++i) {
      if (taken[i]) continue;
      selected.push_back(points[i]);
      const double gain = hypervolume(selected, reference) - selected_volume;
      selected.pop_back();
      if (gain > best_gain) {
        best_gain = gain;
        best = i;
      }
    }
    taken[best] = true;
    chosen.push_back(best);
    selected.push_back(points[best]);
    selected_volume = hypervolume(selected, reference);
  }
  return chosen;
}

}  // namespace paratune::hpo::pareto
