// The study loop (hpo/study.h describes it): while there is a free slot and time left, promote a
// resting trial, run a configuration again or start the sampler's next; wait for output and let the
// pruner judge it; store every run that ends. Fused groups (hpo/fusion.h) are packed, split and ended
// here. Its parts: study_trials.h (what it knows of the trials), trial_launcher.h (describing and
// registering runs), trial_judge.h (reading output, judging ends), worker.h (worker mode's claims
// and heartbeats) and progress_view.h.
#include "controller.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <deque>

#include "paratune/hpo/fusion.h"
#include "paratune/hpo/trainer_program.h"
#include "paratune/spec/error.h"
#include "progress_view.h"
#include "study_trials.h"
#include "trial_judge.h"
#include "trial_launcher.h"
#include "worker.h"

namespace paratune::hpo {
namespace {

using Clock = std::chrono::steady_clock;
constexpr double kTickS = 0.25;  // how often progress is reported while trials run

class Controller {
 public:
  Controller(const Space& space, const HpoOptions& options, store::StudyStore& store, const trial::Backend& backend,
             Sampler& sampler, Pruner& pruner, tune::StudyObserver& observer)
      : loop_{space, options, store, backend, sampler, pruner, observer},
        runner_(backend, trial::ParserOptions{options.step_time_regex}),
        launcher_(loop_, trials_),
        judge_(options, pruner),
        fuse_size_(options.fuse_auto ? 0 : options.fuse) {}

  HpoSummary run(const std::atomic<int>& stop_requested) {
    const HpoOptions& o = loop_.options;
    HpoSummary summary;
    summary.name = o.name;
    summary.sampler = loop_.sampler.name();
    summary.pruner = loop_.pruner.name();
    summary.objective = o.objective;
    summary.direction = o.direction;
    summary.objectives = o.objectives;
    summary.directions = o.directions;
    const nlohmann::ordered_json identity =
        o.identity.is_null() ? hpo_identity(loop_.space, o, loop_.pruner) : o.identity;
    trials_.study = loop_.store.open_study(o.name, identity.dump());
    load(summary);
    start_ = Clock::now();
    if (o.worker.enabled) worker_.emplace(loop_, runner_, trials_, launcher_);
    stop_requested_ = &stop_requested;
    std::optional<tune::StopReason> stop;
    bool stopping = false;
    for (;;) {
      if (!stopping && stop_requested.load() != 0) {
        stop = tune::StopReason::kInterrupted;
        runner_.interrupt_all("the controller got SIGINT or SIGTERM");
        stopping = true;
      }
      if (!stopping && out_of_budget()) {
        stop = tune::StopReason::kBudget;
        runner_.interrupt_all(fmt::format("the study's budget of {:.0f} s was spent", o.budget_s));
        stopping = true;
      }
      if (!stopping) worker_ ? claim_free_slots(summary, stop) : fill_free_slots(summary, stop);
      if (runner_.idle() && stopping) abandon_split();
      if (runner_.idle() && (stopping || (worker_ ? worker_->done() : no_more_work()))) break;
      const auto on_step = [this](const std::string& id, const trial::StepReport&, const trial::TrialOutput& so_far) {
        return trials_.groups.contains(id) ? on_group_progress(id, so_far) : on_progress(id, so_far);
      };
      for (const trial::TrialResult& result : runner_.wait(kTickS, on_step)) {
        trials_.groups.contains(result.id) ? finish_group(result) : finish(result);
        if (worker_) worker_->claim_now();  // a slot is free: a worker claims at once
      }
      if (worker_) worker_->keep_alive();
      report_progress(runner_, trials_, o, loop_.observer);
    }
    summary.stop = stop.value_or(tune::StopReason::kExhausted);
    summary.reaped = worker_ ? worker_->reaped() : 0;
    summary.dropped = worker_ ? worker_->dropped() : 0;
    summary.elapsed_s = std::chrono::duration<double>(Clock::now() - start_).count();
    summary.serving_processes = runner_.servers_started();
    // Several objectives: their values are the trials' metrics, so those are read too.
    summary.trials = loop_.store.trials(trials_.study, /*with_steps=*/many_objectives(o));
    if (many_objectives(o)) summary.front = pareto_front_trials(summary.trials, o.objectives, o.directions);
    else summary.best = best_hpo_trial(summary.trials, o.direction);
    if (probe_) summary.fusion_probe = to_json(*probe_);
    return summary;
  }

