// The shipped prediction intervals: written by `paratune calibrate --runs
// data/published-runs/published_runs.csv --loso --intervals data/prediction-intervals.json -o
// data/calibration.json`; a test checks this table equals that file.
#include "paratune/calib/prediction_intervals.h"

namespace paratune {

const IntervalTable& default_prediction_intervals() {
  static const IntervalTable table{
      {"all", {147, -21.624150170718572, 31.395889358089224}},
      {"dense", {121, -20.56613356988849, 18.518025465578212}},
      {"dense ampere bf16", {35, -7.057795977408512, 7.49552104540811}},
      {"dense blackwell bf16", {4, 5.291255779991637, 19.463372498754516}},
      {"dense blackwell fp8", {16, -20.353060101639585, 13.199172766632794}},
      {"dense hopper bf16", {32, -21.610820836991678, 18.19699692413777}},
      {"dense hopper fp8", {30, -23.536742870109002, 34.95260288506926}},
      {"dense volta bf16", {4, -11.80127294933763, -7.079573369488451}},
      {"moe", {26, -26.07480152191585, 162.0092466649975}},
      {"moe blackwell bf16", {5, 6.9550871829985095, 201.00712573643838}},
      {"moe blackwell fp8", {9, -26.66214449479849, 17.99855065848605}},
      {"moe hopper bf16", {7, -18.222895945733438, 46.32259949374014}},
      {"moe hopper fp8", {5, -8.476180335567895, 31.954644423743048}},
  };
  return table;
}

}  // namespace paratune
