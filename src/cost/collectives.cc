#include "paratune/cost/collectives.h"

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <optional>

#include "measured_rates.h"
#include <tuple>
#include <unordered_map>
#include <vector>

namespace paratune {
namespace {

// How a group's members r0 + k·T (k < S) fall on units (nodes or pods) of U consecutive ranks.
struct Span {
  int units = 1;      // units holding at least one member
  int fewest = 0;     // fewest members in one of them
  int most = 0;       // most members in one of them
};

// `rho` = r0 mod U: the span pattern is the same for every r0 with the same residue.
Span span_of(std::int64_t rho, int S, int T, int U) {
  const std::int64_t last = rho + static_cast<std::int64_t>(S - 1) * T;
  const int last_unit = static_cast<int>(last / U);
  if (last_unit == 0) return {1, S, S};
  if (T >= U) return {S, 1, 1};  // consecutive members at least a unit apart: one per unit
  // T < U: every unit from the first to the last holds at least one member.
  auto count = [&](std::int64_t u) {  // members k with u·U <= rho + k·T < (u+1)·U
    const std::int64_t lo = std::max<std::int64_t>(0, (u * U - rho + T - 1) / T);
    const std::int64_t hi = std::min<std::int64_t>(S - 1, ((u + 1) * U - 1 - rho) / T);
    return static_cast<int>(hi - lo + 1);
  };
  const int first = count(0), final = count(last_unit);
  Span s{last_unit + 1, std::min(first, final), std::max(first, final)};
  // Interior units hold ⌊U/T⌋ or ⌈U/T⌉ members, depending on (u·U - rho) mod T, which repeats
  // every T/gcd(U, T) units: looking at that many is exact.
  const int interior = last_unit - 1;
  const int period = T / std::gcd(U, T);
  for (int u = 1; u <= std::min(interior, period); ++u) {
    const int c = count(u);
    s.fewest = std::min(s.fewest, c);
    s.most = std::max(s.most, c);
  }
  return s;
}

// Core of place_group: nodes of G ranks, pods of P ranks (0 = none; validate() makes it a multiple
// of G), `blocks` blocks of size·stride ranks (0 = as many as needed). O(U) residues for U = lcm(P, G)
// (G without pods): cheap enough for the planner's inner loop.
GroupPlacement place(int size, int stride, int G, int P, std::int64_t blocks) {
  if (size <= 1) return GroupPlacement{1, 1};
  const int S = size, T = std::max(1, stride);
  const std::int64_t B = static_cast<std::int64_t>(S) * T;
  if (G % B == 0) return GroupPlacement{S, S, S, 1, 1, S};  // every block inside one node (and pod)
  // Enumerate the residues r0 mod U of first members that occur; U is a multiple of both units.
  const int U = P > 0 ? std::lcm(P, G) : G;
  const std::int64_t d = std::gcd(B, static_cast<std::int64_t>(U));
  // Block bases b·B mod U cycle through the multiples of d with period U/d.
  const std::int64_t bases = blocks > 0 ? std::min<std::int64_t>(blocks, U / d) : U / d;
  // Mark r0 mod U = (b·B + j) mod U for j < T with a difference array over [0, U).
  std::vector<int> diff(static_cast<std::size_t>(U) + 1, 0);
  const std::int64_t len = std::min<std::int64_t>(T, U);
  for (std::int64_t b = 0; b < bases; ++b) {
    const std::int64_t start = (b * B) % U, end = start + len;
    ++diff[static_cast<std::size_t>(start)];
    if (end <= U) {
      --diff[static_cast<std::size_t>(end)];
    } else {
      --diff[static_cast<std::size_t>(U)];
      ++diff[0];
      --diff[static_cast<std::size_t>(end - U)];
    }
  }
  GroupPlacement worst{S, S, S, 1, 1, S};
  auto key = [](const GroupPlacement& g) {
    return std::make_tuple(g.pods, g.num_nodes, -g.ranks_per_node, g.max_ranks_per_node, -g.ranks_per_pod);
  };
  int covered = 0;
  for (int rho = 0; rho < U; ++rho) {
    covered += diff[static_cast<std::size_t>(rho)];
    if (covered <= 0) continue;
    const Span node = span_of(rho % G, S, T, G);
    GroupPlacement g{S, node.fewest, node.most, node.units, 1, S};
    if (P > 0) {
      const Span pod = span_of(rho % P, S, T, P);
      g.pods = pod.units;
      g.ranks_per_pod = pod.fewest;
    }
    if (key(g) > key(worst)) worst = g;
  }
  return worst;
}

Link inter_link(const GroupPlacement& g, const Fabric& f) {
  Link link = f.inter;
  if (g.spans_pods()) link.bandwidth_bytes_per_s /= f.pod_oversubscription;
  return link;
}

// The inter-node steps of a hierarchical collective on the buffer N: each of the m ranks of the
// emptiest node handles an N/m shard; ν = D/m (= n when the group tiles nodes evenly). The
// expressions keep the flat ring formulas' operation order so that even groups give the same
// numbers as ring_*_s(N/m, n, link).
double inter_ring_reduce_scatter_s(double bytes, const GroupPlacement& g, const Link& link) {
  const double n = g.nodes();
  const double nu = static_cast<double>(g.size) / g.ranks_per_node;
  const double shard = bytes / g.ranks_per_node;
  return (n - 1) * link.latency_s + (nu - 1) / nu * shard / link.bandwidth_bytes_per_s;
}

double inter_ring_all_reduce_s(double bytes, const GroupPlacement& g, const Link& link) {
  const double n = g.nodes();
  const double nu = static_cast<double>(g.size) / g.ranks_per_node;
  const double shard = bytes / g.ranks_per_node;
  return 2 * (n - 1) * link.latency_s + 2 * (nu - 1) / nu * shard / link.bandwidth_bytes_per_s;
}

}  // namespace

GroupPlacement place_group(int size, int stride, int gpus_per_node) {
  return place(size, stride, std::max(1, gpus_per_node), 0, 0);
}

GroupPlacement place_group(int size, int stride, const ClusterSpec& cluster) {
  // Pods matter only where they cost something; without oversubscription they are one fabric.
  // <= kMaxGpus (validate(ClusterSpec)).
  const int P = cluster.pod_oversubscription > 1 ? static_cast<int>(cluster.pod_gpus()) : 0;
  const std::int64_t block = static_cast<std::int64_t>(std::max(1, size)) * std::max(1, stride);
  const std::int64_t blocks = std::max<std::int64_t>(1, cluster.num_gpus() / block);
  const int G = std::max(1, cluster.scale_up_gpus());
  // The planner places the same few groups for hundreds of thousands of candidates: a placement
  // is a pure function of these five numbers, kept per thread (no lock, nothing shared).
  struct Key {
    int size, stride, G, P;
    std::int64_t blocks;
    bool operator==(const Key&) const = default;
  };
  struct KeyHash {
    std::size_t operator()(const Key& k) const {
      std::size_t h = std::hash<std::int64_t>()(k.blocks);
      for (int v : {k.size, k.stride, k.G, k.P}) h = h * 1000003u ^ std::hash<int>()(v);
      return h;
    }
  };
  thread_local std::unordered_map<Key, GroupPlacement, KeyHash> placed;
  const Key key{size, stride, G, P, blocks};
  if (const auto it = placed.find(key); it != placed.end()) return it->second;
  if (placed.size() > 4096) placed.clear();  // bounded: a long-lived process plans many clusters
  return placed.emplace(key, place(size, stride, G, P, blocks)).first->second;
}

Fabric make_fabric(const ClusterSpec& c, double intra_bandwidth_efficiency, double inter_bandwidth_efficiency) {
  return Fabric{Link{c.intra_node_bandwidth_bytes_per_s * intra_bandwidth_efficiency, c.intra_node_latency_s},
                Link{c.inter_node_bandwidth_bytes_per_s * inter_bandwidth_efficiency, c.inter_node_latency_s},
                c.pod_oversubscription, c.rail_optimized};
}

Link group_link(const GroupPlacement& g, const Fabric& f) { return g.spans_nodes() ? inter_link(g, f) : f.intra; }

double ring_all_reduce_s(double bytes, int ranks, const Link& link) {
  if (ranks <= 1) return 0;
  const double d = ranks;
  return 2 * (d - 1) * link.latency_s + 2 * (d - 1) / d * bytes / link.bandwidth_bytes_per_s;
}

double ring_reduce_scatter_s(double bytes, int ranks, const Link& link) {
  if (ranks <= 1) return 0;
  const double d = ranks;
  return (d - 1) * link.latency_s + (d - 1) / d * bytes / link.bandwidth_bytes_per_s;
}

double tree_all_reduce_s(double bytes, int ranks, const Link& link) {
  if (ranks <= 1) return 0;
  int depth = 0;  // ⌈log2 ranks⌉
  while ((std::int64_t{1} << depth) < ranks) ++depth;
  return 2 * depth * link.latency_s + bytes / (kTreeBandwidthRatio * link.bandwidth_bytes_per_s);
}

namespace {
namespace fitted_collectives {

double all_reduce_s(double bytes, const GroupPlacement& g, const Fabric& f) {
  if (!g.spans_nodes()) return ring_all_reduce_s(bytes, g.size, f.intra);
  // RS inside the node, AR of the 1/m shard across nodes (ring or tree, whichever is faster, as
  // NCCL's tuner picks), AG inside the node.
  const Link inter = inter_link(g, f);
  const double ring = inter_ring_all_reduce_s(bytes, g, inter);
  const double tree = tree_all_reduce_s(bytes / g.ranks_per_node, g.nodes(), inter);
  return 2 * ring_reduce_scatter_s(bytes, g.fullest_node(), f.intra) + std::min(ring, tree);
}

double reduce_scatter_s(double bytes, const GroupPlacement& g, const Fabric& f) {
  if (!g.spans_nodes()) return ring_reduce_scatter_s(bytes, g.size, f.intra);
  return ring_reduce_scatter_s(bytes, g.fullest_node(), f.intra) +
         inter_ring_reduce_scatter_s(bytes, g, inter_link(g, f));
}

double all_to_all_s(double bytes, const GroupPlacement& g, const Fabric& f) {
  const double d = g.size;
  if (!g.spans_nodes()) return (d - 1) * f.intra.latency_s + (d - 1) / d * bytes / f.intra.bandwidth_bytes_per_s;
  const double m = g.ranks_per_node, M = g.fullest_node();
  // The share destined to other nodes crosses the NIC (the emptiest node's ranks send the most);
  // the rest stays on NVLink (the fullest node's ranks keep the most). The slower wins.
  const double remote_fraction = (d - m) / d;
  const double local_fraction = (M - 1) / d;
  // Across pods: the share bound for other pods runs over the oversubscribed uplinks.
  const double cross_pod_fraction = g.spans_pods() ? (d - g.fewest_in_pod()) / d : 0;
  const double nic_s = (remote_fraction - cross_pod_fraction) * bytes / f.inter.bandwidth_bytes_per_s +
                       cross_pod_fraction * bytes / inter_link(g, f).bandwidth_bytes_per_s;
  // PXN on a rail-optimized fabric: (M-1)/M of the remote bytes go to a GPU on another rail and take
  // an extra NVLink hop to the local GPU on that rail first.
  const double pxn_fraction = f.rail_optimized ? remote_fraction * (M - 1) / M : 0;
  const double inter = nic_s + (g.nodes() - 1) * f.inter.latency_s;
  const double intra = (local_fraction + pxn_fraction) * bytes / f.intra.bandwidth_bytes_per_s +
                       (M - 1) * f.intra.latency_s;
  return std::max(inter, intra);
}

}  // namespace fitted_collectives

// A collective's time: measured when the fabric carries a profile that measured it, else fitted.
double collective_priced_s(CollectiveOp op, double bytes, const GroupPlacement& g, const Fabric& f, double (*fitted_s)(double, const GroupPlacement&, const Fabric&)) {
  if (g.size <= 1) return 0;
  if (f.log) f.log->add(cost_detail::KernelLog::Collective{.op = op, .ranks = g.size, .nodes = g.nodes(), .bytes = bytes});
  if (f.measured)
    if (const std::optional<double> t = f.measured->collective_s(op, g.size, g.nodes(), bytes)) return *t;
  return fitted_s(bytes, g, f);
}

}  // namespace

double all_reduce_s(double bytes, const GroupPlacement& g, const Fabric& f) {
  return collective_priced_s(CollectiveOp::kAllReduce, bytes, g, f, fitted_collectives::all_reduce_s);
}
double reduce_scatter_s(double bytes, const GroupPlacement& g, const Fabric& f) {
  return collective_priced_s(CollectiveOp::kReduceScatter, bytes, g, f, fitted_collectives::reduce_scatter_s);
}
// The mirror image of reduce-scatter: same steps, same volume.
double all_gather_s(double bytes, const GroupPlacement& g, const Fabric& f) {
  return collective_priced_s(CollectiveOp::kAllGather, bytes, g, f, fitted_collectives::reduce_scatter_s);
}
double all_to_all_s(double bytes, const GroupPlacement& g, const Fabric& f) {
  return collective_priced_s(CollectiveOp::kAllToAll, bytes, g, f, fitted_collectives::all_to_all_s);
}

double p2p_s(double bytes, const Link& link) { return link.latency_s + bytes / link.bandwidth_bytes_per_s; }

}  // namespace paratune
