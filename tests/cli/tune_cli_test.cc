// End-to-end: `paratune tune` and `paratune study show` with real trial processes
// (tests/trial/fake_trial.cc), including a controller killed with SIGKILL and resumed.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cctype>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <regex>
#include <set>
#include <thread>

#include "cli_util.h"
#include "paratune/store/sqlite_store.h"
#include "../support/test_files.h"

namespace {

using paratune::testing::write_file;
using paratune::testing::Result;
using paratune::testing::run;

std::filesystem::path tune_cli_dir(const std::string& name) { return paratune::testing::fresh_test_dir("paratune_tune_cli", name); }

// Live processes (not zombies: those have an empty environment) of trials under `trials_dir`.
int live_trial_processes(const std::filesystem::path& trials_dir) {
  const std::string prefix = "PARATUNE_TRIAL_DIR=" + trials_dir.string();
  int n = 0;
  for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
    std::ifstream in(entry.path() / "environ", std::ios::binary);
    std::string var;
    while (std::getline(in, var, '\0'))
      if (var.rfind(prefix, 0) == 0) {
        ++n;
        break;
      }
  }
  return n;
}

const char* kSpace = R"(parameters:
  st: [0.04, 0.05, 0.06]
  k: [1, 2, 3, 4]
)";

std::string tune_args(const std::filesystem::path& dir, const std::string& extra = "") {
  return "tune --space " + (dir / "space.yaml").string() + " --study " + (dir / "s.db").string() +
         " --command '" + PARATUNE_FAKE_TRIAL + " --step-time {st} --grandchild --ignore-sigterm --log-run " +
         (dir / "runs.txt").string() + "' --steps 8 --parallel 2 --grace 0.3s --algo random --seed 11 " + extra;
}

// `paratune tune_args(dir)` in the background, its output in dir/controller.out.
pid_t start_controller(const std::filesystem::path& dir) {
  const pid_t pid = fork();
  if (pid == 0) {
    const std::string command = std::string("exec ") + PARATUNE_BINARY + " " + tune_args(dir) + " > " +
                                (dir / "controller.out").string() + " 2>&1";
    execl("/bin/sh", "sh", "-c", command.c_str(), nullptr);
    _exit(127);
  }
  return pid;
}

// Trials of the study in dir/s.db with `status`.
int count_trials(const std::filesystem::path& dir, const std::string& status) {
  if (!std::filesystem::exists(dir / "s.db")) return 0;
  const paratune::store::SqliteStudyStore store(dir / "s.db");
  int found = 0;
  for (const auto& study : store.studies())
    for (const auto& t : store.trials(study.id)) found += t.status == status;
  return found;
}

// Waits (up to 15 s) until at least `n` trials have `status`; returns how many.
int wait_for_trials(const std::filesystem::path& dir, const std::string& status, int n) {
  int found = 0;
  for (int i = 0; i < 300 && found < n; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    found = count_trials(dir, status);
  }
  return found;
}

TEST(TuneCli, CtrlCStopsTrialsStoresThemInterruptedAndExits130) {
  const auto dir = tune_cli_dir("sigint");
  // Trials of 4 s and more: still running when the SIGINT comes, however slowly (sanitizers) the
  // refused controllers below start and stop.
  write_file(dir / "space.yaml", "parameters:\n  st: [0.5, 0.6, 0.7]\n  k: [1, 2, 3, 4]\n");
  const pid_t controller = start_controller(dir);
  ASSERT_GT(controller, 0);
  ASSERT_EQ(wait_for_trials(dir, "running", 2), 2) << "the study did not get going";
  // A second controller on the same study file is refused.
  const Result second = run(tune_args(dir));
  EXPECT_EQ(second.exit_code, 2) << second.output;
  EXPECT_NE(second.output.find("another paratune controller"), std::string::npos) << second.output;
  // So is one that reaches the file through a symlink or a hard link (issue 21: the lock was per
  // path, and such a controller re-ran every point and killed the first one's trials): the symlink
  // meets the lock; a file with a second name is refused before that (issue 39: SQLite's log is per
  // name).
  for (const char* other : {"symlinked.db", "hardlinked.db"}) {
    const bool symlink = std::string(other) == "symlinked.db";
    if (symlink) std::filesystem::create_symlink(dir / "s.db", dir / other);
    else std::filesystem::create_hard_link(dir / "s.db", dir / other);
    std::string args = tune_args(dir);
    args.replace(args.find((dir / "s.db").string()), (dir / "s.db").string().size(), (dir / other).string());
    const Result linked = run(args);
    EXPECT_EQ(linked.exit_code, 2) << other << ": " << linked.output;
    const std::string refusal = symlink ? "another paratune controller" : "the file has 2 names (hard links)";
    EXPECT_NE(linked.output.find(refusal), std::string::npos) << other << ": " << linked.output;
  }
  std::filesystem::remove(dir / "hardlinked.db");  // one name again, for the reads below
  EXPECT_EQ(count_trials(dir, "running"), 2) << "the refused controllers touched the first one's trials";
  EXPECT_EQ(count_trials(dir, "oom"), 0);
  ::kill(controller, SIGINT);
  int status = 0;
  ::waitpid(controller, &status, 0);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 130);
  EXPECT_EQ(count_trials(dir, "interrupted"), 2);
  EXPECT_EQ(count_trials(dir, "running"), 0);
  EXPECT_EQ(live_trial_processes(dir / "s.trials"), 0);  // stopped by the controller itself, before it exited
}

