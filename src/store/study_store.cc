// What both stores share: the worker name, the begin_trial convenience, a dead worker's reason,
// and choosing a store by its locator (store/study_store.h).
#include "paratune/store/study_store.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <array>

#include "paratune/store/postgres_store.h"
#include "paratune/store/sqlite_store.h"

namespace paratune::store {

namespace {

// "HOSTNAME:PID": which process started a trial.
std::string default_worker_name() {
  std::array<char, 256> host{};
  if (::gethostname(host.data(), host.size() - 1) != 0) host[0] = '\0';
  return std::string(host.data()) + ":" + std::to_string(::getpid());
}

}  // namespace

StudyStore::StudyStore() : worker_(default_worker_name()) {}

std::pair<std::int64_t, int> StudyStore::begin_trial(std::int64_t study, const std::string& params_json,
                                                     const std::string& config_json, const std::string& command,
                                                     const std::string& dir) {
  return insert_trial(study, params_json, [&](int) { return LaunchRecord{config_json, command, dir, ""}; });
}

std::string dead_worker_reason(const StoredTrial& t, double now_unix_s) {
  const double since = t.heartbeat_unix_s.value_or(t.started_unix_s);
  return fmt::format("worker {} sent no heartbeat for {:.0f} s", t.worker.empty() ? "(unnamed)" : t.worker,
                     std::max(0.0, now_unix_s - since));
}

bool is_postgres_locator(const std::string& locator) {
  return locator.starts_with("postgresql://") || locator.starts_with("postgres://");
}

// A libpq URI is scheme://[user[:password]@][host][:port][/dbname][?param=value&...]; the password
// sits between the first ':' of the user info and the last '@' before the path, or in a
// "password=" parameter.
std::string mask_locator(const std::string& locator) {
  if (!is_postgres_locator(locator)) return locator;
  std::string out = locator;
  const std::size_t start = out.find("://") + 3;
  const std::size_t path = out.find_first_of("/?", start);
  const std::size_t at = out.rfind('@', path == std::string::npos ? std::string::npos : path);
  if (at != std::string::npos && at >= start) {
    const std::size_t colon = out.find(':', start);
    if (colon != std::string::npos && colon < at) out.replace(colon + 1, at - colon - 1, "***");
  }
  for (std::size_t q = out.find('?'); q != std::string::npos;) {
    const std::size_t key = q + 1;
    const std::size_t next = out.find('&', key);
    if (out.compare(key, 9, "password=") == 0) {
      out.replace(key + 9, (next == std::string::npos ? out.size() : next) - key - 9, "***");
      q = out.find('&', key);
    } else {
      q = next;
    }
  }
  return out;
}

std::unique_ptr<StudyStore> open_store(const std::string& locator, Access access) {
  if (is_postgres_locator(locator)) return std::make_unique<PostgresStudyStore>(locator, access);
  return std::make_unique<SqliteStudyStore>(locator, access);
}

}  // namespace paratune::store
