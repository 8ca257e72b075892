// Pruners: which trials stop early, on their intermediate values (module DESIGN: one Pruner
// interface, each algorithm one file behind it). Usable with every sampler.
//   none        every trial runs the full resource
//   median      stop a trial whose value at a step is worse than the median of the other trials'
//               values at that step (Golovin et al. 2017, Google Vizier, Sec. 3.2.2, as Optuna's
//               MedianPruner compares them) (median_pruner.cc)
//   percentile  the same against a percentile (percentile 25: keep the best quarter)
//   asha        asynchronous successive halving (Li et al. 2020, "A system for massively parallel
//               hyperparameter tuning", Alg. 2): rungs at min_resource x eta^k steps; a trial runs
//               to its next rung and rests there; a free slot first promotes the best unpromoted
//               trial of the highest rung that has one in its top 1/eta, else starts a new trial
//               (asha.cc)
//   hyperband   brackets of ASHA with first rungs min_resource x eta^s, s = 0 .. s_max (Li et al.
//               2018, "Hyperband", asynchronous as in Li et al. 2020 Sec. 3.4) (asha.cc)
//   oppa        OPPA's early termination (Eq. 5): stop a throughput trial once its throughput's 97.5%
//               upper confidence bound is below the best completed trial's (oppa_pruner.cc)
// The resource is the trial's steps (PARATUNE_MAX_STEPS). With the throughput objective a trial's
// curve is its throughput estimate over the steps so far (hpo/trial_record.h throughput_curve).
#pragma once

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "paratune/hpo/trial_record.h"

namespace paratune::hpo {

struct PrunerOptions {
  Direction direction = Direction::kMinimize;
  std::int64_t max_resource = 0;  // steps of a full trial (--steps); >= 1
  // asha, hyperband: the first rung's steps; 0: max_resource / eta^3 rounded down, at least 1.
  std::int64_t min_resource = 0;
  double eta = 3;                 // asha, hyperband: reduction factor, > 1
  int startup_trials = 5;         // median, percentile: trials completed before any is stopped
  std::int64_t warmup_steps = 0;  // median, percentile: no stop at steps below this
  double percentile = 25;         // percentile: keep a trial whose value is within the best p %
  std::int64_t min_steps = 5;     // oppa: q_min, the steps a trial reports before it may be stopped
  double z = 1.96;                // oppa: tau_q = -z x the throughput's standard error
};
// Throws OptionError naming the field and the rule.
void validate(const PrunerOptions& options);

// How far a new trial runs first, and in which bracket.
struct Assignment {
  int bracket = 0;
  std::int64_t resource = 0;  // steps
};

// A resting trial to continue, and how far.
struct Promotion {
  int trial_number = 0;
  std::int64_t resource = 0;  // the steps it runs to now
  int rung = 0;               // the rung that resource is
};

class Pruner {
 public:
  virtual ~Pruner() = default;
  [[nodiscard]] virtual std::string name() const = 0;
  // A new trial's bracket and first resource (the full resource for pruners without rungs).
  virtual Assignment assign_new_trial(const std::vector<TrialRecord>& trials) = 0;
  // After a running trial reported a new intermediate value (trial.curve.back()): false stops it
  // (it becomes pruned at that step).
  virtual bool keep_running(const TrialRecord& /*trial*/, const std::vector<TrialRecord>& /*trials*/) { return true; }
  // In process, where a trial cannot rest and resume later (hpo/ask_tell.h, define-by-run studies):
  // whether a running trial that has just completed a rung goes on, as Optuna's
  // SuccessiveHalvingPruner and HyperbandPruner judge it -- once at each rung it reaches. asha and
  // hyperband answer it (below); the other pruners judge every report with keep_running.
  [[nodiscard]] virtual bool judges_rungs() const { return false; }
  [[nodiscard]] virtual bool keep_running_at_rung(const TrialRecord& /*trial*/,
                                                  const std::vector<TrialRecord>& /*trials*/) const {
    return true;
  }
  // Before a new trial starts on a free slot: a resting trial to promote instead (ASHA's get_job).
  virtual std::optional<Promotion> promotion(const std::vector<TrialRecord>& /*trials*/) { return std::nullopt; }
  // When the study can start no new trial (--max-trials reached or the sampler exhausted), nothing
  // runs, promotion() has nothing and no trial has the full resource: a resting trial to take on
  // anyway, so that the study ends with a fully trained trial (ASHA's top-1/eta quota assumes trials
  // keep coming; with a capped study it can leave every trial resting). The one that got furthest,
  // best at its rung, goes to its next rung.
  virtual std::optional<Promotion> finishing_promotion(const std::vector<TrialRecord>& /*trials*/) {
    return std::nullopt;
  }
  // The rung that `resource` steps complete in `bracket` (-1 when below the first rung or without
  // rungs).
  [[nodiscard]] virtual int rung_of(std::int64_t /*resource*/, int /*bracket*/) const { return -1; }
  // The status a trial it stops is stored with: "pruned"; OPPA's early termination keeps the name
  // configuration studies have always stored, "early-stopped" (both read back as TrialRecord::kPruned).
  [[nodiscard]] virtual std::string stopped_status() const { return "pruned"; }
  // What decides which trials stop or rest (the rungs per bracket, the percentile, ...): shown in
  // reports and part of a study's identity, so a resumed study cannot silently change its rules.
  [[nodiscard]] virtual nlohmann::ordered_json describe() const = 0;
};

enum class PrunerKind { kNone, kMedian, kPercentile, kAsha, kHyperband, kOppa };
const char* to_string(PrunerKind kind);
PrunerKind parse_pruner(std::string_view name);  // throws Error listing the names

// Validates `options`, then builds the pruner.
std::unique_ptr<Pruner> make_pruner(PrunerKind kind, const PrunerOptions& options);

// Each pruner's factory (one per file; make_pruner chooses).
std::unique_ptr<Pruner> make_median_pruner(const PrunerOptions& options, PrunerKind kind);  // median, percentile
std::unique_ptr<Pruner> make_asha_pruner(const PrunerOptions& options);
std::unique_ptr<Pruner> make_hyperband_pruner(const PrunerOptions& options);
std::unique_ptr<Pruner> make_oppa_pruner(const PrunerOptions& options);

// OPPA's rule (oppa_pruner.cc): true when a trial whose `steps_reported` steps gave `so_far` should
// stop now, `best_full` the best completed trial's throughput (nullopt: none yet).
bool stop_early(const trial::ThroughputEstimate& so_far, std::int64_t steps_reported, std::optional<double> best_full,
                std::int64_t min_steps, double z);

}  // namespace paratune::hpo
