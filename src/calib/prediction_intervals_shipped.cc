// The shipped prediction intervals: written by `paratune calibrate --runs
// data/published-runs/published_runs.csv --loso --intervals data/prediction-intervals.json -o
// data/calibration.json`; a test checks this table equals that file.
#include "paratune/calib/prediction_intervals.h"

namespace paratune {

const IntervalTable& default_prediction_intervals() {
  static const IntervalTable table{
      {"all", {148, -20.857159404766403, 31.260352484258526}},
      {"dense", {121, -19.42510997450895, 17.659853050892814}},
      {"dense ampere bf16", {35, -7.102827730031391, 7.6298326392892735}},
      {"dense blackwell bf16", {4, 1.5437686298621702, 15.603141727331911}},
      {"dense blackwell fp8", {16, -17.73391902756171, 12.493228915834003}},
      {"dense hopper bf16", {32, -21.14354617761003, 18.033518999800346}},
      {"dense hopper fp8", {30, -22.665660995609297, 34.84225793141346}},
      {"dense volta bf16", {4, -12.638048682192832, -7.8040681365930125}},
      {"moe", {27, -25.026877970791116, 148.39615533923543}},
      {"moe blackwell bf16", {6, 0.7739900898763835, 190.1380539354822}},
      {"moe blackwell fp8", {9, -25.821571225782257, 16.179149500701502}},
      {"moe hopper bf16", {7, -17.9198915109548, 46.72088104865094}},
      {"moe hopper fp8", {5, -7.542973799772031, 31.57182082411027}},
  };
  return table;
}

}  // namespace paratune