// Issue 21: failed trials were never run again on resume. --retry-failed does (off by default),
// and the summary counts them.
TEST(TuneCli, RetryFailedRunsFailedPointsAgainOnResume) {
  const auto dir = tune_cli_dir("retry");
  write_file(dir / "space.yaml", "parameters:\n  st: [0.01]\n  behave: [ok, crash]\n");
  const std::string args = "tune --space " + (dir / "space.yaml").string() + " --study " + (dir / "s.db").string() +
                           " --command '" + PARATUNE_FAKE_TRIAL + " --step-time {st} --behave {behave} --log-run " +
                           (dir / "runs.txt").string() + "' --steps 4";
  const auto runs = [&] {
    std::ifstream in(dir / "runs.txt");
    int n = 0;
    for (std::string line; std::getline(in, line);) n += line.find("crash") != std::string::npos;
    return n;
  };
  Result r = run(args);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(runs(), 1);
  r = run(args);  // resumed: the failed point stays failed
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(runs(), 1) << r.output;
  r = run(args + " --retry-failed --json");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(runs(), 2) << r.output;
  const auto j = nlohmann::json::parse(r.output.substr(r.output.find("\n{") + 1));
  EXPECT_EQ(j["retried_failed"], 1) << r.output;
  EXPECT_EQ(count_trials(dir, "failed"), 1);  // the new run failed again
  EXPECT_EQ(count_trials(dir, "interrupted"), 1);  // the first one, with why it failed
  const paratune::store::SqliteStudyStore store(dir / "s.db");
  bool kept_reason = false;
  for (const auto& t : store.trials(store.studies().front().id))
    kept_reason = kept_reason || t.reason.rfind("retried by --retry-failed; it had failed: exit code 3", 0) == 0;
  EXPECT_TRUE(kept_reason);
}

TEST(TuneCli, JsonHasTheDocumentedFieldsAndStudyShowAgrees) {
  const auto dir = tune_cli_dir("json");
  write_file(dir / "space.yaml", "parameters:\n  st: [0.02, 0.01]\n  behave: [ok, crash]\n");
  const Result r = run("tune --space " + (dir / "space.yaml").string() + " --study " + (dir / "s.db").string() +
                       " --command '" + PARATUNE_FAKE_TRIAL + " --step-time {st} --behave {behave}' --steps 4 --json");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const std::string json_text = r.output.substr(r.output.find("\n{") + 1);  // progress lines come first
  const auto j = nlohmann::json::parse(json_text);
  for (const char* key : {"params", "throughput", "throughput_ci", "command"}) EXPECT_TRUE(j["best"].contains(key)) << key;
  EXPECT_EQ(j["best"]["params"]["st"], 0.01);
  EXPECT_EQ(j["best"]["params"]["behave"], "ok");
  ASSERT_EQ(j["trials"].size(), 4u);
  for (const auto& t : j["trials"])
    for (const char* key : {"params", "status", "throughput", "peak_memory_bytes", "steps", "reason"})
      EXPECT_TRUE(t.contains(key)) << key;
  EXPECT_EQ(j["status_counts"]["completed"], 2);
  EXPECT_EQ(j["status_counts"]["failed"], 2);

  const Result show = run("study show " + (dir / "s.db").string() + " --json");
  ASSERT_EQ(show.exit_code, 0) << show.output;
  const auto s = nlohmann::json::parse(show.output);
  EXPECT_EQ(s["best"], j["best"]);
  EXPECT_EQ(s["trials"], j["trials"]);
  const Result text = run("study show " + (dir / "s.db").string());
  EXPECT_NE(text.output.find("best: trial"), std::string::npos) << text.output;
  EXPECT_NE(text.output.find("exit code 3"), std::string::npos) << text.output;  // the crash's reason
}

