// The hyperparameter study's controller loop: promote, propose, launch, prune, store (hpo/study.h).
#include "controller.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <deque>
#include <map>
#include <set>

#include "paratune/hpo/fusion.h"
#include "paratune/spec/error.h"
#include "paratune/tune/study_common.h"
#include "auto_strategy.h"
#include "trial_state.h"

namespace paratune::hpo {
namespace {

using Clock = std::chrono::steady_clock;
constexpr double kTickS = 0.25;  // how often progress is reported while trials run
// Worker mode: how often a worker with a free slot and nothing to start claims again.
constexpr double kIdlePollS = 0.5;

// Better in the study's direction (a tie keeps the earlier).
bool better(Direction direction, double a, double b) { return as_loss(direction, a) < as_loss(direction, b); }

// The names of the metrics a run reported, for the message when the objective is not among them.
std::string reported_metrics(const trial::TrialOutput& output) {
  std::set<std::string> names;
  for (const trial::MetricReport& m : output.metrics) names.insert(m.name);
  if (names.empty()) return "no metric at all";
  std::string out;
  for (const std::string& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

// A copy of a checkpoint directory made of hard links (the program replaces files by renaming, so
// the original stays intact); files are copied where links are not possible.
void link_checkpoint(const std::filesystem::path& from, const std::filesystem::path& to) {
  std::filesystem::remove_all(to);
  std::filesystem::create_directories(to);
  for (const auto& entry : std::filesystem::directory_iterator(from)) {
    if (!entry.is_regular_file()) continue;
    std::error_code ec;
    std::filesystem::create_hard_link(entry.path(), to / entry.path().filename(), ec);
    if (ec) std::filesystem::copy_file(entry.path(), to / entry.path().filename());
  }
}

std::string checkpoint_dir_name(std::int64_t steps) { return fmt::format("checkpoint-{}", steps); }

class Controller {
 public:
  Controller(const Space& space, const HpoOptions& options, store::StudyStore& store, const trial::Backend& backend,
             Sampler& sampler, Pruner& pruner, tune::StudyObserver& observer)
      : space_(space),
        options_(options),
        store_(store),
        backend_(backend),
        sampler_(sampler),
        pruner_(pruner),
        observer_(observer),
        throughput_objective_(options.objective == kThroughputObjective),
        trials_dir_(std::filesystem::absolute(options.trials_dir)),
        runner_(backend, trial::ParserOptions{options.step_time_regex}),
        worker_(options.worker.enabled),
        fuse_size_(options.fuse_auto ? 0 : options.fuse) {
    if (options.strategy == kAutoStrategy) auto_strategy_.emplace(space, options, trials_dir_ / "strategy-profiles");
  }

  HpoSummary run(const std::atomic<int>& stop_requested) {
    HpoSummary summary;
    summary.name = options_.name;
    summary.sampler = sampler_.name();
    summary.pruner = pruner_.name();
    summary.objective = options_.objective;
    summary.direction = options_.direction;
    const nlohmann::ordered_json identity =
        options_.identity.is_null() ? hpo_identity(space_, options_, pruner_) : options_.identity;
    study_ = store_.open_study(options_.name, identity.dump());
    load(summary);
    const Clock::time_point start = Clock::now();
    start_ = start;
    next_claim_ = last_heartbeat_ = start;
    stop_requested_ = &stop_requested;
    std::optional<tune::StopReason> stop;
    bool stopping = false;
    for (;;) {
      if (!stopping && stop_requested.load() != 0) {
        stop = tune::StopReason::kInterrupted;
        runner_.interrupt_all("the controller got SIGINT or SIGTERM");
        stopping = true;
      }
      const double elapsed = std::chrono::duration<double>(Clock::now() - start).count();
      if (!stopping && options_.budget_s > 0 && elapsed >= options_.budget_s) {
        stop = tune::StopReason::kBudget;
        runner_.interrupt_all(fmt::format("the study's budget of {:.0f} s was spent", options_.budget_s));
        stopping = true;
      }
      if (!stopping) worker_ ? claim_free_slots(summary, stop) : fill_free_slots(summary, stop);
      if (runner_.idle() && stopping) abandon_split();
      if (runner_.idle() && (stopping || (worker_ ? worker_done_ : no_more_work()))) break;
      const auto on_step = [this](const std::string& id, const trial::StepReport&, const trial::TrialOutput& so_far) {
        return groups_.contains(id) ? on_group_progress(id, so_far) : on_progress(id, so_far);
      };
      for (const trial::TrialResult& result : runner_.wait(kTickS, on_step)) {
        groups_.contains(result.id) ? finish_group(result) : finish(result);
        next_claim_ = Clock::now();  // a slot is free: a worker claims at once
      }
      if (worker_) keep_alive();
      report_progress();
    }
    summary.stop = stop.value_or(tune::StopReason::kExhausted);
    summary.reaped = reaped_;
    summary.dropped = dropped_;
    summary.elapsed_s = std::chrono::duration<double>(Clock::now() - start).count();
    summary.trials = store_.trials(study_);
    summary.best = best_hpo_trial(summary.trials, options_.direction);
    if (probe_) summary.fusion_probe = to_json(*probe_);
    return summary;
  }

 private:
  // What the controller keeps of a trial besides what samplers and pruners see (records_).
  struct Book {
    std::int64_t db_id = 0;
    std::filesystem::path dir;
    TrialState state;
  };

  // A run in progress.
  struct Live {
    int number = 0;
    std::int64_t target = 0;       // the steps it runs to
    std::int64_t steps_done = 0;   // steps behind it (resumed from a checkpoint)
    bool promotion = false;
    std::size_t metrics_seen = 0;  // of its output's metrics, taken in
    std::size_t steps_measured = 0;  // of its output's steps, in the record's throughput estimate
    std::vector<std::int64_t> metric_steps;  // each taken metric's step (inferred where the line had none)
    // A promotion that runs again from step 0: the curve and resource it replaces, kept in case the
    // run is interrupted (the store still has them until the run ends). The record keeps showing the
    // old curve (samplers rank the trial by it) until the run's first value arrives.
    std::optional<std::pair<std::vector<IntermediateValue>, std::int64_t>> replaced;
    bool old_curve_shown = false;
    std::string params_json;
  };

  // A new trial stored, with the launch that runs it alone to `resource` steps.
  struct Begun {
    int number = 0;
    trial::TrialLaunch launch;
    std::int64_t resource = 0;
  };

  // A fused group's process (hpo/fusion.h): its members' trial ids, by member index.
  struct Group {
    std::vector<std::string> member_ids;
    std::vector<Begun> alone;  // each member's own launch: a group that fails at start-up is split
    std::filesystem::path dir;
    double started_unix_s = 0;
  };

  // ---- Filling slots: promotions first, then requeued configurations, then new proposals. ----

  void fill_free_slots(HpoSummary& summary, std::optional<tune::StopReason>& stop) {
    while (runner_.free_slots() > 0) {
      if (!split_.empty()) {  // members of a group that failed at start-up, alone
        launch_alone(split_.front());
        split_.pop_front();
        continue;
      }
      if (const std::optional<Promotion> promotion = pruner_.promotion(records_)) {
        if (!runner_.can_start(ranks_of(options_, record(promotion->trial_number).config))) return;  // wait
        promote(*promotion);
        ++summary.promotions;
        continue;
      }
      if (!held_ && !hold_next(stop)) break;
      if (!runner_.can_start(ranks_of(options_, held_->first))) return;  // wait: nothing overtakes it
      if (fuse_size_ == 0) {  // --fuse auto: measure on the first configuration, with nothing else running
        if (!runner_.idle()) return;
        probe_ = probe_fusion(space_, options_, backend_, held_->first, trials_dir_ / "fusion-probe", [this] {
          return stop_requested_->load() != 0 ||
                 (options_.budget_s > 0 &&
                  std::chrono::duration<double>(Clock::now() - start_).count() >= options_.budget_s);
        });
        fuse_size_ = probe_->chosen;
      }
      if (fuse_size_ > 1) {
        start_fused_group(summary, stop);
        continue;
      }
      start_new(held_->first, held_->second);
      held_.reset();
      ++summary.started;
    }
    // A capped study whose trials all rest below the full resource: finish the most promising.
    if (runner_.idle() && (exhausted_ || capped_) && !held_ && !any_completed())
      if (const std::optional<Promotion> promotion = pruner_.finishing_promotion(records_)) {
        promote(*promotion);
        ++summary.promotions;
      }
  }

  bool no_more_work() const { return (exhausted_ || capped_) && !held_ && split_.empty(); }

  // Stopped before a split group's members ran alone: stored as interrupted (run again on resume).
  void abandon_split() {
    for (const Begun& member : split_) {
      Live live;
      live.number = member.number;
      live.target = member.resource;
      live_.emplace(member.launch.id, std::move(live));
      trial::TrialResult result;
      result.id = member.launch.id;
      result.status = trial::TrialStatus::kInterrupted;
      result.reason = "the study stopped before it ran";
      finish(result);
    }
    split_.clear();
  }

  // The next configuration into held_; false when --max-trials is reached or the sampler is done.
  bool hold_next(std::optional<tune::StopReason>& stop) {
    if (exhausted_ || capped_) return false;
    if (options_.max_trials > 0 && static_cast<int>(records_.size()) >= options_.max_trials) {
      capped_ = true;
      if (!stop) stop = tune::StopReason::kMaxTrials;
      return false;
    }
    held_ = next_configuration();
    if (!held_) exhausted_ = true;
    return held_.has_value();
  }

  // A killed controller's unfinished configuration first, else the sampler's proposal.
  std::optional<std::pair<Config, nlohmann::ordered_json>> next_configuration() {
    if (!requeue_.empty()) {
      Config config = requeue_.front();
      requeue_.pop_front();
      return std::make_pair(config, nlohmann::ordered_json{
                                        {"requeued", "the configuration of a trial a killed controller left unfinished"}});
    }
    std::optional<Config> config = sampler_.propose(records_);
    if (!config) return std::nullopt;
    if (const std::string problem = space_.check(*config); !problem.empty())
      throw Error(fmt::format("the {} sampler proposed {}: {} (a bug)", sampler_.name(), config->dump(), problem));
    return std::make_pair(*config, sampler_.proposal_notes());
  }

  // ---- Records. ----

  TrialRecord& record(int number) {
    for (TrialRecord& r : records_)
      if (r.number == number) return r;
    throw Error(fmt::format("no trial {} in the study (a bug)", number));
  }

  bool any_completed() const {
    return std::any_of(records_.begin(), records_.end(),
                       [](const TrialRecord& r) { return r.state == TrialRecord::State::kCompleted; });
  }

  // Every stored trial as the sampler and pruner see it; interrupted first runs queued again.
  void load(HpoSummary& summary) {
    std::vector<store::StoredTrial> stored = store_.trials(study_, true);
    if (worker_) {  // other workers' trials are theirs: the first claim takes every trial in (adopt)
      summary.reused = static_cast<int>(std::count_if(stored.begin(), stored.end(), [](const store::StoredTrial& t) {
        return t.status != "running" && t.status != "interrupted";
      }));
      adopt(stored);
      return;
    }
    for (store::StoredTrial& t : stored)
      if (t.status == "running") {
        summary.leftover_processes_killed += backend_.clean_up_left_over(t.dir);
        // A fused group's member after the first: its process ran in the first member's directory.
        const nlohmann::json config = nlohmann::json::parse(t.config_json, nullptr, false);
        if (config.is_object() && config.contains("fused") && config["fused"].contains("dir"))
          summary.leftover_processes_killed += backend_.clean_up_left_over(config["fused"]["dir"].get<std::string>());
        t.status = t.rung ? "pruned" : "interrupted";  // as mark_running_interrupted stores it
      }
    store_.mark_running_interrupted(study_);
    if (options_.retry_failed) {
      summary.retried_failed = store_.mark_failed_for_retry(study_);
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
      records_.push_back(record_of(t, options_.objective));
      books_[t.number] = Book{t.id, t.dir, parse_state(t.hpo_json)};
    }
    summary.reused = static_cast<int>(records_.size());
    for (const Config& c : interrupted)
      if (std::none_of(records_.begin(), records_.end(), [&](const TrialRecord& r) { return r.config == c; }) &&
          std::find(requeue_.begin(), requeue_.end(), c) == requeue_.end())
        requeue_.push_back(c);
    summary.requeued = static_cast<int>(requeue_.size());
    if (const std::optional<std::size_t> best = best_hpo_trial(stored, options_.direction)) best_ = stored[*best];
  }

  // ---- Starting runs. ----

  trial::TrialLaunch launch_for(const TrialRecord& r, const std::filesystem::path& dir, std::int64_t target,
                                const std::string& strategy) const {
    trial::TrialLaunch launch = render_run(space_, options_, r.config, fmt::format("{}-{:04d}", options_.name, r.number),
                                           dir, static_cast<int>(target), options_.steps, strategy);
    // A run that stops short of the full resource rests at a rung: let the program checkpoint.
    if (target < options_.steps || r.rung >= 0)
      launch.env.emplace_back("PARATUNE_CHECKPOINT_DIR", (dir / checkpoint_dir_name(target)).string());
    return launch;
  }

  nlohmann::ordered_json trial_config(const trial::TrialLaunch& launch, int bracket, const std::string& strategy) const {
    return {{"study", options_.name},
            {"command", options_.command},
            {"steps", options_.steps},
            {"objective", options_.objective},
            {"direction", to_string(options_.direction)},
            {"sampler", sampler_.name()},
            {"pruner", pruner_.name()},
            {"bracket", bracket},
            {"ranks", launch.slots},
            {"strategy", strategy},
            {"limits",
             {{"timeout_s", launch.limits.timeout_s},
              {"hang_s", launch.limits.hang_s},
              {"grace_s", launch.limits.grace_s},
              {"memory_limit_bytes", launch.limits.memory_limit_bytes}}},
            {"backend", backend_.name()},
            {"argv", launch.argv}};
  }

  // Stores a new trial (its number, record and book). `fused`: its place in a fused group, kept with
  // its configuration.
  // A fused group's member after the first: the group's process runs in the first member's
  // directory (hpo/fusion.h).
  struct FusedPlace {
    int member = 0;
    std::filesystem::path group_dir;
  };
  // A new trial as it is stored and launched, once its number is known (no store call: it runs
  // inside the store's transaction).
  struct NewRun {
    TrialRecord record;
    trial::TrialLaunch launch;
    store::StudyStore::LaunchRecord stored;
    std::int64_t resource = 0;
    std::string strategy;
  };
  NewRun describe_new(const Config& config, const Assignment& assignment, int number, const std::string& strategy,
                      const std::optional<FusedPlace>& fused) const {
    NewRun run;
    run.record.config = config;
    run.record.state = TrialRecord::State::kRunning;
    run.record.bracket = assignment.bracket;
    run.record.number = number;
    run.launch = launch_for(run.record, trials_dir_ / fmt::format("trial-{:04d}", number), assignment.resource, strategy);
    // What reproduces the trial: its command for the full resource, from scratch, alone.
    trial::TrialLaunch full = launch_for(run.record, run.launch.dir, options_.steps, strategy);
    full.env.clear();
    nlohmann::ordered_json config_record = trial_config(run.launch, assignment.bracket, strategy);
    if (fused) config_record["fused"] = {{"dir", fused->group_dir.string()}, {"member", fused->member}};
    run.stored = {config_record.dump(), tune::shown_command(full), run.launch.dir.string(), /*location=*/""};
    run.resource = assignment.resource;
    run.strategy = strategy;
    return run;
  }

  // A new trial the store holds now (id `db_id`): its notes, the sampler's model, its record and book.
  Begun register_new(NewRun run, std::int64_t db_id, const nlohmann::ordered_json& notes) {
    if (!notes.empty()) store_.set_prediction(db_id, notes.dump());
    if (const nlohmann::ordered_json model = sampler_.model_summary(); !model.empty() && model != stored_model_) {
      store_.set_model(study_, model.dump());
      stored_model_ = model;
    }
    const int number = run.record.number;
    Book book{db_id, run.launch.dir, {}};
    book.state.bracket = run.record.bracket;
    book.state.runs = 1;
    book.state.strategy = run.strategy;
    books_[number] = book;
    records_.push_back(std::move(run.record));
    return {number, std::move(run.launch), run.resource};
  }

  Begun begin_new(const Config& config, nlohmann::ordered_json notes, const Assignment& assignment,
                  std::optional<FusedPlace> fused = std::nullopt) {
    // --strategy auto: the cost model's choice for this trial's model, batch and ranks (measuring
    // the model's profile first when it is new), kept with the trial's notes.
    std::string strategy = options_.strategy;
    if (auto_strategy_) {
      AutoStrategy::Choice choice = auto_strategy_->choose(config, ranks_of(options_, config));
      strategy = choice.strategy;
      if (!notes.is_object()) notes = nlohmann::ordered_json::object();
      notes["strategy_auto"] = std::move(choice.notes);
    }
    std::optional<NewRun> run;
    const std::int64_t db_id = store_.begin_trial(study_, config.dump(), [&](int n) {
                                       run = describe_new(config, assignment, n, strategy, fused);
                                       return run->stored;
                                     }).first;
    return register_new(std::move(*run), db_id, notes);
  }

  void start_new(const Config& config, nlohmann::ordered_json notes) {
    launch_alone(begin_new(config, std::move(notes), pruner_.assign_new_trial(records_)));
  }

  void launch_alone(const Begun& begun) {
    Book& book = books_.at(begun.number);
    book.state.slots = runner_.start(begun.launch);
    Live live;
    live.number = begun.number;
    live.target = begun.resource;
    live.params_json = record(begun.number).config.dump();
    live_.emplace(begun.launch.id, std::move(live));
    observer_.trial_started(store_.trial(book.db_id));
  }

  // Up to fuse_size_ new trials, starting with held_, that share every non-fusable value and the
  // pruner's first resource, as one fused process (hpo/fusion.h). Each is stored before the next
  // proposal, so samplers see it running. A proposal that does not match stays held for the next.
  void start_fused_group(HpoSummary& summary, std::optional<tune::StopReason>& stop) {
    const std::string key = shared_key(held_->first);
    std::vector<Begun> members;
    std::optional<Assignment> assignment = pruner_.assign_new_trial(records_);
    for (;;) {
      std::optional<FusedPlace> place;
      if (!members.empty()) place = FusedPlace{static_cast<int>(members.size()), members.front().launch.dir};
      members.push_back(begin_new(held_->first, held_->second, *assignment, place));
      held_.reset();
      ++summary.started;
      if (static_cast<int>(members.size()) >= fuse_size_ || !hold_next(stop)) break;
      assignment = pruner_.assign_new_trial(records_);
      if (shared_key(held_->first) != key || assignment->resource != members.front().resource) break;
    }
    if (members.size() == 1) return launch_alone(members.front());
    const std::filesystem::path dir = members.front().launch.dir;
    // One process for all: rendered as the first member's run (the shared options), in the group's
    // directory, with every member's PARATUNE_PARAMS in an array and no checkpoint directory.
    const TrialRecord& first = record(members.front().number);
    trial::TrialLaunch launch = render_run(space_, options_, first.config,
                                           members.front().launch.id + "-fused", dir,
                                           static_cast<int>(members.front().resource), options_.steps,
                                           books_.at(first.number).state.strategy);
    nlohmann::ordered_json params = nlohmann::ordered_json::array();
    Group group;
    group.dir = dir;
    for (const Begun& m : members) {
      params.push_back(nlohmann::ordered_json::parse(m.launch.params_json));
      group.member_ids.push_back(m.launch.id);
    }
    group.alone = members;
    launch.params_json = params.dump();
    launch.limits.timeout_s *= static_cast<double>(members.size());  // the work of that many trials
    const std::vector<int> slots = runner_.start(launch);
    group.started_unix_s = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
    for (const Begun& m : members) {
      Book& book = books_.at(m.number);
      book.state.slots = slots;
      Live live;
      live.number = m.number;
      live.target = m.resource;
      live.params_json = record(m.number).config.dump();
      live_.emplace(m.launch.id, std::move(live));
      observer_.trial_started(store_.trial(book.db_id));
    }
    groups_.emplace(launch.id, std::move(group));
    ++summary.fused_groups;
    summary.fused_trials += static_cast<int>(members.size());
  }

  // ASHA's promotion: the resting trial runs on to the next rung, from its checkpoint when it has one,
  // else from step 0 (its earlier output is replaced when the new run ends). `claimed`: a worker's
  // claim has made it running already.
  void promote(const Promotion& promotion, bool claimed = false) {
    TrialRecord& r = record(promotion.trial_number);
    if (r.state != TrialRecord::State::kPruned)
      throw Error(fmt::format("the {} pruner promoted trial {}, which is not resting (a bug)", pruner_.name(), r.number));
    Book& book = books_.at(r.number);
    // A trial another worker ran on another host (no shared file system): its run here goes into
    // this worker's trials directory, from step 0.
    if (worker_ && !std::filesystem::is_directory(book.dir)) book.dir = trials_dir_ / fmt::format("trial-{:04d}", r.number);
    const std::filesystem::path from = book.dir / book.state.checkpoint_dir;
    const bool resume = book.state.checkpoint_step && *book.state.checkpoint_step + 1 == r.resource &&
                        !book.state.checkpoint_dir.empty() && std::filesystem::is_directory(from);
    const std::filesystem::path to = book.dir / checkpoint_dir_name(promotion.resource);
    if (resume) link_checkpoint(from, to);
    else std::filesystem::remove_all(to);
    Live live;
    live.number = r.number;
    live.target = promotion.resource;
    live.promotion = true;
    live.params_json = r.config.dump();
    if (!resume) {
      live.replaced.emplace(r.curve, r.resource);
      live.old_curve_shown = true;
    }
    live.steps_done = resume ? r.resource : 0;
    if (!claimed) store_.resume_trial(book.db_id);
    r.state = TrialRecord::State::kRunning;
    ++book.state.runs;
    // The strategy of its first run: a checkpoint holds that run's stages.
    trial::TrialLaunch launch = launch_for(r, book.dir, promotion.resource,
                                           book.state.strategy.empty() ? options_.strategy : book.state.strategy);
    launch.steps_done = live.steps_done;
    launch.append_logs = true;
    book.state.slots = runner_.start(launch);
    live_.emplace(launch.id, std::move(live));
    observer_.trial_started(store_.trial(book.db_id));
  }

  // ---- Worker mode (HpoOptions::worker): every trial through the store's claims. ----

  void claim_free_slots(HpoSummary& summary, std::optional<tune::StopReason>& stop) {
    while (!worker_done_ && runner_.free_slots() > 0 && Clock::now() >= next_claim_)
      if (!claim_one(summary, stop)) {
        next_claim_ = Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(kIdlePollS));
        return;
      }
  }

  // One claim (store/study_store.h: claim_trial): in one transaction, every worker's trials taken in,
  // then ASHA's promotion, else a configuration a dead worker left unfinished, else the sampler's
  // proposal -- stored as this worker's. Returns whether a run started; sets worker_done_ when the
  // study is done: nothing to start and no trial of any worker running (one may still die and need
  // its configuration run again, or rest at a rung and be promoted).
  bool claim_one(HpoSummary& summary, std::optional<tune::StopReason>& stop) {
    std::optional<Promotion> promotion;
    std::optional<NewRun> fresh;
    nlohmann::ordered_json notes;
    bool requeued = false;
    const store::StudyStore::ClaimOutcome outcome = store_.claim_trial(
        study_, options_.worker.heartbeat_timeout_s,
        [&](const std::vector<store::StoredTrial>& all, int number) -> std::optional<store::StudyStore::NewTrial> {
          promotion.reset();
          fresh.reset();
          adopt(all);
          const bool any_running =
              std::any_of(all.begin(), all.end(), [](const store::StoredTrial& t) { return t.status == "running"; });
          // --max-trials counts every configuration in the study but the interrupted (they run again).
          const auto counted = std::count_if(all.begin(), all.end(),
                                             [](const store::StoredTrial& t) { return t.status != "interrupted"; });
          const bool capped = options_.max_trials > 0 && counted >= options_.max_trials;
          promotion = pruner_.promotion(records_);
          std::optional<std::pair<Config, nlohmann::ordered_json>> next;
          if (!promotion && !capped) {
            if (std::optional<Config> left = unfinished_configuration(all)) {
              next.emplace(std::move(*left), nlohmann::ordered_json{{"requeued", "the configuration of a trial a dead "
                                                                                 "worker or killed controller left "
                                                                                 "unfinished"}});
              requeued = true;
            } else if (std::optional<Config> proposed = sampler_.propose(records_)) {
              if (const std::string problem = space_.check(*proposed); !problem.empty())
                throw Error(fmt::format("the {} sampler proposed {}: {} (a bug)", sampler_.name(), proposed->dump(),
                                        problem));
              next.emplace(std::move(*proposed), sampler_.proposal_notes());
            }
          }
          // A capped study whose trials all rest below the full resource: finish the most promising.
          if (!promotion && !next && !any_running && !any_completed()) promotion = pruner_.finishing_promotion(records_);
          if (promotion) {
            if (!runner_.can_start(ranks_of(options_, record(promotion->trial_number).config))) {
              promotion.reset();  // wait for slots
              return std::nullopt;
            }
            store::StudyStore::NewTrial resume;
            resume.resume = books_.at(promotion->trial_number).db_id;
            return resume;
          }
          if (!next) {
            if (!any_running) {
              worker_done_ = true;
              if (capped && !stop) stop = tune::StopReason::kMaxTrials;
            }
            return std::nullopt;
          }
          if (!runner_.can_start(ranks_of(options_, next->first))) return std::nullopt;  // wait for slots
          fresh = describe_new(next->first, pruner_.assign_new_trial(records_), number, options_.strategy, std::nullopt);
          notes = std::move(next->second);
          return store::StudyStore::NewTrial{next->first.dump(), fresh->stored, std::nullopt};
        },
        /*with_outputs=*/true);
    for (const store::StoredTrial& d : outcome.reaped) {
      ++reaped_;
      observer_.note(tune::reaped_note(d, backend_.clean_up_left_over(d.dir)));  // its processes, if on this host
    }
    if (!outcome.claimed) return false;
    if (promotion) {
      promote(*promotion, /*claimed=*/true);
      ++summary.promotions;
      return true;
    }
    launch_alone(register_new(std::move(*fresh), outcome.claimed->first, notes));
    ++summary.started;
    summary.requeued += requeued ? 1 : 0;
    return true;
  }

  // Every stored trial as the sampler and pruner see it (those running here keep their live
  // records), the books to promote them by, and the best so far.
  void adopt(const std::vector<store::StoredTrial>& all) {
    std::set<int> live_here;
    for (const auto& [id, live] : live_) live_here.insert(live.number);
    std::vector<TrialRecord> records;
    for (const store::StoredTrial& t : all) {
      if (live_here.contains(t.number)) {
        records.push_back(record(t.number));
        continue;
      }
      books_.erase(t.number);
      if (t.status == "interrupted") continue;  // its configuration runs again (unfinished_configuration)
      records.push_back(record_of(t, options_.objective));
      books_[t.number] = Book{t.id, t.dir, parse_state(t.hpo_json)};
    }
    records_ = std::move(records);
    if (const std::optional<std::size_t> best = best_hpo_trial(all, options_.direction)) best_ = all[*best];
  }

  // The configuration of an interrupted trial that no other trial has taken up, if any.
  static std::optional<Config> unfinished_configuration(const std::vector<store::StoredTrial>& all) {
    std::set<std::string> taken;
    for (const store::StoredTrial& t : all)
      if (t.status != "interrupted") taken.insert(t.params_json);
    for (const store::StoredTrial& t : all)
      if (t.status == "interrupted" && !taken.contains(t.params_json)) return Config::parse(t.params_json);
    return std::nullopt;
  }

  // Every heartbeat interval: this worker's runs are alive, and what the others did since is taken
  // in (the pruner judges running trials against every worker's curves).
  void keep_alive() {
    if (std::chrono::duration<double>(Clock::now() - last_heartbeat_).count() < options_.worker.heartbeat_s) return;
    last_heartbeat_ = Clock::now();
    std::vector<std::int64_t> ids;
    for (const auto& [id, live] : live_) ids.push_back(books_.at(live.number).db_id);
    store_.heartbeat(ids);
    adopt(store_.trials(study_, true));
  }

  // A run's end into the store; false when a worker's run was taken from it meanwhile (another
  // worker found its heartbeat too old and runs it again): nothing stored, the result dropped.
  bool store_result(std::int64_t db_id, const trial::TrialResult& result, const store::TrialOutcome& outcome,
                    const Live& live) {
    if (!worker_) {
      store_.finish_trial(db_id, result, &outcome);
      return true;
    }
    if (store_.finish_own_trial(db_id, result, &outcome)) return true;
    ++dropped_;
    observer_.note(fmt::format("trial {} {} {} here, but another worker had marked it interrupted (this worker's "
                               "heartbeat came too late) and runs it again: this result is dropped",
                               live.number, live.params_json, trial::to_string(result.status)));
    return false;
  }

  // ---- While runs go on. ----

  // New intermediate values into the trial's curve; true when there was one.
  bool take_metrics(Live& live, TrialRecord& r, const trial::TrialOutput& output) {
    const std::int64_t reached = live.steps_done + static_cast<std::int64_t>(output.steps.size());
    bool fresh = false;
    for (; live.metrics_seen < output.metrics.size(); ++live.metrics_seen) {
      const trial::MetricReport& m = output.metrics[live.metrics_seen];
      // A value without a step belongs to the step its step line closes (the last one seen).
      const std::int64_t step = m.step.value_or(reached - 1);
      live.metric_steps.push_back(step);
      if (m.name != options_.objective || throughput_objective_) continue;
      if (live.old_curve_shown) {  // a re-run's first value: the old curve goes
        r.curve.clear();
        live.old_curve_shown = false;
      }
      r.curve.push_back({step, m.value});
      fresh = true;
    }
    if (!live.old_curve_shown) r.resource = reached;  // a re-run shows its old state until it has a value
    return take_measurement(live, r, output) || fresh;
  }

  // The run's throughput estimate and peak memory into the record, as steps come (every
  // max(1, target / 256)-th step on long runs: each estimate sorts the steps so far); with the
  // throughput objective that estimate is also the curve's next value. True when it took a new one.
  bool take_measurement(Live& live, TrialRecord& r, const trial::TrialOutput& output) {
    if (output.peak_memory_bytes) r.peak_memory_bytes = output.peak_memory_bytes;
    const std::size_t steps = output.steps.size();
    const std::size_t stride = std::max<std::int64_t>(1, live.target / 256);
    if (steps == live.steps_measured || steps % stride != 0) return false;
    live.steps_measured = steps;
    std::vector<double> times;
    times.reserve(steps);
    for (const trial::StepReport& s : output.steps) times.push_back(s.step_time_s);
    const trial::ThroughputEstimate estimate = trial::estimate_throughput(times);
    if (estimate.steps_used == 0) return false;
    r.measured = estimate;
    if (!throughput_objective_) return false;
    if (live.old_curve_shown) {  // a re-run's first value: the old curve goes
      r.curve.clear();
      live.old_curve_shown = false;
      r.resource = live.steps_done + static_cast<std::int64_t>(steps);
    }
    r.curve.push_back({live.steps_done + static_cast<std::int64_t>(steps) - 1, estimate.steps_per_s});
    return true;
  }

  // After each step line: the pruner judges the new values (false stops the trial).
  bool on_progress(const std::string& id, const trial::TrialOutput& so_far) {
    const auto it = live_.find(id);
    if (it == live_.end()) return true;
    TrialRecord& r = record(it->second.number);
    return !take_metrics(it->second, r, so_far) || pruner_.keep_running(r, records_);
  }

  // A fused group's step: each member still in the search judged on its own lines. One the pruner
  // stops, or that diverged, ends now; the process goes on while any member is left.
  bool on_group_progress(const std::string& id, const trial::TrialOutput& so_far) {
    const Group& group = groups_.at(id);
    bool any_left = false;
    for (std::size_t b = 0; b < group.member_ids.size(); ++b) {
      const std::string& member_id = group.member_ids[b];
      if (!live_.contains(member_id)) continue;
      const trial::TrialOutput view = member_output(so_far, static_cast<int>(b));
      const bool diverged = !view.diverged.empty();
      if (!diverged && on_progress(member_id, view)) {
        any_left = true;
        continue;
      }
      trial::TrialResult result;
      result.id = member_id;
      result.status = diverged ? trial::TrialStatus::kFailed : trial::TrialStatus::kEarlyStopped;
      result.reason = diverged ? "diverged in its fused group: " + view.diverged.front().reason : "";
      result.started_unix_s = group.started_unix_s;
      result.ended_unix_s = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
      result.output = view;
      std::vector<double> times;
      for (const trial::StepReport& s : view.steps) times.push_back(s.step_time_s);
      result.throughput = trial::estimate_throughput(times);
      result.stdout_path = group.dir / "stdout.log";
      result.stderr_path = group.dir / "stderr.log";
      finish(result);
    }
    return any_left;
  }

  // ---- Ending runs. ----

  void finish(const trial::TrialResult& ended) {
    const auto it = live_.find(ended.id);
    if (it == live_.end()) return;  // not ours: cannot happen
    Live live = std::move(it->second);
    live_.erase(it);
    TrialRecord& r = record(live.number);
    Book& book = books_.at(live.number);
    take_metrics(live, r, ended.output);  // whatever came after the last step line (not judged)
    if (live.old_curve_shown && result_is_final(ended)) {  // a re-run that reported no value at all
      r.curve.clear();
      r.resource = static_cast<std::int64_t>(ended.output.steps.size());
    }
    take_final_measurement(live, r, ended);
    // The store keeps each metric with its step, inferred ones included.
    trial::TrialResult result = ended;
    for (std::size_t i = 0; i < result.output.metrics.size() && i < live.metric_steps.size(); ++i)
      result.output.metrics[i].step = live.metric_steps[i];

    if (result.status == trial::TrialStatus::kInterrupted) return finish_interrupted(live, r, book, result);
    const std::string left_checkpoint = book.state.checkpoint_dir;
    if (result.output.checkpoint_step) {
      book.state.checkpoint_step = result.output.checkpoint_step;
      book.state.checkpoint_dir = checkpoint_dir_name(live.target);
    }
    store::TrialOutcome outcome = judge(live, r, result);
    outcome.hpo_json = state_json(book.state);
    outcome.replace_output = live.replaced.has_value();
    if (!store_result(book.db_id, result, outcome, live)) return;
    // Only now that the new state is stored: the rung's checkpoint it left is no longer needed.
    if (!left_checkpoint.empty() && left_checkpoint != book.state.checkpoint_dir)
      std::filesystem::remove_all(book.dir / left_checkpoint);
    const store::StoredTrial stored = store_.trial(book.db_id);
    if (stored.status == "completed" && stored.objective &&
        (!best_ || better(options_.direction, *stored.objective, *best_->objective)))
      best_ = stored;
    observer_.trial_finished(stored);
  }

  // The run's estimate over all its steps (take_measurement skips steps on long runs), and with the
  // throughput objective the curve's value at its last step.
  void take_final_measurement(const Live& live, TrialRecord& r, const trial::TrialResult& ended) const {
    if (ended.output.peak_memory_bytes) r.peak_memory_bytes = ended.output.peak_memory_bytes;
    if (ended.throughput.steps_used == 0 || ended.output.steps.empty()) return;
    r.measured = ended.throughput;
    const std::int64_t last = live.steps_done + static_cast<std::int64_t>(ended.output.steps.size()) - 1;
    if (throughput_objective_ && (r.curve.empty() || r.curve.back().step < last))
      r.curve.push_back({last, ended.throughput.steps_per_s});
  }

  // A fused group's process ended: each member still in the search ends with it, on its own lines
  // (a member that diverged fails; the others share the process's status).
  void finish_group(const trial::TrialResult& ended) {
    const Group group = std::move(groups_.at(ended.id));
    groups_.erase(ended.id);
    // Out of memory (or over the memory limit) as a group, or refused before its first step (one
    // member's bad value): each member still in the search runs again alone, from step 0, so what
    // is stored is its own outcome; after a memory failure later groups are half as large.
    const bool out_of_memory =
        ended.status == trial::TrialStatus::kOom || ended.status == trial::TrialStatus::kInfeasible;
    if (out_of_memory || (ended.output.steps.empty() && ended.status == trial::TrialStatus::kFailed)) {
      if (out_of_memory) fuse_size_ = std::max(1, static_cast<int>(group.member_ids.size()) / 2);
      for (std::size_t b = 0; b < group.member_ids.size(); ++b) {
        const auto live = live_.find(group.member_ids[b]);
        if (live == live_.end()) continue;
        TrialRecord& r = record(live->second.number);
        r.curve.clear();  // the group's values: the run alone reports its own
        r.resource = 0;
        live_.erase(live);
        Begun alone = group.alone[b];
        alone.launch.append_logs = true;  // member 0 runs in the group's directory: keep why it failed
        split_.push_back(std::move(alone));
      }
      return;
    }
    for (std::size_t b = 0; b < group.member_ids.size(); ++b) {
      if (!live_.contains(group.member_ids[b])) continue;
      trial::TrialResult result = ended;
      result.id = group.member_ids[b];
      result.output = member_output(ended.output, static_cast<int>(b));
      if (!result.output.diverged.empty() && ended.status != trial::TrialStatus::kInterrupted) {
        result.status = trial::TrialStatus::kFailed;
        result.reason = "diverged in its fused group: " + result.output.diverged.front().reason;
      }
      finish(result);
    }
  }

  static bool result_is_final(const trial::TrialResult& r) { return r.status != trial::TrialStatus::kInterrupted; }

  // How a run that was not interrupted ended: completed, resting at a rung, pruned or failed.
  store::TrialOutcome judge(const Live& live, TrialRecord& r, const trial::TrialResult& result) {
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

  store::TrialOutcome judge_completed(const Live& live, TrialRecord& r, const trial::TrialResult& result,
                                      const std::optional<double>& last) {
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
            options_.objective, r.resource - 1, r.rung, reported_metrics(result.output));
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
                                                           reported_metrics(result.output));
      return outcome;
    }
    r.state = TrialRecord::State::kCompleted;
    outcome.status = "completed";
    outcome.objective = r.value;
    if (reached_target) r.rung = std::max(r.rung, pruner_.rung_of(r.resource, r.bracket));
    if (r.rung >= 0) outcome.rung = r.rung;
    return outcome;
  }

