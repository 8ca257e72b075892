// After a hyperparameter search: its best configurations trained once more for the full budget --
// a surrogate study's (hpo/surrogate.h) at the target's width -- and the one that does best there
// chosen. Hydro ("Hydro: surrogate-based hyperparameter tuning", data/papers/README.md#hydro-
// surrogate-tuning-slides) transfers the surrogate study's best back to the target; its slides also
// show that the surrogate ranks configurations as the target does (ResNet-18, 10 trials A-J), which
// is what re-evaluating the surrogate's top k at the target relies on: the target's best is likely
// among them even where a narrow surrogate orders the very top only roughly (docs/hydro.md: Kendall's
// tau 0.69 on the benchmark GPT at 8x).
//
// Each re-evaluation is trial 1 of its own study in the same store, named "NAME.retrain.N.Ssteps"
// for the search's study NAME, its trial N and S steps, so it is durable, shown by `study show`
// (with the search, stored_reevaluations) and reused when the command runs again: a finished
// re-evaluation (completed, or failed: it ran to its end) is not repeated; an interrupted one is.
#pragma once

#include <atomic>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "paratune/hpo/space.h"
#include "paratune/hpo/study.h"
#include "paratune/store/study_store.h"
#include "paratune/trial/runner.h"

namespace paratune::hpo {

struct RetrainResult {
  std::string study;                    // NAME.retrain.N.Ssteps
  int of_trial = 0;                     // N: the search's trial it re-evaluates
  std::optional<double> search_objective;  // that trial's objective in the search (the surrogate's)
  store::StoredTrial trial;             // the run, as stored
  std::map<std::string, double> final;  // every metric's last reported value
  std::optional<double> objective;      // the search's objective metric among them, when reported
  bool reused = false;                  // found finished in the store
};

// How many of the search's best distinct configurations are re-evaluated (--retrain, --retrain-top).
struct RetrainTop {
  int k = 1;               // a fixed number: --retrain-top K (--retrain alone: 1)
  bool automatic = false;  // --retrain-top auto: k by the budget below
  // auto: the re-evaluations may take at most `budget` times the search's own trial time (the sum
  // of its trials' durations). The surrogate's best runs first, alone; its measured duration d gives
  // k = max(1, floor(budget * D / d)) for the search's total D. Until one completes (a failed run
  // says nothing of the cost) they run one at a time, each failure moving on to the next.
  double budget = 1;
};
// Throws OptionError naming --retrain-top / --retrain-budget and the rule.
void validate(const RetrainTop& top);

struct Reevaluation {
  std::vector<RetrainResult> runs;    // in the search's order, its best first
  std::optional<std::size_t> chosen;  // into runs: the best completed at the target (none: all failed)
  std::size_t candidates = 0;         // the search's distinct completed configurations
  int k = 0;                          // how many it set out to re-evaluate
  std::string rule;                   // how k was chosen, in words
};

// Re-evaluates the best configurations of the search whose stored trials are `trials` (completed
// ones with an objective, best first by options.direction, each distinct configuration once) for
// `steps` steps ({steps} and PARATUNE_MAX_STEPS) at the target's width, at most as many at a time as
// the backend's slots allow. Throws Error on bad steps or a configuration the backend cannot place;
// a failed run is returned with its status and reason, never thrown. Stops (runs stored as
// interrupted) once `stop_requested` is non-zero.
Reevaluation reevaluate_top(const Space& space, const HpoOptions& options, const std::vector<store::StoredTrial>& trials,
                            int steps, const RetrainTop& top, store::StudyStore& store, const trial::Backend& backend,
                            const std::atomic<int>& stop_requested);

// The re-evaluations stored for the search `name` with `objective` (its NAME.retrain.N.Ssteps
// studies, each its latest run), by study name.
std::vector<RetrainResult> stored_reevaluations(const store::StudyStore& store, const std::string& name,
                                                const std::string& objective);

// Among `runs`, the completed one with the best objective in `direction`; the first completed when
// none reported the objective; none when none completed.
std::optional<std::size_t> best_reevaluation(const std::vector<RetrainResult>& runs, Direction direction);

// Why `r` chose nothing: every run named with its status and reason (or: nothing to retrain).
std::string no_choice_message(const Reevaluation& r, const std::string& objective);

}  // namespace paratune::hpo
