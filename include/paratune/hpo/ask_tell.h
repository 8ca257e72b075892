// In-process trials, ask and tell (Optuna's ask-and-tell interface, optuna.study.Study.ask/tell):
// the program itself trains each configuration -- a Python objective (python/, `paratune.tune`) or
// any C++ loop -- instead of paratune starting a command per trial (hpo/study.h).
//
//   ask()           the sampler proposes a configuration; it is stored as a running trial
//   report(...)     the objective's value after a step (and any other metric): its learning curve
//   should_prune()  the pruner's verdict on that curve against every other trial's
//   tell(...)       how the trial ended: completed with a value, pruned, failed (how), interrupted
//
// The same samplers (grid, random, TPE, GP -- which learn from failed trials), pruners and study
// stores (SQLite, PostgreSQL) as `paratune tune --space` uses; the study is stored the same way
// (identity kind "hpo", the objective's values as metrics with their steps, one step time per
// report), so `paratune study show`, `report --html` and `dashboard` read it like any other. A
// study reopened with the same identity resumes: finished trials are reused, running ones become
// interrupted and their configurations are asked again first.
//
// Pruners: none, median and percentile judge a running trial on its curve. ASHA and Hyperband rest a
// trial at a rung and resume it later, which needs a program paratune can stop and start again;
// they are refused here.
//
// Thread-safe: several threads may ask, report and tell at once (a Python objective with n_jobs).
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "paratune/hpo/pruner.h"
#include "paratune/hpo/sampler.h"
#include "paratune/hpo/space.h"
#include "paratune/hpo/trial_record.h"
#include "paratune/store/study_store.h"
#include "paratune/trial/protocol.h"

namespace paratune::hpo {

struct AskTellOptions {
  std::string name = "main";         // the study within the store
  std::string objective = "value";   // the name its values are stored under (a metric)
  Direction direction = Direction::kMinimize;
  // The steps of a full trial, if the program has such a number: part of the study's identity and
  // shown in reports; 0: not stated. The median and percentile pruners do not need it.
  std::int64_t steps = 0;
  // What runs the trials, in words, stored in the identity (e.g. "python objective train_mnist").
  std::string runner = "in-process";
};
// Throws OptionError naming the field and the rule.
void validate(const AskTellOptions& options);

// The pruners ask/tell studies accept (none, median, percentile); Error for the others, saying why.
void check_in_process_pruner(PrunerKind kind);

// How a trial ended, as the program tells it.
struct TrialEnd {
  enum class Kind { kCompleted, kPruned, kFailed, kOutOfMemory, kInterrupted };
  Kind kind = Kind::kCompleted;
  // kCompleted: the final value; none: the last value reported. kPruned: none (its last report).
  std::optional<double> value;
  std::string reason;  // kFailed, kOutOfMemory, kInterrupted: one line; kPruned: optional
};

class AskTellStudy {
 public:
  // Opens the study `options.name` in `store` (created with this identity, or resumed: the stored
  // identity must be the same) and holds its controller lock while it lives (no other controller,
  // worker or ask/tell study runs it meanwhile). `space`, `store`, `sampler` and `pruner` must
  // outlive it. Throws Error / OptionError for bad options, a pruner that needs resumable trials, a
  // locked study or one stored with another identity.
  AskTellStudy(const Space& space, AskTellOptions options, store::StudyStore& store, Sampler& sampler, Pruner& pruner,
               PrunerKind pruner_kind);
  ~AskTellStudy();
  AskTellStudy(const AskTellStudy&) = delete;
  AskTellStudy& operator=(const AskTellStudy&) = delete;

  struct Asked {
    int number = 0;  // the trial's number in the study (1, 2, ...)
    Config config;   // its active parameters
  };
  // The next trial, started: first the configurations of trials interrupted in an earlier run,
  // then the sampler's proposals; nullopt when the sampler has nothing left (a finite space done).
  std::optional<Asked> ask();
  // The objective's value after `step` (0-based), and when it came: each report's wall time since
  // the previous one, per step, is stored as step times (so the trial has a throughput). A step
  // not after the last reported one is ignored (Optuna ignores a repeated step, with a warning):
  // returns false then, true when stored. Throws Error for an unknown or finished trial, a negative
  // step, or a value that is not finite.
  bool report(int number, std::int64_t step, double value);
  // Another metric of the trial (stored, not judged); `step` as the last report's when absent.
  void report_metric(int number, const std::string& name, double value, std::optional<std::int64_t> step = {});
  // Whether the pruner stops the trial now, on its curve so far. Once true, the trial should be
  // told kPruned.
  bool should_prune(int number);
  // The trial's end, stored in one transaction. A kCompleted without a finite value (given or
  // reported) is stored as failed, saying so. Returns the trial as stored.
  store::StoredTrial tell(int number, const TrialEnd& end);

  // Every trial of the study, in number order, and the best completed one (index into it).
  [[nodiscard]] std::vector<store::StoredTrial> trials() const;
  [[nodiscard]] std::optional<store::StoredTrial> best() const;
  [[nodiscard]] std::int64_t study_id() const { return study_; }
  [[nodiscard]] int reused() const { return reused_; }      // finished trials found in the store
  [[nodiscard]] int requeued() const { return requeued_; }  // interrupted configurations asked again first
  [[nodiscard]] const std::string& sampler_name() const { return sampler_name_; }
  [[nodiscard]] const std::string& pruner_name() const { return pruner_name_; }

 private:
  struct Live {
    std::int64_t id = 0;
    std::size_t record = 0;  // index into records_
    double started_unix_s = 0;
    std::chrono::steady_clock::time_point last_report;
    std::optional<std::int64_t> last_step;
    bool prune_said = false;  // should_prune returned true
    trial::TrialOutput output;
  };
  Live& live(int number);

  const Space& space_;
  AskTellOptions options_;
  store::StudyStore& store_;
  Sampler& sampler_;
  Pruner& pruner_;
  std::string sampler_name_, pruner_name_;
  std::unique_ptr<store::ControllerLock> lock_;
  std::int64_t study_ = 0;
  int reused_ = 0, requeued_ = 0;
  mutable std::mutex mutex_;
  std::vector<TrialRecord> records_;   // every trial asked or found, running ones included
  std::vector<Config> requeue_;        // configurations of interrupted trials, asked first
  std::map<int, Live> live_;           // running trials by number
};

// The study's identity as stored (what must match to resume it).
nlohmann::ordered_json ask_tell_identity(const Space& space, const AskTellOptions& options, const Pruner& pruner);

}  // namespace paratune::hpo
