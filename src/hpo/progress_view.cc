#include "progress_view.h"

#include <algorithm>

namespace paratune::hpo {

void report_progress(const trial::TrialRunner& runner, const StudyTrials& trials, const HpoOptions& options,
                     tune::StudyObserver& observer) {
  std::vector<tune::TrialProgress> progress;
  for (const trial::RunningTrial& running : runner.running()) {
    const auto group = trials.groups.find(running.id);
    const std::vector<std::string> ids =
        group == trials.groups.end() ? std::vector<std::string>{running.id} : group->second.member_ids;
    for (const std::string& id : ids) {
      const auto it = trials.live.find(id);
      if (it == trials.live.end()) continue;
      const LiveRun& live = it->second;
      tune::TrialProgress& row = progress.emplace_back();
      row.number = live.number;
      row.params_json = live.params_json;
      row.slot = running.slot;
      row.steps = static_cast<std::size_t>(live.steps_done) + running.steps;
      row.max_steps = static_cast<int>(live.target);
      row.elapsed_s = running.elapsed_s;
      row.last_step_time_s = running.last_step_time_s;
      row.status = live.promotion ? "promoted" : ids.size() > 1 ? "fused" : "running";
      if (options.objective == kThroughputObjective) continue;
      row.metric_name = options.objective;
      // The record's curve; a promotion run again from step 0 still shows its old one until the
      // run's first value (LiveRun::old_curve_shown), which is not this run's.
      const auto record = std::find_if(trials.records.begin(), trials.records.end(),
                                       [&](const TrialRecord& r) { return r.number == live.number; });
      if (record != trials.records.end() && !record->curve.empty() && !live.old_curve_shown) {
        row.metric_value = record->curve.back().value;
        row.metric_step = record->curve.back().step;
      }
    }
  }
  const int done = static_cast<int>(std::count_if(trials.records.begin(), trials.records.end(), [](const TrialRecord& r) {
    return r.state != TrialRecord::State::kRunning;
  }));
  observer.progress(progress, done, trials.best ? &*trials.best : nullptr);
}

}  // namespace paratune::hpo
