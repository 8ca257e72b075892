// Durable studies: every trial, how it ended and what it measured, behind one interface with two
// implementations -- an SQLite file (store/sqlite_store.h, embedded, the default) and a PostgreSQL
// database (store/postgres_store.h, for studies shared by hosts). `open_store` picks one by locator.
//
// A trial is written twice: when it starts (status "running", its parameters, full configuration,
// command, worker and heartbeat) and when it ends (status, times, exit, reason, throughput, peak
// memory, where it ran, every step time and metric, in one transaction). A study reopened after a
// crash finds its unfinished trials still "running": `mark_running_interrupted` turns them into
// "interrupted" so the search runs them again, while finished trials are reused as they are.
//
// Schema (version 4, the same tables and columns on both stores): studies(id, name, created_unix_s,
// config_json, model_json), trials(id, study_id, number, params_json, config_json, command, dir,
// status, started_unix_s, ended_unix_s, exit_code, exit_signal, reason, stdout_path, stderr_path,
// steps, throughput, throughput_variance, throughput_ci_low, throughput_ci_high, peak_memory_bytes,
// malformed_lines, prediction_json, objective, rung, hpo_json, location, worker, heartbeat_unix_s),
// steps(trial_id, step, step_time_s), metrics(trial_id, name, value, step). SQLite keeps the version
// in its user_version, PostgreSQL in the table paratune_meta; a store refuses a newer schema.
// Version 4 added trials.location, worker and heartbeat_unix_s; SQLite files of versions 1 to 3 are
// upgraded in place.
//
// Worker mode (`paratune tune --worker`): several processes, on any hosts, run one study together.
// Each takes the study's worker lock (lock_worker: shared, so workers exclude only a controller
// without --worker, which takes it exclusively), claims its trials with claim_trial (one
// transaction per claim, serialized per study, that first marks dead workers' trials interrupted,
// then shows the proposer every trial of the study and inserts the proposed one), renews their
// heartbeat_unix_s with heartbeat(), and stores their ends with finish_own_trial (refused when the
// trial was taken from it meanwhile).
//
// Hyperparameter studies (hpo/study.h) run a trial in one or more runs: a trial resting at an ASHA
// rung is "pruned" with its rung, and a promotion runs it again (resume_trial), adding the steps and
// metrics of the new run to the earlier ones'.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "paratune/spec/error.h"
#include "paratune/trial/runner.h"

namespace paratune::store {

// The schema version both stores write (see above).
inline constexpr int kSchemaVersion = 4;

// The store cannot be reached or written for now: a database server restarting or unreachable, a
// full disk, SQLite's lock held longer than its busy timeout. Not bad input: every store call
// retries such a failure (reconnecting to a server, taking its locks again) for the store's retry
// time (StudyStore::set_retry_s, `tune --store-retry`), so a store that blinks stops no worker; only
// past it is this thrown, and the CLI exits with kStoreUnavailableExitCode, not 2. Run the same
// command again when the store is back: the study continues.
class StoreUnavailable : public Error {
 public:
  using Error::Error;
};

// `paratune`'s exit code for StoreUnavailable (README: exit codes); 2 is bad input.
inline constexpr int kStoreUnavailableExitCode = 4;
// How long a store call retries a StoreUnavailable failure unless set_retry_s says otherwise: a
// server restart or a failover takes seconds to tens of seconds.
inline constexpr double kDefaultStoreRetryS = 60;

// How a store is opened. kReadOnly (the dashboard, reports): nothing is created, upgraded or
// written, so a reader never blocks or slows a running study; a store without the current schema
// is an Error.
enum class Access { kReadWrite, kReadOnly };

struct StoredTrial {
  std::int64_t id = 0;
  int number = 0;              // 1, 2, ... within its study, in start order
  std::string params_json;     // the searched parameters
  std::string config_json;     // everything that produced it (command template, steps, limits, ...)
  std::string command;         // the command as run, shell-quoted (pasteable)
  std::string dir;
  std::string status;          // "running" or a trial::TrialStatus name
  double started_unix_s = 0, ended_unix_s = 0;
  int exit_code = -1, exit_signal = 0;
  std::string reason;
  std::string stdout_path, stderr_path;
  int steps = 0;
  std::optional<double> throughput;  // steps/s (OPPA App. F), when any step was usable
  double throughput_variance = 0, throughput_ci_low = 0, throughput_ci_high = 0;
  std::optional<double> peak_memory_bytes;
  std::int64_t malformed_lines = 0;
  std::vector<double> step_times_s;         // filled by trials(..., with_steps = true)
  std::vector<std::int64_t> step_numbers;   // the same: the step each of step_times_s belongs to
  std::vector<trial::MetricReport> metrics;  // the same: every metric it reported, in order
  std::string prediction_json;       // what the search predicted for it and why it chose it (empty: nothing)
  // Hyperparameter studies: the objective (completed: its final value; pruned: its last), the rung
  // it rests at (ASHA, Hyperband) and the rest of its state (bracket, checkpoint, runs) as JSON.
  std::optional<double> objective;
  std::optional<int> rung;
  std::string hpo_json;
  std::string location;  // where it ran, as the backend names it ("local", "ssh gpu-3"); empty: unknown
  std::string worker;    // the controller process that started it, "host:pid"
  std::optional<double> heartbeat_unix_s;  // set when it starts, renewed by heartbeat()
};

// How a hyperparameter study judges a trial's run (stored with it by finish_trial).
struct TrialOutcome {
  std::string status;               // "completed", "pruned", or the run's own status
  std::string reason;               // replaces the run's when not empty
  std::optional<double> objective;
  std::optional<int> rung;
  std::string hpo_json;
  // The run started again from step 0 (a promotion of a program without checkpoints): the trial's
  // earlier steps and metrics are replaced by this run's, in the same transaction.
  bool replace_output = false;
  // Not empty: the trial's parameters, replacing those it began with -- a define-by-run trial's
  // (hpo/ask_tell.h) are known only once its objective has asked for them. (`= {}`: initializer
  // lists of the fields above need not name it.)
  std::string params_json = {};
};

struct StudyInfo {
  std::int64_t id = 0;
  std::string name;
  double created_unix_s = 0;
  std::string config_json;  // the identity it was created with
  std::string model_json;   // the search's fitted model (lengthscales, prior coefficients); empty: none
};

// A whole study with every trial, step and metric: what `copy_studies` reads and `import_studies`
// writes.
struct StudyContent {
  StudyInfo info;
  std::vector<StoredTrial> trials;  // read with steps and metrics
};

// Held while a controller (or a worker: lock_worker) runs a study: released when destroyed, and by
// the system however the process ends.
class ControllerLock {
 public:
  virtual ~ControllerLock() = default;
};

class StudyStore {
 public:
  StudyStore();
  virtual ~StudyStore() = default;
  StudyStore(const StudyStore&) = delete;
  StudyStore& operator=(const StudyStore&) = delete;

