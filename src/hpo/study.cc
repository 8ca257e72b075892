// The hyperparameter study's controller loop: promote, propose, launch, prune, store (hpo/study.h).
#include "paratune/hpo/study.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <deque>
#include <map>
#include <set>

#include "paratune/spec/error.h"
#include "paratune/trial/command.h"
#include "paratune/tune/study_lock.h"

namespace paratune::hpo {
namespace {

using Clock = std::chrono::steady_clock;
constexpr double kTickS = 0.25;  // how often progress is reported while trials run

bool is_throughput(const HpoOptions& o) { return o.objective == kThroughputObjective; }

// Better in the study's direction (a tie keeps the earlier).
bool better(Direction direction, double a, double b) { return as_loss(direction, a) < as_loss(direction, b); }

std::string config_word(const Config& config) {
  std::string out;
  for (const auto& [name, value] : config.items()) out += (out.empty() ? "" : ",") + name + "=" + tune::word(value);
  return out;
}

// What the store keeps of a trial's state besides its columns.
struct TrialState {
  int bracket = 0;
  std::optional<std::int64_t> checkpoint_step;  // the last checkpoint its program announced
  std::string checkpoint_dir;                   // where (a directory name inside the trial's)
  int runs = 0;
  std::vector<int> slots;                       // the backend's slots of its last run
  std::string strategy;                         // how it trained across them
};

std::string state_json(const TrialState& s) {
  nlohmann::ordered_json j{{"bracket", s.bracket}, {"runs", s.runs}};
  j["checkpoint_step"] = s.checkpoint_step ? nlohmann::ordered_json(*s.checkpoint_step) : nlohmann::ordered_json(nullptr);
  j["checkpoint_dir"] = s.checkpoint_dir;
  j["slots"] = s.slots;
  j["strategy"] = s.strategy;
  return j.dump();
}

TrialState parse_state(const std::string& text) {
  TrialState s;
  const nlohmann::json j = nlohmann::json::parse(text.empty() ? "{}" : text, nullptr, false);
  if (!j.is_object()) return s;
  s.bracket = j.value("bracket", 0);
  s.runs = j.value("runs", 0);
  if (j.contains("checkpoint_step") && j["checkpoint_step"].is_number_integer())
    s.checkpoint_step = j["checkpoint_step"].get<std::int64_t>();
  s.checkpoint_dir = j.value("checkpoint_dir", "");
  if (j.contains("slots") && j["slots"].is_array())
    for (const auto& slot : j["slots"])
      if (slot.is_number_integer()) s.slots.push_back(slot.get<int>());
  s.strategy = j.value("strategy", "");
  return s;
}

TrialRecord::State state_of(const std::string& status) {
  if (status == "completed") return TrialRecord::State::kCompleted;
  if (status == "pruned") return TrialRecord::State::kPruned;
  if (status == "running") return TrialRecord::State::kRunning;
  return TrialRecord::State::kFailed;  // oom, infeasible, failed, timeout
}

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

}  // namespace

TrialRecord record_of(const store::StoredTrial& t, const std::string& objective) {
  TrialRecord r;
  r.number = t.number;
  r.config = Config::parse(t.params_json);
  r.state = state_of(t.status);
  r.bracket = parse_state(t.hpo_json).bracket;
  r.rung = t.rung.value_or(-1);
  r.resource = t.steps;
  if (objective == kThroughputObjective) {
    if (r.state == TrialRecord::State::kCompleted) r.value = t.throughput;
    return r;
  }
  for (const trial::MetricReport& m : t.metrics)
    if (m.name == objective) r.curve.push_back({m.step.value_or(0), m.value});
  if (r.state == TrialRecord::State::kCompleted) r.value = t.objective;
  return r;
}

int ranks_of(const HpoOptions& options, const Config& config) {
  const auto it = config.find("ranks");
  return it != config.end() && it->is_number_integer() ? it->get<int>() : options.trial_ranks;
}

trial::TrialLaunch render_run(const Space& space, const HpoOptions& options, const Config& config, const std::string& id,
                              const std::filesystem::path& dir, int max_steps, int horizon_steps) {
  std::set<std::string> known;
  for (const ParamSpec& p : space.parameters())
    if (p.when.empty()) known.insert(p.name);
  for (const std::string& b : hpo_placeholders()) known.insert(b);
  const trial::CommandTemplate command(options.command, known);
  trial::TrialLaunch launch;
  launch.id = id;
  launch.dir = dir;
  launch.params_json = config.dump();
  launch.max_steps = max_steps;
  launch.limits = options.limits;
  launch.slots = ranks_of(options, config);
  std::map<std::string, std::string> values;
  for (const auto& [name, value] : config.items()) values[name] = tune::word(value);
  values["config"] = config_word(config);
  values["steps"] = std::to_string(horizon_steps);
  values["ranks"] = std::to_string(launch.slots);
  values["strategy"] = options.strategy;
  values["trial_id"] = id;
  values["trial_dir"] = dir.string();
  launch.argv = command.render(values);
  return launch;
}

const std::vector<std::string>& trial_strategies() {
  static const std::vector<std::string> names{"none", "dp", "mp", "gpipe", "dp+gpipe"};
  return names;
}

void validate(const HpoOptions& o) {
  if (o.name.empty()) throw Error("--study-name: must not be empty");
  if (o.command.empty()) throw Error("--command: a command template is required");
  if (o.steps < 1) throw Error(fmt::format("--steps {}: must be >= 1", o.steps));
  if (is_throughput(o) && o.steps < 2)
    throw Error(fmt::format("--steps {}: must be >= 2 with the throughput objective (the first step is warm-up)", o.steps));
  if (o.objective.empty()) throw Error("--objective: must name a metric the trials report, or throughput");
  if (o.max_trials < 0) throw Error(fmt::format("--max-trials {}: must be >= 0 (0: no limit)", o.max_trials));
  const std::array<std::pair<const char*, double>, 5> non_negative{{{"--budget", o.budget_s},
                                                                    {"--timeout", o.limits.timeout_s},
                                                                    {"--hang", o.limits.hang_s},
                                                                    {"--grace", o.limits.grace_s},
                                                                    {"--memory-limit", o.limits.memory_limit_bytes}}};
  for (const auto& [flag, value] : non_negative)
    if (!(value >= 0) || !std::isfinite(value)) throw Error(fmt::format("{} {}: must be >= 0 (0: none)", flag, value));
  if (o.trials_dir.empty()) throw Error("--trials-dir: must not be empty");
  if (o.trial_ranks < 1) throw Error(fmt::format("--trial-ranks {}: must be >= 1", o.trial_ranks));
  if (!o.strategy.empty() &&
      std::find(trial_strategies().begin(), trial_strategies().end(), o.strategy) == trial_strategies().end())
    throw Error(fmt::format("--strategy: {}", unknown_name_message("strategy", o.strategy, trial_strategies())));
}

std::vector<std::string> hpo_placeholders() { return {"config", "steps", "ranks", "strategy", "trial_id", "trial_dir"}; }


std::optional<std::size_t> best_hpo_trial(const std::vector<store::StoredTrial>& trials, Direction direction) {
  std::optional<std::size_t> best;
  for (std::size_t i = 0; i < trials.size(); ++i)
    if (trials[i].status == "completed" && trials[i].objective && std::isfinite(*trials[i].objective) &&
        (!best || better(direction, *trials[i].objective, *trials[*best].objective)))
      best = i;
  return best;
}

nlohmann::ordered_json hpo_identity(const Space& space, const HpoOptions& options, const Pruner& pruner) {
  return {{"kind", "hpo"},
          {"space", space.describe()},
          {"command", options.command},
          {"steps", options.steps},
          {"objective", options.objective},
          {"direction", to_string(options.direction)},
          {"pruner", pruner.describe()},
          {"memory_limit_bytes", options.limits.memory_limit_bytes},
          {"step_time_regex", options.step_time_regex},
          {"trial_ranks", options.trial_ranks},
          {"strategy", options.strategy}};
}

namespace {

// The controller: its state and its steps, so that run_hpo reads as the loop it is.
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
        trials_dir_(std::filesystem::absolute(options.trials_dir)),
        runner_(backend, trial::ParserOptions{options.step_time_regex}) {}

