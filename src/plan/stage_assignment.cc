#include "paratune/plan/stage_assignment.h"

#include <algorithm>
#include <limits>

#include "paratune/spec/model.h"

namespace paratune::plan {
namespace {

constexpr double kInfinity = std::numeric_limits<double>::infinity();

// One possible stage: a rank holding `k` blocks of vpp layers starting at block `i`.
struct StageOption {
  double time_s = kInfinity;  // infinity: does not fit even with every layer recomputed
  int recomputed = 0;
};

// The best option of every (rank, first block, blocks) triple, computed on demand. When all layers
// are alike the first block does not matter and one entry serves every position.
class StageOptions {
 public:
  StageOptions(const StageCostModel& costs, std::span<const double> in_flight, bool allow_recompute, int blocks)
      : costs_(costs),
        in_flight_(in_flight),
        allow_recompute_(allow_recompute),
        blocks_(blocks),
        vpp_(costs.config().vpp),
        alike_(costs.layers_alike()),
        limit_(costs.memory_limit_bytes()),
        table_(static_cast<std::size_t>(costs.config().pp) * (alike_ ? 1 : blocks + 1) * (blocks + 1)),
        known_(table_.size(), false) {}

  const StageOption& get(int rank, int first, int k) {
    const std::size_t key =
        (static_cast<std::size_t>(rank) * (alike_ ? 1 : blocks_ + 1) + (alike_ ? 0 : first)) * (blocks_ + 1) + k;
    if (!known_[key]) {
      table_[key] = compute(rank, alike_ ? 0 : first, k);
      known_[key] = true;
    }
    return table_[key];
  }

 private:
  StageOption compute(int rank, int first, int k) const {
    const int layers = k * vpp_, first_layer = first * vpp_;
    const double in_flight = in_flight_[static_cast<std::size_t>(rank)];
    auto work = [&](int recomputed) { return costs_.stage_work(rank, first_layer, layers, recomputed, in_flight); };
    StageOption best;
    const StageWork none = work(0);
    if (none.memory_bytes <= limit_) return {none.time_s, 0};
    if (!allow_recompute_ || work(layers).memory_bytes > limit_) return best;
    // Memory falls with every recomputed layer from the first on (each keeps only its input; the
    // first adds the working set of the layer being recomputed), time rises: the smallest count
    // that fits is the best one. Binary search over [1, layers].
    int lo = 1, hi = layers;
    while (lo < hi) {
      const int mid = (lo + hi) / 2;
      if (work(mid).memory_bytes <= limit_) hi = mid;
      else lo = mid + 1;
    }
    return {work(lo).time_s, lo};
  }

