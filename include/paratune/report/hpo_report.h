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

// A surrogate study's best configuration at the target width: its values, and each weight role's
// effective learning rate and weight decay on the surrogate and on the target (hpo/surrogate.h).
std::string format_transfer(const hpo::Transfer& transfer);
nlohmann::ordered_json to_json(const hpo::Transfer& transfer);

}  // namespace paratune
