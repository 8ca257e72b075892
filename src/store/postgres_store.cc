#include "paratune/store/postgres_store.h"

#include <fmt/format.h>
#include <libpq-fe.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <map>

#include "paratune/spec/error.h"
#include "paratune/spec/input_file.h"
#include "unix_time.h"

namespace paratune::store {
namespace {

// The same tables and columns as sqlite_store.cc's (store/study_store.h), in PostgreSQL's types;
// steps and metrics have an explicit id where SQLite has its implicit rowid (their order).
constexpr const char* kPostgresSchema = R"sql(
CREATE TABLE IF NOT EXISTS studies (
  id BIGSERIAL PRIMARY KEY,
  name TEXT NOT NULL UNIQUE,
  created_unix_s DOUBLE PRECISION NOT NULL,
  config_json TEXT NOT NULL,
  model_json TEXT
);
CREATE TABLE IF NOT EXISTS trials (
  id BIGSERIAL PRIMARY KEY,
  study_id BIGINT NOT NULL REFERENCES studies(id),
  number BIGINT NOT NULL,
  params_json TEXT NOT NULL,
  config_json TEXT NOT NULL,
  command TEXT NOT NULL,
  dir TEXT NOT NULL,
  status TEXT NOT NULL,
  started_unix_s DOUBLE PRECISION NOT NULL,
  ended_unix_s DOUBLE PRECISION,
  exit_code BIGINT,
  exit_signal BIGINT,
  reason TEXT,
  stdout_path TEXT,
  stderr_path TEXT,
  steps BIGINT NOT NULL DEFAULT 0,
  throughput DOUBLE PRECISION,
  throughput_variance DOUBLE PRECISION,
  throughput_ci_low DOUBLE PRECISION,
  throughput_ci_high DOUBLE PRECISION,
  peak_memory_bytes DOUBLE PRECISION,
  malformed_lines BIGINT NOT NULL DEFAULT 0,
  prediction_json TEXT,
  objective DOUBLE PRECISION,
  rung BIGINT,
  hpo_json TEXT,
  location TEXT,
  worker TEXT,
  heartbeat_unix_s DOUBLE PRECISION,
  UNIQUE (study_id, number)
);
CREATE TABLE IF NOT EXISTS steps (
  id BIGSERIAL PRIMARY KEY,
  trial_id BIGINT NOT NULL REFERENCES trials(id),
  step BIGINT NOT NULL,
  step_time_s DOUBLE PRECISION NOT NULL
);
CREATE TABLE IF NOT EXISTS metrics (
  id BIGSERIAL PRIMARY KEY,
  trial_id BIGINT NOT NULL REFERENCES trials(id),
  name TEXT NOT NULL,
  value DOUBLE PRECISION NOT NULL,
  step BIGINT
);
CREATE INDEX IF NOT EXISTS steps_by_trial ON steps(trial_id);
CREATE INDEX IF NOT EXISTS metrics_by_trial ON metrics(trial_id);
)sql";

// The transaction-level advisory lock around schema creation: any constant of paratune's own
// ("paratune" in ASCII).
constexpr std::int64_t kSchemaLockKey = 0x7061726174756e65;

// Query parameters in text form; std::nullopt is NULL. Doubles with 17 significant digits (exact
// round trip); NaN is NULL, as SQLite stores it.
class Params {
 public:
  Params& add(const std::string& v) { return push(v); }
  Params& add(const char* v) { return push(std::string(v)); }
  Params& add(std::int64_t v) { return push(std::to_string(v)); }
  Params& add(int v) { return push(std::to_string(v)); }
  Params& add(double v) { return std::isnan(v) ? push(std::nullopt) : push(fmt::format("{:.17g}", v)); }
  Params& add(const std::optional<double>& v) { return v ? add(*v) : push(std::nullopt); }
  Params& add(const std::optional<std::int64_t>& v) { return v ? add(*v) : push(std::nullopt); }
  Params& add(const std::optional<int>& v) { return v ? add(*v) : push(std::nullopt); }
  // Empty text is NULL (the columns a store leaves NULL until set).
  Params& text_or_null(const std::string& v) { return v.empty() ? push(std::nullopt) : push(v); }

  [[nodiscard]] int size() const { return static_cast<int>(values_.size()); }
  [[nodiscard]] std::vector<const char*> pointers() const {
    std::vector<const char*> out;
    for (const auto& v : values_) out.push_back(v ? v->c_str() : nullptr);
    return out;
  }

 private:
  Params& push(std::optional<std::string> v) {
    values_.push_back(std::move(v));
    return *this;
  }
  std::vector<std::optional<std::string>> values_;
};

// A query's result, cleared on scope exit.
class Result {
 public:
  explicit Result(PGresult* r) : r_(r) {}
  ~Result() { PQclear(r_); }
  Result(const Result&) = delete;
  Result& operator=(const Result&) = delete;
  Result(Result&& o) noexcept : r_(o.r_) { o.r_ = nullptr; }

  [[nodiscard]] bool ok() const {
    const ExecStatusType status = PQresultStatus(r_);
    return status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK;
  }
  [[nodiscard]] int rows() const { return PQntuples(r_); }
  [[nodiscard]] int affected() const { return std::atoi(PQcmdTuples(r_)); }
  [[nodiscard]] bool null(int row, int col) const { return PQgetisnull(r_, row, col) != 0; }
  [[nodiscard]] std::string text(int row, int col) const {
    return std::string(PQgetvalue(r_, row, col), static_cast<std::size_t>(PQgetlength(r_, row, col)));
  }
  [[nodiscard]] std::int64_t integer(int row, int col) const {
    if (null(row, col)) return 0;
    std::int64_t v = 0;
    const char* s = PQgetvalue(r_, row, col);
    std::from_chars(s, s + PQgetlength(r_, row, col), v);
    return v;
  }
  [[nodiscard]] double real(int row, int col) const {
    if (null(row, col)) return 0;
    double v = 0;
    const char* s = PQgetvalue(r_, row, col);
    std::from_chars(s, s + PQgetlength(r_, row, col), v);  // "Infinity", "NaN" included
    return v;
  }
  [[nodiscard]] std::optional<double> optional_real(int row, int col) const {
    return null(row, col) ? std::nullopt : std::optional<double>(real(row, col));
  }
  [[nodiscard]] std::string sqlstate() const {
    const char* code = PQresultErrorField(r_, PG_DIAG_SQLSTATE);
    return code ? code : "";
  }