  // Stopped by the controller (Ctrl-C, the budget). A promotion goes back to its rung as it was: its
  // output is dropped (the store still has the rung's, and the rung's checkpoint is intact, the run
  // wrote into a directory of its own). A first run is stored as interrupted and leaves the records
  // (a resumed study runs its configuration again).
  void finish_interrupted(const Live& live, TrialRecord& r, Book& book, trial::TrialResult result) {
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
      if (store_result(book.db_id, result, outcome, live)) observer_.trial_finished(store_.trial(book.db_id));
      return;
    }
    outcome.status = "interrupted";
    outcome.hpo_json = state_json(book.state);
    if (store_result(book.db_id, result, outcome, live)) observer_.trial_finished(store_.trial(book.db_id));
    records_.erase(std::find_if(records_.begin(), records_.end(), [&](const TrialRecord& t) { return t.number == live.number; }));
    books_.erase(live.number);
  }

  void report_progress() {
    std::vector<tune::TrialProgress> progress;
    for (const trial::RunningTrial& running : runner_.running()) {
      const auto group = groups_.find(running.id);
      const std::vector<std::string> ids = group == groups_.end() ? std::vector<std::string>{running.id} : group->second.member_ids;
      for (const std::string& id : ids) {
        const auto it = live_.find(id);
        if (it == live_.end()) continue;
        const Live& live = it->second;
        tune::TrialProgress& row = progress.emplace_back();
        row.number = live.number;
        row.params_json = live.params_json;
        row.slot = running.slot;
        row.steps = static_cast<std::size_t>(live.steps_done) + running.steps;
        row.max_steps = static_cast<int>(live.target);
        row.elapsed_s = running.elapsed_s;
        row.last_step_time_s = running.last_step_time_s;
        row.status = live.promotion ? "promoted" : ids.size() > 1 ? "fused" : "running";
        if (!throughput_objective_) {
          row.metric_name = options_.objective;
          // The record's curve; a promotion run again from step 0 still shows its old one until the
          // run's first value (Live::old_curve_shown), which is not this run's.
          const auto record = std::find_if(records_.begin(), records_.end(),
                                            [&](const TrialRecord& r) { return r.number == live.number; });
          if (record != records_.end() && !record->curve.empty() && !live.old_curve_shown) {
            row.metric_value = record->curve.back().value;
            row.metric_step = record->curve.back().step;
          }
        }
      }
    }
    const int done = static_cast<int>(std::count_if(records_.begin(), records_.end(), [](const TrialRecord& r) {
      return r.state != TrialRecord::State::kRunning;
    }));
    observer_.progress(progress, done, best_ ? &*best_ : nullptr);
  }

