// What both stores share: the worker name, the begin_trial convenience, a dead worker's reason,
// and choosing a store by its locator (store/study_store.h).
#include "paratune/store/study_store.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <iostream>
#include <thread>

#include <nlohmann/json.hpp>

#include "paratune/spec/input_file.h"
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

void StudyStore::wait_to_retry(const StoreUnavailable& e, Outage& outage) const {
  const auto now = std::chrono::steady_clock::now();
  if (!outage.active) {
    outage.active = true;
    outage.since = now;
    if (retry_s_ > 0)
      std::cerr << fmt::format("paratune: warning: {}; the store is unavailable, retrying for up to {:.0f} s "
                               "(--store-retry)\n",
                               e.what(), retry_s_);
  }
  if (retry_s_ <= 0) throw e;  // no retries: the failure as it is
  const double waited_s = std::chrono::duration<double>(now - outage.since).count();
  if (waited_s >= retry_s_)
    throw StoreUnavailable(fmt::format("{}; the store stayed unavailable for {:.0f} s (--store-retry {:.0f}s): run the "
                                       "same command again once it is back, and the study continues",
                                       e.what(), waited_s, retry_s_));
  std::this_thread::sleep_for(std::chrono::duration<double>(std::min(outage.pause_s, retry_s_ - waited_s)));
  outage.pause_s = std::min(outage.pause_s * 2, 2.0);
}

void StudyStore::recovered(const Outage& outage) const {
  if (!outage.active || retry_s_ <= 0) return;
  std::cerr << fmt::format("paratune: study store {} is available again after {:.1f} s\n", locator(),
                           std::chrono::duration<double>(std::chrono::steady_clock::now() - outage.since).count());
}

std::string finish_reason(const trial::TrialResult& result, const TrialOutcome* outcome) {
  return printable_text(outcome && !outcome->reason.empty() ? outcome->reason : result.reason);
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

std::unique_ptr<StudyStore> open_store(const std::string& locator, Access access, std::optional<double> retry_s) {
  const double seconds = retry_s.value_or(access == Access::kReadOnly ? 0.0 : kDefaultStoreRetryS);
  if (is_postgres_locator(locator)) return std::make_unique<PostgresStudyStore>(locator, access, seconds);
  auto store = std::make_unique<SqliteStudyStore>(locator, access);
  store->set_retry_s(seconds);
  return store;
}

namespace {

// The first difference between two JSON values under `path` (see identity_difference). Objects
// are compared field by field, in `now`'s order; key order counts (the parameters' order is the
// order the samplers see them in).
std::string first_difference(const nlohmann::ordered_json& stored, const nlohmann::ordered_json& now,
                             const std::string& path) {
  const std::string where = path.empty() ? "the configuration" : path;
  if (stored.is_object() && now.is_object()) {
    for (const auto& [key, value] : now.items()) {
      const std::string here = path.empty() ? key : path + "." + key;
      if (!stored.contains(key)) return fmt::format("{} is new (it was not set when the study was created)", here);
      if (std::string d = first_difference(stored[key], value, here); !d.empty()) return d;
    }
    for (const auto& [key, value] : stored.items())
      if (!now.contains(key))
        return fmt::format("{} is gone (it was {} when the study was created)", path.empty() ? key : path + "." + key,
                           value.dump());
    return stored.dump() == now.dump() ? "" : where + ": the same fields in another order";
  }
  return stored == now ? "" : fmt::format("{} is {} now, {} when the study was created", where, now.dump(), stored.dump());
}

}  // namespace

std::string identity_difference(const std::string& stored_json, const std::string& now_json) {
  if (stored_json == now_json) return "";
  const auto stored = nlohmann::ordered_json::parse(stored_json, nullptr, false);
  const auto now = nlohmann::ordered_json::parse(now_json, nullptr, false);
  if (stored.is_discarded() || now.is_discarded()) return "the stored configuration is not the one given";
  return first_difference(stored, now, "");
}

}  // namespace paratune::store
