// `paratune dashboard` against clients that do not play fair (issue 39, item 3): the real binary
// on loopback, spoken to over real sockets. Each hostile request is one a single client can send:
// a Range header of 400 ranges, a 300 MB body, 20,000 header lines or an endless one, dozens of
// connections that send their request a byte at a time, a Host header naming someone else's domain
// (DNS rebinding). The dashboard must answer each with a bounded amount of memory, keep answering
// a normal client meanwhile, and stop promptly on SIGTERM with those clients still connected. Also:
// /api/study's ETag (304 while the store is unchanged, a new tag once it changes) and the URL it
// prints for an IPv6 address. Time bounds here are liveness bounds (a client is answered at all,
// within 10 s), not speed measurements.
#include <arpa/inet.h>
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "../support/test_files.h"
#include "paratune/store/sqlite_store.h"

namespace {

using Clock = std::chrono::steady_clock;

std::filesystem::path fresh_dir(const std::string& name) {
  return paratune::testing::fresh_test_dir("paratune_dash", name);
}

// `paratune dashboard STUDY ARGS` (its own process group), killed at the end of the test unless it
// has ended.
struct Dashboard {
  pid_t pid = -1;
  std::filesystem::path out;
  std::string host;  // as printed in its URL, without brackets
  int port = 0;

  Dashboard(const std::filesystem::path& study, const std::string& args) : out(study.parent_path() / "dashboard.out") {
    const std::string command =
        fmt::format("exec {} dashboard {} --port 0 {} > {} 2>&1", PARATUNE_BINARY, study.string(), args, out.string());
    pid = fork();
    if (pid == 0) {
      setpgid(0, 0);
      execl("/bin/sh", "sh", "-c", command.c_str(), nullptr);
      _exit(127);
    }
    // Its URL once it listens (within 10 s).
    for (int i = 0; i < 200 && port == 0; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      std::smatch m;
      const std::string text = output();
      if (std::regex_search(text, m, std::regex(R"(http://(\[([^\]]+)\]|([^/:\s]+)):([0-9]+)/)"))) {
        host = m[2].matched ? m[2].str() : m[3].str();
        port = std::stoi(m[4].str());
      }
    }
  }
  Dashboard(const Dashboard&) = delete;
  Dashboard& operator=(const Dashboard&) = delete;
  ~Dashboard() {
    if (pid > 0) {
      ::kill(-pid, SIGKILL);
      ::waitpid(pid, nullptr, 0);
    }
  }
  [[nodiscard]] std::string output() const { return paratune::testing::read_file(out); }
  // Its peak resident memory so far (VmHWM), in MB.
  [[nodiscard]] double peak_mb() const {
    std::ifstream status(fmt::format("/proc/{}/status", pid));
    std::string line;
    while (std::getline(status, line))
      if (line.starts_with("VmHWM:")) return std::stod(line.substr(6)) / 1024;
    return -1;
  }
  // Its exit code once it ends within `seconds` (-1 if it has not).
  int wait(double seconds) {
    for (const auto end = Clock::now() + std::chrono::duration<double>(seconds); Clock::now() < end;) {
      int status = 0;
      if (::waitpid(pid, &status, WNOHANG) == pid) {
        pid = -1;
        return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return -1;
  }
};

// A client connection (IPv4 or IPv6 by the address's form).
class Connection {
 public:
  Connection(const std::string& address, int port) {
    sockaddr_storage a{};
    socklen_t length = 0;
    if (address.find(':') != std::string::npos) {
      auto* v6 = reinterpret_cast<sockaddr_in6*>(&a);
      v6->sin6_family = AF_INET6;
      v6->sin6_port = htons(static_cast<std::uint16_t>(port));
      ::inet_pton(AF_INET6, address.c_str(), &v6->sin6_addr);
      length = sizeof(sockaddr_in6);
    } else {
      auto* v4 = reinterpret_cast<sockaddr_in*>(&a);
      v4->sin_family = AF_INET;
      v4->sin_port = htons(static_cast<std::uint16_t>(port));
      ::inet_pton(AF_INET, address.c_str(), &v4->sin_addr);
      length = sizeof(sockaddr_in);
    }
    fd_ = ::socket(a.ss_family, SOCK_STREAM, 0);
    // Sends never block for long: a server that stops reading fails the send, not the test run.
    const timeval ten_s{10, 0};
    ::setsockopt(fd_, SOL_SOCKET, SO_SNDTIMEO, &ten_s, sizeof(ten_s));
    connected_ = ::connect(fd_, reinterpret_cast<sockaddr*>(&a), length) == 0;
  }
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;
  ~Connection() { ::close(fd_); }
  [[nodiscard]] bool connected() const { return connected_; }

  // Sends all of `data`; false once the server has closed or stopped reading.
  bool send(std::string_view data) {
    while (!data.empty()) {
      const ssize_t n = ::send(fd_, data.data(), data.size(), MSG_NOSIGNAL);
      if (n <= 0) return false;
      data.remove_prefix(static_cast<std::size_t>(n));
    }
    return true;
  }
  // Everything the server sends until it closes the connection or `seconds` pass.
  std::string receive(double seconds) {
    std::string got;
    for (const auto end = Clock::now() + std::chrono::duration<double>(seconds);;) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(end - Clock::now()).count();
      if (left <= 0) break;
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, static_cast<int>(left)) <= 0) break;
      char buffer[65536];
      const ssize_t n = ::recv(fd_, buffer, sizeof(buffer), 0);
      if (n <= 0) break;
      got.append(buffer, static_cast<std::size_t>(n));
    }
    return got;
  }
  // Whether the server has answered or closed (without waiting).
  bool heard_from() {
    pollfd p{fd_, POLLIN, 0};
    return ::poll(&p, 1, 0) > 0;
  }

