// In-process trials, ask and tell (hpo/ask_tell.h).
#include "paratune/hpo/ask_tell.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <set>

#include "paratune/hpo/study.h"
#include "space_file.h"
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

// A stepped distribution is searched as the index of its value on the grid (an int 0..n), so every
// sampler handles it as it handles any int; the values themselves are what is stored.
bool stepped(const Distribution& d) {
  return d.param.type != ParamType::kCategorical && d.step > 0 && !(d.param.type == ParamType::kInt && d.step == 1);
}
// Only one value to give (low == high, or one choice): nothing to search.
bool single_value(const Distribution& d) {
  return d.param.type == ParamType::kCategorical ? d.param.choices.size() == 1 : d.param.low == d.param.high;
}
// The parameter a sampler searches for `d`, named `key` (the program's names may be any text; a
// space's must be identifiers).
ParamSpec model_param(const Distribution& d, const std::string& key) {
  ParamSpec p = d.param;
  p.name = key;
  if (!stepped(d)) return p;
  p.type = ParamType::kInt;
  p.low = 0;
  p.high = std::round((d.param.high - d.param.low) / d.step);
  p.log = false;
  return p;
}
std::string key(std::size_t i) { return fmt::format("p{}", i); }
nlohmann::json to_model(const Distribution& d, const nlohmann::json& value) {
  if (!stepped(d)) return value;
  return static_cast<std::int64_t>(std::llround((value.get<double>() - d.param.low) / d.step));
}
// A searched value back as the program's: on the step grid, an int as an integer.
nlohmann::json from_model(const Distribution& d, const nlohmann::json& value) {
  if (d.param.type == ParamType::kCategorical) return value;
  double v = std::clamp(stepped(d) ? d.param.low + value.get<double>() * d.step : value.get<double>(), d.param.low,
                        d.param.high);
  if (d.param.type == ParamType::kInt) return static_cast<std::int64_t>(std::llround(v));
  // A grid value to 15 digits: low 0.1 + 3 x step 0.2 is 0.7, not 0.7000000000000001.
  if (stepped(d)) v = std::stod(fmt::format("{:.15g}", v));
  return v;
}

// A seed of its own for each (parameter, trial): parameters proposed on their own in one trial, or
// in trials asked at once, do not repeat each other's draws. FNV-1a: the same on every platform.
std::uint64_t seed_for(std::uint64_t seed, const std::string& name, int number) {
  std::uint64_t h = 1469598103934665603ULL ^ seed;
  for (const unsigned char c : name) h = (h ^ c) * 1099511628211ULL;
  return (h ^ static_cast<std::uint64_t>(number)) * 1099511628211ULL;
}

// How long after a define-by-run trial's first parameter (since the last write) its parameters are
// stored while it runs (keep_alive).
constexpr std::chrono::milliseconds kParamsDelay{1000};

bool informative(const TrialRecord& r) {
  return r.state == TrialRecord::State::kCompleted || r.state == TrialRecord::State::kPruned;
}

}  // namespace

bool Distribution::operator==(const Distribution& other) const {
  return param.name == other.param.name && param.type == other.param.type && param.low == other.param.low &&
         param.high == other.param.high && param.log == other.param.log && param.choices == other.param.choices &&
         step == other.step;
}

Distribution checked_distribution(Distribution d, const std::string& call) {
  ParamSpec& p = d.param;
  if (p.type == ParamType::kInt && d.step == 0) d.step = 1;
  if (p.type != ParamType::kCategorical) {
    if (!std::isfinite(p.low) || !std::isfinite(p.high))
      throw Error(fmt::format("{}: low {} and high {} must be finite numbers", call, p.low, p.high));
    if (p.low > p.high) throw Error(fmt::format("{}: low {} must not be above high {}", call, p.low, p.high));
    if (!(d.step >= 0) || !std::isfinite(d.step))
      throw Error(fmt::format("{}: step {} must be a positive number (or None)", call, d.step));
    if (p.type == ParamType::kInt && d.step != std::floor(d.step))
      throw Error(fmt::format("{}: step {} must be a whole number", call, d.step));
    if (p.log && stepped(d))
      throw Error(fmt::format("{}: step {} and log=True cannot be used together (as in Optuna)", call, d.step));
    if (p.log && p.low <= 0)
      throw Error(fmt::format("{}: low {} must be above 0 with log=True", call, p.low));
    // As Optuna: high moves down to the last value of the grid low, low + step, ...
    if (d.step > 0) p.high = p.low + std::floor((p.high - p.low) / d.step + 1e-9) * d.step;
  } else if (p.choices.empty()) {
    throw Error(fmt::format("{}: choices must not be empty", call));
  }
  if (p.name.empty()) throw Error(fmt::format("{}: the parameter needs a name", call));
  if (!single_value(d)) {
    try {
      const Space checked({model_param(d, "x")}, {}, "");  // the bounds and choices rules of a space
    } catch (const Error& e) {
      // "": parameters.x: low ... -> the call's name in place of the placeholder
      std::string why = e.what();
      if (const std::size_t at = why.find(": parameters.x"); at != std::string::npos) why = why.substr(at + 14);
      throw Error(fmt::format("{}{}", call, why));
    }
  }
  return d;
}

