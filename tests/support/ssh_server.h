// A private OpenSSH server for the tests: sshd on 127.0.0.1 and a free high port, with host and
// user keys generated in a temporary directory of its own, and a client configuration file (ssh
// -F) naming it as the host `paratune-test` -- so the tests never read or write ~/.ssh.
//
// If sshd cannot start here (not installed, no privilege separation directory, ...), running() is
// false and skip_reason() says why: the tests skip with it -- unless PARATUNE_REQUIRE_SERVERS=1 is
// in the environment (scripts/test.sh, CI), where they fail instead (require_servers.h).
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <string>
#include <vector>

namespace paratune::testing {

class SshServer {
 public:
  SshServer();
  ~SshServer();  // stops sshd and removes its directory
  SshServer(const SshServer&) = delete;
  SshServer& operator=(const SshServer&) = delete;

  [[nodiscard]] bool running() const { return pid_ > 0; }
  [[nodiscard]] const std::string& skip_reason() const { return reason_; }
  [[nodiscard]] static std::string host() { return "paratune-test"; }  // the alias in client_config()
  [[nodiscard]] std::filesystem::path client_config() const { return dir_ / "ssh_config"; }
  [[nodiscard]] const std::filesystem::path& dir() const { return dir_; }
  [[nodiscard]] int port() const { return port_; }
  // The sshd processes serving connections now (the listener's descendants): killing them drops
  // those connections as a crashed host or a cut network would, seen from the client.
  [[nodiscard]] std::vector<pid_t> session_pids() const;

 private:
  bool start(std::string& why);
  std::filesystem::path dir_;
  int port_ = 0;
  pid_t pid_ = -1;
  std::string reason_;
};

}  // namespace paratune::testing
