// The shipped prediction intervals: written by `paratune calibrate --runs
// data/published-runs/published_runs.csv --loso --intervals data/prediction-intervals.json -o
// data/calibration.json`; a test checks this table equals that file.
#include "paratune/calib/prediction_intervals.h"

namespace paratune {

const IntervalTable& default_prediction_intervals() {
  static const IntervalTable table{
      {"all", {138, -18.70901669239729, 24.57638103654932}},
      {"dense", {119, -19.35416041630556, 21.2152394939109}},
      {"dense ampere bf16", {35, -6.710511322679156, 7.608168597733375}},
      {"dense blackwell bf16", {4, 5.433067944227081, 18.379934027965717}},
      {"dense blackwell fp8", {16, -17.53095727714249, 13.7794275689627}},
      {"dense hopper bf16", {32, -17.056964673100115, 25.55820309558665}},
      {"dense hopper fp8", {28, -23.50592661542123, 36.62256636220127}},
      {"dense volta bf16", {4, -10.460975220234452, -6.397831341850141}},
      {"moe", {19, -11.11488704454661, 222.72332118787614}},
      {"moe blackwell bf16", {5, 5.420359940284705, 229.45115175541983}},
      {"moe blackwell fp8", {8, -10.379487875175945, 20.154736465417344}},
      {"moe hopper bf16", {4, -12.18090042859929, 21.652830897459786}},
      {"moe hopper fp8", {2, -5.322723123122309, -5.052783990622778}},
  };
  return table;
}

}  // namespace paratune
