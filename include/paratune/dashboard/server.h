// `paratune dashboard STUDY`: the study report's views (report/html_page.h), live, over HTTP while
// `paratune tune` runs. A small server -- cpp-httplib 0.11 (Debian's libcpp-httplib-dev): a widely
// used, small C++ HTTP library with its own thread pool, nothing else to run -- that only reads the
// store: each request opens it read-only
// (store::Access::kReadOnly), so the dashboard never writes, locks or slows a study -- and serves
// exactly two things:
//   GET /            the study page, which polls /api/study every `poll_s` and redraws;
//   GET /api/study   the study's data as JSON (report/study_data.h); while the study file or the
//                    study does not exist yet, or cannot be read, a study of no trials whose
//                    "waiting" says why (the page shows it and keeps polling).
// Anything else is 404: no file is ever served. Bound to 127.0.0.1 unless told otherwise.
#pragma once

#include <atomic>
#include <memory>
#include <nlohmann/json.hpp>
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

class DashboardServer {
 public:
  explicit DashboardServer(DashboardOptions options);
  ~DashboardServer();
  DashboardServer(const DashboardServer&) = delete;
  DashboardServer& operator=(const DashboardServer&) = delete;

  // Binds the address; returns the port (the chosen one for port 0). Throws Error naming the host
  // and port when it cannot.
  int bind();
  // Serves until `stop` becomes non-zero (checked every 0.1 s), then stops and returns.
  void serve(const std::atomic<int>& stop);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace paratune::dashboard