 private:
  bool out_of_budget() const {
    const double budget_s = loop_.options.budget_s;
    return budget_s > 0 && std::chrono::duration<double>(Clock::now() - start_).count() >= budget_s;
  }

  // Every stored trial as the sampler and pruner see it; interrupted first runs queued again.
  void load(HpoSummary& summary) {
    std::vector<store::StoredTrial> stored = loop_.store.trials(trials_.study, true);
    if (loop_.options.worker.enabled) {  // other workers' trials are theirs: the first claim takes every trial in
      summary.reused = static_cast<int>(std::count_if(stored.begin(), stored.end(), [](const store::StoredTrial& t) {
        return t.status != "running" && t.status != "interrupted";
      }));
      trials_.adopt(stored, loop_.options);
      return;
    }
    requeue_ = trials_.resume(std::move(stored), loop_.store, loop_.backend, loop_.options, summary);
    summary.requeued = static_cast<int>(requeue_.size());
  }

  // ---- Filling slots: promotions first, then requeued configurations, then new proposals. ----

  void fill_free_slots(HpoSummary& summary, std::optional<tune::StopReason>& stop) {
    while (runner_.free_slots() > 0) {
      if (!split_.empty()) {  // members of a group that failed at start-up, alone
        launch_alone(split_.front());
        split_.pop_front();
        continue;
      }
      // A promotion whose paused state only a busy serving process holds waits for it; a new
      // trial takes the slot meanwhile.
      if (const std::optional<Promotion> promotion = loop_.pruner.promotion(trials_.records);
          promotion && !waits_for_holder(*promotion)) {
        const Config& config = trials_.record(promotion->trial_number).config;
        if (!runner_.can_start(ranks_of(loop_.options, config))) return;  // wait
        promote(*promotion);
        ++summary.promotions;
        continue;
      }
      if (!held_ && !hold_next(stop)) break;
      if (!runner_.can_start(ranks_of(loop_.options, held_->config))) return;  // wait: nothing overtakes it
      if (fuse_size_ == 0) {  // --fuse auto: measure on the first configuration, with nothing else running
        if (!runner_.idle()) return;
        probe_ = probe_fusion(loop_.space, loop_.options, loop_.backend, held_->config,
                              std::filesystem::absolute(loop_.options.trials_dir) / "fusion-probe",
                              [this] { return stop_requested_->load() != 0 || out_of_budget(); });
        fuse_size_ = probe_->chosen;
      }
      if (fuse_size_ > 1) {
        start_fused_group(summary, stop);
        continue;
      }
      launch_alone(launcher_.begin_new(held_->config, held_->notes, loop_.pruner.assign_new_trial(trials_.records)));
      held_.reset();
      ++summary.started;
    }
    // A capped study whose trials all rest below the full resource: finish the most promising.
    if (runner_.idle() && (exhausted_ || capped_) && !held_ && !trials_.any_completed())
      if (const std::optional<Promotion> promotion = loop_.pruner.finishing_promotion(trials_.records)) {
        promote(*promotion);
        ++summary.promotions;
      }
  }

  // Serving: the trial's paused state is in the memory of a process that runs another trial now,
  // and not on disk (trial::TrialRunner::holder_busy).
  bool waits_for_holder(const Promotion& promotion) const {
    if (!loop_.options.serve || !runner_.holder_busy(launcher_.run_id(promotion.trial_number))) return false;
    const Book& book = trials_.books.at(promotion.trial_number);
    return book.state.checkpoint_dir.empty() || !std::filesystem::is_directory(book.dir / book.state.checkpoint_dir);
  }

  bool no_more_work() const { return (exhausted_ || capped_) && !held_ && split_.empty(); }

  // The next configuration into held_; false when --max-trials is reached or the sampler is done.
  bool hold_next(std::optional<tune::StopReason>& stop) {
    if (exhausted_ || capped_) return false;
    if (loop_.options.max_trials > 0 && static_cast<int>(trials_.records.size()) >= loop_.options.max_trials) {
      capped_ = true;
      if (!stop) stop = tune::StopReason::kMaxTrials;
      return false;
    }
    held_ = next_configuration();
    if (!held_) exhausted_ = true;
    return held_.has_value();
  }

