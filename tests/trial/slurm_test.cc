// The Slurm backend: what Slurm's tools print, parsed; how each end of a job is told to the runner;
// and trials as real jobs on a one-machine Slurm cluster the test starts (tests/support/
// slurm_cluster.h): a completed trial with live steps and its location, a trial stopped early
// whose job is cancelled, a watcher killed a second after its stop (a dead controller's watchdog)
// while slurmctld is slow, a real out-of-memory under --mem, a job cancelled outside paratune,
// time in the queue not counted against a trial's limits, hostile argument values, a job Slurm
// refuses.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string_view>
#include <thread>

#include "../support/require_servers.h"
#include "../support/slurm_cluster.h"
#include "paratune/spec/option_error.h"
#include "paratune/trial/failure.h"
#include "paratune/trial/run_command.h"
#include "paratune/trial/slurm_backend.h"
#include "paratune/trial/slurm_job.h"
#include "../support/test_files.h"

namespace paratune::trial {
namespace {

using paratune::testing::read_file;
using paratune::testing::SlurmCluster;

// ---- What Slurm prints ------------------------------------------------------------------------

TEST(SlurmParse, ScontrolOneLine) {
  // scontrol show job -o, Slurm 22.05 (shortened).
  const std::string line =
      "JobId=2 JobName=paratune-main-0001 UserId=root(0) GroupId=root(0) MCS_label=N/A Priority=4294901759 Nice=0 "
      "Account=(null) QOS=(null) JobState=FAILED Reason=JobLaunchFailure Dependency=(null) Requeue=1 Restarts=0 "
      "BatchFlag=1 Reboot=0 ExitCode=0:9 RunTime=00:00:01 TimeLimit=UNLIMITED NodeList=node7 BatchHost=node7\n";
  const std::optional<SlurmJobState> job = parse_scontrol_job(line);
  ASSERT_TRUE(job);
  EXPECT_EQ(job->state, "FAILED");
  EXPECT_EQ(job->reason, "JobLaunchFailure");
  EXPECT_EQ(job->exit_code, 0);
  EXPECT_EQ(job->exit_signal, 9);
  EXPECT_EQ(job->nodes, "node7");
  EXPECT_FALSE(parse_scontrol_job("slurm_load_jobs error: Invalid job id specified\n"));
  const auto pending = parse_scontrol_job("JobId=3 JobState=PENDING Reason=Resources ExitCode=0:0 NodeList=(null)");
  ASSERT_TRUE(pending);
  EXPECT_EQ(pending->nodes, "");
}

TEST(SlurmParse, SacctParsable) {
  const auto job = parse_sacct_job("CANCELLED by 0|None|0:15|node3\n");
  ASSERT_TRUE(job);
  EXPECT_EQ(job->state, "CANCELLED");
  EXPECT_EQ(job->exit_signal, 15);
  EXPECT_EQ(job->nodes, "node3");
  EXPECT_FALSE(parse_sacct_job(""));
  EXPECT_FALSE(parse_sacct_job("COMPLETED|None\n"));
}

TEST(SlurmParse, Phases) {
  for (const char* s : {"PENDING", "REQUEUED", "CONFIGURING", "REQUEUE_HOLD"}) EXPECT_EQ(slurm_phase(s), SlurmPhase::kWaiting) << s;
  for (const char* s : {"RUNNING", "COMPLETING", "SUSPENDED"}) EXPECT_EQ(slurm_phase(s), SlurmPhase::kRunning) << s;
  for (const char* s : {"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "OUT_OF_MEMORY", "NODE_FAIL", "PREEMPTED",
                        "BOOT_FAIL", "DEADLINE", "SOMETHING_NEW"})
    EXPECT_EQ(slurm_phase(s), SlurmPhase::kEnded) << s;
}

// Each end of a job, as the runner will record it.
TEST(SlurmEnd, EachStateMapsToAStatus) {
  const auto end = [](const char* state, int code = 0, int signal = 0, bool ours = false) {
    return slurm_job_end(SlurmJobState{state, "None", code, signal, "node1"}, "42", ours);
  };
  EXPECT_FALSE(end("COMPLETED").ended);
  EXPECT_EQ(end("COMPLETED").exit_code, 0);
  EXPECT_EQ(end("FAILED", 3).exit_code, 3);  // the program's own exit: refused before a step, as locally
  EXPECT_FALSE(end("FAILED", 3).ended);
  EXPECT_EQ(end("FAILED", 0, 9).exit_signal, 9);  // raised by the watcher: SIGKILL reads as the OOM killer
  ASSERT_TRUE(end("OUT_OF_MEMORY").ended);
  EXPECT_EQ(end("OUT_OF_MEMORY").ended->status, "oom");
  EXPECT_EQ(end("TIMEOUT").ended->status, "timeout");
  EXPECT_EQ(end("DEADLINE").ended->status, "timeout");
  EXPECT_EQ(end("PREEMPTED").ended->status, "interrupted");
  EXPECT_EQ(end("CANCELLED").ended->status, "interrupted");  // by someone else: run it again
  EXPECT_NE(end("CANCELLED").ended->reason.find("outside paratune"), std::string::npos);
  EXPECT_FALSE(end("CANCELLED", 0, 15, /*ours=*/true).ended);  // the runner knows why it stopped it
  EXPECT_EQ(end("NODE_FAIL").ended->status, "failed");
  EXPECT_NE(end("NODE_FAIL").ended->reason.find("job 42 on node1 ended NODE_FAIL"), std::string::npos);
  EXPECT_EQ(end("BOOT_FAIL").ended->status, "failed");
  // A cluster's failure is a crash, never a refusal of the configuration (the runner records no exit
  // code for a backend-said end: trial/runner.h).
  EXPECT_EQ(classify_failure(TrialStatus::kFailed, -1, 0, 0), FailureKind::kCrashed);
}

TEST(SlurmBackendOptions, SbatchOptionsScaleWithSlotsAndBadValuesAreNamed) {
  SlurmOptions o;
  o.slots = 4;
  o.cpus_per_slot = 2;
  o.gpus_per_slot = 1;
  o.memory_per_slot_bytes = 1.5 * 1024 * 1024 * 1024;
  o.time_limit_s = 3725;
  o.partition = "gpu";
  o.account = "proj";
  o.qos = "high";
  o.constraint = "h100";
  o.extra_sbatch_options = {"--exclusive"};
  const SlurmBackend backend(o);
  const std::vector<std::string> args = backend.sbatch_options(2);
  const std::vector<std::string> expected{"--ntasks=1",  "--cpus-per-task=4",  "--gpus=2",      "--mem=3072M",
                                          "--time=1:02:05", "--partition=gpu", "--account=proj", "--qos=high",
                                          "--constraint=h100", "--exclusive"};
  EXPECT_EQ(args, expected);
  TrialCommand trial;
  trial.argv = {"train", "a b"};
  const LaunchCommand command = backend.command_for(trial, {0, 1});
  ASSERT_GE(command.argv.size(), 3U);
  EXPECT_EQ(command.argv[command.argv.size() - 3], "--");
  EXPECT_EQ(command.argv.back(), "a b");  // the trial's arguments, untouched (no shell anywhere)

  const auto refused = [](auto change, const char* field) {
    SlurmOptions bad;
    change(bad);
    try {
      SlurmBackend b(bad);
      ADD_FAILURE() << field << " accepted";
    } catch (const OptionError& e) {
      EXPECT_EQ(e.field(), field);
    }
  };
  refused([](SlurmOptions& b) { b.slots = 0; }, "slots");
  refused([](SlurmOptions& b) { b.cpus_per_slot = 0; }, "cpus_per_slot");
  refused([](SlurmOptions& b) { b.gpus_per_slot = -1; }, "gpus_per_slot");
  refused([](SlurmOptions& b) { b.time_limit_s = -5; }, "time_limit_s");
  refused([](SlurmOptions& b) { b.poll_s = 0; }, "poll_s");
  refused([](SlurmOptions& b) { b.extra_sbatch_options = {"exclusive"}; }, "extra_sbatch_options");
  // What the watcher sets itself (it reads the job's output files as they grow).
  for (const char* own : {"--output=/tmp/x", "-o/tmp/x", "--error=e", "--chdir=/", "--export=NONE", "--job-name=x", "-Jx",
                          "--parsable", "--wrap=true"})
    refused([&](SlurmOptions& b) { b.extra_sbatch_options = {own}; }, "extra_sbatch_options");
  SlurmOptions fine;
  fine.extra_sbatch_options = {"--exclusive", "--reservation=r1", "--ntasks-per-node=1"};
  EXPECT_NO_THROW(SlurmBackend{fine});
  // Each trial gets its own backend token, in the watcher's environment.
  const LaunchCommand again = backend.command_for(trial, {0, 1});
  EXPECT_EQ(command.backend_token.size(), 32U);
  EXPECT_NE(command.backend_token, again.backend_token);
  EXPECT_NE(std::find(command.env.begin(), command.env.end(),
                      std::pair<std::string, std::string>{"PARATUNE_BACKEND_TOKEN", command.backend_token}),
            command.env.end());
}

// ---- Real jobs ----------------------------------------------------------------------------------

std::filesystem::path slurm_trial_dir(const std::string& name) {
  const std::filesystem::path dir = std::filesystem::path(::testing::TempDir()) / "paratune_slurm" / name;
  std::filesystem::remove_all(dir);
  return dir;
}

TrialLaunch fake_launch(const std::string& id, std::vector<std::string> args) {
  TrialLaunch l;
  l.id = id;
  l.argv = {PARATUNE_FAKE_TRIAL};
  l.argv.insert(l.argv.end(), args.begin(), args.end());
  l.dir = slurm_trial_dir(id);
  l.params_json = R"({"tp":2})";
  l.limits.grace_s = 5;
  return l;
}

SlurmOptions test_options() {
  SlurmOptions o;
  o.slots = 2;
  o.poll_s = 0.2;
  o.watcher = PARATUNE_SLURM_JOB;
  return o;
}

// Runs the launches to their ends (at most 120 s in all).
std::vector<TrialResult> run_all(TrialRunner& runner, std::size_t count, const TrialRunner::StepCallback& on_step = {}) {
  std::vector<TrialResult> done;
  for (int i = 0; i < 1200 && done.size() < count; ++i)
    for (TrialResult& r : runner.wait(0.1, on_step)) done.push_back(std::move(r));
  EXPECT_EQ(done.size(), count) << "trials did not end within 120 s";
  return done;
}

std::string job_state(const std::string& job_id) {
  const CommandOutput shown = run_command({"scontrol", "show", "job", "-o", job_id}, 30);
  const auto job = parse_scontrol_job(shown.out);
  return job ? job->state : "unknown";
}

TEST(SlurmJobs, CompletedTrialReportsLiveStepsAndWhereItRan) {
  SlurmCluster& cluster = SlurmCluster::shared();
  PARATUNE_NEED_SERVER(cluster.problem());
  const SlurmBackend backend(test_options());
  TrialRunner runner(backend);
  TrialLaunch l = fake_launch("slurm-ok", {"--steps", "5", "--step-time", "0.05", "--peak-memory", "1000"});
  runner.start(l);
  const TrialResult r = run_all(runner, 1).at(0);
  EXPECT_EQ(to_string(r.status), std::string("completed")) << r.reason;
  EXPECT_EQ(r.output.steps.size(), 5U);
  EXPECT_EQ(r.output.peak_memory_bytes.value_or(0), 1000);
  EXPECT_EQ(r.exit_code, 0);
  const std::optional<std::string> job = slurm_job_id_in(l.dir);
  ASSERT_TRUE(job);
  EXPECT_EQ(r.location, "slurm job " + *job + " on " + cluster.node());
  EXPECT_NE(read_file(l.dir / "stdout.log").find("@paratune {\"step\""), std::string::npos);
  EXPECT_NE(read_file(l.dir / "stderr.log").find("submitted Slurm job " + *job), std::string::npos);
  EXPECT_EQ(job_state(*job), "COMPLETED");
}

TEST(SlurmJobs, StoppedTrialHasItsJobCancelled) {
  SlurmCluster& cluster = SlurmCluster::shared();
  PARATUNE_NEED_SERVER(cluster.problem());
  const SlurmBackend backend(test_options());
  TrialRunner runner(backend);
  TrialLaunch l = fake_launch("slurm-stop", {"--steps", "1000", "--step-time", "0.1", "--ignore-sigterm"});
  runner.start(l);
  const TrialResult r = run_all(runner, 1, [](const std::string&, const StepReport&, const TrialOutput& so_far) {
    return so_far.steps.size() < 3;  // the search stops it after 3 steps
  }).at(0);
  EXPECT_EQ(to_string(r.status), std::string("early-stopped")) << r.reason;
  const std::optional<std::string> job = slurm_job_id_in(l.dir);
  ASSERT_TRUE(job);
  std::string state;
  for (int i = 0; i < 100 && (state = job_state(*job)) != "CANCELLED"; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_EQ(state, "CANCELLED");  // and no step of it runs any more
}

// A watcher stopped while slurmctld is slow to answer still cancels its job. When the controller
// dies, the runner's watchdog sends the watcher SIGTERM and, one second later, SIGKILL (runner.cc);
// the watcher must issue scancel the moment the stop comes, not when its scontrol returns. Here
// scontrol answers after 3 s, as a loaded slurmctld may, and the test plays the watchdog.
TEST(SlurmJobs, AWatcherKilledASecondAfterItsStopStillCancelsTheJob) {
  SlurmCluster& cluster = SlurmCluster::shared();
  PARATUNE_NEED_SERVER(cluster.problem());
  const std::string path = std::getenv("PATH") ? std::getenv("PATH") : "";
  const std::string found = run_command({"sh", "-c", "command -v scontrol"}, 30).out;
  const std::string real_scontrol = found.substr(0, found.find('\n'));
  ASSERT_FALSE(real_scontrol.empty());
  const std::filesystem::path bin = slurm_trial_dir("slow-scontrol-bin");
  std::filesystem::create_directories(bin);
  std::ofstream(bin / "scontrol") << "#!/bin/sh\nsleep 3\nexec " << real_scontrol << " \"$@\"\n";
  std::filesystem::permissions(bin / "scontrol", std::filesystem::perms::owner_all);

  // The watcher as the runner would start it, with the slow scontrol first on its PATH.
  const SlurmBackend backend(test_options());
  const TrialLaunch l = fake_launch("slurm-watchdog", {"--steps", "1000", "--step-time", "0.1", "--ignore-sigterm"});
  std::filesystem::create_directories(l.dir);
  const LaunchCommand command = backend.command_for(TrialCommand{l.argv, l.dir, {}, 1}, {0});
  std::vector<std::string> env{"PATH=" + bin.string() + ":" + path, "PARATUNE_TRIAL_DIR=" + l.dir.string()};
  for (char** e = environ; *e != nullptr; ++e)
    if (std::string_view(*e).rfind("PATH=", 0) != 0) env.emplace_back(*e);
  for (const auto& [name, value] : command.env) env.push_back(name + "=" + value);
  std::vector<char*> argv, envp;
  for (const std::string& a : command.argv) argv.push_back(const_cast<char*>(a.c_str()));
  for (const std::string& e : env) envp.push_back(const_cast<char*>(e.c_str()));
  argv.push_back(nullptr);
  envp.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, (l.dir / "stdout.log").c_str(), O_WRONLY | O_CREAT, 0644);
  posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, (l.dir / "stderr.log").c_str(), O_WRONLY | O_CREAT, 0644);
  pid_t watcher = 0;
  ASSERT_EQ(posix_spawn(&watcher, argv[0], &actions, nullptr, argv.data(), envp.data()), 0);
  posix_spawn_file_actions_destroy(&actions);

