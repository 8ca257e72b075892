// The ranking rule (plan/ranking.h): predicted time, then simpler configuration first.
#include "paratune/plan/ranking.h"

#include <bit>
#include <cmath>
#include <limits>
#include <numeric>
#include <tuple>

namespace paratune::plan {
namespace {

int axes_in_use(const ParallelConfig& c) {
  return (c.tp > 1) + (c.pp > 1) + (c.cp > 1) + (c.ep > 1) + (c.vpp > 1);
}

// Optimizer replicas: dp / op with ZeRO (1 = sharded over all of dp), 1 without.
int optimizer_replicas(const ParallelConfig& c) { return c.zero > 0 ? c.dp / c.optimizer_shard_degree() : 1; }

// Fully recomputed layers in all stages; "every layer" without a resolved layout counts as the most.
long long recomputed_layers(const ParallelConfig& c) {
  if (c.recompute != RecomputeMode::kFull) return 0;
  if (!c.stage_recompute_layers.empty())
    return std::accumulate(c.stage_recompute_layers.begin(), c.stage_recompute_layers.end(), 0LL);
  if (c.stage_layers.empty()) return c.recompute_layers < 0 ? std::numeric_limits<int>::max() : 1LL * c.recompute_layers * c.pp;
  long long n = 0;
  for (int layers : c.stage_layers) n += c.recompute_layers < 0 ? layers : std::min(layers, c.recompute_layers);
  return n;
}

int schedule_rank(Schedule s) {
  switch (s) {
    case Schedule::kOneFOneB:
    case Schedule::kInterleaved1F1B: return 0;
    case Schedule::kGPipe: return 1;
    case Schedule::kZeroBubbleH1:
    case Schedule::kInterleavedZeroBubble:
    case Schedule::kZeroBubbleV: return 2;
    case Schedule::kDualPipeV:
    case Schedule::kDualPipe: return 3;
  }
  return 4;
}

bool even_stages(const ParallelConfig& c) {
  if (c.stage_layers.empty()) return true;
  const int layers = std::accumulate(c.stage_layers.begin(), c.stage_layers.end(), 0);
  return c.stage_layers == even_stage_layers(layers, c.pp);
}

int grad_sync_rank(GradSync g) {
  switch (g) {
    case GradSync::kOverlapped: return 0;
    case GradSync::kShifted: return 1;
    case GradSync::kInBackward: return 2;
  }
  return 3;
}

// The keys 1-18 of the rule in ranking.h, in order.
auto keys(const ParallelConfig& c) {
  return std::make_tuple(axes_in_use(c), c.cp, c.pp, c.vpp, c.ep, c.zero, optimizer_replicas(c),
                         static_cast<int>(c.recompute), recomputed_layers(c),
                         c.recompute == RecomputeMode::kSelective ? std::popcount(c.recompute_modules) : 0,
                         std::popcount(c.offload_modules), c.ep_overlap,
                         static_cast<int>(c.dispatcher), c.tp,
                         c.expert_tp() != c.tp, c.expert_tp(), c.sequence_parallel, schedule_rank(c.schedule),
                         !even_stages(c), grad_sync_rank(c.grad_sync), c.mbs, !c.overlap_grad_reduce,
                         !c.overlap_param_gather, !c.overlap_p2p, c.tp_comm_overlap);
}

}  // namespace

bool same_time(double a_s, double b_s) {
  if (a_s == b_s) return true;
  return std::abs(a_s - b_s) <= kTieRelativeTolerance * std::max(std::abs(a_s), std::abs(b_s));
}

double tie_limit_s(double time_s) {
  if (!std::isfinite(time_s)) return time_s;
  return std::nextafter(time_s * (1 + kTieRelativeTolerance), std::numeric_limits<double>::infinity());
}

bool simpler(const ParallelConfig& a, const ParallelConfig& b) {
  const auto ka = keys(a), kb = keys(b);
  if (ka != kb) return ka < kb;
  return to_string(a) < to_string(b);  // 19: total
}

bool ranks_before(double a_s, const ParallelConfig& a, double b_s, const ParallelConfig& b) {
  if (same_time(a_s, b_s)) return simpler(a, b);
  return a_s < b_s;
}

}  // namespace paratune::plan
