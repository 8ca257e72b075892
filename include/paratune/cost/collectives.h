// α–β costs of the collectives paratune models: rings inside an NVLink domain, hierarchical across
// domains with NCCL's ring/tree choice for all-reduce, priced for the worst group of each kind.
//
// Notation (Thakur, Rabenseifner & Gropp 2005, "Optimization of Collective Communication
// Operations in MPICH"; Chan et al. 2007): a group of D ranks, a message of N bytes (the full,
// unsharded buffer), per-step latency α (s), link bandwidth B (bytes/s, per rank per direction).
//   all-reduce (ring)      2(D-1)·α + 2(D-1)/D · N/B
//   reduce-scatter (ring)   (D-1)·α +  (D-1)/D · N/B      (N = input size of each rank)
//   all-gather (ring)       (D-1)·α +  (D-1)/D · N/B      (N = output size of each rank)
//   all-to-all (pairwise)   (D-1)·α +  (D-1)/D · N/B      (N = bytes each rank holds before)
//   point-to-point               α +  N/B
//
// "Node" below means one NVLink (scale-up) domain: callers pass ClusterSpec::scale_up_gpus() (or
// the ClusterSpec overload of place_group), which is the node itself except on multi-node NVLink
// systems such as GB200 NVL72 (72 GPUs over 18 trays).
//
// Hierarchical collectives. A group of D ranks spanning n nodes, m of them in the node that holds the
// fewest and M in the node that holds the most, runs reduce-scatter inside each node, the inter-node
// collective on each rank's N/m shard, then all-gather inside the node (NCCL's rings and trees
// behave alike to first order). Every GPU drives its own share of the node's NICs, and the other
// groups of the same kind use the other GPUs' shares at the same time, so the node holding m
// members moves its traffic over m NIC shares; that node bounds the inter-node step:
//   inter-node reduce-scatter   (n-1)·α + (ν-1)/ν · (N/m)/B,   ν = D/m
// (the node sends the (D-m)/D of the buffer owned by other nodes over m NICs). When the group
// tiles nodes evenly, m = M = D/n and ν = n: the classic (n-1)/n · (N/m)/B. The intra-node steps run
// on the fullest node: ring reduce-scatter over M ranks.
//
// All-reduce across nodes: NCCL picks ring or double binary tree per message size from its tuning
// model (NCCL src/graph/tuning.cc, ncclTopoTuneModel; Sanders, Speck & Träff 2009 for the double
// binary tree); we take the faster of the two for the inter-node step:
//   ring   2(n-1)·α + 2(ν-1)/ν · (N/m)/B
//   tree   2·⌈log2 n⌉·α + (N/m) / (0.5 · 0.92 · B)
// Tree latency: a reduce up and a broadcast down the tree, ⌈log2 n⌉ hops each (NCCL:
// 2·log2i(nNodes)·interLat with log2i = floor(log2); ⌈ ⌉ is the same for powers of two and one hop
// pair more otherwise). Tree bandwidth: NCCL's algorithm bandwidth for tree is busBw × 0.5 (each
// rank sends and receives the whole buffer once up and once down) and it caps tree all-reduce
// busBw at 0.92 × the link bandwidth: kTreeBandwidthRatio below. Rings need 2(n-1) latency steps
// (4,094 for 2,048 nodes); trees need 22 but move ~2.17 N/B against the ring's ≤ 2 N/B, so small
// messages over many nodes go to the tree and large ones stay on the ring.
// Reduce-scatter and all-gather stay rings (NCCL has only ring for them across nodes, apart from PAT
// in NCCL ≥ 2.23 at one rank per node, not modelled): their latency grows linearly with n, as it does
// on real clusters.
//
// Pods. With ClusterSpec::nodes_per_pod > 0 a group whose ranks lie in more than one pod runs every
// inter-node step at B / pod_oversubscription: a ring or tree crossing the pod boundary is bounded
// by its slowest links, the oversubscribed uplinks between pods (leaf/spine sizing as in the NVIDIA
// DGX SuperPOD reference architecture: non-blocking inside a scalable unit).
//
// All-to-all across nodes. The worst rank, in the node with the fewest members m, sends (D-m)/D of
// its N bytes over its NIC share; the fullest node's ranks send (M-1)/D over NVLink; the slower of
// the two wins (they run concurrently). Across pods the share bound for other pods, (D-p)/D with p
// the fewest members in any spanned pod, runs at B / pod_oversubscription. On a rail-optimized
// fabric (ClusterSpec::rail_optimized) a message to a GPU of another local index crosses rails:
// NCCL's PXN (NCCL ≥ 2.12) first moves it over NVLink to the local GPU on the destination's rail,
// which sends it on that rail. To first order that is extra NVLink volume: (M-1)/M of the remote
// bytes (in each remote node one of the peers shares our rail). Without rail optimization the NIC
// sends straight through the leaf/spine and there is no extra hop.
#pragma once

#include "paratune/spec/hardware.h"

namespace paratune::cost_detail {
class MeasuredRates;  // src/cost/measured_rates.h
struct KernelLog;
}  // namespace paratune::cost_detail