TEST(TuneCli, KilledControllerLeavesNoProcessAndResumesWithoutRerunningFinishedTrials) {
  const auto dir = tune_cli_dir("kill");
  write_file(dir / "space.yaml", kSpace);
  const pid_t controller = start_controller(dir);
  // Kill it with SIGKILL once some trials finished and others run.
  const int finished = wait_for_trials(dir, "completed", 3);
  ASSERT_GE(finished, 3) << "the study did not get going";
  ::kill(controller, SIGKILL);
  ::waitpid(controller, nullptr, 0);

  // Its watchdog stops the running trials' groups (grandchildren that ignore SIGTERM included).
  int left = -1;
  for (int i = 0; i < 60 && left != 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    left = live_trial_processes(dir / "s.trials");
  }
  EXPECT_EQ(left, 0) << "processes of a killed controller's trials are still alive";

  std::map<std::string, std::string> before;  // params -> status of trials stored by the killed run
  {
    const paratune::store::SqliteStudyStore store(dir / "s.db");
    for (const auto& t : store.trials(store.studies().at(0).id)) before[t.params_json] = t.status;
  }
  const Result r = run(tune_args(dir, "--json"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto j = nlohmann::json::parse(r.output.substr(r.output.find("\n{") + 1));
  EXPECT_EQ(j["reused"].get<int>(), finished);
  std::map<std::string, int> completed;
  for (const auto& t : j["trials"])
    if (t["status"] == "completed") ++completed[t["params"].dump()];
  EXPECT_EQ(completed.size(), 12u);
  for (const auto& [params, n] : completed) EXPECT_EQ(n, 1) << params << " completed twice";
  // Every point ran once, except those the kill interrupted, which ran again: twice, or once when
  // the kill came after the study recorded the trial as running but before its process wrote its
  // start (the controller records a trial before it spawns it).
  std::ifstream runs(dir / "runs.txt");
  std::map<std::string, int> started;
  std::string id, params;
  while (runs >> id >> params) ++started[params];
  EXPECT_EQ(started.size(), 12u);
  for (const auto& [p, n] : started) {
    const bool interrupted = before.contains(p) && before[p] == "running";
    if (interrupted) {
      EXPECT_GE(n, 1) << p;
      EXPECT_LE(n, 2) << p;
    } else {
      EXPECT_EQ(n, 1) << p;
    }
  }
  EXPECT_EQ(live_trial_processes(dir / "s.trials"), 0);
}

TEST(TuneCli, DerivedSpaceRunsTheModelsFavouritesFirst) {
  const auto dir = tune_cli_dir("derived");
  const Result r = run("tune --model llama3-8b --cluster h100x8 --seq-len 4096 --global-batch 64 --fix pp=1,cp=1 "
                       "--study " + (dir / "s.db").string() + " --command '" + PARATUNE_FAKE_TRIAL +
                       " --step-time 0.01 --record " + (dir / "record.txt").string() +
                       " --config={config} --gpus={gpus}' --steps 3 --max-trials 1 --json");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  std::ifstream in(dir / "record.txt");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_NE(text.find("arg=--gpus=8\n"), std::string::npos) << text;
  // {config} is a paratune configuration: estimate accepts it as it is.
  const std::size_t at = text.find("arg=--config=");
  ASSERT_NE(at, std::string::npos) << text;
  const std::string config = text.substr(at + 13, text.find('\n', at) - at - 13);
  const Result e = run("estimate --model llama3-8b --cluster h100x8 --seq-len 4096 --global-batch 64 --config " + config);
  EXPECT_EQ(e.exit_code, 0) << config << "\n" << e.output;
}

// Issue 39, item 10: the start line said "N valid points" and the summary "N valid points of
// 2211840 combinations" (the product of the derived parameters' value counts, which nothing
// enumerated); and a dense model's etp reached the command as 0, a degree no framework accepts.
TEST(TuneCli, DerivedSpaceStatesOneSizeAndPassesTheResolvedEtp) {
  const auto dir = tune_cli_dir("derived_size");
  const Result r = run("tune --model llama3-8b --cluster h100x8 --seq-len 4096 --global-batch 64 --fix pp=1,cp=1 "
                       "--study " + (dir / "s.db").string() + " --command '" + PARATUNE_FAKE_TRIAL +
                       " --step-time 0.01 --record " + (dir / "record.txt").string() +
                       " --tp={tp} --etp={etp} --config={config}' --steps 3 --max-trials 1");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  // One phrase, the same figures, at the start and in the summary; no product of value counts.
  std::smatch start;
  ASSERT_TRUE(std::regex_search(r.output, start,
                                std::regex(R"((?:^|\n)paratune tune: (\d+ valid points \(of \d+ configurations the planner )"
                                           R"(enumerated; the rest are predicted not to fit in memory\)), grid search)")))
      << r.output;
  const std::string phrase = start[1];
  EXPECT_NE(r.output.find("): " + phrase + "\n"), std::string::npos) << "summary differs from: " << phrase << "\n"
                                                                    << r.output;
  EXPECT_EQ(r.output.find("combinations"), std::string::npos) << r.output;

  std::ifstream in(dir / "record.txt");
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const auto arg = [&](const std::string& key) {
    const std::size_t at = text.find("arg=--" + key + "=");
    if (at == std::string::npos) return std::string("(missing)");
    const std::size_t from = at + 7 + key.size();
    return text.substr(from, text.find('\n', at) - from);
  };
  EXPECT_EQ(arg("etp"), arg("tp")) << text;  // dense: expert TP is tp, as Megatron's default
  EXPECT_EQ(arg("config").find("etp=0"), std::string::npos) << text;
}

// Issue 39, item 10: a hyperparameter study with neither --max-trials nor --budget runs until its
// sampler has nothing left or Ctrl-C (TPE: forever); say so on stderr, as Python's tune() does.
TEST(TuneCli, HyperparameterStudyWithoutALimitWarns) {
  const auto dir = tune_cli_dir("no_limit");
  std::ofstream(dir / "space.yaml") << "parameters:\n  a: [1, 2]\n  b: [1]\n  c: [2]\n";
  const std::string warning = "warning: no --max-trials/--budget: trials run until the grid's end or Ctrl-C";
  const auto tune = [&](const std::string& study, const std::string& extra) {
    return run(fmt::format("tune --space {} --study {} --algo grid --steps 3 --objective value --direction minimize "
                           "--command '{} abc --step-time-is-value' {}",
                           (dir / "space.yaml").string(), (dir / study).string(), PARATUNE_FUNCTION_TRIAL, extra));
  };
  const Result unlimited = tune("a.db", "");
  ASSERT_EQ(unlimited.exit_code, 0) << unlimited.output;
  EXPECT_NE(unlimited.output.find(warning), std::string::npos) << unlimited.output;
  for (const std::string limit : {"--max-trials 2", "--budget 10m"}) {
    const Result limited = tune(limit == "--budget 10m" ? "c.db" : "b.db", limit);
    ASSERT_EQ(limited.exit_code, 0) << limit << ": " << limited.output;
    EXPECT_EQ(limited.output.find("warning: no --max-trials"), std::string::npos) << limit << ": " << limited.output;
  }
}

TEST(TuneCli, BadInputExitsTwoBeforeAnythingRuns) {
  const auto dir = tune_cli_dir("bad");
  write_file(dir / "space.yaml", kSpace);
  const std::string study = " --study " + (dir / "s.db").string();
  Result r = run("tune --space " + (dir / "space.yaml").string() + study + " --command 'train.py --tp {tp}'");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.output.find("{tp}"), std::string::npos) << r.output;
  r = run("tune --space " + (dir / "nope.yaml").string() + study + " --command 'x'");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.output.find("nope.yaml"), std::string::npos) << r.output;
  r = run("tune" + study + " --command 'x'");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.output.find("--space"), std::string::npos) << r.output;
  r = run("tune --space " + (dir / "space.yaml").string() + study + " --command 'x {st}' --budget 5parsecs");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.output.find("--budget"), std::string::npos) << r.output;
  r = run("tune --space " + (dir / "space.yaml").string() + study + " --command 'x {st}' --algo bayes");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.output.find("grid, random"), std::string::npos) << r.output;
  r = run("tune --space " + (dir / "space.yaml").string() + study + " --command 'x {st}' --parallel 2 --slot-devices 0");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_FALSE(std::filesystem::exists(dir / "s.trials"));
  // An input error found after the store opened leaves no study file behind.
  r = run("tune --space " + (dir / "space.yaml").string() + study + " --command 'x {nope}'");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.output.find("unknown placeholder 'nope'"), std::string::npos) << r.output;
  EXPECT_FALSE(std::filesystem::exists(dir / "s.db"));
  r = run("tune --space " + (dir / "space.yaml").string() + study + " --command 'x {st}' --memory-limit 20");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.output.find("--memory-limit: 20 B is less than any trial's memory; a bare number is in bytes"),
            std::string::npos)
      << r.output;
  r = run("study show " + (dir / "missing.db").string());
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.output.find("missing.db"), std::string::npos) << r.output;
  // A trials directory that cannot be one fails before the first trial, not inside it.
  write_file(dir / "a_file", "x");
  for (const std::string& trials : {(dir / "a_file").string(), (dir / "a_file" / "sub").string()}) {
    r = run("tune --space " + (dir / "space.yaml").string() + study + " --command 'x {st}' --trials-dir " + trials);
    EXPECT_EQ(r.exit_code, 2) << r.output;
    EXPECT_NE(r.output.find("--trials-dir " + trials + ": "), std::string::npos) << r.output;
    EXPECT_EQ(count_trials(dir, "running") + count_trials(dir, "failed"), 0);
  }
}

