// A search space derived from the planner's axes: the configurations of a model, cluster and batch
// that the cost model says fit in memory (`paratune tune --model ... --cluster ...` without --space).
//
// Parameters: dp tp pp cp ep etp mbs vpp zero op sp schedule recompute (the keys of --config, so
// the {config} placeholder of a trial's command parses as a paratune configuration). Each takes the
// values that occur among the fitting configurations. The configurations are listed fastest-
// predicted first, so a grid search with --max-trials tries the model's favourites first; each one's
// predicted iteration time (a model prediction, not a measurement) is kept beside it.
#pragma once

#include <vector>

#include "paratune/cost/calibration.h"
#include "paratune/cost/estimate.h"
#include "paratune/plan/space.h"
#include "paratune/hpo/space.h"

namespace paratune::tune {

struct DerivedSpace {
  hpo::Space space;                           // listed (hpo::Space::listed): every parameter categorical
  std::vector<double> predicted_iteration_s;  // per configuration of space.enumerate(), in that order
  std::size_t candidates = 0;                 // valid configurations before the memory check
};

// Throws Error if no configuration fits. `axes` narrows the planner's space (--fix/--allow/--max).
DerivedSpace derive_space(const ModelSpec& model, const ClusterSpec& cluster, const TrainingSpec& training,
                          const plan::SearchSpace& axes, const Calibration& calibration,
                          const EstimateOptions& options = {});

}  // namespace paratune::tune