nlohmann::ordered_json to_json(const Distribution& d) {
  const ParamSpec& p = d.param;
  if (p.type == ParamType::kCategorical) return {{"type", "categorical"}, {"choices", p.choices}};
  nlohmann::ordered_json j{{"type", to_string(p.type)}, {"low", p.low}, {"high", p.high}, {"log", p.log}};
  if (d.step > 0) j["step"] = d.step;
  return j;
}

Distribution distribution_from_json(const std::string& name, const nlohmann::json& j) {
  Distribution d;
  d.param.name = name;
  const std::string type = j.value("type", "");
  if (type == "categorical") {
    d.param.type = ParamType::kCategorical;
    for (const auto& c : j.at("choices")) d.param.choices.push_back(c);
    return d;
  }
  d.param.type = type == "int" ? ParamType::kInt : ParamType::kFloat;
  d.param.low = j.at("low").get<double>();
  d.param.high = j.at("high").get<double>();
  d.param.log = j.value("log", false);
  d.step = j.value("step", 0.0);
  return d;
}

std::vector<ParamSpec> revealed_parameters(const std::vector<store::StoredTrial>& trials) {
  std::vector<ParamSpec> out;
  std::set<std::string> refused;  // asked as two types
  for (const store::StoredTrial& t : trials) {
    // Ordered: the parameters in the order the trial asked for them.
    const nlohmann::ordered_json state =
        nlohmann::ordered_json::parse(t.hpo_json.empty() ? "{}" : t.hpo_json, nullptr, false);
    if (!state.is_object() || !state.contains("distributions") || !state["distributions"].is_object()) continue;
    for (const auto& item : state["distributions"].items()) {
      const std::string& name = item.key();
      if (refused.contains(name) || !is_parameter_name(name)) continue;
      const ParamSpec d = distribution_from_json(name, item.value()).param;
      const auto seen = std::find_if(out.begin(), out.end(), [&](const ParamSpec& p) { return p.name == name; });
      if (seen == out.end()) {
        out.push_back(d);
      } else if (seen->type != d.type) {
        refused.insert(name);
        out.erase(seen);
      } else if (d.type == ParamType::kCategorical) {
        for (const nlohmann::json& c : d.choices)
          if (std::find(seen->choices.begin(), seen->choices.end(), c) == seen->choices.end()) seen->choices.push_back(c);
      } else {
        seen->low = std::min(seen->low, d.low);
        seen->high = std::max(seen->high, d.high);
        seen->log = seen->log && d.log;
      }
    }
  }
  // What else a space cannot hold (one value only: low == high, or one choice) is left out too.
  std::erase_if(out, [](const ParamSpec& p) {
    try {
      const Space alone({p}, {}, "");
      return false;
    } catch (const Error&) {
      return true;
    }
  });
  return out;
}

