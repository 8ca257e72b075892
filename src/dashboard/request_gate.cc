#include "request_gate.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <string_view>

namespace paratune::dashboard {

namespace {

using Clock = std::chrono::steady_clock;

// How long a refused connection is still read from (and what it sends dropped) before it is closed.
constexpr std::chrono::milliseconds kDrainTime{1000};
// The longest a thread sleeps in poll() before it looks at the stop flag again.
constexpr int kTickMs = 100;

int ms_until(Clock::time_point t, Clock::time_point now) {
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(t - now).count();
  return static_cast<int>(std::clamp<long long>(ms, 0, kTickMs));
}

bool equals_ignoring_case(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
         });
}

std::string_view trimmed(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// What the gate makes of a complete head: an answer to give at once (status != 0), or the head to
// pass on to httplib.
struct Verdict {
  int status = 0;
  std::string why;
  std::string head;
};

// `head`: the request line and header lines, each ending in CRLF, then the blank line's CRLF.
Verdict check_head(std::string_view head, const GateLimits& limits) {
  Verdict v;
  v.head.reserve(head.size());
  std::size_t lines = 0;
  bool first = true;
  for (std::size_t pos = 0; pos < head.size();) {
    const std::size_t end = head.find("\r\n", pos);
    const std::string_view line = head.substr(pos, (end == std::string_view::npos ? head.size() : end + 2) - pos);
    pos += line.size();
    if (first || line == "\r\n") {  // the request line and the blank line: passed on as they are
      first = false;
      v.head += line;
      continue;
    }
    if (++lines > limits.max_header_lines)
      return {431, fmt::format("more than {} header lines", limits.max_header_lines), {}};
    const std::size_t colon = line.find(':');
    const std::string_view name = trimmed(line.substr(0, colon == std::string_view::npos ? 0 : colon));
    const std::string_view value =
        colon == std::string_view::npos ? std::string_view() : trimmed(line.substr(colon + 1, line.size() - colon - 3));
    // A body would be read into memory before the request is routed; the dashboard takes none.
    if ((equals_ignoring_case(name, "Content-Length") && value != "0") ||
        equals_ignoring_case(name, "Transfer-Encoding"))
      return {413, "the dashboard takes no request body (it serves GET / and GET /api/study)", {}};
    // Each range of a Range header would be a copy of the reply (400 ranges: 400 copies in memory).
    // The whole document is answered instead, as HTTP allows a server to do.
    if (equals_ignoring_case(name, "Range") || equals_ignoring_case(name, "If-Range")) continue;
    v.head += line;
  }
  return v;
}

const char* reason_phrase(int status) {
  switch (status) {
    case 408:
      return "Request Timeout";
    case 413:
      return "Content Too Large";
    case 431:
      return "Request Header Fields Too Large";
    case 503:
      return "Service Unavailable";
    default:
      return "Bad Request";
  }
}

void close_fd(int fd) {
  ::shutdown(fd, SHUT_RDWR);
  ::close(fd);
}

// httplib's accept loop gives each connection to a task queue; this one runs the hand-off to the
// gate on the accept thread itself (it takes microseconds), so no pool thread ever waits on a client.
class HandOffQueue final : public httplib::TaskQueue {
 public:
  void enqueue(std::function<void()> fn) override { fn(); }
  void shutdown() override {}
};

// The stream httplib reads a request from and writes its reply to: the head the doorman read (then
// end of input: there is no body), and the socket, written within the reply's deadline.
class HeadStream final : public httplib::Stream {
 public:
  HeadStream(int fd, std::string head, Clock::time_point deadline, const std::atomic<bool>& stopping)
      : fd_(fd), head_(std::move(head)), deadline_(deadline), stopping_(stopping) {}

  bool is_readable() const override { return read_ < head_.size(); }
  bool is_writable() const override { return wait_writable(); }
  ssize_t read(char* ptr, std::size_t size) override {
    const std::size_t n = std::min(size, head_.size() - read_);
    std::memcpy(ptr, head_.data() + read_, n);
    read_ += n;
    return static_cast<ssize_t>(n);
  }
  ssize_t write(const char* ptr, std::size_t size) override {
    while (wait_writable()) {
      const ssize_t n = ::send(fd_, ptr, size, MSG_NOSIGNAL);
      if (n >= 0) return n;
      if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) return -1;
    }
    return -1;  // past the deadline, stopping, or the client is gone
  }
  void get_remote_ip_and_port(std::string& ip, int& port) const override { address_of(::getpeername, ip, port); }
  void get_local_ip_and_port(std::string& ip, int& port) const override { address_of(::getsockname, ip, port); }
  socket_t socket() const override { return fd_; }

 private:
  // Waits until the socket takes more, in ticks that look at the stop flag; false when the reply's
  // deadline has passed, the server is stopping, or the connection failed.
  bool wait_writable() const {
    for (;;) {
      if (stopping_.load()) return false;
      const Clock::time_point now = Clock::now();
      if (now >= deadline_) return false;
      pollfd p{fd_, POLLOUT, 0};
      const int ready = ::poll(&p, 1, ms_until(deadline_, now));
      if (ready < 0 && errno != EINTR) return false;
      if (ready > 0) return (p.revents & (POLLERR | POLLHUP | POLLNVAL)) == 0;
    }
  }
  void address_of(int (*query)(int, sockaddr*, socklen_t*), std::string& ip, int& port) const {
    sockaddr_storage address{};
    socklen_t length = sizeof(address);
    ip.clear();
    port = 0;
    if (query(fd_, reinterpret_cast<sockaddr*>(&address), &length) != 0) return;
    char text[INET6_ADDRSTRLEN] = {};
    if (address.ss_family == AF_INET) {
      const auto* a = reinterpret_cast<const sockaddr_in*>(&address);
      ::inet_ntop(AF_INET, &a->sin_addr, text, sizeof(text));
      port = ntohs(a->sin_port);
    } else if (address.ss_family == AF_INET6) {
      const auto* a = reinterpret_cast<const sockaddr_in6*>(&address);
      ::inet_ntop(AF_INET6, &a->sin6_addr, text, sizeof(text));
      port = ntohs(a->sin6_port);
    }
    ip = text;
  }

  int fd_;
  std::string head_;
  std::size_t read_ = 0;
  Clock::time_point deadline_;
  const std::atomic<bool>& stopping_;
};

}  // namespace