 private:
  PGresult* r_;
};

// Whether a statement that failed with `sqlstate` may succeed when tried again: the connection
// broke (a server restart, a network blip; libpq gives no state then), or the server said so --
// class 08 (connection exception), 57P (shutting down or starting up: admin_shutdown,
// crash_shutdown, cannot_connect_now), 53 (insufficient resources: disk full, too many
// connections), 40 (a serialization failure or deadlock: the transaction was rolled back).
bool transient(pg_conn* conn, const std::string& sqlstate) {
  return PQstatus(conn) != CONNECTION_OK || sqlstate.starts_with("08") || sqlstate.starts_with("57P") ||
         sqlstate.starts_with("53") || sqlstate.starts_with("40");
}

// The connection's last error on one line (libpq breaks some over lines: "server closed the
// connection unexpectedly\n\tThis probably means ...").
std::string last_error(pg_conn* conn) {
  std::string message;
  for (const char c : std::string(PQerrorMessage(conn))) {
    const bool space = c == '\n' || c == '\t' || c == ' ';
    if (!space) message.push_back(c);
    else if (!message.empty() && message.back() != ' ') message.push_back(' ');
  }
  while (!message.empty() && message.back() == ' ') message.pop_back();
  return message;
}

// Runs `sql` with `params`; throws Error naming the locator and the server's message --
// StoreUnavailable when it may succeed when tried again (`transient`: the caller's `retrying`
// reconnects and runs the whole transaction again).
// Without parameters, `sql` may hold several statements (the schema).
Result run(pg_conn* conn, const std::string& locator, const char* sql, const Params& params = {}) {
  const std::vector<const char*> values = params.pointers();
  Result r(params.size() == 0 ? PQexec(conn, sql)
                              : PQexecParams(conn, sql, params.size(), nullptr, values.data(), nullptr, nullptr, 0));
  if (!r.ok()) {
    const std::string message = fmt::format("study store {}: {}", locator, last_error(conn));
    if (transient(conn, r.sqlstate())) throw StoreUnavailable(message);
    throw Error(message);
  }
  return r;
}

// PostgreSQL array literals ('{1,2,3}', '{"a\"b",NULL}'), so that a trial's steps and metrics go in
// one statement each (unnest) rather than one round trip per row.
std::string array_literal(const std::vector<std::string>& elements) {
  std::string out = "{";
  for (std::size_t i = 0; i < elements.size(); ++i) out += (i > 0 ? "," : "") + elements[i];
  return out + "}";
}
std::string quoted_element(const std::string& text) {
  std::string out = "\"";
  for (const char c : text) {
    if (c == '"' || c == '\\') out.push_back('\\');
    out.push_back(c);
  }
  return out + "\"";
}

// Every step of a run (step numbers, times), in one statement.
void insert_steps(pg_conn* conn, const std::string& locator, std::int64_t trial, const std::vector<std::int64_t>& steps,
                  const std::vector<double>& times) {
  if (times.empty()) return;
  std::vector<std::string> numbers, seconds;
  numbers.reserve(times.size());
  seconds.reserve(times.size());
  for (std::size_t k = 0; k < times.size(); ++k) {
    numbers.push_back(std::to_string(k < steps.size() ? steps[k] : std::int64_t{0}));
    seconds.push_back(fmt::format("{:.17g}", times[k]));  // finite: the runner takes no other (protocol.h)
  }
  run(conn, locator,
      "INSERT INTO steps (trial_id, step, step_time_s) SELECT $1, s, t FROM unnest($2::bigint[], $3::float8[]) AS u(s, t)",
      Params().add(trial).add(array_literal(numbers)).add(array_literal(seconds)));
}

// Every metric of a run, in one statement (unnest keeps their order: WITH ORDINALITY).
void insert_metrics(pg_conn* conn, const std::string& locator, std::int64_t trial,
                    const std::vector<trial::MetricReport>& metrics) {
  if (metrics.empty()) return;
  std::vector<std::string> names, values, steps;
  names.reserve(metrics.size());
  values.reserve(metrics.size());
  steps.reserve(metrics.size());
  for (const trial::MetricReport& m : metrics) {
    names.push_back(quoted_element(m.name));
    values.push_back(fmt::format("{:.17g}", m.value));  // finite (protocol.h)
    steps.push_back(m.step ? std::to_string(*m.step) : "NULL");
  }
  run(conn, locator,
      "INSERT INTO metrics (trial_id, name, value, step) SELECT $1, n, v, s FROM unnest($2::text[], $3::float8[], "
      "$4::bigint[]) WITH ORDINALITY AS u(n, v, s, i) ORDER BY i",
      Params().add(trial).add(array_literal(names)).add(array_literal(values)).add(array_literal(steps)));
}

// BEGIN ... COMMIT, rolled back if the scope is left by an exception.
class PostgresTransaction {
 public:
  PostgresTransaction(pg_conn* conn, const std::string& locator) : conn_(conn), locator_(locator) {
    run(conn_, locator_, "BEGIN");
  }
  ~PostgresTransaction() {
    if (!done_) PQclear(PQexec(conn_, "ROLLBACK"));
  }
  PostgresTransaction(const PostgresTransaction&) = delete;
  PostgresTransaction& operator=(const PostgresTransaction&) = delete;
  void commit() {
    run(conn_, locator_, "COMMIT");
    done_ = true;
  }

