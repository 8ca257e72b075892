#include "paratune/cost/collectives.h"

#include <algorithm>

namespace paratune {

GroupPlacement place_group(int size, int stride, int gpus_per_node) {
  // Members r0, r0+stride, ...: a node holds gpus_per_node/stride of them when stride < node size.
  const int per_node = stride >= gpus_per_node ? 1 : std::max(1, gpus_per_node / stride);
  return GroupPlacement{size, std::min(size, per_node)};
}

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

double all_reduce_s(double bytes, const GroupPlacement& g, const Fabric& f) {
  if (g.size <= 1) return 0;
  if (!g.spans_nodes()) return ring_all_reduce_s(bytes, g.size, f.intra);
  // RS inside the node, AR of the 1/g shard across nodes, AG inside the node.
  return 2 * ring_reduce_scatter_s(bytes, g.ranks_per_node, f.intra) +
         ring_all_reduce_s(bytes / g.ranks_per_node, g.nodes(), f.inter);
}

double reduce_scatter_s(double bytes, const GroupPlacement& g, const Fabric& f) {
  if (g.size <= 1) return 0;
  if (!g.spans_nodes()) return ring_reduce_scatter_s(bytes, g.size, f.intra);
  return ring_reduce_scatter_s(bytes, g.ranks_per_node, f.intra) +
         ring_reduce_scatter_s(bytes / g.ranks_per_node, g.nodes(), f.inter);
}

double all_gather_s(double bytes, const GroupPlacement& g, const Fabric& f) {
  return reduce_scatter_s(bytes, g, f);  // the mirror image: same steps, same volume
}

double all_to_all_s(double bytes, const GroupPlacement& g, const Fabric& f) {
  if (g.size <= 1) return 0;
  const double d = g.size;
  if (!g.spans_nodes()) return (d - 1) * f.intra.latency_s + (d - 1) / d * bytes / f.intra.bandwidth_bytes_per_s;
  // The share destined to other nodes crosses the NIC; the rest stays on NVLink. The slower wins.
  const double remote_fraction = (d - g.ranks_per_node) / d;
  const double local_fraction = (g.ranks_per_node - 1) / d;
  const double inter = remote_fraction * bytes / f.inter.bandwidth_bytes_per_s + (g.nodes() - 1) * f.inter.latency_s;
  const double intra = local_fraction * bytes / f.intra.bandwidth_bytes_per_s + (g.ranks_per_node - 1) * f.intra.latency_s;
  return std::max(inter, intra);
}

double p2p_s(double bytes, const Link& link) { return link.latency_s + bytes / link.bandwidth_bytes_per_s; }

}  // namespace paratune
