// Hyperparameter studies: options, identity, stored trials as records, rendering a run's command, and
// the checks run_hpo makes before the controller (controller.cc) starts.
#include "paratune/hpo/study.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <deque>
#include <limits>
#include <map>
#include <set>

#include "paratune/hpo/fusion.h"
#include "paratune/hpo/pareto.h"
#include "paratune/hpo/surrogate.h"
#include "paratune/hpo/trainer_program.h"
#include "paratune/spec/error.h"
#include "paratune/spec/option_error.h"
#include "paratune/trial/command.h"
#include "paratune/tune/study_common.h"
#include "controller.h"
#include "trial_state.h"

namespace paratune::hpo {
namespace {

bool is_throughput(const HpoOptions& o) { return o.objective == kThroughputObjective; }

// Several objectives: one direction each, the first of them `objective`, each named once; what
// needs one objective (the surrogate's transfer and fusion's choice are of the best trial) refused.
void validate_objectives(const HpoOptions& o) {
  if (o.objectives.empty() && o.directions.empty()) return;
  const auto list = [](const auto& items, const auto& word) {
    std::string out;
    for (const auto& i : items) out += (out.empty() ? "" : ",") + std::string(word(i));
    return out;
  };
  const std::string names = list(o.objectives, [](const std::string& n) { return n; });
  const std::string directions = list(o.directions, [](Direction d) { return to_string(d); });
  if (o.objectives.size() < 2)
    throw OptionError("objectives", names, "a study of several objectives names two or more; one objective is "
                                           + option_ref("objective") + " alone");
  if (o.directions.size() != o.objectives.size())
    throw OptionError("directions", directions,
                      fmt::format("needs one direction per objective: {} objectives ({}), {} directions",
                                  o.objectives.size(), names, o.directions.size()));
  if (o.objectives.front() != o.objective || o.directions.front() != o.direction)
    throw OptionError("objective", o.objective,
                      fmt::format("must be the first of {} ({}) with its direction", option_ref("objectives"), names));
  for (std::size_t i = 0; i < o.objectives.size(); ++i) {
    if (o.objectives[i].empty())
      throw OptionError("objectives", names, fmt::format("objective {} is empty: each names a metric, or throughput", i + 1));
    if (std::find(o.objectives.begin(), o.objectives.begin() + static_cast<std::ptrdiff_t>(i), o.objectives[i]) !=
        o.objectives.begin() + static_cast<std::ptrdiff_t>(i))
      throw OptionError("objectives", names, fmt::format("'{}' is named twice", o.objectives[i]));
    if (o.objectives[i] == kThroughputObjective && o.directions[i] != Direction::kMaximize)
      throw OptionError("directions", directions,
                        fmt::format("objective {} is throughput, which is maximized", i + 1));
  }
  if (o.surrogate_ratio != 1)
    throw OptionError("surrogate_ratio", fmt::format("{}", o.surrogate_ratio),
                      "a surrogate study transfers its best trial to the target, and a study of several objectives "
                      "has a front, not one best: give one objective");
  if (o.fuse > 1 || o.fuse_auto)
    throw OptionError("fuse", o.fuse_auto ? "auto" : std::to_string(o.fuse),
                      "fusion trains trials of one objective; a study of several objectives runs each trial alone");
}

// Better in the study's direction (a tie keeps the earlier).
bool better(Direction direction, double a, double b) { return as_loss(direction, a) < as_loss(direction, b); }

}  // namespace

ObjectiveValues objective_values(const std::vector<trial::MetricReport>& metrics, std::optional<double> throughput,
                                 const std::vector<std::string>& objectives) {
  ObjectiveValues out;
  for (const std::string& name : objectives) {
    // NaN stands for "not reported" (a plain double: GCC 12 at -O3 warns on an optional here).
    double value = std::numeric_limits<double>::quiet_NaN();
    if (name == kThroughputObjective)
      value = throughput.value_or(value);
    else
      for (const trial::MetricReport& m : metrics)
        if (m.name == name) value = m.value;  // the last one reported
    if (!std::isfinite(value)) {
      out.missing = name;
      return out;
    }
    out.values.push_back(value);
  }
  return out;
}

std::optional<std::vector<double>> trial_values(const store::StoredTrial& trial,
                                                const std::vector<std::string>& objectives) {
  if (trial.status != "completed") return std::nullopt;
  ObjectiveValues v = objective_values(trial.metrics, trial.throughput, objectives);
  if (!v.missing.empty()) return std::nullopt;
  return std::move(v.values);
}

std::vector<std::size_t> pareto_front_trials(const std::vector<store::StoredTrial>& trials,
                                             const std::vector<std::string>& objectives,
                                             const std::vector<Direction>& directions) {
  std::vector<std::size_t> valued;  // indices into trials
  std::vector<pareto::Losses> points;
  for (std::size_t i = 0; i < trials.size(); ++i)
    if (const std::optional<std::vector<double>> v = trial_values(trials[i], objectives)) {
      valued.push_back(i);
      points.push_back(pareto::losses_of(*v, directions));
    }
  std::vector<std::size_t> front;
  for (const std::size_t k : pareto::pareto_front(points)) front.push_back(k);
  std::stable_sort(front.begin(), front.end(), [&](std::size_t a, std::size_t b) {
    return points[a][0] < points[b][0];  // the first objective's loss; pareto_front keeps number order on a tie
  });
  for (std::size_t& k : front) k = valued[k];
  return front;
}

TrialRecord record_of(const store::StoredTrial& t, const std::string& objective,
                      const std::vector<std::string>& objectives) {
  TrialRecord r;
  r.number = t.number;
  r.config = Config::parse(t.params_json);
  r.state = state_of(t.status);
  r.bracket = parse_state(t.hpo_json).bracket;
  r.rung = t.rung.value_or(-1);
  r.resource = t.steps;
  r.failure = failure_of(t.status, t.exit_code, t.exit_signal, t.steps);
  r.peak_memory_bytes = t.peak_memory_bytes;
  if (!t.step_times_s.empty()) {
    r.measured = trial::estimate_throughput(t.step_times_s);
  } else if (t.throughput) {  // read without its steps: what was stored of the estimate
    r.measured.steps_per_s = *t.throughput;
    r.measured.variance = t.throughput_variance;
    r.measured.ci95_low = t.throughput_ci_low;
    r.measured.ci95_high = t.throughput_ci_high;
    const double se = (t.throughput_ci_high - t.throughput_ci_low) / (2 * 1.96);
    r.measured.standard_error = se;
    // standard_error = sqrt(variance / steps_used) (trial/measurement.h), so the steps it used are
    // variance / se^2; at least one, since a throughput was stored.
    r.measured.steps_used = se > 0 ? std::max(1, static_cast<int>(std::lround(t.throughput_variance / (se * se)))) : 1;
  }
  if (objective == kThroughputObjective) {
    r.curve = throughput_curve(t.step_times_s);
    if (r.state == TrialRecord::State::kCompleted) r.value = t.throughput;
  } else {
    for (const trial::MetricReport& m : t.metrics)
      if (m.name == objective) r.curve.push_back({m.step.value_or(0), m.value});
    if (r.state == TrialRecord::State::kCompleted) r.value = t.objective;
  }
  if (!objectives.empty() && r.state == TrialRecord::State::kCompleted) {
    if (std::optional<std::vector<double>> values = trial_values(t, objectives)) {
      r.values = std::move(*values);
      r.value = r.values.front();
    } else {  // the samplers of several objectives need every value of a completed trial
      r.state = TrialRecord::State::kFailed;
      r.failure = trial::FailureKind::kCrashed;
      r.value.reset();
    }
  }
  return r;
}

namespace {

// {gpus}: the product of the parallel degrees dp, tp, pp and cp the configuration has (1 if none).
std::string gpus_word(const Config& config) {
  long long gpus = 1;
  for (const char* axis : {"dp", "tp", "pp", "cp"})
    if (const auto it = config.find(axis); it != config.end() && it->is_number_integer()) gpus *= it->get<long long>();
  return std::to_string(gpus);
}

}  // namespace

int ranks_of(const HpoOptions& options, const Config& config) {
  const auto it = config.find("ranks");
  return it != config.end() && it->is_number_integer() ? it->get<int>() : options.trial_ranks;
}

trial::TrialLaunch render_run(const Space& space, const HpoOptions& options, const Config& config, const std::string& id,
                              const std::filesystem::path& dir, int max_steps, int horizon_steps,
                              const std::string& strategy) {
  std::set<std::string> known;
  for (const ParamSpec& p : space.parameters())
    if (p.when.empty()) known.insert(p.name);
  for (const std::string& b : hpo_placeholders()) known.insert(b);
  const trial::CommandTemplate command(options.command, known);
  trial::TrialLaunch launch;
  launch.id = id;
  launch.dir = dir;
  launch.params_json = trial_params(options, config).dump();
  launch.max_steps = max_steps;
  launch.limits = options.limits;
  launch.slots = ranks_of(options, config);
  std::map<std::string, std::string> values;
  for (const auto& [name, value] : config.items()) values[name] = tune::word(value);
  values.emplace("gpus", gpus_word(config));  // a parameter named gpus is the GPU count itself
  values["config"] = config_word(config);
  values["steps"] = std::to_string(horizon_steps);
  values["ranks"] = std::to_string(launch.slots);
  values["strategy"] = strategy;
  values["trial_id"] = id;
  values["trial_dir"] = dir.string();
  launch.argv = command.render(values);
  return launch;
}

const TrainerProgram* trainer_of(const HpoOptions& options) {
  return options.trainer ? options.trainer : trainer_for(options.command);
}

const std::vector<std::string>& trial_strategies() {
  static const std::vector<std::string> names{"none", "dp", "mp", "gpipe", "dp+gpipe", kAutoStrategy};
  return names;
}

void validate(const HpoOptions& o) {
  tune::validate_study_name(o.name);
  if (o.command.empty()) throw OptionError("command", "", "a command template is required");
  if (o.steps < 1) throw OptionError("steps", std::to_string(o.steps), "must be >= 1");
  if ((is_throughput(o) || std::find(o.objectives.begin(), o.objectives.end(), kThroughputObjective) != o.objectives.end()) &&
      o.steps < 2)
    throw OptionError("steps", std::to_string(o.steps),
                      "must be >= 2 (the first step is dropped as warm-up)");  // of the throughput objective
  if (o.objective.empty()) throw OptionError("objective", "", "must name a metric the trials report, or throughput");
  if (is_throughput(o) && o.direction != Direction::kMaximize)
    throw OptionError("direction", to_string(o.direction), "the throughput objective is maximized");
  validate_objectives(o);
  if (o.max_trials < 0) throw OptionError("max_trials", std::to_string(o.max_trials), "must be >= 0 (0: no limit)");
  tune::validate_limits(o.limits, o.budget_s);
  tune::validate_trials_dir(o.trials_dir);
  if (o.trial_ranks < 1) throw OptionError("trial_ranks", std::to_string(o.trial_ranks), "must be >= 1");
  if (!o.strategy.empty() &&
      std::find(trial_strategies().begin(), trial_strategies().end(), o.strategy) == trial_strategies().end())
    throw OptionError("strategy", "", unknown_name_message("strategy", o.strategy, trial_strategies()));
  tune::validate_worker(o.worker, o.retry_failed);
  if (o.worker.enabled && (o.fuse > 1 || o.fuse_auto))
    throw OptionError("fuse", o.fuse_auto ? "auto" : std::to_string(o.fuse),
                      fmt::format("not with {}: a fused group is formed of several proposals outside one claim; run "
                                  "workers with fuse 1",
                                  option_ref("worker.enabled")));
  if (o.worker.enabled && o.strategy == kAutoStrategy)
    throw OptionError("strategy", o.strategy,
                      fmt::format("not with {}: auto may measure a profile for minutes while the study is locked for "
                                  "its claim; give the strategy (none, dp, mp, gpipe, dp+gpipe)",
                                  option_ref("worker.enabled")));
  validate_surrogate(o);
  validate_fusion(o);
  if (o.serve && o.worker.enabled)
    throw OptionError("serve", "", fmt::format("not with {}: a worker's promotion is claimed from the store, not from "
                                               "the process that keeps it; run workers without serve",
                                               option_ref("worker.enabled")));
  if (o.serve && (o.fuse > 1 || o.fuse_auto))
    throw OptionError("serve", "", fmt::format("not with {}: a fused group runs in a process of its own",
                                               option_ref("fuse")));
}

std::vector<std::string> hpo_placeholders() {
  return {"gpus", "config", "steps", "ranks", "strategy", "trial_id", "trial_dir"};
}

std::optional<double> trial_value(const store::StoredTrial& trial) {
  return trial.objective ? trial.objective : trial.throughput;
}

std::optional<std::size_t> best_hpo_trial(const std::vector<store::StoredTrial>& trials, Direction direction) {
  std::optional<std::size_t> best;
  for (std::size_t i = 0; i < trials.size(); ++i) {
    const std::optional<double> value = trial_value(trials[i]);
    if (trials[i].status == "completed" && value && std::isfinite(*value) &&
        (!best || better(direction, *value, *trial_value(trials[*best]))))
      best = i;
  }
  return best;
}

nlohmann::ordered_json hpo_identity(const Space& space, const HpoOptions& options, const Pruner& pruner) {
  nlohmann::ordered_json identity{{"kind", "hpo"},
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
  // Only where set, so the studies stored before it existed keep their identity.
  if (options.surrogate_ratio != 1) identity["surrogate_ratio"] = options.surrogate_ratio;
  if (many_objectives(options)) {
    identity["objectives"] = options.objectives;
    nlohmann::ordered_json directions = nlohmann::ordered_json::array();
    for (const Direction d : options.directions) directions.push_back(to_string(d));
    identity["directions"] = std::move(directions);
  }
  return identity;
}

namespace {

// A conditional parameter used as a placeholder has no value where it is inactive.
std::string hpo_placeholder_meaning(const std::string& name) {
  if (name == "gpus") return "the product of the parameters dp, tp, pp and cp";
  if (name == "config") return "every parameter as name=value, joined by commas";
  if (name == "steps") return "the trial's step budget";
  if (name == "ranks") return "the trial's rank count";
  if (name == "strategy") return "the trial's parallel strategy";
  if (name == "trial_id") return "the trial's id";
  return "the trial's directory";
}

// Serving: one process runs many trials, so its command may not carry a trial's own values, and
// the backend must talk to it (trial/runner.h).
void check_serve(const Space& space, const HpoOptions& options, const trial::Backend& backend) {
  if (!options.serve) return;
  if (!backend.can_serve())
    throw OptionError("serve", "", fmt::format("the {} backend runs each trial as a process of its own; serve with the "
                                               "local backend",
                                               backend.name()));
  const std::vector<std::string> builtins = hpo_placeholders();
  std::set<std::string> all(builtins.begin(), builtins.end());
  for (const ParamSpec& p : space.parameters()) all.insert(p.name);
  const trial::CommandTemplate parsed(options.command, all);
  for (const std::string& name : parsed.placeholders())
    if (name == "trial_id" || name == "trial_dir" || name == "config" ||
        (space.index_of(name) && name != "ranks" && name != "gpus"))
      throw OptionError("command", "",
                        fmt::format("names {{{}}}, a value of each trial, and with {} one process runs many trials: "
                                    "read it from the assignment (PARATUNE_PARAMS, PARATUNE_TRIAL_ID, "
                                    "PARATUNE_TRIAL_DIR) instead",
                                    name, option_ref("serve")));
}

void check_template_parameters(const Space& space, const HpoOptions& options) {
  // A parameter may not take the name of a placeholder paratune fills itself: its value would be
  // replaced silently. (`ranks` and `gpus` are the exceptions: a space may state the trial's rank
  // count, or the GPU count, which the placeholder then is.)
  for (const ParamSpec& p : space.parameters())
    for (const std::string& builtin : hpo_placeholders())
      if (p.name == builtin && builtin != "ranks" && builtin != "gpus")
        throw Error(fmt::format("{}: parameters.{}: '{}' is the name of a built-in placeholder ({{{}}}: {}); rename "
                                "the parameter",
                                space.source(), p.name, p.name, p.name, hpo_placeholder_meaning(builtin)));
  const std::string& command = options.command;
  std::set<std::string> all;
  for (const ParamSpec& p : space.parameters()) all.insert(p.name);
  for (const std::string& b : hpo_placeholders()) all.insert(b);
  const trial::CommandTemplate parsed(command, all);
  if (parsed.placeholders().contains("strategy") && options.strategy.empty())
    throw OptionError("command", "",
                      fmt::format("{{strategy}} needs {} (none, dp, mp, gpipe, dp+gpipe or auto)",
                                  option_ref("strategy")));
  if (!options.strategy.empty() && !parsed.placeholders().contains("strategy"))
    throw OptionError("strategy", options.strategy,
                      "the command does not use {strategy}, so the trials would not train that way");
  for (const ParamSpec& p : space.parameters())
    if (!p.when.empty() && parsed.placeholders().contains(p.name))
      throw OptionError("command", "",
                        fmt::format("{{{}}} is a conditional parameter (when: {}) and has no value where it is "
                                    "inactive; the trial program reads it from PARATUNE_PARAMS",
                                    p.name, p.when));
}

// Every trial must fit on the backend's slots (over ssh: one host's), or the study would wait forever.
void check_slots(const Space& space, const HpoOptions& options, const trial::Backend& backend) {
  const int most = backend.max_trial_slots();
  const std::string where = most < backend.slots() ? fmt::format("{} slots of the largest host", most)
                                                   : fmt::format("{} slots there are", most);
  if (options.trial_ranks > most)
    throw OptionError("trial_ranks", std::to_string(options.trial_ranks), fmt::format("more than the {}", where));
  const std::optional<std::size_t> ranks = space.index_of("ranks");
  if (!ranks) return;
  const ParamSpec& p = space.parameters()[*ranks];
  const auto too_many = [&](double v) { return v < 1 || v > most; };
  bool bad = p.type == ParamType::kFloat || (p.type == ParamType::kInt && (too_many(p.low) || too_many(p.high)));
  for (const nlohmann::json& c : p.choices) bad = bad || !c.is_number_integer() || too_many(c.get<double>());
  if (bad)
    throw Error(fmt::format("{}: parameters.ranks: each value must be an integer from 1 to the {}", space.source(), where));
}

}  // namespace

HpoSummary run_hpo(const Space& space, const HpoOptions& options, store::StudyStore& store,
                   const trial::Backend& backend, Sampler& sampler, Pruner& pruner, tune::StudyObserver& observer,
                   const std::atomic<int>& stop_requested) {
  validate(options);
  if (many_objectives(options) && pruner.name() != "none")
    throw OptionError("pruner", pruner.name(),
                      "stops trials by one objective's learning curve; a study of several objectives runs every trial "
                      "to its end (pruner none), as Optuna's pruners also need one objective");
  if (pruner.name() == "oppa" && !is_throughput(options))
    throw Error(fmt::format("pruner oppa: stops a trial by its throughput's confidence bound, and the objective is "
                            "'{}' (use median, percentile, asha or hyperband for a metric)",
                            options.objective));
  const std::unique_ptr<store::ControllerLock> lock =
      options.worker.enabled ? store.lock_worker(options.name) : store.lock_controller(options.name);
  check_template_parameters(space, options);
  check_surrogate_space(space, options);
  check_fusion_space(space, options);
  check_slots(space, options, backend);
  check_serve(space, options, backend);
  const trial::OutputParser check_regex(trial::ParserOptions{options.step_time_regex});  // Error before anything runs
  return run_controller(space, options, store, backend, sampler, pruner, observer, stop_requested);
}

}  // namespace paratune::hpo
