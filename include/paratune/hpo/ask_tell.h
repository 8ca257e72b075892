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
// they are refused here -- except in a define-by-run study (below), where, as in Optuna, a trial
// is judged once at each rung it reaches and goes on or stops (Pruner::keep_running_at_rung); they
// need `steps` there (their rungs are fractions of a full trial).
//
// Define-by-run (Optuna's way, python/ create_study): a study opened without a space. A trial's
// parameters are what its program asks for while it runs (suggest), each with its distribution, and
// the space grows as trials reveal it:
//   - the parameters that every finished (completed or pruned) trial suggested, each with one and the
//     same distribution, are proposed together at ask() by the study's sampler, from those trials
//     (Optuna's multivariate TPE models this intersection of the trials' spaces the same way);
//   - any other parameter -- seen for the first time, in a branch not every trial takes, or asked
//     with another distribution than before (a bound that depends on an earlier value: a new
//     distribution) -- is proposed on its own when asked, by the same kind of sampler on that one
//     parameter, from the trials that suggested it with the same distribution (its prior until
//     there are enough; Optuna samples such parameters independently too).
// Each trial's distributions are stored with it (hpo_json "distributions"), its parameters once it
// ends, so a reopened study knows its space. Interrupted trials are not asked again (their
// configuration depends on the program's branches). Grid search needs a space given in advance.
//
// Several processes may run one study at once (Optuna's distributed optimization: the same script
// started on several machines with one PostgreSQL URL, or on one with one SQLite file). Each is a
// worker of the study (StudyStore::lock_worker; a `paratune tune` controller excludes them):
//   - ask() claims the next trial in one transaction of the store (StudyStore::claim_trial): the
//     trials the other processes finished or started are taken in first, so the sampler proposes from
//     every process's trials and the trial numbers are the study's, without gaps or duplicates;
//   - a thread renews the heartbeat of this process's running trials every `heartbeat_s`; a running
//     trial whose process has been silent for `heartbeat_timeout_s` (it died) becomes interrupted at
//     the next claim of any process, and its configuration is asked again first (given a space);
//   - a running trial's curve reaches the others when it ends (its reports are stored with it), so
//     the pruners judge against the curves of every finished trial and of this process's running ones;
//     a define-by-run trial's parameters are stored by the heartbeat thread a second after they are
//     asked for (so a trial whose process died keeps them), and when it ends.
// Opened when no other process runs the study, the trials left running by a process that died are
// interrupted at once (as a controller resuming).
//
// Thread-safe: several threads may ask, report and tell at once (a Python objective with n_jobs).
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
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
  // Several objectives (Optuna's directions): each one's name (its values stored as that metric) and
  // direction, in order; `objective` and `direction` are then the first's. Empty for one objective;
  // never of size 1. A trial is told all its values at its end (TrialEnd::values); it reports no
  // curve and no pruner judges it (Optuna's report and should_prune need one objective too).
  std::vector<std::string> objectives;
  std::vector<Direction> directions;
  // The steps of a full trial, if the program has such a number: part of the study's identity and
  // shown in reports; 0: not stated. The median and percentile pruners do not need it.
  std::int64_t steps = 0;
  // What runs the trials, in words, stored in the identity (e.g. "python objective train_mnist").
  std::string runner = "in-process";
  // How often this process renews its running trials' heartbeats, and how long another process's
  // running trial may go without one before it counts as dead (interrupted); timeout > heartbeat > 0.
  // Not part of the identity. The defaults are `paratune tune --worker`'s.
  double heartbeat_s = 10;
  double heartbeat_timeout_s = 60;
};
// Throws OptionError naming the field and the rule.
void validate(const AskTellOptions& options);

// The pruners ask/tell studies accept (none, median, percentile); Error for the others, saying why.
void check_in_process_pruner(PrunerKind kind);

// A parameter's distribution as a define-by-run program asks for it (Optuna's FloatDistribution,
// IntDistribution, CategoricalDistribution): `param` without `when`; `step` > 0 puts the values on
// low, low + step, ... (a float's 0: continuous; an int's 1: every integer), not with log.
struct Distribution {
  ParamSpec param;
  double step = 0;
  bool operator==(const Distribution& other) const;
};
// Throws Error naming `call` ("suggest_float('x')"), the field, the value and the rule; returns it
// with `high` moved down onto the step grid (as Optuna does) and an int's step 0 made 1.
Distribution checked_distribution(Distribution d, const std::string& call);
nlohmann::ordered_json to_json(const Distribution& d);
Distribution distribution_from_json(const std::string& name, const nlohmann::json& j);

