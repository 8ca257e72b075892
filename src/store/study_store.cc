#include "paratune/store/study_store.h"

#include <fmt/format.h>
#include <sqlite3.h>

#include <chrono>

#include "paratune/spec/error.h"

namespace paratune::store {
namespace {

// Version 2 added trials.prediction_json and studies.model_json (a version-1 file is upgraded in place).
constexpr int kSchemaVersion = 3;

constexpr const char* kSchema = R"sql(
CREATE TABLE IF NOT EXISTS studies (
  id INTEGER PRIMARY KEY,
  name TEXT NOT NULL UNIQUE,
  created_unix_s REAL NOT NULL,
  config_json TEXT NOT NULL,
  model_json TEXT
);
CREATE TABLE IF NOT EXISTS trials (
  id INTEGER PRIMARY KEY,
  study_id INTEGER NOT NULL REFERENCES studies(id),
  number INTEGER NOT NULL,
  params_json TEXT NOT NULL,
  config_json TEXT NOT NULL,
  command TEXT NOT NULL,
  dir TEXT NOT NULL,
  status TEXT NOT NULL,
  started_unix_s REAL NOT NULL,
  ended_unix_s REAL,
  exit_code INTEGER,
  exit_signal INTEGER,
  reason TEXT,
  stdout_path TEXT,
  stderr_path TEXT,
  steps INTEGER NOT NULL DEFAULT 0,
  throughput REAL,
  throughput_variance REAL,
  throughput_ci_low REAL,
  throughput_ci_high REAL,
  peak_memory_bytes REAL,
  malformed_lines INTEGER NOT NULL DEFAULT 0,
  prediction_json TEXT,
  objective REAL,
  rung INTEGER,
  hpo_json TEXT,
  UNIQUE (study_id, number)
);
CREATE TABLE IF NOT EXISTS steps (
  trial_id INTEGER NOT NULL REFERENCES trials(id),
  step INTEGER NOT NULL,
  step_time_s REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS metrics (
  trial_id INTEGER NOT NULL REFERENCES trials(id),
  name TEXT NOT NULL,
  value REAL NOT NULL,
  step INTEGER
);
CREATE INDEX IF NOT EXISTS trials_by_study ON trials(study_id, number);
CREATE INDEX IF NOT EXISTS steps_by_trial ON steps(trial_id);
CREATE INDEX IF NOT EXISTS metrics_by_trial ON metrics(trial_id);
)sql";

double unix_now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// A prepared statement, finalized on scope exit. Binds by position (1-based).
class Statement {
 public:
  Statement(sqlite3* db, const char* sql) : db_(db) {
    if (sqlite3_prepare_v2(db, sql, -1, &stmt_, nullptr) != SQLITE_OK)
      throw Error(fmt::format("study store: {} (in: {})", sqlite3_errmsg(db), sql));
  }
  ~Statement() { sqlite3_finalize(stmt_); }
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;

  Statement& bind(int i, std::int64_t v) { return check(sqlite3_bind_int64(stmt_, i, v)); }
  Statement& bind(int i, int v) { return check(sqlite3_bind_int64(stmt_, i, v)); }
  Statement& bind(int i, double v) { return check(sqlite3_bind_double(stmt_, i, v)); }
  Statement& bind(int i, const std::string& v) {
    return check(sqlite3_bind_text(stmt_, i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT));
  }
  Statement& bind(int i, const std::optional<double>& v) { return v ? bind(i, *v) : check(sqlite3_bind_null(stmt_, i)); }
  Statement& bind(int i, const std::optional<std::int64_t>& v) {
    return v ? bind(i, *v) : check(sqlite3_bind_null(stmt_, i));
  }

  // true while rows come; false when done.
  bool step() {
    const int rc = sqlite3_step(stmt_);
    if (rc == SQLITE_ROW) return true;
    if (rc == SQLITE_DONE) return false;
    throw Error(fmt::format("study store: {}", sqlite3_errmsg(db_)));
  }
  void run() {
    while (step()) {
    }
    reset();
  }
  void reset() { sqlite3_reset(stmt_); }

  [[nodiscard]] std::int64_t integer(int col) const { return sqlite3_column_int64(stmt_, col); }
  [[nodiscard]] double real(int col) const { return sqlite3_column_double(stmt_, col); }
  [[nodiscard]] bool null(int col) const { return sqlite3_column_type(stmt_, col) == SQLITE_NULL; }
  [[nodiscard]] std::string text(int col) const {
    const unsigned char* t = sqlite3_column_text(stmt_, col);
    return t ? std::string(reinterpret_cast<const char*>(t), static_cast<std::size_t>(sqlite3_column_bytes(stmt_, col)))
             : std::string();
  }

