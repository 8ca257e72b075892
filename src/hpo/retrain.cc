#include "paratune/hpo/retrain.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <set>

#include "paratune/spec/error.h"
#include "paratune/spec/option_error.h"
#include "paratune/tune/study_common.h"
#include "trial_state.h"

namespace paratune::hpo {
namespace retrain_detail {

std::map<std::string, double> final_metrics(const std::vector<trial::MetricReport>& metrics) {
  std::map<std::string, double> out;
  for (const trial::MetricReport& m : metrics) out[m.name] = m.value;  // reports come in order: the last wins
  return out;
}

void set_run(RetrainResult& r, const store::StoredTrial& t, const std::string& objective) {
  r.trial = t;
  r.final = final_metrics(t.metrics);
  const auto it = r.final.find(objective);
  r.objective = it == r.final.end() || !std::isfinite(it->second) ? std::nullopt : std::optional<double>(it->second);
}

// A run that ended on its own (completed or failed), which a resumed study keeps; an interrupted one
// (the controller stopped it) runs again.
bool finished(const store::StoredTrial& t) { return t.status != "running" && t.status != "interrupted"; }

double duration_s(const store::StoredTrial& t) { return std::max(0.0, t.ended_unix_s - t.started_unix_s); }

// The search's distinct completed configurations with an objective, its best first (ties: the
// earlier trial).
std::vector<const store::StoredTrial*> ranked(const std::vector<store::StoredTrial>& trials, Direction direction) {
  std::vector<const store::StoredTrial*> out;
  for (const store::StoredTrial& t : trials)
    if (t.status == "completed" && t.objective && std::isfinite(*t.objective)) out.push_back(&t);
  std::stable_sort(out.begin(), out.end(), [&](const auto* a, const auto* b) {
    return as_loss(direction, *a->objective) < as_loss(direction, *b->objective);
  });
  std::set<std::string> seen;
  std::erase_if(out, [&](const store::StoredTrial* t) { return !seen.insert(t->params_json).second; });
  return out;
}

}  // namespace retrain_detail

using namespace retrain_detail;

void validate(const RetrainTop& top) {
  if (!top.automatic && top.k < 1)
    throw OptionError("retrain_top", std::to_string(top.k), "must be a whole number >= 1, or auto");
  if (!(std::isfinite(top.budget) && top.budget > 0))
    throw OptionError("retrain_budget", fmt::format("{:g}", top.budget),
                      "must be a number > 0 (the re-evaluations' time as a multiple of the search's)");
}

std::optional<std::size_t> best_reevaluation(const std::vector<RetrainResult>& runs, Direction direction) {
  std::optional<std::size_t> best, first_completed;
  for (std::size_t i = 0; i < runs.size(); ++i) {
    if (runs[i].trial.status != "completed") continue;
    if (!first_completed) first_completed = i;
    if (runs[i].objective &&
        (!best || as_loss(direction, *runs[i].objective) < as_loss(direction, *runs[*best].objective)))
      best = i;
  }
  return best ? best : first_completed;
}

std::string no_choice_message(const Reevaluation& r, const std::string& objective) {
  if (r.runs.empty())
    return fmt::format("no configuration to retrain: the search has no completed trial with {}", objective);
  std::string runs;
  for (const RetrainResult& run : r.runs)
    runs += fmt::format("{}trial {}: {}{}", runs.empty() ? "" : "; ", run.of_trial, run.trial.status,
                        run.trial.reason.empty() ? "" : " (" + run.trial.reason + ")");
  return fmt::format("{} retrain{} of the best configurations failed, so none is chosen: {}",
                     r.runs.size() == 1 ? "the" : fmt::format("all {}", r.runs.size()), r.runs.size() == 1 ? "" : "s",
                     runs);
}

Reevaluation reevaluate_top(const Space& space, const HpoOptions& options, const std::vector<store::StoredTrial>& trials,
                            int steps, const RetrainTop& top, store::StudyStore& store, const trial::Backend& backend,
                            const std::atomic<int>& stop_requested) {
  if (steps < 1) throw Error(fmt::format("reevaluate_top: steps {}: must be >= 1", steps));
  validate(top);
  const std::unique_ptr<store::ControllerLock> lock = store.lock_controller(options.name);
  const std::vector<const store::StoredTrial*> candidates = ranked(trials, options.direction);
  Reevaluation out;
  out.candidates = candidates.size();
  if (candidates.empty()) return out;
  // The search's own cost, the budget's unit: every trial's run time (failed ones cost too).
  double search_s = 0;
  for (const store::StoredTrial& t : trials)
    if (t.status != "running") search_s += duration_s(t);
  // How many to run: auto starts with one, then sets k from the first completed run's duration.
  std::size_t planned = top.automatic ? 1 : std::min<std::size_t>(static_cast<std::size_t>(top.k), candidates.size());
  std::optional<double> measured_s;
  out.rule = top.automatic ? "auto: no re-evaluation completed, so its cost is unknown"
                           : fmt::format("--retrain-top {}", top.k);
  if (!top.automatic && static_cast<std::size_t>(top.k) > candidates.size())
    out.rule += fmt::format(" (the search has {} distinct completed configurations)", candidates.size());
  auto measure = [&](const store::StoredTrial& run) {
    if (!top.automatic || measured_s || run.status != "completed") return;
    measured_s = std::max(duration_s(run), 1e-3);
    const double k = std::floor(top.budget * search_s / *measured_s);
    planned = std::clamp<std::size_t>(k < 1 ? 1 : static_cast<std::size_t>(std::min(k, 1e9)), 1, candidates.size());
    out.rule = fmt::format(
        "auto: --retrain-budget {:g} x the search's {:.1f} s of trials / {:.1f} s per run at the target = {:g}, "
        "so k = {}{}",
        top.budget, search_s, *measured_s, top.budget * search_s / *measured_s, planned,
        k > static_cast<double>(candidates.size()) ? fmt::format(" (all {} distinct completed configurations)", candidates.size())
                                                   : "");
  };

  // The same target for every run: a surrogate study's configurations trained at the full width.
  HpoOptions target = options;
  target.surrogate_ratio = 1;
  const std::filesystem::path trials_dir = std::filesystem::absolute(options.trials_dir);
  trial::TrialRunner runner(backend, trial::ParserOptions{options.step_time_regex});
  std::map<std::string, std::pair<std::size_t, std::int64_t>> running;  // launch id -> (run, stored trial)
  std::size_t next = 0;
  bool stopping = false;
  for (;;) {
    if (!stopping && stop_requested.load() != 0) {
      runner.interrupt_all("the controller got SIGINT or SIGTERM");
      stopping = true;
    }
    // Start (or take from the store) the next ones while the plan and the slots allow.
    while (!stopping && next < planned) {
      const store::StoredTrial& best = *candidates[next];
      RetrainResult r;
      r.study = fmt::format("{}.retrain.{}.{}steps", options.name, best.number, steps);
      r.of_trial = best.number;
      r.search_objective = best.objective;
      const nlohmann::ordered_json identity{{"kind", "retrain"},          {"of", options.name},
                                            {"trial", best.number},       {"params", best.params_json},
                                            {"command", options.command}, {"steps", steps}};
      const std::int64_t study = store.open_study(r.study, identity.dump());
      store.mark_running_interrupted(study);
      std::optional<store::StoredTrial> stored;
      for (const store::StoredTrial& t : store.trials(study, true))
        if (finished(t)) stored = t;  // the latest
      if (stored) {
        set_run(r, *stored, options.objective);
        r.reused = true;
        out.runs.push_back(std::move(r));
        ++next;
        measure(out.runs.back().trial);
        if (top.automatic && !measured_s && out.runs.back().trial.status != "completed")
          planned = std::min(planned + 1, candidates.size());
        continue;
      }
      // The strategy the trial trained with (its own with --strategy auto).
      const std::string trial_strategy = parse_state(best.hpo_json).strategy;
      const std::string strategy = trial_strategy.empty() ? options.strategy : trial_strategy;
      const Config config = Config::parse(best.params_json);
      const int slots = ranks_of(target, config);
      if (slots > backend.max_trial_slots())
        throw Error(fmt::format("retrain: trial {}'s configuration needs {} slots, the backend gives a trial at most {}",
                                best.number, slots, backend.max_trial_slots()));
      if (!runner.can_start(slots)) break;
      trial::TrialLaunch launch;
      const auto [db_id, number] = store.begin_trial(study, best.params_json, [&](int n) {
        launch = render_run(space, target, config, fmt::format("{}-{:04d}", r.study, n),
                            trials_dir / fmt::format("retrain-{:04d}-of-trial-{:04d}", n, best.number), steps, steps,
                            strategy);
        const nlohmann::ordered_json record{{"study", r.study}, {"retrain_of", best.number}, {"steps", steps},
                                            {"argv", launch.argv}};
        return store::StudyStore::LaunchRecord{record.dump(), tune::shown_command(launch), launch.dir.string(),
                                               /*location=*/""};
      });
      (void)number;
      runner.start(launch);
      running[launch.id] = {out.runs.size(), db_id};
      out.runs.push_back(std::move(r));
      ++next;
    }
    if (running.empty()) break;
    for (const trial::TrialResult& ended : runner.wait(0.25)) {
      const auto it = running.find(ended.id);
      if (it == running.end()) continue;
      const auto [index, db_id] = it->second;
      running.erase(it);
      store.finish_trial(db_id, ended);
      set_run(out.runs[index], store.trial(db_id), options.objective);
      out.runs[index].final = final_metrics(ended.output.metrics);
      const auto objective = out.runs[index].final.find(options.objective);
      out.runs[index].objective = objective == out.runs[index].final.end() || !std::isfinite(objective->second)
                                      ? std::nullopt
                                      : std::optional<double>(objective->second);
      measure(out.runs[index].trial);
      // auto, cost still unknown: a failure moves on to the next configuration, one at a time.
      if (top.automatic && !measured_s && out.runs[index].trial.status != "completed")
        planned = std::min(planned + 1, candidates.size());
    }
  }
  out.k = static_cast<int>(planned);
  out.chosen = best_reevaluation(out.runs, options.direction);
  return out;
}

std::vector<RetrainResult> stored_reevaluations(const store::StudyStore& store, const std::string& name,
                                                const std::string& objective) {
  std::vector<RetrainResult> out;
  const std::vector<store::StudyInfo> studies = store.studies();
  for (const store::StudyInfo& s : studies) {
    const nlohmann::json identity = nlohmann::json::parse(s.config_json, nullptr, false);
    if (!identity.is_object() || identity.value("kind", "") != "retrain" || identity.value("of", "") != name) continue;
    std::optional<store::StoredTrial> latest;
    for (const store::StoredTrial& t : store.trials(s.id, true)) latest = t;
    if (!latest) continue;
    RetrainResult r;
    r.study = s.name;
    r.of_trial = identity.value("trial", 0);
    set_run(r, *latest, objective);
    r.reused = true;
    out.push_back(std::move(r));
  }
  // The search's objective of each re-evaluated trial (read only where there are any: the live
  // dashboard calls this at every poll).
  if (out.empty()) return out;
  for (const store::StudyInfo& s : studies) {
    if (s.name != name) continue;
    for (const store::StoredTrial& t : store.trials(s.id, false))
      for (RetrainResult& r : out)
        if (r.of_trial == t.number) r.search_objective = t.objective;
  }
  return out;
}

}  // namespace paratune::hpo