namespace paratune {

struct Link {
  double bandwidth_bytes_per_s = 0;  // achieved, per rank per direction
  double latency_s = 0;              // per ring step
};

// Where a communication group's ranks live: the WORST group among all groups of one kind laid out in
// Megatron-LM order (see place_group). `GroupPlacement{size, ranks_per_node}` describes a group that
// tiles nodes evenly, `ranks_per_node` in each.
struct GroupPlacement {
  int size = 1;
  int ranks_per_node = 1;       // fewest members any spanned node holds (its NIC share bounds the inter step)
  int max_ranks_per_node = 0;   // most members any spanned node holds; 0 = ranks_per_node
  int num_nodes = 0;            // nodes the group spans; 0 = ceil(size / ranks_per_node)
  int pods = 1;                 // pods the group spans (1 without pods)
  int ranks_per_pod = 0;        // fewest members any spanned pod holds; 0 = size

  [[nodiscard]] int nodes() const { return num_nodes > 0 ? num_nodes : (size + ranks_per_node - 1) / ranks_per_node; }
  [[nodiscard]] int fullest_node() const { return max_ranks_per_node > 0 ? max_ranks_per_node : ranks_per_node; }
  [[nodiscard]] int fewest_in_pod() const { return ranks_per_pod > 0 ? ranks_per_pod : size; }
  [[nodiscard]] bool spans_nodes() const { return nodes() > 1; }
  [[nodiscard]] bool spans_pods() const { return pods > 1; }
};

// Placement of the groups of one kind: `size` ranks whose consecutive members are `stride` global
// ranks apart (r0, r0+stride, ..., r0+(size-1)·stride), the groups tiling the ranks in Megatron-LM
// order (blocks of size·stride consecutive ranks, each holding `stride` interleaved groups), on nodes
// of `gpus_per_node` consecutive ranks. Returns the worst group: the one spanning the most pods, then
// the most nodes, then with the fewest members in one node, then with the most members in one node.
// A group straddles a node boundary when its block does not align with nodes: tp=6 on 8-GPU nodes
// puts ranks 6..11 on nodes 0 and 1 (2 + 4 members), so tp=6 spans nodes with ranks_per_node = 2.
// This overload assumes the pattern repeats without end (ranks as many as needed).
GroupPlacement place_group(int size, int stride, int gpus_per_node);

// The same on a cluster: nodes are the NVLink domains (cluster.scale_up_gpus() consecutive ranks),
// pods are cluster.pod_gpus() consecutive ranks (when nodes_per_pod > 0), and only the groups that
// exist among cluster.num_gpus() ranks are considered (a partial last domain, e.g. 128 GPUs on
// 72-GPU NVL72 domains: ranks 64..127 straddle the first rack boundary, 8 + 56 members).
GroupPlacement place_group(int size, int stride, const ClusterSpec& cluster);

struct Fabric {
  Link intra;  // inside the NVLink domain
  Link inter;  // between domains, inside a pod
  double pod_oversubscription = 1;  // inter-node bandwidth divisor for groups spanning pods (>= 1)
  bool rail_optimized = true;       // all-to-all pays the PXN NVLink hop for cross-rail traffic
  // A hardware profile's measured collectives (src/cost/measured_rates.h): nullptr prices every
  // collective by the formulas above. `log` records each collective priced (`paratune profile`).
  const cost_detail::MeasuredRates* measured = nullptr;
  cost_detail::KernelLog* log = nullptr;
};

// The cluster's fabric with the achieved fractions of its datasheet bandwidths (Calibration's
// intra/inter_node_bandwidth_efficiency), its latencies, oversubscription and rail layout.
Fabric make_fabric(const ClusterSpec& cluster, double intra_bandwidth_efficiency = 1,
                   double inter_bandwidth_efficiency = 1);

// The slowest link a ring step of the group crosses: NVLink inside one domain, the network across
// domains, divided by pod_oversubscription when the group spans pods. For point-to-point rings
// (context parallelism) and pipeline sends: p2p_s(bytes, group_link(place_group(2, gap, cluster), f)).
Link group_link(const GroupPlacement& group, const Fabric& fabric);

double all_reduce_s(double bytes, const GroupPlacement& group, const Fabric& fabric);
double reduce_scatter_s(double bytes, const GroupPlacement& group, const Fabric& fabric);
double all_gather_s(double bytes, const GroupPlacement& group, const Fabric& fabric);
double all_to_all_s(double bytes, const GroupPlacement& group, const Fabric& fabric);
double p2p_s(double bytes, const Link& link);

// Flat formulas on one link class (exposed for tests and for the hierarchical composition).
double ring_all_reduce_s(double bytes, int ranks, const Link& link);
double ring_reduce_scatter_s(double bytes, int ranks, const Link& link);  // = ring all-gather
// NCCL's double binary tree: 2·⌈log2 ranks⌉·α + N / (kTreeBandwidthRatio · B).
double tree_all_reduce_s(double bytes, int ranks, const Link& link);

// Tree all-reduce algorithm bandwidth over link bandwidth: 0.5 (NCCL's tree busBw-to-algBw ratio)
// × 0.92 (NCCL's cap on tree all-reduce busBw), src/graph/tuning.cc, ncclTopoTuneModel.
inline constexpr double kTreeBandwidthRatio = 0.5 * 0.92;

}  // namespace paratune