// How a trial ended, as the program tells it.
struct TrialEnd {
  enum class Kind { kCompleted, kPruned, kFailed, kOutOfMemory, kInterrupted };
  Kind kind = Kind::kCompleted;
  // kCompleted: the final value; none: the last value reported. kPruned: none (its last report).
  std::optional<double> value;
  // kCompleted in a study of several objectives: one value per objective, in order (`value` unused);
  // a wrong count or a value that is not finite is stored as failed, saying so.
  std::vector<double> values;
  std::string reason;  // kFailed, kOutOfMemory, kInterrupted: one line; kPruned: optional
};

class AskTellStudy {
 public:
  // Opens the study `options.name` in `store` (created with this identity, or resumed: the stored
  // identity must be the same) and holds a worker's share of its lock while it lives (other ask/tell
  // studies, in this process or others, may run it too; a `paratune tune` controller may not).
  // `space`, `store`, `sampler` and `pruner` must outlive it. Throws Error / OptionError for bad
  // options, a pruner that needs resumable trials, a study a controller runs or one stored with
  // another identity.
  AskTellStudy(const Space& space, AskTellOptions options, store::StudyStore& store, Sampler& sampler, Pruner& pruner,
               PrunerKind pruner_kind);
  // Define-by-run (above): no space; the sampler of `sampler` (not grid) is made for each space the
  // trials reveal. Throws as above, and Error for grid.
  AskTellStudy(AskTellOptions options, store::StudyStore& store, SamplerKind sampler, SamplerOptions sampler_options,
               Pruner& pruner, PrunerKind pruner_kind);
  ~AskTellStudy();
  AskTellStudy(const AskTellStudy&) = delete;
  AskTellStudy& operator=(const AskTellStudy&) = delete;

  struct Asked {
    int number = 0;  // the trial's number in the study (1, 2, ...)
    Config config;   // its active parameters
  };
  // The next trial, started: first the configurations of trials interrupted in an earlier run (or by
  // a process that died), then the sampler's proposals from every process's trials; nullopt when the
  // sampler has nothing left (a finite space done).
  std::optional<Asked> ask();
  // Define-by-run: trial `number`'s value of the parameter `d` (checked_distribution's), decided now
  // (see above) or, asked again, the value it got (Error if with another type of distribution).
  nlohmann::json suggest(int number, const Distribution& d);
  [[nodiscard]] bool define_by_run() const { return space_ == nullptr; }
  // Define-by-run: values the next trial asked takes for the parameters it suggests (Optuna's
  // enqueue_trial), each where it fits the distribution asked for (else drawn as usual). Kept in
  // memory, in order: trials asked later take the later ones. `user_attrs`: the trial's to begin with.
  // `first`: ahead of the others (the very next trial asked takes it: Optuna's add_trial).
  void enqueue(Config values, nlohmann::ordered_json user_attrs = nlohmann::ordered_json::object(),
               bool first = false);
  // A value the program keeps with the trial (Optuna's user attributes), stored when it ends (hpo_json
  // "user_attrs"); set again, it replaces the earlier one.
  void set_user_attr(int number, const std::string& key, const nlohmann::ordered_json& value);
  // A running trial's user attributes so far (an enqueued trial starts with the queue's).
  [[nodiscard]] nlohmann::ordered_json user_attrs(int number);
  [[nodiscard]] std::size_t running() const;  // trials asked and not yet told
  // The objective's value after `step` (0-based), and when it came: the wall time since the previous
  // report, per step, of each report after the last one is stored as step times (so the trial has a
  // throughput). A step reported again is ignored (Optuna ignores a repeated step, with a warning):
  // returns false then, true when stored; a step before the last reported one is kept in step order
  // (no step time). Throws Error for an unknown or finished trial, a negative step, or a value that
  // is not finite.
  bool report(int number, std::int64_t step, double value);
  // Another metric of the trial (stored, not judged); `step` as the last report's when absent.
  void report_metric(int number, const std::string& name, double value, std::optional<std::int64_t> step = {});
  // Whether the pruner stops the trial now, on its curve so far. Once true, the trial should be
  // told kPruned.
  bool should_prune(int number);
  // The trial's end, stored in one transaction. A kCompleted without a finite value (given or
  // reported) is stored as failed, saying so. Returns the trial as stored, with its metrics.
  store::StoredTrial tell(int number, const TrialEnd& end);

