// A one-machine Slurm cluster for the tests (slurm_cluster.h).
#include "slurm_cluster.h"

#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <sstream>
#include <thread>

#include "paratune/spec/error.h"
#include "paratune/trial/run_command.h"
#include "free_port.h"

namespace paratune::testing {
namespace {

using trial::run_command;

std::string short_hostname() {
  char name[256] = {};
  ::gethostname(name, sizeof name - 1);
  std::string host = name;
  return host.substr(0, host.find('.'));
}

bool executable(const char* path) { return ::access(path, X_OK) == 0; }

// SIGTERM to the daemon whose pid the file holds, then wait (up to 5 s) for it to be gone: munged
// writes its seed file as it exits, which must not land in a directory being removed.
void stop_daemon(const std::filesystem::path& pid_file) {
  std::ifstream in(pid_file);
  pid_t pid = 0;
  if (!(in >> pid) || pid <= 1 || ::kill(pid, SIGTERM) != 0) return;
  for (int i = 0; i < 100 && ::kill(pid, 0) == 0; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(50));
}

}  // namespace

SlurmCluster& SlurmCluster::shared() {
  static SlurmCluster cluster;
  return cluster;
}

SlurmCluster::SlurmCluster() {
  try {
    start();
  } catch (const std::exception& e) {
    problem_ = e.what();
  }
}

SlurmCluster::~SlurmCluster() { stop(); }

void SlurmCluster::start() {
  if (::geteuid() != 0) throw Error("the test Slurm cluster needs root (slurmd starts jobs as their user)");
  for (const char* program : {"/usr/sbin/munged", "/usr/sbin/mungekey", "/usr/sbin/slurmctld", "/usr/sbin/slurmd", "/usr/bin/sbatch"})
    if (!executable(program))
      throw Error(std::string("Slurm is not installed here: no ") + program + " (Debian packages slurm-wlm, munge)");
  char pattern[] = "/tmp/paratune-slurm-XXXXXX";
  if (::mkdtemp(pattern) == nullptr) throw Error("cannot make a temporary directory for the Slurm cluster");
  dir_ = pattern;
  for (const char* sub : {"state", "spool", "log"}) std::filesystem::create_directories(dir_ / sub);
  const std::filesystem::path key = dir_ / "munge.key", socket = dir_ / "munge.sock";
  if (!run_command({"/usr/sbin/mungekey", "--create", "--keyfile=" + key.string(), "--force"}, 30).ok())
    throw Error("mungekey could not create a key in " + dir_.string());
  std::filesystem::permissions(key, std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
  const trial::CommandOutput munged =
      run_command({"/usr/sbin/munged", "--force", "--socket=" + socket.string(), "--key-file=" + key.string(),
                   "--log-file=" + (dir_ / "log/munged.log").string(), "--pid-file=" + (dir_ / "munged.pid").string(),
                   "--seed-file=" + (dir_ / "munged.seed").string()},
                  30);
  if (!munged.ok()) throw Error("munged did not start: " + trial::last_lines(munged.err, 3));
  started_ = true;

  node_ = short_hostname();
  const int ctld_port = free_port(), slurmd_port = free_port();
  if (ctld_port == 0 || slurmd_port == 0 || ctld_port == slurmd_port) throw Error("no free loopback port for Slurm");
  const long cpus = ::sysconf(_SC_NPROCESSORS_ONLN);
  conf_ = dir_ / "slurm.conf";
  std::ofstream conf(conf_);
  conf << "# A one-machine test cluster written by paratune's tests (tests/support/slurm_cluster.cc).\n"
       << "ClusterName=paratunetest\n"
       << "SlurmctldHost=" << node_ << "(127.0.0.1)\n"
       << "SlurmctldPort=" << ctld_port << "\nSlurmdPort=" << slurmd_port << "\n"
       << "AuthType=auth/munge\nAuthInfo=socket=" << socket.string() << "\nCredType=cred/munge\n"
       << "StateSaveLocation=" << (dir_ / "state").string() << "\nSlurmdSpoolDir=" << (dir_ / "spool").string() << "\n"
       << "SlurmctldPidFile=" << (dir_ / "slurmctld.pid").string() << "\nSlurmdPidFile=" << (dir_ / "slurmd.pid").string() << "\n"
       << "SlurmctldLogFile=" << (dir_ / "log/slurmctld.log").string() << "\nSlurmdLogFile=" << (dir_ / "log/slurmd.log").string() << "\n"
       << "SlurmUser=root\nSlurmdUser=root\n"
       << "ProctrackType=proctrack/linuxproc\nTaskPlugin=task/none\n"
       << "SchedulerType=sched/backfill\nSelectType=select/cons_tres\nSelectTypeParameters=CR_Core_Memory\n"
       << "JobAcctGatherType=jobacct_gather/linux\nJobAcctGatherFrequency=1\nJobAcctGatherParams=OverMemoryKill\n"
       << "AccountingStorageType=accounting_storage/none\nJobCompType=jobcomp/none\nMpiDefault=none\n"
       << "ReturnToService=2\nMinJobAge=600\nKillWait=5\n"
       // Without --mem a job would take the node's whole memory: one job at a time.
       << "DefMemPerCPU=200\n"
       << "NodeName=" << node_ << " NodeAddr=127.0.0.1 CPUs=" << cpus << " RealMemory=4000 State=UNKNOWN\n"
       << "PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP\n";
  conf.close();
  ::setenv("SLURM_CONF", conf_.c_str(), 1);
  const trial::CommandOutput ctld = run_command({"/usr/sbin/slurmctld", "-f", conf_.string(), "-i"}, 30);
  if (!ctld.ok()) throw Error("slurmctld did not start: " + trial::last_lines(ctld.err, 3));
  const trial::CommandOutput slurmd = run_command({"/usr/sbin/slurmd", "-f", conf_.string()}, 30);
  if (!slurmd.ok()) throw Error("slurmd did not start: " + trial::last_lines(slurmd.err, 3));
  // Ready when the node is idle.
  std::string state;
  for (int i = 0; i < 150; ++i) {
    const trial::CommandOutput info = run_command({"sinfo", "-h", "-o", "%T"}, 10);
    state = info.out.substr(0, info.out.find('\n'));
    if (info.ok() && state == "idle") return;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  std::ifstream log(dir_ / "log/slurmctld.log");
  std::stringstream text;
  text << log.rdbuf();
  throw Error("the test Slurm node did not become idle in 30 s (state '" + state + "'); slurmctld log:\n" +
              trial::last_lines(text.str(), 5));
}

void SlurmCluster::stop() {
  if (!started_) {
    if (!dir_.empty()) std::filesystem::remove_all(dir_);
    return;
  }
  // Every job of this cluster first (slurmstepd outlives slurmd), then the daemons.
  try {
    run_command({"scancel", "--full", "--user=root"}, 10);
    for (int i = 0; i < 50; ++i) {
      const trial::CommandOutput queue = run_command({"squeue", "-h"}, 10);
      if (!queue.ok() || queue.out.empty()) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
  } catch (const std::exception&) {
  }
  stop_daemon(dir_ / "slurmd.pid");
  stop_daemon(dir_ / "slurmctld.pid");
  stop_daemon(dir_ / "munged.pid");
  std::error_code ec;
  std::filesystem::remove_all(dir_, ec);
}

}  // namespace paratune::testing
