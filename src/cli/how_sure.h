// "How sure": the prediction interval printed with estimate and plan, and the plans statistically
// tied with the winner (paratune/calib/prediction_intervals.h). Intervals belong to the shipped
// calibration: with a --calibration file of one's own there is none.
#pragma once

#include <nlohmann/json.hpp>

#include <string>

#include "paratune/calib/prediction_intervals.h"
#include "paratune/cost/estimate.h"
#include "paratune/plan/planner.h"

namespace paratune::cli {

// The interval of a prediction for `model` on `cluster` under `training`: the shipped table's, when
// `calibration_file` is empty (the shipped calibration); none with a calibration of one's own.
PredictionInterval shipped_interval(const std::string& calibration_file, const ModelSpec& model,
                                    const ClusterSpec& cluster, const TrainingSpec& training);

// "90% interval     7.40 s - 9.07 s (-8%/+13%: 90% of the held-out errors of 14 ... rows, ...)\n"
std::string format_interval(double time_s, const PredictionInterval& interval);
nlohmann::json interval_json(double time_s, const PredictionInterval& interval);

// Plans whose intervals overlap the winner's (ranks from 2), and among the winner and them the one
// to prefer: the fewest parallel dimensions in use, then the most memory headroom.
struct Ties {
  std::vector<int> tied_ranks;  // 1-based ranks of result.plans
  int preferred_rank = 1;
};
Ties statistical_ties(const plan::PlanResult& result, const PredictionInterval& interval);
std::string format_ties(const plan::PlanResult& result, const PredictionInterval& interval, const Ties& ties);

}  // namespace paratune::cli
