#include "study_trials.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <set>

#include "paratune/hpo/fusion.h"
#include "paratune/spec/error.h"

namespace paratune::hpo {

trial::ThroughputEstimate steps_throughput(const std::vector<trial::StepReport>& steps) {
  std::vector<double> times;
  times.reserve(steps.size());
  for (const trial::StepReport& s : steps) times.push_back(s.step_time_s);
  return trial::estimate_throughput(times);
}

double trial_clock_unix_s() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

trial::TrialResult FusedGroup::member_stopped(std::size_t b, const trial::TrialOutput& view) const {
  const bool diverged = !view.diverged.empty();
  trial::TrialResult result;
  result.id = member_ids[b];
  result.status = diverged ? trial::TrialStatus::kFailed : trial::TrialStatus::kEarlyStopped;
  result.reason = diverged ? "diverged in its fused group: " + view.diverged.front().reason : "";
  result.started_unix_s = started_unix_s;
  result.ended_unix_s = trial_clock_unix_s();
  result.output = view;
  result.throughput = steps_throughput(view.steps);
  result.stdout_path = dir / "stdout.log";
  result.stderr_path = dir / "stderr.log";
  return result;
}

trial::TrialResult FusedGroup::member_ended(std::size_t b, const trial::TrialResult& ended) const {
  trial::TrialResult result = ended;
  result.id = member_ids[b];
  result.output = member_output(ended.output, static_cast<int>(b));
  if (!result.output.diverged.empty() && ended.status != trial::TrialStatus::kInterrupted) {
    result.status = trial::TrialStatus::kFailed;
    result.reason = "diverged in its fused group: " + result.output.diverged.front().reason;
  }
  return result;
}

std::optional<Proposal> checked_proposal(Sampler& sampler, const Space& space, const std::vector<TrialRecord>& records) {
  std::optional<Config> config = sampler.propose(records);
  if (!config) return std::nullopt;
  if (const std::string problem = space.check(*config); !problem.empty())
    throw Error(fmt::format("the {} sampler proposed {}: {} (a bug)", sampler.name(), config->dump(), problem));
  return Proposal{std::move(*config), sampler.proposal_notes()};
}

TrialRecord& StudyTrials::record(int number) {
  for (TrialRecord& r : records)
    if (r.number == number) return r;
  throw Error(fmt::format("no trial {} in the study (a bug)", number));
}

bool StudyTrials::any_completed() const {
  return std::any_of(records.begin(), records.end(),
                     [](const TrialRecord& r) { return r.state == TrialRecord::State::kCompleted; });
}

void StudyTrials::consider_best(const store::StoredTrial& stored, const HpoOptions& options) {
  const Direction direction = options.direction;
  if (!many_objectives(options) && stored.status == "completed" && stored.objective &&
      (!best || as_loss(direction, *stored.objective) < as_loss(direction, *best->objective)))
    best = stored;
}

std::deque<Config> StudyTrials::resume(std::vector<store::StoredTrial> stored, store::StudyStore& store,
                                       const trial::Backend& backend, const HpoOptions& options,
                                       HpoSummary& summary) {
  for (store::StoredTrial& t : stored)
    if (t.status == "running") {
      summary.leftover_processes_killed += backend.clean_up_left_over(t.dir);
      // A fused group's member after the first: its process ran in the first member's directory.
      const nlohmann::json config = nlohmann::json::parse(t.config_json, nullptr, false);
      if (config.is_object() && config.contains("fused") && config["fused"].contains("dir"))
        summary.leftover_processes_killed += backend.clean_up_left_over(config["fused"]["dir"].get<std::string>());
      t.status = t.rung ? "pruned" : "interrupted";  // as mark_running_interrupted stores it
    }
  store.mark_running_interrupted(study);
  if (options.retry_failed) {
    summary.retried_failed = store.mark_failed_for_retry(study);
    if (summary.retried_failed > 0)
      for (store::StoredTrial& t : stored)
        if (t.status == "failed") t.status = "interrupted";
  }
  std::vector<Config> interrupted;
  for (const store::StoredTrial& t : stored) {
    if (t.status == "interrupted") {
      interrupted.push_back(Config::parse(t.params_json));
      continue;
    }
    records.push_back(record_of(t, options.objective, options.objectives));
    books[t.number] = Book{t.id, t.dir, parse_state(t.hpo_json)};
  }
  summary.reused = static_cast<int>(records.size());
  std::deque<Config> again;
  for (const Config& c : interrupted)
    if (std::none_of(records.begin(), records.end(), [&](const TrialRecord& r) { return r.config == c; }) &&
        std::find(again.begin(), again.end(), c) == again.end())
      again.push_back(c);
  // Several objectives have a front, not one best (HpoSummary::front).
  if (const std::optional<std::size_t> i = best_hpo_trial(stored, options.direction); i && !many_objectives(options))
    best = stored[*i];
  return again;
}

void StudyTrials::adopt(const std::vector<store::StoredTrial>& all, const HpoOptions& options) {
  std::set<int> live_here;
  for (const auto& [id, run] : live) live_here.insert(run.number);
  std::vector<TrialRecord> taken;
  for (const store::StoredTrial& t : all) {
    if (live_here.contains(t.number)) {
      taken.push_back(record(t.number));
      continue;
    }
    books.erase(t.number);
    if (t.status == "interrupted") continue;  // its configuration runs again (worker.cc: unfinished_configuration)
    taken.push_back(record_of(t, options.objective, options.objectives));
    books[t.number] = Book{t.id, t.dir, parse_state(t.hpo_json)};
  }
  records = std::move(taken);
  if (const std::optional<std::size_t> i = best_hpo_trial(all, options.direction); i && !many_objectives(options))
    best = all[*i];
}

}  // namespace paratune::hpo
