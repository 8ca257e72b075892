#include "paratune/cost/collectives.h"

#include <gtest/gtest.h>

namespace paratune {
namespace {

const Fabric kFabric{Link{100e9, 1e-6}, Link{10e9, 5e-6}};

TEST(Collectives, RingAllReduceFormula) {
  // 2(D-1)α + 2(D-1)/D · N/B with D = 8, N = 1 GB, B = 100 GB/s, α = 1 us.
  EXPECT_DOUBLE_EQ(ring_all_reduce_s(1e9, 8, kFabric.intra), 14e-6 + 2.0 * 7 / 8 * 1e9 / 100e9);
  EXPECT_DOUBLE_EQ(ring_all_reduce_s(1e9, 1, kFabric.intra), 0);
}

TEST(Collectives, ReduceScatterAndAllGatherAreHalfAnAllReduce) {
  const GroupPlacement g = place_group(8, 1, 8);
  EXPECT_DOUBLE_EQ(reduce_scatter_s(1e9, g, kFabric) + all_gather_s(1e9, g, kFabric), all_reduce_s(1e9, g, kFabric));
}

TEST(Collectives, HierarchicalAllReduceAcrossNodes) {
  // 32 ranks, 8 per node: RS + AG inside the node plus an AR of N/8 over 4 nodes.
  const GroupPlacement g = place_group(32, 1, 8);
  EXPECT_TRUE(g.spans_nodes());
  EXPECT_EQ(g.nodes(), 4);
  const double expected = 2 * ring_reduce_scatter_s(1e9, 8, kFabric.intra) + ring_all_reduce_s(1e9 / 8, 4, kFabric.inter);
  EXPECT_DOUBLE_EQ(all_reduce_s(1e9, g, kFabric), expected);
}

TEST(Collectives, PlacementFollowsMegatronRankOrder) {
  EXPECT_EQ(place_group(8, 1, 8).ranks_per_node, 8);   // tp=8: one node
  EXPECT_EQ(place_group(16, 8, 8).ranks_per_node, 1);  // dp after tp=8: one rank per node
  EXPECT_EQ(place_group(8, 2, 8).ranks_per_node, 4);   // dp after tp=2: 4 per node
  EXPECT_FALSE(place_group(4, 2, 8).spans_nodes());
}

TEST(Collectives, PointToPoint) { EXPECT_DOUBLE_EQ(p2p_s(10e9, kFabric.inter), 5e-6 + 1.0); }

}  // namespace
}  // namespace paratune