  HpoSummary run(const std::atomic<int>& stop_requested) {
    HpoSummary summary;
    summary.name = options_.name;
    summary.sampler = sampler_.name();
    summary.pruner = pruner_.name();
    summary.objective = options_.objective;
    summary.direction = options_.direction;
    study_ = store_.open_study(options_.name, hpo_identity(space_, options_, pruner_).dump());
    load(summary);
    const Clock::time_point start = Clock::now();
    bool exhausted = false, stopping = false, trials_capped = false;
    std::optional<tune::StopReason> stop;
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
      while (!stopping && runner_.free_slots() > 0) {
        if (const std::optional<Promotion> promotion = pruner_.promotion(records_)) {
          if (runner_.free_slots() < ranks_for(record_of_number(promotion->trial_number).config)) break;  // wait
          promote(*promotion);
          ++summary.promotions;
          continue;
        }
        if (held_) {  // proposed earlier, waiting for enough free slots
          if (runner_.free_slots() < ranks_for(held_->first)) break;
          start_new(held_->first, held_->second);
          held_.reset();
          ++summary.started;
          continue;
        }
        if (exhausted || trials_capped) break;
        if (options_.max_trials > 0 && static_cast<int>(records_.size()) >= options_.max_trials) {
          trials_capped = true;
          if (!stop) stop = tune::StopReason::kMaxTrials;
          break;
        }
        std::optional<Config> config;
        nlohmann::ordered_json notes;
        if (!requeue_.empty()) {
          config = requeue_.front();
          requeue_.pop_front();
          notes = {{"requeued", "the configuration of a trial a killed controller left unfinished"}};
        } else {
          config = sampler_.propose(records_);
          if (!config) {
            exhausted = true;
            break;
          }
          if (const std::string problem = space_.check(*config); !problem.empty())
            throw Error(fmt::format("the {} sampler proposed {}: {} (a bug)", sampler_.name(), config->dump(), problem));
          notes = sampler_.proposal_notes();
        }
        if (runner_.free_slots() < ranks_for(*config)) {
          held_.emplace(*config, notes);
          break;
        }
        start_new(*config, notes);
        ++summary.started;
      }
      if (runner_.idle() && !stopping && (exhausted || trials_capped) && !any_completed()) {
        if (const std::optional<Promotion> promotion = pruner_.finishing_promotion(records_)) {
          promote(*promotion);
          ++summary.promotions;
          continue;
        }
      }
      if (runner_.idle() && (stopping || ((exhausted || trials_capped) && !held_))) break;

      const auto on_step = [this](const std::string& id, const trial::StepReport&, const trial::TrialOutput& so_far) {
        return on_progress(id, so_far);
      };
      for (const trial::TrialResult& result : runner_.wait(kTickS, on_step)) finish(result);
      report_progress();
    }
    summary.stop = stop.value_or(tune::StopReason::kExhausted);
    summary.elapsed_s = std::chrono::duration<double>(Clock::now() - start).count();
    summary.trials = store_.trials(study_);
    summary.best = best_hpo_trial(summary.trials, options_.direction);
    return summary;
  }

