// After a hyperparameter search: the best configuration trained once more for the full budget, and
// what it reports at the end (the trainer's test_loss and test_accuracy among them). A surrogate
// study's best (hpo/surrogate.h) is retrained at the target's width: the transfer, trained.
//
// The run is trial 1 of its own study in the same store, named "NAME.retrain.N.Ssteps" for the
// search's study NAME, best trial N and S steps, so it is durable, shown by `study show
// --study-name`, and reused when the command is run again (a completed retrain of the same trial and
// steps is not repeated).
#pragma once

#include <atomic>
#include <map>
#include <string>

#include "paratune/hpo/space.h"
#include "paratune/hpo/study.h"
#include "paratune/store/study_store.h"
#include "paratune/trial/runner.h"

namespace paratune::hpo {

struct RetrainResult {
  std::string study;                    // NAME.retrain.N.Ssteps
  store::StoredTrial trial;             // the run, as stored
  std::map<std::string, double> final;  // every metric's last reported value
  bool reused = false;                  // found completed in the store
};

// Runs (or reuses) the retrain of `best` for `steps` steps ({steps} and PARATUNE_MAX_STEPS). Throws
// Error on bad steps; a failed run is returned with its status and reason, not thrown. Stops (the
// run stored as interrupted) once `stop_requested` is non-zero.
RetrainResult retrain_best(const Space& space, const HpoOptions& options, const store::StoredTrial& best, int steps,
                           store::StudyStore& store, const trial::Backend& backend,
                           const std::atomic<int>& stop_requested);

}  // namespace paratune::hpo
