#include "paratune/dashboard/server.h"

#include <fmt/format.h>
#include <httplib.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <optional>
#include <string_view>
#include <thread>

#include "paratune/report/html_page.h"
#include "paratune/report/study_data.h"
#include "paratune/spec/error.h"
#include "paratune/spec/option_error.h"
#include "paratune/store/study_store.h"
#include "request_gate.h"

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

// The study's document from an open store: study_data plus "view", "locator" and "live".
nlohmann::ordered_json study_document(const store::StudyStore& store, const store::StudyInfo& study,
                                      const DashboardOptions& o) {
  nlohmann::ordered_json data = study_data(store, study);
  data["view"] = "study";
  data["locator"] = store.locator();
  data["live"] = live_part(o);
  return data;
}

// Throws Error saying why the store cannot be read yet (see live_study).
std::unique_ptr<store::StudyStore> open_study_store(const DashboardOptions& o) {
  if (!store::is_postgres_locator(o.locator) && !std::filesystem::exists(o.locator))
    throw Error(fmt::format("waiting for the study file {} (it does not exist yet)", o.locator));
  return store::open_store(o.locator, store::Access::kReadOnly);
}

// 64-bit FNV-1a, fed field by field (each with its length, so that fields cannot run into each
// other): the store's version (StudyReplies) and the entity tags. Not a defence against someone
// crafting collisions -- whoever can write the study can change what it shows anyway.
class Fnv1a {
 public:
  void add(std::string_view bytes) {
    add(static_cast<std::int64_t>(bytes.size()));
    add_raw(bytes);
  }
  // Numbers by their bytes (formatting 20,000 trials' numbers as text would double the cost).
  void add(double x) { add_raw(std::string_view(reinterpret_cast<const char*>(&x), sizeof(x))); }
  void add(std::int64_t x) { add_raw(std::string_view(reinterpret_cast<const char*>(&x), sizeof(x))); }
  void add(const std::optional<double>& x) {
    add_raw(x ? "+" : "-");
    if (x) add(*x);
  }
  void add(const std::optional<int>& x) {
    add_raw(x ? "+" : "-");
    if (x) add(std::int64_t{*x});
  }
  [[nodiscard]] std::uint64_t value() const { return hash_; }

 private:
  void add_raw(std::string_view bytes) {
    for (const char c : bytes) {
      hash_ ^= static_cast<unsigned char>(c);
      hash_ *= 1099511628211ULL;
    }
  }
  std::uint64_t hash_ = 14695981039346656037ULL;
};

// Every field of the studies and of `trials` (read without steps and metrics, which change only
// with their trial's row: see StudyReplies). A field added to StoredTrial or StudyInfo belongs here.
std::uint64_t store_version(const std::vector<store::StudyInfo>& studies, const std::vector<store::StoredTrial>& trials) {
  Fnv1a h;
  for (const store::StudyInfo& s : studies) {
    h.add(s.id);
    h.add(s.name);
    h.add(s.created_unix_s);
    h.add(s.config_json);
    h.add(s.model_json);
  }
  h.add(std::string_view("trials"));
  for (const store::StoredTrial& t : trials) {
    h.add(t.id);
    h.add(std::int64_t{t.number});
    h.add(t.params_json);
    h.add(t.config_json);
    h.add(t.command);
    h.add(t.dir);
    h.add(t.status);
    h.add(t.started_unix_s);
    h.add(t.ended_unix_s);
    h.add(std::int64_t{t.exit_code});
    h.add(std::int64_t{t.exit_signal});
    h.add(t.reason);
    h.add(t.stdout_path);
    h.add(t.stderr_path);
    h.add(std::int64_t{t.steps});
    h.add(t.throughput);
    h.add(t.throughput_variance);
    h.add(t.throughput_ci_low);
    h.add(t.throughput_ci_high);
    h.add(t.peak_memory_bytes);
    h.add(t.malformed_lines);
    h.add(t.prediction_json);
    h.add(t.objective);
    h.add(t.rung);
    h.add(t.hpo_json);
    h.add(t.location);
    h.add(t.worker);
    h.add(t.heartbeat_unix_s);
  }
  return h.value();
}

