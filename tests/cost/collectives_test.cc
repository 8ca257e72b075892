#include "paratune/cost/collectives.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <string>
#include <tuple>
#include <vector>

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

// --- Placement of the worst group in Megatron order ---------------------------------------------------

TEST(Placement, Tp8OnEightGpuNodesStaysInTheNode) {
  const GroupPlacement g = place_group(8, 1, 8);
  EXPECT_FALSE(g.spans_nodes());
  EXPECT_EQ(g.nodes(), 1);
  EXPECT_EQ(g.ranks_per_node, 8);
}

TEST(Placement, Tp6OnEightGpuNodesStraddlesTwoNodes) {
  // Groups 0..5, 6..11, 12..17, 18..23: ranks 6..11 sit on nodes 0 (6, 7) and 1 (8..11).
  const GroupPlacement g = place_group(6, 1, 8);
  EXPECT_TRUE(g.spans_nodes());
  EXPECT_EQ(g.nodes(), 2);
  EXPECT_EQ(g.ranks_per_node, 2);   // node 0 holds 2 members: its 2 NIC shares bound the inter step
  EXPECT_EQ(g.fullest_node(), 4);   // node 1 holds 4: it bounds the NVLink steps
  // tp=4 and tp=2 tile 8-GPU nodes; tp=3 straddles (ranks 6, 7, 8).
  EXPECT_FALSE(place_group(4, 1, 8).spans_nodes());
  EXPECT_FALSE(place_group(2, 1, 8).spans_nodes());
  const GroupPlacement tp3 = place_group(3, 1, 8);
  EXPECT_EQ(tp3.nodes(), 2);
  EXPECT_EQ(tp3.ranks_per_node, 1);
  EXPECT_EQ(tp3.fullest_node(), 2);
}

TEST(Placement, DpAfterUnevenTpIsUneven) {
  // dp=4 with stride tp=6 on 8-GPU nodes: the group of tp rank 0 is ranks 0, 6, 12, 18 (nodes 0, 0, 1,
  // 2); the group of tp rank 2 is 2, 8, 14, 20 (nodes 0, 1, 1, 2).
  const GroupPlacement g = place_group(4, 6, 8);
  EXPECT_EQ(g.nodes(), 3);
  EXPECT_EQ(g.ranks_per_node, 1);
  EXPECT_EQ(g.fullest_node(), 2);
}

TEST(Placement, EvenTilingsKeepTheirFormulas) {
  // Groups that tile nodes evenly: uniform ranks_per_node, nodes = size / ranks_per_node, and the
  // collectives give what the flat formulas give.
  for (const auto& [size, stride, per_node] : std::vector<std::tuple<int, int, int>>{
           {16, 1, 8}, {16, 2, 4}, {16, 4, 2}, {16, 8, 1}, {32, 16, 1}, {4, 16, 1}}) {
    const GroupPlacement g = place_group(size, stride, 8);
    EXPECT_EQ(g.ranks_per_node, per_node) << size << " " << stride;
    EXPECT_EQ(g.fullest_node(), per_node) << size << " " << stride;
    EXPECT_EQ(g.nodes(), size / per_node) << size << " " << stride;
    const GroupPlacement even{size, per_node};
    EXPECT_DOUBLE_EQ(all_reduce_s(1e9, g, kFabric), all_reduce_s(1e9, even, kFabric));
    EXPECT_DOUBLE_EQ(reduce_scatter_s(1e9, g, kFabric),
                     ring_reduce_scatter_s(1e9, per_node, kFabric.intra) +
                         ring_reduce_scatter_s(1e9 / per_node, size / per_node, kFabric.inter));
  }
}

TEST(Placement, StraddlingCostsMoreThanTiling) {
  // tp=6 costs more per byte than tp=8 although it is smaller: it crosses the network.
  EXPECT_GT(all_reduce_s(1e9, place_group(6, 1, 8), kFabric), all_reduce_s(1e9, place_group(8, 1, 8), kFabric));
  // Uneven inter-node step: node 0 sends the 4/6 of the buffer owned by node 1's ranks over its 2 NICs.
  const GroupPlacement g = place_group(6, 1, 8);
  const double expected = ring_reduce_scatter_s(1e9, 4, kFabric.intra) + 5e-6 + 4.0 / 6 * 1e9 / 2 / 10e9;
  EXPECT_DOUBLE_EQ(reduce_scatter_s(1e9, g, kFabric), expected);
}