 private:
  pg_conn* conn_;
  const std::string& locator_;
  bool done_ = false;
};

// The advisory lock of a study: FNV-1a (64 bits) of "paratune study NAME". Two names that hash alike
// would share a lock (a false "another controller"), never two controllers on one study.
std::int64_t study_lock_key(const std::string& name) {
  std::uint64_t h = 14695981039346656037ull;
  for (const unsigned char c : "paratune study " + name) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return static_cast<std::int64_t>(h);
}

void ignore_notice(void*, const char*) {}  // the library never prints (NOTICE: "... already exists, skipping")

constexpr const char* kPostgresTrialColumns =
    "SELECT id, number, params_json, config_json, command, dir, status, started_unix_s, ended_unix_s, exit_code, "
    "exit_signal, reason, stdout_path, stderr_path, steps, throughput, throughput_variance, throughput_ci_low, "
    "throughput_ci_high, peak_memory_bytes, malformed_lines, prediction_json, objective, rung, hpo_json, location, "
    "worker, heartbeat_unix_s FROM trials ";

StoredTrial read_trial(const Result& q, int row) {
  StoredTrial t;
  t.id = q.integer(row, 0);
  t.number = static_cast<int>(q.integer(row, 1));
  t.params_json = q.text(row, 2);
  t.config_json = q.text(row, 3);
  t.command = q.text(row, 4);
  t.dir = q.text(row, 5);
  t.status = q.text(row, 6);
  t.started_unix_s = q.real(row, 7);
  t.ended_unix_s = q.real(row, 8);
  t.exit_code = q.null(row, 9) ? -1 : static_cast<int>(q.integer(row, 9));
  t.exit_signal = static_cast<int>(q.integer(row, 10));
  t.reason = printable_text(q.text(row, 11));  // also a study written before reasons were made printable
  t.stdout_path = q.text(row, 12);
  t.stderr_path = q.text(row, 13);
  t.steps = static_cast<int>(q.integer(row, 14));
  t.throughput = q.optional_real(row, 15);
  t.throughput_variance = q.real(row, 16);
  t.throughput_ci_low = q.real(row, 17);
  t.throughput_ci_high = q.real(row, 18);
  t.peak_memory_bytes = q.optional_real(row, 19);
  t.malformed_lines = q.integer(row, 20);
  t.prediction_json = q.text(row, 21);
  t.objective = q.optional_real(row, 22);
  if (!q.null(row, 23)) t.rung = static_cast<int>(q.integer(row, 23));
  t.hpo_json = q.text(row, 24);
  t.location = q.text(row, 25);
  t.worker = q.text(row, 26);
  t.heartbeat_unix_s = q.optional_real(row, 27);
  return t;
}

}  // namespace

// The study's advisory lock, exclusive (a controller) or shared (a worker).
class PostgresStudyStore::Lock final : public ControllerLock {
 public:
  Lock(PostgresStudyStore& store, std::string name, bool shared)
      : store_(store), name_(std::move(name)), shared_(shared) {}
  ~Lock() override {
    const std::lock_guard<std::mutex> guard(store_.mutex_);
    store_.locked_.erase(name_);
    // Failing (a lost connection) is harmless: the server drops a session's locks when it ends.
    const std::string key = std::to_string(study_lock_key(name_));
    const char* values[] = {key.c_str()};
    const char* sql = shared_ ? "SELECT pg_advisory_unlock_shared($1::bigint)" : "SELECT pg_advisory_unlock($1::bigint)";
    PQclear(PQexecParams(store_.conn_, sql, 1, nullptr, values, nullptr, nullptr, 0));
  }
  Lock(const Lock&) = delete;
  Lock& operator=(const Lock&) = delete;

 private:
  PostgresStudyStore& store_;
  std::string name_;
  bool shared_;
};

PostgresStudyStore::PostgresStudyStore(const std::string& uri, Access access, double retry_s)
    : locator_(mask_locator(uri)), access_(access) {
  set_retry_s(retry_s);
  // A worker started while the server restarts waits for it, as a running one does.
  retrying([&](bool /*again*/) { connect(uri); });
}

void PostgresStudyStore::connect(const std::string& uri) {
  // Defaults first: the URI's own parameters, expanded from dbname, override them.
  const char* keywords[] = {"connect_timeout", "fallback_application_name", "dbname", nullptr};
  const char* values[] = {"10", "paratune", uri.c_str(), nullptr};
  conn_ = PQconnectdbParams(keywords, values, /*expand_dbname=*/1);
  if (conn_ == nullptr) throw Error(fmt::format("study store {}: cannot connect: out of memory", locator_));
  if (PQstatus(conn_) != CONNECTION_OK) {
    const std::string message = fmt::format("study store {}: cannot connect: {}", locator_, last_error(conn_));
    PQfinish(conn_);
    conn_ = nullptr;
    // A server that refuses connections for now (starting up, shutting down) or does not answer
    // (down, restarting) is unavailable; a host name that does not resolve, a port no server can
    // have, a refused login or a missing database is the locator's fault (bad input).
    const PGPing ping = PQpingParams(keywords, values, /*expand_dbname=*/1);
    const bool locator_fault = message.find("could not translate host name") != std::string::npos ||
                               message.find("invalid port number") != std::string::npos;
    const bool unavailable = ping == PQPING_REJECT || (ping == PQPING_NO_RESPONSE && !locator_fault);
    if (unavailable) throw StoreUnavailable(message);
    throw Error(message);
  }
  PQsetNoticeProcessor(conn_, ignore_notice, nullptr);
  try {
    set_up_session();
    if (access_ == Access::kReadOnly) {
      if (run(conn_, locator_, "SELECT to_regclass('paratune_meta') IS NOT NULL").text(0, 0) != "t")
        throw Error(fmt::format("study store {}: holds no paratune schema", locator_));
      const Result version = run(conn_, locator_, "SELECT value FROM paratune_meta WHERE key = 'schema_version'");
      const std::int64_t found = version.rows() ? version.integer(0, 0) : 0;
      if (found != kSchemaVersion)
        throw Error(fmt::format("study store {}: schema version {} is not this paratune's ({})", locator_, found,
                                kSchemaVersion));
    } else {
      create_schema();
    }
  } catch (const Error&) {
    PQfinish(conn_);
    conn_ = nullptr;
    throw;
  }
}

