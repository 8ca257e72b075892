// α–β costs of the collectives paratune models, ring algorithms, hierarchical across nodes.
//
// Notation (Thakur, Rabenseifner & Gropp 2005, "Optimization of Collective Communication
// Operations in MPICH"; Chan et al. 2007): a group of D ranks, a message of N bytes (the full,
// unsharded buffer), per-step latency α (s), link bandwidth B (bytes/s, per rank per direction).
//   all-reduce (ring)      2(D-1)·α + 2(D-1)/D · N/B
//   reduce-scatter (ring)   (D-1)·α +  (D-1)/D · N/B      (N = input size of each rank)
//   all-gather (ring)       (D-1)·α +  (D-1)/D · N/B      (N = output size of each rank)
//   all-to-all (pairwise)   (D-1)·α +  (D-1)/D · N/B      (N = bytes each rank holds before)
//   point-to-point               α +  N/B
// A group that spans n nodes with g ranks in each runs hierarchically (NCCL trees/rings behave
// alike to first order): reduce-scatter inside the node, the inter-node collective on N/g bytes
// over the n nodes, then all-gather inside the node. Each of the g GPUs drives its own NIC share,
// so the inter-node step runs g rings in parallel, each at the per-GPU inter-node bandwidth.
#pragma once

namespace paratune {

struct Link {
  double bandwidth_bytes_per_s = 0;  // achieved, per rank per direction
  double latency_s = 0;              // per ring step
};

// Where a communication group's ranks live: `size` ranks, `ranks_per_node` of them in each node.
struct GroupPlacement {
  int size = 1;
  int ranks_per_node = 1;
  [[nodiscard]] int nodes() const { return (size + ranks_per_node - 1) / ranks_per_node; }
  [[nodiscard]] bool spans_nodes() const { return size > ranks_per_node; }
};

// Placement of a group of `size` ranks whose consecutive members are `stride` global ranks apart,
// on nodes of `gpus_per_node` consecutive ranks (Megatron-LM rank order).
GroupPlacement place_group(int size, int stride, int gpus_per_node);

struct Fabric {
  Link intra;
  Link inter;
};

double all_reduce_s(double bytes, const GroupPlacement& group, const Fabric& fabric);
double reduce_scatter_s(double bytes, const GroupPlacement& group, const Fabric& fabric);
double all_gather_s(double bytes, const GroupPlacement& group, const Fabric& fabric);
double all_to_all_s(double bytes, const GroupPlacement& group, const Fabric& fabric);
double p2p_s(double bytes, const Link& link);

// Flat ring formulas on one link class (exposed for tests and for the hierarchical composition).
double ring_all_reduce_s(double bytes, int ranks, const Link& link);
double ring_reduce_scatter_s(double bytes, int ranks, const Link& link);  // = ring all-gather

}  // namespace paratune