void validate(const AskTellOptions& options) {
  if (options.name.empty()) throw OptionError("name", "''", "must not be empty (the study's name in the store)");
  if (options.objective.empty())
    throw OptionError("objective", "''", "must not be empty (the name the objective's values are stored under)");
  if (options.steps < 0)
    throw OptionError("steps", std::to_string(options.steps), "must be >= 1, or 0 when a trial has no fixed length");
  if (!(options.heartbeat_s > 0) || !std::isfinite(options.heartbeat_s))
    throw OptionError("heartbeat_s", fmt::format("{}", options.heartbeat_s), "must be a positive number of seconds");
  if (!(options.heartbeat_timeout_s > options.heartbeat_s) || !std::isfinite(options.heartbeat_timeout_s))
    throw OptionError("heartbeat_timeout_s", fmt::format("{}", options.heartbeat_timeout_s),
                      fmt::format("must exceed heartbeat_s ({}): a live process renews its heartbeats more often",
                                  options.heartbeat_s));
  if (options.objectives.empty() && options.directions.empty()) return;
  if (options.objectives.size() < 2 || options.directions.size() != options.objectives.size())
    throw OptionError("directions", std::to_string(options.directions.size()),
                      fmt::format("a study of several objectives needs two or more, one per objective ({} named)",
                                  options.objectives.size()));
  if (options.objectives.front() != options.objective || options.directions.front() != options.direction)
    throw OptionError("objective", options.objective,
                      fmt::format("must be the first of {} with its direction", option_ref("objectives")));
  for (std::size_t i = 0; i < options.objectives.size(); ++i)
    if (options.objectives[i].empty() ||
        std::count(options.objectives.begin(), options.objectives.end(), options.objectives[i]) > 1)
      throw OptionError("objectives", options.objectives[i], "each objective needs a name of its own");
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

nlohmann::ordered_json ask_tell_identity(const Space* space, const AskTellOptions& options, const Pruner& pruner) {
  // Define-by-run: no "space"; what the study searches is in its trials (their distributions).
  nlohmann::ordered_json identity{{"kind", "hpo"}};
  if (space != nullptr) identity["space"] = space->describe();
  else identity["space_by"] = "define-by-run: each trial stores the distributions its program asked for";
  identity.update(nlohmann::ordered_json{
          {"command", ""},
          {"runner", options.runner},
          {"steps", options.steps},
          {"objective", options.objective},
          {"direction", to_string(options.direction)},
          {"pruner", pruner.describe()}});
  if (!options.objectives.empty()) {  // only then: a study of one objective keeps its identity
    identity["objectives"] = options.objectives;
    nlohmann::ordered_json directions = nlohmann::ordered_json::array();
    for (const Direction d : options.directions) directions.push_back(to_string(d));
    identity["directions"] = std::move(directions);
  }
  return identity;
}

AskTellStudy::AskTellStudy(const Space& space, AskTellOptions options, store::StudyStore& store, Sampler& sampler,
                           Pruner& pruner, PrunerKind pruner_kind)
    : space_(&space),
      options_(std::move(options)),
      store_(store),
      sampler_(&sampler),
      pruner_(pruner),
      sampler_name_(sampler.name()),
      pruner_name_(pruner.name()) {
  open(pruner_kind);
}

AskTellStudy::AskTellStudy(AskTellOptions options, store::StudyStore& store, SamplerKind sampler,
                           SamplerOptions sampler_options, Pruner& pruner, PrunerKind pruner_kind)
    : options_(std::move(options)),
      store_(store),
      pruner_(pruner),
      sampler_kind_(sampler),
      sampler_options_(std::move(sampler_options)),
      sampler_name_(to_string(sampler)),
      pruner_name_(pruner.name()) {
  check_objectives(sampler, sampler_options_);
  if (sampler == SamplerKind::kGrid)
    throw Error("sampler 'grid': needs the space in advance (a grid of every combination); a study defined by its "
                "runs can use random, tpe or gp");
  open(pruner_kind);
}

void AskTellStudy::open(PrunerKind pruner_kind) {
  validate(options_);
  if (!options_.objectives.empty() && pruner_kind != PrunerKind::kNone)
    throw OptionError("pruner", to_string(pruner_kind),
                      "judges one objective's learning curve; a study of several objectives needs pruner none (as "
                      "in Optuna, whose pruners need one objective)");
  if (!define_by_run() || !pruner_.judges_rungs()) check_in_process_pruner(pruner_kind);
  else if (options_.steps == 0)
    throw OptionError("steps", "0",
                      fmt::format("the {} pruner needs the steps of a full trial (its rungs are fractions of it)",
                                  to_string(pruner_kind)));
  // Alone (the study's exclusive lock is free): trials left running were a dead process's,
  // interrupted now. Then a worker's share, which other ask/tell studies may hold too.
  std::unique_ptr<store::ControllerLock> alone;
  try {
    alone = store_.lock_controller(options_.name);
  } catch (const store::StoreUnavailable&) {
    throw;
  } catch (const Error&) {  // held: other processes run the study (or a controller: lock_worker says so)
  }
  if (!alone) lock_ = share_of_the_lock();
  study_ = store_.open_study(options_.name, ask_tell_identity(space_, options_, pruner_).dump());
  if (alone) {
    store_.mark_running_interrupted(study_);
    alone.reset();
    lock_ = share_of_the_lock();
  }
  adopt(store_.trials(study_, true), /*with_outputs=*/true);
  reused_ = static_cast<int>(std::count_if(records_.begin(), records_.end(), [](const TrialRecord& r) {
    return r.state != TrialRecord::State::kRunning;
  }));
  requeued_ = static_cast<int>(requeue_.size());
  heartbeat_ = std::thread([this] { keep_alive(); });
}

std::unique_ptr<store::ControllerLock> AskTellStudy::share_of_the_lock() {
  // Another process that opens the study at the same moment holds the exclusive lock for as long as
  // it takes to find out it is alone (above: milliseconds), so a refusal is tried again for a while;
  // a controller that runs the study holds it for good, and its error is thrown then.
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  for (;;) {
    try {
      return store_.lock_worker(options_.name);
    } catch (const store::StoreUnavailable&) {
      throw;
    } catch (const Error&) {
      if (std::chrono::steady_clock::now() >= until) throw;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }
}

bool AskTellStudy::adopt(const std::vector<store::StoredTrial>& all, bool with_outputs) {
  // As the command controller resumes (src/hpo/study_trials.cc resume): finished trials are what the
  // sampler and pruner know; interrupted configurations run again first, once each.
  std::map<int, std::size_t> known;  // trial number -> index in records_, of the finished ones
  for (std::size_t i = 0; i < records_.size(); ++i)
    if (records_[i].state != TrialRecord::State::kRunning) known[records_[i].number] = i;
  if (!with_outputs && std::any_of(all.begin(), all.end(), [&](const store::StoredTrial& t) {
        return t.status != "running" && t.status != "interrupted" && !known.contains(t.number) &&
               !live_.contains(t.number);
      }))
    return false;
  std::vector<TrialRecord> records;
  std::vector<Config> requeue;
  for (const store::StoredTrial& t : all) {
    if (const auto own = live_.find(t.number); own != live_.end()) {  // running here (even if reaped meanwhile)
      records.push_back(records_[own->second.record]);
      own->second.record = records.size() - 1;
      continue;
    }
    if (define_by_run() && !distributions_.contains(t.number)) {
      // Its distributions, as stored when it ended; interrupted ones are not asked again (above).
      const nlohmann::json state = nlohmann::json::parse(t.hpo_json.empty() ? "{}" : t.hpo_json, nullptr, false);
      if (state.is_object() && state.contains("distributions") && state["distributions"].is_object())
        for (const auto& [name, j] : state["distributions"].items())
          distributions_[t.number].push_back(distribution_from_json(name, j));
    }
    if (t.status == "interrupted") {
      const Config config = Config::parse(t.params_json);
      if (!define_by_run() && std::find(requeue.begin(), requeue.end(), config) == requeue.end())
        requeue.push_back(config);
      continue;
    }
    if (const auto k = known.find(t.number); k != known.end()) {
      records.push_back(records_[k->second]);
      continue;
    }
    records.push_back(record_of(t, options_.objective, options_.objectives));
    // A program's reports may skip steps (every 10th): it reached the last one reported, which the
    // steps stored (one per report) undercount.
    if (define_by_run() && !records.back().curve.empty())
      records.back().resource = std::max(records.back().resource, records.back().curve.back().step + 1);
  }
  // A configuration another trial has taken up (finished, or running in any process) is not asked again.
  if (!requeue.empty()) std::erase_if(requeue, [&](const Config& c) {
    return std::any_of(all.begin(), all.end(), [&](const store::StoredTrial& t) {
      return t.status != "interrupted" && Config::parse(t.params_json) == c;
    });
  });
  records_ = std::move(records);
  requeue_ = std::move(requeue);
  return true;
}

void AskTellStudy::keep_alive() {
  using Clock = std::chrono::steady_clock;
  const auto every = std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(options_.heartbeat_s));
  std::unique_lock lock(mutex_);
  Clock::time_point next_beat = Clock::now() + every;
  for (;;) {
    // Awake for the next beat, or for a define-by-run trial's parameters due to be stored.
    Clock::time_point wake = next_beat;
    for (const auto& [number, l] : live_)
      if (l.params_due) wake = std::min(wake, *l.params_due);
    // No predicate: a notification (a new trial's parameters due sooner, or the end) recomputes the wake.
    if (!stopping_) wake_heartbeat_.wait_until(lock, wake);
    if (stopping_) return;
    const Clock::time_point now = Clock::now();
    try {
      if (now >= next_beat) {
        next_beat = now + every;
        std::vector<std::int64_t> ids;
        for (const auto& [number, l] : live_) ids.push_back(l.id);
        if (!ids.empty()) store_.heartbeat(ids);
      }
      for (auto& [number, l] : live_) {
        if (!l.params_due || *l.params_due > now) continue;
        l.params_due.reset();
        store_.set_running_params(l.id, records_[l.record].config.dump());
      }
    } catch (const std::exception&) {
      // The store is away: the next beat tries again (a trial outlives a blink shorter than the timeout).
    }
  }
}

AskTellStudy::~AskTellStudy() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_heartbeat_.notify_all();
  if (heartbeat_.joinable()) heartbeat_.join();
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
      // Define-by-run: what it had asked for so far.
      store::TrialOutcome outcome;
      outcome.status = "interrupted";
      if (define_by_run()) outcome.params_json = records_[live.record].config.dump();
      (void)store_.finish_own_trial(live.id, result, define_by_run() ? &outcome : nullptr);
    } catch (...) {  // a destructor must not throw
      // The store went away: the trial stays "running", and a resume marks it interrupted.
    }
  }
}