// Issue 39, item 8: trials whose directory is on a full file system left empty stdout.log files
// and no word of it (the writes were not checked). Now each failure is said on stderr and kept in
// the trial's reason; the trials' results (parsed from the pipe) and the study stand. The full
// file system is a small tmpfs in a private mount namespace (unshare -m); where namespaces cannot
// be made (no CAP_SYS_ADMIN), the test skips and says so.
TEST(TuneCli, TrialLogsOnAFullDiskAreReportedAndTheStudyGoesOn) {
  const auto dir = tune_cli_dir("full_logs");
  write_file(dir / "space.yaml", "parameters:\n  st: [0.01, 0.02]\n");
  const std::string small = (dir / "small").string();
  std::filesystem::create_directories(small);
  const Result probe = paratune::testing::run_command("unshare -m sh -c 'mount -t tmpfs -o size=64k tmpfs " + small +
                                                      " && umount " + small + "'");
  if (probe.exit_code != 0)
    GTEST_SKIP() << "cannot mount a tmpfs in a private mount namespace here (unshare -m, mount: needs "
                    "CAP_SYS_ADMIN): "
                 << probe.output;
  write_file(dir / "script.sh",
             "mount -t tmpfs -o size=64k tmpfs " + small + " || exit 99\n" +
                 // Full before the first trial: directories and empty files can still be made.
                 "dd if=/dev/zero of=" + small + "/fill bs=4k > /dev/null 2>&1\n" + PARATUNE_BINARY +
                 " tune --space " + (dir / "space.yaml").string() + " --study " + (dir / "s.db").string() +
                 " --trials-dir " + small + "/trials --command '" + PARATUNE_FAKE_TRIAL +
                 " --step-time {st}' --steps 4 --algo grid\necho rc=$?\n");
  const Result r = paratune::testing::run_command("unshare -m sh " + (dir / "script.sh").string());
  EXPECT_NE(r.output.find("rc=0"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("paratune: warning: trial "), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("/stdout.log: No space left on device; the rest of its output is not kept there"),
            std::string::npos)
      << r.output;
  EXPECT_EQ(count_trials(dir, "completed"), 2) << r.output;
  const paratune::store::SqliteStudyStore store(dir / "s.db");
  for (const auto& t : store.trials(store.studies().at(0).id)) {
    EXPECT_NE(t.reason.find("cannot write " + small + "/trials/"), std::string::npos) << t.reason;
    EXPECT_NE(t.reason.find("/stdout.log: No space left on device (the log is incomplete)"), std::string::npos)
        << t.reason;
  }
}

// A PostgreSQL locator with a port no server can have is bad input (exit 2) at once, not a store
// that is away for --store-retry (it was retried for 60 s, then exit 4: a hostile re-check of issue 39).
TEST(TuneCli, APostgresPortNoServerCanHaveIsBadInput) {
  const auto dir = tune_cli_dir("pg_port");
  write_file(dir / "space.yaml", kSpace);
  const Result r = run("tune --space " + (dir / "space.yaml").string() + " --command 'x {st}' --study-name s" +
                       " --study postgresql://paratune@127.0.0.1:99999/none --store-retry 30s");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("invalid port number"), std::string::npos) << r.output;
}

