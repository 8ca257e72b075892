#include "how_sure.h"

#include <fmt/format.h>

#include "paratune/spec/units.h"

namespace paratune::cli {

PredictionInterval shipped_interval(const std::string& calibration_file, const ModelSpec& model,
                                    const ClusterSpec& cluster, const TrainingSpec& training) {
  if (!calibration_file.empty()) return {};
  return interval_for(default_prediction_intervals(), prediction_class(model, cluster.gpu, training.precision));
}

std::string format_interval(double time_s, const PredictionInterval& interval) {
  if (interval.taken_from.empty()) return fmt::format("90% interval     none ({})\n", describe(interval));
  return fmt::format("90% interval     {} - {} ({})\n", units::format_duration(time_s * (1 + interval.interval.low_pct / 100)),
                     units::format_duration(time_s * (1 + interval.interval.high_pct / 100)), describe(interval));
}

nlohmann::json interval_json(double time_s, const PredictionInterval& interval) {
  if (interval.taken_from.empty()) return nullptr;
  return {{"low_s", time_s * (1 + interval.interval.low_pct / 100)},
          {"high_s", time_s * (1 + interval.interval.high_pct / 100)},
          {"low_pct", interval.interval.low_pct},
          {"high_pct", interval.interval.high_pct},
          {"class", interval.taken_from},
          {"rows", interval.interval.rows},
          {"coverage", 0.9},
          {"from", "leave-one-source-out errors of the shipped calibration on data/published-runs"}};
}

namespace {

// Parallel dimensions a plan uses beyond plain data parallelism: each is a process group to set up,
// a degree to tune and a failure mode to debug.
int dimensions_in_use(const ParallelConfig& c) {
  return (c.tp > 1) + (c.pp > 1) + (c.vpp > 1) + (c.cp > 1) + (c.ep > 1) + (c.recompute != RecomputeMode::kNone);
}

}  // namespace

Ties statistical_ties(const plan::PlanResult& result, const PredictionInterval& interval) {
  Ties ties;
  if (interval.taken_from.empty() || result.plans.empty()) return ties;
  // Intervals [t(1 + low), t(1 + high)] overlap the winner's when t(1 + low) <= t1(1 + high). The
  // plans share model, GPU and precision, so their errors are correlated and this is cautious: it
  // calls tied what the model cannot tell apart, not what surely runs as fast.
  const double winner = result.plans.front().estimate.iteration_time_s;
  const double limit = winner * (1 + interval.interval.high_pct / 100) / (1 + interval.interval.low_pct / 100);
  auto headroom = [](const Estimate& e) { return e.memory_limit_bytes - e.peak_memory_bytes; };
  for (std::size_t i = 1; i < result.plans.size(); ++i)
    if (result.plans[i].estimate.iteration_time_s <= limit) ties.tied_ranks.push_back(static_cast<int>(i) + 1);
  for (int rank : ties.tied_ranks) {
    const Estimate& e = result.plans[static_cast<std::size_t>(rank - 1)].estimate;
    const Estimate& best = result.plans[static_cast<std::size_t>(ties.preferred_rank - 1)].estimate;
    const int d = dimensions_in_use(e.config), d_best = dimensions_in_use(best.config);
    if (d < d_best || (d == d_best && headroom(e) > headroom(best))) ties.preferred_rank = rank;
  }
  return ties;
}

std::string format_ties(const plan::PlanResult& result, const PredictionInterval& interval, const Ties& ties) {
  if (result.plans.empty()) return "";
  const Estimate& winner = result.plans.front().estimate;
  std::string out = "\nhow sure (the winner): " + format_interval(winner.iteration_time_s, interval);
  if (interval.taken_from.empty()) return out;
  if (ties.tied_ranks.empty()) return out + "  no other ranked plan's interval overlaps the winner's\n";
  std::vector<std::string> ranks;
  for (int r : ties.tied_ranks) ranks.push_back("#" + std::to_string(r));
  const Estimate& preferred = result.plans[static_cast<std::size_t>(ties.preferred_rank - 1)].estimate;
  out += fmt::format("  statistically tied with the winner (intervals overlap): {}\n", fmt::join(ranks, ", "));
  out += fmt::format("  among them prefer #{}: the fewest parallel dimensions in use ({}), then the most memory "
                     "headroom ({})\n",
                     ties.preferred_rank, dimensions_in_use(preferred.config),
                     units::format_bytes(preferred.memory_limit_bytes - preferred.peak_memory_bytes));
  return out;
}

}  // namespace paratune::cli