 private:
  // A run in progress.
  struct Live {
    std::size_t record = 0;        // index into records_
    std::int64_t target = 0;       // the steps it runs to
    std::int64_t steps_done = 0;   // steps behind it (resumed from a checkpoint)
    std::size_t metrics_seen = 0;  // of its output's metrics, taken into the record's curve
    bool promotion = false;
    std::string params_json;
  };

  int ranks_for(const Config& config) const { return ranks_of(options_, config); }

  const TrialRecord& record_of_number(int number) const {
    for (const TrialRecord& r : records_)
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
    for (store::StoredTrial& t : stored)
      if (t.status == "running") {
        summary.leftover_processes_killed += trial::kill_trial_processes(t.dir);
        t.status = t.rung ? "pruned" : "interrupted";  // as mark_running_interrupted stores it
      }
    store_.mark_running_interrupted(study_);
    std::vector<Config> interrupted;
    for (const store::StoredTrial& t : stored) {
      if (t.status == "interrupted") {
        interrupted.push_back(Config::parse(t.params_json));
        continue;
      }
      add_record(record_of(t, options_.objective), t.id, t.dir, parse_state(t.hpo_json));
    }
    summary.reused = static_cast<int>(records_.size());
    for (const Config& c : interrupted)
      if (std::none_of(records_.begin(), records_.end(), [&](const TrialRecord& r) { return r.config == c; }) &&
          std::find(requeue_.begin(), requeue_.end(), c) == requeue_.end())
        requeue_.push_back(c);
    summary.requeued = static_cast<int>(requeue_.size());
  }

