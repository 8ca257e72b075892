// The hyperparameter study's controller loop (hpo/study.h describes it; run_hpo checks the options
// and calls this).
#pragma once

#include <atomic>

#include "paratune/hpo/study.h"

namespace paratune::hpo {

HpoSummary run_controller(const Space& space, const HpoOptions& options, store::StudyStore& store,
                          const trial::Backend& backend, Sampler& sampler, Pruner& pruner,
                          tune::StudyObserver& observer, const std::atomic<int>& stop_requested);

}  // namespace paratune::hpo
