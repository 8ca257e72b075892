// `paratune tune`: run real trials over a search space and find the fastest configuration -- or,
// for a hyperparameter study (hpo_tune.cc), the best training hyperparameters -- in one path: the
// flags make a study of either kind (hpo_tune.h TuneStudy), which the one loop runs.
#include <fmt/format.h>

#include <algorithm>
#include <iostream>
#include <memory>
#include <optional>

#include "commands.h"
#include "duration_flag.h"
#include "hpo_tune.h"
#include "new_study_file.h"
#include "output.h"
#include "paratune/hpo/pruner.h"
#include "paratune/hpo/sampler.h"
#include "paratune/hpo/study.h"
#include "paratune/hpo/retrain.h"
#include "paratune/hpo/surrogate.h"
#include "paratune/plan/space.h"
#include "paratune/report/hpo_report.h"
#include "paratune/report/tune_report.h"
#include "paratune/spec/error.h"
#include "paratune/spec/io.h"
#include "paratune/store/study_store.h"
#include "paratune/tune/bayes.h"
#include "paratune/tune/derived_space.h"
#include "paratune/tune/study.h"
#include "paratune/tune/surrogate.h"
#include "setup_flags.h"
#include "stop_signal.h"
#include "study_console.h"
#include "trial_backend.h"
#include "tune_flags.h"
#include "tune_options.h"