 private:
  int fd_ = -1;
  bool connected_ = false;
};

struct Reply {
  int status = 0;                              // 0: no answer
  std::map<std::string, std::string> headers;  // names in lower case
  std::string body;
};

Reply parse_reply(const std::string& raw) {
  Reply r;
  std::smatch m;
  if (!std::regex_search(raw, m, std::regex("^HTTP/1\\.[01] ([0-9]{3})"))) return r;
  r.status = std::stoi(m[1].str());
  const std::size_t end = raw.find("\r\n\r\n");
  if (end == std::string::npos) return r;
  std::size_t pos = raw.find("\r\n") + 2;
  while (pos < end) {
    const std::size_t eol = raw.find("\r\n", pos);
    const std::string line = raw.substr(pos, eol - pos);
    const std::size_t colon = line.find(':');
    std::string name = line.substr(0, colon);
    for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    r.headers[name] = line.substr(line.find_first_not_of(' ', colon + 1));
    pos = eol + 2;
  }
  r.body = raw.substr(end + 4);
  return r;
}

// GET `path` with `headers` (each "Name: value\r\n"), on a connection of its own; the reply within 10 s.
Reply get(const std::string& address, int port, const std::string& path, const std::string& headers = "") {
  Connection c(address, port);
  if (!c.connected() ||
      !c.send(fmt::format("GET {} HTTP/1.1\r\nHost: localhost:{}\r\n{}Connection: close\r\n\r\n", path, port, headers)))
    return {};
  return parse_reply(c.receive(10));
}

// A configurations study of `trials` completed trials in `path`.
void write_study(const std::filesystem::path& path, int trials) {
  paratune::store::SqliteStudyStore store(path);
  const std::int64_t study = store.open_study("main", "{}");
  for (int i = 0; i < trials; ++i) {
    const auto [id, number] =
        store.begin_trial(study, fmt::format(R"({{"tp":{},"pp":{},"note":"{}"}})", i % 8, i % 4, std::string(200, 'x')),
                          "{}", "train --steps 10", "/tmp/t");
    paratune::trial::TrialResult result;
    result.status = paratune::trial::TrialStatus::kCompleted;
    result.started_unix_s = 1000 + i;
    result.ended_unix_s = 1001 + i;
    result.throughput.steps_per_s = 1.0 + i;
    result.throughput.steps_used = 1;
    store.finish_trial(id, result);
  }
}