// Two studies of one SQLite file never share a trials directory (a hostile re-check of issue 39 found
// the second study's trial 1 writing into the first's trial-0001): "main" keeps s.trials, another
// study s.NAME.trials, and a name with '/' is refused there too.
TEST(TuneCli, TwoStudiesOfOneFileKeepTheirTrialsApart) {
  const auto dir = tune_cli_dir("two_studies");
  write_file(dir / "space.yaml", "parameters:\n  st: [0.01]\n");
  const std::string study = (dir / "s.db").string();
  for (const std::string name : {"main", "alpha"}) {
    const Result r = run("tune --space " + (dir / "space.yaml").string() + " --study " + study + " --study-name " +
                         name + " --steps 2 --max-trials 1 --command '" + PARATUNE_FAKE_TRIAL + " --step-time {st}'");
    ASSERT_EQ(r.exit_code, 0) << r.output;
  }
  EXPECT_TRUE(std::filesystem::exists(dir / "s.trials" / "trial-0001" / "stdout.log"));
  EXPECT_TRUE(std::filesystem::exists(dir / "s.alpha.trials" / "trial-0001" / "stdout.log"));
  const Result r = run("tune --space " + (dir / "space.yaml").string() + " --study " + study +
                       " --study-name a/b --steps 2 --max-trials 1 --command 'x {st}'");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("cannot contain '/'"), std::string::npos) << r.output;
}

// Issue 39, item 8: on PostgreSQL the default trials directory is STUDY-NAME.trials, so
// "--study-name ../../../x" put trials three directories up. A name with '/' is refused there
// (before any connection); NUL and control characters in a study name, in every store.
TEST(TuneCli, AStudyNameNeverLeadsTheTrialsDirectoryElsewhere) {
  const auto dir = tune_cli_dir("study_name");
  write_file(dir / "space.yaml", kSpace);
  const std::string space = " --space " + (dir / "space.yaml").string() + " --command 'x {st}'";
  const std::string postgres = " --study postgresql://paratune@nohost.invalid/none";
  for (const std::string name : {"../../../x", "/tmp/x", "a/b"}) {
    Result r = run("tune" + space + postgres + " --study-name '" + name + "'");
    EXPECT_EQ(r.exit_code, 2) << r.output;
    EXPECT_NE(r.output.find("--study-name '" + name + "': the study name also names its trials directory "
                            "(NAME.trials in the current directory on PostgreSQL, FILE.NAME.trials beside an SQLite "
                            "file), so it cannot contain '/'; give --trials-dir"),
              std::string::npos)
        << r.output;
    r = run("tune" + space + postgres + " --objective loss --direction minimize --study-name '" + name + "'");
    EXPECT_EQ(r.exit_code, 2) << r.output;
    EXPECT_NE(r.output.find("cannot contain '/'"), std::string::npos) << r.output;
  }
  EXPECT_FALSE(std::filesystem::exists("/tmp/x.trials"));
  // A control character (here ESC) in the name, with SQLite as with PostgreSQL.
  for (const std::string& study : {" --study " + (dir / "s.db").string(), postgres}) {
    const Result r = run("tune" + space + study + " --study-name 'a\x1b[31mb'");
    EXPECT_EQ(r.exit_code, 2) << r.output;
    EXPECT_NE(r.output.find("--study-name 'a\\x1B[31mb': contains the control character \\x1B"), std::string::npos)
        << r.output;
  }
  EXPECT_FALSE(std::filesystem::exists(dir / "s.db"));
}

