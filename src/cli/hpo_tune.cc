#include "hpo_tune.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <iostream>
#include <limits>

#include "paratune/hpo/fusion.h"
#include "paratune/hpo/pruner.h"
#include "paratune/hpo/sampler.h"
#include "paratune/hpo/study.h"
#include "paratune/spec/error.h"
#include "tune_options.h"

namespace paratune::cli {
namespace {

// Flags of the other kind of study, or of an option not chosen: refused before anything is read.
void check_hpo_flags(const SetupFlags& setup, const TuneFlags& f) {
  if (f.worker && (f.retrain || f.given.contains("--retrain-top")))
    throw Error(std::string(f.retrain ? "--retrain" : "--retrain-top") + " with --worker: every worker would retrain the best trial when it ends; when the workers "
                "are done, run the same command once without --worker, with --retrain (a study at its --max-trials "
                "starts no new trial)");
  refuse_flags(f, {"--seed-from-plan", "--no-seed-from-plan"},
               "belongs to the model-based searches of parallel configurations (bo, xgboost, costmodel, oppa)");
  if (!f.retrain && !f.given.contains("--retrain-top")) refuse_flags(f, {"--retrain-steps"}, "needs --retrain");
  if (f.retrain_top != "auto") refuse_flags(f, {"--retrain-budget"}, "needs --retrain-top auto");
  if (f.space_path.empty())
    throw Error("tune: a hyperparameter study (--objective, --pruner, --algo tpe|gp|cmaes|nsga2 or typed parameters) needs "
                "--space FILE; --model derives a space of parallel configurations, searched for throughput");
  if (!setup.model.empty() || !setup.profile.empty() || !f.fix.empty() || !f.allow.empty() || !f.max.empty())
    throw Error("tune: --model/--profile/--fix/--allow/--max derive a space of parallel configurations; a hyperparameter "
                "study searches its --space file");
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
  options.serve = f.serve;
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

// --retrain and --retrain-top K|auto: how many of the best configurations are trained again (none
// without either flag).
std::optional<hpo::RetrainTop> retrain_from(const TuneFlags& f) {
  if (!f.retrain && !f.given.contains("--retrain-top")) return std::nullopt;
  hpo::RetrainTop top;
  top.budget = f.retrain_budget;
  if (f.retrain_top == "auto") {
    top.automatic = true;
  } else if (f.given.contains("--retrain-top")) {
    const std::string& text = f.retrain_top;
    long long k = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), k);
    if (ec != std::errc() || end != text.data() + text.size() || k < 1)
      throw Error(fmt::format("--retrain-top {}: must be a whole number >= 1 (how many of the best configurations to "
                              "retrain) or auto",
                              text.empty() ? "''" : text));
    if (f.max_trials > 0 && k > f.max_trials)
      throw Error(fmt::format("--retrain-top {}: more than the {} trials of --max-trials", text, f.max_trials));
    if (k > std::numeric_limits<int>::max())
      throw Error(fmt::format("--retrain-top {}: must be at most {}", text, std::numeric_limits<int>::max()));
    top.k = static_cast<int>(k);
  }
  hpo::validate(top);
  return top;
}

// --algo's sampler of the space.
std::unique_ptr<hpo::Sampler> hpo_sampler_from(const TuneFlags& f, const hpo::Space& space,
                                               const hpo::HpoOptions& options) {
  hpo::SamplerKind kind{};
  try {
    kind = hpo::parse_sampler(f.algo);
  } catch (const Error&) {
    throw Error(fmt::format("--algo {}: searches value lists of parallel configurations for throughput; a "
                            "hyperparameter study uses grid, random, tpe, gp, cmaes or nsga2",
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

}  // namespace

bool is_hpo_study(const TuneFlags& f, std::optional<hpo::Space>& space) {
  if (f.objective != hpo::kThroughputObjective || f.algo == "tpe" || f.algo == "gp" || f.algo == "cmaes" ||
      f.algo == "nsga2" ||
      f.trial_ranks != 1 ||
      !f.strategy.empty() || f.given.contains("--surrogate-ratio") || f.given.contains("--fuse") || f.serve)
    return true;
  if (f.algo != "grid" && f.algo != "random") return false;  // a model-based search of configurations
  if (f.pruner != "none") return true;
  if (f.space_path.empty()) return false;
  space = hpo::Space::load(f.space_path);
  return std::any_of(space->parameters().begin(), space->parameters().end(), [](const hpo::ParamSpec& p) {
    return p.type != hpo::ParamType::kCategorical || !p.when.empty();
  });
}

TuneStudy hpo_study_from(const SetupFlags& setup, const TuneFlags& f, std::optional<hpo::Space>& space) {
  check_hpo_flags(setup, f);
  if (!space) space = hpo::Space::load(f.space_path);
  TuneStudy study;
  study.options = hpo_options_from(f);
  study.sampler = hpo_sampler_from(f, *space, study.options);
  study.pruner = pruner_from(f, hpo::PrunerKind::kNone, study.options.steps, study.options.direction).pruner;
  study.retrain = retrain_from(f);
  const hpo::HpoOptions& o = study.options;
  study.head = fmt::format("{} hyperparameters, {} sampler, {} pruner, objective {} ({}), up to {} steps per trial",
                           space->size(), study.sampler->name(), study.pruner->name(), o.objective,
                           hpo::to_string(o.direction), o.steps);
  study.per_trial = fmt::format(", {} per trial{}", o.trial_ranks, o.strategy.empty() ? "" : " (" + o.strategy + ")");
  return study;
}

}  // namespace paratune::cli
