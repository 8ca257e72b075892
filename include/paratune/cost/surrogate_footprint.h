// A muP surrogate of a model as a tuning trial on one GPU of the cluster (Hydro's surrogate,
// hpo/surrogate.h, on the planner's side): what one trial step costs and how much memory it holds,
// for packing trials into a pretraining job's pipeline bubbles (sim/harvest.h).
#pragma once

#include <string>

#include "paratune/cost/calibration.h"
#include "paratune/spec/hardware.h"
#include "paratune/spec/model.h"
#include "paratune/spec/training.h"

namespace paratune {

// The model with every width divided by `ratio` as muP narrows it (Hydro's scaling ratio): hidden,
// FFN and expert sizes, head dimension, MLA ranks; the layer count, head count, experts and
// vocabulary kept. Throws Error naming the width that `ratio` does not divide.
ModelSpec narrowed_model(const ModelSpec& model, int ratio);

struct SurrogateFootprint {
  ModelSpec surrogate;
  double parameters = 0;
  double step_time_s = 0;   // one training step, micro-batch 1 at the job's sequence length (cost model)
  double memory_bytes = 0;  // its peak: weights, gradients, optimizer state, activations (cost model)
};

// The surrogate trained alone on one GPU of `cluster` (dp = tp = pp = 1, one sequence per step).
SurrogateFootprint surrogate_footprint(const ModelSpec& model, const ClusterSpec& cluster, const TrainingSpec& training,
                                       int ratio, const Calibration& calibration = default_calibration());

}  // namespace paratune
