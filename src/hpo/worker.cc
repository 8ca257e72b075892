#include "worker.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "paratune/tune/study_common.h"

namespace paratune::hpo {
namespace {

// How often a worker with a free slot and nothing to start claims again.
constexpr double kIdlePollS = 0.5;

// The configuration of an interrupted trial that no other trial has taken up, if any.
std::optional<Config> unfinished_configuration(const std::vector<store::StoredTrial>& all) {
  std::set<std::string> taken;
  for (const store::StoredTrial& t : all)
    if (t.status != "interrupted") taken.insert(t.params_json);
  for (const store::StoredTrial& t : all)
    if (t.status == "interrupted" && !taken.contains(t.params_json)) return Config::parse(t.params_json);
  return std::nullopt;
}

}  // namespace

Worker::Worker(const LoopContext& loop, const trial::TrialRunner& runner, StudyTrials& trials,
               const TrialLauncher& launcher)
    : loop_(loop), runner_(runner), trials_(trials), launcher_(launcher), next_claim_(Clock::now()),
      last_heartbeat_(next_claim_) {}

bool Worker::due() const { return !done_ && Clock::now() >= next_claim_; }

std::optional<Worker::Claim> Worker::claim(std::optional<tune::StopReason>& stop) {
  Claim claim;
  const store::StudyStore::ClaimOutcome outcome = loop_.store.claim_trial(
      trials_.study, loop_.options.worker.heartbeat_timeout_s,
      [&](const std::vector<store::StoredTrial>& all, int number) { return choose(all, number, claim, stop); },
      /*with_outputs=*/true);
  for (const store::StoredTrial& d : outcome.reaped) {
    ++reaped_;
    // Its processes, if on this host.
    loop_.observer.note(tune::reaped_note(d, loop_.backend.clean_up_left_over(d.dir)));
  }
  if (!outcome.claimed) {
    next_claim_ = Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(kIdlePollS));
    return std::nullopt;
  }
  claim.db_id = outcome.claimed->first;
  return claim;
}

// In one transaction (store/study_store.h: claim_trial): every worker's trials taken in, then ASHA's
// promotion, else a configuration a dead worker left unfinished, else the sampler's proposal.
std::optional<store::StudyStore::NewTrial> Worker::choose(const std::vector<store::StoredTrial>& all, int number,
                                                          Claim& claim, std::optional<tune::StopReason>& stop) {
  claim.promotion.reset();
  claim.fresh.reset();
  trials_.adopt(all, loop_.options);
  const bool any_running =
      std::any_of(all.begin(), all.end(), [](const store::StoredTrial& t) { return t.status == "running"; });
  // --max-trials counts every configuration in the study but the interrupted (they run again).
  const auto counted =
      std::count_if(all.begin(), all.end(), [](const store::StoredTrial& t) { return t.status != "interrupted"; });
  const bool capped = loop_.options.max_trials > 0 && counted >= loop_.options.max_trials;
  claim.promotion = loop_.pruner.promotion(trials_.records);
  std::optional<Proposal> next;
  if (!claim.promotion && !capped) {
    if (std::optional<Config> left = unfinished_configuration(all)) {
      next = Proposal{std::move(*left), {{"requeued", "the configuration of a trial a dead worker or killed "
                                                      "controller left unfinished"}}};
      claim.requeued = true;
    } else {
      next = checked_proposal(loop_.sampler, loop_.space, trials_.records);
    }
  }
  // A capped study whose trials all rest below the full resource: finish the most promising.
  if (!claim.promotion && !next && !any_running && !trials_.any_completed())
    claim.promotion = loop_.pruner.finishing_promotion(trials_.records);
  if (claim.promotion) {
    if (!runner_.can_start(ranks_of(loop_.options, trials_.record(claim.promotion->trial_number).config))) {
      claim.promotion.reset();  // wait for slots
      return std::nullopt;
    }
    store::StudyStore::NewTrial resume;
    resume.resume = trials_.books.at(claim.promotion->trial_number).db_id;
    return resume;
  }
  if (!next) {
    if (!any_running) {
      done_ = true;
      if (capped && !stop) stop = tune::StopReason::kMaxTrials;
    }
    return std::nullopt;
  }
  if (!runner_.can_start(ranks_of(loop_.options, next->config))) return std::nullopt;  // wait for slots
  claim.fresh = launcher_.describe_new(next->config, loop_.pruner.assign_new_trial(trials_.records), number,
                                       loop_.options.strategy, std::nullopt);
  claim.notes = std::move(next->notes);
  return store::StudyStore::NewTrial{next->config.dump(), claim.fresh->stored, std::nullopt};
}

void Worker::keep_alive() {
  if (std::chrono::duration<double>(Clock::now() - last_heartbeat_).count() < loop_.options.worker.heartbeat_s) return;
  last_heartbeat_ = Clock::now();
  std::vector<std::int64_t> ids;
  for (const auto& [id, live] : trials_.live) ids.push_back(trials_.books.at(live.number).db_id);
  loop_.store.heartbeat(ids);
  trials_.adopt(loop_.store.trials(trials_.study, true), loop_.options);
}

bool Worker::store_result(std::int64_t db_id, const trial::TrialResult& result, const store::TrialOutcome& outcome,
                          const LiveRun& live) {
  if (loop_.store.finish_own_trial(db_id, result, &outcome)) return true;
  ++dropped_;
  loop_.observer.note(fmt::format("trial {} {} {} here, but another worker had marked it interrupted (this worker's "
                             "heartbeat came too late) and runs it again: this result is dropped",
                             live.number, live.params_json, trial::to_string(result.status)));
  return false;
}

}  // namespace paratune::hpo