  // A killed controller's unfinished configuration first, else the sampler's proposal.
  std::optional<Proposal> next_configuration() {
    if (requeue_.empty()) return checked_proposal(loop_.sampler, loop_.space, trials_.records);
    Proposal again{requeue_.front(), nlohmann::ordered_json{{"requeued", "the configuration of a trial a killed "
                                                                          "controller left unfinished"}}};
    requeue_.pop_front();
    return again;
  }

  // Worker mode: every trial through the store's claims (worker.h).
  void claim_free_slots(HpoSummary& summary, std::optional<tune::StopReason>& stop) {
    while (runner_.free_slots() > 0 && worker_->due()) {
      std::optional<Worker::Claim> claim = worker_->claim(stop);
      if (!claim) return;
      if (claim->promotion) {
        promote(*claim->promotion, /*claimed=*/true);
        ++summary.promotions;
        continue;
      }
      launch_alone(launcher_.register_new(std::move(*claim->fresh), claim->db_id, claim->notes));
      ++summary.started;
      summary.requeued += claim->requeued ? 1 : 0;
    }
  }

  // ---- Starting runs. ----

  // A new trial's first run, as it is tracked.
  LiveRun first_run(const Begun& begun) {
    LiveRun live;
    live.number = begun.number;
    live.target = begun.resource;
    live.params_json = trials_.record(begun.number).config.dump();
    return live;
  }

  // A run started on `slots` (under its trial's id `id`): tracked, and the observer told.
  void go_live(const std::string& id, LiveRun live, std::vector<int> slots) {
    Book& book = trials_.books.at(live.number);
    book.state.slots = std::move(slots);
    trials_.live.emplace(id, std::move(live));
    loop_.observer.trial_started(loop_.store.trial(book.db_id));
  }

  void launch_alone(const Begun& begun) {
    std::vector<int> slots = runner_.start(begun.launch);
    go_live(begun.launch.id, first_run(begun), std::move(slots));
  }

  // Up to fuse_size_ new trials, starting with held_, that share every non-fusable value and the
  // pruner's first resource, as one fused process (hpo/fusion.h). Each is stored before the next
  // proposal, so samplers see it running. A proposal that does not match stays held for the next.
  void start_fused_group(HpoSummary& summary, std::optional<tune::StopReason>& stop) {
    const TrainerProgram& trainer = *trainer_of(loop_.options);  // validate_fusion found it
    const std::string key = shared_key(held_->config, trainer);
    std::vector<Begun> members;
    std::optional<Assignment> assignment = loop_.pruner.assign_new_trial(trials_.records);
    for (;;) {
      std::optional<TrialLauncher::FusedPlace> place;
      if (!members.empty())
        place = TrialLauncher::FusedPlace{static_cast<int>(members.size()), members.front().launch.dir};
      members.push_back(launcher_.begin_new(held_->config, held_->notes, *assignment, place));
      held_.reset();
      ++summary.started;
      if (static_cast<int>(members.size()) >= fuse_size_ || !hold_next(stop)) break;
      assignment = loop_.pruner.assign_new_trial(trials_.records);
      if (shared_key(held_->config, trainer) != key || assignment->resource != members.front().resource) break;
    }
    if (members.size() == 1) return launch_alone(members.front());
    const trial::TrialLaunch launch = launcher_.fused_run(members);
    FusedGroup group;
    group.dir = members.front().launch.dir;
    for (const Begun& m : members) group.member_ids.push_back(m.launch.id);
    group.alone = members;
    const std::vector<int> slots = runner_.start(launch);
    group.started_unix_s = trial_clock_unix_s();
    for (const Begun& m : members) go_live(m.launch.id, first_run(m), slots);
    trials_.groups.emplace(launch.id, std::move(group));
    ++summary.fused_groups;
    summary.fused_trials += static_cast<int>(members.size());
  }

