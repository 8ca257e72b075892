// The shipped prediction intervals: written by `paratune calibrate --runs
// data/published-runs/published_runs.csv --loso --intervals data/prediction-intervals.json -o
// data/calibration.json`; a test checks this table equals that file.
#include "paratune/calib/prediction_intervals.h"

namespace paratune {

const IntervalTable& default_prediction_intervals() {
  static const IntervalTable table{
      {"all", {148, -19.93200065492426, 19.51185051526042}},
      {"dense", {121, -18.935433334530604, 15.448636171745257}},
      {"dense ampere bf16", {35, -7.312366458685267, 7.537154616574823}},
      {"dense blackwell bf16", {4, 1.5458933913195863, 15.669606620164544}},
      {"dense blackwell fp8", {16, -17.841770359648947, 14.476024403914508}},
      {"dense hopper bf16", {32, -19.998955050792922, 15.386891522558457}},
      {"dense hopper fp8", {30, -21.573911116542813, 16.779146186759014}},
      {"dense volta bf16", {4, -12.175311169503336, -7.070863561461042}},
      {"moe", {27, -26.649929722324337, 150.07275650846032}},
      {"moe blackwell bf16", {6, -0.030514132697359475, 192.15113418440114}},
      {"moe blackwell fp8", {9, -27.27560169950287, 16.92838488519873}},
      {"moe hopper bf16", {7, -16.447385724716504, 47.62820363206876}},
      {"moe hopper fp8", {5, -4.458229880885094, 30.742945483854175}},
  };
  return table;
}

}  // namespace paratune