PostgresStudyStore::~PostgresStudyStore() { PQfinish(conn_); }

void PostgresStudyStore::set_up_session() const {
  // Shortest exact text for doubles (PostgreSQL 12+: any value > 0).
  run(conn_, locator_, "SET extra_float_digits = 3");
  if (access_ == Access::kReadOnly) run(conn_, locator_, "SET default_transaction_read_only = on");
}

void PostgresStudyStore::reconnect() const {
  const std::lock_guard<std::mutex> guard(mutex_);
  // None yet (the constructor's attempt makes it); or a failure of the server's (a full disk, a
  // deadlock), which leaves the connection as it was.
  if (conn_ == nullptr || PQstatus(conn_) == CONNECTION_OK) return;
  PQreset(conn_);
  if (PQstatus(conn_) != CONNECTION_OK)
    throw StoreUnavailable(fmt::format("study store {}: cannot connect: {}", locator_, last_error(conn_)));
  PQsetNoticeProcessor(conn_, ignore_notice, nullptr);
  set_up_session();
  // The server dropped the old session's advisory locks with it: this store's locks are taken
  // again, on the new session, before anything else runs on the study. Taken meanwhile by a
  // controller (a worker's) or anyone (a controller's), the study is no longer this process's to run.
  for (const auto& [name, shared] : locked_) {
    const Result r =
        run(conn_, locator_,
            shared ? "SELECT pg_try_advisory_lock_shared($1::bigint)" : "SELECT pg_try_advisory_lock($1::bigint)",
            Params().add(study_lock_key(name)));
    if (r.text(0, 0) != "t")
      throw Error(fmt::format("study store {}: the connection to the server was lost, and while it was, another "
                              "paratune {} took study '{}'; this {} stops",
                              locator_, shared ? "controller (not a worker)" : "controller or worker", name,
                              shared ? "worker" : "controller"));
  }
}

void PostgresStudyStore::create_schema() {
  PostgresTransaction t(conn_, locator_);
  run(conn_, locator_, "SELECT pg_advisory_xact_lock($1::bigint)", Params().add(kSchemaLockKey));
  run(conn_, locator_, "CREATE TABLE IF NOT EXISTS paratune_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)");
  const Result version = run(conn_, locator_, "SELECT value FROM paratune_meta WHERE key = 'schema_version'");
  const std::int64_t found = version.rows() ? version.integer(0, 0) : 0;
  if (found > kSchemaVersion)
    throw Error(fmt::format("study store {}: schema version {} is newer than this paratune's ({}); use a newer "
                            "paratune or another database",
                            locator_, found, kSchemaVersion));
  run(conn_, locator_, kPostgresSchema);
  run(conn_, locator_,
      "INSERT INTO paratune_meta (key, value) VALUES ('schema_version', $1) ON CONFLICT (key) DO UPDATE SET value = "
      "EXCLUDED.value",
      Params().add(kSchemaVersion));
  t.commit();
}

std::unique_ptr<ControllerLock> PostgresStudyStore::try_lock(const std::string& study_name, bool shared,
                                                              bool& held_here) {
  return retrying([&](bool /*again*/) -> std::unique_ptr<ControllerLock> {
    const std::lock_guard<std::mutex> guard(mutex_);
    // The server grants a session's own lock again: this store's table refuses the second one.
    held_here = locked_.contains(study_name);
    if (held_here) return nullptr;
    const Result r = run(conn_, locator_,
                         shared ? "SELECT pg_try_advisory_lock_shared($1::bigint)" : "SELECT pg_try_advisory_lock($1::bigint)",
                         Params().add(study_lock_key(study_name)));
    if (r.text(0, 0) != "t") return nullptr;
    locked_.emplace(study_name, shared);
    return std::make_unique<Lock>(*this, study_name, shared);
  });
}

std::unique_ptr<ControllerLock> PostgresStudyStore::lock_controller(const std::string& study_name) {
  bool held_here = false;
  if (auto lock = try_lock(study_name, /*shared=*/false, held_here)) return lock;
  throw Error(fmt::format("study store {}: another paratune controller is running study '{}' ({}); one controller "
                          "per study at a time",
                          locator_, study_name,
                          held_here ? "in this process" : "it, or workers, hold the study's advisory lock"));
}

std::unique_ptr<ControllerLock> PostgresStudyStore::lock_worker(const std::string& study_name) {
  bool held_here = false;
  if (auto lock = try_lock(study_name, /*shared=*/true, held_here)) return lock;
  throw Error(fmt::format("study store {}: a paratune controller (not a worker) is running study '{}' ({}); "
                          "workers join a study that only workers run",
                          locator_, study_name, held_here ? "in this process" : "it holds the study's advisory lock"));
}