std::optional<std::pair<Config, nlohmann::ordered_json>> AskTellStudy::next_configuration() {
  if (!requeue_.empty())
    return std::pair{requeue_.front(), nlohmann::ordered_json{{"requeued", "its trial was interrupted (its process "
                                                                            "stopped or died before telling its end)"}}};
  if (!define_by_run()) {
    std::optional<Config> config = sampler_->propose(records_);
    if (!config) return std::nullopt;
    return std::pair{std::move(*config), sampler_->proposal_notes()};
  }
  // The parameters every finished trial had, together; the rest are decided as they are asked.
  update_model();
  Config config = Config::object();
  nlohmann::ordered_json notes;
  if (sampler_ != nullptr) {
    std::vector<TrialRecord> known;  // the finished trials, on the model's parameters (stepped: indices)
    for (const TrialRecord& r : records_) {
      if (!informative(r) && r.state != TrialRecord::State::kFailed) continue;
      const std::vector<Distribution>& own = distributions_[r.number];
      TrialRecord projected = r;
      projected.config = Config::object();
      for (std::size_t i = 0; i < model_.size(); ++i) {
        const Distribution& d = model_[i];
        if (std::find(own.begin(), own.end(), d) != own.end() && r.config.contains(d.param.name))
          projected.config[key(i)] = to_model(d, r.config[d.param.name]);
      }
      if (projected.config.size() == model_.size()) known.push_back(std::move(projected));
    }
    std::optional<Config> proposed = sampler_->propose(known);
    if (!proposed) {  // a small finite space visited once already (random): draws from the prior
      std::mt19937_64 rng(seed_for(sampler_options_.seed, "", static_cast<int>(records_.size())));
      proposed = model_space_->sample(rng);
    }
    for (std::size_t i = 0; i < model_.size(); ++i)
      config[model_[i].param.name] = from_model(model_[i], (*proposed)[key(i)]);
    notes = sampler_->proposal_notes();
  }
  return std::pair{std::move(config), std::move(notes)};
}

