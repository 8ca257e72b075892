#include "paratune/store/sqlite_store.h"

#include <fmt/format.h>
#include <sqlite3.h>

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <thread>

#include "paratune/spec/error.h"
#include "paratune/spec/input_file.h"
#include "file_lock.h"
#include "unix_time.h"

namespace paratune::store {
namespace {

// Version 2 added trials.prediction_json and studies.model_json, version 3 trials.objective, rung
// and hpo_json, version 4 trials.location, worker and heartbeat_unix_s (older files are upgraded in
// place). postgres_store.cc keeps the same tables and columns.

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
  location TEXT,
  worker TEXT,
  heartbeat_unix_s REAL,
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

// NULL for an empty text (the columns a store leaves NULL until set).
std::optional<std::string> text_or_null(const std::string& s) {
  return s.empty() ? std::nullopt : std::optional<std::string>(s);
}

// Whether a failure `rc` may pass when tried again: another process held the file's lock longer
// than the busy timeout (BUSY, LOCKED), the disk is full (FULL) or an I/O error (IOERR, PROTOCOL:
// a network file system blinking). StudyStore::retrying runs the whole transaction again.
bool transient(int rc) {
  switch (rc & 0xff) {  // the primary result code of an extended one
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
    case SQLITE_FULL:
    case SQLITE_IOERR:
    case SQLITE_PROTOCOL:
      return true;
    default:
      return false;
  }
}

// Throws the failure `rc` of `db`: StoreUnavailable (naming the file) when it is transient, else Error.
[[noreturn]] void fail(sqlite3* db, int rc, const std::string& message) {
  if (transient(rc)) {
    const char* file = sqlite3_db_filename(db, "main");
    throw StoreUnavailable(fmt::format("study file {}: {}", file ? file : "(unknown)", message));
  }
  throw Error(fmt::format("study store: {}", message));
}

// A prepared statement, finalized on scope exit. Binds by position (1-based).
class Statement {
 public:
  Statement(sqlite3* db, const char* sql) : db_(db) {
    if (const int rc = sqlite3_prepare_v2(db, sql, -1, &stmt_, nullptr); rc != SQLITE_OK)
      fail(db, rc, fmt::format("{} (in: {})", sqlite3_errmsg(db), sql));
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
  Statement& bind(int i, const std::optional<std::string>& v) {
    return v ? bind(i, *v) : check(sqlite3_bind_null(stmt_, i));
  }

  // true while rows come; false when done.
  bool step() {
    const int rc = sqlite3_step(stmt_);
    if (rc == SQLITE_ROW) return true;
    if (rc == SQLITE_DONE) return false;
    fail(db_, rc, sqlite3_errmsg(db_));
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
    if (rc != SQLITE_OK) fail(db_, rc, sqlite3_errmsg(db_));
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
    if (const int rc = sqlite3_exec(db_, sql, nullptr, nullptr, &message); rc != SQLITE_OK) {
      const std::string m = message ? message : "unknown error";
      sqlite3_free(message);
      fail(db_, rc, fmt::format("{}: {}", sql, m));
    }
  }
  sqlite3* db_;
  bool done_ = false;
};

// One study file, one name. SQLite keeps a database's write-ahead log and its shared-memory index
// next to the *name* a process opened it by (NAME-wal, NAME-shm), while the file's locks are on
// its inode: two processes opening one file by two hard links would each write a log of their own,
// never see the other's trials, run every point twice and lose one's results. Workers cannot be
// made to meet by name -- the links of a file are equal, none is its "real" name, and a name
// recorded in the study differs between hosts and mounts -- so a file with more than one link is
// refused, whichever name opens it, with what to do instead. (Symbolic links are no trouble:
// SQLite follows them to the file's own name, as FileLock does.) A link made while a worker runs
// refuses every process that opens the file after it; the running one keeps its name.
void refuse_hard_links(const std::filesystem::path& path) {
  struct stat info {};
  if (::stat(path.c_str(), &info) != 0 || info.st_nlink <= 1) return;
  throw Error(fmt::format(
      "study file {}: the file has {} names (hard links); SQLite keeps its write-ahead log next to the name it "
      "is opened by ({}-wal), so processes opening it by different names would not see each other's trials and "
      "would run them twice: open it by one name only (remove the other links: find / -xdev -samefile {}), or "
      "give a copy (cp) its own name",
      path.string(), info.st_nlink, path.string(), path.string()));
}

// Whether the file lies where nothing can write: its directory cannot be written (a read-only
// mount, a read-only directory) and holds no write-ahead log (a writer would have one). SQLite
// cannot read a WAL-mode file there the usual way -- a reader needs NAME-shm, which it cannot
// create -- but nothing can change the file either, so it may be opened immutable.
bool on_read_only_storage(const std::filesystem::path& path) {
  const std::filesystem::path dir = path.has_parent_path() ? path.parent_path() : std::filesystem::path(".");
  std::error_code ec;
  return ::access(dir.c_str(), W_OK) != 0 && !std::filesystem::exists(path.string() + "-wal", ec);
}

// "file:PATH?immutable=1" with PATH percent-encoded (SQLite URI filenames: '?', '#' and '%' would
// end or escape it).
std::string immutable_uri(const std::filesystem::path& path) {
  std::string uri = "file:";
  for (const unsigned char c : std::filesystem::absolute(path).string()) {
    const bool plain = std::isalnum(c) != 0 || c == '/' || c == '.' || c == '-' || c == '_' || c == '~';
    uri += plain ? std::string(1, static_cast<char>(c)) : fmt::format("%{:02X}", c);
  }
  return uri + "?immutable=1";
}

// A reader found no paratune schema: a file that another process is creating right now (empty, or
// no tables yet: its first transaction has not committed) is waited for; anything else is not a
// study.
bool being_created(sqlite3* db, const std::filesystem::path& path) {
  std::error_code ec;
  if (std::filesystem::file_size(path, ec) == 0 && !ec) return true;
  Statement tables(db, "SELECT COUNT(*) FROM sqlite_master");
  tables.step();
  return tables.integer(0) == 0;
}

}  // namespace

SqliteStudyStore::SqliteStudyStore(const std::filesystem::path& path, Access access) : path_(path) {
  const bool immutable = access == Access::kReadOnly && on_read_only_storage(path);
  if (!immutable) refuse_hard_links(path);  // nothing writes an immutable file: any name reads it
  const int flags = access == Access::kReadOnly ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE;
  const std::string name = immutable ? immutable_uri(path) : path.string();
  if (sqlite3_open_v2(name.c_str(), &db_, flags | SQLITE_OPEN_FULLMUTEX | (immutable ? SQLITE_OPEN_URI : 0), nullptr) !=
      SQLITE_OK) {
    const std::string message = db_ ? sqlite3_errmsg(db_) : "out of memory";
    sqlite3_close(db_);
    throw Error(fmt::format("study file {}: cannot open: {}", path.string(), message));
  }
  if (access == Access::kReadWrite && sqlite3_db_readonly(db_, "main") == 1) {
    sqlite3_close(db_);
    throw Error(fmt::format("study file {}: cannot be written (a read-only file, directory or file system); "
                            "`paratune study show`, `report` and `dashboard` read it",
                            path.string()));
  }
  sqlite3_busy_timeout(db_, 10000);
  const auto version = [this] {
    Statement version(db_, "PRAGMA user_version");
    version.step();
    const std::int64_t found = version.integer(0);
    if (found > kSchemaVersion)
      throw Error(fmt::format("schema version {} is newer than this paratune's ({})", found, kSchemaVersion));
    return found;
  };
  try {
    if (access == Access::kReadOnly) {
      const std::int64_t found = version();
      if (found == 0 && being_created(db_, path))
        throw StoreUnavailable(fmt::format("waiting for study file {}: it is being created (no paratune schema in it "
                                           "yet)",
                                           path.string()));
      if (found != kSchemaVersion)
        throw Error(found == 0 ? std::string("it holds no paratune schema")
                               : fmt::format("schema version {} is older than this paratune's ({}): open it once with "
                                             "`paratune study show` to upgrade it",
                                             found, kSchemaVersion));
      return;
    }
    if (version() == 0) {
      // Another program's database (an Optuna storage keeps its studies in an SQLite file too): refused
      // before anything -- the journal mode included -- is written to it.
      Statement tables(db_, "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name");
      std::string names;
      int count = 0;
      while (tables.step()) names += (count++ ? ", " : "") + tables.text(0);
      // (Tables seen, version still 0: not a paratune file being created -- its creation writes both
      // in one transaction.)
      if (count > 0 && version() == 0)
        throw Error(fmt::format("it holds another program's tables ({}) and no paratune schema; paratune keeps its "
                                "studies in files of its own (an Optuna storage is not one: give a new file)",
                                names));
    }
    // Switching to WAL takes the file's exclusive lock without waiting on the busy handler: while
    // another process opens the same new file at once it is busy, for a moment.
    for (int attempt = 0;; ++attempt) {
      const int rc = sqlite3_exec(db_, "PRAGMA journal_mode=WAL", nullptr, nullptr, nullptr);
      if (rc == SQLITE_OK) break;
      if (rc != SQLITE_BUSY || attempt == 1000) throw Error(sqlite3_errmsg(db_));
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    exec("PRAGMA synchronous=NORMAL");
    exec("PRAGMA foreign_keys=ON");
    // Creation and upgrades in one transaction: a second process opening the file at the same time
    // waits, then finds it done.
    Transaction t(db_);
    const std::int64_t found = version();
    if (found == 1) {  // upgrade: the two columns of version 2
      exec("ALTER TABLE trials ADD COLUMN prediction_json TEXT");
      exec("ALTER TABLE studies ADD COLUMN model_json TEXT");
    }
    if (found >= 1 && found <= 2) {  // upgrade: the hyperparameter studies' columns of version 3
      exec("ALTER TABLE trials ADD COLUMN objective REAL");
      exec("ALTER TABLE trials ADD COLUMN rung INTEGER");
      exec("ALTER TABLE trials ADD COLUMN hpo_json TEXT");
    }
    if (found >= 1 && found <= 3) {  // upgrade: where and by whom trials ran (version 4)
      exec("ALTER TABLE trials ADD COLUMN location TEXT");
      exec("ALTER TABLE trials ADD COLUMN worker TEXT");
      exec("ALTER TABLE trials ADD COLUMN heartbeat_unix_s REAL");
    }
    exec(kSchema);
    if (found != kSchemaVersion) exec(fmt::format("PRAGMA user_version={}", kSchemaVersion).c_str());
    t.commit();
  } catch (const StoreUnavailable&) {  // being created, or a full disk or a lock held too long: not "not a study"
    sqlite3_close(db_);
    db_ = nullptr;
    throw;
  } catch (const Error& e) {
    sqlite3_close(db_);
    db_ = nullptr;
    throw Error(fmt::format("study file {}: not a paratune study file: {}", path.string(), e.what()));
  }
}

SqliteStudyStore::~SqliteStudyStore() { sqlite3_close(db_); }

void SqliteStudyStore::exec(const char* sql) const {
  char* message = nullptr;
  if (const int rc = sqlite3_exec(db_, sql, nullptr, nullptr, &message); rc != SQLITE_OK) {
    const std::string m = message ? message : sqlite3_errmsg(db_);
    sqlite3_free(message);
    if (transient(rc)) fail(db_, rc, m);
    throw Error(m);
  }
}

std::unique_ptr<ControllerLock> SqliteStudyStore::lock_controller(const std::string& /*study_name*/) {
  return std::make_unique<FileLock>(path_);
}

std::unique_ptr<ControllerLock> SqliteStudyStore::lock_worker(const std::string& /*study_name*/) {
  return std::make_unique<FileLock>(path_, /*shared=*/true);
}

std::int64_t SqliteStudyStore::open_study(const std::string& name, const std::string& config_json) {
  return retrying([&](bool /*again*/) {
    // Inserted unless it exists (workers in other processes may create it at the same moment), then read.
    Statement insert(db_, "INSERT INTO studies (name, created_unix_s, config_json) VALUES (?, ?, ?) "
                          "ON CONFLICT (name) DO NOTHING");
    insert.bind(1, name).bind(2, unix_now()).bind(3, config_json).run();
    Statement find(db_, "SELECT id, config_json FROM studies WHERE name = ?");
    find.bind(1, name);
    find.step();
    if (find.text(1) != config_json)
      throw Error(fmt::format(
          "study file {}: study '{}' was created with another configuration: {}; resume it with the same settings, "
          "or use a new file or study name.\n  stored: {}\n  now:    {}",
          path_.string(), name, identity_difference(find.text(1), config_json), find.text(1), config_json));
    return find.integer(0);
  });
}

int SqliteStudyStore::mark_running_interrupted(std::int64_t study) {
  return retrying([&](bool /*again*/) {
    // A trial promoted from a rung rests there again (its checkpoint of that rung is intact); any
    // other becomes interrupted.
    Statement update(db_,
                     "UPDATE trials SET status = CASE WHEN rung IS NULL THEN 'interrupted' ELSE 'pruned' END, "
                     "reason = 'the process running it stopped while it ran', "
                     "ended_unix_s = started_unix_s WHERE study_id = ? AND status = 'running'");
    update.bind(1, study).run();
    return sqlite3_changes(db_);
  });
}

int SqliteStudyStore::mark_failed_for_retry(std::int64_t study) {
  return retrying([&](bool /*again*/) {
    Statement update(db_,
                     "UPDATE trials SET status = 'interrupted', "
                     "reason = 'retried by --retry-failed; it had failed: ' || COALESCE(reason, '') "
                     "WHERE study_id = ? AND status = 'failed'");
    update.bind(1, study).run();
    return sqlite3_changes(db_);
  });
}

std::pair<std::int64_t, int> SqliteStudyStore::insert_trial(std::int64_t study, const std::string& params_json,
                                                            const std::function<LaunchRecord(int number)>& describe) {
  return retrying([&](bool /*again*/) -> std::pair<std::int64_t, int> {
    Transaction t(db_);  // BEGIN IMMEDIATE: the file's write lock, so the number is this process's alone
    Statement next(db_, "SELECT COALESCE(MAX(number), 0) + 1 FROM trials WHERE study_id = ?");
    next.bind(1, study);
    next.step();
    const int number = static_cast<int>(next.integer(0));
    const LaunchRecord record = describe(number);
    const double now = unix_now();
    Statement insert(db_,
                     "INSERT INTO trials (study_id, number, params_json, config_json, command, dir, status, "
                     "started_unix_s, location, worker, heartbeat_unix_s) VALUES (?, ?, ?, ?, ?, ?, 'running', ?, ?, ?, ?)");
    insert.bind(1, study).bind(2, number).bind(3, params_json).bind(4, record.config_json).bind(5, record.command);
    insert.bind(6, record.dir).bind(7, now).bind(8, text_or_null(record.location)).bind(9, text_or_null(worker_name()));
    insert.bind(10, now).run();
    const std::int64_t id = sqlite3_last_insert_rowid(db_);
    t.commit();
    return {id, number};
  });
}

void SqliteStudyStore::heartbeat(const std::vector<std::int64_t>& trials) {
  retrying([&](bool /*again*/) {
    if (trials.empty()) return;
    Transaction t(db_);
    Statement update(db_, "UPDATE trials SET heartbeat_unix_s = ? WHERE id = ?");
    const double now = unix_now();
    for (const std::int64_t id : trials) update.bind(1, now).bind(2, id).run();
    t.commit();
  });
}

void SqliteStudyStore::set_running_params(std::int64_t trial, const std::string& params_json) {
  retrying([&](bool /*again*/) {
    Statement update(db_, "UPDATE trials SET params_json = ? WHERE id = ? AND status = 'running'");
    update.bind(1, params_json).bind(2, trial).run();
  });
}

bool SqliteStudyStore::written_elsewhere() {
  // SQLite's data_version changes when another connection commits, never for this one's own writes
  // (sqlite.org/pragma.html#pragma_data_version).
  try {
    Statement version(db_, "PRAGMA data_version");
    if (!version.step()) return true;
    const std::int64_t now = version.integer(0);
    const bool changed = now != data_version_;
    data_version_ = now;
    return changed;
  } catch (const Error&) {  // busy, or unavailable: cannot tell, so assume it was
    return true;
  }
}

bool SqliteStudyStore::write_finish(std::int64_t trial, const trial::TrialResult& r, const TrialOutcome* outcome,
                                    bool only_own_running) {
  return retrying([&](bool again) {
    Transaction t(db_);  // BEGIN IMMEDIATE: no claim can mark it interrupted between the check and the write
    if (again) {
      // An I/O error in the first attempt's COMMIT may have come after the write: then the trial has
      // ended already, at this run's end time, and is written once, not twice (steps and metrics
      // are added, not set). (postgres_store.cc: the same for a lost reply.)
      Statement now(db_, "SELECT status, ended_unix_s FROM trials WHERE id = ?");
      now.bind(1, trial);
      if (now.step() && now.text(0) != "running" && !now.null(1) && now.real(1) == r.ended_unix_s) return true;
    }
    if (only_own_running) {
      Statement own(db_, "SELECT status, worker FROM trials WHERE id = ?");
      own.bind(1, trial);
      if (!own.step() || own.text(0) != "running" || own.null(1) || own.text(1) != worker_name())
        return false;  // rolled back: nothing was written
    }
    if (outcome && outcome->replace_output) {  // a run from step 0 replaces the trial's earlier output
      Statement(db_, "DELETE FROM steps WHERE trial_id = ?").bind(1, trial).run();
      Statement(db_, "DELETE FROM metrics WHERE trial_id = ?").bind(1, trial).run();
      Statement(db_, "UPDATE trials SET peak_memory_bytes = NULL WHERE id = ?").bind(1, trial).run();
    }
    const bool measured = r.throughput.steps_used > 0;
    // Numbered parameters: the peak is used three times. The peak over runs is the largest any reported.
    // The location of the latest run; an empty one keeps what begin_trial stored.
    Statement update(db_,
                     "UPDATE trials SET status = ?1, started_unix_s = MIN(started_unix_s, ?2), ended_unix_s = ?3, "
                     "exit_code = ?4, exit_signal = ?5, reason = ?6, stdout_path = ?7, stderr_path = ?8, "
                     "throughput = ?9, throughput_variance = ?10, throughput_ci_low = ?11, throughput_ci_high = ?12, "
                     "peak_memory_bytes = CASE WHEN ?13 IS NULL THEN peak_memory_bytes WHEN peak_memory_bytes IS NULL "
                     "THEN ?13 ELSE MAX(peak_memory_bytes, ?13) END, malformed_lines = malformed_lines + ?14, "
                     "location = COALESCE(NULLIF(?16, ''), location) WHERE id = ?15");
    update.bind(1, outcome ? outcome->status : std::string(trial::to_string(r.status))).bind(2, r.started_unix_s);
    update.bind(3, r.ended_unix_s).bind(4, r.exit_code).bind(5, r.exit_signal);
    update.bind(6, finish_reason(r, outcome)).bind(7, r.stdout_path.string());
    update.bind(8, r.stderr_path.string());
    update.bind(9, measured ? std::optional<double>(r.throughput.steps_per_s) : std::nullopt);
    update.bind(10, r.throughput.variance).bind(11, r.throughput.ci95_low).bind(12, r.throughput.ci95_high);
    update.bind(13, r.output.peak_memory_bytes).bind(14, r.output.malformed_lines).bind(15, trial);
    update.bind(16, r.location).run();
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
      if (!outcome->params_json.empty())
        Statement(db_, "UPDATE trials SET params_json = ? WHERE id = ?").bind(1, outcome->params_json).bind(2, trial).run();
    }
    t.commit();
    return true;
  });
}

void SqliteStudyStore::resume_trial(std::int64_t trial) {
  retrying([&](bool /*again*/) {
    Statement(db_, "UPDATE trials SET status = 'running', ended_unix_s = NULL WHERE id = ?").bind(1, trial).run();
  });
}

namespace {

constexpr const char* kTrialColumns =
    "SELECT id, number, params_json, config_json, command, dir, status, started_unix_s, ended_unix_s, exit_code, "
    "exit_signal, reason, stdout_path, stderr_path, steps, throughput, throughput_variance, throughput_ci_low, "
    "throughput_ci_high, peak_memory_bytes, malformed_lines, prediction_json, objective, rung, hpo_json, location, "
    "worker, heartbeat_unix_s FROM trials ";

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
  t.reason = printable_text(q.text(11));  // also a study written before reasons were made printable
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
  t.location = q.text(25);
  t.worker = q.text(26);
  if (!q.null(27)) t.heartbeat_unix_s = q.real(27);
  return t;
}

}  // namespace

StudyStore::ClaimOutcome SqliteStudyStore::claim_trial(std::int64_t study, double heartbeat_timeout_s,
                                                       const Proposer& propose, bool with_outputs) {
  return retrying([&](bool /*again*/) {
    Transaction t(db_);  // BEGIN IMMEDIATE: the file's write lock serializes every worker's claims
    ClaimOutcome out;
    const double now = unix_now();
    // 1. Dead workers' trials. A trial that never had a heartbeat counts from its start.
    {
      Statement dead(db_, (std::string(kTrialColumns) +
                           "WHERE study_id = ? AND status = 'running' AND worker IS NOT ? AND "
                           "COALESCE(heartbeat_unix_s, started_unix_s) < ? ORDER BY number")
                              .c_str());
      dead.bind(1, study).bind(2, worker_name()).bind(3, now - heartbeat_timeout_s);
      while (dead.step()) out.reaped.push_back(read_trial(dead));
    }
    Statement mark(db_,
                   "UPDATE trials SET status = CASE WHEN rung IS NULL THEN 'interrupted' ELSE 'pruned' END, reason = ?, "
                   "ended_unix_s = ? WHERE id = ?");
    for (const StoredTrial& d : out.reaped) mark.bind(1, dead_worker_reason(d, now)).bind(2, now).bind(3, d.id).run();
    // 2. Every trial, as the proposer sees it.
    std::vector<StoredTrial> all;
    {
      Statement q(db_, (std::string(kTrialColumns) + "WHERE study_id = ? ORDER BY number").c_str());
      q.bind(1, study);
      while (q.step()) all.push_back(read_trial(q));
    }
    if (with_outputs) read_outputs(all);
    int number = 1;
    for (const StoredTrial& a : all) number = std::max(number, a.number + 1);
    const std::optional<NewTrial> next = propose(all, number);
    // 3. The claimed trial: a new one, or a resting one run again.
    if (next && next->resume) {
      Statement resume(db_,
                       "UPDATE trials SET status = 'running', ended_unix_s = NULL, worker = ?, heartbeat_unix_s = ? "
                       "WHERE id = ? AND study_id = ? AND status = 'pruned'");
      resume.bind(1, text_or_null(worker_name())).bind(2, now).bind(3, *next->resume).bind(4, study).run();
      if (sqlite3_changes(db_) != 1)
        throw Error(fmt::format("study file {}: trial id {} is not a resting trial of study {}; it cannot be resumed (a bug)",
                                path_.string(), *next->resume, study));
      const auto it = std::find_if(all.begin(), all.end(), [&](const StoredTrial& a) { return a.id == *next->resume; });
      out.claimed = std::make_pair(*next->resume, it->number);
    } else if (next) {
      Statement insert(db_,
                       "INSERT INTO trials (study_id, number, params_json, config_json, command, dir, status, "
                       "started_unix_s, location, worker, heartbeat_unix_s) "
                       "VALUES (?, ?, ?, ?, ?, ?, 'running', ?, ?, ?, ?)");
      insert.bind(1, study).bind(2, number).bind(3, next->params_json).bind(4, next->record.config_json);
      insert.bind(5, next->record.command).bind(6, next->record.dir).bind(7, now);
      insert.bind(8, text_or_null(next->record.location)).bind(9, text_or_null(worker_name())).bind(10, now).run();
      out.claimed = std::make_pair(sqlite3_last_insert_rowid(db_), number);
    }
    t.commit();
    return out;
  });
}

StoredTrial SqliteStudyStore::trial(std::int64_t id) const {
  return retrying([&](bool /*again*/) {
    Statement q(db_, (std::string(kTrialColumns) + "WHERE id = ?").c_str());
    q.bind(1, id);
    if (!q.step()) throw Error(fmt::format("study file {}: no trial with id {}", path_.string(), id));
    return read_trial(q);
  });
}

std::vector<StoredTrial> SqliteStudyStore::trials(std::int64_t study, bool with_steps) const {
  return retrying([&](bool /*again*/) {
    Statement q(db_, (std::string(kTrialColumns) + "WHERE study_id = ? ORDER BY number").c_str());
    q.bind(1, study);
    std::vector<StoredTrial> out;
    while (q.step()) out.push_back(read_trial(q));
    if (with_steps) read_outputs(out);
    return out;
  });
}

void SqliteStudyStore::read_outputs(std::vector<StoredTrial>& trials) const {
  const std::vector<StoredTrial*> to_read = outputs_.fill(trials);  // ended trials' outputs are read once
  Statement s(db_, "SELECT step, step_time_s FROM steps WHERE trial_id = ? ORDER BY rowid");
  for (StoredTrial* t : to_read) {
    s.bind(1, t->id);
    while (s.step()) {
      t->step_numbers.push_back(s.integer(0));
      t->step_times_s.push_back(s.real(1));
    }
    s.reset();
  }
  Statement m(db_, "SELECT name, value, step FROM metrics WHERE trial_id = ? ORDER BY rowid");
  for (StoredTrial* t : to_read) {
    m.bind(1, t->id);
    while (m.step()) {
      trial::MetricReport r{m.text(0), m.real(1), std::nullopt, std::nullopt};
      if (!m.null(2)) r.step = m.integer(2);
      t->metrics.push_back(std::move(r));
    }
    m.reset();
  }
  outputs_.keep(to_read);
}

std::vector<StudyInfo> SqliteStudyStore::studies() const {
  return retrying([&](bool /*again*/) {
    Statement q(db_, "SELECT id, name, created_unix_s, config_json, model_json FROM studies ORDER BY id");
    std::vector<StudyInfo> out;
    while (q.step()) out.push_back({q.integer(0), q.text(1), q.real(2), q.text(3), q.text(4)});
    return out;
  });
}

void SqliteStudyStore::set_prediction(std::int64_t trial, const std::string& prediction_json) {
  retrying([&](bool /*again*/) {
    Statement(db_, "UPDATE trials SET prediction_json = ? WHERE id = ?").bind(1, prediction_json).bind(2, trial).run();
  });
}

void SqliteStudyStore::set_model(std::int64_t study, const std::string& model_json) {
  retrying([&](bool /*again*/) {
    Statement(db_, "UPDATE studies SET model_json = ? WHERE id = ?").bind(1, model_json).bind(2, study).run();
  });
}

std::int64_t SqliteStudyStore::delete_study(std::int64_t study) {
  return retrying([&](bool /*again*/) -> std::int64_t {
    Transaction t(db_);
    Statement count(db_, "SELECT COUNT(*) FROM trials WHERE study_id = ?");
    count.bind(1, study);
    count.step();
    const std::int64_t trials = count.integer(0);
    for (const char* sql : {"DELETE FROM metrics WHERE trial_id IN (SELECT id FROM trials WHERE study_id = ?)",
                            "DELETE FROM steps WHERE trial_id IN (SELECT id FROM trials WHERE study_id = ?)",
                            "DELETE FROM trials WHERE study_id = ?", "DELETE FROM studies WHERE id = ?"}) {
      Statement remove(db_, sql);
      remove.bind(1, study).run();
    }
    t.commit();
    return trials;
  });
}

void SqliteStudyStore::import_studies(const std::vector<StudyContent>& studies) {
  retrying([&](bool /*again*/) {
    Transaction t(db_);
    Statement exists(db_, "SELECT 1 FROM studies WHERE name = ?");
    Statement study(db_, "INSERT INTO studies (name, created_unix_s, config_json, model_json) VALUES (?, ?, ?, ?)");
    Statement trial(db_,
                    "INSERT INTO trials (study_id, number, params_json, config_json, command, dir, status, started_unix_s, "
                    "ended_unix_s, exit_code, exit_signal, reason, stdout_path, stderr_path, steps, throughput, "
                    "throughput_variance, throughput_ci_low, throughput_ci_high, peak_memory_bytes, malformed_lines, "
                    "prediction_json, objective, rung, hpo_json, location, worker, heartbeat_unix_s) VALUES (?, ?, ?, ?, "
                    "?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)");
    Statement step(db_, "INSERT INTO steps (trial_id, step, step_time_s) VALUES (?, ?, ?)");
    Statement metric(db_, "INSERT INTO metrics (trial_id, name, value, step) VALUES (?, ?, ?, ?)");
    for (const StudyContent& c : studies) {
      exists.bind(1, c.info.name);
      const bool found = exists.step();
      exists.reset();
      if (found)
        throw Error(fmt::format("study file {}: already holds a study '{}'; nothing was copied (copy it to another "
                                "file, or choose other studies)",
                                path_.string(), c.info.name));
      study.bind(1, c.info.name).bind(2, c.info.created_unix_s).bind(3, c.info.config_json);
      study.bind(4, text_or_null(c.info.model_json)).run();
      const std::int64_t study_id = sqlite3_last_insert_rowid(db_);
      for (const StoredTrial& s : c.trials) {
        trial.bind(1, study_id).bind(2, s.number).bind(3, s.params_json).bind(4, s.config_json).bind(5, s.command);
        trial.bind(6, s.dir).bind(7, s.status).bind(8, s.started_unix_s);
        // ended 0, exit -1 and signal 0 are how the reader shows NULL; written back as NULL.
        trial.bind(9, s.ended_unix_s == 0 ? std::nullopt : std::optional<double>(s.ended_unix_s));
        trial.bind(10, s.exit_code == -1 ? std::nullopt : std::optional<std::int64_t>(s.exit_code));
        trial.bind(11, std::optional<std::int64_t>(s.exit_signal));
        trial.bind(12, text_or_null(s.reason)).bind(13, text_or_null(s.stdout_path)).bind(14, text_or_null(s.stderr_path));
        trial.bind(15, s.steps).bind(16, s.throughput).bind(17, s.throughput_variance).bind(18, s.throughput_ci_low);
        trial.bind(19, s.throughput_ci_high).bind(20, s.peak_memory_bytes).bind(21, s.malformed_lines);
        trial.bind(22, text_or_null(s.prediction_json)).bind(23, s.objective);
        trial.bind(24, s.rung ? std::optional<std::int64_t>(*s.rung) : std::nullopt).bind(25, text_or_null(s.hpo_json));
        trial.bind(26, text_or_null(s.location)).bind(27, text_or_null(s.worker)).bind(28, s.heartbeat_unix_s).run();
        const std::int64_t trial_id = sqlite3_last_insert_rowid(db_);
        for (std::size_t k = 0; k < s.step_times_s.size(); ++k)
          step.bind(1, trial_id).bind(2, k < s.step_numbers.size() ? s.step_numbers[k] : std::int64_t{0})
              .bind(3, s.step_times_s[k]).run();
        for (const trial::MetricReport& m : s.metrics)
          metric.bind(1, trial_id).bind(2, m.name).bind(3, m.value).bind(4, m.step).run();
      }
    }
    t.commit();
  });
}

}  // namespace paratune::store
