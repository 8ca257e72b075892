// The study controller loop: propose, launch, wait, store (tune/study.h).
#include "paratune/tune/study.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <limits>
#include <map>
#include <random>
#include <set>

#include "paratune/hpo/study.h"
#include "paratune/spec/error.h"
#include "paratune/spec/option_error.h"
#include "paratune/trial/command.h"
#include "paratune/tune/study_common.h"

namespace paratune::tune {
namespace {

using Clock = std::chrono::steady_clock;

constexpr std::array<std::string_view, 6> kAlgorithmNames{"grid", "random", "bo", "xgboost", "costmodel", "oppa"};
constexpr std::array<std::string_view, 4> kStopNames{"every point was tried", "max trials reached", "budget spent",
                                                     "interrupted"};
constexpr double kTickS = 0.25;  // how often progress is reported while trials run
// Worker mode: how often a worker with a free slot and nothing to start claims again.
constexpr double kIdlePollS = 0.5;

// Grid and random: a fixed order of the valid points, run in that order, skipping points already
// finished or running.
class OrderedSearch final : public SearchAlgorithm {
 public:
  OrderedSearch(std::string name, std::vector<Point> order) : name_(std::move(name)), order_(std::move(order)) {}
  [[nodiscard]] std::string name() const override { return name_; }

  std::optional<Point> propose(const std::vector<FinishedTrial>& finished, const std::vector<Point>& running) override {
    // `finished` only grows: take in what is new, then move the cursor past finished points.
    for (; seen_ < finished.size(); ++seen_) done_.insert(finished[seen_].point);
    while (cursor_ < order_.size() && done_.contains(order_[cursor_])) ++cursor_;
    for (std::size_t i = cursor_; i < order_.size(); ++i)
      if (!done_.contains(order_[i]) && std::find(running.begin(), running.end(), order_[i]) == running.end())
        return order_[i];
    return std::nullopt;
  }

