// The shipped prediction intervals: written by `paratune calibrate --runs
// data/published-runs/published_runs.csv --loso --intervals data/prediction-intervals.json -o
// data/calibration.json`; a test checks this table equals that file.
#include "paratune/calib/prediction_intervals.h"

namespace paratune {

const IntervalTable& default_prediction_intervals() {
  static const IntervalTable table{
      {"all", {148, -19.857519985994806, 20.237625578580904}},
      {"dense", {121, -18.909173006532153, 17.448182930297527}},
      {"dense ampere bf16", {35, -7.156761260961314, 7.293096455241599}},
      {"dense blackwell bf16", {4, 3.434531254583666, 17.65734402514123}},
      {"dense blackwell fp8", {16, -17.629028906191763, 14.075247049059724}},
      {"dense hopper bf16", {32, -20.082134067189898, 15.48753294102465}},
      {"dense hopper fp8", {30, -22.41904828130274, 18.594637121904093}},
      {"dense volta bf16", {4, -12.289476301488275, -7.39579107467488}},
      {"moe", {27, -25.7972213703033, 152.55246183246007}},
      {"moe blackwell bf16", {6, 0.8626452397023003, 195.90998223986833}},
      {"moe blackwell fp8", {9, -26.448246415678256, 17.819793737510896}},
      {"moe hopper bf16", {7, -16.349441135217745, 47.850021240739835}},
      {"moe hopper fp8", {5, -5.710764157127364, 31.77194584835737}},
  };
  return table;
}

}  // namespace paratune