store::StudyStore::LaunchRecord AskTellStudy::launch_record() const {
  return {.config_json = nlohmann::ordered_json{{"runner", options_.runner}}.dump(),
          .command = "",
          .dir = "",
          .location = "in-process"};
}

std::optional<AskTellStudy::Asked> AskTellStudy::ask() {
  std::lock_guard lock(mutex_);
  std::optional<std::pair<Config, nlohmann::ordered_json>> next;
  std::optional<std::pair<std::int64_t, int>> claimed;
  const auto now = std::chrono::steady_clock::now();
  if (!store_.written_elsewhere() &&
      std::chrono::duration<double>(now - last_claim_).count() < options_.heartbeat_timeout_s / 2) {
    // Nobody else wrote since the last look: what this process knows is the study. (A claim at
    // least every half timeout still interrupts the trials of a process that died meanwhile.)
    next = next_configuration();
    if (!next) return std::nullopt;
    claimed = store_.begin_trial(study_, define_by_run() ? "{}" : next->first.dump(), [&](int) {
      return launch_record();
    });
  }
  // In one claim (StudyStore::claim_trial): every process's trials taken in, the next configuration
  // proposed from them, the trial inserted with the study's next number. Read first without the
  // trials' outputs; again with them when another process finished a trial this one has not seen.
  for (const bool with_outputs : {false, true}) {
    if (claimed) break;
    last_claim_ = now;
    bool adopted = false;
    const store::StudyStore::ClaimOutcome outcome = store_.claim_trial(
        study_, options_.heartbeat_timeout_s,
        [&](const std::vector<store::StoredTrial>& all, int) -> std::optional<store::StudyStore::NewTrial> {
          if (!adopt(all, with_outputs)) return std::nullopt;
          adopted = true;
          next = next_configuration();
          if (!next) return std::nullopt;
          // Define-by-run: the trial's parameters are stored when it ends, as its program asked for them.
          return store::StudyStore::NewTrial{
              .params_json = define_by_run() ? "{}" : next->first.dump(), .record = launch_record(), .resume = {}};
        },
        with_outputs);
    if (!adopted) continue;
    claimed = outcome.claimed;
    if (!claimed) return std::nullopt;  // the sampler has nothing left
  }
  const auto [id, number] = *claimed;
  auto& [config, notes] = *next;
  if (!requeue_.empty() && requeue_.front() == config) requeue_.erase(requeue_.begin());
  if (!notes.is_null() && !notes.empty()) store_.set_prediction(id, notes.dump());
  TrialRecord record;
  record.number = number;
  record.config = define_by_run() ? Config::object() : config;
  if (define_by_run() && pruner_.judges_rungs()) record.bracket = pruner_.assign_new_trial(records_).bracket;
  records_.push_back(std::move(record));
  Live& l = live_[number];
  if (define_by_run()) {
    l.proposal = config;
    l.proposed = model_;
    distributions_[number].clear();
    if (!enqueued_.empty()) {
      l.fixed = std::move(enqueued_.front().first);
      l.user_attrs = std::move(enqueued_.front().second);
      enqueued_.erase(enqueued_.begin());
    }
  }
  l.id = id;
  l.record = records_.size() - 1;
  l.started_unix_s = unix_now();
  l.last_report = std::chrono::steady_clock::now();
  return Asked{number, define_by_run() ? Config::object() : config};
}

