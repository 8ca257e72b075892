// Mixture-of-experts: routing balance and Megatron-Core's expert process groups. Internal to the
// cost module.
#pragma once

#include "paratune/cost/calibration.h"
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

// Megatron-Core's expert data-parallel size (MoE parallel folding): the expert grid is
// etp x ep x edp x pp over all ranks, so edp = world / (etp·ep·pp) = dp·cp·tp / (etp·ep)
// (data/frameworks/megatron-lm-rules.md R1.3).
int expert_data_parallel_size(const ParallelConfig& p);

}  // namespace paratune::cost_detail
