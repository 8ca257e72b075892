// The dashboard's front door (private to src/dashboard): every connection's request head is read
// here, within limits, before cpp-httplib parses, routes and answers it.
//
// Why: cpp-httplib 0.11 (Debian's, a compiled library: its limits cannot be changed) reads each
// request on one of its 8 pool threads, with a timeout per read, not per request, and no limit on
// the number of header lines, on a line's length before its end, on the body (read before a 404) or
// on the ranges of a Range header (each one a copy of the reply). So a client that sends a byte now
// and then holds a thread as long as it likes (8 such clients stop the server, and its stop() waits
// for them), and one request can make it hold or build hundreds of megabytes.
//
// So GatedServer, an httplib::Server that:
//  - takes each accepted connection at once (it overrides httplib's per-connection entry point, and
//    the accept loop's task queue runs that hand-off inline), and one thread -- the doorman -- reads
//    the heads of all connections still sending theirs with poll(): a slow client costs a socket and
//    a buffer, never a thread;
//  - gives each head a deadline for the whole head (not per read), a size limit and a header-line
//    limit (408, 431), refuses any request body (413: the dashboard serves GET only) and removes
//    Range and If-Range (the whole document is answered, which HTTP allows);
//  - hands complete heads to a few worker threads, which run httplib's own parsing, routing and
//    response writing on them (Server::process_request) with a deadline for the whole reply; when
//    all are busy and the queue is full, 503 at once;
//  - serves one request per connection (Connection: close): the page polls every few seconds, so
//    keep-alive saves nothing, and a kept connection would be one more way to hold a worker;
//  - stops promptly: connections still sending their head are closed, replies being written are
//    cut off within 0.1 s, and only a handler already running is waited for.
#pragma once

#include <httplib.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace paratune::dashboard {

struct GateLimits {
  std::size_t max_head_bytes = 16384;  // request line and headers; a browser sends under 2 KB
  std::size_t max_header_lines = 100;
  std::chrono::milliseconds head_deadline{10'000};   // from accept to the head's blank line
  std::chrono::milliseconds reply_deadline{10'000};  // from a worker taking the request to the reply's last byte
  // Connections still sending their head (or being drained after an error answer); beyond this the
  // one that has waited longest is closed, so a crowd of idle connections cannot lock out new ones.
  std::size_t max_waiting = 256;
  std::size_t max_queued = 64;  // complete requests waiting for a worker; beyond: 503
  int workers = 8;
};

class GatedServer final : public httplib::Server {
 public:
  explicit GatedServer(GateLimits limits = {});
  ~GatedServer() override;
  GatedServer(const GatedServer&) = delete;
  GatedServer& operator=(const GatedServer&) = delete;

  // Starts the doorman and the workers, and widens the listening backlog: call after binding and
  // before listen_after_bind().
  void open_gate();
  // After stop() and once listen_after_bind() has returned: closes every connection still waiting,
  // cuts off replies being written, and joins the threads. Idempotent.
  void close_gate();

 private:
  struct Waiting;
  struct Admitted {
    int fd = -1;
    std::string head;  // request line, headers and the blank line, as httplib reads them
  };

  // httplib's accept loop calls this for each new connection (through the task queue): hand it to
  // the doorman and return at once.
  bool process_and_close_socket(socket_t sock) override;
  void doorman();
  // Reads what `w` has sent; true when it is done with (answered, queued or closed).
  bool read_from(Waiting& w);
  // Answers `w` with `status` and `text` and keeps reading (and dropping) what it still sends for a
  // moment, so that the client sees the answer rather than a reset.
  void refuse(Waiting& w, int status, const std::string& text);
  void worker();

  GateLimits limits_;
  std::atomic<bool> stopping_{false};
  bool open_ = false;
  int wake_fd_ = -1;  // eventfd: wakes the doorman for new connections and for stopping
  std::mutex arrivals_mutex_;
  std::vector<int> arrivals_;  // accepted, not yet seen by the doorman
  std::thread doorman_thread_;
  std::mutex queue_mutex_;
  std::condition_variable queue_cv_;
  std::deque<Admitted> queue_;
  std::vector<std::thread> worker_threads_;
};

}  // namespace paratune::dashboard
