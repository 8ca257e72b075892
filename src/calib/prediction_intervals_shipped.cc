// The shipped prediction intervals: written by `paratune calibrate --runs
// data/published-runs/published_runs.csv --loso --intervals data/prediction-intervals.json -o
// data/calibration.json`; a test checks this table equals that file.
#include "paratune/calib/prediction_intervals.h"

namespace paratune {

const IntervalTable& default_prediction_intervals() {
  static const IntervalTable table{
      {"all", {148, -19.0549107634756, 20.100800448645373}},
      {"dense", {121, -20.700428236218983, 16.883588386165084}},
      {"dense ampere bf16", {35, -7.4473153977395805, 7.281957517040768}},
      {"dense blackwell bf16", {4, 3.19402585169386, 17.125041306650278}},
      {"dense blackwell fp8", {16, -23.66841295629241, 15.343033342600993}},
      {"dense hopper bf16", {32, -19.73002377164835, 15.537917750325226}},
      {"dense hopper fp8", {30, -21.488039847313022, 17.49838155894774}},
      {"dense volta bf16", {4, -11.909828428668567, -7.061010221105822}},
      {"moe", {27, -15.060635969743227, 148.24833150610937}},
      {"moe blackwell bf16", {6, 0.4281695930569622, 191.45096781299347}},
      {"moe blackwell fp8", {9, -14.643816422857842, 20.401363749535236}},
      {"moe hopper bf16", {7, -15.946409397128797, 44.96124391860638}},
      {"moe hopper fp8", {5, -8.279830234391204, 45.73893170945331}},
  };
  return table;
}

}  // namespace paratune
