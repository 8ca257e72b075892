// paratune-train --profile: measures what paratune's strategy cost model (train/strategy_cost.h)
// needs for this model on this host, with the trial's ranks all busy: each layer unit's forward +
// backward at a few batch sizes, the optimizer step, and Gloo's all-reduce and point-to-point times.
#pragma once

#include "comm.h"
#include "paratune/train/options.h"

namespace paratune::train {

// Every rank of the profile runs this, ranks 0 and 1 neighbouring pipeline stages when there is a
// pipeline to measure the point-to-point times on (main.cc lays them out); rank 0
// prints the profile as one line, "@profile " followed by StrategyProfile::to_json(). Returns 0.
int profile_rank(const TrainOptions& options, Comm& comm);

}  // namespace paratune::train