  // ASHA's promotion: the resting trial runs on to the next rung (TrialLauncher::promotion_run).
  // `claimed`: a worker's claim has made it running already.
  void promote(const Promotion& promotion, bool claimed = false) {
    TrialRecord& r = trials_.record(promotion.trial_number);
    if (r.state != TrialRecord::State::kPruned)
      throw Error(
          fmt::format("the {} pruner promoted trial {}, which is not resting (a bug)", loop_.pruner.name(), r.number));
    Book& book = trials_.books.at(r.number);
    LiveRun live;
    const trial::TrialLaunch launch =
        launcher_.promotion_run(r, book, promotion.resource, live, runner_.holds(launcher_.run_id(r.number)));
    if (!claimed) loop_.store.resume_trial(book.db_id);
    r.state = TrialRecord::State::kRunning;
    ++book.state.runs;
    std::vector<int> slots = runner_.start(launch);
    go_live(launch.id, std::move(live), std::move(slots));
  }

  // ---- While runs go on. ----

  // After each step line: the pruner judges the new values (false stops the trial).
  bool on_progress(const std::string& id, const trial::TrialOutput& so_far) {
    const auto it = trials_.live.find(id);
    if (it == trials_.live.end()) return true;
    TrialRecord& r = trials_.record(it->second.number);
    return !judge_.take_metrics(it->second, r, so_far) || loop_.pruner.keep_running(r, trials_.records);
  }

  // A fused group's step: each member still in the search judged on its own lines (hpo/fusion.h
  // member_output). One the pruner stops, or that diverged, ends now; the process goes on while any
  // member is left.
  bool on_group_progress(const std::string& id, const trial::TrialOutput& so_far) {
    const FusedGroup& group = trials_.groups.at(id);
    bool any_left = false;
    for (std::size_t b = 0; b < group.member_ids.size(); ++b) {
      const std::string& member_id = group.member_ids[b];
      if (!trials_.live.contains(member_id)) continue;
      const trial::TrialOutput view = member_output(so_far, static_cast<int>(b));
      const bool diverged = !view.diverged.empty();
      if (!diverged && on_progress(member_id, view)) {
        any_left = true;
        continue;
      }
      finish(group.member_stopped(b, view));
    }
    return any_left;
  }

  // ---- Ending runs. ----

  // A run's end into the store; false when a worker's run was taken from it meanwhile (worker.h).
  bool store_result(std::int64_t db_id, const trial::TrialResult& result, const store::TrialOutcome& outcome,
                    const LiveRun& live) {
    if (worker_) return worker_->store_result(db_id, result, outcome, live);
    loop_.store.finish_trial(db_id, result, &outcome);
    return true;
  }

  void finish(const trial::TrialResult& ended) {
    const auto it = trials_.live.find(ended.id);
    if (it == trials_.live.end()) return;  // not ours: cannot happen
    LiveRun live = std::move(it->second);
    trials_.live.erase(it);
    TrialRecord& r = trials_.record(live.number);
    Book& book = trials_.books.at(live.number);
    const trial::TrialResult result = judge_.take_end(live, r, ended);
    if (result.status == trial::TrialStatus::kInterrupted) return finish_interrupted(live, r, book, result);
    const std::string left_checkpoint = book.state.checkpoint_dir;
    if (result.output.checkpoint_step) {
      book.state.checkpoint_step = result.output.checkpoint_step;
      book.state.checkpoint_dir = checkpoint_dir_name(live.target);
    }
    store::TrialOutcome outcome = judge_.judge(live, r, result);
    outcome.hpo_json = state_json(book.state);
    outcome.replace_output = live.replaced.has_value();
    if (!store_result(book.db_id, result, outcome, live)) return;
    // Only now that the new state is stored: the rung's checkpoint it left is no longer needed.
    if (!left_checkpoint.empty() && left_checkpoint != book.state.checkpoint_dir)
      std::filesystem::remove_all(book.dir / left_checkpoint);
    const store::StoredTrial stored = loop_.store.trial(book.db_id);
    trials_.consider_best(stored, loop_.options);
    loop_.observer.trial_finished(stored);
  }

