#include "paratune/sim/harvest.h"

#include <fmt/format.h>

#include <cmath>

#include "paratune/spec/error.h"

namespace paratune::sim {
namespace {

// Whole fused steps of `members` that fit in an idle interval of `length` seconds after the switch.
std::int64_t steps_in(double length, int members, const HarvestTrial& trial) {
  const double usable = length - trial.switch_s;
  if (usable <= 0) return 0;
  return static_cast<std::int64_t>(std::floor(usable / (members * trial.step_time_s)));
}

}  // namespace

BubbleHarvest pack_bubbles(const PipelineProblem& problem, const SimulationResult& result, const HarvestTrial& trial) {
  if (!(trial.step_time_s > 0) || !std::isfinite(trial.step_time_s))
    throw Error(fmt::format("harvest: the trial's step time {} s must be > 0", trial.step_time_s));
  if (!(trial.memory_bytes > 0) || !std::isfinite(trial.memory_bytes))
    throw Error(fmt::format("harvest: the trial's memory {} bytes must be > 0", trial.memory_bytes));
  if (trial.runtime_memory_bytes < 0 || trial.switch_s < 0)
    throw Error("harvest: the trial's runtime memory and switch time must be >= 0");
  if (trial.max_members < 1) throw Error(fmt::format("harvest: max_members {} must be >= 1", trial.max_members));
  BubbleHarvest harvest;
  harvest.iteration_time_s = result.iteration_time_s;
  for (std::size_t s = 0; s < result.stages.size(); ++s) {
    const StageResult& stage = result.stages[s];
    StageHarvest h;
    h.stage = static_cast<int>(s);
    h.idle_s = stage.idle_s;
    h.free_memory_bytes = std::max(0.0, problem.stages[s].memory_capacity_bytes - stage.peak_memory_bytes);
    // The most members resident beside the job's peak.
    const double room = h.free_memory_bytes - trial.runtime_memory_bytes;
    const int fit = room <= 0 ? 0 : static_cast<int>(std::min<double>(trial.max_members, std::floor(room / trial.memory_bytes)));
    // The group size that places the most member-steps into this stage's intervals.
    double best = 0;
    for (int b = 1; b <= fit; ++b) {
      double member_steps = 0;
      for (const IdleInterval& idle : stage.idle_intervals)
        member_steps += static_cast<double>(b * steps_in(idle.end_s - idle.start_s, b, trial));
      if (member_steps > best) {
        best = member_steps;
        h.members = b;
      }
    }
    if (h.members > 0) {
      for (const IdleInterval& idle : stage.idle_intervals) {
        const std::int64_t steps = steps_in(idle.end_s - idle.start_s, h.members, trial);
        if (steps == 0) continue;
        HarvestWindow w;
        w.stage = h.stage;
        w.members = h.members;
        w.steps = steps;
        w.start_s = idle.start_s + trial.switch_s;
        w.end_s = w.start_s + static_cast<double>(steps) * h.members * trial.step_time_s;
        h.trial_busy_s += w.end_s - w.start_s;
        h.member_steps += static_cast<double>(steps * h.members);
        harvest.windows.push_back(w);
      }
    }
    harvest.stages.push_back(h);
  }
  return harvest;
}

}  // namespace paratune::sim