ClusterSpec nvl72_racks(int racks) {
  ClusterSpec c;
  c.gpus_per_node = 4;
  c.nodes = 18 * racks;
  c.nvlink_domain_gpus = 72;
  return c;
}

TEST(Placement, Nvl72PowerOfTwoGroupsStraddleRacks) {
  // 64-rank groups on 72-GPU racks: ranks 64..127 hold 8 members in rack 0 and 56 in rack 1.
  const GroupPlacement g = place_group(64, 1, nvl72_racks(2));
  EXPECT_EQ(g.nodes(), 2);
  EXPECT_EQ(g.ranks_per_node, 8);
  EXPECT_EQ(g.fullest_node(), 56);
  // With only 64 GPUs there is one group and it fits in one rack.
  ClusterSpec small = nvl72_racks(1);
  small.nodes = 16;
  EXPECT_FALSE(place_group(64, 1, small).spans_nodes());
  // ... and dp=2 over tp=32 on those 64 GPUs stays inside the rack too, where the endless pattern
  // of the gpus_per_node overload would find a straddling group (ranks 64+ on the next rack).
  EXPECT_FALSE(place_group(2, 32, small).spans_nodes());
  EXPECT_TRUE(place_group(2, 32, 72).spans_nodes());
  // tp=8 tiles 72-GPU racks (72 = 9 x 8).
  EXPECT_FALSE(place_group(8, 1, nvl72_racks(4)).spans_nodes());
}

TEST(Placement, PodsCountOnlyWithOversubscription) {
  ClusterSpec c;
  c.gpus_per_node = 8;
  c.nodes = 16;
  c.nodes_per_pod = 4;  // pods of 32 GPUs
  EXPECT_EQ(place_group(16, 8, c).pods, 1);  // non-blocking between pods: one fabric
  c.pod_oversubscription = 2;
  const GroupPlacement across = place_group(16, 8, c);  // dp=16 after tp=8: 16 nodes, 4 pods
  EXPECT_EQ(across.pods, 4);
  EXPECT_EQ(across.ranks_per_pod, 4);
  const GroupPlacement inside = place_group(4, 8, c);  // dp=4 after tp=8: 4 nodes of one pod
  EXPECT_EQ(inside.nodes(), 4);
  EXPECT_EQ(inside.pods, 1);
  // dp=3 after tp=8 (blocks of 24 ranks): ranks 24, 32, 40 straddle the first pod boundary.
  EXPECT_EQ(place_group(3, 8, c).pods, 2);
}

// Every group of the kind, enumerated: the worst by (pods, nodes, fewest per node, most per node,
// fewest per pod), as place_group defines it.
GroupPlacement brute_force_worst(int size, int stride, int domain, int pod, int ranks) {
  GroupPlacement worst{size, size, size, 1, 1, size};
  auto key = [](const GroupPlacement& g) {
    return std::make_tuple(g.pods, g.num_nodes, -g.ranks_per_node, g.max_ranks_per_node, -g.ranks_per_pod);
  };
  for (int base = 0; base + size * stride <= ranks; base += size * stride) {
    for (int j = 0; j < stride; ++j) {
      std::map<int, int> per_node, per_pod;
      for (int k = 0; k < size; ++k) {
        const int r = base + j + k * stride;
        ++per_node[r / domain];
        if (pod > 0) ++per_pod[r / pod];
      }
      GroupPlacement g{size, size, 0, static_cast<int>(per_node.size()), 1, size};
      for (const auto& [node, n] : per_node) {
        g.ranks_per_node = std::min(g.ranks_per_node, n);
        g.max_ranks_per_node = std::max(g.max_ranks_per_node, n);
      }
      if (pod > 0) {
        g.pods = static_cast<int>(per_pod.size());
        for (const auto& [p, n] : per_pod) g.ranks_per_pod = std::min(g.ranks_per_pod, n);
      }
      if (key(g) > key(worst)) worst = g;
    }
  }
  return worst;
}

