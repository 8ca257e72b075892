// Which hyperparameters matter: each parameter's first-order share of the objective's variance over
// the completed trials.
//
// For parameter i, the trials are grouped by its value (a categorical's choice; a numeric
// parameter's quantile bin, kBins equal-count bins of its unit coordinate, log folded in) and
//   share_i = sum_b n_b (mean_b - mean)^2 / sum_t (y_t - mean)^2,
// the correlation ratio eta^2 (Pearson 1905): the fraction of the variance its main effect
// explains. It is the first-order term of a functional ANOVA decomposition (Hutter et al. 2014,
// "An efficient approach for assessing hyperparameter importance", fANOVA) estimated from the
// trials directly rather than from a random forest's predictions; interactions are not split out,
// so shares need not sum to 1, and with few trials they are noisy (the number used is reported).
// Trials in which the parameter is inactive (conditional) form a group of their own.
#pragma once

#include <string>
#include <vector>

#include "paratune/hpo/space.h"
#include "paratune/hpo/trial_record.h"

namespace paratune::hpo {

struct Importance {
  std::string parameter;
  double share = 0;  // eta^2 in [0, 1]
  int groups = 0;    // distinct values / bins seen
};

// Most important first; empty with fewer than 4 completed trials (nothing to decompose).
std::vector<Importance> parameter_importance(const Space& space, const std::vector<TrialRecord>& trials);

}  // namespace paratune::hpo