  // Its job running (asked with the real scontrol), then the watcher inside one of its slow ones.
  std::optional<std::string> job;
  std::string state;
  for (int i = 0; i < 300 && state != "RUNNING"; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    if (!job) job = slurm_job_id_in(l.dir);
    if (job) state = job_state(*job);
  }
  ASSERT_EQ(state, "RUNNING") << read_file(l.dir / "stderr.log");
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  ::kill(watcher, SIGTERM);
  std::this_thread::sleep_for(std::chrono::seconds(1));
  ::kill(watcher, SIGKILL);
  ::waitpid(watcher, nullptr, 0);
  for (int i = 0; i < 100 && (state = job_state(*job)) != "CANCELLED"; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_EQ(state, "CANCELLED") << read_file(l.dir / "stderr.log");
  run_command({"scancel", *job}, 30);  // whatever the outcome, no job outlives the test
}

TEST(SlurmJobs, OutOfMemoryUnderTheJobsMemoryLimitIsOom) {
  SlurmCluster& cluster = SlurmCluster::shared();
  PARATUNE_NEED_SERVER(cluster.problem());
  SlurmOptions o = test_options();
  o.memory_per_slot_bytes = 100.0 * 1024 * 1024;
  const SlurmBackend backend(o);
  TrialRunner runner(backend);
  // 400 MiB held for 5 s: Slurm's memory sampling (every second) sees it.
  runner.start(fake_launch("slurm-oom", {"--allocate-mb", "400", "--steps", "5", "--step-time", "1"}));
  const TrialResult r = run_all(runner, 1).at(0);
  EXPECT_EQ(to_string(r.status), std::string("oom")) << r.reason;
  EXPECT_EQ(classify_failure(r.status, r.exit_code, r.exit_signal, static_cast<long long>(r.output.steps.size())),
            FailureKind::kOom);
}

TEST(SlurmJobs, JobCancelledOutsideParatuneIsInterrupted) {
  SlurmCluster& cluster = SlurmCluster::shared();
  PARATUNE_NEED_SERVER(cluster.problem());
  const SlurmBackend backend(test_options());
  TrialRunner runner(backend);
  TrialLaunch l = fake_launch("slurm-admin", {"--steps", "1000", "--step-time", "0.1"});
  runner.start(l);
  bool cancelled = false;
  const TrialResult r = run_all(runner, 1, [&](const std::string&, const StepReport&, const TrialOutput&) {
    if (!cancelled) {
      const std::optional<std::string> job = slurm_job_id_in(l.dir);
      if (job) cancelled = run_command({"scancel", *job}, 30).ok();  // an administrator, say
    }
    return true;
  }).at(0);
  EXPECT_TRUE(cancelled);
  EXPECT_EQ(to_string(r.status), std::string("interrupted")) << r.reason;
  EXPECT_NE(r.reason.find("cancelled outside paratune"), std::string::npos) << r.reason;
}

// A trial waiting for resources is not hung: its limits start when its job does.
TEST(SlurmJobs, TimeInTheQueueIsNotCountedAgainstTheLimits) {
  SlurmCluster& cluster = SlurmCluster::shared();
  PARATUNE_NEED_SERVER(cluster.problem());
  SlurmOptions o = test_options();
  o.cpus_per_slot = static_cast<int>(::sysconf(_SC_NPROCESSORS_ONLN));  // one trial fills the node
  const SlurmBackend backend(o);
  TrialRunner runner(backend);
  TrialLaunch first = fake_launch("slurm-queue-1", {"--steps", "16", "--step-time", "0.5"});
  TrialLaunch second = fake_launch("slurm-queue-2", {"--steps", "3", "--step-time", "0.1"});
  second.limits.hang_s = 6;      // it waits 8 s and more for the first job
  second.limits.timeout_s = 12;  // it runs for a second or two once started
  runner.start(first);
  runner.start(second);
  const std::vector<TrialResult> done = run_all(runner, 2);
  for (const TrialResult& r : done) EXPECT_EQ(to_string(r.status), std::string("completed")) << r.id << ": " << r.reason;
  EXPECT_NE(read_file(second.dir / "stdout.log").find("\"queued\""), std::string::npos);
}

TEST(SlurmJobs, HostileArgumentValuesArriveByteForByte) {
  SlurmCluster& cluster = SlurmCluster::shared();
  PARATUNE_NEED_SERVER(cluster.problem());
  const SlurmBackend backend(test_options());
  TrialRunner runner(backend);
  const std::filesystem::path marker = slurm_trial_dir("slurm-hostile-marker");
  std::filesystem::create_directories(marker);
  const std::vector<std::string> hostile{"$(touch " + (marker / "pwned1").string() + ")",
                                         "`touch " + (marker / "pwned2").string() + "`",
                                         "a'b\"c", "; touch " + (marker / "pwned3").string(), "", "*", "x && y"};
  TrialLaunch l = fake_launch("slurm-hostile", {});
  const std::filesystem::path record = l.dir.string() + "-record.txt";
  l.argv.insert(l.argv.end(), {"--record", record.string(), "--steps", "2"});
  l.argv.insert(l.argv.end(), hostile.begin(), hostile.end());
  l.params_json = R"({"v":"$(touch x)'"})";
  runner.start(l);
  const TrialResult r = run_all(runner, 1).at(0);
  EXPECT_EQ(to_string(r.status), std::string("completed")) << r.reason;
  const std::string recorded = read_file(record);
  for (const std::string& value : hostile) EXPECT_NE(recorded.find("arg=" + value + "\n"), std::string::npos) << value;
  EXPECT_NE(recorded.find(R"(PARATUNE_PARAMS={"v":"$(touch x)'"})"), std::string::npos);
  EXPECT_TRUE(std::filesystem::is_empty(marker)) << "a value was executed";
}

// A job a dead controller's watcher could not cancel: the next controller cancels it (its id and
// name in the trial's directory), and only that job.
TEST(SlurmJobs, ALeftOverJobIsCancelledByTheNextController) {
  SlurmCluster& cluster = SlurmCluster::shared();
  PARATUNE_NEED_SERVER(cluster.problem());
  const std::filesystem::path dir = slurm_trial_dir("slurm-left-over");
  std::filesystem::create_directories(dir);
  const auto submit = [](const std::string& name) {
    const CommandOutput job = run_command({"sbatch", "--parsable", "--job-name=" + name, "--output=/dev/null", "--wrap",
                                           "sleep 300"},
                                          30);
    EXPECT_TRUE(job.ok()) << job.err;
    return job.out.substr(0, job.out.find_first_of(";\n"));
  };
  const std::string left = submit("paratune-main-0001-abcd1234"), other = submit("someone-elses-job");
  const SlurmBackend backend(test_options());
  // A directory naming another job by its id but with this name is not the other job's.
  std::ofstream(dir / "slurm-job-id") << other << "\nparatune-main-0001-abcd1234\n";
  EXPECT_EQ(backend.clean_up_left_over(dir), 0);
  std::ofstream(dir / "slurm-job-id") << left << "\nparatune-main-0001-abcd1234\n";
  EXPECT_EQ(backend.clean_up_left_over(dir), 1);
  std::string state;
  for (int i = 0; i < 100 && (state = job_state(left)) != "CANCELLED"; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_EQ(state, "CANCELLED");
  EXPECT_NE(job_state(other), "CANCELLED");
  run_command({"scancel", other}, 30);
}

TEST(SlurmJobs, AJobSlurmRefusesIsARefusedConfiguration) {
  SlurmCluster& cluster = SlurmCluster::shared();
  PARATUNE_NEED_SERVER(cluster.problem());
  SlurmOptions o = test_options();
  o.partition = "no-such-partition";
  const SlurmBackend backend(o);
  try {
    backend.check_with_slurm();
    ADD_FAILURE() << "sbatch --test-only accepted a partition that does not exist";
  } catch (const OptionError& e) {
    EXPECT_EQ(e.field(), "backend");
    EXPECT_NE(std::string(e.what()).find("--partition=no-such-partition"), std::string::npos) << e.what();
  }
  TrialRunner runner(backend);
  runner.start(fake_launch("slurm-refused", {"--steps", "2"}));
  const TrialResult r = run_all(runner, 1).at(0);
  EXPECT_EQ(to_string(r.status), std::string("failed"));
  EXPECT_NE(r.reason.find("sbatch refused the job"), std::string::npos) << r.reason;
  EXPECT_NE(r.reason.find("Invalid partition name"), std::string::npos) << r.reason;
  EXPECT_EQ(classify_failure(r.status, r.exit_code, r.exit_signal, 0), FailureKind::kRefused);
  EXPECT_NO_THROW(SlurmBackend(test_options()).check_with_slurm()) << "the default partition is refused";
}

}  // namespace
}  // namespace paratune::trial