TEST(Placement, MatchesEnumeratingEveryGroup) {
  for (const auto& [gpn, domain, nodes, nodes_per_pod] : std::vector<std::tuple<int, int, int, int>>{
           {8, 0, 24, 0}, {8, 0, 48, 4}, {4, 72, 72, 0}, {4, 72, 54, 36}, {6, 0, 16, 0}, {4, 64, 32, 32},
           {4, 72, 32, 0}, {4, 72, 45, 18}, {8, 0, 20, 4}}) {
    ClusterSpec c;
    c.gpus_per_node = gpn;
    c.nodes = nodes;
    c.nvlink_domain_gpus = domain;
    c.nodes_per_pod = nodes_per_pod;
    c.pod_oversubscription = 2;
    const int ranks = c.num_gpus();
    for (int size = 2; size <= ranks; ++size) {
      for (int stride = 1; size * stride <= ranks; ++stride) {
        if (ranks % (size * stride) != 0) continue;
        const GroupPlacement got = place_group(size, stride, c);
        const GroupPlacement want = brute_force_worst(size, stride, c.scale_up_gpus(), c.pod_gpus(), ranks);
        const std::string where = "gpn " + std::to_string(gpn) + " domain " + std::to_string(c.scale_up_gpus()) +
                                  " ranks " + std::to_string(ranks) + " size " + std::to_string(size) + " stride " +
                                  std::to_string(stride);
        ASSERT_EQ(got.nodes(), want.num_nodes) << where;
        ASSERT_EQ(got.ranks_per_node, want.ranks_per_node) << where;
        ASSERT_EQ(got.fullest_node(), want.max_ranks_per_node) << where;
        ASSERT_EQ(got.pods, want.pods) << where;
        ASSERT_EQ(got.fewest_in_pod(), want.ranks_per_pod) << where;
      }
    }
  }
}

// --- Ring versus tree, pods, all-to-all -------------------------------------------------------------

TEST(Collectives, TreeFormula) {
  // 2·⌈log2 n⌉·α + N / (0.46·B): 2,048 ranks -> 22 latency steps.
  EXPECT_DOUBLE_EQ(tree_all_reduce_s(1e9, 2048, kFabric.inter), 22 * 5e-6 + 1e9 / (0.46 * 10e9));
  EXPECT_DOUBLE_EQ(tree_all_reduce_s(1e9, 3, kFabric.inter), 4 * 5e-6 + 1e9 / (0.46 * 10e9));
  EXPECT_DOUBLE_EQ(tree_all_reduce_s(1e9, 1, kFabric.inter), 0);
}

TEST(Collectives, TreeBeatsRingForSmallAllReduceOverManyNodes) {
  // dp = 2,048 nodes, one rank per node, 1 MB: the ring's 4,094 latency steps (20 ms) lose to the
  // tree's 22 (0.1 ms + 0.2 ms of bandwidth); the tree is not free either.
  const GroupPlacement dp = place_group(2048, 8, 8);
  ASSERT_EQ(dp.nodes(), 2048);
  const double ring = ring_all_reduce_s(1e6, 2048, kFabric.inter);
  const double tree = tree_all_reduce_s(1e6, 2048, kFabric.inter);
  EXPECT_GT(ring, 4094 * 5e-6);
  EXPECT_LT(tree, ring / 10);
  EXPECT_DOUBLE_EQ(all_reduce_s(1e6, dp, kFabric), tree);
  EXPECT_GT(all_reduce_s(1e6, dp, kFabric), 22 * 5e-6);
}

TEST(Collectives, RingAndTreeBandwidthsAgreeForLargeAllReduce) {
  // 10 GB over 2,048 nodes: latency is noise; ring 2(n-1)/n·N/B against tree N/(0.46·B), within 10%,
  // and the ring (NCCL's choice for large messages) is the one charged.
  const GroupPlacement dp = place_group(2048, 8, 8);
  const double ring = ring_all_reduce_s(10e9, 2048, kFabric.inter);
  const double tree = tree_all_reduce_s(10e9, 2048, kFabric.inter);
  EXPECT_LT(tree / ring, 1.1);
  // Bandwidth terms alone: (1/0.46) / (2·2047/2048) = 1/0.92 to 0.1%.
  EXPECT_NEAR((tree - 22 * 5e-6) / (ring - 4094 * 5e-6), 1 / 0.92, 0.001);
  EXPECT_DOUBLE_EQ(all_reduce_s(10e9, dp, kFabric), ring);
}

