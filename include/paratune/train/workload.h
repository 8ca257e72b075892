// paratune-train's models described without building them (no libtorch): per layer unit, its
// forward FLOPs, parameters and output size per sample, from the options alone. The pipeline split
// balances the FLOPs (train/stage_split.h); a cost model of the trial strategies (none, dp, mp,
// gpipe) needs the parameters (what data parallelism all-reduces) and the output sizes (what a
// pipeline sends between stages). The trainer's models (src/trainer/models.cc) are checked against
// this description in the trainer tests, unit for unit.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "paratune/train/options.h"

namespace paratune::train {

struct UnitShape {
  std::string kind;                     // "dense", "stem", "residual", "classifier", "embedding", "block", "output"
  double forward_flops_per_sample = 0;  // a multiply-add is 2, counted from the shapes
  std::int64_t parameters = 0;          // its own (a tied output projection has none: the embedding holds it)
  std::int64_t output_elements = 0;     // per sample: what it hands the next unit
};

// The units of the model `options` describes, in order (as build_model builds them).
std::vector<UnitShape> workload_units(const TrainOptions& options);

}  // namespace paratune::train
