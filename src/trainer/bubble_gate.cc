#include "bubble_gate.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sched.h>
#include <signal.h>  // NOLINT(modernize-deprecated-headers): POSIX kill()/sigaction(), not in <csignal>
#include <unistd.h>

#include <cstdlib>
#include <ctime>
#include <thread>

namespace paratune::train {
namespace {

double monotonic_s() {
  timespec t{};
  clock_gettime(CLOCK_MONOTONIC, &t);
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) * 1e-9;
}

// The process group in `path` (written by the coordinator, replaced by rename), 0 if none.
int read_group(const std::string& path) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  char text[32] = {};
  const ssize_t n = read(fd, text, sizeof text - 1);
  close(fd);
  return n > 0 ? std::atoi(text) : 0;
}

}  // namespace

BubbleGate::BubbleGate(int rank) : rank_(rank) {
  const char* dir = std::getenv("PARATUNE_BUBBLE_DIR");
  if (!dir || !*dir) return;
  pgid_path_ = fmt::format("{}/rank-{}.pgid", dir, rank);
  const std::string bubbles = fmt::format("{}/rank-{}.bubbles", dir, rank);
  fd_ = open(bubbles.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0644);
  if (fd_ < 0) throw std::runtime_error(fmt::format("PARATUNE_BUBBLE_DIR: cannot write {}", bubbles));
  const unsigned cpus = std::max(1u, std::thread::hardware_concurrency());
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(static_cast<unsigned>(rank) % cpus, &set);
  sched_setaffinity(0, sizeof set, &set);
}

BubbleGate::~BubbleGate() {
  if (fd_ >= 0) close(fd_);
}

void BubbleGate::enter() {
  entered_s_ = monotonic_s();
  trial_group_ = read_group(pgid_path_);
  if (trial_group_ > 0) kill(-trial_group_, SIGCONT);
}

void BubbleGate::leave() {
  if (trial_group_ > 0) kill(-trial_group_, SIGSTOP);
  const double left = monotonic_s();
  const std::string line = fmt::format("{:.6f} {:.6f}\n", entered_s_, left);
  [[maybe_unused]] const ssize_t written = write(fd_, line.data(), line.size());
}

}  // namespace paratune::train
