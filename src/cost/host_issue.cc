#include "host_issue.h"

#include <algorithm>

namespace paratune::cost_detail {

bool moe_host_sync(const ParallelConfig& p, const TrainingSpec& training) {
  return p.ep > 1 && training.moe_capacity_factor <= 0;
}

HostIssueExposure host_issue_exposure(const ModelSpec& m, const ParallelConfig& p, const TrainingSpec& training,
                                      bool moe_layer, const LayerGpuTime& gpu, const Calibration& cal) {
  const int tp_ops = p.tp > 1 ? kTpCollectiveOps * (p.sequence_parallel ? 2 : 1) : 0;
  int ops_before = kDenseLayerOps + tp_ops, ops_after = 0;
  if (moe_layer && m.moe) {
    ops_before += kMoeOpsBeforeSync + (m.moe->num_shared_experts > 0 ? kSharedExpertOps : 0);
    const int local_experts = std::max(1, m.moe->num_experts / std::max(1, p.ep));
    ops_after = kMoeOpsAfterSync + kExpertGemmOps * local_experts;
  }
  const double issue_before = ops_before * cal.op_issue_s, issue_after = ops_after * cal.op_issue_s;
  HostIssueExposure out;
  if (moe_layer && moe_host_sync(p, training)) {
    // max(GPU, CPU) on each side of the sync; the sync itself waits for the queue to drain.
    out.forward_s = std::max(0.0, issue_before - gpu.forward_before_sync_s) + kHostSyncS +
                    std::max(0.0, issue_after - gpu.forward_after_sync_s);
  } else {
    out.forward_s =
        std::max(0.0, issue_before + issue_after - gpu.forward_before_sync_s - gpu.forward_after_sync_s);
  }
  out.backward_s = std::max(0.0, kBackwardIssueRatio * (issue_before + issue_after) - gpu.backward_s);
  return out;
}

}  // namespace paratune::cost_detail
