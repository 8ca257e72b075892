// The study's live view (tune::StudyObserver::progress, about four times a second): a row per trial
// running -- each member of a fused group its own -- with its steps, step time and latest objective
// value, the count of trials done and the best so far.
#pragma once

#include "paratune/hpo/study.h"
#include "study_trials.h"

namespace paratune::hpo {

void report_progress(const trial::TrialRunner& runner, const StudyTrials& trials, const HpoOptions& options,
                     tune::StudyObserver& observer);

}  // namespace paratune::hpo