 private:
  std::string name_;
  std::vector<Point> order_;
  std::set<Point> done_;
  std::size_t seen_ = 0, cursor_ = 0;
};

bool finished_status(const std::string& status) { return status != "running" && status != "interrupted"; }

// {gpus}: the product of the parallel degrees in the space (see builtin_placeholders()).
std::string gpus_word(const SearchSpace& space, const Point& point) {
  const nlohmann::ordered_json values = space.to_json(point);
  if (values.contains("gpus")) return word(values["gpus"]);
  long long gpus = 1;
  for (const char* axis : {"dp", "tp", "pp", "cp"})
    if (values.contains(axis) && values[axis].is_number_integer()) gpus *= values[axis].get<long long>();
  return std::to_string(gpus);
}

std::string config_word(const SearchSpace& space, const Point& point) {
  const nlohmann::ordered_json values = space.to_json(point);  // named: a temporary would die before the loop
  std::string out;
  for (const auto& [name, value] : values.items()) out += (out.empty() ? "" : ",") + name + "=" + word(value);
  return out;
}

// Trial `number` of the study at `point`: its id, directory, environment and rendered command.
trial::TrialLaunch make_launch(const SearchSpace& space, const Point& point, const StudyOptions& options,
                               const trial::CommandTemplate& command, const std::filesystem::path& trials_dir,
                               int number) {
  trial::TrialLaunch launch;
  launch.id = fmt::format("{}-{:04d}", options.name, number);
  launch.dir = trials_dir / fmt::format("trial-{:04d}", number);
  launch.params_json = space.to_json(point).dump();
  launch.max_steps = options.steps;
  launch.limits = options.limits;
  std::map<std::string, std::string> values = space.words(point);
  values.emplace("gpus", gpus_word(space, point));
  values["config"] = config_word(space, point);
  values["steps"] = std::to_string(options.steps);
  values["trial_id"] = launch.id;
  values["trial_dir"] = launch.dir.string();
  launch.argv = command.render(values);
  return launch;
}

// Everything that produced a trial, stored with it; the search space is stored once, with the
// study (StudyInfo::config_json), not with every trial.
nlohmann::ordered_json trial_config(const StudyOptions& options, const SearchAlgorithm& algorithm,
                                    const trial::Backend& backend, const trial::TrialLaunch& launch) {
  return {{"study", options.name},
          {"command", options.command},
          {"steps", options.steps},
          {"step_time_regex", options.step_time_regex},
          {"algorithm", algorithm.name()},
          {"limits",
           {{"timeout_s", launch.limits.timeout_s},
            {"hang_s", launch.limits.hang_s},
            {"grace_s", launch.limits.grace_s},
            {"memory_limit_bytes", launch.limits.memory_limit_bytes}}},
          {"backend", backend.name()},
          {"argv", launch.argv}};
}

}  // namespace

std::uint64_t uniform_below(std::mt19937_64& rng, std::uint64_t n) {
  const std::uint64_t limit = std::numeric_limits<std::uint64_t>::max() - std::numeric_limits<std::uint64_t>::max() % n;
  for (;;) {
    const std::uint64_t x = rng();
    if (x < limit) return x % n;
  }
}

const char* to_string(Algorithm algorithm) { return kAlgorithmNames[static_cast<std::size_t>(algorithm)].data(); }

Algorithm parse_algorithm(std::string_view name) {
  for (std::size_t i = 0; i < kAlgorithmNames.size(); ++i)
    if (name == kAlgorithmNames[i]) return static_cast<Algorithm>(i);
  const std::vector<std::string> valid(kAlgorithmNames.begin(), kAlgorithmNames.end());
  throw Error(unknown_name_message("search algorithm", name, valid));
}

const char* to_string(StopReason reason) { return kStopNames[static_cast<std::size_t>(reason)].data(); }

std::vector<std::size_t> grid_order(const std::vector<std::vector<int>>& points, std::size_t budget) {
  const std::size_t n = points.size();
  std::vector<std::size_t> order;
  order.reserve(n);
  std::vector<char> taken(n, 0);
  if (budget > 0 && budget < n) {
    // How often each parameter's values were picked so far.
    std::vector<std::map<int, int>> used(points.front().size());
    for (std::size_t i = 0; i < budget; ++i) {
      // The i-th part of the grid (no overflow: n <= 10^7 points); neighbouring parts share at most
      // their boundary point, so each has a free one.
      const std::size_t low = i * n / budget, high = ((i + 1) * n + budget - 1) / budget;
      const double middle = 0.5 * static_cast<double>(low + high - 1);
      std::size_t best = n;
      long long best_score = 0;
      for (std::size_t j = low; j < high; ++j) {
        if (taken[j]) continue;
        long long score = 0;  // the picks so far that share a value with point j
        for (std::size_t p = 0; p < used.size(); ++p)
          if (const auto it = used[p].find(points[j][p]); it != used[p].end()) score += it->second;
        const bool nearer = best < n && std::abs(static_cast<double>(j) - middle) <
                                             std::abs(static_cast<double>(best) - middle);
        if (best == n || score < best_score || (score == best_score && nearer)) {
          best = j;
          best_score = score;
        }
      }
      order.push_back(best);
      taken[best] = 1;
      for (std::size_t p = 0; p < used.size(); ++p) ++used[p][points[best][p]];
    }
  }
  for (std::size_t i = 0; i < n; ++i)
    if (!taken[i]) order.push_back(i);
  return order;
}

std::vector<std::size_t> grid_order(std::size_t n, std::size_t budget) {
  std::vector<std::vector<int>> distinct(n);
  for (std::size_t i = 0; i < n; ++i) distinct[i] = {static_cast<int>(i)};
  return grid_order(distinct, budget);
}

std::unique_ptr<SearchAlgorithm> make_search(Algorithm algorithm, const SearchSpace& space, std::uint64_t seed,
                                             std::size_t max_trials) {
  if (algorithm != Algorithm::kGrid && algorithm != Algorithm::kRandom)
    throw Error(fmt::format("make_search: {} is not an ordered search (tune/bayes.h builds it)", to_string(algorithm)));
  const std::vector<Point>& points = space.enumerate();
  std::vector<Point> order;
  // A listed space keeps its order (a derived space lists the model's favourites first).
  for (std::size_t i : grid_order(points, algorithm == Algorithm::kGrid && !space.is_listed() ? max_trials : 0))
    order.push_back(points[i]);
  if (algorithm == Algorithm::kRandom) {
    std::mt19937_64 rng(seed);
    for (std::size_t i = order.size(); i > 1; --i) std::swap(order[i - 1], order[uniform_below(rng, i)]);
  }
  return std::make_unique<OrderedSearch>(to_string(algorithm), std::move(order));
}

void validate(const StudyOptions& o) {
  validate_study_name(o.name);
  if (o.command.empty()) throw OptionError("command", "", "a command template is required");
  if (o.steps < 2)
    throw OptionError("steps", std::to_string(o.steps), "must be >= 2 (the first step is dropped as warm-up)");
  if (o.max_trials < 0) throw OptionError("max_trials", std::to_string(o.max_trials), "must be >= 0 (0: no limit)");
  validate_limits(o.limits, o.budget_s);
  validate_trials_dir(o.trials_dir);
  validate_worker(o.worker, o.retry_failed);
}

std::vector<std::string> builtin_placeholders() { return {"gpus", "config", "steps", "trial_id", "trial_dir"}; }

nlohmann::ordered_json study_identity(const SearchSpace& space, const StudyOptions& options) {
  return {{"space", space.describe()},
          {"command", options.command},
          {"steps", options.steps},
          {"memory_limit_bytes", options.limits.memory_limit_bytes},
          {"step_time_regex", options.step_time_regex}};
}

nlohmann::ordered_json configuration_identity(const SearchSpace& view, const hpo::HpoOptions& options,
                                              const hpo::Pruner* stated_pruner) {
  nlohmann::ordered_json identity{{"space", view.describe()},
                                  {"command", options.command},
                                  {"steps", options.steps},
                                  {"memory_limit_bytes", options.limits.memory_limit_bytes},
                                  {"step_time_regex", options.step_time_regex}};
  if (stated_pruner) identity["pruner"] = stated_pruner->describe();
  return identity;
}

namespace {

// The rule for the best trial: completed, measured, and faster (a tie keeps the earlier one).
bool beats(const store::StoredTrial& t, const store::StoredTrial* best) {
  return t.status == "completed" && t.throughput && (!best || *t.throughput > *best->throughput);
}

// A stored trial as the search sees it. The mean's standard error is the 95% interval's half
// width / 1.96 (trial/measurement.h).
FinishedTrial finished_of(const Point& point, const store::StoredTrial& t) {
  FinishedTrial f;
  f.point = point;
  f.status = trial::parse_trial_status(t.status);
  f.throughput = t.throughput;
  f.throughput_standard_error = t.throughput ? (t.throughput_ci_high - t.throughput_ci_low) / (2 * 1.96) : 0;
  f.peak_memory_bytes = t.peak_memory_bytes;
  f.steps = t.steps;
  f.failure = trial::classify_failure(f.status, t.exit_code, t.exit_signal, t.steps);
  return f;
}

// What a resumed study starts from.
struct History {
  std::vector<FinishedTrial> finished;
  int requeued = 0;  // points of interrupted trials that never finished
  std::optional<store::StoredTrial> best;
};

History load_history(const SearchSpace& space, const std::vector<store::StoredTrial>& stored) {
  History h;
  std::vector<Point> interrupted;
  for (const store::StoredTrial& t : stored) {
    const std::optional<Point> point = space.point_of(nlohmann::json::parse(t.params_json));
    if (!point) continue;  // cannot happen with the same identity; never fatal
    if (t.status == "interrupted") interrupted.push_back(*point);
    if (!finished_status(t.status)) continue;
    h.finished.push_back(finished_of(*point, t));
    if (beats(t, h.best ? &*h.best : nullptr)) h.best = t;
  }
  std::set<Point> requeued;
  for (const Point& p : interrupted)
    if (std::none_of(h.finished.begin(), h.finished.end(), [&](const FinishedTrial& f) { return f.point == p; }))
      requeued.insert(p);
  h.requeued = static_cast<int>(requeued.size());
  return h;
}

}  // namespace

std::optional<std::size_t> best_trial(const std::vector<store::StoredTrial>& trials) {
  std::optional<std::size_t> best;
  for (std::size_t i = 0; i < trials.size(); ++i)
    if (beats(trials[i], best ? &trials[*best] : nullptr)) best = i;
  return best;
}

StudySummary run_study(const SearchSpace& space, const StudyOptions& options, store::StudyStore& store,
                       const trial::Backend& backend, SearchAlgorithm& algorithm, StudyObserver& observer,
                       const std::atomic<int>& stop_requested) {
  validate(options);
  const bool worker = options.worker.enabled;
  const std::unique_ptr<store::ControllerLock> lock =
      worker ? store.lock_worker(options.name) : store.lock_controller(options.name);
  std::set<std::string> known;
  for (const Parameter& p : space.parameters()) known.insert(p.name);
  // A parameter may not take the name of a placeholder paratune fills itself: its value would be
  // replaced silently. (`gpus` is the exception: a space may state the GPU count, which {gpus} then is.)
  for (const std::string& b : builtin_placeholders()) {
    if (known.contains(b) && b != "gpus")
      throw Error(fmt::format("{}: parameters.{}: '{}' is the name of a built-in placeholder ({{{}}}); rename the "
                              "parameter",
                              space.source(), b, b, b));
    known.insert(b);
  }
  const trial::CommandTemplate command(options.command, known);
  const trial::OutputParser check_regex(trial::ParserOptions{options.step_time_regex});  // Error before anything runs
  const std::filesystem::path trials_dir = std::filesystem::absolute(options.trials_dir);

  StudySummary summary;
  summary.name = options.name;
  summary.algorithm = algorithm.name();
  summary.cartesian_points = space.is_listed() ? 0 : space.cartesian_size();
  summary.valid_points = space.enumerate().size();

  const std::int64_t study = store.open_study(options.name, study_identity(space, options).dump());
  std::vector<store::StoredTrial> stored = store.trials(study);
  // Trials a dead controller left running: kill what is left of them, then run their points again.
  // (Workers leave other workers' running trials alone: claim_trial marks those whose worker died.)
  if (!worker) {
    for (store::StoredTrial& t : stored)
      if (t.status == "running") {
        summary.leftover_processes_killed += backend.clean_up_left_over(t.dir);
        t.status = "interrupted";  // as mark_running_interrupted stores it
      }
    store.mark_running_interrupted(study);
    if (options.retry_failed) {
      summary.retried_failed = store.mark_failed_for_retry(study);
      if (summary.retried_failed > 0) stored = store.trials(study);
    }
  }

  History history = load_history(space, stored);
  std::vector<FinishedTrial>& finished = history.finished;  // only grows (the searches rely on it)
  std::optional<store::StoredTrial>& best = history.best;
  summary.reused = static_cast<int>(finished.size());
  summary.requeued = history.requeued;
  std::set<std::int64_t> taken_in;  // the trials in `finished`, by id
  for (const store::StoredTrial& t : stored)
    if (finished_status(t.status)) taken_in.insert(t.id);

  struct Running {
    std::int64_t db_id;
    int number;
    Point point;
    std::string params_json;
  };
  std::map<std::string, Running> running;  // by PARATUNE_TRIAL_ID
  trial::TrialRunner runner(backend, trial::ParserOptions{options.step_time_regex});
  const Clock::time_point start = Clock::now();
  bool exhausted = false, stopping = false;
  nlohmann::ordered_json stored_model;  // the search's model as last stored
  std::optional<StopReason> stop;
  // Worker mode: when to claim again after a claim found nothing to start, and the last heartbeat.
  Clock::time_point next_claim = start, last_heartbeat = start;
  const double wait_s = worker ? std::min(kTickS, options.worker.heartbeat_s) : kTickS;

  const auto running_points = [&] {
    std::vector<Point> points;
    points.reserve(running.size());
    for (const auto& [id, r] : running) points.push_back(r.point);
    return points;
  };
  const auto on_step = [&](const std::string& id, const trial::StepReport&, const trial::TrialOutput& so_far) {
    const auto it = running.find(id);
    return it == running.end() || algorithm.keep_running(it->second.point, so_far);
  };
  // Trial `number` at `point`: its launch and what is stored when it starts.
  trial::TrialLaunch launch;
  const auto describe = [&](const Point& point, int number) {
    launch = make_launch(space, point, options, command, trials_dir, number);
    return store::StudyStore::LaunchRecord{trial_config(options, algorithm, backend, launch).dump(),
                                           shown_command(launch), launch.dir.string(), /*location=*/""};
  };
  const auto start_trial = [&](const Point& point, std::int64_t db_id, int number) {
    if (const nlohmann::ordered_json notes = algorithm.proposal_notes(point); !notes.empty())
      store.set_prediction(db_id, notes.dump());
    if (const nlohmann::ordered_json model = algorithm.model_summary(); !model.empty() && model != stored_model) {
      store.set_model(study, model.dump());
      stored_model = model;
    }
    runner.start(launch);
    running.emplace(launch.id, Running{db_id, number, point, launch.params_json});
    ++summary.started;
    observer.trial_started(store.trial(db_id));
  };

  // Worker mode: one claim (store/study_store.h: claim_trial). The search sees every worker's
  // finished trials (taken into `finished` as they appear, so it only grows) and running points.
  // Returns whether a trial was started; otherwise sets `exhausted` once the study is done --
  // nothing to propose, or --max-trials reached, and no trial of any worker running.
  std::map<std::int64_t, std::optional<Point>> points_by_id;
  const auto claim_and_start = [&]() -> bool {
    bool at_max = false;
    std::size_t study_running = 0;
    std::optional<Point> proposed;
    const store::StudyStore::ClaimOutcome outcome = store.claim_trial(
        study, options.worker.heartbeat_timeout_s,
        [&](const std::vector<store::StoredTrial>& all, int number) -> std::optional<store::StudyStore::NewTrial> {
          std::vector<Point> running_now;
          int counted = 0;  // --max-trials counts every trial but the interrupted (their points run again)
          for (const store::StoredTrial& t : all) {
            if (t.status != "interrupted") ++counted;
            auto known = points_by_id.find(t.id);  // each trial's parameters parsed once, not at every claim
            if (known == points_by_id.end())
              known = points_by_id.emplace(t.id, space.point_of(nlohmann::json::parse(t.params_json))).first;
            const std::optional<Point>& point = known->second;
            if (!point) continue;  // cannot happen with the same identity; never fatal
            if (t.status == "running") {
              running_now.push_back(*point);
            } else if (finished_status(t.status) && taken_in.insert(t.id).second) {
              finished.push_back(finished_of(*point, t));
              if (beats(t, best ? &*best : nullptr)) best = t;
            }
          }
          study_running = running_now.size();
          if (options.max_trials > 0 && counted >= options.max_trials) {
            at_max = true;
            return std::nullopt;
          }
          proposed = algorithm.propose(finished, running_now);
          if (!proposed) return std::nullopt;
          const std::string params = space.to_json(*proposed).dump();
          return store::StudyStore::NewTrial{params, describe(*proposed, number), std::nullopt};
        },
        /*with_outputs=*/false);
    for (const store::StoredTrial& d : outcome.reaped) {
      ++summary.reaped;
      observer.note(reaped_note(d, backend.clean_up_left_over(d.dir)));  // its processes, if they ran on this host
    }
    if (outcome.claimed) {
      start_trial(*proposed, outcome.claimed->first, outcome.claimed->second);
      return true;
    }
    if (study_running == 0 && running.empty()) {
      exhausted = true;
      if (at_max && !stop) stop = StopReason::kMaxTrials;
    }
    return false;  // nothing to start now: other trials run, and may die and have their points re-queued
  };

  for (;;) {
    if (!stopping && stop_requested.load() != 0) {
      stop = StopReason::kInterrupted;
      runner.interrupt_all("the controller got SIGINT or SIGTERM");
      stopping = true;
    }
    const double elapsed = std::chrono::duration<double>(Clock::now() - start).count();
    if (!stopping && options.budget_s > 0 && elapsed >= options.budget_s) {
      stop = StopReason::kBudget;
      runner.interrupt_all(fmt::format("the study's budget of {:.0f} s was spent", options.budget_s));
      stopping = true;
    }
    while (worker && !stopping && !exhausted && runner.free_slots() > 0 && Clock::now() >= next_claim) {
      if (!claim_and_start()) {
        next_claim = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                        std::chrono::duration<double>(kIdlePollS));
        break;
      }
    }
    while (!worker && !stopping && !exhausted && runner.free_slots() > 0) {
      if (options.max_trials > 0 && static_cast<int>(finished.size() + running.size()) >= options.max_trials) {
        if (!stop) stop = StopReason::kMaxTrials;
        break;
      }
      const std::optional<Point> point = algorithm.propose(finished, running_points());
      if (!point) {
        exhausted = true;
        break;
      }
      // The trial's number (hence its id and directory) is decided in the transaction that stores it.
      const auto [db_id, number] =
          store.begin_trial(study, space.to_json(*point).dump(), [&](int n) { return describe(*point, n); });
      start_trial(*point, db_id, number);
    }
    // (A worker sets kMaxTrials only with `exhausted`: it waits while other workers' trials run.)
    if (runner.idle() && (stopping || exhausted || stop == StopReason::kMaxTrials)) break;

    for (const trial::TrialResult& result : runner.wait(wait_s, on_step)) {
      const auto it = running.find(result.id);
      if (it == running.end()) continue;  // not ours: cannot happen
      next_claim = Clock::now();  // a slot is free: claim at once
      if (worker && !store.finish_own_trial(it->second.db_id, result)) {
        ++summary.dropped;
        observer.note(fmt::format("trial {} {} {} here, but another worker had marked it interrupted (this worker's "
                                  "heartbeat came too late) and runs its point again: this result is dropped",
                                  it->second.number, it->second.params_json, trial::to_string(result.status)));
        running.erase(it);
        continue;
      }
      if (!worker) store.finish_trial(it->second.db_id, result);
      const store::StoredTrial t = store.trial(it->second.db_id);
      if (result.status != trial::TrialStatus::kInterrupted) {
        finished.push_back(finished_of(it->second.point, t));
        taken_in.insert(t.id);
        if (beats(t, best ? &*best : nullptr)) best = t;
      }
      running.erase(it);
      observer.trial_finished(t);
    }
    if (worker && !running.empty() &&
        std::chrono::duration<double>(Clock::now() - last_heartbeat).count() >= options.worker.heartbeat_s) {
      std::vector<std::int64_t> ids;
      ids.reserve(running.size());
      for (const auto& [id, r] : running) ids.push_back(r.db_id);
      store.heartbeat(ids);
      last_heartbeat = Clock::now();
    }
    std::vector<TrialProgress> progress;
    for (const trial::RunningTrial& r : runner.running()) {
      const auto it = running.find(r.id);
      if (it == running.end()) continue;
      TrialProgress& row = progress.emplace_back();
      row.number = it->second.number;
      row.params_json = it->second.params_json;
      row.slot = r.slot;
      row.steps = r.steps;
      row.max_steps = options.steps;
      row.elapsed_s = r.elapsed_s;
      row.last_step_time_s = r.last_step_time_s;
    }
    observer.progress(progress, static_cast<int>(finished.size()), best ? &*best : nullptr);
  }
  if (!stop) stop = StopReason::kExhausted;
  summary.stop = *stop;
  summary.elapsed_s = std::chrono::duration<double>(Clock::now() - start).count();
  summary.trials = store.trials(study);
  summary.best = best_trial(summary.trials);
  return summary;
}

}  // namespace paratune::tune