std::string etag_of(std::string_view json) {
  Fnv1a h;
  h.add(json);
  return fmt::format("\"{:016x}\"", h.value());
}

// Whether an If-None-Match value ("*", or a list of tags, weak or strong) holds `etag`.
bool matches_etag(const std::string& if_none_match, const std::string& etag) {
  std::string_view rest = if_none_match;
  while (!rest.empty()) {
    const std::size_t comma = rest.find(',');
    std::string_view tag = rest.substr(0, comma);
    rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
    while (!tag.empty() && (tag.front() == ' ' || tag.front() == '\t')) tag.remove_prefix(1);
    while (!tag.empty() && (tag.back() == ' ' || tag.back() == '\t')) tag.remove_suffix(1);
    if (tag.starts_with("W/")) tag.remove_prefix(2);  // If-None-Match compares weakly
    if (tag == "*" || tag == etag) return true;
  }
  return false;
}

// A --host or Host name in lower case, without brackets ("[::1]" -> "::1").
std::string bare_host(std::string host) {
  std::transform(host.begin(), host.end(), host.begin(), [](unsigned char c) { return std::tolower(c); });
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  return host;
}

bool is_ip_address(const std::string& host) {
  unsigned char address[sizeof(in6_addr)];
  return ::inet_pton(AF_INET, host.c_str(), address) == 1 || ::inet_pton(AF_INET6, host.c_str(), address) == 1;
}

bool is_localhost_name(const std::string& name) {
  return name == "localhost" || name.ends_with(".localhost");  // RFC 6761: always this machine
}

std::string this_machine_name() {
  char name[256] = {};
  if (::gethostname(name, sizeof(name) - 1) != 0) return "";
  return bare_host(name);
}

}  // namespace

nlohmann::ordered_json live_study(const DashboardOptions& o) {
  const std::unique_ptr<store::StudyStore> store = open_study_store(o);
  const std::vector<store::StudyInfo> studies = store->studies();
  return study_document(*store, choose_study(studies, o.study_name, store->locator()), o);
}

bool is_loopback_host(const std::string& host) {
  const std::string h = bare_host(host);
  if (is_localhost_name(h)) return true;
  in_addr v4{};
  if (::inet_pton(AF_INET, h.c_str(), &v4) == 1) return (ntohl(v4.s_addr) >> 24) == 127;  // 127.0.0.0/8
  in6_addr v6{};
  if (::inet_pton(AF_INET6, h.c_str(), &v6) != 1) return false;
  if (IN6_IS_ADDR_LOOPBACK(&v6)) return true;
  return IN6_IS_ADDR_V4MAPPED(&v6) && v6.s6_addr[12] == 127;  // ::ffff:127.x.y.z
}

std::string dashboard_url(const std::string& host, int port) {
  const bool ipv6 = host.find(':') != std::string::npos && host.front() != '[';
  return fmt::format("http://{}{}{}:{}/", ipv6 ? "[" : "", host, ipv6 ? "]" : "", port);
}

bool host_allowed(const std::string& host_header, const std::string& listen_host) {
  if (host_header.empty()) return true;
  // The name without its port: "[::1]:8765" -> "[::1]", "localhost:8765" -> "localhost".
  std::string name = host_header;
  const std::size_t colon = name.rfind(':');
  if (colon != std::string::npos && name.find(']', colon) == std::string::npos &&
      (name.front() == '[' || name.find(':') == colon))
    name = name.substr(0, colon);
  name = bare_host(name);
  if (name.ends_with('.')) name.pop_back();  // "localhost." is localhost
  if (is_ip_address(name) || is_localhost_name(name) || name == bare_host(listen_host)) return true;
  return !is_loopback_host(listen_host) && !name.empty() && name == this_machine_name();
}

StudyReplies::StudyReplies(DashboardOptions options) : options_(std::move(options)) {}

int StudyReplies::builds() const {
  const std::lock_guard<std::mutex> lock(mutex_);
  return builds_;
}