  // Every trial of the study, in number order, and the best completed one (none in a study of
  // several objectives: it has a front).
  [[nodiscard]] std::vector<store::StoredTrial> trials() const;
  [[nodiscard]] std::optional<store::StoredTrial> best() const;
  // A study of several objectives: its Pareto front (hpo/study.h pareto_front_trials), best first by
  // the first objective; empty for one objective.
  [[nodiscard]] std::vector<store::StoredTrial> front() const;
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
    int judged_rung = -1;     // asha, hyperband in a define-by-run study: the last rung it was judged at
    trial::TrialOutput output;
    Config proposal;                   // define-by-run: the sampler's values of the model's parameters
    std::vector<Distribution> proposed;  // and their distributions (model_ when it was asked)
    Config fixed = Config::object();     // enqueued values, taken where they fit
    nlohmann::ordered_json user_attrs = nlohmann::ordered_json::object();
    // Define-by-run: when keep_alive stores the parameters asked for since it last did (none: stored).
    std::optional<std::chrono::steady_clock::time_point> params_due;
  };
  Live& live(int number);
  void open(PrunerKind pruner_kind);  // both constructors: lock, open or resume
  // The study's lock, shared with other ask/tell studies (StudyStore::lock_worker), waiting out
  // another one's check that it is alone; throws Error when a controller runs the study.
  std::unique_ptr<store::ControllerLock> share_of_the_lock();
  // Takes in every trial of the study as stored (`all`, in number order): those finished here or
  // elsewhere (what the sampler and pruner learn from), other processes' running ones, and this
  // process's running ones as it knows them; the configurations interrupted trials left to run again.
  // Returns false, changing nothing, when a trial finished elsewhere is new and `all` was read without
  // the trials' outputs (its curve is needed).
  bool adopt(const std::vector<store::StoredTrial>& all, bool with_outputs);
  // The next configuration and the sampler's notes (records_ as adopt left them); nullopt when the
  // sampler has nothing left.
  std::optional<std::pair<Config, nlohmann::ordered_json>> next_configuration();
  void keep_alive();  // the heartbeat thread's loop, until stopping_
  [[nodiscard]] store::StudyStore::LaunchRecord launch_record() const;  // what a trial stores of its launch
  // Define-by-run: the parameters every finished trial suggested with one distribution, and the
  // sampler made for them (kept while they stay the same).
  void update_model();
  nlohmann::json independent_value(int number, const Distribution& d);
  void tell_values(TrialRecord& r, const std::vector<double>& values, trial::TrialResult& result,
                   store::TrialOutcome& outcome) const;

  const Space* space_ = nullptr;  // null: define-by-run
  AskTellOptions options_;
  store::StudyStore& store_;
  Sampler* sampler_ = nullptr;    // define-by-run: model_sampler_, when there is a model
  Pruner& pruner_;
  SamplerKind sampler_kind_{};
  SamplerOptions sampler_options_;
  std::map<int, std::vector<Distribution>> distributions_;  // define-by-run: each trial's, in the order asked
  std::vector<std::pair<Config, nlohmann::ordered_json>> enqueued_;  // define-by-run: enqueue()'s, first first
  std::vector<Distribution> model_;
  std::unique_ptr<Space> model_space_;
  std::unique_ptr<Sampler> model_sampler_;
  std::string sampler_name_, pruner_name_;
  std::unique_ptr<store::ControllerLock> lock_;
  std::int64_t study_ = 0;
  int reused_ = 0, requeued_ = 0;
  mutable std::mutex mutex_;
  std::vector<TrialRecord> records_;   // every trial asked or found, running ones included
  std::vector<Config> requeue_;        // configurations of interrupted trials, asked first
  std::map<int, Live> live_;           // running trials by number
  std::chrono::steady_clock::time_point last_claim_;  // ask(): when it last claimed with every process's trials
  std::thread heartbeat_;              // keep_alive()
  std::condition_variable wake_heartbeat_;
  bool stopping_ = false;              // under mutex_: the destructor stops the heartbeat thread
};

// The space a define-by-run study's trials revealed, from the distributions each stored when it ended:
// every parameter once, in the order first seen, with bounds that hold every trial's value (a float's
// or int's lowest low and highest high, log only if every trial asked for it so; a categorical's
// choices in the order seen). For reports (importance, axes); empty when
// no trial stored distributions (a study with a space given in advance). Parameters a space cannot
// hold (a name that is not an identifier, or asked as two types) are left out.
std::vector<ParamSpec> revealed_parameters(const std::vector<store::StoredTrial>& trials);

// The study's identity as stored (what must match to resume it).
// `space` null: define-by-run (no space in the identity; each trial stores its own).
nlohmann::ordered_json ask_tell_identity(const Space* space, const AskTellOptions& options, const Pruner& pruner);

}  // namespace paratune::hpo
