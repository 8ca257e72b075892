// paratune-train with a fused group of trials (fused_models.h): PARATUNE_PARAMS holding a JSON
// array, one object per member, trains the members as one fused model in this process.
#pragma once

#include <vector>

#include "paratune/train/options.h"

namespace paratune::train {

// Trains `members` (parse_fused_members: options equal but for the fusable ones, one process) as one
// fused model and returns the exit code: 0, or 3 when every member has diverged. The lines of the
// trial protocol carry the member they are about:
//   @paratune {"member": b, "metric": "train_loss", "value": v, "step": k}   each live member, each step
//   @paratune {"member": b, "metric": "val_loss" | ..., "value": v, "step": k}  at evaluations
//   @paratune {"member": b, "diverged": "the train loss is nan at step k"}   once; b is no longer reported
//   @paratune {"peak_memory_bytes": n}                                        after each evaluation
//   @paratune {"step": k, "step_time_s": t}                                   last: the group's step
// A diverged member keeps its place in the fused model (its slices compute, unreported): the
// others' weights never depend on it.
int train_fused(const std::vector<TrainOptions>& members);

}  // namespace paratune::train
