#include "paratune/hpo/retrain.h"

#include <fmt/format.h>

#include "paratune/spec/error.h"
#include "paratune/tune/study_common.h"
#include "trial_state.h"

namespace paratune::hpo {
namespace {

std::map<std::string, double> final_metrics(const std::vector<trial::MetricReport>& metrics) {
  std::map<std::string, double> out;
  for (const trial::MetricReport& m : metrics) out[m.name] = m.value;  // reports come in order: the last wins
  return out;
}

}  // namespace

RetrainResult retrain_best(const Space& space, const HpoOptions& options, const store::StoredTrial& best, int steps,
                           store::StudyStore& store, const trial::Backend& backend,
                           const std::atomic<int>& stop_requested) {
  if (steps < 1) throw Error(fmt::format("retrain_best: steps {}: must be >= 1", steps));
  const std::unique_ptr<store::ControllerLock> lock = store.lock_controller(options.name);
  RetrainResult result;
  result.study = fmt::format("{}.retrain.{}.{}steps", options.name, best.number, steps);
  const nlohmann::ordered_json identity{{"kind", "retrain"},      {"of", options.name}, {"trial", best.number},
                                        {"params", best.params_json}, {"command", options.command}, {"steps", steps}};
  const std::int64_t study = store.open_study(result.study, identity.dump());
  store.mark_running_interrupted(study);
  for (const store::StoredTrial& t : store.trials(study, true))
    if (t.status == "completed") {
      result.trial = t;
      result.final = final_metrics(t.metrics);
      result.reused = true;
      return result;
    }

  const Config config = Config::parse(best.params_json);
  // The target: a surrogate study's best (trained narrower) is retrained at the full width.
  HpoOptions target = options;
  target.surrogate_ratio = 1;
  // The strategy the trial trained with (its own with --strategy auto).
  const std::string trial_strategy = parse_state(best.hpo_json).strategy;
  const std::string strategy = trial_strategy.empty() ? options.strategy : trial_strategy;
  const std::filesystem::path trials_dir = std::filesystem::absolute(options.trials_dir);
  trial::TrialLaunch launch;
  const auto [db_id, number] = store.begin_trial(study, best.params_json, [&](int n) {
    launch = render_run(space, target, config, fmt::format("{}-{:04d}", result.study, n),
                        trials_dir / fmt::format("retrain-{:04d}-of-trial-{:04d}", n, best.number), steps, steps,
                        strategy);
    const nlohmann::ordered_json record{{"study", result.study}, {"retrain_of", best.number}, {"steps", steps},
                                        {"argv", launch.argv}};
    return store::StudyStore::LaunchRecord{record.dump(), tune::shown_command(launch), launch.dir.string(), /*location=*/""};
  });
  (void)number;
  trial::TrialRunner runner(backend, trial::ParserOptions{options.step_time_regex});
  if (!runner.can_start(launch.slots))
    throw Error(fmt::format("retrain: the best configuration needs {} slots, the backend gives a trial at most {}",
                            launch.slots, backend.max_trial_slots()));
  runner.start(launch);
  for (bool stopping = false;;) {
    if (!stopping && stop_requested.load() != 0) {
      runner.interrupt_all("the controller got SIGINT or SIGTERM");
      stopping = true;
    }
    const std::vector<trial::TrialResult> ended = runner.wait(0.25);
    if (ended.empty()) continue;
    store.finish_trial(db_id, ended.front());
    result.trial = store.trial(db_id);
    result.final = final_metrics(ended.front().output.metrics);
    return result;
  }
}

}  // namespace paratune::hpo
