// The study store in a PostgreSQL database (store/study_store.h), for studies that several hosts
// share. One libpq connection per store object.
//
// The locator is a libpq connection URI, "postgresql://[user[:password]@][host][:port][/dbname]
// [?param=value...]" (libpq's own parameters: sslmode, host=/socket/dir, ...); connect_timeout is
// 10 s unless the URI sets it. The tables are created on first use in one transaction, under a
// transaction-level advisory lock so that processes starting at once do not collide; the schema
// version is the row 'schema_version' of paratune_meta, and a newer one is refused.
//
// Every write that the SQLite store makes in one transaction is one transaction here as well. A
// trial's number is computed under a row lock on its study (SELECT ... FOR UPDATE), so processes
// beginning trials at once get distinct numbers (and UNIQUE(study_id, number) guards it); the same
// row lock serializes the claims of workers (claim_trial), whose lock_worker is the study's advisory
// lock taken shared. Doubles travel as text with 17 significant digits and read back exactly; NaN
// is stored as NULL, as SQLite does.
//
// A server that restarts or drops the connection stops nothing: each call runs its transaction
// again on a new connection (StudyStore::retrying, for up to the store's retry time), after taking
// this store's advisory locks again (the server dropped them with the old session). A retry that
// cannot tell whether its first COMMIT arrived looks first: a trial's end is written once, and a
// claimed trial is not claimed twice.
#pragma once

#include <map>
#include <mutex>
#include <optional>
#include <utility>

#include "paratune/store/output_cache.h"
#include "paratune/store/study_store.h"

struct pg_conn;

namespace paratune::store {

class PostgresStudyStore final : public StudyStore {
 public:
  // Connects and creates (or checks) the schema. Throws Error naming the masked locator when the
  // host name does not resolve, the server refuses the login, or holds a newer schema;
  // StoreUnavailable when the server does not answer, or refuses connections for now (starting up,
  // shutting down), for longer than `retry_s` (retried meanwhile, as every call is).
  // kReadOnly: every transaction of the session is read-only, and the schema must be there already.
  explicit PostgresStudyStore(const std::string& uri, Access access = Access::kReadWrite,
                              double retry_s = kDefaultStoreRetryS);
  ~PostgresStudyStore() override;

  [[nodiscard]] std::string locator() const override { return locator_; }
  // A session-level advisory lock (pg_try_advisory_lock) keyed on the study's name, held by this
  // store's connection: the server releases it when the connection ends, however the process ends.
  [[nodiscard]] std::unique_ptr<ControllerLock> lock_controller(const std::string& study_name) override;
  [[nodiscard]] std::unique_ptr<ControllerLock> lock_worker(const std::string& study_name) override;

  std::int64_t open_study(const std::string& name, const std::string& config_json) override;
  int mark_running_interrupted(std::int64_t study) override;
  int mark_failed_for_retry(std::int64_t study) override;
  void heartbeat(const std::vector<std::int64_t>& trials) override;
  void set_running_params(std::int64_t trial, const std::string& params_json) override;
  void set_prediction(std::int64_t trial, const std::string& prediction_json) override;
  void set_model(std::int64_t study, const std::string& model_json) override;
  ClaimOutcome claim_trial(std::int64_t study, double heartbeat_timeout_s, const Proposer& propose,
                           bool with_outputs) override;
  void resume_trial(std::int64_t trial) override;
  [[nodiscard]] std::vector<StoredTrial> trials(std::int64_t study, bool with_steps = false) const override;
  [[nodiscard]] StoredTrial trial(std::int64_t id) const override;
  [[nodiscard]] std::vector<StudyInfo> studies() const override;
  void import_studies(const std::vector<StudyContent>& studies) override;
  std::int64_t delete_study(std::int64_t study) override;

 protected:
  std::pair<std::int64_t, int> insert_trial(std::int64_t study, const std::string& params_json,
                                            const std::function<LaunchRecord(int number)>& describe) override;
  bool write_finish(std::int64_t trial, const trial::TrialResult& result, const TrialOutcome* outcome,
                    bool only_own_running) override;

 private:
  class Lock;
  friend class Lock;
  // The study's advisory lock, exclusive or shared; null if someone holds it (`held_here`: this
  // store itself).
  std::unique_ptr<ControllerLock> try_lock(const std::string& study_name, bool shared, bool& held_here);
  // A new connection, its session set up and the schema created or checked (the constructor's attempt).
  void connect(const std::string& uri);
  void create_schema();
  // Per connection: exact doubles; kReadOnly: read-only transactions.
  void set_up_session() const;
  // After a lost connection (StudyStore::retrying): a new one, its session set up, its locks taken again.
  void reconnect() const override;
  // A retry of insert_trial or claim_trial whose earlier attempt sent its COMMIT and lost the reply:
  // the trial that attempt stored (this worker's, running, with heartbeat `started_at`), if it did;
  // with mutex_ held.
  [[nodiscard]] std::optional<std::pair<std::int64_t, int>> committed_trial(std::int64_t study,
                                                                            double started_at) const;
  // Each of `trials`' steps and metrics (all of `study`'s trials), with mutex_ held.
  void read_outputs(std::int64_t study, std::vector<StoredTrial>& trials) const;

  std::string locator_;  // masked
  Access access_;
  pg_conn* conn_ = nullptr;
  mutable std::mutex mutex_;          // one statement at a time on the connection
  mutable OutputCache outputs_;       // ended trials' steps and metrics, read once
  // The studies whose advisory lock this store holds, and whether shared (a worker's); guarded by
  // mutex_. Taken again on a new connection (reconnect).
  std::map<std::string, bool> locked_;
};

}  // namespace paratune::store