// A connection the doorman is reading: its head so far, or, once refused, what it still sends
// (dropped) until it is closed.
struct GatedServer::Waiting {
  int fd = -1;
  Clock::time_point arrived;
  Clock::time_point deadline;  // for the head; once refused, for the draining
  std::string head;
  bool refused = false;
};

GatedServer::GatedServer(GateLimits limits) : limits_(limits) {
  new_task_queue = [] { return new HandOffQueue; };
  // Belt and braces: the gate lets no body through, and httplib would stop at this many bytes.
  set_payload_max_length(65536);
}

GatedServer::~GatedServer() { close_gate(); }

void GatedServer::open_gate() {
  if (open_) return;
  // httplib listens with a backlog of 5 (compiled in): a burst of new connections -- the page's
  // tabs, or a crowd of slow clients -- overflows it while the accept thread waits for a CPU, and
  // each connection dropped there waits 1 s for its SYN to be sent again. listen() again widens it.
  if (svr_sock_ != INVALID_SOCKET) ::listen(svr_sock_, SOMAXCONN);
  wake_fd_ = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (wake_fd_ < 0) throw std::runtime_error(fmt::format("dashboard: eventfd: {}", std::strerror(errno)));
  open_ = true;
  doorman_thread_ = std::thread([this] { doorman(); });
  for (int i = 0; i < limits_.workers; ++i) worker_threads_.emplace_back([this] { worker(); });
}

void GatedServer::close_gate() {
  if (!open_) return;
  open_ = false;
  stopping_.store(true);
  const std::uint64_t one = 1;
  (void)!::write(wake_fd_, &one, sizeof(one));
  queue_cv_.notify_all();
  doorman_thread_.join();
  for (std::thread& t : worker_threads_) t.join();
  worker_threads_.clear();
  for (const Admitted& a : queue_) close_fd(a.fd);
  queue_.clear();
  {
    const std::lock_guard<std::mutex> lock(arrivals_mutex_);
    for (const int fd : arrivals_) close_fd(fd);
    arrivals_.clear();
  }
  ::close(wake_fd_);
  wake_fd_ = -1;
}

bool GatedServer::process_and_close_socket(socket_t sock) {
  if (stopping_.load() || !open_) {
    close_fd(sock);
    return false;
  }
  {
    const std::lock_guard<std::mutex> lock(arrivals_mutex_);
    arrivals_.push_back(sock);
  }
  const std::uint64_t one = 1;
  (void)!::write(wake_fd_, &one, sizeof(one));
  return true;
}

void GatedServer::refuse(Waiting& w, int status, const std::string& text) {
  const std::string body = text + "\n";
  const std::string reply = fmt::format(
      "HTTP/1.1 {} {}\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: {}\r\nConnection: "
      "close\r\n{}\r\n{}",
      status, reason_phrase(status), body.size(), status == 503 ? "Retry-After: 1\r\n" : "", body);
  // A few hundred bytes into an empty socket buffer: one non-blocking send suffices (best effort).
  (void)::send(w.fd, reply.data(), reply.size(), MSG_NOSIGNAL);
  ::shutdown(w.fd, SHUT_WR);
  w.refused = true;
  w.head.clear();
  w.head.shrink_to_fit();
  w.deadline = Clock::now() + kDrainTime;
}

