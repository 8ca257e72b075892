#include "trial_judge.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <set>

namespace paratune::hpo {
namespace {

// The names of the metrics a run reported, for the message when the objective is not among them.
std::string reported_metric_names(const trial::TrialOutput& output) {
  std::set<std::string> names;
  for (const trial::MetricReport& m : output.metrics) names.insert(m.name);
  if (names.empty()) return "no metric at all";
  std::string out;
  for (const std::string& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

// A re-run's first value: the old curve goes (LiveRun::replaced).
void drop_old_curve(LiveRun& live, TrialRecord& r) {
  r.curve.clear();
  live.old_curve_shown = false;
}

}  // namespace

TrialJudge::TrialJudge(const HpoOptions& options, const Pruner& pruner)
    : options_(options), pruner_(pruner), throughput_objective_(options.objective == kThroughputObjective) {}

bool TrialJudge::take_metrics(LiveRun& live, TrialRecord& r, const trial::TrialOutput& output) const {
  const std::int64_t reached = live.steps_done + static_cast<std::int64_t>(output.steps.size());
  bool fresh = false;
  for (; live.metrics_seen < output.metrics.size(); ++live.metrics_seen) {
    const trial::MetricReport& m = output.metrics[live.metrics_seen];
    // A value without a step belongs to the step its step line closes (the last one seen).
    const std::int64_t step = m.step.value_or(reached - 1);
    live.metric_steps.push_back(step);
    if (m.name != options_.objective || throughput_objective_) continue;
    if (live.old_curve_shown) drop_old_curve(live, r);
    r.curve.push_back({step, m.value});
    fresh = true;
  }
  if (!live.old_curve_shown) r.resource = reached;  // a re-run shows its old state until it has a value
  return take_measurement(live, r, output) || fresh;
}

// The run's throughput estimate and peak memory into the record, as steps come (every
// max(1, target / 256)-th step on long runs: each estimate sorts the steps so far); with the
// throughput objective that estimate is also the curve's next value. True when it took a new one.
bool TrialJudge::take_measurement(LiveRun& live, TrialRecord& r, const trial::TrialOutput& output) const {
  if (output.peak_memory_bytes) r.peak_memory_bytes = output.peak_memory_bytes;
  const std::size_t steps = output.steps.size();
  const std::size_t stride = std::max<std::int64_t>(1, live.target / 256);
  if (steps == live.steps_measured || steps % stride != 0) return false;
  live.steps_measured = steps;
  const trial::ThroughputEstimate estimate = steps_throughput(output.steps);
  if (estimate.steps_used == 0) return false;
  r.measured = estimate;
  if (!throughput_objective_) return false;
  if (live.old_curve_shown) {
    drop_old_curve(live, r);
    r.resource = live.steps_done + static_cast<std::int64_t>(steps);
  }
  r.curve.push_back({live.steps_done + static_cast<std::int64_t>(steps) - 1, estimate.steps_per_s});
  return true;
}

trial::TrialResult TrialJudge::take_end(LiveRun& live, TrialRecord& r, const trial::TrialResult& ended) const {
  take_metrics(live, r, ended.output);  // whatever came after the last step line (not judged)
  if (live.old_curve_shown && ended.status != trial::TrialStatus::kInterrupted) {  // a re-run that reported no value at all
    r.curve.clear();
    r.resource = static_cast<std::int64_t>(ended.output.steps.size());
  }
  take_final_measurement(live, r, ended);
  // The store keeps each metric with its step, inferred ones included.
  trial::TrialResult result = ended;
  for (std::size_t i = 0; i < result.output.metrics.size() && i < live.metric_steps.size(); ++i)
    result.output.metrics[i].step = live.metric_steps[i];
  return result;
}

// The run's estimate over all its steps (take_measurement skips steps on long runs), and with the
// throughput objective the curve's value at its last step.
void TrialJudge::take_final_measurement(const LiveRun& live, TrialRecord& r, const trial::TrialResult& ended) const {
  if (ended.output.peak_memory_bytes) r.peak_memory_bytes = ended.output.peak_memory_bytes;
  if (ended.throughput.steps_used == 0 || ended.output.steps.empty()) return;
  r.measured = ended.throughput;
  const std::int64_t last = live.steps_done + static_cast<std::int64_t>(ended.output.steps.size()) - 1;
  if (throughput_objective_ && (r.curve.empty() || r.curve.back().step < last))
    r.curve.push_back({last, ended.throughput.steps_per_s});
}

store::TrialOutcome TrialJudge::judge(const LiveRun& live, TrialRecord& r, const trial::TrialResult& result) const {
  store::TrialOutcome outcome;
  const std::optional<double> last = r.curve.empty() ? std::nullopt : std::optional<double>(r.curve.back().value);
  // A resumed run must continue where its checkpoint left off; a program that announces
  // checkpoints but starts over would repeat steps and mislabel its curve.
  if (live.steps_done > 0 && !result.output.steps.empty() && result.output.steps.front().step != live.steps_done) {
    r.state = TrialRecord::State::kFailed;
    r.failure = trial::FailureKind::kCrashed;
    outcome.status = "failed";
    outcome.reason = fmt::format("resumed after step {} from its checkpoint, but its first step was {}: the program "
                                 "does not resume from PARATUNE_CHECKPOINT_DIR",
                                 live.steps_done - 1, result.output.steps.front().step);
    return outcome;
  }
  switch (result.status) {
    case trial::TrialStatus::kCompleted:
      return judge_completed(live, r, result, last);
    case trial::TrialStatus::kEarlyStopped:
      r.state = TrialRecord::State::kPruned;
      outcome.status = pruner_.stopped_status();
      outcome.objective = last;
      // A metric's step as the program numbered it; a throughput trial's steps counted.
      outcome.reason = throughput_objective_
                           ? fmt::format("stopped by the {} pruner after {} steps (throughput {} steps/s)",
                                         pruner_.name(), r.resource, last ? fmt::format("{:.4g}", *last) : "?")
                           : fmt::format("stopped by the {} pruner at step {} ({} {})", pruner_.name(),
                                         r.curve.empty() ? 0 : r.curve.back().step, options_.objective,
                                         last ? fmt::format("{}", *last) : "?");
      if (r.rung >= 0) outcome.rung = r.rung;
      return outcome;
    default:  // oom, infeasible, failed, timeout: information for the sampler
      r.state = TrialRecord::State::kFailed;
      r.failure = trial::classify_failure(result.status, result.exit_code, result.exit_signal, r.resource);
      outcome.status = trial::to_string(result.status);
      return outcome;
  }
}

store::TrialOutcome TrialJudge::judge_completed(const LiveRun& live, TrialRecord& r, const trial::TrialResult& result,
                                                const std::optional<double>& last) const {
  store::TrialOutcome outcome;
  const bool reached_target = r.resource >= live.target;
  if (reached_target && live.target < options_.steps) {  // rests at a rung
    r.rung = std::max(r.rung, pruner_.rung_of(r.resource, r.bracket));
    outcome.rung = r.rung;
    outcome.objective = value_at(r, r.resource);
    if (!throughput_objective_ && !outcome.objective) {
      r.state = TrialRecord::State::kFailed;
      r.failure = trial::FailureKind::kCrashed;  // ran, but measured nothing usable
      outcome.status = "failed";
      outcome.reason = fmt::format(
          "reported no '{}' by step {}, the end of rung {} (it reported {}); a program that "
          "evaluates every N steps needs the first rung's steps (min_resource) a multiple of N",
          options_.objective, r.resource - 1, r.rung, reported_metric_names(result.output));
      return outcome;
    }
    r.state = TrialRecord::State::kPruned;
    outcome.status = "pruned";
    outcome.reason = fmt::format("rests at rung {} ({} steps{}), promoted if it ranks in the top of its rung", r.rung,
                                 r.resource,
                                 outcome.objective ? fmt::format(", {} {}", options_.objective, *outcome.objective) : "");
    return outcome;
  }
  // The full resource (or all the program does by itself).
  r.value = throughput_objective_
                ? (result.throughput.steps_used > 0 ? std::optional<double>(result.throughput.steps_per_s) : std::nullopt)
                : last;
  if (!r.value || !std::isfinite(*r.value)) {
    r.state = TrialRecord::State::kFailed;
    r.failure = trial::FailureKind::kCrashed;  // ran, but measured nothing usable
    outcome.status = "failed";
    outcome.reason = throughput_objective_ ? "no usable step time (too few steps)"
                                           : fmt::format("reported no '{}' (it reported {})", options_.objective,
                                                         reported_metric_names(result.output));
    return outcome;
  }
  if (many_objectives(options_)) {  // every objective's last value, or the trial failed
    const std::optional<double> throughput =
        result.throughput.steps_used > 0 ? std::optional<double>(result.throughput.steps_per_s) : std::nullopt;
    ObjectiveValues v = objective_values(result.output.metrics, throughput, options_.objectives);
    if (!v.missing.empty()) {
      r.state = TrialRecord::State::kFailed;
      r.failure = trial::FailureKind::kCrashed;
      r.value.reset();
      outcome.status = "failed";
      outcome.reason = v.missing == kThroughputObjective
                           ? "no usable step time for the objective throughput (too few steps)"
                           : fmt::format("reported no finite '{}', one of the study's objectives (it reported {})",
                                         v.missing, reported_metric_names(result.output));
      return outcome;
    }
    r.values = std::move(v.values);
    r.value = r.values.front();
  }
  r.state = TrialRecord::State::kCompleted;
  outcome.status = "completed";
  outcome.objective = r.value;
  if (reached_target) r.rung = std::max(r.rung, pruner_.rung_of(r.resource, r.bracket));
  if (r.rung >= 0) outcome.rung = r.rung;
  return outcome;
}

}  // namespace paratune::hpo