  const StageCostModel& costs_;
  std::span<const double> in_flight_;
  bool allow_recompute_;
  int blocks_, vpp_;
  bool alike_;
  double limit_;
  std::vector<StageOption> table_;
  std::vector<bool> known_;
};

struct Solution {
  bool feasible = false;
  double sum_s = kInfinity;
  double max_s = 0;
  std::vector<int> blocks;  // per stage
};

// Least sum of stage times with every stage's time <= cap: dynamic programme over
// best[s][j] = least sum placing blocks [0, j) on stages 0..s.
Solution least_sum(StageOptions& options, int pp, int blocks, double cap) {
  const std::size_t width = static_cast<std::size_t>(blocks) + 1;
  std::vector<double> best(static_cast<std::size_t>(pp) * width, kInfinity);
  std::vector<int> choice(best.size(), 0);
  // Stage 0 holds blocks [0, j).
  for (int j = 1; j <= blocks - (pp - 1); ++j) {
    const double t = options.get(0, 0, j).time_s;
    if (t > cap) continue;
    best[static_cast<std::size_t>(j)] = t;
    choice[static_cast<std::size_t>(j)] = j;
  }
  // Stage s holds blocks [j - k, j); the stages before it hold at least one block each, the ones
  // after it too.
  for (int s = 1; s < pp; ++s)
    for (int j = s == pp - 1 ? blocks : s + 1; j <= blocks - (pp - 1 - s); ++j) {
      const std::size_t cell = s * width + j;
      for (int k = 1; k <= j - s; ++k) {
        const double before = best[(s - 1) * width + (j - k)];
        if (before == kInfinity) continue;
        const double t = options.get(s, j - k, k).time_s;
        if (t > cap || before + t >= best[cell]) continue;
        best[cell] = before + t;
        choice[cell] = k;
      }
    }
  Solution out;
  const double total = best[(pp - 1) * width + blocks];
  if (total == kInfinity) return out;
  out.feasible = true;
  out.sum_s = total;
  out.blocks.assign(static_cast<std::size_t>(pp), 0);
  int j = blocks;
  for (int s = pp - 1; s >= 0; --s) {
    const int k = choice[s * width + j];
    out.blocks[static_cast<std::size_t>(s)] = k;
    out.max_s = std::max(out.max_s, options.get(s, j - k, k).time_s);
    j -= k;
  }
  return out;
}

}  // namespace

StageAssignment assign_stages(const StageCostModel& costs, std::span<const double> in_flight, bool allow_recompute) {
  const ParallelConfig& p = costs.config();
  const int pp = p.pp, v = p.vpp;
  int layers = 0;
  for (int n : p.stage_layers) layers += n;
  const int blocks = layers / v;  // vpp divides the layer count (level 1 only has such candidates)
  const double m = costs.num_microbatches();
  StageOptions options(costs, in_flight, allow_recompute, blocks);
  auto objective = [&](const Solution& s) { return (m - 1.0 / v) * s.max_s + s.sum_s / v; };

  StageAssignment out;
  const Solution unconstrained = least_sum(options, pp, blocks, kInfinity);
  if (!unconstrained.feasible) return out;

  // Every stage cost that can occur, ascending: the candidate caps.
  std::vector<double> caps;
  for (int s = 0; s < pp; ++s)
    for (int first = s; first <= (s == 0 ? 0 : blocks - (pp - s)); ++first)
      for (int k = 1; first + k <= blocks - (pp - 1 - s); ++k) {
        if (s == pp - 1 && first + k != blocks) continue;  // the last stage ends the model
        const double t = options.get(s, first, k).time_s;
        if (t < kInfinity) caps.push_back(t);
      }
  std::sort(caps.begin(), caps.end());
  caps.erase(std::unique(caps.begin(), caps.end()), caps.end());
  // The smallest feasible cap (feasibility only grows with the cap).
  std::size_t lo = 0, hi = caps.size() - 1;
  while (lo < hi) {
    const std::size_t mid = (lo + hi) / 2;
    if (least_sum(options, pp, blocks, caps[mid]).feasible) hi = mid;
    else lo = mid + 1;
  }
  Solution best = least_sum(options, pp, blocks, caps[lo]);
  double best_objective = objective(best);
  for (std::size_t i = lo + 1; i < caps.size(); ++i) {
    // No assignment with bottleneck >= caps[i] can beat the best: its sum is at least the
    // unconstrained least sum.
    if ((m - 1.0 / v) * caps[i] + unconstrained.sum_s / v >= best_objective) break;
    const Solution s = least_sum(options, pp, blocks, caps[i]);
    if (s.feasible && objective(s) < best_objective) {
      best = s;
      best_objective = objective(s);
    }
  }

  out.feasible = true;
  out.objective_s = best_objective;
  out.bottleneck_s = best.max_s;
  int first = 0;
  for (int s = 0; s < pp; ++s) {
    const int k = best.blocks[static_cast<std::size_t>(s)];
    out.stage_layers.push_back(k * v);
    out.recomputed.push_back(options.get(s, first, k).recomputed);
    first += k;
  }
  return out;
}

}  // namespace paratune::plan
