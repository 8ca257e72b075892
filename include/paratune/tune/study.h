// Configuration studies: a search of parallel configurations (grid, random, or the model-based
// searches of tune/bayes.h) proposes points of a space, each becomes a real training trial
// (trial/runner.h) measured for throughput, every result goes to the study store
// (store/study_store.h). They run in the one study loop of every study (hpo/study.h run_hpo:
// HyperTune's controller/scheduler split, data/papers/README.md#hypertune-distributed-hpo-report
// Sec. 3, with OPPA's trial protocol, data/papers/README.md#oppa-parallel-config-bayesian-optimization
// Sec. 4.3), whose pruners stop or rest trials on their throughput (hpo/pruner.h).
//
// Resuming (same store, same study name, same identity -- space, command, steps, memory limit,
// step-time regex, and a pruner the study names): every finished trial is reused and its point is
// never run again; trials the last controller left running are marked interrupted, any of their
// processes still alive is killed (they are found by their PARATUNE_TRIAL_DIR), and their points
// are run again as new trials. --max-trials counts reused trials too; --budget is this run's wall
// time.
#pragma once

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "paratune/store/study_store.h"
#include "paratune/trial/failure.h"
#include "paratune/trial/runner.h"
#include "paratune/tune/space.h"
#include "paratune/tune/study_common.h"

namespace paratune::hpo {
struct HpoOptions;
struct HpoSummary;
class Pruner;
class Sampler;
class Space;
}  // namespace paratune::hpo

namespace paratune::tune {

enum class Algorithm { kGrid, kRandom, kBo, kXgboost, kCostModel, kOppa };
const char* to_string(Algorithm algorithm);
Algorithm parse_algorithm(std::string_view name);  // "grid" | "random" | "bo" | ...; Error lists them

// A uniform integer in [0, n) by rejection, so a seed gives the same draws with every standard
// library (std::uniform_int_distribution's algorithm is implementation-defined).
std::uint64_t uniform_below(std::mt19937_64& rng, std::uint64_t n);

// The order in which a grid's points are visited when only `budget` trials may run (0: no limit;
// points[i][p]: which value parameter p has in point i, any integer label): with budget >= the
// points (or 0) simply 0, 1, ..., n-1; with fewer, first `budget` picks spread over the grid and
// its values -- the i-th from the i-th of `budget` equal parts of it (so the slowest-varying
// parameters take their values evenly), the one whose values were picked least so far, nearest
// the part's middle among equals (so the fast-varying ones vary too: a fixed place in each part
// gave them one value whenever the part's width was a multiple of their period) -- then the rest
// in order: a grid cut short by --max-trials samples all of it rather than its first corner.
std::vector<std::size_t> grid_order(const std::vector<std::vector<int>>& points, std::size_t budget);
// The same for n points whose values all differ (the i-th pick: the middle of the i-th part).
std::vector<std::size_t> grid_order(std::size_t n, std::size_t budget);

// Why a run of the study stopped.
enum class StopReason { kExhausted, kMaxTrials, kBudget, kInterrupted };
const char* to_string(StopReason reason);

// A running trial as a progress display shows it (report/tune_report.h format_progress).
struct TrialProgress {
  int number = 0;
  std::string params_json;
  int slot = 0;
  std::size_t steps = 0;         // reported so far (a resumed trial's earlier steps included)
  int max_steps = 0;             // the steps it runs to
  double elapsed_s = 0;          // of this run of it
  double last_step_time_s = 0;   // 0 before the first step
  // "running"; a hyperparameter study's trial may also be "promoted" (run again to a higher rung
  // by ASHA / Hyperband) or "fused" (one of several trials trained in one process, hpo/fusion.h).
  std::string status = "running";
  // A hyperparameter study with a metric objective (not throughput): the objective's name, and the
  // trial's latest intermediate value with the step it was reported at (the trial's own numbering);
  // metric_value empty before the first (a promotion that trains again from step 0 shows none of
  // its old run's). metric_name empty: the display shows the step time and steps/s instead.
  std::string metric_name;
  std::optional<double> metric_value;
  std::int64_t metric_step = 0;
};

// What happened, for observers (progress displays).
class StudyObserver {
 public:
  virtual ~StudyObserver() = default;
  virtual void trial_started(const store::StoredTrial& /*trial*/) {}
  virtual void trial_finished(const store::StoredTrial& /*trial*/) {}
  // Worker mode: a line about other workers' trials (one marked interrupted for want of heartbeats)
  // or one of ours taken away meanwhile (its result dropped).
  virtual void note(const std::string& /*line*/) {}
  // About four times a second while the study runs: the running trials, how many finished (reused
  // ones included) and the best trial so far (null before the first completed one).
  virtual void progress(const std::vector<TrialProgress>& /*running*/, int /*finished*/,
                        const store::StoredTrial* /*best*/) {}
};

// The size of a configuration study's space, as its first line and its summary say it
// (report/tune_report.h format_space_size).
struct SpaceSize {
  std::uint64_t valid_points = 0;  // in the search space
  // Before constraints: the product of the parameters' value counts. 0 for a listed space
  // (SearchSpace::listed), whose points are not a product's survivors: for the planner's derived
  // space that product (2,211,840 for 8,700 points) counted combinations no one enumerated.
  std::uint64_t cartesian_points = 0;
  // A space derived by the planner (tune/derived_space.h): the configurations it enumerated before
  // the memory check, of which valid_points fit (DerivedSpace::candidates); 0 otherwise.
  std::uint64_t planned_points = 0;
};
// `view`'s valid and cartesian points (planned_points is for the caller, who knows where the space
// came from).
SpaceSize space_size(const SearchSpace& view);

// The identity a configuration study is stored with (hpo::HpoOptions::identity): the space's value
// lists as the configuration searches index them (`view`), the command, steps, memory limit and
// step-time regex -- the form configuration studies had when they ran in a loop of their own (main
// e0b0512 and before), so that those studies resume -- and
// the description of `stated_pruner` when the study names a pruner of its own (null: the search's
// own rule, none or OPPA's early termination for --algo oppa, as before).
nlohmann::ordered_json configuration_identity(const SearchSpace& view, const hpo::HpoOptions& options,
                                              const hpo::Pruner* stated_pruner);

// Runs (or resumes) a configuration study in the one loop (hpo::run_hpo): `options` with the
// throughput objective, stored as configuration_identity(view, options, stated_pruner); `sampler`
// from make_configuration_sampler (tune/bayes.h) over `space` and `view` (SearchSpace::of(space)).
// `stop_requested` is polled; once non-zero, running trials are stopped and stored as interrupted and
// the run returns. Throws Error on bad options, a template with an unknown placeholder or a study
// stored with another identity. The summary has the space's size (HpoSummary::space).
hpo::HpoSummary run_configuration_study(const hpo::Space& space, const SearchSpace& view, hpo::HpoOptions options,
                                     store::StudyStore& store, const trial::Backend& backend, hpo::Sampler& sampler,
                                     hpo::Pruner& pruner, const hpo::Pruner* stated_pruner, StudyObserver& observer,
                                     const std::atomic<int>& stop_requested);

}  // namespace paratune::tune
