// Pareto ranking, crowding distance and hypervolume (src/hpo/pareto.cc): hand-worked fronts in two
// and three objectives, and the exact hypervolume against inclusion-exclusion over every subset of
// small random sets (the definition: the union of the boxes [p, r]).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "paratune/hpo/pareto.h"
#include "paratune/spec/error.h"

namespace paratune::hpo::pareto {
namespace {
namespace pareto_test {  // the unity build puts other tests' helpers beside these

// The volume of the union of the boxes [p, r] by inclusion-exclusion: the sum over non-empty
// subsets T of (-1)^(|T|+1) times the volume of the box [max over T, r].
double inclusion_exclusion(const std::vector<Losses>& points, const Losses& reference) {
  double volume = 0;
  const std::size_t n = points.size();
  for (std::size_t mask = 1; mask < (std::size_t{1} << n); ++mask) {
    Losses corner(reference.size(), -INFINITY);
    int members = 0;
    for (std::size_t i = 0; i < n; ++i)
      if (mask & (std::size_t{1} << i)) {
        ++members;
        for (std::size_t d = 0; d < reference.size(); ++d) corner[d] = std::max(corner[d], points[i][d]);
      }
    double box = 1;
    for (std::size_t d = 0; d < reference.size(); ++d) box *= std::max(0.0, reference[d] - corner[d]);
    volume += (members % 2 == 1 ? 1 : -1) * box;
  }
  return volume;
}

}  // namespace pareto_test

TEST(Pareto, DominanceNeedsNoWorseEverywhereAndBetterSomewhere) {
  EXPECT_TRUE(dominates(Losses{1, 2}, Losses{1, 3}));
  EXPECT_TRUE(dominates(Losses{0, 0, 0}, Losses{1, 1, 1}));
  EXPECT_FALSE(dominates(Losses{1, 2}, Losses{1, 2}));  // equal: neither
  EXPECT_FALSE(dominates(Losses{1, 3}, Losses{2, 2}));  // a trade-off: neither
  EXPECT_FALSE(dominates(Losses{2, 2}, Losses{1, 3}));
}

TEST(Pareto, LossesNegateMaximisedObjectives) {
  const std::vector<double> values{0.5, 0.9};
  const std::vector<Direction> directions{Direction::kMinimize, Direction::kMaximize};
  EXPECT_EQ(losses_of(values, directions), (Losses{0.5, -0.9}));
}

TEST(Pareto, RanksPeelFrontAfterFront) {
  // (1,1) and (0,5) are not dominated; (2,2) and (1,3) only by (1,1); (3,3) by (2,2) as well.
  const std::vector<Losses> points{{2, 2}, {1, 1}, {3, 3}, {0, 5}, {1, 3}, {1, 1}};
  EXPECT_EQ(nondomination_ranks(points), (std::vector<int>{1, 0, 2, 0, 1, 0}));
  EXPECT_EQ(pareto_front(points), (std::vector<std::size_t>{1, 3, 5}));
  EXPECT_TRUE(nondomination_ranks({}).empty());
}

TEST(Pareto, CrowdingDistanceByHand) {
  // Front (0,4), (1,2), (3,1), (4,0), range 4 in both objectives. Objective 0 order 0,1,3,4:
  // (1,2) gets (3 - 0)/4, (3,1) gets (4 - 1)/4. Objective 1 order 0,1,2,4: (3,1) gets (2 - 0)/4,
  // (1,2) gets (4 - 1)/4. The extremes are infinite.
  const std::vector<Losses> points{{3, 1}, {0, 4}, {4, 0}, {1, 2}};
  const std::vector<double> d = crowding_distances(points, {0, 1, 2, 3});
  EXPECT_DOUBLE_EQ(d[0], 0.75 + 0.5);
  EXPECT_TRUE(std::isinf(d[1]));
  EXPECT_TRUE(std::isinf(d[2]));
  EXPECT_DOUBLE_EQ(d[3], 0.75 + 0.75);
  // A subset of members: only they count.
  const std::vector<double> sub = crowding_distances(points, {1, 3, 0});
  EXPECT_TRUE(std::isinf(sub[0]));
  EXPECT_DOUBLE_EQ(sub[1], (3.0 - 0.0) / 3.0 + (4.0 - 1.0) / 3.0);
  EXPECT_TRUE(std::isinf(sub[2]));
}

TEST(Pareto, HypervolumeInTwoObjectivesByHand) {
  // The staircase (1,3), (2,2), (3,1) under (4,4): strips 3 x 1 + 2 x 1 + 1 x 1 = 6.
  const Losses reference{4, 4};
  EXPECT_DOUBLE_EQ(hypervolume({{1, 3}, {2, 2}, {3, 1}}, reference), 6.0);
  // A dominated point, a duplicate and points not below the reference add nothing.
  EXPECT_DOUBLE_EQ(hypervolume({{3, 1}, {1, 3}, {3, 3}, {2, 2}, {2, 2}, {4, 0}, {0, 4}, {5, -1}}, reference), 6.0);
  EXPECT_DOUBLE_EQ(hypervolume({}, reference), 0.0);
  EXPECT_DOUBLE_EQ(hypervolume({{4, 4}}, reference), 0.0);
}

TEST(Pareto, HypervolumeInThreeObjectivesByHand) {
  const Losses reference{2, 2, 2};
  EXPECT_DOUBLE_EQ(hypervolume({{1, 1, 1}}, reference), 1.0);
  // Boxes 2 x 2 x 1 and 1 x 1 x 2 overlapping in [1,2]^3: 4 + 2 - 1 = 5.
  EXPECT_DOUBLE_EQ(hypervolume({{0, 0, 1}, {1, 1, 0}}, reference), 5.0);
  // The three unit-cube corners (0,1,1), (1,0,1), (1,1,0) under (2,2,2): each box 2 x 1 x 1 = 2,
  // each pair overlaps in [1,2]^3 (1), the three together in [1,2]^3 too: 6 - 3 + 1 = 4.
  EXPECT_DOUBLE_EQ(hypervolume({{0, 1, 1}, {1, 0, 1}, {1, 1, 0}}, reference), 4.0);
}

TEST(Pareto, HypervolumeEqualsInclusionExclusionOnRandomSets) {
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  for (std::size_t objectives : {2, 3, 4, 5})
    for (int set = 0; set < 20; ++set) {
      std::vector<Losses> points(9, Losses(objectives));
      for (Losses& p : points)
        for (double& x : p) x = u(rng);
      // Some points beyond the reference in one objective.
      const Losses reference(objectives, 0.95);
      const double exact = pareto_test::inclusion_exclusion(
          [&] {
            std::vector<Losses> inside;
            for (const Losses& p : points)
              if (std::all_of(p.begin(), p.end(), [](double x) { return x < 0.95; })) inside.push_back(p);
            return inside;
          }(),
          reference);
      EXPECT_NEAR(hypervolume(points, reference), exact, 1e-12) << objectives << " objectives, set " << set;
    }
}

TEST(Pareto, ContributionsAndGreedySubsetByHand) {
  const Losses reference{4, 4};
  // Each point of the staircase alone adds the unit square at its corner.
  const std::vector<double> c = hypervolume_contributions({{1, 3}, {2, 2}, {3, 1}, {3, 3}}, reference);
  EXPECT_DOUBLE_EQ(c[0], 1.0);
  EXPECT_DOUBLE_EQ(c[1], 1.0);
  EXPECT_DOUBLE_EQ(c[2], 1.0);
  EXPECT_DOUBLE_EQ(c[3], 0.0);  // dominated
  // Alone, (2,2) covers 4 and the others 3: it comes first; then either end adds 1 (ties: earlier).
  EXPECT_EQ(greedy_hypervolume_subset({{1, 3}, {2, 2}, {3, 1}}, 1, reference), (std::vector<std::size_t>{1}));
  EXPECT_EQ(greedy_hypervolume_subset({{1, 3}, {2, 2}, {3, 1}}, 2, reference), (std::vector<std::size_t>{1, 0}));
  EXPECT_EQ(greedy_hypervolume_subset({{1, 3}, {2, 2}}, 5, reference), (std::vector<std::size_t>{0, 1}));
}

TEST(Pareto, HypervolumeRefusesAFrontBeyondItsSizeLimit) {
  // 500 points on the simplex in 5 objectives are mutually non-dominated: 500^3 > 10^8.
  std::mt19937_64 rng(3);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  std::vector<Losses> points(500, Losses(5));
  for (Losses& p : points) {
    double sum = 0;
    for (double& x : p) sum += (x = u(rng));
    for (double& x : p) x /= sum;
  }
  try {
    (void)hypervolume(points, Losses(5, 2.0));
    FAIL() << "expected Error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("500 non-dominated points in 5 objectives"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace paratune::hpo::pareto