 private:
  Statement& check(int rc) {
    if (rc != SQLITE_OK) throw Error(fmt::format("study store: {}", sqlite3_errmsg(db_)));
    return *this;
  }
  sqlite3* db_;
  sqlite3_stmt* stmt_ = nullptr;
};

// BEGIN IMMEDIATE ... COMMIT, rolled back if the scope is left by an exception.
class Transaction {
 public:
  explicit Transaction(sqlite3* db) : db_(db) { exec("BEGIN IMMEDIATE"); }
  ~Transaction() {
    if (!done_) sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
  }
  void commit() {
    exec("COMMIT");
    done_ = true;
  }

 private:
  void exec(const char* sql) {
    char* message = nullptr;
    if (sqlite3_exec(db_, sql, nullptr, nullptr, &message) != SQLITE_OK) {
      const std::string m = message ? message : "unknown error";
      sqlite3_free(message);
      throw Error(fmt::format("study store: {}: {}", sql, m));
    }
  }
  sqlite3* db_;
  bool done_ = false;
};

}  // namespace

StudyStore::StudyStore(const std::filesystem::path& path) : path_(path) {
  if (sqlite3_open_v2(path.c_str(), &db_, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX,
                      nullptr) != SQLITE_OK) {
    const std::string message = db_ ? sqlite3_errmsg(db_) : "out of memory";
    sqlite3_close(db_);
    throw Error(fmt::format("study file {}: cannot open: {}", path.string(), message));
  }
  sqlite3_busy_timeout(db_, 10000);
  try {
    std::int64_t found = 0;
    {
      Statement version(db_, "PRAGMA user_version");
      version.step();
      found = version.integer(0);
    }
    if (found > kSchemaVersion)
      throw Error(fmt::format("schema version {} is newer than this paratune's ({})", found, kSchemaVersion));
    exec("PRAGMA journal_mode=WAL");
    exec("PRAGMA synchronous=NORMAL");
    exec("PRAGMA foreign_keys=ON");
    if (found == 1) {  // upgrade: the two columns of version 2
      exec("ALTER TABLE trials ADD COLUMN prediction_json TEXT");
      exec("ALTER TABLE studies ADD COLUMN model_json TEXT");
    }
    if (found == 1 || found == 2) {  // upgrade: the hyperparameter studies' columns of version 3
      exec("ALTER TABLE trials ADD COLUMN objective REAL");
      exec("ALTER TABLE trials ADD COLUMN rung INTEGER");
      exec("ALTER TABLE trials ADD COLUMN hpo_json TEXT");
    }
    exec(kSchema);
    exec(fmt::format("PRAGMA user_version={}", kSchemaVersion).c_str());
  } catch (const Error& e) {
    sqlite3_close(db_);
    db_ = nullptr;
    throw Error(fmt::format("study file {}: not a paratune study file: {}", path.string(), e.what()));
  }
}

StudyStore::~StudyStore() { sqlite3_close(db_); }

void StudyStore::exec(const char* sql) const {
  char* message = nullptr;
  if (sqlite3_exec(db_, sql, nullptr, nullptr, &message) != SQLITE_OK) {
    const std::string m = message ? message : sqlite3_errmsg(db_);
    sqlite3_free(message);
    throw Error(m);
  }
}

std::int64_t StudyStore::open_study(const std::string& name, const std::string& config_json) {
  Statement find(db_, "SELECT id, config_json FROM studies WHERE name = ?");
  find.bind(1, name);
  if (find.step()) {
    if (find.text(1) != config_json)
      throw Error(fmt::format(
          "study file {}: study '{}' was created with another configuration (search space, command, steps or "
          "limits); resume it with the same settings or use a new file.\n  stored: {}\n  now:    {}",
          path_.string(), name, find.text(1), config_json));
    return find.integer(0);
  }
  Statement insert(db_, "INSERT INTO studies (name, created_unix_s, config_json) VALUES (?, ?, ?)");
  insert.bind(1, name).bind(2, unix_now()).bind(3, config_json).run();
  return sqlite3_last_insert_rowid(db_);
}

int StudyStore::mark_running_interrupted(std::int64_t study) {
  // A trial promoted from a rung rests there again (its checkpoint of that rung is intact); any
  // other becomes interrupted.
  Statement update(db_,
                   "UPDATE trials SET status = CASE WHEN rung IS NULL THEN 'interrupted' ELSE 'pruned' END, "
                   "reason = 'the controller stopped while it ran', "
                   "ended_unix_s = started_unix_s WHERE study_id = ? AND status = 'running'");
  update.bind(1, study).run();
  return sqlite3_changes(db_);
}

int StudyStore::mark_failed_for_retry(std::int64_t study) {
  Statement update(db_,
                   "UPDATE trials SET status = 'interrupted', "
                   "reason = 'retried by --retry-failed; it had failed: ' || COALESCE(reason, '') "
                   "WHERE study_id = ? AND status = 'failed'");
  update.bind(1, study).run();
  return sqlite3_changes(db_);
}

std::pair<std::int64_t, int> StudyStore::begin_trial(std::int64_t study, const std::string& params_json,
                                                     const std::string& config_json, const std::string& command,
                                                     const std::string& dir) {
  return begin_trial(study, params_json, [&](int) { return LaunchRecord{config_json, command, dir}; });
}

std::pair<std::int64_t, int> StudyStore::begin_trial(std::int64_t study, const std::string& params_json,
                                                     const std::function<LaunchRecord(int number)>& describe) {
  Transaction t(db_);
  Statement next(db_, "SELECT COALESCE(MAX(number), 0) + 1 FROM trials WHERE study_id = ?");
  next.bind(1, study);
  next.step();
  const int number = static_cast<int>(next.integer(0));
  const LaunchRecord record = describe(number);
  Statement insert(db_,
                   "INSERT INTO trials (study_id, number, params_json, config_json, command, dir, status, "
                   "started_unix_s) VALUES (?, ?, ?, ?, ?, ?, 'running', ?)");
  insert.bind(1, study).bind(2, number).bind(3, params_json).bind(4, record.config_json).bind(5, record.command);
  insert.bind(6, record.dir).bind(7, unix_now()).run();
  const std::int64_t id = sqlite3_last_insert_rowid(db_);
  t.commit();
  return {id, number};
}

void StudyStore::finish_trial(std::int64_t trial, const trial::TrialResult& r, const TrialOutcome* outcome) {
  Transaction t(db_);
  if (outcome && outcome->replace_output) {  // a run from step 0 replaces the trial's earlier output
    Statement(db_, "DELETE FROM steps WHERE trial_id = ?").bind(1, trial).run();
    Statement(db_, "DELETE FROM metrics WHERE trial_id = ?").bind(1, trial).run();
    Statement(db_, "UPDATE trials SET peak_memory_bytes = NULL WHERE id = ?").bind(1, trial).run();
  }
  const bool measured = r.throughput.steps_used > 0;
  // Numbered parameters: the peak is used three times. The peak over runs is the largest any reported.
  Statement update(db_,
                   "UPDATE trials SET status = ?1, started_unix_s = MIN(started_unix_s, ?2), ended_unix_s = ?3, "
                   "exit_code = ?4, exit_signal = ?5, reason = ?6, stdout_path = ?7, stderr_path = ?8, "
                   "throughput = ?9, throughput_variance = ?10, throughput_ci_low = ?11, throughput_ci_high = ?12, "
                   "peak_memory_bytes = CASE WHEN ?13 IS NULL THEN peak_memory_bytes WHEN peak_memory_bytes IS NULL "
                   "THEN ?13 ELSE MAX(peak_memory_bytes, ?13) END, malformed_lines = malformed_lines + ?14 "
                   "WHERE id = ?15");
  update.bind(1, outcome ? outcome->status : std::string(trial::to_string(r.status))).bind(2, r.started_unix_s);
  update.bind(3, r.ended_unix_s).bind(4, r.exit_code).bind(5, r.exit_signal);
  update.bind(6, outcome && !outcome->reason.empty() ? outcome->reason : r.reason).bind(7, r.stdout_path.string());
  update.bind(8, r.stderr_path.string());
  update.bind(9, measured ? std::optional<double>(r.throughput.steps_per_s) : std::nullopt);
  update.bind(10, r.throughput.variance).bind(11, r.throughput.ci95_low).bind(12, r.throughput.ci95_high);
  update.bind(13, r.output.peak_memory_bytes).bind(14, r.output.malformed_lines).bind(15, trial).run();
  Statement step(db_, "INSERT INTO steps (trial_id, step, step_time_s) VALUES (?, ?, ?)");
  for (const trial::StepReport& s : r.output.steps) step.bind(1, trial).bind(2, s.step).bind(3, s.step_time_s).run();
  Statement metric(db_, "INSERT INTO metrics (trial_id, name, value, step) VALUES (?, ?, ?, ?)");
  for (const trial::MetricReport& m : r.output.metrics)
    metric.bind(1, trial).bind(2, m.name).bind(3, m.value).bind(4, m.step).run();
  // Every run of a trial adds its steps (a promoted trial resumes where it rested).
  Statement(db_, "UPDATE trials SET steps = (SELECT COUNT(*) FROM steps WHERE trial_id = ?) WHERE id = ?")
      .bind(1, trial).bind(2, trial).run();
  if (outcome) {
    Statement hpo(db_, "UPDATE trials SET objective = ?, rung = ?, hpo_json = ? WHERE id = ?");
    hpo.bind(1, outcome->objective).bind(2, outcome->rung ? std::optional<std::int64_t>(*outcome->rung) : std::nullopt);
    hpo.bind(3, outcome->hpo_json).bind(4, trial).run();
  }
  t.commit();
}

void StudyStore::resume_trial(std::int64_t trial) {
  Statement(db_, "UPDATE trials SET status = 'running', ended_unix_s = NULL WHERE id = ?").bind(1, trial).run();
}

namespace {

constexpr const char* kTrialColumns =
    "SELECT id, number, params_json, config_json, command, dir, status, started_unix_s, ended_unix_s, exit_code, "
    "exit_signal, reason, stdout_path, stderr_path, steps, throughput, throughput_variance, throughput_ci_low, "
    "throughput_ci_high, peak_memory_bytes, malformed_lines, prediction_json, objective, rung, hpo_json FROM trials ";

StoredTrial read_trial(const Statement& q) {
  StoredTrial t;
  t.id = q.integer(0);
  t.number = static_cast<int>(q.integer(1));
  t.params_json = q.text(2);
  t.config_json = q.text(3);
  t.command = q.text(4);
  t.dir = q.text(5);
  t.status = q.text(6);
  t.started_unix_s = q.real(7);
  t.ended_unix_s = q.null(8) ? 0 : q.real(8);
  t.exit_code = q.null(9) ? -1 : static_cast<int>(q.integer(9));
  t.exit_signal = q.null(10) ? 0 : static_cast<int>(q.integer(10));
  t.reason = q.text(11);
  t.stdout_path = q.text(12);
  t.stderr_path = q.text(13);
  t.steps = static_cast<int>(q.integer(14));
  if (!q.null(15)) t.throughput = q.real(15);
  t.throughput_variance = q.real(16);
  t.throughput_ci_low = q.real(17);
  t.throughput_ci_high = q.real(18);
  if (!q.null(19)) t.peak_memory_bytes = q.real(19);
  t.malformed_lines = q.integer(20);
  t.prediction_json = q.text(21);
  if (!q.null(22)) t.objective = q.real(22);
  if (!q.null(23)) t.rung = static_cast<int>(q.integer(23));
  t.hpo_json = q.text(24);
  return t;
}

}  // namespace

StoredTrial StudyStore::trial(std::int64_t id) const {
  Statement q(db_, (std::string(kTrialColumns) + "WHERE id = ?").c_str());
  q.bind(1, id);
  if (!q.step()) throw Error(fmt::format("study file {}: no trial with id {}", path_.string(), id));
  return read_trial(q);
}

std::vector<StoredTrial> StudyStore::trials(std::int64_t study, bool with_steps) const {
  Statement q(db_, (std::string(kTrialColumns) + "WHERE study_id = ? ORDER BY number").c_str());
  q.bind(1, study);
  std::vector<StoredTrial> out;
  while (q.step()) out.push_back(read_trial(q));
  if (with_steps) {
    Statement s(db_, "SELECT step_time_s FROM steps WHERE trial_id = ? ORDER BY rowid");
    for (StoredTrial& t : out) {
      s.bind(1, t.id);
      while (s.step()) t.step_times_s.push_back(s.real(0));
      s.reset();
    }
    Statement m(db_, "SELECT name, value, step FROM metrics WHERE trial_id = ? ORDER BY rowid");
    for (StoredTrial& t : out) {
      m.bind(1, t.id);
      while (m.step()) {
        trial::MetricReport r{m.text(0), m.real(1), std::nullopt, std::nullopt};
        if (!m.null(2)) r.step = m.integer(2);
        t.metrics.push_back(std::move(r));
      }
      m.reset();
    }
  }
  return out;
}

std::vector<StudyInfo> StudyStore::studies() const {
  Statement q(db_, "SELECT id, name, created_unix_s, config_json, model_json FROM studies ORDER BY id");
  std::vector<StudyInfo> out;
  while (q.step()) out.push_back({q.integer(0), q.text(1), q.real(2), q.text(3), q.text(4)});
  return out;
}

void StudyStore::set_prediction(std::int64_t trial, const std::string& prediction_json) {
  Statement(db_, "UPDATE trials SET prediction_json = ? WHERE id = ?").bind(1, prediction_json).bind(2, trial).run();
}

void StudyStore::set_model(std::int64_t study, const std::string& model_json) {
  Statement(db_, "UPDATE studies SET model_json = ? WHERE id = ?").bind(1, model_json).bind(2, study).run();
}

}  // namespace paratune::store
