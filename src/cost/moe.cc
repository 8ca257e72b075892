#include "moe.h"

#include <algorithm>
#include <cmath>

namespace paratune::cost_detail {

double moe_rank_load_factor(const MoeSpec& moe, const ParallelConfig& p, const TrainingSpec& training,
                            const Calibration& cal) {
  if (p.ep <= 1) return 1;
  double lambda = 1;
  switch (training.moe_balancing) {
    case MoeBalancing::kAuxLoss: lambda = cal.moe_load_imbalance; break;
    case MoeBalancing::kAuxLossFree: lambda = 1 + (cal.moe_load_imbalance - 1) / 2; break;
    case MoeBalancing::kForceBalanced: lambda = 1; break;
  }
  const double local_experts = static_cast<double>(moe.num_experts) / p.ep;
  double factor = 1 + (lambda - 1) / std::sqrt(local_experts);
  if (training.moe_capacity_factor > 0) factor = std::min(factor, training.moe_capacity_factor);
  return factor;
}

double expected_distinct_holders(double experts, double holders, int top_k) {
  if (holders <= 1) return holders;
  const double elsewhere = experts - experts / holders;  // experts a given holder does not hold
  double none = 1;                                       // P(the holder gets none of the top_k)
  for (int i = 0; i < top_k && none > 0; ++i) none *= std::max(0.0, elsewhere - i) / (experts - i);
  return holders * (1 - none);
}

double holders_reached(const MoeSpec& moe, double holders) {
  const double experts = moe.num_experts;
  if (moe.route_groups <= 0 || moe.route_group_topk >= moe.route_groups)
    return expected_distinct_holders(experts, holders, moe.top_k);
  const double groups = moe.route_groups, chosen = moe.route_group_topk;
  const double eligible =
      holders >= groups ? chosen * holders / groups : expected_distinct_holders(groups, holders, moe.route_group_topk);
  return expected_distinct_holders(experts * chosen / groups, eligible, moe.top_k);
}

double expert_dispatch_s(double tokens, double token_bytes, const MoeSpec& moe, MoeDispatcher dispatcher,
                         const GroupPlacement& ep_group, const Fabric& fabric) {
  if (ep_group.size <= 1) return 0;
  if (dispatcher == MoeDispatcher::kAllToAll) return all_to_all_s(tokens * moe.top_k * token_bytes, ep_group, fabric);
  const double n = ep_group.nodes(), m = ep_group.ranks_per_node;
  const double p_rank = holders_reached(moe, ep_group.size) / ep_group.size;
  const double p_node = holders_reached(moe, n) / n;
  const double nvlink_copies = (m - 1) * p_rank * n;  // own node + forwarded: (m-1)·p_rank·(1 + (n-1))
  const double nvlink_s =
      nvlink_copies * tokens * token_bytes / fabric.intra.bandwidth_bytes_per_s + (m - 1) * fabric.intra.latency_s;
  if (n <= 1) return nvlink_s;
  // Across pods the RDMA share runs over the oversubscribed uplinks.
  const double inter_bandwidth =
      fabric.inter.bandwidth_bytes_per_s / (ep_group.spans_pods() ? fabric.pod_oversubscription : 1);
  const double rdma_s = (n - 1) * p_node * tokens * token_bytes / inter_bandwidth + (n - 1) * fabric.inter.latency_s;
  return std::max(nvlink_s, rdma_s);
}

}  // namespace paratune::cost_detail