  const Space& space_;
  const HpoOptions& options_;
  store::StudyStore& store_;
  const trial::Backend& backend_;
  Sampler& sampler_;
  Pruner& pruner_;
  tune::StudyObserver& observer_;
  const bool throughput_objective_;
  std::filesystem::path trials_dir_;
  trial::TrialRunner runner_;
  const bool worker_;  // HpoOptions::worker.enabled
  std::int64_t study_ = 0;
  std::vector<TrialRecord> records_;  // what samplers and pruners see, in start order
  std::map<int, Book> books_;         // by trial number
  std::deque<Config> requeue_;
  std::optional<std::pair<Config, nlohmann::ordered_json>> held_;  // a proposal waiting for free slots
  bool exhausted_ = false;  // the sampler has nothing more
  bool capped_ = false;     // --max-trials reached
  std::map<std::string, Live> live_;  // by PARATUNE_TRIAL_ID (a fused member's: its own, not the group's)
  std::map<std::string, Group> groups_;  // fused groups running, by their process's PARATUNE_TRIAL_ID
  std::deque<Begun> split_;              // members of a group refused at start-up, to run alone
  int fuse_size_ = 1;                    // trials per fused group; 0: --fuse auto before its probe
  std::optional<FusionProbe> probe_;
  const std::atomic<int>* stop_requested_ = nullptr;  // run()'s, for the probe
  bool worker_done_ = false;           // worker mode: nothing to start, and no worker's trial runs
  Clock::time_point next_claim_, last_heartbeat_;
  int reaped_ = 0, dropped_ = 0;       // worker mode: HpoSummary::reaped, dropped
  Clock::time_point start_;
  std::optional<store::StoredTrial> best_;
  nlohmann::ordered_json stored_model_;
  std::optional<AutoStrategy> auto_strategy_;  // --strategy auto
};

}  // namespace

HpoSummary run_controller(const Space& space, const HpoOptions& options, store::StudyStore& store,
                          const trial::Backend& backend, Sampler& sampler, Pruner& pruner,
                          tune::StudyObserver& observer, const std::atomic<int>& stop_requested) {
  Controller controller(space, options, store, backend, sampler, pruner, observer);
  return controller.run(stop_requested);
}

}  // namespace paratune::hpo