// A Range header of 400 ranges, each the whole document: the reply is the document once (the
// ranges are ignored), not 400 copies of it in memory.
TEST(DashboardClients, ARangeHeaderOfManyRangesGetsTheDocumentOnce) {
  const auto dir = fresh_dir("range");
  write_study(dir / "s.db", 300);
  Dashboard dashboard(dir / "s.db", "");
  ASSERT_GT(dashboard.port, 0) << dashboard.output();
  const Reply plain = get("127.0.0.1", dashboard.port, "/api/study");
  ASSERT_EQ(plain.status, 200);
  ASSERT_GT(plain.body.size(), 100'000U);  // 300 trials: 400 copies would be over 40 MB
  std::string ranges = "bytes=0-";
  for (int i = 1; i < 400; ++i) ranges += ",0-";
  const double before_mb = dashboard.peak_mb();
  for (const std::string path : {"/api/study", "/"}) {
    const Reply ranged = get("127.0.0.1", dashboard.port, path, "Range: " + ranges + "\r\n");
    EXPECT_EQ(ranged.status, 200) << path;
    EXPECT_FALSE(ranged.headers.contains("content-range")) << path;
    EXPECT_LT(ranged.body.size(), 2 * plain.body.size() + 2'000'000) << path;  // "/": the page holds the document
    if (path == "/api/study")
      EXPECT_TRUE(ranged.body == plain.body) << ranged.body.size() << " bytes, not the document";
  }
  EXPECT_LT(dashboard.peak_mb() - before_mb, 20) << "peak memory grew from " << before_mb << " MB";
}

// A request body (the dashboard serves GET only) is refused before it is read: 413 at once, with
// 1 MB of a declared 300 MB sent; and 300 MB actually sent are never held in memory.
TEST(DashboardClients, ARequestBodyIsRefusedUnread) {
  const auto dir = fresh_dir("body");
  Dashboard dashboard(dir / "s.db", "");
  ASSERT_GT(dashboard.port, 0) << dashboard.output();
  // Growth, not the absolute figure: under AddressSanitizer the idle process alone is ~90 MB.
  const double before_mb = dashboard.peak_mb();
  const std::string head = "POST /nowhere HTTP/1.1\r\nHost: localhost\r\nContent-Length: 300000000\r\n\r\n";
  const std::string megabyte(1 << 20, 'b');
  {
    Connection c("127.0.0.1", dashboard.port);
    ASSERT_TRUE(c.send(head));
    c.send(megabyte);
    EXPECT_EQ(parse_reply(c.receive(10)).status, 413);
  }
  {
    Connection c("127.0.0.1", dashboard.port);
    ASSERT_TRUE(c.send(head));
    for (int sent = 0; sent < 300 && c.send(megabyte); ++sent) {
    }
    c.receive(2);
  }
  EXPECT_LT(dashboard.peak_mb() - before_mb, 60) << "peak memory grew from " << before_mb << " MB (300 MB were sent)";
  EXPECT_EQ(get("127.0.0.1", dashboard.port, "/api/study").status, 200) << "no answer after the bodies";
}

// 20,000 header lines, and one header line of 50 MB that never ends: 431, and neither is held.
TEST(DashboardClients, EndlessHeadersAreRefused) {
  const auto dir = fresh_dir("headers");
  Dashboard dashboard(dir / "s.db", "");
  ASSERT_GT(dashboard.port, 0) << dashboard.output();
  const double before_mb = dashboard.peak_mb();  // growth: under AddressSanitizer the idle process is ~90 MB
  {
    std::string request = "GET /api/study HTTP/1.1\r\nHost: localhost\r\n";
    for (int i = 0; i < 20'000; ++i) request += fmt::format("X-Filler-{}: x\r\n", i);
    Connection c("127.0.0.1", dashboard.port);
    c.send(request + "\r\n");
    EXPECT_EQ(parse_reply(c.receive(10)).status, 431);
  }
  {
    Connection c("127.0.0.1", dashboard.port);
    c.send("GET /api/study HTTP/1.1\r\nHost: localhost\r\nX-Long: ");
    const std::string megabyte(1 << 20, 'h');
    for (int sent = 0; sent < 50 && c.send(megabyte); ++sent) {
    }
    EXPECT_EQ(parse_reply(c.receive(10)).status, 431);
  }
  EXPECT_LT(dashboard.peak_mb() - before_mb, 20) << "peak memory grew from " << before_mb << " MB (a 50 MB line was sent)";
  EXPECT_EQ(get("127.0.0.1", dashboard.port, "/api/study").status, 200);
}

// Clients that send their request a byte every 0.3 s, many more than any pool of threads.
class SlowClients {
 public:
  SlowClients(int port, int count) {
    for (int i = 0; i < count; ++i) {
      clients_.push_back(std::make_unique<Connection>("127.0.0.1", port));
      clients_.back()->send("GET /api/study HTTP/1.1\r\n");
    }
    dripping_ = std::thread([this] {
      while (!stop_.load()) {
        for (const auto& c : clients_) c->send("X");
        std::this_thread::sleep_for(std::chrono::milliseconds(300));
      }
    });
  }
  SlowClients(const SlowClients&) = delete;
  SlowClients& operator=(const SlowClients&) = delete;
  ~SlowClients() {
    stop_.store(true);
    dripping_.join();
  }
  // How many have been answered or closed by the server, waiting up to `seconds` for all of them.
  int heard_from(double seconds) {
    int heard = 0;
    for (const auto end = Clock::now() + std::chrono::duration<double>(seconds);;) {
      heard = 0;
      for (const auto& c : clients_) heard += c->heard_from() ? 1 : 0;
      if (heard == static_cast<int>(clients_.size()) || Clock::now() > end) return heard;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  }

 private:
  std::vector<std::unique_ptr<Connection>> clients_;
  std::atomic<bool> stop_{false};
  std::thread dripping_;
};

// 40 slow clients (httplib's pool had 8 threads): a normal client is still answered, and each slow
// one is answered (408) once its head's deadline (10 s) has passed, although it keeps sending.
TEST(DashboardClients, SlowClientsDoNotStopIt) {
  const auto dir = fresh_dir("slow");
  write_study(dir / "s.db", 3);
  Dashboard dashboard(dir / "s.db", "");
  ASSERT_GT(dashboard.port, 0) << dashboard.output();
  SlowClients slow(dashboard.port, 40);
  std::this_thread::sleep_for(std::chrono::seconds(1));
  for (int i = 0; i < 3; ++i) {
    const Reply normal = get("127.0.0.1", dashboard.port, "/api/study");
    ASSERT_EQ(normal.status, 200) << "a normal client was not answered within 10 s, with 40 slow ones connected";
    EXPECT_NE(normal.body.find("\"main\""), std::string::npos);
  }
  EXPECT_EQ(slow.heard_from(30), 40) << "slow clients still held after 30 s, although they never finished a request";
}

// 300 connections that send nothing at all (more than the gate keeps waiting: the longest-waiting
// are closed first): a normal client is still answered.
TEST(DashboardClients, IdleConnectionsDoNotLockOutOthers) {
  const auto dir = fresh_dir("idle");
  Dashboard dashboard(dir / "s.db", "");
  ASSERT_GT(dashboard.port, 0) << dashboard.output();
  std::vector<std::unique_ptr<Connection>> idle;
  for (int i = 0; i < 300; ++i) idle.push_back(std::make_unique<Connection>("127.0.0.1", dashboard.port));
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  EXPECT_EQ(get("127.0.0.1", dashboard.port, "/api/study").status, 200)
      << "a normal client was not answered within 10 s, with 300 idle connections open";
}

// SIGTERM with slow clients connected, and one normal request: the dashboard exits at once (0).
TEST(DashboardClients, SigtermStopsItWithSlowClientsConnected) {
  const auto dir = fresh_dir("sigterm");
  write_study(dir / "s.db", 3);
  Dashboard dashboard(dir / "s.db", "");
  ASSERT_GT(dashboard.port, 0) << dashboard.output();
  SlowClients slow(dashboard.port, 20);
  std::this_thread::sleep_for(std::chrono::seconds(1));
  ASSERT_EQ(::kill(dashboard.pid, SIGTERM), 0);
  EXPECT_EQ(dashboard.wait(5), 0) << "still running 5 s after SIGTERM";
}

// /api/study has an ETag: the same tag gets 304 and no body while the store is unchanged; a trial
// that starts, and then the same trial's end, each give a new tag and document.
TEST(DashboardClients, StudyETagChangesExactlyWithTheStore) {
  const auto dir = fresh_dir("etag");
  write_study(dir / "s.db", 2);
  Dashboard dashboard(dir / "s.db", "");
  ASSERT_GT(dashboard.port, 0) << dashboard.output();
  const Reply first = get("127.0.0.1", dashboard.port, "/api/study");
  ASSERT_EQ(first.status, 200);
  ASSERT_TRUE(first.headers.contains("etag"));
  const std::string tag = first.headers.at("etag");
  const Reply same = get("127.0.0.1", dashboard.port, "/api/study", "If-None-Match: " + tag + "\r\n");
  EXPECT_EQ(same.status, 304);
  EXPECT_TRUE(same.body.empty());
  EXPECT_EQ(same.headers.at("etag"), tag);
  // Another tag, or a list holding it, weak or not.
  EXPECT_EQ(get("127.0.0.1", dashboard.port, "/api/study", "If-None-Match: \"0\"\r\n").status, 200);
  EXPECT_EQ(get("127.0.0.1", dashboard.port, "/api/study", "If-None-Match: \"0\", W/" + tag + "\r\n").status, 304);

  paratune::store::SqliteStudyStore store(dir / "s.db");
  const std::int64_t study = store.studies().at(0).id;
  const auto [id, number] = store.begin_trial(study, R"({"tp":9,"pp":9})", "{}", "train", "/tmp/t");
  const Reply started = get("127.0.0.1", dashboard.port, "/api/study", "If-None-Match: " + tag + "\r\n");
  ASSERT_EQ(started.status, 200);
  EXPECT_NE(started.headers.at("etag"), tag);
  EXPECT_NE(started.body.find("\"running\""), std::string::npos);

  paratune::trial::TrialResult result;
  result.status = paratune::trial::TrialStatus::kCompleted;
  result.started_unix_s = 2000;
  result.ended_unix_s = 2001;
  result.throughput.steps_per_s = 77.5;
  result.throughput.steps_used = 1;
  store.finish_trial(id, result);
  const Reply ended =
      get("127.0.0.1", dashboard.port, "/api/study", "If-None-Match: " + started.headers.at("etag") + "\r\n");
  ASSERT_EQ(ended.status, 200);
  EXPECT_NE(ended.headers.at("etag"), started.headers.at("etag"));
  EXPECT_NE(ended.body.find("77.5"), std::string::npos);
}

// DNS rebinding: a page on evil.example whose name now points at 127.0.0.1 sends "Host:
// evil.example". Refused (403) on every path; addresses, localhost and NAME.localhost are served.
TEST(DashboardClients, ForeignHostNamesAreRefused) {
  const auto dir = fresh_dir("host");
  Dashboard dashboard(dir / "s.db", "");
  ASSERT_GT(dashboard.port, 0) << dashboard.output();
  const auto with_host = [&](const std::string& host, const std::string& path) {
    Connection c("127.0.0.1", dashboard.port);
    c.send(fmt::format("GET {} HTTP/1.1\r\nHost: {}\r\nConnection: close\r\n\r\n", path, host));
    return parse_reply(c.receive(10)).status;
  };
  const std::string port = std::to_string(dashboard.port);
  for (const std::string path : {"/", "/api/study", "/nowhere"}) {
    EXPECT_EQ(with_host("evil.example:" + port, path), 403) << path;
    EXPECT_EQ(with_host("evil.example", path), 403) << path;
    EXPECT_EQ(with_host("localhost.evil.example:" + port, path), 403) << path;
    EXPECT_EQ(with_host("127.0.0.1.evil.example", path), 403) << path;
  }
  for (const std::string& host : std::vector<std::string>{"127.0.0.1:" + port, "localhost:" + port, "LOCALHOST",
                                                          "[::1]:" + port, "app.localhost:" + port, "127.0.0.1"})
    EXPECT_EQ(with_host(host, "/api/study"), 200) << host;
}

bool has_ipv6_loopback() {
  const int s = ::socket(AF_INET6, SOCK_STREAM, 0);
  sockaddr_in6 a{};
  a.sin6_family = AF_INET6;
  a.sin6_addr = in6addr_loopback;
  const bool ok = s >= 0 && ::bind(s, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0;
  ::close(s);
  return ok;
}

// --host 127.0.0.2 is this machine only (no warning) and answers there; --host :: listens on every
// address, printed as http://[::]:PORT/ (with the warning that others can reach it).
TEST(DashboardClients, ItsUrlBracketsAnIpv6AddressAnd127Slash8IsLoopback) {
  const auto dir = fresh_dir("url");
  write_study(dir / "s.db", 1);
  {
    Dashboard loopback(dir / "s.db", "--host 127.0.0.2");
    ASSERT_GT(loopback.port, 0) << loopback.output();
    EXPECT_NE(loopback.output().find(fmt::format("http://127.0.0.2:{}/", loopback.port)), std::string::npos);
    EXPECT_EQ(loopback.output().find("warning"), std::string::npos) << loopback.output();
    EXPECT_EQ(get("127.0.0.2", loopback.port, "/api/study").status, 200);
  }
  if (has_ipv6_loopback()) {  // where this machine has an IPv6 loopback address
    Dashboard any(dir / "s.db", "--host ::");
    ASSERT_GT(any.port, 0) << any.output();
    EXPECT_NE(any.output().find(fmt::format("http://[::]:{}/", any.port)), std::string::npos) << any.output();
    EXPECT_NE(any.output().find("warning: listening on ::"), std::string::npos) << any.output();
    EXPECT_EQ(get("::1", any.port, "/api/study").status, 200);
  }
}

}  // namespace