  // Where the store is, for messages: the SQLite file's path, or the PostgreSQL URI with its
  // password masked ("postgresql://me:***@db/studies").
  [[nodiscard]] virtual std::string locator() const = 0;

  // One controller per study at a time: SQLite locks the file itself (flock: every study in it),
  // PostgreSQL takes a session-level advisory lock keyed on the study's name. Throws Error ("another
  // paratune controller is running ...") naming the locator when another controller -- in another
  // process or this one -- holds it.
  [[nodiscard]] virtual std::unique_ptr<ControllerLock> lock_controller(const std::string& study_name) = 0;
  // A worker's share of the same lock (SQLite: flock LOCK_SH on the file; PostgreSQL:
  // pg_try_advisory_lock_shared): any number of workers hold it at once, and while they do,
  // lock_controller fails -- as it makes lock_worker fail while a controller runs. Throws Error
  // naming the locator when a controller (not a worker) holds the study.
  [[nodiscard]] virtual std::unique_ptr<ControllerLock> lock_worker(const std::string& study_name) = 0;

  // The study `name`: created with `config_json`, or the existing one, which must have been created
  // with the same configuration (else Error: resuming with another space or command would mix
  // measurements of different things).
  virtual std::int64_t open_study(const std::string& name, const std::string& config_json) = 0;

  // Trials left "running" by a controller that died: now "interrupted", or "pruned" again when they
  // were running a promotion from a rung. Returns how many.
  virtual int mark_running_interrupted(std::int64_t study) = 0;

  // `--retry-failed`: the study's failed trials become "interrupted", so the search runs their
  // configurations again; each keeps why it failed in its reason ("retried by --retry-failed; it
  // had failed: exit code 3 ..."). Returns how many.
  virtual int mark_failed_for_retry(std::int64_t study) = 0;

  // How long each call retries while the store is unavailable (see StoreUnavailable); 0: not at all.
  void set_retry_s(double seconds) { retry_s_ = seconds; }
  [[nodiscard]] double retry_s() const { return retry_s_; }

  // Who starts trials from now on (stored as each trial's worker); default "HOSTNAME:PID".
  void set_worker_name(std::string name) { worker_ = std::move(name); }
  [[nodiscard]] const std::string& worker_name() const { return worker_; }