std::int64_t PostgresStudyStore::open_study(const std::string& name, const std::string& config_json) {
  return retrying([&](bool /*again*/) {
    const std::lock_guard<std::mutex> guard(mutex_);
    // Inserted unless it exists (another process may create it at the same moment), then read.
    run(conn_, locator_,
        "INSERT INTO studies (name, created_unix_s, config_json) VALUES ($1, $2, $3) ON CONFLICT (name) DO NOTHING",
        Params().add(name).add(unix_now()).add(config_json));
    const Result find = run(conn_, locator_, "SELECT id, config_json FROM studies WHERE name = $1", Params().add(name));
    if (find.text(0, 1) != config_json)
      throw Error(fmt::format(
          "study store {}: study '{}' was created with another configuration: {}; resume it with the same settings "
          "or use another study name.\n  stored: {}\n  now:    {}",
          locator_, name, identity_difference(find.text(0, 1), config_json), find.text(0, 1), config_json));
    return find.integer(0, 0);
  });
}

int PostgresStudyStore::mark_running_interrupted(std::int64_t study) {
  return retrying([&](bool /*again*/) {
    const std::lock_guard<std::mutex> guard(mutex_);
    return run(conn_, locator_,
               "UPDATE trials SET status = CASE WHEN rung IS NULL THEN 'interrupted' ELSE 'pruned' END, "
               "reason = 'the process running it stopped while it ran', "
               "ended_unix_s = started_unix_s WHERE study_id = $1 AND status = 'running'",
               Params().add(study))
        .affected();
  });
}

int PostgresStudyStore::mark_failed_for_retry(std::int64_t study) {
  return retrying([&](bool /*again*/) {
    const std::lock_guard<std::mutex> guard(mutex_);
    return run(conn_, locator_,
               "UPDATE trials SET status = 'interrupted', "
               "reason = 'retried by --retry-failed; it had failed: ' || COALESCE(reason, '') "
               "WHERE study_id = $1 AND status = 'failed'",
               Params().add(study))
        .affected();
  });
}

std::pair<std::int64_t, int> PostgresStudyStore::insert_trial(std::int64_t study, const std::string& params_json,
                                                              const std::function<LaunchRecord(int number)>& describe) {
  std::optional<double> committing_at;  // the heartbeat_unix_s of the attempt that sent its COMMIT
  return retrying([&](bool again) -> std::pair<std::int64_t, int> {
    const std::lock_guard<std::mutex> guard(mutex_);
    if (again && committing_at)
      if (const auto earlier = committed_trial(study, *committing_at)) return *earlier;
    PostgresTransaction t(conn_, locator_);
    // The study's row lock: processes beginning trials of one study take their numbers in turn.
    if (run(conn_, locator_, "SELECT id FROM studies WHERE id = $1 FOR UPDATE", Params().add(study)).rows() == 0)
      throw Error(fmt::format("study store {}: no study with id {}", locator_, study));
    const int number = static_cast<int>(
        run(conn_, locator_, "SELECT COALESCE(MAX(number), 0) + 1 FROM trials WHERE study_id = $1", Params().add(study))
            .integer(0, 0));
    const LaunchRecord record = describe(number);
    const double now = unix_now();
    Params p;
    p.add(study).add(number).add(params_json).add(record.config_json).add(record.command).add(record.dir).add(now);
    p.text_or_null(record.location).text_or_null(worker_name()).add(now);
    const std::int64_t id =
        run(conn_, locator_,
            "INSERT INTO trials (study_id, number, params_json, config_json, command, dir, status, started_unix_s, "
            "location, worker, heartbeat_unix_s) VALUES ($1, $2, $3, $4, $5, $6, 'running', $7, $8, $9, $10) RETURNING id",
            p)
            .integer(0, 0);
    committing_at = now;
    t.commit();
    return {id, number};
  });
}

StudyStore::ClaimOutcome PostgresStudyStore::claim_trial(std::int64_t study, double heartbeat_timeout_s,
                                                         const Proposer& propose, bool with_outputs) {
  std::optional<double> committing_at;  // the heartbeat_unix_s of the attempt that sent its COMMIT
  return retrying([&](bool again) {
    const std::lock_guard<std::mutex> guard(mutex_);
    if (again && committing_at)
      if (const auto earlier = committed_trial(study, *committing_at)) return ClaimOutcome{earlier, {}};
    PostgresTransaction t(conn_, locator_);
    // The study's row lock serializes the claims of every worker on the study (and insert_trial's).
    if (run(conn_, locator_, "SELECT id FROM studies WHERE id = $1 FOR UPDATE", Params().add(study)).rows() == 0)
      throw Error(fmt::format("study store {}: no study with id {}", locator_, study));
    ClaimOutcome out;
    const double now = unix_now();
    // 1. Dead workers' trials. A trial that never had a heartbeat counts from its start.
    const Result dead =
        run(conn_, locator_,
            (std::string(kPostgresTrialColumns) +
             "WHERE study_id = $1 AND status = 'running' AND worker IS DISTINCT FROM $2 AND "
             "COALESCE(heartbeat_unix_s, started_unix_s) < $3::float8 ORDER BY number")
                .c_str(),
            Params().add(study).add(worker_name()).add(now - heartbeat_timeout_s));
    for (int row = 0; row < dead.rows(); ++row) {
      StoredTrial d = read_trial(dead, row);
      run(conn_, locator_,
          "UPDATE trials SET status = CASE WHEN rung IS NULL THEN 'interrupted' ELSE 'pruned' END, reason = $1, "
          "ended_unix_s = $2 WHERE id = $3",
          Params().add(dead_worker_reason(d, now)).add(now).add(d.id));
      out.reaped.push_back(std::move(d));
    }
    // 2. Every trial, as the proposer sees it.
    const Result q = run(conn_, locator_, (std::string(kPostgresTrialColumns) + "WHERE study_id = $1 ORDER BY number").c_str(),
                         Params().add(study));
    std::vector<StoredTrial> all;
    int number = 1;
    for (int row = 0; row < q.rows(); ++row) {
      all.push_back(read_trial(q, row));
      number = std::max(number, all.back().number + 1);
    }
    if (with_outputs) read_outputs(study, all);
    const std::optional<NewTrial> next = propose(all, number);
    // 3. The claimed trial: a new one, or a resting one run again.
    if (next && next->resume) {
      const Result resumed = run(conn_, locator_,
                                 "UPDATE trials SET status = 'running', ended_unix_s = NULL, worker = $1, "
                                 "heartbeat_unix_s = $2 WHERE id = $3 AND study_id = $4 AND status = 'pruned' "
                                 "RETURNING number",
                                 Params().text_or_null(worker_name()).add(now).add(*next->resume).add(study));
      if (resumed.rows() != 1)
        throw Error(fmt::format("study store {}: trial id {} is not a resting trial of study {}; it cannot be resumed "
                                "(a bug)",
                                locator_, *next->resume, study));
      out.claimed = std::make_pair(*next->resume, static_cast<int>(resumed.integer(0, 0)));
    } else if (next) {
      Params p;
      p.add(study).add(number).add(next->params_json).add(next->record.config_json).add(next->record.command);
      p.add(next->record.dir).add(now).text_or_null(next->record.location).text_or_null(worker_name()).add(now);
      const std::int64_t id =
          run(conn_, locator_,
              "INSERT INTO trials (study_id, number, params_json, config_json, command, dir, status, started_unix_s, "
              "location, worker, heartbeat_unix_s) VALUES ($1, $2, $3, $4, $5, $6, 'running', $7, $8, $9, $10) "
              "RETURNING id",
              p)
              .integer(0, 0);
      out.claimed = std::make_pair(id, number);
    }
    if (out.claimed) committing_at = now;
    t.commit();
    return out;
  });
}

