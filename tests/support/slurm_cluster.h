// A one-machine Slurm cluster for the tests: munged, slurmctld and slurmd with a generated
// slurm.conf in a fresh temporary directory, on free loopback ports, with a private munge socket
// and key -- nothing of the host's own Slurm or munge is used or changed. Started at most once per
// test process (each gtest case is its own process under ctest) and stopped, with every job
// cancelled, when the process exits. slurmd must run as root (it starts jobs as their user): as
// another user the cluster does not start and says why.
//
// Memory limits are enforced by jobacct_gather/linux with OverMemoryKill (no cgroups needed): a
// job past its --mem is killed and says "Exceeded job memory limit".
#pragma once

#include <filesystem>
#include <string>

namespace paratune::testing {

class SlurmCluster {
 public:
  // The process's cluster, started on first use; check problem() before using it.
  static SlurmCluster& shared();

  // Why it could not start; empty when it runs.
  [[nodiscard]] const std::string& problem() const { return problem_; }
  // Its slurm.conf; SLURM_CONF is set to it in this process's environment (children inherit it).
  [[nodiscard]] const std::filesystem::path& conf() const { return conf_; }
  [[nodiscard]] const std::filesystem::path& dir() const { return dir_; }
  [[nodiscard]] const std::string& node() const { return node_; }

  ~SlurmCluster();
  SlurmCluster(const SlurmCluster&) = delete;
  SlurmCluster& operator=(const SlurmCluster&) = delete;

 private:
  SlurmCluster();
  void start();
  void stop();
  std::string problem_;
  std::filesystem::path dir_, conf_;
  std::string node_;
  bool started_ = false;
};

}  // namespace paratune::testing
