// The shipped prediction intervals: written by `paratune calibrate --runs
// data/published-runs/published_runs.csv --loso --intervals data/prediction-intervals.json -o
// data/calibration.json`; a test checks this table equals that file.
#include "paratune/calib/prediction_intervals.h"

namespace paratune {

const IntervalTable& default_prediction_intervals() {
  static const IntervalTable table{
      {"all", {147, -20.85164643557435, 32.02581955204994}},
      {"dense", {121, -20.041862599377037, 18.874140726701082}},
      {"dense ampere bf16", {35, -7.039577758753196, 7.380451525846887}},
      {"dense blackwell bf16", {4, 5.291255779991637, 19.463372498754516}},
      {"dense blackwell fp8", {16, -17.733141931435863, 13.157664754454373}},
      {"dense hopper bf16", {32, -21.228916686316076, 18.274318990659275}},
      {"dense hopper fp8", {30, -23.072587617806892, 35.19287397180687}},
      {"dense volta bf16", {4, -11.30983965999818, -6.6696414915530555}},
      {"moe", {26, -24.675270086313034, 174.31874903069132}},
      {"moe blackwell bf16", {5, 6.9550871829985095, 217.8820482040306}},
      {"moe blackwell fp8", {9, -25.48314550406209, 18.177130713629}},
      {"moe hopper bf16", {7, -18.222895945733438, 47.31217793255875}},
      {"moe hopper fp8", {5, -8.476180335567895, 32.645919986081026}},
  };
  return table;
}

}  // namespace paratune
