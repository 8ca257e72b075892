// Trials as real processes (tests/trial/fake_trial.cc): every way a trial can end, its environment
// and arguments, and that no process of a stopped trial is left (checked by process group).
#include "paratune/trial/runner.h"

#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <fstream>
#include <iostream>
#include <sstream>

#include "../../src/trial/trial_cgroup.h"
#include "paratune/spec/error.h"
#include "../support/test_files.h"

namespace paratune::trial {
namespace {

using paratune::testing::read_file;

std::filesystem::path runner_dir(const std::string& name) {
  const std::filesystem::path dir = std::filesystem::path(::testing::TempDir()) / "paratune_runner" / name;
  std::filesystem::remove_all(dir);
  return dir;
}

TrialLaunch launch(const std::string& id, std::vector<std::string> args, TrialLimits limits = {}) {
  TrialLaunch l;
  l.id = id;
  l.argv = {PARATUNE_FAKE_TRIAL};
  l.argv.insert(l.argv.end(), args.begin(), args.end());
  l.dir = runner_dir(id);
  l.params_json = R"({"tp":2})";
  l.max_steps = 0;
  if (limits.grace_s == 10) limits.grace_s = 0.5;
  l.limits = limits;
  return l;
}

TrialResult run_one(const TrialLaunch& l, const TrialRunner::StepCallback& on_step = {}) {
  LocalBackend backend(1);
  TrialRunner runner(backend);
  runner.start(l);
  for (int i = 0; i < 600; ++i) {
    std::vector<TrialResult> done = runner.wait(0.1, on_step);
    if (!done.empty()) return done.front();
  }
  ADD_FAILURE() << "trial " << l.id << " did not end within 60 s";
  return {};
}

bool group_gone(int pgid) { return ::kill(-pgid, 0) != 0 && errno == ESRCH; }

TEST(Runner, CompletedTrialIsMeasuredAndLogged) {
  const TrialResult r = run_one(launch("ok", {"--steps", "6", "--step-time", "0.02", "--warmup", "0.2"}));
  EXPECT_EQ(r.status, TrialStatus::kCompleted) << r.reason;
  EXPECT_EQ(r.exit_code, 0);
  ASSERT_EQ(r.output.steps.size(), 6u);
  EXPECT_EQ(r.output.metrics.size(), 6u);
  EXPECT_EQ(r.throughput.dropped_warmup, 1);
  EXPECT_GT(r.throughput.steps_per_s, 0);
  EXPECT_NE(read_file(r.stdout_path).find("fake trial starting"), std::string::npos);
  EXPECT_TRUE(std::filesystem::exists(r.stderr_path));
  EXPECT_GE(r.ended_unix_s, r.started_unix_s);
  EXPECT_TRUE(group_gone(r.process_group));
}

TEST(Runner, EnvironmentAndHostileArgumentsArriveLiterally) {
  const std::filesystem::path record = runner_dir("record-file").string() + ".txt";
  const std::string hostile = R"(x'; rm -rf / #"$(touch pwned)`id` a b)";
  TrialLaunch l = launch("env", {"--record", record.string(), hostile, "$HOME"});
  l.max_steps = 2;
  const TrialResult r = run_one(l);
  EXPECT_EQ(r.status, TrialStatus::kCompleted) << r.reason;
  const std::string seen = read_file(record);
  EXPECT_NE(seen.find("arg=" + hostile + "\n"), std::string::npos) << seen;
  EXPECT_NE(seen.find("arg=$HOME\n"), std::string::npos);
  EXPECT_NE(seen.find("PARATUNE_TRIAL_ID=env\n"), std::string::npos);
  EXPECT_NE(seen.find("PARATUNE_PARAMS={\"tp\":2}\n"), std::string::npos);
  EXPECT_NE(seen.find("PARATUNE_MAX_STEPS=2\n"), std::string::npos);
  EXPECT_NE(seen.find("PARATUNE_TRIAL_DIR=" + std::filesystem::absolute(l.dir).string() + "\n"), std::string::npos);
  EXPECT_EQ(r.output.steps.size(), 2u);
}

TEST(Runner, CrashOomGarbageAndSilenceAreRecordedWithTheirReasons) {
  TrialResult r = run_one(launch("crash", {"--crash-at", "3"}));
  EXPECT_EQ(r.status, TrialStatus::kFailed);
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_NE(r.reason.find("exit code 3"), std::string::npos) << r.reason;
  EXPECT_NE(r.reason.find("something broke at step 3"), std::string::npos) << r.reason;
  EXPECT_EQ(r.output.steps.size(), 2u);

  r = run_one(launch("oom", {"--oom-at", "2"}));
  EXPECT_EQ(r.status, TrialStatus::kOom);
  EXPECT_NE(r.reason.find("CUDA out of memory"), std::string::npos) << r.reason;

  r = run_one(launch("killed", {"--exit-code", "137"}));
  EXPECT_EQ(r.status, TrialStatus::kOom) << r.reason;

  r = run_one(launch("garbage", {"--garbage", "--steps", "4"}));
  EXPECT_EQ(r.status, TrialStatus::kCompleted) << r.reason;
  EXPECT_EQ(r.output.steps.size(), 4u);
  EXPECT_EQ(r.output.malformed_lines, 8);

  r = run_one(launch("silent", {"--no-steps", "--garbage", "--steps", "2"}));
  EXPECT_EQ(r.status, TrialStatus::kFailed);
  EXPECT_NE(r.reason.find("reported no steps (4 malformed"), std::string::npos) << r.reason;

  r = run_one(launch("megatron", {"--megatron", "--steps", "3"}));
  EXPECT_EQ(r.status, TrialStatus::kCompleted) << r.reason;
  EXPECT_EQ(r.output.steps.size(), 3u);

  TrialLimits limits;
  limits.memory_limit_bytes = 1e9;
  r = run_one(launch("big", {"--peak-memory", "2e9", "--steps", "2"}, limits));
  EXPECT_EQ(r.status, TrialStatus::kInfeasible);
  EXPECT_NE(r.reason.find("above the limit"), std::string::npos) << r.reason;

  TrialLaunch missing = launch("missing", {});
  missing.argv = {"/nonexistent/train.py", "--tp", "2"};
  r = run_one(missing);
  EXPECT_EQ(r.status, TrialStatus::kFailed);
  EXPECT_NE(r.reason.find("cannot start '/nonexistent/train.py'"), std::string::npos) << r.reason;
}

// A hung trial that ignores SIGTERM and has a child: SIGKILL after the grace period, whole group.
TEST(Runner, HungTrialIgnoringSigtermIsKilledWithItsWholeGroup) {
  TrialLimits limits;
  limits.hang_s = 0.5;
  limits.grace_s = 0.3;
  const TrialResult r = run_one(launch("hang", {"--hang-at", "3", "--ignore-sigterm", "--grandchild"}, limits));
  EXPECT_EQ(r.status, TrialStatus::kTimeout);
  EXPECT_NE(r.reason.find("hung"), std::string::npos) << r.reason;
  EXPECT_EQ(r.exit_signal, SIGKILL);
  EXPECT_EQ(r.output.steps.size(), 2u);
  EXPECT_TRUE(group_gone(r.process_group));
}

TEST(Runner, WallClockTimeoutAndOrphansOfAFinishedLeader) {
  TrialLimits limits;
  limits.timeout_s = 0.4;
  TrialResult r = run_one(launch("slow", {"--steps", "100", "--step-time", "0.1"}, limits));
  EXPECT_EQ(r.status, TrialStatus::kTimeout);
  EXPECT_NE(r.reason.find("wall-clock limit"), std::string::npos) << r.reason;
  EXPECT_TRUE(group_gone(r.process_group));

  // The leader exits normally but leaves a child behind (that even ignores SIGTERM).
  r = run_one(launch("orphan", {"--steps", "2", "--grandchild", "--ignore-sigterm"}));
  EXPECT_EQ(r.status, TrialStatus::kCompleted) << r.reason;
  EXPECT_TRUE(group_gone(r.process_group));
}

// Issue 21: a process that left the trial's process group and session (setsid) survived the trial.
// It is stopped with the trial: through the trial's cgroup where one can be made, else found by
// its environment -- both ways are tested; a process that also empties its environment is caught
// by the cgroup only.
pid_t escaped_pid(const std::filesystem::path& file) {
  std::ifstream in(file);
  long pid = 0;
  in >> pid;
  return static_cast<pid_t>(pid);
}
bool process_gone(pid_t pid) { return pid > 0 && ::kill(pid, 0) != 0 && errno == ESRCH; }

TEST(Runner, ProcessesThatLeaveTheGroupAreStoppedWithTheTrial) {
  const bool cgroups = TrialCgroups().available();
  if (!cgroups) std::cout << "cgroups unavailable here (" << TrialCgroups().unavailable_reason() << "): the fallback only\n";
  for (const bool use_cgroups : {true, false}) {
    if (use_cgroups && !cgroups) continue;
    if (use_cgroups) ::unsetenv("PARATUNE_TRIAL_CGROUPS");
    else ::setenv("PARATUNE_TRIAL_CGROUPS", "off", 1);
    const std::string mode = use_cgroups ? "cgroup" : "environment";
    // Ends by itself, leaving the escaped process behind.
    TrialLaunch l = launch("escape-" + mode, {"--steps", "2", "--ignore-sigterm"});
    l.argv.insert(l.argv.end(), {"--escape", (l.dir.parent_path() / ("escaped-" + mode)).string()});
    TrialResult r = run_one(l);
    EXPECT_EQ(r.status, TrialStatus::kCompleted) << mode << ": " << r.reason;
    pid_t escaped = escaped_pid(l.dir.parent_path() / ("escaped-" + mode));
    ASSERT_GT(escaped, 0) << mode;
    EXPECT_TRUE(process_gone(escaped)) << mode << ": the escaped process " << escaped << " outlived its trial";
    // Stopped by paratune (hung).
    TrialLimits limits;
    limits.hang_s = 0.5;
    limits.grace_s = 0.2;
    l = launch("escape-hung-" + mode, {"--hang-at", "2"}, limits);
    l.argv.insert(l.argv.end(), {"--escape", (l.dir.parent_path() / ("escaped-hung-" + mode)).string()});
    r = run_one(l);
    EXPECT_EQ(r.status, TrialStatus::kTimeout) << mode << ": " << r.reason;
    escaped = escaped_pid(l.dir.parent_path() / ("escaped-hung-" + mode));
    EXPECT_TRUE(process_gone(escaped)) << mode << ": the escaped process " << escaped << " outlived its stopped trial";
  }
  ::unsetenv("PARATUNE_TRIAL_CGROUPS");
  if (!cgroups) return;
  // With an empty environment only the cgroup knows it.
  TrialLaunch l = launch("escape-bare", {"--steps", "2", "--ignore-sigterm", "--escape-bare"});
  l.argv.insert(l.argv.end(), {"--escape", (l.dir.parent_path() / "escaped-bare").string()});
  const TrialResult r = run_one(l);
  EXPECT_EQ(r.status, TrialStatus::kCompleted) << r.reason;
  const pid_t escaped = escaped_pid(l.dir.parent_path() / "escaped-bare");
  EXPECT_TRUE(process_gone(escaped)) << "the bare escaped process " << escaped << " outlived its trial";
}

TEST(Runner, SearchStopsTrialsEarlyAndMaxStepsEndsThem) {
  TrialResult r = run_one(launch("early", {"--steps", "100"}),
                          [](const std::string&, const StepReport& s, const TrialOutput&) { return s.step < 3; });
  EXPECT_EQ(r.status, TrialStatus::kEarlyStopped);
  EXPECT_GE(r.output.steps.size(), 3u);
  EXPECT_LT(r.output.steps.size(), 100u);
  EXPECT_TRUE(group_gone(r.process_group));

  // A program that ignores PARATUNE_MAX_STEPS is stopped once it reported them, as completed.
  TrialLaunch l = launch("capped", {"--steps", "1000"});
  l.max_steps = 4;
  r = run_one(l);
  EXPECT_EQ(r.status, TrialStatus::kCompleted) << r.reason;
  EXPECT_EQ(r.output.steps.size(), 4u);
}

TEST(Runner, SlotsRunInParallelWithTheirOwnDevicesAndInterruptStopsAll) {
  LocalBackend backend(2, parse_slot_devices("0,1;2,3"));
  TrialRunner runner(backend);
  std::vector<std::filesystem::path> records;
  for (int i = 0; i < 2; ++i) {
    records.push_back(runner_dir("slot" + std::to_string(i)).string() + ".txt");
    runner.start(launch("slot" + std::to_string(i), {"--record", records.back().string(), "--steps", "1000"}));
  }
  EXPECT_EQ(runner.free_slots(), 0);
  EXPECT_THROW(runner.start(launch("third", {})), Error);
  runner.wait(0.3);
  EXPECT_EQ(runner.running().size(), 2u);
  runner.interrupt_all("the controller got SIGINT");
  std::vector<TrialResult> done;
  for (int i = 0; i < 100 && done.size() < 2; ++i) {
    auto more = runner.wait(0.1);
    done.insert(done.end(), more.begin(), more.end());
  }
  ASSERT_EQ(done.size(), 2u);
  for (const TrialResult& r : done) {
    EXPECT_EQ(r.status, TrialStatus::kInterrupted);
    EXPECT_EQ(r.reason, "the controller got SIGINT");
    EXPECT_TRUE(group_gone(r.process_group));
  }
  EXPECT_NE(read_file(records[0]).find("CUDA_VISIBLE_DEVICES=0,1\n"), std::string::npos);
  EXPECT_NE(read_file(records[1]).find("CUDA_VISIBLE_DEVICES=2,3\n"), std::string::npos);
  EXPECT_TRUE(runner.idle());

  EXPECT_THROW(parse_slot_devices("0,1;;2"), Error);
  EXPECT_THROW(parse_slot_devices("a"), Error);
  EXPECT_THROW(LocalBackend(3, {"0", "1"}), Error);
  EXPECT_EQ(parse_trial_status("early-stopped"), TrialStatus::kEarlyStopped);
  EXPECT_THROW(parse_trial_status("done"), Error);
}

}  // namespace
}  // namespace paratune::trial
