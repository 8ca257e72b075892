// The shipped prediction intervals: written by `paratune calibrate --runs
// data/published-runs/published_runs.csv --loso --intervals data/prediction-intervals.json -o
// data/calibration.json`; a test checks this table equals that file.
#include "paratune/calib/prediction_intervals.h"

namespace paratune {

const IntervalTable& default_prediction_intervals() {
  static const IntervalTable table{
      {"all", {152, -18.566653265173677, 19.757101613739668}},
      {"dense", {121, -18.841694510455042, 13.841930814959458}},
      {"dense ampere bf16", {35, -7.383465170293575, 7.6090795860956115}},
      {"dense blackwell bf16", {4, -1.3173978867609057, 12.282639994503102}},
      {"dense blackwell fp8", {16, -17.23309535265261, 12.441875939274343}},
      {"dense hopper bf16", {32, -19.58137425560357, 15.580896760628631}},
      {"dense hopper fp8", {30, -21.11454959761422, 17.909418717483305}},
      {"dense volta bf16", {4, -11.751507398080873, -6.975637026077941}},
      {"moe", {31, -16.780436287347094, 118.00711106017494}},
      {"moe blackwell bf16", {6, -0.2714907852474413, 181.60758904673773}},
      {"moe blackwell fp8", {13, -17.11209435545402, 21.619891535195173}},
      {"moe hopper bf16", {7, -16.067287449293136, 44.989393149946835}},
      {"moe hopper fp8", {5, -8.380195462865673, 46.947141091203775}},
  };
  return table;
}

}  // namespace paratune
