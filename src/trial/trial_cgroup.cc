#include "trial_cgroup.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace paratune::trial {
namespace {

// The unified (v2) hierarchy's mount point, from /proc/self/mounts ("" if none).
std::string cgroup2_mount() {
  std::ifstream mounts("/proc/self/mounts");
  std::string device, point, type, rest;
  while (mounts >> device >> point >> type && std::getline(mounts, rest))
    if (type == "cgroup2") return point;
  return "";
}

// This process's cgroup in the unified hierarchy: the "0::/path" line of /proc/self/cgroup.
std::string own_cgroup() {
  std::ifstream in("/proc/self/cgroup");
  for (std::string line; std::getline(in, line);)
    if (line.rfind("0::", 0) == 0) return line.substr(3);
  return "";
}

bool write_file(const std::string& path, std::string_view text) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) return false;
  const bool ok = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  ::close(fd);
  return ok;
}

std::vector<pid_t> read_pids(const std::string& procs_path) {
  std::vector<pid_t> pids;
  std::ifstream in(procs_path);
  for (long pid = 0; in >> pid;) pids.push_back(static_cast<pid_t>(pid));
  return pids;
}

}  // namespace

TrialCgroup::~TrialCgroup() { close_procs_fd(); }

void TrialCgroup::close_procs_fd() {
  if (procs_fd_ >= 0) ::close(procs_fd_);
  procs_fd_ = -1;
}

bool TrialCgroup::populated() const {
  std::ifstream events(path_ + "/cgroup.events");
  for (std::string key, value; events >> key >> value;)
    if (key == "populated") return value == "1";
  return !processes().empty();  // no cgroup.events: judge by the list
}

std::vector<pid_t> TrialCgroup::processes() const { return read_pids(path_ + "/cgroup.procs"); }

void TrialCgroup::signal(int sig, std::vector<pid_t>& signalled) const {
  // The list first (for reaping), then the signal: a process forked after the read is caught by
  // cgroup.kill (SIGKILL), or by the next round of the runner's loop (SIGTERM).
  for (pid_t pid : processes()) {
    signalled.push_back(pid);
    if (sig != SIGKILL) ::kill(pid, sig);
  }
  if (sig == SIGKILL && !write_file(path_ + "/cgroup.kill", "1"))  // kernels before 5.14: one by one
    for (pid_t pid : processes()) ::kill(pid, SIGKILL);
}

void TrialCgroup::remove() const { ::rmdir(path_.c_str()); }

TrialCgroups::TrialCgroups() {
  const char* setting = std::getenv("PARATUNE_TRIAL_CGROUPS");
  if (setting && std::string_view(setting) == "off") {
    reason_ = "PARATUNE_TRIAL_CGROUPS=off";
    return;
  }
  const std::string mount = cgroup2_mount(), own = own_cgroup();
  if (mount.empty() || own.empty()) {
    reason_ = "no cgroup v2 (unified) hierarchy is mounted";
    return;
  }
  static int runners = 0;  // several runners in one process get bases of their own
  const std::string base = mount + (own == "/" ? "" : own) + "/paratune-" + std::to_string(::getpid()) + "-" +
                           std::to_string(runners++);
  if (::mkdir(base.c_str(), 0755) != 0 && errno != EEXIST) {
    reason_ = "cannot create " + base + ": " + std::strerror(errno);
    return;
  }
  base_ = base;
  if (::access((base + "/cgroup.kill").c_str(), W_OK) == 0) kill_file_ = base + "/cgroup.kill";
}

TrialCgroups::~TrialCgroups() {
  if (base_.empty()) return;
  std::vector<pid_t> ignored;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(base_, ec))
    if (entry.is_directory()) {
      const TrialCgroup trial(entry.path().string(), -1);
      trial.signal(SIGKILL, ignored);
      for (int i = 0; i < 100 && trial.populated(); ++i) ::usleep(10000);
      trial.remove();
    }
  ::rmdir(base_.c_str());
}

std::unique_ptr<TrialCgroup> TrialCgroups::create() {
  if (base_.empty()) return nullptr;
  const std::string path = base_ + "/trial-" + std::to_string(next_++);
  if (::mkdir(path.c_str(), 0755) != 0) return nullptr;
  const int fd = ::open((path + "/cgroup.procs").c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) {
    ::rmdir(path.c_str());
    return nullptr;
  }
  return std::make_unique<TrialCgroup>(path, fd);
}

}  // namespace paratune::trial