namespace paratune::cli {
namespace {

// The space searched: the configurations the planner's model says fit (--model, narrowed by
// --fix/--allow/--max), or the --space file (unless is_hpo_study read it), into `space`. Returns the
// configurations the planner enumerated (tune::SpaceSize::planned_points; 0 for a file).
std::uint64_t read_space(const SetupFlags& setup, const TuneFlags& f, std::optional<hpo::Space>& space) {
  const bool derived = f.space_path.empty();
  const bool has_model = !setup.model.empty();
  if (has_model && (setup.cluster.empty() || setup.seq_len == 0 || setup.global_batch == 0))
    throw Error("tune: --model needs --cluster, --seq-len and --global-batch too");
  if (derived && !has_model)
    throw Error("tune: give --space FILE, or --model, --cluster, --seq-len and --global-batch to search the "
                "configurations the planner's model says fit");
  if (!setup.profile.empty() && !has_model)
    throw Error("--profile: a hardware profile prices the cost model's predictions (the derived space, the oppa and "
                "costmodel prior); give --model, --cluster, --seq-len and --global-batch with it");
  if (!derived && (!f.fix.empty() || !f.allow.empty() || !f.max.empty()))
    throw Error("tune: --fix/--allow/--max narrow the space derived from --model; with --space FILE, edit the file");
  if (!derived) {
    if (!space) space = hpo::Space::load(f.space_path);
    return 0;
  }
  plan::SearchSpace axes;
  for (const std::string& text : f.fix) plan::add_constraints(axes, text, plan::ConstraintKind::kFix, "--fix");
  for (const std::string& text : f.allow) plan::add_constraints(axes, text, plan::ConstraintKind::kAllow, "--allow");
  for (const std::string& text : f.max) plan::add_constraints(axes, text, plan::ConstraintKind::kMax, "--max");
  const ModelSpec model = load_model(setup.model);
  const ClusterSpec cluster = load_cluster(setup.cluster);
  const TrainingSpec training = training_from(setup);
  const std::optional<HardwareProfile> profile = profile_from(setup, model, cluster, training);
  tune::DerivedSpace planned =
      tune::derive_space(model, cluster, training, axes, calibration_from(setup), estimate_options(setup, profile));
  space = std::move(planned.space);
  return planned.candidates;
}

tune::Algorithm algorithm_from(const TuneFlags& f) {
  try {
    return tune::parse_algorithm(f.algo);
  } catch (const Error& e) {
    throw e.with_context("--algo");
  }
}

// The search over the space, and what the study's first line says of its prior and first designs.
struct Search {
  std::unique_ptr<hpo::Sampler> sampler;
  std::string prior_line;
};

// --algo grid | random: a search in a fixed order.
Search ordered_search(tune::Algorithm algo, const TuneFlags& f, const hpo::Space& space, const tune::SearchSpace& view) {
  if (f.seed_from_plan)
    throw Error(fmt::format("--{}seed-from-plan: belongs to --algo oppa and costmodel, not {}",
                            *f.seed_from_plan ? "" : "no-", f.algo));
  tune::BayesOptions order;
  order.algorithm = algo;
  order.seed = f.seed;
  const std::size_t max_trials = static_cast<std::size_t>(std::max(0, f.max_trials));
  Search search;
  search.sampler = tune::make_configuration_sampler(space, view, std::nullopt, order, max_trials);
  const std::size_t points = view.enumerate().size();
  if (algo == tune::Algorithm::kGrid && f.max_trials > 0 && static_cast<std::size_t>(f.max_trials) < points)
    std::cerr << fmt::format("paratune tune: grid: --max-trials {} covers {} of the {} valid points{}\n", f.max_trials,
                             f.max_trials, points,
                             view.is_listed() ? ", the first in the space's own order (fastest predicted first)"
                                              : ", spread evenly over the grid");
  return search;
}

// --algo bo | xgboost | costmodel | oppa: a search guided by a model of the measured trials, with the
// cost model's predictions as its prior where --model is given.
Search model_search(tune::Algorithm algo, const SetupFlags& setup, const TuneFlags& f, const hpo::Space& space,
                    const tune::SearchSpace& view, const hpo::HpoOptions& options) {
  const bool has_model = !setup.model.empty();
  Search search;
  tune::BayesOptions bayes;
  bayes.algorithm = algo;
  bayes.steps = options.steps;
  bayes.initial_points = f.initial;
  bayes.seed = f.seed;
  bayes.memory_limit_bytes = options.limits.memory_limit_bytes;
  tune::validate(bayes);
  std::optional<tune::Prior> prior;
  if (has_model) {
    const ClusterSpec cluster = load_cluster(setup.cluster);
    // The model's memory limit when none is given: what one GPU has.
    if (bayes.memory_limit_bytes <= 0) bayes.memory_limit_bytes = cluster.gpu.memory_bytes;
    if (algo == tune::Algorithm::kOppa || algo == tune::Algorithm::kCostModel) {
      const ModelSpec model = load_model(setup.model);
      const TrainingSpec training = training_from(setup);
      const std::optional<HardwareProfile> profile = profile_from(setup, model, cluster, training);
      prior = tune::cost_model_prior(view, model, cluster, training, calibration_from(setup),
                                     estimate_options(setup, profile));
    }
  }
  // Seeding ranks points by the cost-model prior, which only oppa and costmodel have.
  const bool ranks_by_prior = algo == tune::Algorithm::kOppa || algo == tune::Algorithm::kCostModel;
  bayes.seed_from_prior = f.seed_from_plan.value_or(has_model && ranks_by_prior);
  if (bayes.seed_from_prior && !has_model)
    throw Error("--seed-from-plan: needs --model, --cluster, --seq-len and --global-batch (the plan's predictions)");
  if (bayes.seed_from_prior && !ranks_by_prior)
    throw Error(fmt::format("--seed-from-plan: --algo {} has no cost-model prior to rank points by (use oppa or "
                            "costmodel)", f.algo));
  if (prior)
    search.prior_line = fmt::format(
        "; prior: paratune's cost model{}{}{}", setup.profile.empty() ? "" : " with hardware profile " + setup.profile,
        prior->kernel_only.empty() ? "" : fmt::format(" (kernel only: {})", fmt::join(prior->kernel_only, ", ")),
        prior->unmapped_points ? fmt::format(", {} points the model rejects", prior->unmapped_points) : "");
  else if (ranks_by_prior)
    search.prior_line = "; prior: OPPA's App. D forms (no --model)";
  const int seeded = (bayes.initial_points + 1) / 2;  // bayes.cc: half of the initial designs, rounded up
  search.prior_line += bayes.seed_from_prior
                           ? fmt::format("; first {}: the plan's best predictions (--seed-from-plan)",
                                         seeded == 1 ? "design" : fmt::format("{} designs", seeded))
                           : "; first designs: random";
  search.sampler = tune::make_configuration_sampler(space, view, std::move(prior), bayes,
                                                    static_cast<std::size_t>(std::max(0, f.max_trials)));
  return search;
}

// The configuration study of the flags: a search of the space's configurations for throughput.
TuneStudy configuration_study_from(const SetupFlags& setup, const TuneFlags& f, std::optional<hpo::Space>& space) {
  refuse_flags(f, {"--direction", "--retrain", "--retrain-steps", "--retrain-top", "--retrain-budget"},
               "belongs to hyperparameter studies (--objective METRIC, --algo tpe|gp|cmaes|nsga2 or a typed space); this study "
               "searches parallel configurations for throughput");
  const tune::Algorithm algo = algorithm_from(f);
  const std::uint64_t planned = read_space(setup, f, space);
  TuneStudy study;
  study.view = std::make_unique<tune::SearchSpace>(tune::SearchSpace::of(*space));
  const tune::SearchSpace& view = *study.view;  // the configurations as the searches index them
  study.options = study_options_from(f);  // the throughput objective
  hpo::validate(study.options);
  // --algo oppa has its own early termination, which --pruner replaces.
  StudyPruner pruner = pruner_from(f, algo == tune::Algorithm::kOppa ? hpo::PrunerKind::kOppa : hpo::PrunerKind::kNone,
                                   study.options.steps, hpo::Direction::kMaximize);
  Search search = algo == tune::Algorithm::kGrid || algo == tune::Algorithm::kRandom
                      ? ordered_search(algo, f, *space, view)
                      : model_search(algo, setup, f, *space, view, study.options);
  if (pruner.pruner->name() != "none") search.prior_line += "; pruner " + pruner.pruner->name();
  study.options.identity =
      tune::configuration_identity(view, study.options, pruner.stated ? pruner.pruner.get() : nullptr);
  study.size = tune::space_size(view);
  study.size->planned_points = planned;  // the loop sees the listed configurations only, not how they were derived
  study.head = fmt::format("{}, {} search{}, {} steps per trial", format_space_size(*study.size), f.algo,
                           search.prior_line, study.options.steps);
  study.sampler = std::move(search.sampler);
  study.pruner = std::move(pruner.pruner);
  return study;
}

// `paratune tune`: run real trials over a search space -- the fastest configuration, or the best
// training hyperparameters -- in the one study loop (hpo::run_hpo). Exit codes: 0 done with a best
// trial (several objectives: a Pareto front), 1 every retrain failed, 3 no trial completed, 128 + signal when interrupted.
int run_tune(const SetupFlags& setup, const TuneFlags& f, bool json) {
  if (!f.worker) refuse_flags(f, {"--worker-name", "--heartbeat", "--heartbeat-timeout"}, "belongs to --worker");
  std::optional<hpo::Space> space;  // read once, by whichever step first needs it
  TuneStudy study = is_hpo_study(f, space) ? hpo_study_from(setup, f, space) : configuration_study_from(setup, f, space);
  const hpo::HpoOptions& options = study.options;
  const std::unique_ptr<trial::Backend> backend = backend_from(f);
  const NewStudyFile new_file(f.study_path, f.worker);
  const std::unique_ptr<store::StudyStore> store =
      store::open_store(f.study_path, store::Access::kReadWrite, store_retry_from(f));
  if (!f.worker_name.empty()) store->set_worker_name(f.worker_name);

  std::cerr << fmt::format("paratune tune: {}, {}{}; study {} ('{}'){}, trials in {}\n", study.head,
                           slots_line(*backend), study.per_trial, store->locator(), options.name,
                           f.worker ? fmt::format(" as worker {}", store->worker_name()) : "",
                           options.trials_dir.string());
  // As Python's tune() warns (and Optuna's optimize() without n_trials or timeout behaves): with
  // neither limit a sampler such as TPE proposes forever, so say so before the first trial. A
  // configuration study's space is finite.
  if (!study.size && options.max_trials <= 0 && options.budget_s <= 0)
    std::cerr << "paratune tune: warning: no --max-trials/--budget: trials run until the grid's end or Ctrl-C\n";
  install_stop_handlers();
  hpo::HpoSummary summary;
  {
    ConsoleObserver observer(study.size ? study.size->valid_points : 0, options.max_trials, options.budget_s);
    summary = hpo::run_hpo(*space, options, *store, *backend, *study.sampler, *study.pruner, observer, g_stop_signal);
  }
  summary.space = study.size;
  if (!json) std::cout << format_study(summary) << std::flush;  // before the retrain, which may take long
  std::optional<hpo::Transfer> transfer;
  if (options.surrogate_ratio != 1 && summary.best) {
    transfer = hpo::transfer_to_target(*space, options, hpo::Config::parse(summary.trials[*summary.best].params_json));
    if (!json) std::cout << "\n" << format_transfer(*transfer) << std::flush;
  }
  // --retrain / --retrain-top: the best configurations trained again (a surrogate study's at the
  // target's width) and the best of them there chosen (hpo/retrain.h).
  std::optional<hpo::Reevaluation> reevaluation;
  if (study.retrain && summary.best && summary.stop != tune::StopReason::kInterrupted) {
    const int steps = f.retrain_steps.value_or(options.steps);
    std::cerr << fmt::format("paratune tune: retraining the {} for {} steps{}\n",
                             study.retrain->automatic ? "best configurations (--retrain-top auto)"
                             : study.retrain->k == 1  ? fmt::format("best configuration (trial {})",
                                                                    summary.trials[*summary.best].number)
                                                      : fmt::format("{} best configurations", study.retrain->k),
                             steps, transfer ? " at the target's width" : "");
    reevaluation = hpo::reevaluate_top(*space, options, summary.trials, steps, *study.retrain, *store, *backend,
                                       g_stop_signal);
  }
  // The retrain a single result stands for: the one chosen, else (all failed) the first.
  const hpo::RetrainResult* retrained = nullptr;
  if (reevaluation && !reevaluation->runs.empty())
    retrained = &reevaluation->runs[reevaluation->chosen.value_or(0)];
  const bool several = study.retrain && (study.retrain->automatic || study.retrain->k > 1);
  const bool none_chosen = reevaluation && !reevaluation->chosen && g_stop_signal.load() == 0;
  if (none_chosen)  // before the result, so that --json's document ends the output
    std::cerr << fmt::format("paratune tune: {}\n", hpo::no_choice_message(*reevaluation, options.objective));
  if (json) {
    nlohmann::ordered_json j = to_json(summary);
    if (transfer) j["transfer"] = to_json(*transfer);
    if (retrained) j["retrain"] = to_json(*retrained);
    if (reevaluation) j["reevaluation"] = to_json(*reevaluation, options.objective);
    write_json(j);
  } else if (retrained) {
    if (several) std::cout << "\n" << format_reevaluation(*reevaluation, options.objective);
    std::cout << "\n" << format_retrain(*retrained);
  }
  if (summary.stop == tune::StopReason::kInterrupted || g_stop_signal.load() != 0) return 128 + g_stop_signal.load();
  if (none_chosen) return 1;
  return summary.best || !summary.front.empty() ? 0 : 3;  // several objectives: a front
}

}  // namespace

void add_tune_command(CLI::App& app, Commands& commands) {
  const auto flags = std::make_shared<SetupCommandFlags<TuneFlags>>();
  auto* tune_cmd = app.add_subcommand(
      "tune", "run real training trials over a search space and find the fastest configuration");
  add_tune_flags(tune_cmd, flags->setup, flags->own);
  tune_cmd->add_flag("--json", flags->json, "machine-readable result on stdout (progress stays on stderr)");
  const auto run = [tune_cmd, flags] {
    record_given_flags(*tune_cmd, flags->own);
    return run_tune(flags->setup, flags->own, flags->json);
  };
  commands.push_back({tune_cmd, run});
}

}  // namespace paratune::cli