// A trial's stderr may hold any bytes (Latin-1, terminal escapes): the study stores them as
// printable UTF-8 (\xNN for the rest), so the JSON outputs and the text never break on them.
TEST(TuneCli, TrialOutputThatIsNotUtf8IsStoredPrintable) {
  const auto dir = tune_cli_dir("latin1");
  write_file(dir / "space.yaml", "parameters:\n  behave: [ok, latin1]\n");
  write_file(dir / "trial.sh", std::string("#!/bin/sh\nif [ \"$1\" = latin1 ]; then printf 'caf\\351 \\033[2Jgone\\n' >&2; exit 1; fi\nexec ") +
                                   PARATUNE_FAKE_TRIAL + " --step-time 0.01\n");
  std::filesystem::permissions(dir / "trial.sh", std::filesystem::perms::owner_all);
  const Result r = run("tune --space " + (dir / "space.yaml").string() + " --study " + (dir / "s.db").string() +
                       " --command '" + (dir / "trial.sh").string() + " {behave}' --steps 4 --json");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto j = nlohmann::json::parse(r.output.substr(r.output.find("\n{") + 1));
  std::string reason;
  for (const auto& t : j["trials"])
    if (t["params"]["behave"] == "latin1") reason = t["reason"].get<std::string>();
  EXPECT_EQ(reason, "exit code 1; last stderr line: caf\\xE9 \\x1B[2Jgone");
  const Result show = run("study show " + (dir / "s.db").string() + " --json");
  ASSERT_EQ(show.exit_code, 0) << show.output;
  EXPECT_EQ(nlohmann::json::parse(show.output)["trials"], j["trials"]);
  const Result text = run("study show " + (dir / "s.db").string());
  EXPECT_NE(text.output.find("caf\\xE9 \\x1B[2Jgone"), std::string::npos) << text.output;
  EXPECT_EQ(text.output.find('\x1B'), std::string::npos);
}

}  // namespace

namespace {

// Every search algorithm end to end on the simulated cluster's trial program (bench/simcluster):
// real processes, the study file, `study show`.
TEST(TuneCli, EveryAlgorithmRunsOnTheSimulatedCluster) {
  const std::string scenarios = std::string(PARATUNE_SOURCE_DIR) + "/bench/simcluster/scenarios";
  for (const char* algo : {"grid", "random", "bo", "xgboost", "costmodel", "oppa"}) {
    const std::filesystem::path dir = tune_cli_dir(std::string("sim_") + algo);
    const std::string study = (dir / "s.db").string();
    const Result r = run(fmt::format(
        "tune --space {0}/llama3-1b-3080.space.yaml --model {0}/llama3-1b.yaml --cluster {0}/rtx3080-16.yaml "
        "--seq-len 1024 --global-batch 64 --algo {1} --seed 2 --initial 3 --steps 10 --max-trials 12 "
        "--command '{2} --scenario llama3-1b-3080 --time-scale 0.0002' --study {3} --json",
        scenarios, algo, PARATUNE_SIM_TRIAL, study));
    ASSERT_EQ(r.exit_code, 0) << algo << "\n" << r.output;
    const auto json_start = r.output.find("{\n");
    ASSERT_NE(json_start, std::string::npos) << r.output;
    const nlohmann::json j = nlohmann::json::parse(r.output.substr(json_start));
    EXPECT_EQ(j["trials"].size(), 12u) << algo;
    EXPECT_TRUE(j["best"].is_object()) << algo;
    int predicted = 0, early = 0;
    for (const auto& t : j["trials"]) {
      predicted += !t["prediction"].is_null();
      early += t["status"] == "early-stopped";
    }
    const bool model_based = std::string(algo) != "grid" && std::string(algo) != "random";
    // After the 3 initial designs every model pick carries its prediction (plan-seeded designs too).
    if (model_based) EXPECT_GE(predicted, 9) << algo;
    else EXPECT_EQ(predicted, 0) << algo;
    if (std::string(algo) != "oppa") EXPECT_EQ(early, 0) << algo;  // only oppa stops trials early
    if (std::string(algo) == "oppa") {
      EXPECT_GT(early, 0) << r.output;
      const Result show = run("study show " + study);
      ASSERT_EQ(show.exit_code, 0) << show.output;
      EXPECT_NE(show.output.find("predicted vs measured"), std::string::npos) << show.output;
      EXPECT_NE(show.output.find("learned lengthscales"), std::string::npos) << show.output;
      EXPECT_NE(show.output.find("prior coefficients"), std::string::npos) << show.output;
    }
  }
}

// Batches: more slots than finished designs (the model has nothing to learn from yet) and the
// kriging believer with trials running.
TEST(TuneCli, ModelSearchesRunTrialsInParallel) {
  const std::string scenarios = std::string(PARATUNE_SOURCE_DIR) + "/bench/simcluster/scenarios";
  for (const char* algo : {"xgboost", "oppa", "costmodel"}) {
    const std::filesystem::path dir = tune_cli_dir(std::string("parallel_") + algo);
    const Result r = run(fmt::format(
        "tune --space {0}/qwen2-a5000.space.yaml --model qwen2-1.5b --cluster {0}/a5000-8.yaml --seq-len 1024 "
        "--global-batch 64 --algo {1} --initial 2 --parallel 3 --steps 8 --max-trials 9 "
        "--command '{2} --scenario qwen2-a5000 --time-scale 0.0005' --study {3} --json",
        scenarios, algo, PARATUNE_SIM_TRIAL, (dir / "s.db").string()));
    ASSERT_EQ(r.exit_code, 0) << algo << "\n" << r.output;
    const nlohmann::json j = nlohmann::json::parse(r.output.substr(r.output.find("{\n")));
    std::set<std::string> points;
    for (const auto& t : j["trials"]) points.insert(t["params"].dump());
    EXPECT_EQ(points.size(), j["trials"].size()) << algo;  // no point twice
    EXPECT_EQ(j["trials"].size(), 9u) << algo;
  }
}

TEST(TuneCli, ModelSearchFlagsAreChecked) {
  const std::filesystem::path dir = tune_cli_dir("bad_bayes");
  write_file(dir / "space.yaml", "parameters:\n  dp: [1, 2]\n");
  const std::string base = fmt::format("tune --space {} --command 'true' --study {} ", (dir / "space.yaml").string(),
                                       (dir / "s.db").string());
  Result r = run(base + "--algo oppa --min-steps 0");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.output.find("--min-steps: 0 must be an integer from 1"), std::string::npos) << r.output;
  r = run(base + "--algo oppa --seed-from-plan");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.output.find("--seed-from-plan"), std::string::npos) << r.output;
  r = run(base + "--algo hyperband");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.output.find("oppa"), std::string::npos) << r.output;
  // --min-steps is oppa's: its default (5) gives way to a shorter --steps, for every model search.
  for (const char* algo : {"bo", "oppa"}) {
    r = run(base + "--algo " + algo + " --steps 4 --max-trials 1");
    EXPECT_NE(r.exit_code, 2) << algo << ": " << r.output;
    EXPECT_EQ(r.output.find("--min-steps"), std::string::npos) << algo << ": " << r.output;
  }
  r = run(base + "--algo oppa --steps 4 --min-steps 6");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.output.find("--min-steps 6"), std::string::npos) << r.output;
}

