// In-process trials, ask and tell (hpo/ask_tell.h).
#include "paratune/hpo/ask_tell.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "paratune/hpo/study.h"
#include "paratune/spec/error.h"
#include "paratune/spec/option_error.h"
#include "paratune/trial/failure.h"
#include "paratune/trial/measurement.h"
#include "paratune/trial/runner.h"

namespace paratune::hpo {
namespace {

double unix_now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

}  // namespace

void validate(const AskTellOptions& options) {
  if (options.name.empty()) throw OptionError("name", "''", "must not be empty (the study's name in the store)");
  if (options.objective.empty())
    throw OptionError("objective", "''", "must not be empty (the name the objective's values are stored under)");
  if (options.steps < 0)
    throw OptionError("steps", std::to_string(options.steps), "must be >= 1, or 0 when a trial has no fixed length");
}

void check_in_process_pruner(PrunerKind kind) {
  if (kind == PrunerKind::kAsha || kind == PrunerKind::kHyperband)
    throw OptionError("pruner", to_string(kind),
                      "rests trials at rungs and resumes them later, which needs trials paratune starts itself (a "
                      "command); an in-process objective can use none, median or percentile");
  if (kind == PrunerKind::kOppa)
    throw OptionError("pruner", to_string(kind),
                      "judges a trial's throughput from the step times paratune measures of a command's trials; an "
                      "in-process objective can use none, median or percentile");
}

nlohmann::ordered_json ask_tell_identity(const Space& space, const AskTellOptions& options, const Pruner& pruner) {
  return {{"kind", "hpo"},
          {"space", space.describe()},
          {"command", ""},
          {"runner", options.runner},
          {"steps", options.steps},
          {"objective", options.objective},
          {"direction", to_string(options.direction)},
          {"pruner", pruner.describe()}};
}

AskTellStudy::AskTellStudy(const Space& space, AskTellOptions options, store::StudyStore& store, Sampler& sampler,
                           Pruner& pruner, PrunerKind pruner_kind)
    : space_(space),
      options_(std::move(options)),
      store_(store),
      sampler_(sampler),
      pruner_(pruner),
      sampler_name_(sampler.name()),
      pruner_name_(pruner.name()) {
  validate(options_);
  check_in_process_pruner(pruner_kind);
  lock_ = store_.lock_controller(options_.name);
  study_ = store_.open_study(options_.name, ask_tell_identity(space_, options_, pruner_).dump());
  store_.mark_running_interrupted(study_);
  // As the command controller resumes (src/hpo/study_trials.cc resume): finished trials are what the
  // sampler and pruner know; interrupted configurations run again first, once each.
  for (const store::StoredTrial& t : store_.trials(study_, true)) {
    if (t.status == "interrupted") {
      const Config config = Config::parse(t.params_json);
      if (std::find(requeue_.begin(), requeue_.end(), config) == requeue_.end()) requeue_.push_back(config);
      continue;
    }
    records_.push_back(record_of(t, options_.objective));
  }
  std::erase_if(requeue_, [&](const Config& c) {
    return std::any_of(records_.begin(), records_.end(), [&](const TrialRecord& r) { return r.config == c; });
  });
  reused_ = static_cast<int>(records_.size());
  requeued_ = static_cast<int>(requeue_.size());
}

AskTellStudy::~AskTellStudy() {
  // Trials never told (the program died in them, or forgot): interrupted, asked again on resume.
  std::lock_guard lock(mutex_);
  for (auto& [number, live] : live_) {
    trial::TrialResult result;
    result.status = trial::TrialStatus::kInterrupted;
    result.reason = "never told how it ended (the study object was closed while it ran)";
    result.started_unix_s = live.started_unix_s;
    result.ended_unix_s = unix_now();
    result.location = "in-process";
    try {
      store_.finish_trial(live.id, result);
    } catch (...) {  // a destructor must not throw
      // The store went away: the trial stays "running", and a resume marks it interrupted.
    }
  }
}

std::optional<AskTellStudy::Asked> AskTellStudy::ask() {
  std::lock_guard lock(mutex_);
  std::optional<Config> config;
  nlohmann::ordered_json notes;
  if (!requeue_.empty()) {
    config = requeue_.front();
    requeue_.erase(requeue_.begin());
    notes = {{"requeued", "its trial was interrupted in an earlier run"}};
  } else {
    config = sampler_.propose(records_);
    if (!config) return std::nullopt;
    notes = sampler_.proposal_notes();
  }
  const std::string params = config->dump();
  const auto [id, number] = store_.begin_trial(study_, params, [&](int) {
    return store::StudyStore::LaunchRecord{
        .config_json = nlohmann::ordered_json{{"runner", options_.runner}}.dump(), .command = "", .dir = "",
        .location = "in-process"};
  });
  if (!notes.is_null() && !notes.empty()) store_.set_prediction(id, notes.dump());
  TrialRecord record;
  record.number = number;
  record.config = *config;
  records_.push_back(std::move(record));
  Live& l = live_[number];
  l.id = id;
  l.record = records_.size() - 1;
  l.started_unix_s = unix_now();
  l.last_report = std::chrono::steady_clock::now();
  return Asked{number, *config};
}

AskTellStudy::Live& AskTellStudy::live(int number) {
  const auto it = live_.find(number);
  if (it == live_.end())
    throw Error(fmt::format("study '{}': trial {} is not running (never asked, or already told how it ended)",
                            options_.name, number));
  return it->second;
}

bool AskTellStudy::report(int number, std::int64_t step, double value) {
  std::lock_guard lock(mutex_);
  Live& l = live(number);
  if (!std::isfinite(value))
    throw Error(fmt::format("trial {}: report: {} {} at step {} is not a finite number", number, options_.objective,
                            value, step));
  if (step < 0) throw Error(fmt::format("trial {}: report: step {} must be >= 0", number, step));
  if (l.last_step && step <= *l.last_step) return false;
  const auto now = std::chrono::steady_clock::now();
  const double elapsed = std::chrono::duration<double>(now - l.last_report).count();
  const std::int64_t advanced = l.last_step ? step - *l.last_step : step + 1;
  l.output.steps.push_back({step, elapsed / static_cast<double>(advanced)});
  l.output.metrics.push_back({options_.objective, value, step, std::nullopt});
  l.last_report = now;
  l.last_step = step;
  TrialRecord& r = records_[l.record];
  r.curve.push_back({step, value});
  r.resource = step + 1;
  return true;
}

void AskTellStudy::report_metric(int number, const std::string& name, double value, std::optional<std::int64_t> step) {
  std::lock_guard lock(mutex_);
  Live& l = live(number);
  if (name.empty()) throw Error(fmt::format("trial {}: a metric needs a name", number));
  if (name == options_.objective)
    throw Error(fmt::format("trial {}: '{}' is the objective: report it with report(value, step)", number, name));
  if (!std::isfinite(value)) throw Error(fmt::format("trial {}: metric {} = {} is not a finite number", number, name, value));
  l.output.metrics.push_back({name, value, step ? step : l.last_step, std::nullopt});
}

bool AskTellStudy::should_prune(int number) {
  std::lock_guard lock(mutex_);
  Live& l = live(number);
  const TrialRecord& r = records_[l.record];
  if (r.curve.empty()) return false;
  if (!pruner_.keep_running(r, records_)) l.prune_said = true;
  return l.prune_said;
}

store::StoredTrial AskTellStudy::tell(int number, const TrialEnd& end) {
  std::lock_guard lock(mutex_);
  Live& l = live(number);
  TrialRecord& r = records_[l.record];
  const std::optional<double> last = r.curve.empty() ? std::nullopt : std::optional<double>(r.curve.back().value);
  trial::TrialResult result;
  result.started_unix_s = l.started_unix_s;
  result.ended_unix_s = unix_now();
  result.location = "in-process";
  result.output = std::move(l.output);
  std::vector<double> step_times;
  for (const trial::StepReport& s : result.output.steps) step_times.push_back(s.step_time_s);
  result.throughput = trial::estimate_throughput(step_times);
  result.exit_code = 0;
  store::TrialOutcome outcome;
  switch (end.kind) {
    case TrialEnd::Kind::kCompleted: {
      const std::optional<double> value = end.value ? end.value : last;
      result.status = trial::TrialStatus::kCompleted;
      if (value && std::isfinite(*value)) {
        r.state = TrialRecord::State::kCompleted;
        r.value = value;
        outcome.status = "completed";
        outcome.objective = value;
      } else {
        r.state = TrialRecord::State::kFailed;
        r.failure = trial::FailureKind::kCrashed;  // ran, but measured nothing usable
        result.status = trial::TrialStatus::kFailed;
        outcome.status = "failed";
        outcome.reason = value ? fmt::format("its value {} is not a finite number", *value)
                               : fmt::format("returned no value and reported no '{}'", options_.objective);
        result.exit_code = -1;  // no exit of its own: a crash, not a refusal (trial/failure.h)
      }
      break;
    }
    case TrialEnd::Kind::kPruned:
      result.status = trial::TrialStatus::kEarlyStopped;
      r.state = TrialRecord::State::kPruned;
      outcome.status = "pruned";
      outcome.objective = last;
      outcome.reason = !end.reason.empty() ? end.reason
                       : l.prune_said
                           ? fmt::format("stopped by the {} pruner at step {} ({} {})", pruner_name_,
                                         r.curve.empty() ? 0 : r.curve.back().step, options_.objective,
                                         last ? fmt::format("{}", *last) : "?")
                       : l.last_step ? fmt::format("the program stopped it after step {}", *l.last_step)
                                     : std::string("the program stopped it before its first report");
      break;
    case TrialEnd::Kind::kFailed:
    case TrialEnd::Kind::kOutOfMemory: {
      const bool oom = end.kind == TrialEnd::Kind::kOutOfMemory;
      result.status = oom ? trial::TrialStatus::kOom : trial::TrialStatus::kFailed;
      result.reason = end.reason.empty() ? (oom ? "out of memory" : "failed") : end.reason;
      result.exit_code = 1;  // failed before its first report: refused, a deterministic failure (trial/failure.h)
      r.state = TrialRecord::State::kFailed;
      r.failure = trial::classify_failure(result.status, result.exit_code, 0,
                                          static_cast<long long>(result.output.steps.size()));
      outcome.status = trial::to_string(result.status);
      break;
    }
    case TrialEnd::Kind::kInterrupted:
      result.status = trial::TrialStatus::kInterrupted;
      result.reason = end.reason.empty() ? "interrupted" : end.reason;
      outcome.status = "interrupted";
      break;
  }
  const std::int64_t id = l.id;
  const std::size_t record = l.record;
  live_.erase(number);
  if (end.kind == TrialEnd::Kind::kInterrupted) {
    // Not information about the configuration: out of the sampler's view, asked again on resume.
    records_.erase(records_.begin() + static_cast<std::ptrdiff_t>(record));
    for (auto& [n, other] : live_)
      if (other.record > record) --other.record;
  }
  store_.finish_trial(id, result, &outcome);
  return store_.trial(id);
}

std::vector<store::StoredTrial> AskTellStudy::trials() const {
  std::lock_guard lock(mutex_);
  return store_.trials(study_, true);
}

std::optional<store::StoredTrial> AskTellStudy::best() const {
  const std::vector<store::StoredTrial> all = trials();
  const std::optional<std::size_t> i = best_hpo_trial(all, options_.direction);
  if (!i) return std::nullopt;
  return all[*i];
}

}  // namespace paratune::hpo