std::optional<std::pair<std::int64_t, int>> PostgresStudyStore::committed_trial(std::int64_t study,
                                                                               double started_at) const {
  // This worker's running trial with that heartbeat: no other has it (the claims of one worker
  // follow each other, each at its own time), and the caller has not renewed it (it never knew it).
  const Result r = run(conn_, locator_,
                       "SELECT id, number FROM trials WHERE study_id = $1 AND status = 'running' AND "
                       "worker IS NOT DISTINCT FROM $2 AND heartbeat_unix_s = $3::float8",
                       Params().add(study).text_or_null(worker_name()).add(started_at));
  if (r.rows() != 1) return std::nullopt;
  return std::make_pair(r.integer(0, 0), static_cast<int>(r.integer(0, 1)));
}

void PostgresStudyStore::heartbeat(const std::vector<std::int64_t>& trials) {
  retrying([&](bool /*again*/) {
    if (trials.empty()) return;
    const std::lock_guard<std::mutex> guard(mutex_);
    run(conn_, locator_, "UPDATE trials SET heartbeat_unix_s = $1 WHERE id = ANY($2::bigint[])",
        Params().add(unix_now()).add(fmt::format("{{{}}}", fmt::join(trials, ","))));
  });
}

void PostgresStudyStore::set_running_params(std::int64_t trial, const std::string& params_json) {
  retrying([&](bool /*again*/) {
    const std::lock_guard<std::mutex> guard(mutex_);
    run(conn_, locator_, "UPDATE trials SET params_json = $1 WHERE id = $2 AND status = 'running'",
        Params().add(params_json).add(trial));
  });
}

