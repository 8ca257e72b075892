// SIGINT and SIGTERM for the commands that run until stopped (tune, dashboard): the handler only
// records the signal, and the command, which watches it, winds down and exits 128 + signal.
#pragma once

#include <atomic>

namespace paratune::cli {

// Set by SIGINT / SIGTERM: the study stops its trials, stores them as interrupted and returns.
extern std::atomic<int> g_stop_signal;

// Routes SIGINT and SIGTERM to g_stop_signal.
void install_stop_handlers();

}  // namespace paratune::cli
