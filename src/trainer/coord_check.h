// mup's coordinate check (Yang et al. 2021, "Tensor Programs V", Figure 5; mup.coord_check): train
// a model for a few steps at a constant rate and watch the size of every layer's output. Under muP
// the sizes stay the same whatever the width; under the standard parametrization they grow with it
// (the updates' effect grows with fan-in), which is why SP's best learning rate shifts with width.
#pragma once

#include <string>
#include <vector>

#include "paratune/train/options.h"

namespace paratune::train {

struct CoordinateScales {
  std::vector<std::string> units;        // each unit's description
  std::vector<std::vector<double>> l1;   // [step][unit]: mean |x| of the unit's output
};

// Trains `options`' model in this process (one rank) for `steps` steps at the constant rate
// options.lr, recording each unit's output in the forward pass of each step's training batch, as
// mup's coordinate check does: step 0 is the model at its initialization. Throws Error for bad data.
CoordinateScales coordinate_check(const TrainOptions& options, int steps);

// The scales as "@coord {json}" lines, one per step and unit:
//   @coord {"step": s, "unit": u, "name": "...", "l1": x}
std::string coordinate_lines(const CoordinateScales& scales);

}  // namespace paratune::train
