// Which hyperparameters matter: each parameter's first-order share of the objective's variance over
// the completed trials.
//
// For parameter i, the n completed trials are grouped by its value (a categorical's choice; a numeric
// parameter's quantile bin, kBins equal-count bins of its unit coordinate, log folded in) into k
// groups, and its share is the correlation ratio corrected for the number of groups, epsilon^2
// (Kelley 1935):
//   share_i = (SS_between - (k - 1) SS_within / (n - k)) / SS_total, at least 0,
// the fraction of the objective's variance its main effect explains beyond what k groups of pure
// noise would. The uncorrected eta^2 = SS_between / SS_total is 1 whenever every group holds one
// trial, whatever the data (4 completed trials in 4 bins made every parameter "explain" 100%). It is
// the first-order term of a functional ANOVA decomposition (Hutter et al. 2014, fANOVA) estimated
// from the trials directly. Each share is the parameter's effect alone: effects of parameters the
// search sampled together overlap and interactions are not split out, so the shares are not parts of
// a whole and need not sum to 1. A parameter is reported only when its groups hold 2 trials each on
// average (n >= 2k: a within-group variance to correct by), and nothing below kMinImportanceTrials
// completed trials. Trials in which the parameter is inactive (conditional) form a group of their own.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "paratune/hpo/space.h"
#include "paratune/hpo/trial_record.h"

namespace paratune::hpo {

// Fewer completed trials than this: no importance (shares over fewer are mostly noise).
inline constexpr std::size_t kMinImportanceTrials = 8;

struct Importance {
  std::string parameter;
  double share = 0;  // epsilon^2 in [0, 1]
  int groups = 0;    // distinct values / bins seen
  int trials = 0;    // the completed trials it is measured over
};

// Most important first; empty with fewer than kMinImportanceTrials completed trials.
std::vector<Importance> parameter_importance(const Space& space, const std::vector<TrialRecord>& trials);

// The share above of `values` split into groups (group[t]: trial t's group, any int); nullopt when
// there are fewer than two trials per group on average (or fewer than two groups' worth of trials).
std::optional<double> explained_share(const std::vector<int>& group, const std::vector<double>& values);

}  // namespace paratune::hpo