std::shared_ptr<const StudyReply> StudyReplies::now() {
  const std::chrono::steady_clock::time_point asked = std::chrono::steady_clock::now();
  const std::lock_guard<std::mutex> lock(mutex_);
  // A read of the store that began after this call was made saw everything written before it, so
  // its reply is this call's too: a crowd of requests reads the store about twice, not once each.
  if (reply_ && last_read_ > asked) return reply_;
  last_read_ = std::chrono::steady_clock::now();
  std::optional<std::uint64_t> version;
  nlohmann::ordered_json data;
  try {
    const std::unique_ptr<store::StudyStore> store = open_study_store(options_);
    const std::vector<store::StudyInfo> studies = store->studies();
    const store::StudyInfo& study = choose_study(studies, options_.study_name, store->locator());
    // The version first, the document after (each read is its own snapshot): a trial written in
    // between is in the document but not in the version, so the next request builds again --
    // once too often, never a stale document under a current version.
    version = store_version(studies, store->trials(study.id, /*with_steps=*/false));
    if (reply_ && version == version_) return reply_;
    data = study_document(*store, study, options_);
  } catch (const std::exception& e) {  // not there yet, or unreadable: the page says so and polls on
    version.reset();
    data = waiting_study(options_, e.what());
  }
  auto reply = std::make_shared<StudyReply>();
  reply->json = embeddable_json(data);
  reply->etag = etag_of(reply->json);
  reply_ = std::move(reply);
  version_ = version;
  ++builds_;
  return reply_;
}

struct DashboardServer::Impl {
  explicit Impl(DashboardOptions o) : options(std::move(o)), replies(options) {}
  DashboardOptions options;
  StudyReplies replies;
  GatedServer server;
  bool bound = false;
};

DashboardServer::DashboardServer(DashboardOptions options) {
  validate(options);
  impl_ = std::make_unique<Impl>(std::move(options));
  GatedServer& server = impl_->server;
  const DashboardOptions& o = impl_->options;
  StudyReplies& replies = impl_->replies;
  // Before routing: a Host that is not ours is refused, whatever the path.
  server.set_pre_routing_handler([&o](const httplib::Request& req, httplib::Response& res) {
    if (host_allowed(req.get_header_value("Host"), o.host)) return httplib::Server::HandlerResponse::Unhandled;
    res.status = 403;
    res.set_content(fmt::format("refused: the Host header names neither an IP address, localhost nor this machine "
                                "(a name someone pointed at {}: DNS rebinding); open the dashboard by its address",
                                o.host),
                    "text/plain; charset=utf-8");
    return httplib::Server::HandlerResponse::Handled;
  });
  server.Get("/", [&o, &replies](const httplib::Request&, httplib::Response& res) {
    res.set_header("Cache-Control", "no-store");
    res.set_content(html_page_with_json(fmt::format("paratune dashboard: {}", store::mask_locator(o.locator)),
                                        replies.now()->json),
                    "text/html; charset=utf-8");
  });
  server.Get("/api/study", [&replies](const httplib::Request& req, httplib::Response& res) {
    const std::shared_ptr<const StudyReply> reply = replies.now();
    // no-cache: a browser may keep the reply but must ask each time, with If-None-Match.
    res.set_header("Cache-Control", "no-cache");
    res.set_header("ETag", reply->etag);
    if (matches_etag(req.get_header_value("If-None-Match"), reply->etag)) {
      res.status = 304;
      return;
    }
    res.set_content(reply->json, "application/json");
  });
  server.set_error_handler([](const httplib::Request&, httplib::Response& res) {
    if (res.status == 404) res.set_content("not found: the dashboard serves / and /api/study only", "text/plain");
  });
  server.set_default_headers({{"X-Content-Type-Options", "nosniff"}});
}

DashboardServer::~DashboardServer() {
  impl_->server.stop();
  impl_->server.close_gate();
}

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
  GatedServer& server = impl_->server;
  server.open_gate();
  std::atomic<bool> listening_ended{false};
  std::thread listener([&] {
    server.listen_after_bind();
    listening_ended.store(true);
  });
  while (stop.load() == 0) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  // stop() closes the listening socket, which ends the accept loop -- once that loop has started:
  // until then it is a no-op, so it is repeated until the loop has ended.
  while (!listening_ended.load()) {
    server.stop();
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  listener.join();
  server.close_gate();
}

}  // namespace paratune::dashboard
