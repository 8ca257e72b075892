// What the study loop (controller.cc) knows of the study's trials while it runs, shared by its parts:
// trial_launcher.h describes and registers runs, trial_judge.h reads their output and judges their
// ends, worker.h takes other workers' trials in, progress_view.h shows the runs. The records are
// what samplers and pruners see; the books, live runs and fused groups are the loop's own.
#pragma once

#include <cstdint>
#include <deque>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "paratune/hpo/study.h"
#include "paratune/trial/measurement.h"
#include "trial_state.h"

namespace paratune::hpo {

// What the loop and its parts work with: run_controller's arguments.
struct LoopContext {
  const Space& space;
  const HpoOptions& options;
  store::StudyStore& store;
  const trial::Backend& backend;
  Sampler& sampler;
  Pruner& pruner;
  tune::StudyObserver& observer;
};

// What the loop keeps of a trial besides its record.
struct Book {
  std::int64_t db_id = 0;
  std::filesystem::path dir;
  TrialState state;
};

// A run in progress.
struct LiveRun {
  int number = 0;
  std::int64_t target = 0;       // the steps it runs to
  std::int64_t steps_done = 0;   // steps behind it (resumed from a checkpoint)
  bool promotion = false;
  std::size_t metrics_seen = 0;  // of its output's metrics, taken in
  std::size_t steps_measured = 0;  // of its output's steps, in the record's throughput estimate
  std::vector<std::int64_t> metric_steps;  // each taken metric's step (inferred where the line had none)
  // A promotion that runs again from step 0: the curve and resource it replaces, kept in case the
  // run is interrupted (the store still has them until the run ends). The record keeps showing the
  // old curve (samplers rank the trial by it) until the run's first value arrives.
  std::optional<std::pair<std::vector<IntermediateValue>, std::int64_t>> replaced;
  bool old_curve_shown = false;
  std::string params_json;
};

// A new trial stored, with the launch that runs it alone to `resource` steps.
struct Begun {
  int number = 0;
  trial::TrialLaunch launch;
  std::int64_t resource = 0;
};

// A fused group's process (hpo/fusion.h): its members' trial ids, by member index.
struct FusedGroup {
  std::vector<std::string> member_ids;
  std::vector<Begun> alone;  // each member's own launch: a group that fails at start-up is split
  std::filesystem::path dir;
  double started_unix_s = 0;

  // Member b ended now, the pruner's stop or diverged (`view`: its lines of the group's output so far).
  [[nodiscard]] trial::TrialResult member_stopped(std::size_t b, const trial::TrialOutput& view) const;
  // Member b's end with the group's process, on its own lines: failed if it diverged, else the
  // process's status.
  [[nodiscard]] trial::TrialResult member_ended(std::size_t b, const trial::TrialResult& ended) const;
};

// Now, as a run's start and end times are stored.
double trial_clock_unix_s();

// A configuration to run next, with the notes stored with its trial (the sampler's, or why it runs
// again).
struct Proposal {
  Config config;
  nlohmann::ordered_json notes;
};

// The throughput estimate over a run's steps so far (trial/measurement.h).
trial::ThroughputEstimate steps_throughput(const std::vector<trial::StepReport>& steps);

// The sampler's next configuration; throws Error (a bug) when it is not in the space.
std::optional<Proposal> checked_proposal(Sampler& sampler, const Space& space, const std::vector<TrialRecord>& records);

struct StudyTrials {
  std::int64_t study = 0;               // the study's id in the store
  std::vector<TrialRecord> records;     // what samplers and pruners see, in start order
  std::map<int, Book> books;            // by trial number
  std::map<std::string, LiveRun> live;  // by PARATUNE_TRIAL_ID (a fused member's: its own, not the group's)
  std::map<std::string, FusedGroup> groups;  // fused groups running, by their process's PARATUNE_TRIAL_ID
  std::optional<store::StoredTrial> best;

  TrialRecord& record(int number);
  [[nodiscard]] bool any_completed() const;
  // `stored` becomes the best when it completed better than the best so far (a tie keeps the earlier);
  // never in a study of several objectives (a front, not one best).
  void consider_best(const store::StoredTrial& stored, const HpoOptions& options);

  // Resuming (hpo/study.h): every stored trial as the sampler and pruner see it, but a first run
  // left running or interrupted (and, with retry_failed, a failed one), whose configuration is
  // returned to run again (once). Processes a killed controller left running are killed.
  std::deque<Config> resume(std::vector<store::StoredTrial> stored, store::StudyStore& store,
                            const trial::Backend& backend, const HpoOptions& options, HpoSummary& summary);
  // Worker mode: every stored trial as the sampler and pruner see it (those running here keep their
  // live records), the books to promote them by, and the best so far.
  void adopt(const std::vector<store::StoredTrial>& all, const HpoOptions& options);
};

}  // namespace paratune::hpo
