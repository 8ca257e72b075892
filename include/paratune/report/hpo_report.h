// What only hyperparameter studies (hpo/study.h) show, in `paratune tune` and `study show`: learning
// curves, pruning, parameter importance, the retrain of the best and the transfer to the target
// width. Their trials and summary: report/tune_report.h.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "paratune/hpo/importance.h"
#include "paratune/hpo/retrain.h"
#include "paratune/hpo/study.h"
#include "paratune/hpo/surrogate.h"
#include "paratune/store/study_store.h"

namespace paratune {

// The learning curves summarized: at each step where trials reported the objective (at most
// `max_rows` of them, spread over the run), how many did, and the best, median and worst value.
std::string format_curves(const std::vector<hpo::TrialRecord>& records, const std::string& objective,
                          hpo::Direction direction, std::size_t max_rows = 10);
nlohmann::ordered_json curves_json(const std::vector<hpo::TrialRecord>& records, hpo::Direction direction);

// Pruned trials by the rung they stopped at (ASHA, Hyperband) or the step (median, percentile).
std::string format_pruning(const std::vector<store::StoredTrial>& trials);

std::string format_importance(const std::vector<hpo::Importance>& importance, std::size_t completed);
nlohmann::ordered_json importance_json(const std::vector<hpo::Importance>& importance);

// The retrain of the best configuration: its status and every final metric.
std::string format_retrain(const hpo::RetrainResult& retrain);
// Also: of_trial, the search's objective of that trial (search_objective) and the retrain's
// (objective: the same metric at its end; null when not reported).
nlohmann::ordered_json to_json(const hpo::RetrainResult& retrain);

// The retrains of the best configurations (--retrain-top): one line each -- the search's trial, its
// objective in the search and after the retrain, the status and why -- the one chosen marked.
std::string format_reevaluations(const std::vector<hpo::RetrainResult>& runs, std::optional<std::size_t> chosen,
                                 const std::string& objective);
// The same with how many were retrained and why (the rule of --retrain-top auto).
std::string format_reevaluation(const hpo::Reevaluation& reevaluation, const std::string& objective);
// {k, rule, candidates, chosen (the search's trial number, or null), runs: [to_json(run)...]}.
nlohmann::ordered_json to_json(const hpo::Reevaluation& reevaluation, const std::string& objective);

// A study of several objectives (hpo::HpoOptions::objectives): its Pareto front
// (hpo::pareto_front_trials of `trials`, read with their metrics), best first by the first
// objective, and its hypervolume (hpo/pareto.h) against a reference point: the worst value of each
// objective over the completed trials with every value (Optuna and pymoo leave the reference to the
// user; the worst seen needs no input, and a front point on it adds nothing along that objective).
struct ParetoFront {
  std::vector<std::string> objectives;
  std::vector<hpo::Direction> directions;
  std::vector<std::size_t> members;             // indices into the trials, best first by the first objective
  std::vector<std::vector<double>> values;      // each member's values, in the objectives' order
  std::size_t completed = 0;                    // completed trials with every value
  std::vector<double> reference;                // the worst value of each objective; empty with none completed
  std::optional<double> hypervolume;            // none when no trial completed, or past hpo::pareto's size limit
};
ParetoFront pareto_front_of(const std::vector<store::StoredTrial>& trials, const std::vector<std::string>& objectives,
                            const std::vector<hpo::Direction>& directions);
// "Pareto front (3 of 5 completed trials), by loss:" then one line per member -- trial, each value,
// parameters -- and the hypervolume with its reference; "" for a study of one objective.
std::string format_pareto_front(const std::vector<store::StoredTrial>& trials, const ParetoFront& front);
// {objectives, directions, trials: [{number, values, params}...], completed, reference, reference_rule,
// hypervolume (null when none)}.
nlohmann::ordered_json pareto_front_json(const std::vector<store::StoredTrial>& trials, const ParetoFront& front);

// A surrogate study's best configuration at the target width: its values, and each weight role's
// effective learning rate and weight decay on the surrogate and on the target (hpo/surrogate.h).
std::string format_transfer(const hpo::Transfer& transfer);
nlohmann::ordered_json to_json(const hpo::Transfer& transfer);

}  // namespace paratune