  // A trial that starts now; returns its id and number (unique in its study, also with several
  // processes starting trials at once).
  std::pair<std::int64_t, int> begin_trial(std::int64_t study, const std::string& params_json,
                                           const std::string& config_json, const std::string& command,
                                           const std::string& dir);
  // The same when what is stored depends on the trial's number (its id, directory): `describe` is
  // called with the number inside the transaction that inserts the trial.
  struct LaunchRecord {
    std::string config_json, command, dir;
    std::string location;  // where it will run, when known at start (finish_trial sets it anyway)
  };
  std::pair<std::int64_t, int> begin_trial(std::int64_t study, const std::string& params_json,
                                           const std::function<LaunchRecord(int number)>& describe) {
    return insert_trial(study, params_json, describe);
  }
  // Worker mode: claims the study's next trial without duplicates across processes. In one
  // transaction that serializes the claims of the study (PostgreSQL: the study's row, SELECT ... FOR
  // UPDATE; SQLite: BEGIN IMMEDIATE, the file's write lock):
  //   1. every "running" trial of another worker whose heartbeat (or start, if none) is older than
  //      `heartbeat_timeout_s` becomes "interrupted" ("pruned" when it rests at a rung), its reason
  //      "worker HOST:PID sent no heartbeat for N s" -- returned in ClaimOutcome::reaped;
  //   2. `propose` is called with every trial of the study (all workers', after step 1, in number
  //      order; with their steps and metrics when `with_outputs`) and the number a new trial gets;
  //      it returns the trial to start, or nullopt;
  //   3. the proposed trial is inserted "running", with this store's worker name and heartbeat now
  //      -- or, with NewTrial::resume, that resting ("pruned") trial becomes "running" again as this
  //      worker's (an ASHA promotion: no two workers promote the same trial).
  // `propose` runs under the store's connection lock: it must not call the store.
  struct NewTrial {
    std::string params_json;
    LaunchRecord record;
    std::optional<std::int64_t> resume;  // the id of a resting trial to run again instead (params, record unused)
  };
  struct ClaimOutcome {
    std::optional<std::pair<std::int64_t, int>> claimed;  // the new (or resumed) trial's id and number
    std::vector<StoredTrial> reaped;                       // as they were before step 1
  };
  using Proposer = std::function<std::optional<NewTrial>(const std::vector<StoredTrial>& all, int number)>;
  virtual ClaimOutcome claim_trial(std::int64_t study, double heartbeat_timeout_s, const Proposer& propose,
                                   bool with_outputs) = 0;
  // Running trials are alive: their heartbeat_unix_s becomes now.
  virtual void heartbeat(const std::vector<std::int64_t>& trials) = 0;
  // A running trial's parameters so far (a define-by-run trial's grow as its program asks for them):
  // its params_json, unless it has ended meanwhile (then nothing is written).
  virtual void set_running_params(std::int64_t trial, const std::string& params_json) = 0;
  // Whether anyone but this object (another process, or another store object on the same file)
  // committed a change since the last call: true on the first call, and always where the store
  // cannot tell cheaply (a server's). An ask/tell study claims with every process's trials only then
  // (hpo/ask_tell.h), so a study run by one process pays no read of its whole study per trial.
  [[nodiscard]] virtual bool written_elsewhere() { return true; }
  // What the search predicted for a trial (set right after begin_trial).
  virtual void set_prediction(std::int64_t trial, const std::string& prediction_json) = 0;
  // The search's latest fitted model, kept with the study.
  virtual void set_model(std::int64_t study, const std::string& model_json) = 0;
  // The end of a trial's run, all at once (one transaction): its status, times, exit, throughput,
  // location, steps and metrics (added to those of earlier runs), and `outcome` when a
  // hyperparameter study judged it.
  void finish_trial(std::int64_t trial, const trial::TrialResult& result, const TrialOutcome* outcome = nullptr) {
    write_finish(trial, result, outcome, /*only_own_running=*/false);
  }
  // Worker mode: the same, only if the trial is still "running" and this store's worker's (another
  // worker may have marked it interrupted, its heartbeat too old, and run its point again); returns
  // false, writing nothing, if not.
  [[nodiscard]] bool finish_own_trial(std::int64_t trial, const trial::TrialResult& result,
                                      const TrialOutcome* outcome = nullptr) {
    return write_finish(trial, result, outcome, /*only_own_running=*/true);
  }
  // A trial runs again (a promotion): "running". Its earlier output stays until the run ends
  // (finish_trial adds to it, or replaces it with TrialOutcome::replace_output).
  virtual void resume_trial(std::int64_t trial) = 0;

  [[nodiscard]] virtual std::vector<StoredTrial> trials(std::int64_t study, bool with_steps = false) const = 0;
  [[nodiscard]] virtual StoredTrial trial(std::int64_t id) const = 0;  // throws Error if there is none
  [[nodiscard]] virtual std::vector<StudyInfo> studies() const = 0;

  // `paratune study copy`: adds whole studies (every field of every trial, step and metric; ids are
  // the target's own) in one transaction. Throws Error naming the study and the locator if one of
  // the same name is here already; then nothing is written.
  virtual void import_studies(const std::vector<StudyContent>& studies) = 0;

