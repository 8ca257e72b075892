// paratune-train's launcher: starts a trial's rank processes on this host and supervises them, so a
// trial of several processes behaves as one (the trial runner's kill, timeout and no-orphans
// guarantees hold for all of them).
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace paratune::train {

// The environment variable that makes paratune-train a rank instead of a launcher.
inline constexpr const char* kRankVariable = "PARATUNE_TRAIN_RANK";

// How a launch ended: ok, or the first rank that failed and why.
struct RankFailure {
  int rank = -1;       // the first rank that failed (-1: none, or the launcher was stopped)
  std::string reason;  // "" when every rank exited 0; "exited with code 1", "killed by signal 9 (Killed)"
  int exit_code = 1;   // the failed rank's exit code when it exited (2: bad input); 128 + signal when the
                       // launcher was stopped by one; else 1
  [[nodiscard]] bool ok() const { return reason.empty(); }
};

// Runs `program` with `args` as ranks first_rank .. first_rank + count - 1, each with
// PARATUNE_TRAIN_RANK set and `environment` added, in this process's process group (a signal to
// the group reaches every rank). Each rank dies with the launcher (PR_SET_PDEATHSIG). Returns when
// every rank has exited 0, or as soon as one fails: the others get SIGTERM, then SIGKILL after
// `grace_s` seconds, and are reaped before this returns, so no rank outlives the call. SIGTERM,
// SIGINT or SIGHUP sent to the launcher are passed to the ranks, which are then stopped the same
// way (the reason names the signal). Throws Error when a process cannot be started.
RankFailure run_ranks(const std::string& program, const std::vector<std::string>& args, int first_rank, int count,
                      const std::vector<std::pair<std::string, std::string>>& environment, double grace_s = 3.0);

}  // namespace paratune::train
