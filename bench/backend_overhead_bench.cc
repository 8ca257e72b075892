// Controller overhead per trial on each backend (issue 22): a trivial trial (the test suite's fake
// trial, 2 steps of 1 ms) run R times one after the other, on the local backend, over ssh to a
// private sshd on 127.0.0.1 (tests/support/ssh_server.h; needs /usr/sbin/sshd, as root or as the
// user it logs in as) and as Slurm jobs on a private one-node cluster (tests/support/
// slurm_cluster.h; root; the watcher polls scontrol every 0.2 s, as `--slurm-poll 0.2s`). Measured per trial:
//   start -> first step: TrialRunner::start() to the first step report read (the program's 1 ms
//                         step included): process start, and over ssh the connection, the
//                         authentication and the remote wrapper;
//   last step -> end:    the last step report to wait() returning the trial's result: the exit,
//                         over ssh the remote wrapper's clean-up and the exit status's way back;
//                         on Slurm sbatch, scheduling and job start (slurmd, slurmstepd) are in the
//                         first, the job's end seen by the next scontrol poll in the second.
//
//   bench_backend_overhead [R]   (default 10)
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <iostream>
#include <vector>

#include "../tests/support/slurm_cluster.h"
#include "../tests/support/ssh_server.h"
#include "paratune/trial/runner.h"
#include "paratune/trial/slurm_backend.h"
#include "paratune/trial/ssh_backend.h"

using namespace paratune;
using Clock = std::chrono::steady_clock;

namespace {

struct Times {
  std::vector<double> first_step_ms, end_ms;
};

Times measure(const trial::Backend& backend, int repetitions, const std::filesystem::path& dir) {
  Times t;
  for (int i = 0; i < repetitions; ++i) {
    trial::TrialRunner runner(backend);
    trial::TrialLaunch launch;
    launch.id = fmt::format("{}-{}", backend.name(), i);
    launch.argv = {PARATUNE_FAKE_TRIAL, "--steps", "2", "--step-time", "0.001"};
    launch.dir = dir / launch.id;
    launch.limits.grace_s = 1;
    Clock::time_point first{}, last{};
    const Clock::time_point start = Clock::now();
    runner.start(launch);
    for (;;) {
      const std::vector<trial::TrialResult> done =
          runner.wait(1, [&](const std::string&, const trial::StepReport&, const trial::TrialOutput&) {
            last = Clock::now();
            if (first == Clock::time_point{}) first = last;
            return true;
          });
      if (done.empty()) continue;
      const Clock::time_point end = Clock::now();
      if (done.front().status != trial::TrialStatus::kCompleted) {
        std::cerr << "trial " << launch.id << ": " << trial::to_string(done.front().status) << ": " << done.front().reason << "\n";
        std::exit(1);
      }
      t.first_step_ms.push_back(std::chrono::duration<double, std::milli>(first - start).count());
      t.end_ms.push_back(std::chrono::duration<double, std::milli>(end - last).count());
      break;
    }
  }
  return t;
}

std::string summary(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return fmt::format("median {:7.1f} ms  (min {:.1f}, max {:.1f})", v[v.size() / 2], v.front(), v.back());
}

}  // namespace

int main(int argc, char** argv) {
  const int repetitions = argc > 1 ? std::max(1, std::atoi(argv[1])) : 10;
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / fmt::format("paratune-backend-bench-{}", ::getpid());
  const trial::LocalBackend local(1);
  const Times l = measure(local, repetitions, dir);
  fmt::print("local: {} trials\n  start -> first step  {}\n  last step -> end     {}\n", repetitions,
             summary(l.first_step_ms), summary(l.end_ms));
  testing::SshServer server;
  if (!server.running()) {
    fmt::print("ssh: skipped: {}\n", server.skip_reason());
  } else {
    trial::SshOptions options;
    options.config_file = server.client_config().string();
    const trial::SshBackend ssh({{testing::SshServer::host(), 1, {}}}, options);
    const Times s = measure(ssh, repetitions, dir);
    fmt::print("ssh (127.0.0.1, a new connection per trial): {} trials\n  start -> first step  {}\n  last step -> end     {}\n",
               repetitions, summary(s.first_step_ms), summary(s.end_ms));
  }
  testing::SlurmCluster& cluster = testing::SlurmCluster::shared();
  if (!cluster.problem().empty()) {
    fmt::print("slurm: skipped: {}\n", cluster.problem());
  } else {
    trial::SlurmOptions options;
    options.poll_s = 0.2;
    options.watcher = PARATUNE_SLURM_JOB;
    const trial::SlurmBackend slurm(options);
    const Times s = measure(slurm, repetitions, dir);
    fmt::print("slurm (one-node cluster, scontrol every 0.2 s): {} trials\n  start -> first step  {}\n  last step -> end     {}\n",
               repetitions, summary(s.first_step_ms), summary(s.end_ms));
  }
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
  return 0;
}
