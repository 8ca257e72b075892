// A stored study as one JSON document: what `paratune study show --json` prints, and what the HTML
// study report and the live dashboard draw (report/html_page.h). Both kinds of study: searches of
// parallel configurations (throughput) and hyperparameter studies (a metric objective).
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "paratune/hpo/importance.h"
#include "paratune/hpo/study.h"
#include "paratune/store/study_store.h"

namespace paratune {

// What a stored study is measured by, from its identity: a hyperparameter study ("kind": "hpo")
// names its objective and direction; any other -- a configuration study, a retrain -- measured
// throughput, the more the better. Its best trial: hpo::best_hpo_trial(trials, direction).
struct StudyObjective {
  bool hpo = false;
  std::string objective = hpo::kThroughputObjective;
  hpo::Direction direction = hpo::Direction::kMaximize;
  // A study of several objectives (identity "objectives", "directions"; hpo::HpoOptions::objectives):
  // all of them, `objective` and `direction` the first's; empty for one objective.
  std::vector<std::string> objectives;
  std::vector<hpo::Direction> directions;
};
StudyObjective study_objective(const store::StudyInfo& study);

// A hyperparameter study's trials (read with their metrics) as its samplers saw them
// (hpo::record_of; interrupted ones left out), its space -- as created, or for a define-by-run study
// as its trials revealed it (hpo::revealed_parameters); none for a search of configurations -- and
// each parameter's share of the objective's variance over the trials on that space
// (hpo/importance.h).
struct TrialAnalysis {
  std::vector<hpo::TrialRecord> records;
  std::optional<hpo::Space> space;
  std::vector<hpo::Importance> importance;
};
TrialAnalysis analyse_trials(const store::StudyStore& store, const store::StudyInfo& study,
                             const std::vector<store::StoredTrial>& trials);

// The retrains of the search `name`'s best configurations stored beside it (hpo/retrain.h
// stored_reevaluations): {chosen: the search's trial number of the best completed one at the end of
// its retrain (null: none), runs: [report/hpo_report.h to_json(RetrainResult)...]}.
nlohmann::ordered_json reevaluations_json(const store::StudyStore& store, const std::string& name,
                                          const StudyObjective& measured);

// The study named `name` among `studies` (of the store at `locator`, for messages); with no name,
// the one study that is not a retrain of a search's best (NAME.retrain.N). Throws Error naming the
// locator and the studies there when there is none, or several and no name.
const store::StudyInfo& choose_study(const std::vector<store::StudyInfo>& studies, const std::string& name,
                                     const std::string& locator);

// Everything known of `study`:
//   study, config (its identity: space, command, steps, objective, pruner ...), kind ("hpo" or
//   "configurations"), objective and direction (configurations: "throughput", "maximize"), best,
//   status_counts, failures, trials[] (report/tune_report.h to_json, each with "value": the number
//   a chart plots -- the objective, or the throughput -- and, in hyperparameter studies, "curve":
//   [[step, value], ...] of the objective), curves (per-step best/median/worst; hyperparameter
//   studies), importance (each parameter's share of the objective's variance, hpo/importance.h),
//   parameters ({name: {"type": "float"|"int"|"categorical", "log", "low", "high", "choices"}}
//   from the study's space, so charts draw integer, categorical and log-scaled parameters on the
//   axes they need; a listed value of a search of configurations is categorical, its choices in the
//   order listed; {} when the study holds no space), model (the search's fitted model, or null),
//   reevaluations (hyperparameter studies: reevaluations_json, its retrains of the best), and only
//   in a study of several objectives objectives, directions and pareto_front
//   (report/hpo_report.h pareto_front_json); each trial then has "values" (null unless completed
//   with every one).
nlohmann::ordered_json study_data(const store::StudyStore& store, const store::StudyInfo& study);

}  // namespace paratune