TEST(Collectives, OversubscriptionSlowsOnlyGroupsSpanningPods) {
  ClusterSpec c;
  c.gpus_per_node = 8;
  c.nodes = 16;
  c.nodes_per_pod = 4;
  c.pod_oversubscription = 4;
  c.intra_node_bandwidth_bytes_per_s = 100e9;
  c.inter_node_bandwidth_bytes_per_s = 10e9;
  c.intra_node_latency_s = 1e-6;
  c.inter_node_latency_s = 5e-6;
  const Fabric fabric = make_fabric(c);
  EXPECT_DOUBLE_EQ(fabric.pod_oversubscription, 4);
  Fabric flat = fabric;
  flat.pod_oversubscription = 1;
  // Inside a pod: as on a non-blocking fabric.
  const GroupPlacement inside = place_group(4, 8, c);
  EXPECT_DOUBLE_EQ(all_reduce_s(1e9, inside, fabric), all_reduce_s(1e9, inside, flat));
  EXPECT_DOUBLE_EQ(reduce_scatter_s(1e9, inside, fabric), reduce_scatter_s(1e9, inside, flat));
  // Across pods: the inter-node ring runs at B / 4.
  const GroupPlacement across = place_group(16, 8, c);
  ASSERT_TRUE(across.spans_pods());
  EXPECT_DOUBLE_EQ(reduce_scatter_s(1e9, across, fabric),
                   ring_reduce_scatter_s(1e9, 16, Link{10e9 / 4, 5e-6}));
  EXPECT_NEAR(all_reduce_s(1e9, across, fabric) / all_reduce_s(1e9, across, flat), 4, 0.01);
  EXPECT_GT(all_to_all_s(1e9, across, fabric), all_to_all_s(1e9, across, flat));
}

TEST(Collectives, GroupLinkIsTheSlowestLinkCrossed) {
  ClusterSpec c;
  c.gpus_per_node = 8;
  c.nodes = 16;
  c.nodes_per_pod = 4;
  c.pod_oversubscription = 2;
  c.intra_node_bandwidth_bytes_per_s = 100e9;
  c.inter_node_bandwidth_bytes_per_s = 10e9;
  const Fabric f = make_fabric(c, 0.5, 0.8);
  EXPECT_DOUBLE_EQ(group_link(place_group(8, 1, c), f).bandwidth_bytes_per_s, 50e9);           // one node
  EXPECT_DOUBLE_EQ(group_link(place_group(2, 8, c), f).bandwidth_bytes_per_s, 8e9);            // two nodes, one pod
  EXPECT_DOUBLE_EQ(group_link(place_group(2, 64, c), f).bandwidth_bytes_per_s, 4e9);           // across pods
}

TEST(Collectives, AllToAllAcrossNodesAndPxn) {
  // ep=16 on 8-GPU nodes (8 per node): half of each rank's bytes cross the NIC, 7/16 stay on NVLink;
  // on rails, 7/8 of the remote half takes the PXN hop over NVLink too.
  const GroupPlacement g = place_group(16, 1, 8);
  Fabric slow_nvlink{Link{12e9, 1e-6}, Link{10e9, 5e-6}};
  const double nic = 0.5 * 1e9 / 10e9 + 5e-6;
  const double nvlink_pxn = (7.0 / 16 + 0.5 * 7 / 8) * 1e9 / 12e9 + 7e-6;
  EXPECT_DOUBLE_EQ(all_to_all_s(1e9, g, slow_nvlink), std::max(nic, nvlink_pxn));
  slow_nvlink.rail_optimized = false;
  EXPECT_DOUBLE_EQ(all_to_all_s(1e9, g, slow_nvlink), std::max(nic, 7.0 / 16 * 1e9 / 12e9 + 7e-6));
  // One rank per node (ep after tp=8): every peer is on our rail, no PXN hop.
  const GroupPlacement rails = place_group(16, 8, 8);
  Fabric on_rails = slow_nvlink;
  on_rails.rail_optimized = true;
  EXPECT_DOUBLE_EQ(all_to_all_s(1e9, rails, on_rails), all_to_all_s(1e9, rails, slow_nvlink));
}

}  // namespace
}  // namespace paratune
