// `paratune tune --backend slurm` on a one-node Slurm cluster the test starts (tests/support/
// slurm_cluster.h): its flags, a configuration study whose trials are jobs (with hostile values),
// a hyperparameter study, and a controller killed with -9 that leaves no job behind and resumes.
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>

#include <fmt/format.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <thread>

#include "../support/require_servers.h"
#include "../support/slurm_cluster.h"
#include "cli_util.h"
#include "paratune/store/sqlite_store.h"
#include "paratune/trial/run_command.h"
#include "../support/test_files.h"

extern char** environ;

namespace {

using paratune::testing::read_file;
using paratune::testing::write_file;
using paratune::testing::Result;
using paratune::testing::run;
using paratune::testing::SlurmCluster;

std::filesystem::path slurm_cli_dir(const std::string& name) { return paratune::testing::fresh_test_dir("paratune_slurm_cli", name); }

// The jobs Slurm still has pending or running.
std::string live_jobs() {
  const paratune::trial::CommandOutput queue =
      paratune::trial::run_command({"squeue", "-h", "-t", "PENDING,RUNNING,COMPLETING", "-o", "%i %j %T"}, 30);
  EXPECT_TRUE(queue.ok()) << queue.err;
  return queue.out;
}

// The Slurm flags of a study on the test cluster: the watcher beside the paratune under test.
std::string slurm_flags() { return " --backend slurm --slurm-poll 0.2s --grace 2s "; }

TEST(SlurmCli, FlagsAreCheckedBeforeAnyTrialRuns) {
  const auto dir = slurm_cli_dir("flags");
  write_file(dir / "space.yaml", "parameters:\n  x: [1, 2]\n");
  const std::string base = "tune --space " + (dir / "space.yaml").string() + " --study " + (dir / "s.db").string() +
                           " --command 'true {x}' ";
  Result r = run(base + "--slurm-partition gpu");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.output.find("--slurm-partition: belongs to --backend slurm"), std::string::npos) << r.output;
  r = run(base + "--backend slurm --slot-cpus 0");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.output.find("--slot-cpus: belongs to --backend local"), std::string::npos) << r.output;
  r = run(base + "--backend slurm --slurm-gpus-per-slot -1");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.output.find("--slurm-gpus-per-slot -1: must be from 0 to 1024"), std::string::npos) << r.output;
  r = run(base + "--backend slurm --slurm-mem-per-slot lots");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.output.find("--slurm-mem-per-slot"), std::string::npos) << r.output;
  r = run(base + "--backend slurm --sbatch-option exclusive");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.output.find("--sbatch-option 'exclusive'"), std::string::npos) << r.output;
  EXPECT_FALSE(std::filesystem::exists(dir / "s.trials"));
}

TEST(SlurmCli, APartitionSlurmRefusesIsSaidBeforeAnyTrial) {
  SlurmCluster& cluster = SlurmCluster::shared();
  PARATUNE_NEED_SERVER(cluster.problem());
  const auto dir = slurm_cli_dir("refused");
  write_file(dir / "space.yaml", "parameters:\n  x: [1, 2]\n");
  const Result r = run("tune --space " + (dir / "space.yaml").string() + " --study " + (dir / "s.db").string() +
                       " --command 'true {x}'" + slurm_flags() + "--slurm-partition gpu-that-is-not-there");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.output.find("--backend slurm: Slurm refuses a trial's job"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("--partition=gpu-that-is-not-there"), std::string::npos) << r.output;
  EXPECT_FALSE(std::filesystem::exists(dir / "s.trials"));
}

// Hostile values as YAML strings (single-quoted YAML: '' is one quote).
const char* kSlurmHostileSpace = R"(parameters:
  x: ['$(touch HOSTILE_MARK)', 'a''b', ';rm -rf ~', '`touch HOSTILE_MARK` && *']
)";

TEST(SlurmCli, ConfigurationStudyRunsAsSlurmJobs) {
  SlurmCluster& cluster = SlurmCluster::shared();
  PARATUNE_NEED_SERVER(cluster.problem());
  const auto dir = slurm_cli_dir("config-study");
  write_file(dir / "space.yaml", kSlurmHostileSpace);
  const Result r = run("tune --space " + (dir / "space.yaml").string() + " --study " + (dir / "s.db").string() +
                       " --command '" + PARATUNE_FAKE_TRIAL + " --record {trial_dir}/record.txt {x}' --steps 4 --slots 2" +
                       slurm_flags());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("2 slot(s) in flight as Slurm jobs"), std::string::npos) << r.output;
  const paratune::store::SqliteStudyStore store(dir / "s.db");
  std::set<std::string> values;
  for (const auto& study : store.studies())
    for (const auto& t : store.trials(study.id)) {
      EXPECT_EQ(t.status, "completed") << t.reason;
      EXPECT_EQ(nlohmann::json::parse(t.config_json).at("backend"), "slurm");
      EXPECT_EQ(t.location.rfind("slurm job ", 0), 0U) << t.location;
      EXPECT_NE(t.location.find(" on " + cluster.node()), std::string::npos) << t.location;
      EXPECT_EQ(t.steps, 4);
      const std::string value = nlohmann::json::parse(t.params_json).at("x").get<std::string>();
      EXPECT_NE(read_file(std::filesystem::path(t.dir) / "record.txt").find("\narg=" + value + "\n"), std::string::npos);
      values.insert(value);
      EXPECT_FALSE(std::filesystem::exists(std::filesystem::path(t.dir) / "HOSTILE_MARK"));
    }
  EXPECT_EQ(values.size(), 4U);
  EXPECT_FALSE(std::filesystem::exists(dir / "HOSTILE_MARK"));
  const Result shown = run("study show " + (dir / "s.db").string());
  ASSERT_EQ(shown.exit_code, 0) << shown.output;
  EXPECT_NE(shown.output.find("where: slurm job "), std::string::npos) << shown.output;
}

