#include "postgres_server.h"

#include <fcntl.h>
#include <libpq-fe.h>
#include <netinet/in.h>
#include <pwd.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <vector>

#include "free_port.h"

namespace paratune::testing {
namespace {

// The newest server's bin directory, or "".
std::string postgres_bin_dir() {
  std::vector<std::filesystem::path> found;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/usr/lib/postgresql", ec))
    if (std::filesystem::exists(entry.path() / "bin" / "initdb") && std::filesystem::exists(entry.path() / "bin" / "pg_ctl"))
      found.push_back(entry.path() / "bin");
  std::sort(found.begin(), found.end(), [](const auto& a, const auto& b) {
    return std::atoi(a.parent_path().filename().c_str()) < std::atoi(b.parent_path().filename().c_str());
  });
  return found.empty() ? "" : found.back().string();
}

// Runs argv (no shell) with stdin from /dev/null and stdout and stderr appended to `log`; returns
// its exit status (-1: it could not run).
int run_logged(const std::vector<std::string>& argv, const std::string& log) {
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  const pid_t pid = ::fork();
  if (pid < 0) return -1;
  if (pid == 0) {
    const int in = ::open("/dev/null", O_RDONLY);
    const int out = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (in < 0 || out < 0) ::_exit(126);
    ::dup2(in, 0);
    ::dup2(out, 1);
    ::dup2(out, 2);
    ::execvp(args[0], args.data());
    ::_exit(127);
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

std::string tail_of(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  std::string s = text.str();
  return s.size() > 1500 ? s.substr(s.size() - 1500) : s;
}

}  // namespace

PostgresServer& PostgresServer::instance() {
  static PostgresServer server;
  return server;
}

PostgresServer::PostgresServer() {
  try {
    start();
  } catch (const std::exception& e) {
    why_not_ = e.what();
    running_ = false;
    std::error_code ignored;
    if (watcher_fd_ < 0 && !dir_.empty()) std::filesystem::remove_all(dir_, ignored);  // else the watcher does
  }
}

void PostgresServer::start() {
  const std::string bin = postgres_bin_dir();
  if (bin.empty())
    throw std::runtime_error("no initdb and pg_ctl in /usr/lib/postgresql/*/bin (Debian package postgresql: "
                             "scripts/setup.sh installs it)");
  // Under /tmp itself, not the test's TMPDIR: as root, the server runs as `postgres`, which must reach
  // the directory (the test's own is 0700 root). A short path: the Unix socket's name has 107 bytes.
  std::string pattern = "/tmp/paratune-pg-XXXXXX";
  if (::mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp /tmp/paratune-pg-XXXXXX failed");
  dir_ = pattern;
  bin_ = bin;
  std::vector<std::string>& as_user = as_user_;
  if (::geteuid() == 0) {
    const passwd* pg = ::getpwnam("postgres");
    if (pg == nullptr)
      throw std::runtime_error("running as root, and there is no `postgres` user to run the server as (initdb "
                               "refuses root; the postgresql package creates the user)");
    if (::chown(dir_.c_str(), pg->pw_uid, pg->pw_gid) != 0) throw std::runtime_error("chown " + dir_ + " failed");
    as_user = {"runuser", "-u", "postgres", "--"};
  }
  const std::string log = dir_ + "/setup.log";
  const std::string data = dir_ + "/data";
  std::vector<std::string> initdb = as_user;
  for (const std::string& a : {bin + "/initdb", std::string("-D"), data, std::string("-A"), std::string("trust"),
                               std::string("-U"), std::string("postgres"), std::string("--no-sync"),
                               std::string("-E"), std::string("UTF8"), std::string("--locale=C")})
    initdb.push_back(a);
  if (run_logged(initdb, log) != 0) throw std::runtime_error("initdb failed in " + dir_ + ":\n" + tail_of(log));
  // The watcher: stops the server and removes the directory when this process's end closes the pipe.
  int pipe_fds[2];
  if (::pipe2(pipe_fds, O_CLOEXEC) != 0) throw std::runtime_error("pipe failed");
  std::string stop_command;
  for (const std::string& a : as_user) stop_command += a + " ";
  stop_command += bin + "/pg_ctl -D " + data + " -m immediate -w stop; rm -rf " + dir_;
  const std::string watch = "cat > /dev/null; " + stop_command;
  const pid_t watcher = ::fork();
  if (watcher < 0) throw std::runtime_error("fork failed");
  if (watcher == 0) {
    ::setsid();  // out of the test's process group: a signal to the group still leaves the cleanup
    ::dup2(pipe_fds[0], 0);
    const int null = ::open("/dev/null", O_WRONLY);
    ::dup2(null, 1);
    ::dup2(null, 2);
    ::execl("/bin/sh", "sh", "-c", watch.c_str(), nullptr);
    ::_exit(127);
  }
  ::close(pipe_fds[0]);
  watcher_fd_ = pipe_fds[1];
  watcher_pid_ = watcher;
  // A free port can be taken by someone else before the server binds it: a few tries.
  for (int attempt = 0; attempt < 3 && !running_; ++attempt) {
    port_ = free_port();
    {
      std::ofstream conf(data + "/postgresql.conf", std::ios::app);
      conf << "\nlisten_addresses = '127.0.0.1'\nport = " << port_ << "\nunix_socket_directories = '" << dir_
           << "'\nfsync = off\nsynchronous_commit = off\nfull_page_writes = off\nmax_connections = 100\n";
    }
    std::vector<std::string> start = as_user;
    for (const std::string& a : {bin + "/pg_ctl", std::string("-D"), data, std::string("-l"), dir_ + "/server.log",
                                 std::string("-w"), std::string("-t"), std::string("60"), std::string("start")})
      start.push_back(a);
    running_ = run_logged(start, log) == 0;
  }
  if (!running_)
    throw std::runtime_error("pg_ctl start failed in " + dir_ + ":\n" + tail_of(log) + "\n" + tail_of(dir_ + "/server.log"));
}

PostgresServer::~PostgresServer() {
  if (watcher_fd_ < 0) return;
  ::close(watcher_fd_);  // in a forked test child: its copy only (the parent still holds the pipe)
  int status = 0;
  ::waitpid(watcher_pid_, &status, 0);  // fails in a forked child: not its child
}

std::string PostgresServer::locator(const std::string& database) const {
  return "postgresql://postgres@127.0.0.1:" + std::to_string(port_) + "/" + database;
}

std::string PostgresServer::fresh_database(const std::string& hint) {
  std::string name;
  for (const char c : hint) name += std::isalnum(static_cast<unsigned char>(c)) ? static_cast<char>(std::tolower(c)) : '_';
  name = name.substr(0, 40) + "_" + std::to_string(::getpid()) + "_" + std::to_string(++databases_);
  execute(locator("postgres"), "CREATE DATABASE " + name);
  return locator(name);
}

void PostgresServer::stop() {
  std::vector<std::string> stop = as_user_;
  for (const std::string& a : {bin_ + "/pg_ctl", std::string("-D"), dir_ + "/data", std::string("-m"),
                               std::string("fast"), std::string("-w"), std::string("stop")})
    stop.push_back(a);
  if (run_logged(stop, dir_ + "/setup.log") != 0)
    throw std::runtime_error("pg_ctl stop failed in " + dir_ + ":\n" + tail_of(dir_ + "/setup.log"));
}

void PostgresServer::start_again() {
  std::vector<std::string> start = as_user_;
  for (const std::string& a : {bin_ + "/pg_ctl", std::string("-D"), dir_ + "/data", std::string("-l"),
                               dir_ + "/server.log", std::string("-w"), std::string("-t"), std::string("60"),
                               std::string("start")})
    start.push_back(a);
  if (run_logged(start, dir_ + "/setup.log") != 0)
    throw std::runtime_error("pg_ctl start failed in " + dir_ + ":\n" + tail_of(dir_ + "/server.log"));
}

void PostgresServer::execute(const std::string& locator, const std::string& sql) {
  PGconn* conn = PQconnectdb(locator.c_str());
  if (PQstatus(conn) != CONNECTION_OK) {
    const std::string message = PQerrorMessage(conn);
    PQfinish(conn);
    throw std::runtime_error(locator + ": " + message);
  }
  PGresult* r = PQexec(conn, sql.c_str());
  const bool ok = PQresultStatus(r) == PGRES_COMMAND_OK || PQresultStatus(r) == PGRES_TUPLES_OK;
  const std::string message = ok ? "" : PQerrorMessage(conn);
  PQclear(r);
  PQfinish(conn);
  if (!ok) throw std::runtime_error(sql + ": " + message);
}

}  // namespace paratune::testing