bool PostgresStudyStore::write_finish(std::int64_t trial, const trial::TrialResult& r, const TrialOutcome* outcome,
                                      bool only_own_running) {
  return retrying([&](bool again) {
    const std::lock_guard<std::mutex> guard(mutex_);
    PostgresTransaction t(conn_, locator_);
    if (again) {
      // The first attempt's COMMIT may have reached the server just before the connection broke:
      // then the trial has ended already, at this run's end time to the bit, and is written once,
      // not twice (steps and metrics are added, not set).
      const Result now = run(conn_, locator_, "SELECT status, ended_unix_s FROM trials WHERE id = $1", Params().add(trial));
      if (now.rows() == 1 && now.text(0, 0) != "running" && !now.null(0, 1) && now.real(0, 1) == r.ended_unix_s)
        return true;
    }
    if (only_own_running) {
      // The row lock: a claim marking it interrupted waits for this transaction, or this one sees its mark.
      const Result own = run(conn_, locator_, "SELECT status, worker FROM trials WHERE id = $1 FOR UPDATE",
                             Params().add(trial));
      if (own.rows() == 0 || own.text(0, 0) != "running" || own.null(0, 1) || own.text(0, 1) != worker_name())
        return false;  // rolled back: nothing was written
    }
    if (outcome && outcome->replace_output) {  // a run from step 0 replaces the trial's earlier output
      run(conn_, locator_, "DELETE FROM steps WHERE trial_id = $1", Params().add(trial));
      run(conn_, locator_, "DELETE FROM metrics WHERE trial_id = $1", Params().add(trial));
      run(conn_, locator_, "UPDATE trials SET peak_memory_bytes = NULL WHERE id = $1", Params().add(trial));
    }
    const bool measured = r.throughput.steps_used > 0;
    Params p;
    p.add(outcome ? outcome->status : std::string(trial::to_string(r.status))).add(r.started_unix_s);
    p.add(r.ended_unix_s).add(r.exit_code).add(r.exit_signal);
    p.add(finish_reason(r, outcome)).add(r.stdout_path.string());
    p.add(r.stderr_path.string()).add(measured ? std::optional<double>(r.throughput.steps_per_s) : std::nullopt);
    p.add(r.throughput.variance).add(r.throughput.ci95_low).add(r.throughput.ci95_high);
    p.add(r.output.peak_memory_bytes).add(r.output.malformed_lines).add(trial).add(r.location);
    // The peak over runs is the largest any reported; the location is the latest run's (an empty one
    // keeps what begin_trial stored).
    run(conn_, locator_,
        "UPDATE trials SET status = $1, started_unix_s = LEAST(started_unix_s, $2::float8), ended_unix_s = $3, "
        "exit_code = $4, exit_signal = $5, reason = $6, stdout_path = $7, stderr_path = $8, throughput = $9, "
        "throughput_variance = $10, throughput_ci_low = $11, throughput_ci_high = $12, "
        "peak_memory_bytes = CASE WHEN $13::float8 IS NULL THEN peak_memory_bytes WHEN peak_memory_bytes IS NULL "
        "THEN $13::float8 ELSE GREATEST(peak_memory_bytes, $13::float8) END, "
        "malformed_lines = malformed_lines + $14::bigint, location = COALESCE(NULLIF($16::text, ''), location) "
        "WHERE id = $15",
        p);
    std::vector<std::int64_t> step_numbers;
    std::vector<double> step_times;
    step_numbers.reserve(r.output.steps.size());
    step_times.reserve(r.output.steps.size());
    for (const trial::StepReport& s : r.output.steps) {
      step_numbers.push_back(s.step);
      step_times.push_back(s.step_time_s);
    }
    insert_steps(conn_, locator_, trial, step_numbers, step_times);
    insert_metrics(conn_, locator_, trial, r.output.metrics);
    // Every run of a trial adds its steps (a promoted trial resumes where it rested).
    run(conn_, locator_, "UPDATE trials SET steps = (SELECT COUNT(*) FROM steps WHERE trial_id = $1) WHERE id = $1",
        Params().add(trial));
    if (outcome)
      run(conn_, locator_, "UPDATE trials SET objective = $1, rung = $2, hpo_json = $3 WHERE id = $4",
          Params().add(outcome->objective).add(outcome->rung).add(outcome->hpo_json).add(trial));
    if (outcome && !outcome->params_json.empty())
      run(conn_, locator_, "UPDATE trials SET params_json = $1 WHERE id = $2",
          Params().add(outcome->params_json).add(trial));
    t.commit();
    return true;
  });
}

void PostgresStudyStore::resume_trial(std::int64_t trial) {
  retrying([&](bool /*again*/) {
    const std::lock_guard<std::mutex> guard(mutex_);
    run(conn_, locator_, "UPDATE trials SET status = 'running', ended_unix_s = NULL WHERE id = $1", Params().add(trial));
  });
}

StoredTrial PostgresStudyStore::trial(std::int64_t id) const {
  return retrying([&](bool /*again*/) {
    const std::lock_guard<std::mutex> guard(mutex_);
    const Result q = run(conn_, locator_, (std::string(kPostgresTrialColumns) + "WHERE id = $1").c_str(), Params().add(id));
    if (q.rows() == 0) throw Error(fmt::format("study store {}: no trial with id {}", locator_, id));
    return read_trial(q, 0);
  });
}

std::vector<StoredTrial> PostgresStudyStore::trials(std::int64_t study, bool with_steps) const {
  return retrying([&](bool /*again*/) {
    const std::lock_guard<std::mutex> guard(mutex_);
    // One snapshot for the trials and their steps and metrics.
    PostgresTransaction t(conn_, locator_);
    const Result q = run(conn_, locator_, (std::string(kPostgresTrialColumns) + "WHERE study_id = $1 ORDER BY number").c_str(),
                         Params().add(study));
    std::vector<StoredTrial> out;
    out.reserve(static_cast<std::size_t>(q.rows()));
    for (int row = 0; row < q.rows(); ++row) out.push_back(read_trial(q, row));
    if (with_steps) read_outputs(study, out);
    t.commit();
    return out;
  });
}

void PostgresStudyStore::read_outputs(std::int64_t study, std::vector<StoredTrial>& trials) const {
  const std::vector<StoredTrial*> to_read = outputs_.fill(trials);  // ended trials' outputs are read once
  if (to_read.empty()) return;
  std::map<std::int64_t, StoredTrial*> by_id;
  for (StoredTrial* t : to_read) by_id[t->id] = t;
  // All of the study's outputs in one query the first time; later, those of the trials to read.
  const bool all = to_read.size() == trials.size();
  const std::string which = all ? "t.study_id = $1" : "t.study_id = $1 AND t.id = ANY($2::bigint[])";
  Params params;
  params.add(study);
  if (!all) {
    std::vector<std::int64_t> ids;
    ids.reserve(by_id.size());
    for (const auto& [id, t] : by_id) ids.push_back(id);
    params.add(fmt::format("{{{}}}", fmt::join(ids, ",")));
  }
  // A trial that ended after its row was read (READ COMMITTED) has outputs here but is not among
  // `trials`: skipped, as it would have been had it ended a moment later.
  const auto trial_of = [&](std::int64_t id) {
    const auto it = by_id.find(id);
    return it == by_id.end() ? nullptr : it->second;
  };
  const std::string steps_sql =
      "SELECT s.trial_id, s.step, s.step_time_s FROM steps s JOIN trials t ON t.id = s.trial_id WHERE " + which +
      " ORDER BY s.id";
  const Result s = run(conn_, locator_, steps_sql.c_str(), params);
  for (int row = 0; row < s.rows(); ++row) {
    if (StoredTrial* st = trial_of(s.integer(row, 0))) {
      st->step_numbers.push_back(s.integer(row, 1));
      st->step_times_s.push_back(s.real(row, 2));
    }
  }
  const std::string metrics_sql =
      "SELECT m.trial_id, m.name, m.value, m.step FROM metrics m JOIN trials t ON t.id = m.trial_id WHERE " + which +
      " ORDER BY m.id";
  const Result m = run(conn_, locator_, metrics_sql.c_str(), params);
  for (int row = 0; row < m.rows(); ++row) {
    if (StoredTrial* st = trial_of(m.integer(row, 0))) {
      trial::MetricReport r{m.text(row, 1), m.real(row, 2), std::nullopt, std::nullopt};
      if (!m.null(row, 3)) r.step = m.integer(row, 3);
      st->metrics.push_back(std::move(r));
    }
  }
  outputs_.keep(to_read);
}

