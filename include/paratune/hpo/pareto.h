// Many objectives: Pareto dominance, non-dominated sorting, crowding distance and hypervolume, the
// pieces the multi-objective samplers (NSGA-II, multi-objective TPE), the benchmark and the reports
// share (one file, so that every place ranks and measures a front the same way).
//
// Every point here is a vector of losses, one per objective, smaller better (as_loss of each
// objective's value by its direction, losses_of): a maximised objective is negated first.
//
//   dominates(a, b)        a is no worse in every objective and better in at least one.
//   nondomination_ranks    Deb et al. 2002, "A fast and elitist multiobjective genetic algorithm:
//                          NSGA-II", Sec. III-A (fast non-dominated sort, O(M N^2)): rank 0 is the
//                          Pareto front, rank 1 the front once rank 0 is removed, and so on.
//   crowding_distances     Deb et al. 2002, Sec. III-B: per objective, the members sorted by it; the
//                          two extremes get infinity, every other member adds (next - previous) /
//                          (max - min) of its neighbours in that order (0 where max = min).
//   hypervolume            the Lebesgue measure of the region dominated by the points and bounded by
//                          the reference point r: the union over points p with p < r (every
//                          coordinate) of the boxes [p, r]; points not below r add nothing.
//                          2 objectives: exact by a sweep in O(N log N) (points by the first
//                          objective; each adds the strip between its second objective and the
//                          lowest before it). 3 and more: exact by slicing objectives (HSO, While,
//                          Hingston, Barone & Huband 2006, "A faster algorithm for calculating
//                          hypervolume", IEEE TEVC 10(1), Sec. III): the points sorted by the last
//                          objective, each slab between two consecutive values of it (the last one
//                          up to the reference) adds its thickness times the hypervolume, one
//                          objective fewer, of the points at or below it; the recursion ends at two
//                          objectives with the sweep. Cost O(N^(d-1) log N) for d objectives: 3
//                          objectives and a front of 300 points take milliseconds (the benchmark's
//                          DTLZ2). Size limit: N^(d-2) <= kMaxHypervolumeWork non-dominated points
//                          (e.g. 10^8 points for 3 objectives, 10^4 for 4, 464 for 5); beyond it
//                          hypervolume() throws Error instead of running for hours.
//   contributions          hv(S) - hv(S \ {p}) of each point: what it alone adds.
//   greedy subset          the hypervolume subset selection problem (HSSP) solved greedily, adding
//                          each time the point that adds the most (Guerreiro, Fonseca & Paquete
//                          2016, "Greedy hypervolume subset selection in low dimensions"; a
//                          (1 - 1/e)-approximation; Optuna 3.1's optuna/_hypervolume/hssp.py).
#pragma once

#include <cstddef>
#include <span>
#include <vector>

#include "paratune/hpo/trial_record.h"

namespace paratune::hpo::pareto {

// One point: a loss per objective, smaller better.
using Losses = std::vector<double>;

// The largest N^(d-2) (N non-dominated points, d objectives) hypervolume() measures (HSO's cost).
inline constexpr double kMaxHypervolumeWork = 1e8;

// Each objective's value as a loss (as_loss by its direction). values and directions have one entry
// per objective.
Losses losses_of(std::span<const double> values, std::span<const Direction> directions);

// a dominates b: a_i <= b_i for every i and a_j < b_j for some j (same length).
bool dominates(std::span<const double> a, std::span<const double> b);

// The non-domination rank of each point (0: not dominated by any; see above). NaN is not a point:
// callers pass finite losses.
std::vector<int> nondomination_ranks(const std::vector<Losses>& points);
// The indices of the points of rank 0, in their order.
std::vector<std::size_t> pareto_front(const std::vector<Losses>& points);

// The crowding distance of each of `members` (indices into points), in that order (see above).
std::vector<double> crowding_distances(const std::vector<Losses>& points, const std::vector<std::size_t>& members);

// The hypervolume of the points against `reference` (every point the reference's length; see
// above). 0 for no point below the reference. Throws Error with 3 or more objectives when the
// non-dominated points exceed the size limit (kMaxHypervolumeWork).
double hypervolume(const std::vector<Losses>& points, const Losses& reference);

// hv(points) - hv(points without i) for each i (0 for a dominated point or one not below the
// reference; two equal points contribute 0 each).
std::vector<double> hypervolume_contributions(const std::vector<Losses>& points, const Losses& reference);

// `count` indices of points chosen greedily for the most hypervolume against `reference` (above);
// ties go to the earlier point. count >= points.size(): every index.
std::vector<std::size_t> greedy_hypervolume_subset(const std::vector<Losses>& points, std::size_t count,
                                                   const Losses& reference);

}  // namespace paratune::hpo::pareto