  // A fused group's process ended: each member still in the search ends with it.
  void finish_group(const trial::TrialResult& ended) {
    const FusedGroup group = std::move(trials_.groups.at(ended.id));
    trials_.groups.erase(ended.id);
    // Out of memory (or over the memory limit) as a group, or refused before its first step (one
    // member's bad value): each member still in the search runs again alone, from step 0, so what
    // is stored is its own outcome; after a memory failure later groups are half as large.
    const bool out_of_memory =
        ended.status == trial::TrialStatus::kOom || ended.status == trial::TrialStatus::kInfeasible;
    if (out_of_memory || (ended.output.steps.empty() && ended.status == trial::TrialStatus::kFailed)) {
      if (out_of_memory) fuse_size_ = std::max(1, static_cast<int>(group.member_ids.size()) / 2);
      for (std::size_t b = 0; b < group.member_ids.size(); ++b) {
        const auto live = trials_.live.find(group.member_ids[b]);
        if (live == trials_.live.end()) continue;
        TrialRecord& r = trials_.record(live->second.number);
        r.curve.clear();  // the group's values: the run alone reports its own
        r.resource = 0;
        trials_.live.erase(live);
        Begun alone = group.alone[b];
        alone.launch.append_logs = true;  // member 0 runs in the group's directory: keep why it failed
        split_.push_back(std::move(alone));
      }
      return;
    }
    for (std::size_t b = 0; b < group.member_ids.size(); ++b)
      if (trials_.live.contains(group.member_ids[b])) finish(group.member_ended(b, ended));
  }

  // Stopped before a split group's members ran alone: stored as interrupted (run again on resume).
  void abandon_split() {
    for (const Begun& member : split_) {
      trials_.live.emplace(member.launch.id, first_run(member));
      trial::TrialResult result;
      result.id = member.launch.id;
      result.status = trial::TrialStatus::kInterrupted;
      result.reason = "the study stopped before it ran";
      finish(result);
    }
    split_.clear();
  }

  // Stopped by the controller (Ctrl-C, the budget). A promotion goes back to its rung as it was: its
  // output is dropped (the store still has the rung's, and the rung's checkpoint is intact, the run
  // wrote into a directory of its own). A first run is stored as interrupted and leaves the records
  // (a resumed study runs its configuration again).
  void finish_interrupted(const LiveRun& live, TrialRecord& r, Book& book, trial::TrialResult result) {
    store::TrialOutcome outcome;
    if (live.promotion) {
      if (live.replaced) {
        std::tie(r.curve, r.resource) = *live.replaced;
      } else {
        r.curve.erase(std::remove_if(r.curve.begin(), r.curve.end(),
                                     [&](const IntermediateValue& v) { return v.step >= live.steps_done; }),
                      r.curve.end());
        r.resource = live.steps_done;
      }
      r.state = TrialRecord::State::kPruned;
      result.output = {};
      result.throughput = {};
      outcome = {"pruned", "its promotion was interrupted; it rests at its rung again", value_at(r, r.resource), r.rung,
                 state_json(book.state), false};
      if (store_result(book.db_id, result, outcome, live)) loop_.observer.trial_finished(loop_.store.trial(book.db_id));
      return;
    }
    outcome.status = "interrupted";
    outcome.hpo_json = state_json(book.state);
    if (store_result(book.db_id, result, outcome, live)) loop_.observer.trial_finished(loop_.store.trial(book.db_id));
    trials_.records.erase(std::find_if(trials_.records.begin(), trials_.records.end(),
                                       [&](const TrialRecord& t) { return t.number == live.number; }));
    trials_.books.erase(live.number);
  }

  const LoopContext loop_;
  StudyTrials trials_;
  trial::TrialRunner runner_;
  TrialLauncher launcher_;  // after runner_: --strategy auto's check runs once the runner is up, as it always did
  TrialJudge judge_;
  std::optional<Worker> worker_;  // worker mode (HpoOptions::worker)
  std::deque<Config> requeue_;    // configurations a killed controller left unfinished
  std::optional<Proposal> held_;  // a proposal waiting for free slots
  bool exhausted_ = false;        // the sampler has nothing more
  bool capped_ = false;           // --max-trials reached
  std::deque<Begun> split_;       // members of a group refused at start-up, to run alone
  int fuse_size_ = 1;             // trials per fused group; 0: --fuse auto before its probe
  std::optional<FusionProbe> probe_;
  const std::atomic<int>* stop_requested_ = nullptr;  // run()'s, for the probe
  Clock::time_point start_;
};

}  // namespace

HpoSummary run_controller(const Space& space, const HpoOptions& options, store::StudyStore& store,
                          const trial::Backend& backend, Sampler& sampler, Pruner& pruner,
                          tune::StudyObserver& observer, const std::atomic<int>& stop_requested) {
  Controller controller(space, options, store, backend, sampler, pruner, observer);
  return controller.run(stop_requested);
}

}  // namespace paratune::hpo
