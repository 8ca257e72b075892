// How sure a prediction is: an interval from the leave-one-source-out errors of rows like it.
//
// `paratune calibrate --loso --intervals FILE` collects, for each class of rows (dense or MoE x GPU
// generation x precision), the held-out rows' ratio of the true iteration time to the predicted
// one, and keeps the 5th and 95th percentiles. A prediction of that class then carries
// "9.44 s (-8%/+12%: 90% of the held-out errors of 14 dense hopper bf16 rows)". A class with fewer
// than kMinIntervalRows rows borrows the wider class (dense or MoE), then all rows. The shipped
// table is data/prediction-intervals.json (compiled in: default_prediction_intervals()).
#pragma once

#include <nlohmann/json.hpp>

#include <map>
#include <string>
#include <vector>

#include "paratune/calib/published_runs.h"
#include "paratune/spec/hardware.h"
#include "paratune/spec/model.h"
#include "paratune/spec/training.h"

namespace paratune {

inline constexpr int kMinIntervalRows = 5;

// "dense hopper bf16", "moe blackwell fp8", ...; generations: volta, ampere, hopper, blackwell, other.
std::string prediction_class(const ModelSpec& model, const GpuSpec& gpu, Precision precision);

// True iteration time / predicted - 1, in percent, at the 5th and 95th percentiles of `rows` rows.
struct IntervalClass {
  int rows = 0;
  double low_pct = 0;
  double high_pct = 0;
};
// By class name, plus the wider classes "dense", "moe" and "all".
using IntervalTable = std::map<std::string, IntervalClass>;

// From held-out rows (LosoReport::held_out): each row's class is RowResult::prediction_class.
IntervalTable interval_table(const std::vector<RowResult>& held_out);

// The interval of a prediction of class `cls`, and the class it was taken from (`cls` or a wider one).
struct PredictionInterval {
  std::string taken_from;
  IntervalClass interval;
};
PredictionInterval interval_for(const IntervalTable& table, const std::string& cls);
// "-8%/+12%: 90% of the held-out errors of 14 dense hopper bf16 rows"
std::string describe(const PredictionInterval& interval);

nlohmann::json to_json(const IntervalTable& table);
IntervalTable interval_table_from_json(const nlohmann::json& doc, const std::string& source);

// The shipped table (identical to data/prediction-intervals.json).
const IntervalTable& default_prediction_intervals();

}  // namespace paratune