void AskTellStudy::update_model() {
  std::vector<Distribution> common;
  bool first = true;
  for (const TrialRecord& r : records_) {
    if (!informative(r)) continue;
    const std::vector<Distribution>& own = distributions_[r.number];
    if (first) {
      common = own;
      first = false;
    } else {
      std::erase_if(common, [&](const Distribution& d) { return std::find(own.begin(), own.end(), d) == own.end(); });
    }
  }
  std::erase_if(common, single_value);
  // Random search: every parameter drawn on its own from its prior (Optuna's RandomSampler).
  if (sampler_kind_ == SamplerKind::kRandom) common.clear();
  if (common == model_ && (model_.empty() || model_sampler_)) return;
  model_ = std::move(common);
  sampler_ = nullptr;
  model_sampler_.reset();
  model_space_.reset();
  if (model_.empty()) return;
  std::vector<ParamSpec> params;
  for (std::size_t i = 0; i < model_.size(); ++i) params.push_back(model_param(model_[i], key(i)));
  model_space_ = std::make_unique<Space>(std::move(params), std::vector<std::string>{},
                                         "the parameters every finished trial suggested");
  model_sampler_ = make_sampler(sampler_kind_, *model_space_, sampler_options_);
  sampler_ = model_sampler_.get();
}

namespace {
// Whether `value` is one of `d`'s values (an enqueued value must be, to be taken; an earlier trial's
// value must be, to inform the proposal of a parameter asked with other bounds).
bool fits(const Distribution& d, const nlohmann::json& value) {
  const ParamSpec& p = d.param;
  if (p.type == ParamType::kCategorical) return std::find(p.choices.begin(), p.choices.end(), value) != p.choices.end();
  if (!value.is_number()) return false;
  const double v = value.get<double>();
  if (v < p.low || v > p.high) return false;
  if (p.type == ParamType::kInt && v != std::floor(v)) return false;
  if (d.step > 0) {
    const double k = (v - p.low) / d.step;
    return std::abs(k - std::round(k)) < 1e-9;
  }
  return true;
}
}  // namespace

namespace {
// Whether a trial that asked for a parameter with distribution `seen` informs the proposal of the
// same parameter asked with `now`: the same type, scale and step -- the bounds may differ (a bound
// that depends on an earlier value, as in Optuna's define-by-run examples); categorical choices
// must be the same list.
bool comparable(const Distribution& seen, const Distribution& now) {
  if (now.param.type == ParamType::kCategorical) return seen == now;
  return seen.param.type == now.param.type && seen.param.log == now.param.log && seen.step == now.step;
}
}  // namespace

nlohmann::json AskTellStudy::independent_value(int number, const Distribution& d) {
  const Space one({model_param(d, key(0))}, {}, "suggest");
  SamplerOptions options = sampler_options_;
  options.seed = seed_for(sampler_options_.seed, d.param.name, number);
  if (sampler_kind_ == SamplerKind::kRandom) {
    std::mt19937_64 rng(options.seed);
    return from_model(d, one.sample(rng)[key(0)]);
  }
  const std::unique_ptr<Sampler> sampler = make_sampler(sampler_kind_, one, options);
  // The trials that asked for this parameter with a comparable distribution and got a value inside
  // this one's range, on it alone (Optuna's TPE models a parameter by its name in the same way).
  std::vector<TrialRecord> known;
  for (const TrialRecord& r : records_) {
    if (r.state == TrialRecord::State::kRunning || !r.config.contains(d.param.name)) continue;
    const std::vector<Distribution>& own = distributions_[r.number];
    const auto seen = std::find_if(own.begin(), own.end(),
                                   [&](const Distribution& o) { return o.param.name == d.param.name; });
    if (seen == own.end() || !comparable(*seen, d) || !fits(d, r.config[d.param.name])) continue;
    TrialRecord projected = r;
    projected.config = Config{{key(0), to_model(d, r.config[d.param.name])}};
    known.push_back(std::move(projected));
  }
  std::optional<Config> proposed = sampler->propose(known);
  if (!proposed) {  // every value of a small finite parameter tried (random): from the prior
    std::mt19937_64 rng(options.seed);
    proposed = one.sample(rng);
  }
  return from_model(d, (*proposed)[key(0)]);
}

void AskTellStudy::enqueue(Config values, nlohmann::ordered_json user_attrs, bool first) {
  std::lock_guard lock(mutex_);
  if (!define_by_run())
    throw Error(fmt::format("study '{}': enqueue is for a study without a space given in advance", options_.name));
  if (!values.is_object()) throw Error(fmt::format("study '{}': enqueue: {} is not an object of parameter values",
                                                   options_.name, values.dump()));
  if (!user_attrs.is_object()) user_attrs = nlohmann::ordered_json::object();
  if (first) enqueued_.emplace(enqueued_.begin(), std::move(values), std::move(user_attrs));
  else enqueued_.emplace_back(std::move(values), std::move(user_attrs));
}


