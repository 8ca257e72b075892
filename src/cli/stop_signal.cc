#include "stop_signal.h"

#include <signal.h>  // NOLINT(modernize-deprecated-headers): POSIX sigaction(), not in <csignal>

namespace paratune::cli {

std::atomic<int> g_stop_signal{0};

namespace {

extern "C" void on_stop_signal(int signal) { g_stop_signal.store(signal); }

}  // namespace

void install_stop_handlers() {
  struct sigaction action {};
  action.sa_handler = on_stop_signal;  // no SA_RESTART: the runner's poll() wakes up at once
  sigemptyset(&action.sa_mask);
  sigaction(SIGINT, &action, nullptr);
  sigaction(SIGTERM, &action, nullptr);
}

}  // namespace paratune::cli
