// The shipped prediction intervals: written by `paratune calibrate --runs
// data/published-runs/published_runs.csv --loso --intervals data/prediction-intervals.json -o
// data/calibration.json`; a test checks this table equals that file.
#include "paratune/calib/prediction_intervals.h"

namespace paratune {

const IntervalTable& default_prediction_intervals() {
  static const IntervalTable table{
      {"all", {148, -19.138549463384436, 19.79644352607129}},
      {"dense", {121, -20.220918907197593, 16.333119418753416}},
      {"dense ampere bf16", {35, -7.055815091985439, 7.425706223788122}},
      {"dense blackwell bf16", {4, 2.5592547288456284, 16.567087992867524}},
      {"dense blackwell fp8", {16, -21.51236587275745, 14.605652216522103}},
      {"dense hopper bf16", {32, -20.013836486784808, 15.631237392134162}},
      {"dense hopper fp8", {30, -21.736116141308802, 17.23826145115339}},
      {"dense volta bf16", {4, -11.86097967186514, -7.137878549235338}},
      {"moe", {27, -14.860144179942886, 147.06889173737463}},
      {"moe blackwell bf16", {6, 0.299996885260595, 189.6603590980307}},
      {"moe blackwell fp8", {9, -14.443062376957037, 20.02066272336373}},
      {"moe hopper bf16", {7, -16.2449838817391, 44.651751963622544}},
      {"moe hopper fp8", {5, -4.687153552027888, 31.21399586152428}},
  };
  return table;
}

}  // namespace paratune
