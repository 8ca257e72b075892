// The study store in one SQLite file (store/study_store.h): the embedded default.
//
// WAL mode, synchronous=NORMAL: a committed transaction survives the controller being killed
// (even with SIGKILL) at any moment; only an OS crash may lose the last ones. The schema version is
// the file's user_version; files of versions 1 to 3 are upgraded in place when opened.
//
// A full disk, an I/O error, or another process holding the file's write lock longer than the busy
// timeout (10 s) stops nothing: each call runs its transaction again (StudyStore::retrying) for up
// to the store's retry time, then throws StoreUnavailable.
#pragma once

#include <filesystem>

#include "paratune/store/output_cache.h"
#include "paratune/store/study_store.h"

struct sqlite3;

namespace paratune::store {

class SqliteStudyStore final : public StudyStore {
 public:
  // Opens (creating if needed) the study file. Throws Error naming the file if it cannot be opened,
  // is not a paratune study or has a newer schema. kReadOnly: an existing file of the current schema
  // only, opened read-only (WAL: reading never blocks the controller writing it).
  explicit SqliteStudyStore(const std::filesystem::path& path, Access access = Access::kReadWrite);
  ~SqliteStudyStore() override;

  [[nodiscard]] std::string locator() const override { return path_.string(); }
  [[nodiscard]] const std::filesystem::path& path() const { return path_; }
  [[nodiscard]] std::unique_ptr<ControllerLock> lock_controller(const std::string& study_name) override;
  [[nodiscard]] std::unique_ptr<ControllerLock> lock_worker(const std::string& study_name) override;

  std::int64_t open_study(const std::string& name, const std::string& config_json) override;
  int mark_running_interrupted(std::int64_t study) override;
  int mark_failed_for_retry(std::int64_t study) override;
  void heartbeat(const std::vector<std::int64_t>& trials) override;
  void set_running_params(std::int64_t trial, const std::string& params_json) override;
  [[nodiscard]] bool written_elsewhere() override;  // PRAGMA data_version
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
  void exec(const char* sql) const;
  void read_outputs(std::vector<StoredTrial>& trials) const;  // each trial's steps and metrics
  std::filesystem::path path_;
  sqlite3* db_ = nullptr;
  mutable OutputCache outputs_;  // ended trials' steps and metrics, read once
  std::int64_t data_version_ = -1;  // written_elsewhere: PRAGMA data_version when last asked
};

}  // namespace paratune::store