// --seed-from-plan is what the docs (docs/tune.md) and --help say: on by default for oppa and
// costmodel with a model (it once read as off: CLI11 set the unset flag to false), off with
// --no-seed-from-plan, and the header line says which. The first trial's recorded source is the proof.
TEST(TuneCli, SeedFromPlanDefaultMatchesTheReadme) {
  std::ifstream readme_file(std::string(PARATUNE_SOURCE_DIR) + "/docs/tune.md");
  std::string readme;  // with every run of white space one space, so that rewrapping does not matter
  for (auto it = std::istreambuf_iterator<char>(readme_file); it != std::istreambuf_iterator<char>(); ++it)
    if (!std::isspace(static_cast<unsigned char>(*it))) readme += *it;
    else if (!readme.empty() && readme.back() != ' ') readme += ' ';
  const std::string documented = "`--seed-from-plan`, default for oppa and costmodel with a model";
  EXPECT_NE(readme.find(documented), std::string::npos) << "docs/tune.md no longer says: " << documented;

  const std::string scenarios = std::string(PARATUNE_SOURCE_DIR) + "/bench/simcluster/scenarios";
  struct Case {
    const char* algo;
    const char* flag;
    bool seeded;
  };
  for (const Case& c : {Case{"oppa", "", true}, Case{"costmodel", "", true}, Case{"oppa", "--no-seed-from-plan", false},
                        Case{"bo", "", false}, Case{"costmodel", "--seed-from-plan", true}}) {
    const std::string label = std::string(c.algo) + " " + c.flag;
    const std::filesystem::path dir = tune_cli_dir(std::string("seed_") + c.algo + (c.flag[0] ? "_flag" : ""));
    const Result r = run(fmt::format(
        "tune --space {0}/qwen2-a5000.space.yaml --model qwen2-1.5b --cluster {0}/a5000-8.yaml --seq-len 1024 "
        "--global-batch 64 --algo {1} {2} --initial 4 --steps 6 --max-trials 2 "
        "--command '{3} --scenario qwen2-a5000 --time-scale 0.0005' --study {4} --json",
        scenarios, c.algo, c.flag, PARATUNE_SIM_TRIAL, (dir / "s.db").string()));
    ASSERT_EQ(r.exit_code, 0) << label << "\n" << r.output;
    EXPECT_EQ(r.output.find("first 2 designs: the plan's best predictions (--seed-from-plan)") != std::string::npos,
              c.seeded)
        << label << "\n" << r.output;
    EXPECT_EQ(r.output.find("first designs: random") != std::string::npos, !c.seeded) << label << "\n" << r.output;
    const nlohmann::json j = nlohmann::json::parse(r.output.substr(r.output.find("{\n")));
    ASSERT_EQ(j["trials"].size(), 2u) << label;
    for (const auto& t : j["trials"]) {
      const std::string source = t["prediction"].value("source", "");
      EXPECT_EQ(source.find("the cost model's best prediction") != std::string::npos, c.seeded) << label << ": " << source;
    }
  }
  // Where there is nothing to seed from, asking for it is refused.
  const std::filesystem::path dir = tune_cli_dir("seed_refused");
  for (const char* algo : {"grid", "random", "bo", "xgboost"}) {
    const Result r = run(fmt::format(
        "tune --space {0}/qwen2-a5000.space.yaml --model qwen2-1.5b --cluster {0}/a5000-8.yaml --seq-len 1024 "
        "--global-batch 64 --algo {1} --seed-from-plan --command true --study {2}",
        scenarios, algo, (dir / "s.db").string()));
    EXPECT_EQ(r.exit_code, 2) << algo << "\n" << r.output;
    EXPECT_NE(r.output.find("--seed-from-plan"), std::string::npos) << r.output;
  }
}

}  // namespace

