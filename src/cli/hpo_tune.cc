#include "hpo_tune.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <iostream>
#include <memory>
#include <optional>

#include "duration_flag.h"
#include "new_study_file.h"
#include "output.h"
#include "paratune/hpo/fusion.h"
#include "paratune/hpo/pruner.h"
#include "paratune/hpo/retrain.h"
#include "paratune/hpo/sampler.h"
#include "paratune/hpo/study.h"
#include "paratune/hpo/surrogate.h"
#include "paratune/report/hpo_report.h"
#include "paratune/spec/error.h"
#include "paratune/store/study_store.h"
#include "stop_signal.h"
#include "study_console.h"
#include "trial_backend.h"
#include "tune_options.h"

namespace paratune::cli {
namespace {

// Flags of the other kind of study, or of a pruner or an option not chosen: refused before anything
// is read.
void check_hpo_flags(const SetupFlags& setup, const TuneFlags& f) {
  if (f.worker && f.retrain)
    throw Error("--retrain with --worker: every worker would retrain the best trial when it ends; when the workers "
                "are done, run the same command once without --worker, with --retrain (a study at its --max-trials "
                "starts no new trial)");
  refuse_flags(f, {"--seed-from-plan", "--no-seed-from-plan"},
               "belongs to the model-based searches of parallel configurations (bo, xgboost, costmodel, oppa)");
  check_pruner_flags(f, f.pruner);
  if (!f.retrain) refuse_flags(f, {"--retrain-steps"}, "needs --retrain");
  if (f.space_path.empty())
    throw Error("tune: a hyperparameter study (--objective, --pruner, --algo tpe|gp|cmaes or typed parameters) needs "
                "--space FILE; --model derives a space of parallel configurations, searched for throughput");
  if (!setup.model.empty() || !f.fix.empty() || !f.allow.empty() || !f.max.empty())
    throw Error("tune: --model/--fix/--allow/--max derive a space of parallel configurations; a hyperparameter study "
                "searches its --space file");
}

// The study's options from the flags, checked (hpo::validate).
hpo::HpoOptions hpo_options_from(const TuneFlags& f) {
  if (f.direction.empty() && f.objective != hpo::kThroughputObjective)
    throw Error(fmt::format("--objective {}: give --direction minimize or maximize (e.g. minimize a loss, maximize "
                            "an accuracy)",
                            f.objective));
  hpo::Direction direction = hpo::Direction::kMaximize;
  try {
    if (!f.direction.empty()) direction = hpo::parse_direction(f.direction);
  } catch (const Error& e) {
    throw e.with_context("--direction");
  }
  hpo::HpoOptions options = study_options_from(f);
  options.objective = f.objective;
  options.direction = direction;
  options.trial_ranks = f.trial_ranks;
  options.strategy = f.strategy;
  options.surrogate_ratio = f.surrogate_ratio;
  if (f.fuse == "auto") {
    options.fuse_auto = true;
  } else if (!f.fuse.empty()) {
    int size = 0;
    const auto [end, ec] = std::from_chars(f.fuse.data(), f.fuse.data() + f.fuse.size(), size);
    if (ec != std::errc() || end != f.fuse.data() + f.fuse.size()) throw Error(fmt::format("--fuse {}: must be auto or a size from 1 to {}", f.fuse, hpo::kMaxFusedTrials));
    options.fuse = size;
  }
  hpo::validate(options);
  return options;
}

// --algo's sampler of the space.
std::unique_ptr<hpo::Sampler> hpo_sampler_from(const TuneFlags& f, const hpo::Space& space,
                                               const hpo::HpoOptions& options) {
  hpo::SamplerKind kind{};
  try {
    kind = hpo::parse_sampler(f.algo);
  } catch (const Error&) {
    throw Error(fmt::format("--algo {}: searches value lists of parallel configurations for throughput; a "
                            "hyperparameter study uses grid, random, tpe, gp or cmaes",
                            f.algo));
  }
  hpo::SamplerOptions sampler_options;
  sampler_options.direction = options.direction;
  sampler_options.seed = f.seed;
  sampler_options.startup_trials = f.given.contains("--initial") ? f.initial : -1;
  sampler_options.max_trials = static_cast<std::size_t>(std::max(0, f.max_trials));
  if (kind == hpo::SamplerKind::kGrid && space.finite() && f.max_trials > 0 &&
      static_cast<std::size_t>(f.max_trials) < space.enumerate().size())
    std::cerr << fmt::format("paratune tune: grid: --max-trials {} covers {} of the {} configurations, spread evenly "
                             "over the grid\n",
                             f.max_trials, f.max_trials, space.enumerate().size());
  return hpo::make_sampler(kind, space, sampler_options);
}

// --pruner, with its rungs or percentiles.
std::unique_ptr<hpo::Pruner> hpo_pruner_from(const TuneFlags& f, const hpo::HpoOptions& options) {
  const hpo::PrunerOptions pruner_options = pruner_options_from(f, options.steps, options.direction);
  hpo::PrunerKind pruner_kind{};
  try {
    pruner_kind = hpo::parse_pruner(f.pruner);
  } catch (const Error& e) {
    throw e.with_context("--pruner");
  }
  return hpo::make_pruner(pruner_kind, pruner_options);
}

}  // namespace

bool is_hpo_study(const TuneFlags& f) {
  if (f.objective != hpo::kThroughputObjective || f.algo == "tpe" || f.algo == "gp" || f.algo == "cmaes" || f.trial_ranks != 1 ||
      !f.strategy.empty() || f.given.contains("--surrogate-ratio") || f.given.contains("--fuse"))
    return true;
  if (f.algo != "grid" && f.algo != "random") return false;  // a model-based search of configurations
  if (f.pruner != "none") return true;
  if (f.space_path.empty()) return false;
  const hpo::Space space = hpo::Space::load(f.space_path);
  return std::any_of(space.parameters().begin(), space.parameters().end(), [](const hpo::ParamSpec& p) {
    return p.type != hpo::ParamType::kCategorical || !p.when.empty();
  });
}

int run_hpo_tune(const SetupFlags& setup, const TuneFlags& f, bool json) {
  check_hpo_flags(setup, f);
  const hpo::Space space = hpo::Space::load(f.space_path);
  const hpo::HpoOptions options = hpo_options_from(f);
  const std::unique_ptr<trial::Backend> backend_ptr = backend_from(f);
  const trial::Backend& backend = *backend_ptr;
  const std::unique_ptr<hpo::Sampler> sampler = hpo_sampler_from(f, space, options);
  const std::unique_ptr<hpo::Pruner> pruner = hpo_pruner_from(f, options);
  const NewStudyFile new_file(f.study_path, f.worker);
  const std::unique_ptr<store::StudyStore> store =
      store::open_store(f.study_path, store::Access::kReadWrite, store_retry_from(f));
  if (!f.worker_name.empty()) store->set_worker_name(f.worker_name);

  std::cerr << fmt::format("paratune tune: {} hyperparameters, {} sampler, {} pruner, objective {} ({}), up to {} "
                           "steps per trial, {}, {} per trial{}; study {} ('{}'){}, trials in {}\n",
                           space.size(), sampler->name(), pruner->name(), options.objective,
                           hpo::to_string(options.direction), options.steps, slots_line(backend), options.trial_ranks,
                           options.strategy.empty() ? "" : " (" + options.strategy + ")", store->locator(), options.name,
                           f.worker ? fmt::format(" as worker {}", store->worker_name()) : "",
                           options.trials_dir.string());
  // As Python's tune() warns (and Optuna's optimize() without n_trials or timeout behaves): with
  // neither limit a sampler such as TPE proposes forever, so say so before the first trial.
  if (options.max_trials <= 0 && options.budget_s <= 0)
    std::cerr << "paratune tune: warning: no --max-trials/--budget: trials run until the grid's end or Ctrl-C\n";
  install_stop_handlers();
  hpo::HpoSummary summary;
  {
    ConsoleObserver observer(0, options.max_trials, options.budget_s);
    summary = hpo::run_hpo(space, options, *store, backend, *sampler, *pruner, observer, g_stop_signal);
  }
  if (!json) std::cout << format_hpo_study(summary) << std::flush;  // before the retrain, which may take long
  std::optional<hpo::Transfer> transfer;
  if (options.surrogate_ratio != 1 && summary.best) {
    transfer = hpo::transfer_to_target(space, options, hpo::Config::parse(summary.trials[*summary.best].params_json));
    if (!json) std::cout << "\n" << format_transfer(*transfer) << std::flush;
  }
  std::optional<hpo::RetrainResult> retrained;
  if (f.retrain && summary.best && summary.stop != tune::StopReason::kInterrupted) {
    const store::StoredTrial& best = summary.trials[*summary.best];
    const int steps = f.retrain_steps.value_or(options.steps);
    std::cerr << fmt::format("paratune tune: retraining trial {} for {} steps{}\n", best.number, steps,
                             transfer ? " at the target's width" : "");
    retrained = hpo::retrain_best(space, options, best, steps, *store, backend, g_stop_signal);
  }
  if (json) {
    nlohmann::ordered_json j = to_json(summary);
    if (transfer) j["transfer"] = to_json(*transfer);
    if (retrained) j["retrain"] = to_json(*retrained);
    write_json(j);
  } else if (retrained) {
    std::cout << "\n" << format_retrain(*retrained);
  }
  if (summary.stop == tune::StopReason::kInterrupted || g_stop_signal.load() != 0) return 128 + g_stop_signal.load();
  if (retrained && retrained->trial.status != "completed") return 1;
  return summary.best ? 0 : 3;
}

}  // namespace paratune::cli