  void add_record(TrialRecord record, std::int64_t db_id, const std::string& dir, const TrialState& state) {
    records_.push_back(std::move(record));
    db_ids_.push_back(db_id);
    dirs_.emplace_back(dir);
    states_.push_back(state);
  }

  trial::TrialLaunch launch_for(const TrialRecord& r, const std::filesystem::path& dir, std::int64_t target) {
    trial::TrialLaunch launch = render_run(space_, options_, r.config, fmt::format("{}-{:04d}", options_.name, r.number),
                                           dir, static_cast<int>(target), options_.steps);
    // A run that stops short of the full resource rests at a rung: let the program checkpoint.
    if (target < options_.steps || r.rung >= 0)
      launch.env.emplace_back("PARATUNE_CHECKPOINT_DIR", (dir / fmt::format("checkpoint-{}", target)).string());
    return launch;
  }

  nlohmann::ordered_json trial_config(const trial::TrialLaunch& launch, int bracket) const {
    return {{"study", options_.name},
            {"command", options_.command},
            {"steps", options_.steps},
            {"objective", options_.objective},
            {"direction", to_string(options_.direction)},
            {"sampler", sampler_.name()},
            {"pruner", pruner_.name()},
            {"bracket", bracket},
            {"ranks", launch.slots},
            {"strategy", options_.strategy},
            {"limits",
             {{"timeout_s", launch.limits.timeout_s},
              {"hang_s", launch.limits.hang_s},
              {"grace_s", launch.limits.grace_s},
              {"memory_limit_bytes", launch.limits.memory_limit_bytes}}},
            {"backend", backend_.name()},
            {"argv", launch.argv}};
  }

  void start_new(const Config& config, const nlohmann::ordered_json& notes) {
    const Assignment assignment = pruner_.assign_new_trial(records_);
    TrialRecord r;
    r.config = config;
    r.state = TrialRecord::State::kRunning;
    r.bracket = assignment.bracket;
    trial::TrialLaunch launch;
    const auto [db_id, number] = store_.begin_trial(study_, config.dump(), [&](int n) {
      r.number = n;
      launch = launch_for(r, trials_dir_ / fmt::format("trial-{:04d}", n), assignment.resource);
      // What reproduces the trial: its command for the full resource, from scratch.
      trial::TrialLaunch full = launch_for(r, launch.dir, options_.steps);
      full.env.clear();
      return store::StudyStore::LaunchRecord{trial_config(launch, assignment.bracket).dump(), tune::shown_command(full),
                                             launch.dir.string()};
    });
    if (!notes.empty()) store_.set_prediction(db_id, notes.dump());
    if (const nlohmann::ordered_json model = sampler_.model_summary(); !model.empty() && model != stored_model_) {
      store_.set_model(study_, model.dump());
      stored_model_ = model;
    }
    TrialState state;
    state.bracket = assignment.bracket;
    state.runs = 1;
    state.strategy = options_.strategy;
    state.slots = runner_.start(launch);
    add_record(std::move(r), db_id, launch.dir.string(), state);
    live_.emplace(launch.id, Live{records_.size() - 1, assignment.resource, 0, 0, false, config.dump()});
    observer_.trial_started(store_.trial(db_id));
  }

