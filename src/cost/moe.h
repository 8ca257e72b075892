// Mixture-of-experts: routing balance and Megatron-Core's expert process groups. Internal to the
// cost module.
#pragma once

#include "paratune/cost/calibration.h"
#include "paratune/cost/collectives.h"
#include "paratune/spec/model.h"
#include "paratune/spec/parallel.h"
#include "paratune/spec/training.h"

namespace paratune::cost_detail {

// Tokens routed to the busiest expert-parallel rank / the mean. Routing is never perfectly balanced
// and a synchronous step waits for the busiest rank: its expert GEMMs, its share of the all-to-all
// and its activation memory all scale by this factor.
//   lambda   = Calibration::moe_load_imbalance with auxiliary-loss balancing (GShard, Switch);
//              1 + (lambda - 1)/2 with auxiliary-loss-free bias balancing (DeepSeek-V3 report
//              Sec. 2.1.2 shows it balances better than the aux loss; halving the excess is our
//              assumption); 1 with forced balancing (benchmark runs).
//   A rank holding k = num_experts/ep experts averages k experts' loads: its excess shrinks as
//   1/sqrt(k) (independent expert loads); with ep = 1 every expert is local and nothing waits.
//   A capacity factor c drops tokens beyond c x the fair share: the factor is at most c.
double moe_rank_load_factor(const MoeSpec& moe, const ParallelConfig& p, const TrainingSpec& training,
                            const Calibration& calibration);

// Of `holders` (ranks or nodes) over which `experts` experts are spread evenly, how many hold at
// least one of a token's top_k experts, on average, when routing picks top_k distinct experts
// uniformly (balanced routing):
//   holders · (1 - C(E - E/H, k) / C(E, k)),  C(E - E/H, k)/C(E, k) = prod_{i<k} (E - E/H - i)/(E - i).
// E.g. 128 experts on 8 ranks, top-8: 8 · (1 - 0.34) = 5.3 ranks; on 2 nodes: 2 · (1 - 0.0035) = 2.0.
double expected_distinct_holders(double experts, double holders, int top_k);

// The holders (ranks or nodes, experts in order over them) a token's top_k experts reach, on
// average. With group-limited routing the experts come from route_group_topk of route_groups
// contiguous groups, so only those groups' holders are eligible:
//   eligible = route_group_topk · H / G            when a group spans H/G >= 1 holders,
//            = expected_distinct_holders(G, H, Gk)  when a holder carries several groups;
//   reached  = expected_distinct_holders(E · Gk/G, eligible, top_k).
// DeepSeek-V3 on 8 nodes (8 groups, top 4): 4 eligible nodes, 3.63 reached (unlimited: 5.3).
double holders_reached(const MoeSpec& moe, double holders);

// One dispatch (or combine: the same volume back) of `tokens` tokens of `token_bytes` each from one
// rank of the expert-parallel group `ep_group`, seconds.
//   alltoall: one copy per chosen expert, top_k of them, through an NCCL all-to-all
//             (Megatron-Core MoEAlltoAllTokenDispatcher; collectives.h all_to_all_s).
//   deepep:   node-deduplicated (DeepEP normal kernels, DeepSeek-V3 report Sec. 3.2.2; Megatron's
//             flex dispatcher): one copy per distinct remote node over RDMA, then one per distinct
//             rank over NVLink, both in flight at once, so the slower wins. With n nodes of m ranks
//             and p_rank, p_node = the chance a rank / a node holds one of the token's experts
//             (holders_reached / holders):
//               RDMA copies per token   (n - 1) · p_node
//               NVLink copies per token (m - 1) · p_rank           to the own node's ranks
//                                     + (n - 1) · (m - 1) · p_rank forwarding what arrived by RDMA
//                                                                  (symmetric: as many as it sends)
//             With one node only the NVLink term is left.
double expert_dispatch_s(double tokens, double token_bytes, const MoeSpec& moe, MoeDispatcher dispatcher,
                         const GroupPlacement& ep_group, const Fabric& fabric);

}  // namespace paratune::cost_detail