nlohmann::json AskTellStudy::suggest(int number, const Distribution& d) {
  std::lock_guard lock(mutex_);
  if (!define_by_run())
    throw Error(fmt::format("study '{}': suggest is for a study without a space given in advance", options_.name));
  Live& l = live(number);
  TrialRecord& r = records_[l.record];
  std::vector<Distribution>& own = distributions_[number];
  const std::string& name = d.param.name;
  for (const Distribution& seen : own)
    if (seen.param.name == name) {
      // Optuna's rule: asked again, the value it got -- with a distribution of the same type.
      if (seen.param.type != d.param.type)
        throw Error(fmt::format("trial {}: '{}' was suggested as {} in this trial, now as {}", number, name,
                                to_string(seen.param.type), to_string(d.param.type)));
      return r.config[name];
    }
  nlohmann::json value;
  if (const auto it = l.fixed.find(name); it != l.fixed.end() && fits(d, *it))
    value = d.param.type == ParamType::kInt     ? nlohmann::json(it->get<std::int64_t>())
            : d.param.type == ParamType::kFloat ? nlohmann::json(it->get<double>())  // 1 enqueued for a float: 1.0
                                                : nlohmann::json(*it);
  else if (single_value(d))
    value = d.param.type == ParamType::kCategorical ? d.param.choices.front() : from_model(d, 0);
  else if (std::find(l.proposed.begin(), l.proposed.end(), d) != l.proposed.end())
    value = l.proposal[name];  // proposed at ask() with the parameters every finished trial had
  else
    value = independent_value(number, d);
  r.config[name] = value;
  own.push_back(d);
  // Stored a second later by the heartbeat thread (with the others asked meanwhile), so that a trial
  // whose process dies keeps its parameters, and one that ends sooner costs no write (Optuna writes each).
  if (!l.params_due) {
    l.params_due = std::chrono::steady_clock::now() + kParamsDelay;
    wake_heartbeat_.notify_all();
  }
  return value;
}

AskTellStudy::Live& AskTellStudy::live(int number) {
  const auto it = live_.find(number);
  if (it == live_.end())
    throw Error(fmt::format("study '{}': trial {} is not running (never asked, or already told how it ended)",
                            options_.name, number));
  return it->second;
}

void AskTellStudy::set_user_attr(int number, const std::string& key, const nlohmann::ordered_json& value) {
  std::lock_guard lock(mutex_);
  live(number).user_attrs[key] = value;
}

nlohmann::ordered_json AskTellStudy::user_attrs(int number) {
  std::lock_guard lock(mutex_);
  return live(number).user_attrs;
}

std::size_t AskTellStudy::running() const {
  std::lock_guard lock(mutex_);
  return live_.size();
}

bool AskTellStudy::report(int number, std::int64_t step, double value) {
  std::lock_guard lock(mutex_);
  Live& l = live(number);
  if (!options_.objectives.empty())
    throw Error(fmt::format("trial {}: report: a study of several objectives has no learning curve to judge; tell all "
                            "the values at the trial's end (as in Optuna)",
                            number));
  if (!std::isfinite(value))
    throw Error(fmt::format("trial {}: report: {} {} at step {} is not a finite number", number, options_.objective,
                            value, step));
  if (step < 0) throw Error(fmt::format("trial {}: report: step {} must be >= 0", number, step));
  TrialRecord& r = records_[l.record];
  // A step reported again is ignored (Optuna's rule); one before the last is kept in its place (a
  // program may report in any order), and only steps after the last time the steps between.
  const auto at = std::lower_bound(r.curve.begin(), r.curve.end(), step,
                                   [](const IntermediateValue& v, std::int64_t s) { return v.step < s; });
  if (at != r.curve.end() && at->step == step) return false;
  // Stored in step order too, so that a resumed study reads the same curve (record_of).
  const auto later = std::find_if(l.output.metrics.begin(), l.output.metrics.end(), [&](const trial::MetricReport& m) {
    return m.name == options_.objective && m.step && *m.step > step;
  });
  l.output.metrics.insert(later, {options_.objective, value, step, std::nullopt});
  r.curve.insert(at, {step, value});
  if (!l.last_step || step > *l.last_step) {
    const auto now = std::chrono::steady_clock::now();
    const double elapsed = std::chrono::duration<double>(now - l.last_report).count();
    const std::int64_t advanced = l.last_step ? step - *l.last_step : step + 1;
    l.output.steps.push_back({step, elapsed / static_cast<double>(advanced)});
    l.last_report = now;
    l.last_step = step;
    r.resource = step + 1;
  }
  return true;
}

void AskTellStudy::report_metric(int number, const std::string& name, double value, std::optional<std::int64_t> step) {
  std::lock_guard lock(mutex_);
  Live& l = live(number);
  if (name.empty()) throw Error(fmt::format("trial {}: a metric needs a name", number));
  if (name == options_.objective)
    throw Error(fmt::format("trial {}: '{}' is the objective: report it with report(value, step)", number, name));
  if (std::find(options_.objectives.begin(), options_.objectives.end(), name) != options_.objectives.end())
    throw Error(fmt::format("trial {}: '{}' is one of the objectives: tell its value at the trial's end", number, name));
  if (!std::isfinite(value)) throw Error(fmt::format("trial {}: metric {} = {} is not a finite number", number, name, value));
  l.output.metrics.push_back({name, value, step ? step : l.last_step, std::nullopt});
}