namespace {

// paratune-sim-trial plays configurations outside its scenario's space by parameter name (the
// README's tune example runs it over examples/tune/space.yaml): steps, an out-of-memory failure
// like PyTorch's, and a configuration the cluster cannot run.
TEST(TuneCli, SimTrialPlaysConfigurationsOfAnotherSpace) {
  const auto play = [](const std::string& params) {
    return paratune::testing::run_command(fmt::format("{} --scenario qwen2-a5000 --steps 3 --time-scale 0 --params '{}'",
                                                      PARATUNE_SIM_TRIAL, params));
  };
  Result r = play(R"({"dp": 2, "tp": 2, "pp": 2, "mbs": 1, "zero": 1, "ckpt": false})");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find(R"(@paratune {"step": 3, "step_time_s")"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("peak_memory_bytes"), std::string::npos) << r.output;
  r = play(R"({"dp": 8, "tp": 1, "pp": 1, "mbs": 4, "zero": 0, "ckpt": false})");  // 41 GiB on a 24 GB GPU
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("torch.OutOfMemoryError: CUDA out of memory"), std::string::npos) << r.output;
  r = play(R"({"dp": 3, "tp": 1, "pp": 1, "mbs": 1, "zero": 0, "ckpt": false})");  // 3 of 8 GPUs
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("invalid configuration"), std::string::npos) << r.output;
}

// Issue 39, item 11: installed (the .deb: /usr/bin and /usr/share/paratune/scenarios), the program
// reads the scenarios installed beside it, not the source tree's path it was compiled with. A copy
// in PREFIX/bin with PREFIX/share/paratune/scenarios: with the scenarios there it plays them; with
// that directory present but empty it fails naming it (it read there, not the source tree);
// --scenarios-dir that is no directory is a clear error.
TEST(TuneCli, SimTrialReadsTheScenariosInstalledBesideIt) {
  const auto prefix = tune_cli_dir("sim_installed");
  std::filesystem::create_directories(prefix / "bin");
  std::filesystem::copy_file(PARATUNE_SIM_TRIAL, prefix / "bin" / "paratune-sim-trial");
  const std::filesystem::path installed = prefix / "share" / "paratune" / "scenarios";
  std::filesystem::create_directories(installed);
  const auto play = [&](const std::string& extra) {
    return paratune::testing::run_command(
        fmt::format("{} --scenario qwen2-a5000 --steps 2 --time-scale 0 --params '{}' {}",
                    (prefix / "bin" / "paratune-sim-trial").string(),
                    R"({"dp": 2, "tp": 2, "pp": 2, "mbs": 1, "zero": 1, "ckpt": false})", extra));
  };
  Result r = play("");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find(installed.string()), std::string::npos) << "did not read " << installed << ": " << r.output;
  for (const auto& entry :
       std::filesystem::directory_iterator(std::filesystem::path(PARATUNE_SOURCE_DIR) / "bench/simcluster/scenarios"))
    std::filesystem::copy_file(entry.path(), installed / entry.path().filename());
  r = play("");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find(R"(@paratune {"step": 2, "step_time_s")"), std::string::npos) << r.output;
  r = paratune::testing::run_command((prefix / "bin" / "paratune-sim-trial").string() + " --print-scenarios-dir");
  EXPECT_EQ(r.output, installed.string() + "\n");
  // The build tree's binary, with nothing installed beside it, reads the source tree's.
  r = paratune::testing::run_command(std::string(PARATUNE_SIM_TRIAL) + " --print-scenarios-dir");
  EXPECT_EQ(r.output, (std::filesystem::path(PARATUNE_SOURCE_DIR) / "bench/simcluster/scenarios").string() + "\n");
  r = play("--scenarios-dir " + (prefix / "nowhere").string());
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("--scenarios-dir " + (prefix / "nowhere").string() + ": not a directory"), std::string::npos)
      << r.output;
}

}  // namespace
