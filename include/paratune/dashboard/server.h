// `paratune dashboard STUDY`: the study report's views (report/html_page.h), live, over HTTP while
// `paratune tune` runs. A small server -- cpp-httplib 0.11 (Debian's libcpp-httplib-dev): a widely
// used, small C++ HTTP library, nothing else to run -- that only reads the store: each request opens
// it read-only (store::Access::kReadOnly), so the dashboard never writes, locks or slows a study --
// and serves exactly two things:
//   GET /            the study page, which polls /api/study every `poll_s` and redraws;
//   GET /api/study   the study's data as JSON (report/study_data.h); while the study file or the
//                    study does not exist yet, or cannot be read, a study of no trials whose
//                    "waiting" says why (the page shows it and keeps polling). With an ETag: the
//                    document is built again only when the store has changed (StudyReplies), and a
//                    request whose If-None-Match holds the current tag gets 304 and no body.
// Anything else is 404: no file is ever served. Bound to 127.0.0.1 unless told otherwise.
//
// Any client may be hostile (src/dashboard/request_gate.h): request heads are read with a deadline
// and size limits by one thread for all connections, bodies and Range headers are refused or
// ignored, replies have a deadline, and stopping takes well under a second whatever the clients do.
// A request whose Host header is not an address, localhost or this machine's name is refused (403):
// a web page elsewhere cannot read the study through a DNS name it points at this machine.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

namespace paratune::dashboard {

struct DashboardOptions {
  std::string locator;              // the study store: SQLite file or postgresql:// URI
  std::string study_name;           // empty: the store's one study
  std::string host = "127.0.0.1";
  int port = 8765;                  // 0: any free port
  double poll_s = 2;                // how often the page asks for the study
};
// Throws OptionError naming the field and the rule (port 0..65535, poll_s 0.1..3600, host not empty).
void validate(const DashboardOptions& options);

// The study's data now, as /api/study serves it: study_data plus "view", "locator" and "live".
// Throws Error saying why there is none yet (no such file, no study in it, not a paratune store).
nlohmann::ordered_json live_study(const DashboardOptions& options);

// Whether `host` (as --host gives it) reaches this machine only: localhost, 127.0.0.0/8 or ::1.
bool is_loopback_host(const std::string& host);
// The URL of a dashboard on `host` and `port`: http://127.0.0.1:8765/, an IPv6 address in brackets
// (http://[::]:8765/).
std::string dashboard_url(const std::string& host, int port);
// Whether a request's Host header value (a name or address, with or without ":port") may reach a
// dashboard listening on `listen_host`: an IP address (a page can only send one its URL holds, and
// an address cannot be re-pointed), localhost or NAME.localhost, `listen_host` itself, or -- when
// it listens beyond this machine -- this machine's name. An empty value (no Host header: not a
// browser) is allowed. Anything else is a name that someone's DNS points here: DNS rebinding.
bool host_allowed(const std::string& host_header, const std::string& listen_host);

// What GET /api/study answers: the document and its entity tag.
struct StudyReply {
  std::string json;  // embeddable_json of live_study, or of the waiting document
  std::string etag;  // a quoted hash of `json`: equal tags, equal documents
};

// /api/study's replies, built anew only when the store has changed. Building the document of a
// study of 20,000 trials takes most of a second (bench/dashboard_bench.cc); finding out whether it
// changed reads the study's rows only: a trial's steps and metrics change only in the transaction
// that also sets its row's status, end time and steps (store/output_cache.h relies on the same).
// Thread-safe: callers take turns, and one whose turn comes after a read that began after its call
// takes that read's reply, so many requests at once read the store about twice, not once each.
class StudyReplies {
 public:
  explicit StudyReplies(DashboardOptions options);
  // The reply for the store as it is now.
  std::shared_ptr<const StudyReply> now();
  // How many replies were built (not taken from the cache) so far.
  [[nodiscard]] int builds() const;

 private:
  DashboardOptions options_;
  mutable std::mutex mutex_;
  std::optional<std::uint64_t> version_;  // the store's version `reply_` was built from; none: waiting
  std::shared_ptr<const StudyReply> reply_;
  std::chrono::steady_clock::time_point last_read_;  // when the latest reply's store read began
  int builds_ = 0;
};

class DashboardServer {
 public:
  explicit DashboardServer(DashboardOptions options);
  ~DashboardServer();
  DashboardServer(const DashboardServer&) = delete;
  DashboardServer& operator=(const DashboardServer&) = delete;

  // Binds the address; returns the port (the chosen one for port 0). Throws Error naming the host
  // and port when it cannot.
  int bind();
  // Serves until `stop` becomes non-zero (checked every 0.1 s), then stops -- closing every
  // connection, within about 0.1 s plus a request handler already running -- and returns.
  void serve(const std::atomic<int>& stop);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace paratune::dashboard