  // ASHA's promotion: the resting trial runs on to the next rung, from its checkpoint when it has one.
  void promote(const Promotion& promotion) {
    const auto it = std::find_if(records_.begin(), records_.end(),
                                 [&](const TrialRecord& r) { return r.number == promotion.trial_number; });
    if (it == records_.end() || it->state != TrialRecord::State::kPruned)
      throw Error(fmt::format("the {} pruner promoted trial {}, which is not resting (a bug)", pruner_.name(),
                              promotion.trial_number));
    const std::size_t index = static_cast<std::size_t>(it - records_.begin());
    TrialRecord& r = records_[index];
    TrialState& state = states_[index];
    const std::filesystem::path dir = dirs_[index];
    const std::filesystem::path from = dir / state.checkpoint_dir;
    const bool resume = state.checkpoint_step && *state.checkpoint_step + 1 == r.resource && !state.checkpoint_dir.empty() &&
                        std::filesystem::is_directory(from);
    const std::filesystem::path to = dir / fmt::format("checkpoint-{}", promotion.resource);
    if (resume) link_checkpoint(from, to);
    else std::filesystem::remove_all(to);
    store_.resume_trial(db_ids_[index], resume);
    if (!resume) {
      r.curve.clear();
      r.resource = 0;
    }
    r.state = TrialRecord::State::kRunning;
    ++state.runs;
    trial::TrialLaunch launch = launch_for(r, dir, promotion.resource);
    launch.steps_done = r.resource;
    launch.append_logs = true;
    state.slots = runner_.start(launch);
    live_.emplace(launch.id, Live{index, promotion.resource, r.resource, 0, true, r.config.dump()});
    observer_.trial_started(store_.trial(db_ids_[index]));
  }

  // New intermediate values of a running trial: into its curve, then to the pruner.
  bool on_progress(const std::string& id, const trial::TrialOutput& so_far) {
    const auto it = live_.find(id);
    if (it == live_.end()) return true;
    Live& live = it->second;
    TrialRecord& r = records_[live.record];
    r.resource = live.steps_done + static_cast<std::int64_t>(so_far.steps.size());
    if (is_throughput(options_)) return true;
    bool fresh = false;
    for (; live.metrics_seen < so_far.metrics.size(); ++live.metrics_seen) {
      const trial::MetricReport& m = so_far.metrics[live.metrics_seen];
      if (m.name != options_.objective) continue;
      // A value without a step belongs to the step in progress (its step line closes it).
      r.curve.push_back({m.step.value_or(r.resource - 1), m.value});
      fresh = true;
    }
    return !fresh || pruner_.keep_running(r, records_);
  }

