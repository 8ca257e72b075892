#include "ssh_server.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pwd.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <random>
#include <sstream>
#include <thread>

#include "free_port.h"

namespace paratune::testing {
namespace {

constexpr const char* kSshd = "/usr/sbin/sshd";

bool accepts(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  address.sin_port = htons(static_cast<std::uint16_t>(port));
  const bool ok = ::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0;
  ::close(fd);
  return ok;
}

std::string read_text(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// Runs a shell command, its output into `log`; true on exit 0.
bool sh(const std::string& command, const std::filesystem::path& log) {
  const std::string line = command + " >>'" + log.string() + "' 2>&1";
  const int status = std::system(line.c_str());
  return status != -1 && WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

std::vector<pid_t> children_of(pid_t parent) {
  std::vector<pid_t> out;
  for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
    const std::string name = entry.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream stat(entry.path() / "stat");
    std::string text;
    std::getline(stat, text);
    const std::size_t close = text.rfind(')');
    if (close == std::string::npos) continue;
    std::istringstream rest(text.substr(close + 2));
    char state = 0;
    long ppid = 0;
    rest >> state >> ppid;
    if (ppid == parent) out.push_back(static_cast<pid_t>(std::stol(name)));
  }
  return out;
}

}  // namespace

SshServer::SshServer() {
  std::random_device random;
  dir_ = std::filesystem::temp_directory_path() / ("paratune-sshd-" + std::to_string(::getpid()) + "-" + std::to_string(random()));
  std::filesystem::create_directories(dir_);
  std::string why;
  for (int attempt = 0; attempt < 3 && !running(); ++attempt) {
    why.clear();
    start(why);
  }
  if (!running()) reason_ = "cannot start a test sshd: " + why;
}

bool SshServer::start(std::string& why) {
  const std::filesystem::path log = dir_ / "setup.log";
  if (::access(kSshd, X_OK) != 0) {
    why = std::string(kSshd) + " is not installed (Debian: openssh-server; scripts/setup.sh installs it)";
    return false;
  }
  // sshd refuses to start without its privilege separation directory.
  if (::geteuid() == 0) ::mkdir("/run/sshd", 0755);
  const std::string d = dir_.string();
  if (!std::filesystem::exists(dir_ / "host_ed25519") &&
      (!sh("ssh-keygen -q -t ed25519 -N '' -f '" + d + "/host_ed25519'", log) ||
       !sh("ssh-keygen -q -t ed25519 -N '' -f '" + d + "/id_ed25519'", log) ||
       !sh("cp '" + d + "/id_ed25519.pub' '" + d + "/authorized_keys'", log))) {
    why = "ssh-keygen failed: " + read_text(log);
    return false;
  }
  port_ = free_port();
  const passwd* user = ::getpwuid(::geteuid());
  std::ofstream(dir_ / "sshd_config") << "Port " << port_ << "\nListenAddress 127.0.0.1\nHostKey " << d
                                      << "/host_ed25519\nAuthorizedKeysFile " << d << "/authorized_keys\nPidFile " << d
                                      << "/sshd.pid\nStrictModes no\nUsePAM no\nPasswordAuthentication no\n"
                                         "KbdInteractiveAuthentication no\nPubkeyAuthentication yes\n"
                                         "PermitRootLogin prohibit-password\nMaxStartups 100\nMaxSessions 100\n"
                                         "LogLevel ERROR\n";
  std::ofstream(dir_ / "ssh_config") << "Host " << host() << "\n  HostName 127.0.0.1\n  Port " << port_ << "\n  User "
                                     << (user ? user->pw_name : "root") << "\n  IdentityFile " << d
                                     << "/id_ed25519\n  IdentitiesOnly yes\n  StrictHostKeyChecking no\n"
                                        "  UserKnownHostsFile "
                                     << d << "/known_hosts\n  GlobalKnownHostsFile /dev/null\n  LogLevel ERROR\n";
  const std::string sshd_log = (dir_ / "sshd.log").string();
  const std::string config = (dir_ / "sshd_config").string();
  const pid_t pid = ::fork();
  if (pid == 0) {
    const int fd = ::open(sshd_log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    ::dup2(fd, 1);
    ::dup2(fd, 2);
    const int devnull = ::open("/dev/null", O_RDONLY);
    ::dup2(devnull, 0);
    ::setpgid(0, 0);
    ::execl(kSshd, kSshd, "-D", "-e", "-f", config.c_str(), nullptr);
    ::_exit(127);
  }
  for (int i = 0; i < 200; ++i) {  // up to 10 s for it to listen
    int status = 0;
    if (::waitpid(pid, &status, WNOHANG) == pid) {
      why = "sshd exited: " + read_text(dir_ / "sshd.log");
      return false;
    }
    if (accepts(port_)) {
      pid_ = pid;
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  if (pid_ <= 0) {
    ::kill(pid, SIGKILL);
    ::waitpid(pid, nullptr, 0);
    why = "sshd did not listen on port " + std::to_string(port_) + ": " + read_text(dir_ / "sshd.log");
    return false;
  }
  // A login must work, or every test would fail for the fixture's sake.
  if (!sh("ssh -F '" + (dir_ / "ssh_config").string() + "' -o BatchMode=yes " + host() + " true </dev/null", log)) {
    why = "ssh login to the test sshd failed: " + read_text(log) + read_text(dir_ / "sshd.log");
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
    pid_ = -1;
    return false;
  }
  return true;
}

std::vector<pid_t> SshServer::session_pids() const {
  std::vector<pid_t> out;
  std::vector<pid_t> frontier = running() ? children_of(pid_) : std::vector<pid_t>{};
  while (!frontier.empty()) {  // the listener's descendants that are sshd (not the shells under them)
    const pid_t pid = frontier.back();
    frontier.pop_back();
    std::ifstream comm("/proc/" + std::to_string(pid) + "/comm");
    std::string name;
    std::getline(comm, name);
    if (name != "sshd") continue;
    out.push_back(pid);
    for (pid_t child : children_of(pid)) frontier.push_back(child);
  }
  return out;
}

SshServer::~SshServer() {
  if (pid_ > 0) {
    for (pid_t child : children_of(pid_)) ::kill(child, SIGKILL);
    ::kill(pid_, SIGTERM);
    ::waitpid(pid_, nullptr, 0);
  }
  std::error_code ec;
  std::filesystem::remove_all(dir_, ec);
}

}  // namespace paratune::testing
