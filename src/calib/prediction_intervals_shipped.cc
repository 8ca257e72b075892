// The shipped prediction intervals: written by `paratune calibrate --runs
// data/published-runs/published_runs.csv --loso --intervals data/prediction-intervals.json -o
// data/calibration.json`; a test checks this table equals that file.
#include "paratune/calib/prediction_intervals.h"

namespace paratune {

const IntervalTable& default_prediction_intervals() {
  static const IntervalTable table{
      {"all", {152, -19.499370102245706, 22.727158715949944}},
      {"dense", {121, -20.480524016352277, 13.919090082201734}},
      {"dense ampere bf16", {35, -7.100907687616101, 7.309927419328601}},
      {"dense blackwell bf16", {4, -3.597916351129853, 9.98744933404715}},
      {"dense blackwell fp8", {16, -21.566489078781423, 15.699235006248458}},
      {"dense hopper bf16", {32, -20.478732296916423, 15.23084566154987}},
      {"dense hopper fp8", {30, -19.2792969328943, 20.710439745506648}},
      {"dense volta bf16", {4, -12.988689137396516, -8.240515326501349}},
      {"moe", {31, -16.458555529811846, 114.99100716834478}},
      {"moe blackwell bf16", {6, -3.5090090438096997, 176.70037098818563}},
      {"moe blackwell fp8", {13, -16.16003762017285, 23.90593806940392}},
      {"moe hopper bf16", {7, -16.784952305308927, 43.855676266107274}},
      {"moe hopper fp8", {5, -7.853897789260477, 47.052205778292574}},
  };
  return table;
}

}  // namespace paratune
