// Trials that stay alive (docs/trial-protocol.md, "Serving"): `paratune tune --serve` with a real
// serving program (tests/hpo/serving_trial.py, whose curve depends on its whole history): ASHA's
// promotions from a process's memory and from spilled checkpoints draw the curves process-per-run
// draws; a serving process that crashes or hangs fails only its trial; early stops cancel a trial
// and leave its process serving; a program that does not serve runs each trial as a process; bad
// combinations are refused.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "../cli/cli_util.h"
#include "../support/test_files.h"
#include "paratune/store/sqlite_store.h"

namespace {
namespace serve_test {

using paratune::testing::Result;
using paratune::testing::run;
using paratune::testing::write_file;

constexpr const char* kSpace = R"(parameters:
  x1: {type: float, low: -5, high: 10}
  x2: {type: float, low: 0, high: 15}
)";

std::filesystem::path study_dir(const std::string& name) {
  const auto dir = paratune::testing::fresh_test_dir("paratune_serve", name);
  write_file(dir / "space.yaml", kSpace);
  return dir;
}

std::string program(const std::string& args) {
  return fmt::format("/usr/bin/python3 {}/tests/hpo/serving_trial.py --steps {{steps}} {}", PARATUNE_SOURCE_DIR, args);
}

Result tune(const std::filesystem::path& dir, const std::string& command, const std::string& extra) {
  return run(fmt::format("tune --space {} --study {} --command '{}' --objective value --direction minimize --json {}",
                         (dir / "space.yaml").string(), (dir / "s.db").string(), command, extra));
}

nlohmann::json summary(const Result& r) { return nlohmann::json::parse(r.output.substr(r.output.find("{\n"))); }

std::vector<paratune::store::StoredTrial> stored(const std::filesystem::path& dir) {
  const paratune::store::SqliteStudyStore store(dir / "s.db");
  return store.trials(store.studies().front().id, true);
}

// Each trial's parameters, status, rung and every (step, value) it reported, in order.
std::map<int, std::string> outcomes(const std::filesystem::path& dir) {
  std::map<int, std::string> out;
  for (const auto& t : stored(dir)) {
    std::string curve;
    for (const auto& m : t.metrics) curve += fmt::format(" {}:{:.17g}", m.step.value_or(-1), m.value);
    out[t.number] = fmt::format("{} {} rung {} steps {} |{}", t.params_json, t.status, t.rung.value_or(-1), t.steps, curve);
  }
  return out;
}

std::string log_of(const paratune::store::StoredTrial& t) {
  std::ifstream in(std::filesystem::path(t.dir) / "stdout.log");
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

int count(const std::string& text, const std::string& what) {
  int n = 0;
  for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

int count_in_logs(const std::filesystem::path& dir, const std::string& what) {
  int n = 0;
  for (const auto& t : stored(dir)) n += count(log_of(t), what);
  return n;
}

constexpr const char* kAsha = "--algo random --seed 4 --pruner asha --eta 3 --min-resource 1 --steps 9 --max-trials 12";

}  // namespace serve_test
}  // namespace

using namespace serve_test;

// One slot, so the order of runs is the same every way: the served study, its paused trials kept
// in memory or all spilled to checkpoints at once, gives every trial the outcome and the curve,
// value for value, that a process per run gives; one process served every run.
TEST(ServedTrials, AshaFromMemoryAndFromSpilledCheckpointsDrawsTheCurvesOfProcessPerRun) {
  const auto alone = study_dir("asha-alone"), memory = study_dir("asha-memory"), spilled = study_dir("asha-spilled");
  const Result a = tune(alone, program(""), std::string(kAsha) + " --parallel 1");
  ASSERT_EQ(a.exit_code, 0) << a.output;
  const Result m = tune(memory, program(""), std::string(kAsha) + " --parallel 1 --serve");
  ASSERT_EQ(m.exit_code, 0) << m.output;
  const Result s = tune(spilled, program("--keep 0"), std::string(kAsha) + " --parallel 1 --serve");
  ASSERT_EQ(s.exit_code, 0) << s.output;

  const auto expected = outcomes(alone);
  ASSERT_EQ(expected.size(), 12u);
  EXPECT_EQ(outcomes(memory), expected);
  EXPECT_EQ(outcomes(spilled), expected);
  EXPECT_EQ(summary(a)["serving_processes"], 0);
  EXPECT_EQ(summary(m)["serving_processes"], 1) << m.output;
  EXPECT_EQ(summary(s)["serving_processes"], 1) << s.output;
  const int promotions = summary(a)["promotions"].get<int>();
  ASSERT_GT(promotions, 0);
  // Every promotion resumed: from memory, or from the checkpoint its spill wrote.
  EXPECT_EQ(count_in_logs(memory, "from memory"), promotions);
  EXPECT_EQ(count_in_logs(spilled, "from memory"), 0);
  EXPECT_EQ(count_in_logs(spilled, "resumed from"), promotions);
  EXPECT_GE(count_in_logs(spilled, "spilled "), promotions);
  EXPECT_EQ(count_in_logs(alone, "resumed from"), promotions);
}

// Two slots, each promotion's state on disk (--keep 0): a promotion may go to the other slot's
// process and resume there; every trial's curve is still the one a process per run draws for its
// parameters (a curve depends on its whole history).
TEST(ServedTrials, APromotionOnAnotherSlotsProcessResumesFromTheCheckpoint) {
  const auto alone = study_dir("two-alone"), spilled = study_dir("two-spilled");
  const Result a = tune(alone, program(""), std::string(kAsha) + " --parallel 1");
  ASSERT_EQ(a.exit_code, 0) << a.output;
  const Result s = tune(spilled, program("--keep 0"), std::string(kAsha) + " --parallel 2 --serve");
  ASSERT_EQ(s.exit_code, 0) << s.output;
  EXPECT_EQ(summary(s)["serving_processes"], 2) << s.output;
  // The curve of each configuration, as far as both studies trained it.
  std::map<std::string, std::vector<std::pair<std::int64_t, double>>> reference;
  for (const auto& t : stored(alone))
    for (const auto& m : t.metrics) reference[t.params_json].emplace_back(m.step.value_or(-1), m.value);
  int compared = 0;
  for (const auto& t : stored(spilled)) {
    ASSERT_TRUE(reference.contains(t.params_json)) << "the same seed proposes the same configurations";
    const auto& want = reference[t.params_json];
    for (std::size_t i = 0; i < t.metrics.size() && i < want.size(); ++i, ++compared) {
      EXPECT_EQ(t.metrics[i].step.value_or(-1), want[i].first) << t.params_json;
      EXPECT_EQ(t.metrics[i].value, want[i].second) << t.params_json << " step " << want[i].first;
    }
  }
  EXPECT_GT(compared, 12);
}

// A serving process that aborts in the middle of a trial fails that trial only; the slot gets a new
// process and the study goes on to its end.
TEST(ServedTrials, AProcessThatCrashesFailsOnlyTheTrialItRan) {
  const auto dir = study_dir("crash");
  const Result r = tune(dir, program("--crash-above 6"), "--algo random --seed 7 --steps 3 --max-trials 10 --parallel 2 --serve");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const nlohmann::json j = summary(r);
  int failed = 0, completed = 0;
  for (const auto& t : stored(dir)) {
    const double x1 = nlohmann::json::parse(t.params_json)["x1"].get<double>();
    if (x1 > 6) {
      ++failed;
      EXPECT_EQ(t.status, "failed");
      EXPECT_NE(t.reason.find("its serving process was killed by signal 6"), std::string::npos) << t.reason;
      EXPECT_EQ(t.steps, 1) << "its step before the crash counts";
    } else {
      ++completed;
      EXPECT_EQ(t.status, "completed") << t.reason;
      EXPECT_EQ(t.steps, 3);
    }
  }
  ASSERT_GT(failed, 0) << "seed 7 must draw x1 > 6";
  EXPECT_GT(completed, 0);
  // Each crash: a new process for its slot, unless the study had no trial left for it.
  EXPECT_GE(j["serving_processes"].get<int>(), failed) << r.output;
  EXPECT_LE(j["serving_processes"].get<int>(), 2 + failed) << r.output;
  EXPECT_LT(j["serving_processes"].get<int>(), j["started"].get<int>()) << "the others served several trials";
}

// A served trial that runs out of memory (PyTorch's message on stderr, its done line says failed)
// is an OOM trial like a process's; its process serves on.
TEST(ServedTrials, AnOutOfMemoryTrialIsOomAndTheProcessServesOn) {
  const auto dir = study_dir("oom");
  const Result r = tune(dir, program("--oom-above 6"), "--algo random --seed 7 --steps 3 --max-trials 8 --parallel 1 --serve");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  int oom = 0;
  for (const auto& t : stored(dir)) {
    if (nlohmann::json::parse(t.params_json)["x1"].get<double>() <= 6) {
      EXPECT_EQ(t.status, "completed") << t.reason;
      continue;
    }
    ++oom;
    EXPECT_EQ(t.status, "oom") << t.reason;
    EXPECT_NE(t.reason.find("CUDA out of memory"), std::string::npos) << t.reason;
    EXPECT_EQ(t.steps, 1);
  }
  ASSERT_GT(oom, 0);
  EXPECT_EQ(summary(r)["serving_processes"], 1) << r.output;
}

// A served trial that hangs is stopped by --hang like a process: no done line within its grace,
// so its process is stopped; the next trial starts a new one.
TEST(ServedTrials, AHungTrialTimesOutAndItsProcessIsReplaced) {
  const auto dir = study_dir("hang");
  const Result r = tune(dir, program("--hang-above 6"),
                        "--algo random --seed 7 --steps 3 --max-trials 6 --parallel 1 --serve --hang 1s --grace 1s");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  int hung = 0;
  for (const auto& t : stored(dir)) {
    if (nlohmann::json::parse(t.params_json)["x1"].get<double>() <= 6) {
      EXPECT_EQ(t.status, "completed") << t.reason;
      continue;
    }
    ++hung;
    EXPECT_EQ(t.status, "timeout");
    EXPECT_NE(t.reason.find("hung"), std::string::npos) << t.reason;
  }
  ASSERT_GT(hung, 0);
  EXPECT_GE(summary(r)["serving_processes"].get<int>(), hung);
  EXPECT_LE(summary(r)["serving_processes"].get<int>(), 1 + hung);
}

// The median pruner stops trials mid-run: each gets {"cancel": id}, ends at its done line, and the
// one process serves the whole study.
TEST(ServedTrials, EarlyStoppedTrialsAreCancelledAndTheProcessServesOn) {
  const auto dir = study_dir("median");
  const Result r = tune(dir, program("--sleep 0.03"),
                        "--algo random --seed 3 --pruner median --pruner-startup 2 --steps 9 --max-trials 10 "
                        "--parallel 1 --serve");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  int stopped = 0;
  for (const auto& t : stored(dir)) {
    EXPECT_TRUE(t.status == "completed" || t.status == "pruned") << t.status << ": " << t.reason;
    if (t.status == "pruned") {
      ++stopped;
      EXPECT_LT(t.steps, 9);
    }
  }
  EXPECT_GT(stopped, 0);
  EXPECT_EQ(summary(r)["serving_processes"], 1) << r.output;
}

// Ctrl-C stops the serving processes with the trials they run (interrupted); the study resumes,
// and a trial whose paused state was only in a stopped process's memory starts its promotion over
// from step 0: every completed trial still has each of its steps once, in order.
TEST(ServedTrials, InterruptedWithCtrlCTheStudyResumes) {
  const auto dir = study_dir("interrupt");
  const std::string args = fmt::format(
      "tune --space {} --study {} --command '{}' --objective value --direction minimize --algo random --seed 4 "
      "--pruner asha --eta 3 --min-resource 1 --steps 9 --max-trials 12 --parallel 2 --serve",
      (dir / "space.yaml").string(), (dir / "s.db").string(), program("--sleep 0.2"));
  const Result first = paratune::testing::run_command(
      fmt::format("{} {} > {} 2>&1 & pid=$!; sleep 1.5; kill -INT $pid; wait $pid; echo exit=$?", PARATUNE_BINARY,
                  args, (dir / "first.log").string()));
  EXPECT_NE(first.output.find("exit=130"), std::string::npos) << first.output;
  for (const auto& t : stored(dir)) EXPECT_NE(t.status, "running") << t.number;
  const Result again = run(args + " --json");
  ASSERT_EQ(again.exit_code, 0) << again.output;
  int completed = 0;
  for (const auto& t : stored(dir)) {
    // An interrupted first run stays so; the resumed study ran its configuration again as a new trial.
    EXPECT_TRUE(t.status == "completed" || t.status == "pruned" || t.status == "interrupted")
        << t.number << " " << t.status << ": " << t.reason;
    if (t.status != "completed") continue;
    ++completed;
    std::vector<std::int64_t> steps;
    for (const auto& m : t.metrics) steps.push_back(m.step.value_or(-1));
    EXPECT_EQ(steps, (std::vector<std::int64_t>{0, 1, 2, 3, 4, 5, 6, 7, 8})) << "trial " << t.number;
  }
  EXPECT_GE(completed, 1);
  const auto trials = stored(dir);
  EXPECT_EQ(summary(again)["requeued"].get<int>(),
            std::count_if(trials.begin(), trials.end(), [](const auto& t) { return t.status == "interrupted"; }));
}

// A program that never says {"serve": 1} runs each trial as a process of its own, as without --serve.
TEST(ServedTrials, AProgramThatDoesNotServeRunsEachTrialAlone) {
  const auto dir = study_dir("not-serving");
  const Result r = tune(dir, fmt::format("{} branin --curve", PARATUNE_FUNCTION_TRIAL),
                        "--algo random --seed 5 --pruner asha --eta 3 --min-resource 1 --steps 9 --max-trials 6 "
                        "--parallel 2 --serve");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  for (const auto& t : stored(dir)) EXPECT_TRUE(t.status == "completed" || t.status == "pruned") << t.reason;
  const nlohmann::json j = summary(r);
  EXPECT_EQ(j["serving_processes"].get<int>(), j["started"].get<int>() + j["promotions"].get<int>());
}

// A serving program that says done for a trial it was not given: its line is ignored, and the trial
// -- all steps run, its own done line never said -- fails after the grace with a reason that says
// so and names the other trial (it read "killed by signal 15 (Terminated)", like a crash).
TEST(ServedTrials, ADoneLineForAnotherTrialIsIgnoredAndTheReasonSaysSo) {
  const auto dir = study_dir("other-done");
  write_file(dir / "liar.py", R"(import json, os, sys
def say(**f): print("@paratune " + json.dumps(f), flush=True)
say(serve=1)
for line in sys.stdin:
    a = json.loads(line)
    if "stop" in a: break
    if "trial" not in a: continue
    for k in range(int(a["env"]["PARATUNE_MAX_STEPS"])):
        say(metric="value", value=1.0, step=k); say(step=k, step_time_s=0.001)
    say(done="someone-else")
)");
  const Result r = tune(dir, "/usr/bin/python3 " + (dir / "liar.py").string(),
                        "--algo random --seed 1 --steps 2 --max-trials 1 --parallel 1 --serve --grace 0.5s");
  EXPECT_NE(r.exit_code, 0) << "no trial completed";
  const auto trials = stored(dir);
  ASSERT_EQ(trials.size(), 1U) << r.output;
  EXPECT_EQ(trials[0].status, "failed");
  EXPECT_EQ(trials[0].steps, 2);
  EXPECT_EQ(trials[0].reason.rfind("ran its steps, but its serving process said no done line for it within ", 0), 0U)
      << trials[0].reason;
  EXPECT_NE(trials[0].reason.find("(it said done for 'someone-else', a trial it was not running); paratune stopped the process"),
            std::string::npos)
      << trials[0].reason;
}

TEST(ServedTrials, CombinationsThatCannotServeAreRefused) {
  const auto dir = study_dir("refused");
  Result r = tune(dir, program("--x {x1}"), "--algo random --max-trials 2 --steps 3 --serve");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.output.find("names {x1}, a value of each trial"), std::string::npos) << r.output;
  r = tune(dir, program("--dir {trial_dir}"), "--algo random --max-trials 2 --steps 3 --serve");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.output.find("names {trial_dir}"), std::string::npos) << r.output;
  r = tune(dir, fmt::format("{} --model mlp --steps {{steps}}", PARATUNE_TRAIN_BINARY),
           "--algo random --max-trials 2 --steps 3 --serve --fuse 2");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.output.find("a fused group runs in a process of its own"), std::string::npos) << r.output;
  // The SSH backend runs each trial as a process of its own: refused before anything runs.
  write_file(dir / "hosts.txt", "h1 slots=2\n");
  r = tune(dir, program(""), "--algo random --max-trials 2 --steps 3 --serve --backend ssh --hosts " +
                                 (dir / "hosts.txt").string());
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.output.find("the ssh backend runs each trial as a process of its own"), std::string::npos) << r.output;
  EXPECT_FALSE(std::filesystem::exists(dir / "s.trials" / "trial-0001")) << "nothing ran";
}
