// paratune-train as a serving process (docs/trial-protocol.md, "Serving"; PARATUNE_SERVE=1): one
// process trains many one-rank trials, one assignment at a time, with the data loaded once and each
// trial's model built from its assignment's options. A trial that ends at a rung (an ASHA pause) is
// kept in memory, up to --serve-memory MiB of kept trials; beyond it the oldest is saved to its
// checkpoint directory and dropped. A promotion resumes from memory when this process keeps the
// trial at the assignment's steps_done, else from its checkpoint directory, as a process would.
#pragma once

#include <string>
#include <vector>

namespace paratune::train {

// Serves assignments read from stdin until {"stop": true} or end-of-file; returns the exit code.
// `args`: the command line's options (each assignment's PARATUNE_PARAMS comes on top, as in a
// process of its own); `memory_mib`: the budget of kept trials.
int serve_trials(const std::vector<std::string>& args, int memory_mib);

}  // namespace paratune::train