TEST(SlurmCli, HyperparameterStudyRunsAsSlurmJobs) {
  SlurmCluster& cluster = SlurmCluster::shared();
  PARATUNE_NEED_SERVER(cluster.problem());
  const auto dir = slurm_cli_dir("hpo-study");
  write_file(dir / "space.yaml", "parameters:\n  lr: {type: float, low: 0.001, high: 0.1, log: true}\n");
  const Result r = run("tune --space " + (dir / "space.yaml").string() + " --study " + (dir / "s.db").string() +
                       " --command '" + PARATUNE_FAKE_TRIAL + " {lr}' --steps 3 --algo random --max-trials 3 " +
                       "--trial-ranks 2 --slots 2" + slurm_flags());  // ranks != 1: a hyperparameter study
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const paratune::store::SqliteStudyStore store(dir / "s.db");
  int completed = 0;
  for (const auto& study : store.studies())
    for (const auto& t : store.trials(study.id)) {
      completed += t.status == "completed";
      EXPECT_EQ(t.location.rfind("slurm job ", 0), 0U) << t.location;
    }
  EXPECT_EQ(completed, 3);
}

// The controller dies by SIGKILL while its trials' jobs run: its watchdog stops the watchers, which
// cancel the jobs, so none is left; the resumed study cancels anything it still finds and goes on.
TEST(SlurmCli, ControllerKilledWithSigkillLeavesNoJobAndTheStudyResumes) {
  SlurmCluster& cluster = SlurmCluster::shared();
  PARATUNE_NEED_SERVER(cluster.problem());
  const auto dir = slurm_cli_dir("kill9");
  write_file(dir / "space.yaml", "parameters:\n  x: [1, 2]\n");
  const std::string args = "tune --space " + (dir / "space.yaml").string() + " --study " + (dir / "s.db").string() +
                           " --command '" + PARATUNE_FAKE_TRIAL + " --step-time 0.2 {x}' --steps 60 --slots 2" + slurm_flags();
  const std::string shell = std::string("exec ") + PARATUNE_BINARY + " " + args + " > " +
                            (dir / "first.log").string() + " 2>&1";
  const char* argv[] = {"/bin/sh", "-c", shell.c_str(), nullptr};
  pid_t controller = 0;
  ASSERT_EQ(posix_spawn(&controller, "/bin/sh", nullptr, nullptr, const_cast<char**>(argv), environ), 0);
  // Both trials' jobs running and stepping.
  bool stepping = false;
  for (int i = 0; i < 300 && !stepping; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    int with_steps = 0;
    for (int n : {1, 2}) {
      // The job's own output file (the runner's stdout.log is written through a buffer).
      const auto trial_dir = dir / "s.trials" / fmt::format("trial-{:04d}", n);
      if (!std::filesystem::exists(trial_dir)) continue;
      for (const auto& entry : std::filesystem::directory_iterator(trial_dir))
        if (entry.path().extension() == ".out" && read_file(entry.path()).find("\"step_time_s\"") != std::string::npos)
          ++with_steps;
    }
    stepping = with_steps == 2;
  }
  ASSERT_TRUE(stepping) << read_file(dir / "first.log") << live_jobs();
  ASSERT_NE(live_jobs(), "") << paratune::trial::run_command({"squeue", "-h", "-a"}, 30).out
                             << paratune::trial::run_command({"scontrol", "show", "jobs"}, 30).out << read_file(dir / "first.log");
  ::kill(controller, SIGKILL);
  ::waitpid(controller, nullptr, 0);
  std::string left = live_jobs();
  // Cancelled at once (the jobs alone would run for 10 s more): within 8 s, which a sanitized build
  // starting PostgreSQL beside it needed once in CI (5 s was not enough).
  for (int i = 0; i < 80 && !left.empty(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    left = live_jobs();
  }
  EXPECT_EQ(left, "") << "jobs left running after the controller was killed";

  const Result resumed = run(args);
  ASSERT_EQ(resumed.exit_code, 0) << resumed.output;
  EXPECT_EQ(live_jobs(), "");
  const paratune::store::SqliteStudyStore store(dir / "s.db");
  int interrupted = 0, completed = 0;
  for (const auto& study : store.studies())
    for (const auto& t : store.trials(study.id)) {
      interrupted += t.status == "interrupted";
      completed += t.status == "completed";
    }
  EXPECT_EQ(interrupted, 2);
  EXPECT_EQ(completed, 2);
}

}  // namespace