bool AskTellStudy::should_prune(int number) {
  std::lock_guard lock(mutex_);
  Live& l = live(number);
  if (!options_.objectives.empty())
    throw Error(fmt::format("trial {}: should_prune: a study of several objectives is not pruned (pruning needs one "
                            "objective, as in Optuna)",
                            number));
  const TrialRecord& r = records_[l.record];
  if (r.curve.empty()) return false;
  if (define_by_run() && pruner_.judges_rungs()) {
    // Once per rung reached (reports between rungs do not change the verdict).
    const int rung = pruner_.rung_of(r.resource, r.bracket);
    if (rung > l.judged_rung) {
      l.judged_rung = rung;
      if (!pruner_.keep_running_at_rung(r, records_)) l.prune_said = true;
    }
    return l.prune_said;
  }
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
      if (!options_.objectives.empty()) {
        tell_values(r, end.values, result, outcome);
        break;
      }
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
  nlohmann::ordered_json state = nlohmann::ordered_json::object();
  if (define_by_run()) {
    // What the program asked for: its parameters and their distributions (resume reads them back).
    outcome.params_json = r.config.dump();
    nlohmann::ordered_json distributions = nlohmann::ordered_json::object();
    for (const Distribution& d : distributions_[number]) distributions[d.param.name] = to_json(d);
    state["distributions"] = std::move(distributions);
  }
  if (!l.user_attrs.empty()) state["user_attrs"] = l.user_attrs;
  if (r.bracket != 0) state["bracket"] = r.bracket;  // Hyperband's, read back by record_of
  if (!state.empty()) outcome.hpo_json = state.dump();
  const std::int64_t id = l.id;
  const std::size_t record = l.record;
  live_.erase(number);
  if (end.kind == TrialEnd::Kind::kInterrupted) {
    // Not information about the configuration: out of the sampler's view, asked again on resume.
    records_.erase(records_.begin() + static_cast<std::ptrdiff_t>(record));
    for (auto& [n, other] : live_)
      if (other.record > record) --other.record;
  }
  // Unless another process took it as dead (no heartbeat for heartbeat_timeout_s: this one was
  // stalled) and marked it interrupted: then its result is not written, and the stored trial says so.
  (void)store_.finish_own_trial(id, result, &outcome);
  store::StoredTrial stored = store_.trial(id);
  stored.metrics = std::move(result.output.metrics);  // what was just stored (trial() reads no metrics): its values
  return stored;
}

// A study of several objectives: each value stored as its objective's metric (at the last step
// reported, else 0), the first as the trial's objective; a wrong count or a value that is not finite
// fails the trial, saying so.
void AskTellStudy::tell_values(TrialRecord& r, const std::vector<double>& values, trial::TrialResult& result,
                               store::TrialOutcome& outcome) const {
  const std::size_t n = options_.objectives.size();
  std::string problem;
  if (values.size() != n)
    problem = fmt::format("it gave {} values for the study's {} objectives", values.size(), n);
  for (std::size_t i = 0; problem.empty() && i < n; ++i)
    if (!std::isfinite(values[i]))
      problem = fmt::format("its value of {} ({}) is not a finite number", options_.objectives[i], values[i]);
  if (!problem.empty()) {
    r.state = TrialRecord::State::kFailed;
    r.failure = trial::FailureKind::kCrashed;  // ran, but measured nothing usable
    result.status = trial::TrialStatus::kFailed;
    result.exit_code = -1;  // no exit of its own: a crash, not a refusal (trial/failure.h)
    outcome.status = "failed";
    outcome.reason = problem;
    return;
  }
  const std::int64_t step = result.output.steps.empty() ? 0 : result.output.steps.back().step;
  for (std::size_t i = 0; i < n; ++i)
    result.output.metrics.push_back({options_.objectives[i], values[i], step, std::nullopt});
  result.status = trial::TrialStatus::kCompleted;
  r.state = TrialRecord::State::kCompleted;
  r.values = values;
  r.value = values.front();
  outcome.status = "completed";
  outcome.objective = r.value;
}

std::vector<store::StoredTrial> AskTellStudy::trials() const {
  std::lock_guard lock(mutex_);
  return store_.trials(study_, true);
}

std::optional<store::StoredTrial> AskTellStudy::best() const {
  if (!options_.objectives.empty()) return std::nullopt;
  const std::vector<store::StoredTrial> all = trials();
  const std::optional<std::size_t> i = best_hpo_trial(all, options_.direction);
  if (!i) return std::nullopt;
  return all[*i];
}

std::vector<store::StoredTrial> AskTellStudy::front() const {
  std::vector<store::StoredTrial> out;
  if (options_.objectives.empty()) return out;
  const std::vector<store::StoredTrial> all = trials();
  for (const std::size_t i : pareto_front_trials(all, options_.objectives, options_.directions)) out.push_back(all[i]);
  return out;
}

}  // namespace paratune::hpo