std::vector<StudyInfo> PostgresStudyStore::studies() const {
  return retrying([&](bool /*again*/) {
    const std::lock_guard<std::mutex> guard(mutex_);
    const Result q =
        run(conn_, locator_, "SELECT id, name, created_unix_s, config_json, model_json FROM studies ORDER BY id");
    std::vector<StudyInfo> out;
    out.reserve(static_cast<std::size_t>(q.rows()));
    for (int row = 0; row < q.rows(); ++row)
      out.push_back({q.integer(row, 0), q.text(row, 1), q.real(row, 2), q.text(row, 3), q.text(row, 4)});
    return out;
  });
}

void PostgresStudyStore::set_prediction(std::int64_t trial, const std::string& prediction_json) {
  retrying([&](bool /*again*/) {
    const std::lock_guard<std::mutex> guard(mutex_);
    run(conn_, locator_, "UPDATE trials SET prediction_json = $1 WHERE id = $2", Params().add(prediction_json).add(trial));
  });
}

void PostgresStudyStore::set_model(std::int64_t study, const std::string& model_json) {
  retrying([&](bool /*again*/) {
    const std::lock_guard<std::mutex> guard(mutex_);
    run(conn_, locator_, "UPDATE studies SET model_json = $1 WHERE id = $2", Params().add(model_json).add(study));
  });
}

std::int64_t PostgresStudyStore::delete_study(std::int64_t study) {
  return retrying([&](bool /*again*/) -> std::int64_t {
    const std::lock_guard<std::mutex> guard(mutex_);
    PostgresTransaction t(conn_, locator_);
    const std::int64_t trials =
        run(conn_, locator_, "SELECT COUNT(*) FROM trials WHERE study_id = $1", Params().add(study)).integer(0, 0);
    for (const char* sql : {"DELETE FROM metrics WHERE trial_id IN (SELECT id FROM trials WHERE study_id = $1)",
                            "DELETE FROM steps WHERE trial_id IN (SELECT id FROM trials WHERE study_id = $1)",
                            "DELETE FROM trials WHERE study_id = $1", "DELETE FROM studies WHERE id = $1"})
      run(conn_, locator_, sql, Params().add(study));
    t.commit();
    return trials;
  });
}

void PostgresStudyStore::import_studies(const std::vector<StudyContent>& studies) {
  retrying([&](bool /*again*/) {
    const std::lock_guard<std::mutex> guard(mutex_);
    PostgresTransaction t(conn_, locator_);
    for (const StudyContent& c : studies) {
      if (run(conn_, locator_, "SELECT 1 FROM studies WHERE name = $1", Params().add(c.info.name)).rows() > 0)
        throw Error(fmt::format("study store {}: already holds a study '{}'; nothing was copied (copy it to another "
                                "database, or choose other studies)",
                                locator_, c.info.name));
      const std::int64_t study_id =
          run(conn_, locator_,
              "INSERT INTO studies (name, created_unix_s, config_json, model_json) VALUES ($1, $2, $3, $4) RETURNING id",
              Params().add(c.info.name).add(c.info.created_unix_s).add(c.info.config_json).text_or_null(c.info.model_json))
              .integer(0, 0);
      for (const StoredTrial& s : c.trials) {
        Params p;
        p.add(study_id).add(s.number).add(s.params_json).add(s.config_json).add(s.command).add(s.dir).add(s.status);
        p.add(s.started_unix_s);
        // ended 0 and exit -1 are how the readers show NULL; written back as NULL.
        p.add(s.ended_unix_s == 0 ? std::nullopt : std::optional<double>(s.ended_unix_s));
        p.add(s.exit_code == -1 ? std::nullopt : std::optional<int>(s.exit_code)).add(s.exit_signal);
        p.text_or_null(s.reason).text_or_null(s.stdout_path).text_or_null(s.stderr_path).add(s.steps);
        p.add(s.throughput).add(s.throughput_variance).add(s.throughput_ci_low).add(s.throughput_ci_high);
        p.add(s.peak_memory_bytes).add(s.malformed_lines).text_or_null(s.prediction_json).add(s.objective);
        p.add(s.rung).text_or_null(s.hpo_json).text_or_null(s.location).text_or_null(s.worker).add(s.heartbeat_unix_s);
        const std::int64_t trial_id =
            run(conn_, locator_,
                "INSERT INTO trials (study_id, number, params_json, config_json, command, dir, status, started_unix_s, "
                "ended_unix_s, exit_code, exit_signal, reason, stdout_path, stderr_path, steps, throughput, "
                "throughput_variance, throughput_ci_low, throughput_ci_high, peak_memory_bytes, malformed_lines, "
                "prediction_json, objective, rung, hpo_json, location, worker, heartbeat_unix_s) VALUES ($1, $2, $3, "
                "$4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22, $23, $24, "
                "$25, $26, $27, $28) RETURNING id",
                p)
                .integer(0, 0);
        insert_steps(conn_, locator_, trial_id, s.step_numbers, s.step_times_s);
        insert_metrics(conn_, locator_, trial_id, s.metrics);
      }
    }
    t.commit();
  });
}

}  // namespace paratune::store
