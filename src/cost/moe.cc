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

int expert_data_parallel_size(const ParallelConfig& p) {
  return std::max(1, p.dp * p.cp * p.tp / (p.expert_tp() * p.ep));
}

}  // namespace paratune::cost_detail
