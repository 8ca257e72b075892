// The shipped prediction intervals: written by `paratune calibrate --runs
// data/published-runs/published_runs.csv --loso --intervals data/prediction-intervals.json -o
// data/calibration.json`; a test checks this table equals that file.
#include "paratune/calib/prediction_intervals.h"

namespace paratune {

const IntervalTable& default_prediction_intervals() {
  static const IntervalTable table{
      {"all", {148, -19.178150440877687, 20.058445497963724}},
      {"dense", {121, -20.880666286459913, 16.574952922410002}},
      {"dense ampere bf16", {35, -7.387436240145211, 7.298574094084492}},
      {"dense blackwell bf16", {4, 2.7365491830528743, 16.79442251917068}},
      {"dense blackwell fp8", {16, -22.11003537844128, 15.03584033063698}},
      {"dense hopper bf16", {32, -20.045647829178087, 15.572800426348511}},
      {"dense hopper fp8", {30, -21.61288601237182, 17.672138284099386}},
      {"dense volta bf16", {4, -12.889324140519141, -7.961747431107546}},
      {"moe", {27, -14.919110846398311, 148.55093165765973}},
      {"moe blackwell bf16", {6, 0.24422907291943297, 190.03217526159054}},
      {"moe blackwell fp8", {9, -14.584368057618109, 20.408297541506975}},
      {"moe hopper bf16", {7, -16.28791505033127, 47.39905529554796}},
      {"moe hopper fp8", {5, -4.464702952048181, 31.21399586152428}},
  };
  return table;
}

}  // namespace paratune