bool GatedServer::read_from(Waiting& w) {
  char buffer[4096];
  // At most 64 KiB a turn, so that a client sending as fast as it can does not keep the doorman
  // from the others (a head is much shorter; only draining reads that much).
  for (int turn = 0; turn < 16; ++turn) {
    const ssize_t n = ::recv(w.fd, buffer, sizeof(buffer), 0);
    if (n == 0) return true;  // the client closed: nothing to answer
    if (n < 0) return !(errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR);
    if (w.refused) continue;  // drained: dropped
    const std::size_t searched_from = w.head.size() < 3 ? 0 : w.head.size() - 3;
    w.head.append(buffer, static_cast<std::size_t>(n));
    const std::size_t end = w.head.find("\r\n\r\n", searched_from);
    if (end == std::string::npos) {
      if (w.head.size() > limits_.max_head_bytes) {
        refuse(w, 431, fmt::format("the request line and headers exceed {} bytes", limits_.max_head_bytes));
        return false;
      }
      continue;
    }
    if (end + 4 > limits_.max_head_bytes) {
      refuse(w, 431, fmt::format("the request line and headers exceed {} bytes", limits_.max_head_bytes));
      return false;
    }
    // Whatever follows the blank line (a body, a pipelined request) is not read: see check_head.
    Verdict verdict = check_head(std::string_view(w.head).substr(0, end + 4), limits_);
    if (verdict.status != 0) {
      refuse(w, verdict.status, verdict.why);
      return false;
    }
    {
      const std::lock_guard<std::mutex> lock(queue_mutex_);
      if (queue_.size() < limits_.max_queued) {
        queue_.push_back({w.fd, std::move(verdict.head)});
        queue_cv_.notify_one();
        w.fd = -1;  // the worker's now
        return true;
      }
    }
    refuse(w, 503, fmt::format("busy: {} requests are waiting; try again", limits_.max_queued));
    return false;
  }
  return false;
}

void GatedServer::doorman() {
  std::vector<Waiting> waiting;
  std::vector<pollfd> polled;
  while (!stopping_.load()) {
    const Clock::time_point now = Clock::now();
    {
      const std::lock_guard<std::mutex> lock(arrivals_mutex_);
      for (const int fd : arrivals_) {
        ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
        waiting.push_back({fd, now, now + limits_.head_deadline, {}, false});
      }
      arrivals_.clear();
    }
    // Too many: the longest-waiting go first (a client that sends its head at once is never among them).
    if (waiting.size() > limits_.max_waiting) {
      std::sort(waiting.begin(), waiting.end(),
                [](const Waiting& a, const Waiting& b) { return a.arrived < b.arrived; });
      const std::size_t excess = waiting.size() - limits_.max_waiting;
      for (std::size_t i = 0; i < excess; ++i) close_fd(waiting[i].fd);
      waiting.erase(waiting.begin(), waiting.begin() + static_cast<std::ptrdiff_t>(excess));
    }

    polled.assign(1, pollfd{wake_fd_, POLLIN, 0});
    Clock::time_point next = now + std::chrono::milliseconds(kTickMs);
    for (const Waiting& w : waiting) {
      polled.push_back({w.fd, POLLIN, 0});
      next = std::min(next, w.deadline);
    }
    const int ready = ::poll(polled.data(), polled.size(), ms_until(next, now));
    if (ready < 0 && errno != EINTR) break;
    if (polled[0].revents & POLLIN) {
      std::uint64_t count = 0;
      (void)!::read(wake_fd_, &count, sizeof(count));
    }

    const Clock::time_point after = Clock::now();
    std::vector<Waiting> still;
    still.reserve(waiting.size());
    for (std::size_t i = 0; i < waiting.size(); ++i) {
      Waiting& w = waiting[i];
      bool done = false;
      if (polled[i + 1].revents != 0) done = read_from(w);
      if (!done && after >= w.deadline) {
        if (w.refused) {
          done = true;
        } else {
          refuse(w, 408,
                 fmt::format("the request head did not arrive within {} s",
                             std::chrono::duration<double>(limits_.head_deadline).count()));
        }
      }
      if (!done) {
        still.push_back(std::move(w));
      } else if (w.fd >= 0) {
        close_fd(w.fd);
      }
    }
    waiting.swap(still);
  }
  for (const Waiting& w : waiting) close_fd(w.fd);
}

void GatedServer::worker() {
  for (;;) {
    Admitted request;
    {
      std::unique_lock<std::mutex> lock(queue_mutex_);
      queue_cv_.wait(lock, [this] { return stopping_.load() || !queue_.empty(); });
      if (stopping_.load()) return;
      request = std::move(queue_.front());
      queue_.pop_front();
    }
    // A client that closed its connection while its request waited here has given up (a closed
    // tab, a timeout): answering it would only delay the others. (As nginx does, a client that
    // closed only its sending side counts as gone too.)
    char next = 0;
    const ssize_t peeked = ::recv(request.fd, &next, 1, MSG_PEEK | MSG_DONTWAIT);
    if (peeked == 0 || (peeked < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
      close_fd(request.fd);
      continue;
    }
    HeadStream stream(request.fd, std::move(request.head), Clock::now() + limits_.reply_deadline, stopping_);
    bool connection_closed = true;
    try {
      process_request(stream, /*close_connection=*/true, connection_closed, nullptr);
    } catch (...) {  // httplib answers a handler's exception itself; anything else ends this request only
    }
    ::shutdown(request.fd, SHUT_WR);  // the reply's end (FIN), before close
    ::close(request.fd);
  }
}

}  // namespace paratune::dashboard
