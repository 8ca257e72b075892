#include "paratune/dashboard/server.h"

#include <fmt/format.h>
#include <httplib.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <thread>

#include "paratune/report/html_page.h"
#include "paratune/report/study_data.h"
#include "paratune/spec/error.h"
#include "paratune/spec/option_error.h"
#include "paratune/store/study_store.h"

namespace paratune::dashboard {

void validate(const DashboardOptions& o) {
  if (o.locator.empty()) throw OptionError("locator", "", "a study store (SQLite file or postgresql:// URI) is required");
  if (o.host.empty()) throw OptionError("host", "", "must not be empty (127.0.0.1: this machine only)");
  if (o.port < 0 || o.port > 65535) throw OptionError("port", std::to_string(o.port), "must be 0 (any free) to 65535");
  if (!(o.poll_s >= 0.1 && o.poll_s <= 3600)) throw OptionError("poll_s", fmt::format("{}", o.poll_s), "must be 0.1 to 3600 seconds");
}

namespace {

nlohmann::ordered_json live_part(const DashboardOptions& o) {
  return {{"url", "/api/study"}, {"poll_ms", static_cast<int>(std::lround(o.poll_s * 1000))}};
}

// A page before the study can be read: no trials, and why (the script polls and redraws).
nlohmann::ordered_json waiting_study(const DashboardOptions& o, const std::string& why) {
  return {{"view", "study"},
          {"study", o.study_name.empty() ? std::string("(waiting)") : o.study_name},
          {"kind", "configurations"},
          {"objective", "-"},
          {"direction", "maximize"},
          {"status_counts", nlohmann::ordered_json::object()},
          {"trials", nlohmann::ordered_json::array()},
          {"waiting", why},
          {"locator", store::mask_locator(o.locator)},
          {"live", live_part(o)}};
}

}  // namespace

nlohmann::ordered_json live_study(const DashboardOptions& o) {
  if (!store::is_postgres_locator(o.locator) && !std::filesystem::exists(o.locator))
    throw Error(fmt::format("waiting for the study file {} (it does not exist yet)", o.locator));
  const std::unique_ptr<store::StudyStore> store = store::open_store(o.locator, store::Access::kReadOnly);
  const std::vector<store::StudyInfo> studies = store->studies();
  nlohmann::ordered_json data = study_data(*store, choose_study(studies, o.study_name, store->locator()));
  data["view"] = "study";
  data["locator"] = store->locator();
  data["live"] = live_part(o);
  return data;
}

struct DashboardServer::Impl {
  DashboardOptions options;
  httplib::Server server;
  bool bound = false;
};

DashboardServer::DashboardServer(DashboardOptions options) : impl_(std::make_unique<Impl>()) {
  validate(options);
  impl_->options = std::move(options);
  httplib::Server& server = impl_->server;
  const DashboardOptions& o = impl_->options;
  server.Get("/", [&o](const httplib::Request&, httplib::Response& res) {
    nlohmann::ordered_json data;
    try {
      data = live_study(o);
    } catch (const std::exception& e) {
      data = waiting_study(o, e.what());
    }
    res.set_header("Cache-Control", "no-store");
    res.set_content(html_page(fmt::format("paratune dashboard: {}", store::mask_locator(o.locator)), data),
                    "text/html; charset=utf-8");
  });
  server.Get("/api/study", [&o](const httplib::Request&, httplib::Response& res) {
    res.set_header("Cache-Control", "no-store");
    nlohmann::ordered_json data;
    try {
      data = live_study(o);
    } catch (const std::exception& e) {  // not there yet, or unreadable: the page says so and polls on
      data = waiting_study(o, e.what());
    }
    res.set_content(embeddable_json(data), "application/json");
  });
  server.set_error_handler([](const httplib::Request&, httplib::Response& res) {
    if (res.status == 404) res.set_content("not found: the dashboard serves / and /api/study only", "text/plain");
  });
}

DashboardServer::~DashboardServer() { impl_->server.stop(); }

int DashboardServer::bind() {
  const DashboardOptions& o = impl_->options;
  const int port = o.port == 0 ? impl_->server.bind_to_any_port(o.host)
                               : (impl_->server.bind_to_port(o.host, o.port) ? o.port : -1);
  if (port <= 0)
    throw Error(fmt::format("dashboard: cannot listen on {}:{} (in use, or not an address of this machine)", o.host,
                            o.port));
  impl_->bound = true;
  return port;
}

void DashboardServer::serve(const std::atomic<int>& stop) {
  if (!impl_->bound) bind();
  std::thread listener([this] { impl_->server.listen_after_bind(); });
  while (stop.load() == 0) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  impl_->server.stop();
  listener.join();
}

}  // namespace paratune::dashboard