  // `paratune study delete`: removes the study and every trial, step and metric of it in one
  // transaction; returns how many trials it held. The caller holds the study's controller lock
  // (store::delete_study takes it), so no process is running it.
  virtual std::int64_t delete_study(std::int64_t study) = 0;

 protected:
  // Runs `attempt(again)` until it returns without StoreUnavailable, or the retry time is spent
  // (then throws StoreUnavailable naming the locator, how long it tried and the last failure).
  // Before each retry it calls reconnect() and pauses (0.1 s, doubling to 2 s). `again` is false on
  // the first attempt: a retry may need to find out what an attempt whose reply was lost did (a
  // COMMIT that reached the server just before the connection broke). Every public call of a store
  // runs its whole transaction as one attempt, so a retry starts the transaction over.
  template <class Attempt>
  auto retrying(Attempt&& attempt) const -> decltype(attempt(false));
  // Before a retry: a server's store connects anew and takes its study locks again (throws
  // StoreUnavailable while it cannot; Error if another process took a lock meanwhile). Const: the
  // connection is not part of what a store holds.
  virtual void reconnect() const {}

  virtual std::pair<std::int64_t, int> insert_trial(std::int64_t study, const std::string& params_json,
                                                    const std::function<LaunchRecord(int number)>& describe) = 0;
  // finish_trial and finish_own_trial: false when `only_own_running` and the trial is not this
  // worker's running trial (nothing written).
  virtual bool write_finish(std::int64_t trial, const trial::TrialResult& result, const TrialOutcome* outcome,
                            bool only_own_running) = 0;

 private:
  // retrying's bookkeeping: when the store became unavailable (an outage), what it said last.
  struct Outage {
    std::chrono::steady_clock::time_point since;
    double pause_s = 0.1;
    bool active = false;
  };
  // After a StoreUnavailable `e`: throws it (as the final StoreUnavailable) when the retry time is
  // spent, else warns once per outage and pauses.
  void wait_to_retry(const StoreUnavailable& e, Outage& outage) const;
  // The outage is over: says so, when it was warned about.
  void recovered(const Outage& outage) const;

  std::string worker_;
  double retry_s_ = kDefaultStoreRetryS;
};

template <class Attempt>
auto StudyStore::retrying(Attempt&& attempt) const -> decltype(attempt(false)) {
  Outage outage;
  for (bool again = false;; again = true) {
    try {
      if (again) reconnect();
      if constexpr (std::is_void_v<decltype(attempt(false))>) {
        attempt(again);
        recovered(outage);
        return;
      } else {
        auto result = attempt(again);
        recovered(outage);
        return result;
      }
    } catch (const StoreUnavailable& e) {
      wait_to_retry(e, outage);
    }
  }
}

// The store a locator names: "postgresql://..." or "postgres://..." is a libpq connection URI
// (PostgresStudyStore), anything else the path of an SQLite file (SqliteStudyStore), created if
// needed. Throws Error naming the locator (password masked) when it cannot be opened, StoreUnavailable
// when a server stays unavailable for `retry_s`, then the store's retry time (set_retry_s). By
// default kDefaultStoreRetryS for kReadWrite (a study that runs waits out a blink), 0 for kReadOnly:
// a reader (a dashboard's request, a report) says at once that the store is unavailable, and is
// asked again.
std::unique_ptr<StudyStore> open_store(const std::string& locator, Access access = Access::kReadWrite,
                                       std::optional<double> retry_s = std::nullopt);

// The reason write_finish stores: the outcome's when it has one, else the run's, as printable text
// (spec/input_file.h: a trial's stderr may hold any bytes; a study keeps UTF-8 without control
// characters, which every reader -- JSON output, PostgreSQL's text, Python's str -- can take).
std::string finish_reason(const trial::TrialResult& result, const TrialOutcome* outcome);
// Why claim_trial marked a dead worker's trial interrupted at `now_unix_s`: "worker HOST:PID sent
// no heartbeat for N s" (N whole seconds since its last heartbeat, or its start if it had none).
std::string dead_worker_reason(const StoredTrial& trial, double now_unix_s);
// Why a study cannot be opened with `now_json` when it was created with `stored_json` (open_study's
// error): the first field that differs, as a dotted path with both values -- `direction is
// "maximize" now, "minimize" when created` -- or "" when they are the same document.
std::string identity_difference(const std::string& stored_json, const std::string& now_json);

// Whether `locator` names a PostgreSQL database.
bool is_postgres_locator(const std::string& locator);

// `locator` with any password masked ("postgresql://me:***@host/db", "...?password=***").
std::string mask_locator(const std::string& locator);

}  // namespace paratune::store