  void finish(const trial::TrialResult& result) {
    const auto it = live_.find(result.id);
    if (it == live_.end()) return;  // not ours: cannot happen
    const Live live = it->second;
    live_.erase(it);
    on_progress(result.id, result.output);  // whatever came after the last step line (not judged)
    TrialRecord& r = records_[live.record];
    TrialState& state = states_[live.record];
    const std::int64_t db_id = db_ids_[live.record];
    r.resource = live.steps_done + static_cast<std::int64_t>(result.output.steps.size());

    store::TrialOutcome outcome;
    if (result.status == trial::TrialStatus::kInterrupted && live.promotion) {
      // Back to its rung, as before the promotion: this run's output is dropped (its checkpoint
      // directory is its own, so the rung's is intact and the next promotion starts from it).
      trial::TrialResult dropped = result;
      dropped.output = {};
      dropped.throughput = {};
      r.curve.erase(std::remove_if(r.curve.begin(), r.curve.end(),
                                   [&](const IntermediateValue& v) { return v.step >= live.steps_done; }),
                    r.curve.end());
      r.resource = live.steps_done;
      r.state = TrialRecord::State::kPruned;
      outcome = {"pruned", "its promotion was interrupted; it rests at its rung again", value_at(r, r.resource), r.rung,
                 state_json(state)};
      store_.finish_trial(db_id, dropped, &outcome);
      observer_.trial_finished(store_.trial(db_id));
      return;
    }
    if (result.output.checkpoint_step) {
      if (!state.checkpoint_dir.empty() && state.checkpoint_dir != fmt::format("checkpoint-{}", live.target))
        std::filesystem::remove_all(dirs_[live.record] / state.checkpoint_dir);  // the rung it left
      state.checkpoint_step = result.output.checkpoint_step;
      state.checkpoint_dir = fmt::format("checkpoint-{}", live.target);
    }
    outcome.hpo_json = state_json(state);
    const std::optional<double> last = r.curve.empty() ? std::nullopt : std::optional<double>(r.curve.back().value);
    switch (result.status) {
      case trial::TrialStatus::kCompleted: {
        const bool reached_target = r.resource >= live.target;
        if (reached_target && live.target < options_.steps) {
          r.rung = std::max(r.rung, pruner_.rung_of(r.resource, r.bracket));
          r.state = TrialRecord::State::kPruned;
          outcome.status = "pruned";
          outcome.rung = r.rung;
          outcome.objective = value_at(r, r.resource);
          outcome.reason = fmt::format("rests at rung {} ({} steps{}), promoted if it ranks in the top of its rung",
                                       r.rung, r.resource,
                                       outcome.objective ? fmt::format(", {} {}", options_.objective, *outcome.objective) : "");
          if (!is_throughput(options_) && !outcome.objective) {
            r.state = TrialRecord::State::kFailed;
            outcome.status = "failed";
            outcome.reason = fmt::format("reported no '{}' by step {} (it reported {})", options_.objective, r.resource,
                                         reported_metrics(result.output));
          }
          break;
        }
        // The full resource (or all the program does by itself).
        r.value = is_throughput(options_)
                      ? (result.throughput.steps_used > 0 ? std::optional<double>(result.throughput.steps_per_s) : std::nullopt)
                      : last;
        if (r.value && std::isfinite(*r.value)) {
          r.state = TrialRecord::State::kCompleted;
          outcome.status = "completed";
          outcome.objective = r.value;
          if (reached_target) {
            r.rung = std::max(r.rung, pruner_.rung_of(r.resource, r.bracket));
            if (r.rung >= 0) outcome.rung = r.rung;
          }
        } else {
          r.state = TrialRecord::State::kFailed;
          outcome.status = "failed";
          outcome.reason = is_throughput(options_)
                               ? "no usable step time (too few steps)"
                               : fmt::format("reported no '{}' (it reported {})", options_.objective,
                                             reported_metrics(result.output));
        }
        break;
      }
      case trial::TrialStatus::kEarlyStopped:
        r.state = TrialRecord::State::kPruned;
        outcome.status = "pruned";
        outcome.objective = last;
        outcome.reason = fmt::format("stopped by the {} pruner at step {} ({} {})", pruner_.name(),
                                     r.curve.empty() ? 0 : r.curve.back().step, options_.objective,
                                     last ? fmt::format("{}", *last) : "?");
        if (r.rung >= 0) outcome.rung = r.rung;
        break;
      case trial::TrialStatus::kInterrupted:
        outcome.status = "interrupted";
        r.state = TrialRecord::State::kFailed;
        break;
      default:  // oom, infeasible, failed, timeout: information for the sampler
        r.state = TrialRecord::State::kFailed;
        outcome.status = trial::to_string(result.status);
        break;
    }
    store_.finish_trial(db_id, result, &outcome);
    if (result.status == trial::TrialStatus::kInterrupted) {
      // Not information: it leaves the records (a resumed study runs its configuration again).
      records_.erase(records_.begin() + static_cast<std::ptrdiff_t>(live.record));
      db_ids_.erase(db_ids_.begin() + static_cast<std::ptrdiff_t>(live.record));
      dirs_.erase(dirs_.begin() + static_cast<std::ptrdiff_t>(live.record));
      states_.erase(states_.begin() + static_cast<std::ptrdiff_t>(live.record));
      for (auto& [id, other] : live_)
        if (other.record > live.record) --other.record;
    }
    const store::StoredTrial stored = store_.trial(db_id);
    if (stored.status == "completed" && stored.objective &&
        (!best_ || better(options_.direction, *stored.objective, *best_->objective)))
      best_ = stored;
    observer_.trial_finished(stored);
  }

