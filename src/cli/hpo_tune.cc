#include "hpo_tune.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

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

hpo::HpoOptions finish_hpo_options(const TuneFlags& f, hpo::HpoOptions options);

// "a,b,,c" as its parts, empty ones included (validate names them).
std::vector<std::string> comma_list(const std::string& text) {
  std::vector<std::string> parts;
  std::size_t start = 0;
  for (std::size_t comma = text.find(','); comma != std::string::npos; comma = text.find(',', start)) {
    parts.push_back(text.substr(start, comma - start));
    start = comma + 1;
  }
  parts.push_back(text.substr(start));
  return parts;
}

// --objective a,b --direction d1,d2: a study of several objectives (hpo::HpoOptions::objectives).
void set_objectives(const TuneFlags& f, hpo::HpoOptions& options) {
  const std::vector<std::string> objectives = comma_list(f.objective);
  const std::vector<std::string> directions = comma_list(f.direction);
  if (objectives.size() == 1) {
    if (directions.size() > 1)
      throw Error(fmt::format("--direction {}: {} directions for one objective ({}); several directions go with "
                              "several objectives (--objective a,b --direction minimize,maximize)",
                              f.direction, directions.size(), f.objective));
    return;
  }
  if (f.direction.empty())
    throw Error(fmt::format("--objective {}: give --direction with one direction per objective, in the same order "
                            "(e.g. --direction {})",
                            f.objective, fmt::join(std::vector<std::string>(objectives.size(), "minimize"), ",")));
  if (directions.size() != objectives.size())
    throw Error(fmt::format("--direction {}: {} directions for the {} objectives of --objective {}; give one per "
                            "objective, in the same order",
                            f.direction, directions.size(), objectives.size(), f.objective));
  options.objectives = objectives;
  for (const std::string& d : directions) {
    try {
      options.directions.push_back(hpo::parse_direction(d));
    } catch (const Error& e) {
      throw e.with_context(fmt::format("--direction {}", f.direction));
    }
  }
  options.objective = objectives.front();
  options.direction = options.directions.front();
}

// The study's options from the flags, checked (hpo::validate).
hpo::HpoOptions hpo_options_from(const TuneFlags& f) {
  if (f.objective.find(',') != std::string::npos || f.direction.find(',') != std::string::npos) {
    hpo::HpoOptions options = study_options_from(f);
    set_objectives(f, options);
    return finish_hpo_options(f, std::move(options));
  }
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
  return finish_hpo_options(f, std::move(options));
}

// The options both forms of --objective share, then hpo::validate.
hpo::HpoOptions finish_hpo_options(const TuneFlags& f, hpo::HpoOptions options) {
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
  sampler_options.directions = options.directions;  // several objectives: cmaes refuses them
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
  if (hpo::many_objectives(study.options) && (f.retrain || f.given.contains("--retrain-top")))
    throw Error(fmt::format("{} with --objective {}: retrains the best configurations, and a study of several "
                            "objectives has a Pareto front, not one best; give one objective",
                            f.retrain ? "--retrain" : "--retrain-top", f.objective));
  study.sampler = hpo_sampler_from(f, *space, study.options);
  study.pruner = pruner_from(f, hpo::PrunerKind::kNone, study.options.steps, study.options.direction).pruner;
  study.retrain = retrain_from(f);
  const hpo::HpoOptions& o = study.options;
  study.head = fmt::format("{} hyperparameters, {} sampler, {} pruner, {} ({}), up to {} steps per trial",
                           space->size(), study.sampler->name(), study.pruner->name(),
                           hpo::many_objectives(o) ? "objectives " + f.objective : "objective " + o.objective,
                           hpo::many_objectives(o) ? f.direction : hpo::to_string(o.direction), o.steps);
  study.per_trial = fmt::format(", {} per trial{}", o.trial_ranks, o.strategy.empty() ? "" : " (" + o.strategy + ")");
  return study;
}

}  // namespace paratune::cli
