// Worker mode (HpoOptions::worker; tune/study_common.h): this controller is one of several on the
// study, and every trial goes through the store's claims (store/study_store.h claim_trial). A claim
// takes every worker's trials in, then picks what this worker runs next -- ASHA's promotion, else a
// configuration a dead worker or killed controller left unfinished, else the sampler's proposal --
// and stores it as this worker's in the same transaction, so no two workers start the same. Other
// workers found dead (no heartbeat) are reaped by the claim; this worker's heartbeats keep its runs
// its own, and a run whose trial another worker took meanwhile has its result dropped.
#pragma once

#include <chrono>
#include <optional>

#include "paratune/hpo/study.h"
#include "study_trials.h"
#include "trial_launcher.h"

namespace paratune::hpo {

class Worker {
 public:
  Worker(const LoopContext& loop, const trial::TrialRunner& runner, StudyTrials& trials, const TrialLauncher& launcher);

  // What a claim gave this worker to start: a resting trial's promotion (running already in the
  // store), or a new trial stored as this worker's (id `db_id`; its run and notes to register).
  struct Claim {
    std::optional<Promotion> promotion;
    std::optional<TrialLauncher::NewRun> fresh;
    std::int64_t db_id = 0;
    nlohmann::ordered_json notes;
    bool requeued = false;  // an unfinished configuration run again
  };
  // One claim; nullopt when nothing was claimed (the next claim then waits a moment, or the study
  // is done: nothing to start and no trial of any worker running).
  std::optional<Claim> claim(std::optional<tune::StopReason>& stop);
  // Whether a claim is due: the study is not done and the idle wait after a fruitless claim is over.
  [[nodiscard]] bool due() const;
  // A slot is free: claim at once.
  void claim_now() { next_claim_ = Clock::now(); }
  // Nothing to start, and no worker's trial runs (one may still die and need its configuration run
  // again, or rest at a rung and be promoted).
  [[nodiscard]] bool done() const { return done_; }
  // Every heartbeat interval: this worker's runs are alive, and what the others did since is taken
  // in (the pruner judges running trials against every worker's curves).
  void keep_alive();
  // A run's end into the store; false when its trial was taken from this worker meanwhile (another
  // worker found its heartbeat too old and runs it again): nothing stored, the result dropped.
  bool store_result(std::int64_t db_id, const trial::TrialResult& result, const store::TrialOutcome& outcome,
                    const LiveRun& live);
  [[nodiscard]] int reaped() const { return reaped_; }
  [[nodiscard]] int dropped() const { return dropped_; }

 private:
  using Clock = std::chrono::steady_clock;
  // Inside the claim's transaction: the trial to start (written into `claim`), or nullopt.
  std::optional<store::StudyStore::NewTrial> choose(const std::vector<store::StoredTrial>& all, int number,
                                                    Claim& claim, std::optional<tune::StopReason>& stop);

  const LoopContext& loop_;
  const trial::TrialRunner& runner_;
  StudyTrials& trials_;
  const TrialLauncher& launcher_;
  bool done_ = false;
  Clock::time_point next_claim_, last_heartbeat_;
  int reaped_ = 0, dropped_ = 0;  // HpoSummary::reaped, dropped
};

}  // namespace paratune::hpo