  void report_progress() {
    std::vector<tune::TrialProgress> progress;
    for (const trial::RunningTrial& running : runner_.running()) {
      const auto it = live_.find(running.id);
      if (it == live_.end()) continue;
      const TrialRecord& r = records_[it->second.record];
      progress.push_back({r.number, it->second.params_json, running.slot,
                          static_cast<std::size_t>(it->second.steps_done) + running.steps,
                          static_cast<int>(it->second.target), running.elapsed_s, running.last_step_time_s});
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
  std::filesystem::path trials_dir_;
  trial::TrialRunner runner_;
  std::int64_t study_ = 0;
  // Per trial, in the same order: what samplers and pruners see, and what the controller keeps.
  std::vector<TrialRecord> records_;
  std::vector<std::int64_t> db_ids_;
  std::vector<std::filesystem::path> dirs_;
  std::vector<TrialState> states_;
  std::deque<Config> requeue_;
  std::optional<std::pair<Config, nlohmann::ordered_json>> held_;  // a proposal waiting for free slots
  std::map<std::string, Live> live_;  // by PARATUNE_TRIAL_ID
  std::optional<store::StoredTrial> best_;
  nlohmann::ordered_json stored_model_;
};

// A conditional parameter used as a placeholder has no value where it is inactive.
void check_template_parameters(const Space& space, const HpoOptions& options) {
  const std::string& command = options.command;
  std::set<std::string> all;
  for (const ParamSpec& p : space.parameters()) all.insert(p.name);
  for (const std::string& b : hpo_placeholders()) all.insert(b);
  const trial::CommandTemplate parsed(command, all);
  if (parsed.placeholders().contains("strategy") && options.strategy.empty())
    throw Error("--command: {strategy} needs --strategy (none, dp, mp, gpipe or dp+gpipe)");
  if (!options.strategy.empty() && !parsed.placeholders().contains("strategy"))
    throw Error(fmt::format("--strategy {}: the command does not use {{strategy}}, so the trials would not train that way",
                            options.strategy));
  for (const ParamSpec& p : space.parameters())
    if (!p.when.empty() && parsed.placeholders().contains(p.name))
      throw Error(fmt::format("--command: {{{}}} is a conditional parameter (when: {}) and has no value where it is "
                              "inactive; the trial program reads it from PARATUNE_PARAMS",
                              p.name, p.when));
}

// Every trial must fit on the backend's slots, or the study would wait forever.
void check_slots(const Space& space, const HpoOptions& options, const trial::Backend& backend) {
  if (options.trial_ranks > backend.slots())
    throw Error(fmt::format("--trial-ranks {}: more than the {} slots there are", options.trial_ranks, backend.slots()));
  const std::optional<std::size_t> ranks = space.index_of("ranks");
  if (!ranks) return;
  const ParamSpec& p = space.parameters()[*ranks];
  const auto too_many = [&](double v) { return v < 1 || v > backend.slots(); };
  bool bad = p.type == ParamType::kFloat || (p.type == ParamType::kInt && (too_many(p.low) || too_many(p.high)));
  for (const nlohmann::json& c : p.choices) bad = bad || !c.is_number_integer() || too_many(c.get<double>());
  if (bad)
    throw Error(fmt::format("{}: parameters.ranks: each value must be an integer from 1 to the {} slots there are", space.source(),
                            backend.slots()));
}

}  // namespace

HpoSummary run_hpo(const Space& space, const HpoOptions& options, store::StudyStore& store,
                   const trial::Backend& backend, Sampler& sampler, Pruner& pruner, tune::StudyObserver& observer,
                   const std::atomic<int>& stop_requested) {
  validate(options);
  if (is_throughput(options) && pruner.name() != "none")
    throw Error(fmt::format("--pruner {}: needs intermediate values of a metric; with the throughput objective use "
                            "--pruner none (or --objective METRIC)",
                            pruner.name()));
  const tune::StudyLock lock(store.path());
  check_template_parameters(space, options);
  check_slots(space, options, backend);
  const trial::OutputParser check_regex(trial::ParserOptions{options.step_time_regex});  // Error before anything runs
  Controller controller(space, options, store, backend, sampler, pruner, observer);
  return controller.run(stop_requested);
}

}  // namespace paratune::hpo
