// A private PostgreSQL server for the tests: started once per test process, on first use, in a
// temporary directory of its own (initdb + pg_ctl from /usr/lib/postgresql/*/bin), listening on
// 127.0.0.1 at a free port and on a Unix socket in that directory, trust authentication, fsync off.
// As root (CI) the server binaries run as the `postgres` system user (runuser), which owns the
// directory. A watcher process stops the server (pg_ctl stop -m immediate) and removes the
// directory when this process ends, however it ends.
//
// Tests that need it start with PARATUNE_NEED_POSTGRES(): when the server cannot start they skip
// with the reason -- or fail, when PARATUNE_REQUIRE_SERVERS=1 (scripts/test.sh, CI).
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "require_servers.h"

namespace paratune::testing {

class PostgresServer {
 public:
  // This process's server, started on the first call.
  static PostgresServer& instance();

  [[nodiscard]] bool running() const { return running_; }
  [[nodiscard]] const std::string& why_not() const { return why_not_; }  // when not running
  [[nodiscard]] int port() const { return port_; }
  // postgresql://postgres@127.0.0.1:PORT/DATABASE
  [[nodiscard]] std::string locator(const std::string& database) const;
  // A new, empty database (named after `hint`, made unique); returns its locator.
  std::string fresh_database(const std::string& hint);
  // Runs one SQL statement on `locator`'s database; throws std::runtime_error with the server's message.
  static void execute(const std::string& locator, const std::string& sql);
  // The server goes away as in a restart or failover (pg_ctl stop -m fast: every session ends)...
  void stop();
  // ... and comes back on the same port; throws std::runtime_error when it does not.
  void start_again();

  ~PostgresServer();
  PostgresServer(const PostgresServer&) = delete;
  PostgresServer& operator=(const PostgresServer&) = delete;

 private:
  PostgresServer();
  void start();

  bool running_ = false;
  std::string why_not_;
  std::string dir_;
  int port_ = 0;
  int watcher_fd_ = -1;  // write end of the watcher's pipe: closed, the watcher stops the server
  int watcher_pid_ = 0;
  int databases_ = 0;
  std::string bin_;                   // the server's bin directory
  std::vector<std::string> as_user_;  // the prefix that runs a server binary as its owner
};

}  // namespace paratune::testing

// In a test body: skip (or, with PARATUNE_REQUIRE_SERVERS=1, fail) without the server.
#define PARATUNE_NEED_POSTGRES()                                                                     \
  PARATUNE_NEED_SERVER(::paratune::testing::PostgresServer::instance().running()                     \
                           ? std::string()                                                           \
                           : "no PostgreSQL test server: " + ::paratune::testing::PostgresServer::instance().why_not())
