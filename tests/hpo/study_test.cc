// End to end: hyperparameter studies through `paratune tune` with real trial processes
// (bench/functions/function_trial.cc): every sampler and pruner, ASHA's promotions by checkpoint
// and by re-running, a controller killed with SIGKILL and resumed, and bad input.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <thread>

#include "../cli/cli_util.h"
#include "paratune/hpo/trial_record.h"
#include "paratune/store/sqlite_store.h"
#include "../support/test_files.h"

namespace {

using paratune::testing::write_file;
using paratune::testing::Result;
using paratune::testing::run;

std::filesystem::path hpo_study_dir(const std::string& name) { return paratune::testing::fresh_test_dir("paratune_hpo", name); }

const char* kBranin = R"(parameters:
  x1: {type: float, low: -5, high: 10}
  x2: {type: float, low: 0, high: 15}
)";

std::string study_args(const std::filesystem::path& dir, const std::string& program_args, const std::string& extra) {
  return fmt::format("tune --space {} --study {} --command '{} branin {}' --objective value --direction minimize {}",
                     (dir / "space.yaml").string(), (dir / "s.db").string(), PARATUNE_FUNCTION_TRIAL, program_args,
                     extra);
}

// Every trial of the study in dir/s.db (none while the controller has only created the file).
std::vector<paratune::store::StoredTrial> stored_trials(const std::filesystem::path& dir) {
  const paratune::store::SqliteStudyStore store(dir / "s.db");
  const auto studies = store.studies();
  return studies.empty() ? std::vector<paratune::store::StoredTrial>{} : store.trials(studies.front().id, true);
}

// Waits (up to 10 s) until no process holds the study file's controller lock (store/file_lock.cc:
// flock on the file). A SIGKILLed controller's lock goes when the last process sharing its open
// file exits; a resume started right after waitpid() found it still held about once in 15 runs
// (2026-11-27; gone a moment later, no process had the file open any more: we suspect a trial child
// forked just before the kill, which holds the descriptor until it execs or dies of the controller's
// death). A user resumes seconds later; the test waits as they would.
bool wait_until_unlocked(const std::filesystem::path& study_file) {
  for (int i = 0; i < 200; ++i) {
    const int fd = ::open(study_file.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return false;
    const bool free = ::flock(fd, LOCK_EX | LOCK_NB) == 0;
    if (free) ::flock(fd, LOCK_UN);
    ::close(fd);
    if (free) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return false;
}

// The steps at which a trial reported "value", in report order.
std::vector<std::int64_t> value_steps(const paratune::store::StoredTrial& t) {
  std::vector<std::int64_t> steps;
  for (const auto& m : t.metrics)
    if (m.name == "value") steps.push_back(m.step.value_or(-1));
  return steps;
}

std::vector<std::int64_t> range(std::int64_t n) {
  std::vector<std::int64_t> out;
  for (std::int64_t i = 0; i < n; ++i) out.push_back(i);
  return out;
}

int count_lines_with(const std::filesystem::path& file, const std::string& text) {
  std::ifstream in(file);
  int n = 0;
  for (std::string line; std::getline(in, line);) n += line.find(text) != std::string::npos;
  return n;
}

TEST(HpoStudy, EverySamplerRunsEndToEnd) {
  for (const std::string algo : {"grid", "random", "tpe", "gp"}) {
    const auto dir = hpo_study_dir("sampler-" + algo);
    // Grid needs a finite space: a 4 x 4 grid of Branin.
    write_file(dir / "space.yaml", algo == "grid" ? "parameters:\n  x1: [-3, 0, 3, 9]\n  x2: [1, 5, 10, 14]\n" : kBranin);
    const Result r = run(study_args(dir, "", fmt::format("--algo {} --steps 1 --max-trials 14 --parallel 2 --json", algo)));
    ASSERT_EQ(r.exit_code, 0) << algo << ": " << r.output;
    const nlohmann::json j = nlohmann::json::parse(r.output.substr(r.output.find("{\n")));
    EXPECT_EQ(j["sampler"], algo);
    EXPECT_EQ(j["trials"].size(), 14u) << algo;
    double min_value = 1e300;
    for (const auto& t : j["trials"]) {
      EXPECT_EQ(t["status"], "completed") << algo << ": " << t.dump();
      min_value = std::min(min_value, t["objective"].get<double>());
    }
    EXPECT_EQ(j["best"]["objective"].get<double>(), min_value) << algo;
    EXPECT_LT(min_value, 30) << algo << ": Branin's values span [0.4, 308]";
  }
}

TEST(HpoStudy, EveryPrunerStopsSomeTrialsAndCompletesOthers) {
  for (const std::string pruner : {"median", "percentile", "asha", "hyperband"}) {
    const auto dir = hpo_study_dir("pruner-" + pruner);
    write_file(dir / "space.yaml", kBranin);
    const std::string startup = pruner == "median" || pruner == "percentile" ? "--pruner-startup 3" : "";
    const Result r = run(study_args(dir, "--curve", fmt::format("--algo random --seed 3 --pruner {} --steps 27 "
                                                                "--max-trials 20 --parallel 2 {} --json",
                                                                pruner, startup)));
    ASSERT_EQ(r.exit_code, 0) << pruner << ": " << r.output;
    const nlohmann::json j = nlohmann::json::parse(r.output.substr(r.output.find("{\n")));
    EXPECT_EQ(j["pruner"], pruner);
    EXPECT_GT(j["status_counts"].value("pruned", 0), 0) << pruner << ": " << j["status_counts"].dump();
    EXPECT_GT(j["status_counts"].value("completed", 0), 0) << pruner << ": " << j["status_counts"].dump();
    for (const auto& t : j["trials"]) {
      if (t["status"] == "completed") EXPECT_EQ(t["steps"], 27) << pruner << ": " << t.dump();
      if (pruner == "asha" || pruner == "hyperband") {
        if (t["status"] == "pruned") EXPECT_TRUE(t["rung"].is_number()) << t.dump();
      }
    }
  }
}

// ASHA with eta 3 on rungs 1, 3, 9 steps: a completed trial ran three times (1, then 2 more, then 6
// more steps), each resuming from the checkpoint the previous run saved.
TEST(HpoStudy, AshaPromotesByResumingFromTheTrialsCheckpoint) {
  const auto dir = hpo_study_dir("asha-resume");
  write_file(dir / "space.yaml", kBranin);
  const Result r = run(study_args(dir, "--curve", "--algo random --seed 5 --pruner asha --eta 3 --min-resource 1 "
                                                  "--steps 9 --max-trials 12 --parallel 1"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  int completed = 0;
  for (const auto& t : stored_trials(dir)) {
    if (t.status != "completed") continue;
    ++completed;
    EXPECT_EQ(t.steps, 9);
    EXPECT_EQ(value_steps(t), range(9)) << "trial " << t.number << ": every step once, in order";
    EXPECT_EQ(count_lines_with(std::filesystem::path(t.dir) / "stdout.log", "\"step_time_s\""), 9)
        << "trial " << t.number << " re-ran steps it had done";
    EXPECT_EQ(count_lines_with(std::filesystem::path(t.dir) / "stdout.log", "checkpoint_step"), 3);
    EXPECT_TRUE(std::filesystem::exists(std::filesystem::path(t.dir) / "checkpoint-9"));
    EXPECT_FALSE(std::filesystem::exists(std::filesystem::path(t.dir) / "checkpoint-1")) << "a left rung's checkpoint is removed";
  }
  EXPECT_GE(completed, 1);
}

// A program that does not checkpoint is promoted by running it again, longer, from step 0; its
// earlier output is replaced, not added to.
TEST(HpoStudy, AshaRerunsAProgramWithoutCheckpoints) {
  const auto dir = hpo_study_dir("asha-rerun");
  write_file(dir / "space.yaml", kBranin);
  const std::string args = study_args(dir, "--curve", "--algo random --seed 5 --pruner asha --eta 3 --min-resource 1 "
                                                      "--steps 9 --max-trials 12 --parallel 1");
  // env -u: the program never sees PARATUNE_CHECKPOINT_DIR, so it never says it saved anything.
  const std::string without = std::regex_replace(args, std::regex("--command '"), "--command 'env -u PARATUNE_CHECKPOINT_DIR ");
  const Result r = run(without);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  int completed = 0;
  for (const auto& t : stored_trials(dir)) {
    if (t.status != "completed") continue;
    ++completed;
    EXPECT_EQ(t.steps, 9);
    EXPECT_EQ(value_steps(t), range(9)) << "trial " << t.number;
    // 1 + 3 + 9 step lines over its three runs.
    EXPECT_EQ(count_lines_with(std::filesystem::path(t.dir) / "stdout.log", "\"step_time_s\""), 13);
  }
  EXPECT_GE(completed, 1);
}

// ASHA's invariant once a study has nothing left to promote: in every rung, the top 1/eta of the
// trials that completed it went on.
void expect_asha_invariant(const std::vector<paratune::store::StoredTrial>& trials, const std::vector<std::int64_t>& rungs,
                           int eta) {
  for (std::size_t k = 0; k + 1 < rungs.size(); ++k) {
    std::vector<std::pair<double, const paratune::store::StoredTrial*>> members;
    for (const auto& t : trials) {
      if (!t.rung || *t.rung < static_cast<int>(k)) continue;
      paratune::hpo::TrialRecord r;
      for (const auto& m : t.metrics)
        if (m.name == "value") r.curve.push_back({m.step.value_or(0), m.value});
      members.emplace_back(paratune::hpo::value_at(r, rungs[k]).value_or(1e300), &t);
    }
    std::sort(members.begin(), members.end(), [](const auto& a, const auto& b) {
      return a.first != b.first ? a.first < b.first : a.second->number < b.second->number;
    });
    const std::size_t top = members.size() / static_cast<std::size_t>(eta);
    for (std::size_t i = 0; i < top; ++i)
      EXPECT_GT(*members[i].second->rung, static_cast<int>(k))
          << "trial " << members[i].second->number << " ranks " << i + 1 << " of " << members.size() << " in rung " << k
          << " but was never promoted";
  }
}

// A controller SIGKILLed while a promotion runs, then resumed: once for a program that checkpoints
// (the promotion resumes), once for one that does not (the promotion re-runs from step 0, and until
// it ends the rung's output must stay).
TEST(HpoStudy, KilledControllerResumesKeepingPrunedAndPromotedTrials) {
  for (const bool checkpoints : {true, false}) {
    SCOPED_TRACE(checkpoints ? "a program that checkpoints" : "a program without checkpoints");
    const auto dir = hpo_study_dir(checkpoints ? "asha-kill" : "asha-kill-rerun");
    write_file(dir / "space.yaml", kBranin);
    std::string args = study_args(dir, "--curve --sleep 0.02", "--algo random --seed 8 --pruner asha --eta 3 "
                                                               "--min-resource 1 --steps 27 --max-trials 24 "
                                                               "--parallel 2 --grace 0.3s");
    if (!checkpoints) args = std::regex_replace(args, std::regex("--command '"), "--command 'env -u PARATUNE_CHECKPOINT_DIR ");
    const pid_t controller = fork();
    if (controller == 0) {
      const std::string command = std::string("exec ") + PARATUNE_BINARY + " " + args + " > " +
                                  (dir / "first.out").string() + " 2>&1";
      execl("/bin/sh", "sh", "-c", command.c_str(), nullptr);
      _exit(127);
    }
    // Kill it while a promotion runs (a trial that rested at a rung is running again).
    bool ready = false;
    for (int i = 0; i < 600 && !ready; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      if (!std::filesystem::exists(dir / "s.db")) continue;
      const auto trials = stored_trials(dir);
      ready = std::any_of(trials.begin(), trials.end(), [](const auto& t) { return t.status == "running" && t.rung; });
    }
    ::kill(controller, SIGKILL);
    ::waitpid(controller, nullptr, 0);
    ASSERT_TRUE(ready) << "the study did not get going";
    const auto before = stored_trials(dir);

    ASSERT_TRUE(wait_until_unlocked(dir / "s.db")) << "the killed controller's lock stayed";
    const Result resumed = run(args);
    ASSERT_EQ(resumed.exit_code, 0) << resumed.output;
    const auto after = stored_trials(dir);
    std::map<int, const paratune::store::StoredTrial*> by_number;
    for (const auto& t : after) by_number[t.number] = &t;
    for (const auto& b : before) {
      const auto& a = *by_number.at(b.number);
      if (b.status == "completed") {
        EXPECT_EQ(a.status, "completed");
        EXPECT_EQ(a.ended_unix_s, b.ended_unix_s) << "completed trial " << b.number << " ran again";
      }
      if (b.status == "pruned" || (b.status == "running" && b.rung)) {
        EXPECT_TRUE(a.status == "pruned" || a.status == "completed")
            << "trial " << a.number << ": " << a.status << " (" << a.reason << ")";
        EXPECT_GE(a.steps, b.steps) << "trial " << b.number << " lost steps";
        EXPECT_GE(a.rung.value_or(-1), b.rung.value_or(-1)) << "trial " << b.number << " lost its rung";
      }
    }
    int configurations = 0;
    for (const auto& t : after) {
      if (t.status == "interrupted") continue;
      ++configurations;
      const std::vector<std::int64_t> steps = value_steps(t);
      EXPECT_EQ(steps, range(static_cast<std::int64_t>(steps.size()))) << "trial " << t.number << ": steps lost or repeated";
      if (t.status == "completed") EXPECT_EQ(t.steps, 27);
      if (t.status == "pruned") EXPECT_TRUE(t.objective.has_value()) << "trial " << t.number << " rests without a value";
    }
    EXPECT_EQ(configurations, 24);
    expect_asha_invariant(after, {1, 3, 9, 27}, 3);
  }
}

// Programs that report their values after the step line, or without a step number.
TEST(HpoStudy, ValuesAfterTheStepLineOrWithoutAStepNumberCount) {
  {
    const auto dir = hpo_study_dir("after-step");
    write_file(dir / "space.yaml", kBranin);
    const Result r = run(study_args(dir, "--metric-after-step", "--algo random --steps 3 --max-trials 3 --json"));
    ASSERT_EQ(r.exit_code, 0) << r.output;
    for (const auto& t : stored_trials(dir)) EXPECT_EQ(t.status, "completed") << t.reason;
  }
  const auto dir = hpo_study_dir("without-step");
  write_file(dir / "space.yaml", kBranin);
  const Result r = run(study_args(dir, "--curve --metric-without-step", "--algo random --seed 5 --pruner asha "
                                                                        "--min-resource 1 --steps 9 --max-trials 9"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  int completed = 0;
  for (const auto& t : stored_trials(dir)) {
    // Each value is stored with the step its step line closed.
    EXPECT_EQ(value_steps(t), range(t.steps)) << "trial " << t.number;
    completed += t.status == "completed";
  }
  EXPECT_GE(completed, 1);
}

// A program that announces checkpoints but starts over from step 0 cannot be promoted by resuming:
// its promoted runs fail with the reason, rather than storing a mislabelled curve.
TEST(HpoStudy, AProgramThatDoesNotResumeFromItsCheckpointFailsWithTheReason) {
  const auto dir = hpo_study_dir("ignore-checkpoint");
  write_file(dir / "space.yaml", kBranin);
  const Result r = run(study_args(dir, "--curve --ignore-checkpoint", "--algo random --seed 5 --pruner asha "
                                                                      "--min-resource 1 --steps 9 --max-trials 6"));
  EXPECT_TRUE(r.exit_code == 0 || r.exit_code == 3) << r.output;
  int failed = 0;
  for (const auto& t : stored_trials(dir))
    if (t.status == "failed") {
      ++failed;
      EXPECT_NE(t.reason.find("does not resume from PARATUNE_CHECKPOINT_DIR"), std::string::npos) << t.reason;
    }
  EXPECT_GE(failed, 1) << r.output;
}

// Two levels of parallelism: trials of 1 and 2 ranks packed onto 3 slots; a trial runs on its
// slots' CPUs only, and trials that overlap in time never share a slot.
TEST(HpoStudy, PacksTrialsOfSeveralRanksOntoTheSlots) {
  const auto dir = hpo_study_dir("slots");
  write_file(dir / "space.yaml", std::string(kBranin) + "  ranks: [1, 2]\n");
  const std::string command = fmt::format("sh -c \"grep Cpus_allowed_list /proc/self/status; exec {} branin --sleep 0.05\" "
                                          "--ranks {{ranks}} --strategy {{strategy}}",
                                          PARATUNE_FUNCTION_TRIAL);
  const Result r = run(fmt::format("tune --space {} --study {} --command '{}' --objective value --direction minimize "
                                   "--algo random --seed 4 --steps 4 --max-trials 10 --slots 3 --slot-cpus '0;1;0' "
                                   "--strategy dp --json",
                                   (dir / "space.yaml").string(), (dir / "s.db").string(), command));
  // sh takes --ranks N --strategy dp as its $0.. (the function trial would reject them): they show in
  // the stored command without reaching the program.
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto trials = stored_trials(dir);
  ASSERT_EQ(trials.size(), 10u);
  struct Span {
    double start, end;
    std::vector<int> slots;
  };
  std::vector<Span> spans;
  for (const auto& t : trials) {
    ASSERT_EQ(t.status, "completed") << t.reason;
    const nlohmann::json params = nlohmann::json::parse(t.params_json);
    const nlohmann::json state = nlohmann::json::parse(t.hpo_json);
    const std::vector<int> slots = state["slots"].get<std::vector<int>>();
    EXPECT_EQ(static_cast<int>(slots.size()), params["ranks"].get<int>()) << t.hpo_json;
    EXPECT_EQ(state["strategy"], "dp");
    EXPECT_NE(t.command.find("--ranks " + params["ranks"].dump() + " --strategy dp"), std::string::npos) << t.command;
    // Pinned: slot 1 is CPU 1, slots 0 and 2 are CPU 0.
    std::ifstream log(std::filesystem::path(t.dir) / "stdout.log");
    std::string first;
    std::getline(log, first);
    const bool on_cpu1 = std::find(slots.begin(), slots.end(), 1) != slots.end();
    const bool on_cpu0 = slots.front() == 0 || slots.back() == 2;
    EXPECT_EQ(first, fmt::format("Cpus_allowed_list:\t{}", on_cpu0 && on_cpu1 ? "0-1" : on_cpu1 ? "1" : "0")) << t.hpo_json;
    spans.push_back({t.started_unix_s, t.ended_unix_s, slots});
  }
  for (std::size_t i = 0; i < spans.size(); ++i)
    for (std::size_t j = i + 1; j < spans.size(); ++j) {
      if (spans[i].end <= spans[j].start || spans[j].end <= spans[i].start) continue;
      for (int slot : spans[i].slots)
        EXPECT_EQ(std::count(spans[j].slots.begin(), spans[j].slots.end(), slot), 0)
            << "trials " << i + 1 << " and " << j + 1 << " ran at once on slot " << slot;
    }
}

// A trial program that fails a run whose trial directory is named by a marker file beside it
// (dir/fail-NAME, NAME the run's directory: "retrain-0001-of-trial-0003" for the retrain of trial 3),
// and otherwise runs the Branin curve.
std::string failing_retrain_program(const std::filesystem::path& dir) {
  write_file(dir / "trial.sh", fmt::format("#!/bin/sh\n"
                                           "if [ -e \"{}/fail-$(basename \"$PARATUNE_TRIAL_DIR\")\" ]; then\n"
                                           "  echo 'marked to fail' >&2; exit 5\n"
                                           "fi\n"
                                           "exec {} branin --curve\n",
                                           dir.string(), PARATUNE_FUNCTION_TRIAL));
  std::filesystem::permissions(dir / "trial.sh", std::filesystem::perms::owner_all);
  return fmt::format("tune --space {} --study {} --trials-dir {} --command '{}' --objective value --direction minimize "
                     "--algo tpe --seed 1 --steps 3 --max-trials 6 --json",
                     (dir / "space.yaml").string(), (dir / "s.db").string(), (dir / "trials").string(),
                     (dir / "trial.sh").string());
}

nlohmann::json json_of(const Result& r) { return nlohmann::json::parse(r.output.substr(r.output.find("{\n"))); }

// The search's completed trials, best (lowest value) first: their numbers.
std::vector<int> ranked_trials(const nlohmann::json& study) {
  std::vector<std::pair<double, int>> ranked;
  for (const auto& t : study["trials"])
    if (t["status"] == "completed") ranked.emplace_back(t["objective"].get<double>(), t["number"].get<int>());
  std::stable_sort(ranked.begin(), ranked.end());
  std::vector<int> numbers;
  for (const auto& r : ranked) numbers.push_back(r.second);
  return numbers;
}

// --retrain-top 3: the three best configurations retrained for --retrain-steps, the best of them
// there chosen. The best one's retrain fails (information, not the end): the next best is chosen.
// Run again, nothing is retrained again (a failed retrain ran to its end too); study show, its
// --json and the stored studies see all three.
TEST(HpoStudy, RetrainTopRetrainsTheBestThreeAndChoosesTheBestRetrained) {
  const auto dir = hpo_study_dir("retrain-top");
  write_file(dir / "space.yaml", kBranin);
  const std::string tune = failing_retrain_program(dir);
  const Result searched = run(tune);
  ASSERT_EQ(searched.exit_code, 0) << searched.output;
  const std::vector<int> top = ranked_trials(json_of(searched));
  ASSERT_GE(top.size(), 3u) << searched.output;
  write_file(dir / fmt::format("fail-retrain-0001-of-trial-{:04d}", top[0]), "");

  const Result r = run(tune + " --retrain-top 3 --retrain-steps 10");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const nlohmann::json j = json_of(r);
  const nlohmann::json& re = j["reevaluation"];
  ASSERT_EQ(re["runs"].size(), 3u) << re.dump();
  EXPECT_EQ(re["k"], 3);
  for (int i = 0; i < 3; ++i) {
    const nlohmann::json& run_i = re["runs"][i];
    EXPECT_EQ(run_i["of_trial"], top[i]) << run_i.dump();
    EXPECT_EQ(run_i["reused"], false);
    EXPECT_EQ(run_i["study"], fmt::format("main.retrain.{}.10steps", top[i]));
    if (i == 0) {
      EXPECT_EQ(run_i["trial"]["status"], "failed") << run_i.dump();
      EXPECT_TRUE(run_i["objective"].is_null());
      continue;
    }
    ASSERT_EQ(run_i["trial"]["status"], "completed") << run_i.dump();
    EXPECT_EQ(run_i["trial"]["steps"], 10);
    // The curve f(x) + 10 / (step + 1): 10/3 above f after the search's 3 steps, 1 after 10.
    EXPECT_NEAR(run_i["objective"].get<double>(), run_i["search_objective"].get<double>() - 10.0 / 3 + 1, 1e-9);
  }
  EXPECT_EQ(re["chosen"], top[1]);
  EXPECT_EQ(j["retrain"]["of_trial"], top[1]);
  EXPECT_EQ(j["retrain"]["trial"]["params"], re["runs"][1]["trial"]["params"]);

  const Result again = run(tune + " --retrain-top 3 --retrain-steps 10");
  ASSERT_EQ(again.exit_code, 0) << again.output;
  const nlohmann::json k = json_of(again);
  ASSERT_EQ(k["reevaluation"]["runs"].size(), 3u);
  for (const auto& run_i : k["reevaluation"]["runs"]) EXPECT_EQ(run_i["reused"], true) << run_i.dump();
  EXPECT_EQ(k["reevaluation"]["chosen"], top[1]);
  EXPECT_EQ(k["reevaluation"]["runs"][0]["trial"]["number"], 1);  // not run a second time

  const Result show = run("study show " + (dir / "s.db").string());
  ASSERT_EQ(show.exit_code, 0) << show.output;
  EXPECT_NE(show.output.find("retrains of the best configurations"), std::string::npos) << show.output;
  EXPECT_NE(show.output.find("<- chosen"), std::string::npos) << show.output;
  EXPECT_NE(show.output.find("failed"), std::string::npos) << show.output;
  const Result shown_json = run("study show --json " + (dir / "s.db").string());
  ASSERT_EQ(shown_json.exit_code, 0) << shown_json.output;
  const nlohmann::json stored = json_of(shown_json)["reevaluations"];
  EXPECT_EQ(stored["runs"].size(), 3u) << stored.dump();
  EXPECT_EQ(stored["chosen"], top[1]);
}

// Every retrain failing is the end of the choice, said with each trial's reason: exit 1, the
// search itself kept.
TEST(HpoStudy, RetrainTopWhoseRetrainsAllFailSaysSo) {
  const auto dir = hpo_study_dir("retrain-top-fail");
  write_file(dir / "space.yaml", kBranin);
  const std::string tune = failing_retrain_program(dir);
  for (int n = 1; n <= 6; ++n) write_file(dir / fmt::format("fail-retrain-0001-of-trial-{:04d}", n), "");
  const Result r = run(tune + " --retrain-top 2");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("all 2 retrains of the best configurations failed, so none is chosen: trial "),
            std::string::npos)
      << r.output;
  const nlohmann::json j = json_of(r);
  EXPECT_TRUE(j["reevaluation"]["chosen"].is_null());
  EXPECT_EQ(j["reevaluation"]["runs"].size(), 2u);
  EXPECT_EQ(j["trials"].size(), 6u);
}

// --retrain-top auto: the best retrained first, alone; k from its measured time against the
// search's (--retrain-budget x the sum of the search's trial durations / the retrain's).
TEST(HpoStudy, RetrainTopAutoSetsKFromTheMeasuredCost) {
  const auto dir = hpo_study_dir("retrain-top-auto");
  write_file(dir / "space.yaml", kBranin);
  const std::string args = study_args(dir, "--curve --sleep 0.05",
                                      "--algo tpe --seed 1 --steps 3 --max-trials 6 --retrain-top auto "
                                      "--retrain-budget 2 --retrain-steps 10 --json");
  const Result r = run(args);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const nlohmann::json j = json_of(r);
  const nlohmann::json& re = j["reevaluation"];
  double search_s = 0;
  for (const auto& t : j["trials"]) search_s += t["ended_unix_s"].get<double>() - t["started_unix_s"].get<double>();
  const nlohmann::json& first = re["runs"][0]["trial"];
  const double retrain_s = first["ended_unix_s"].get<double>() - first["started_unix_s"].get<double>();
  const auto expected = static_cast<std::size_t>(std::clamp(std::floor(2 * search_s / retrain_s), 1.0, 6.0));
  EXPECT_EQ(re["runs"].size(), expected) << re.dump();
  EXPECT_EQ(re["k"], expected);
  EXPECT_NE(re["rule"].get<std::string>().find("auto: --retrain-budget 2"), std::string::npos) << re.dump();
  EXPECT_EQ(re["runs"][0]["of_trial"], ranked_trials(j)[0]);
}

// --retrain trains the best configuration again and reports its final metrics; run again, the
// stored retrain is reused.
TEST(HpoStudy, RetrainRunsTheBestConfigurationAgainForTheFullBudget) {
  const auto dir = hpo_study_dir("retrain");
  write_file(dir / "space.yaml", kBranin);
  const std::string args = study_args(dir, "--curve", "--algo tpe --seed 1 --steps 3 --max-trials 6 --retrain "
                                                      "--retrain-steps 10 --json");
  const Result r = run(args);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const nlohmann::json j = nlohmann::json::parse(r.output.substr(r.output.find("{\n")));
  const double best = j["best"]["objective"].get<double>();  // f(x) + 10/3 after 3 steps
  const nlohmann::json& retrain = j["retrain"];
  EXPECT_EQ(retrain["reused"], false);
  EXPECT_EQ(retrain["trial"]["status"], "completed");
  EXPECT_EQ(retrain["trial"]["steps"], 10);
  EXPECT_EQ(retrain["trial"]["params"], j["best"]["params"]);
  // The curve after 10 steps: f(x) + 10/10 = best - 10/3 + 1.
  EXPECT_NEAR(retrain["final_metrics"]["value"].get<double>(), best - 10.0 / 3 + 1, 1e-9);
  const Result again = run(args);
  ASSERT_EQ(again.exit_code, 0) << again.output;
  const nlohmann::json k = nlohmann::json::parse(again.output.substr(again.output.find("{\n")));
  EXPECT_EQ(k["retrain"]["reused"], true);
  EXPECT_EQ(k["retrain"]["final_metrics"], retrain["final_metrics"]);
  // `study show` still finds the search without --study-name.
  const Result show = run("study show " + (dir / "s.db").string());
  EXPECT_EQ(show.exit_code, 0) << show.output;
  EXPECT_NE(show.output.find("learning curves"), std::string::npos) << show.output;
}

// Issue 21: --retry-failed runs the configurations of failed trials again on resume (off by default).
TEST(HpoStudy, RetryFailedRunsFailedConfigurationsAgain) {
  const auto dir = hpo_study_dir("retry");
  write_file(dir / "space.yaml", kBranin);
  const std::string args = study_args(dir, "--fail-above x1 2", "--algo random --seed 3 --steps 1 --max-trials 8 --json");
  const auto failed = [&] {
    int n = 0;
    for (const auto& t : stored_trials(dir)) n += t.status == "failed";
    return n;
  };
  Result r = run(args);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const int first_failures = failed();
  ASSERT_GT(first_failures, 0) << "seed 3 draws no x1 > 2: pick another seed";
  r = run(args);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(stored_trials(dir).size(), 8u);  // nothing ran again
  r = run(args + " --retry-failed");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto j = nlohmann::json::parse(r.output.substr(r.output.find('{')));
  EXPECT_EQ(j["retried_failed"], first_failures) << r.output;
  EXPECT_EQ(stored_trials(dir).size(), 8u + static_cast<std::size_t>(first_failures));
  EXPECT_EQ(failed(), first_failures);  // they fail again: the function has not changed
}

TEST(HpoCli, BadInputIsNamedWithExitCode2) {
  const auto dir = hpo_study_dir("bad");
  write_file(dir / "space.yaml", kBranin);
  const auto expect_error = [&](const std::string& args, const std::string& message) {
    const Result r = run(args);
    EXPECT_EQ(r.exit_code, 2) << args << "\n" << r.output;
    EXPECT_NE(r.output.find(message), std::string::npos) << args << "\n" << r.output;
  };
  const std::string space = (dir / "space.yaml").string(), study = (dir / "s.db").string();
  const std::string command = fmt::format("--command '{} branin'", PARATUNE_FUNCTION_TRIAL);
  expect_error(fmt::format("tune --space {} --study {} {} --objective value", space, study, command),
               "--objective value: give --direction minimize or maximize");
  // (Issue 43: every pruner but oppa judges throughput trials too; oppa judges only them.)
  expect_error(fmt::format("tune --space {} --study {} {} --algo tpe --pruner oppa --objective value --direction minimize",
                           space, study, command),
               "pruner oppa: stops a trial by its throughput's confidence bound, and the objective is 'value'");
  expect_error(fmt::format("tune --space {} --study {} {} --algo bo --objective value --direction minimize", space, study,
                           command),
               "--algo bo: searches value lists of parallel configurations");
  expect_error(fmt::format("tune --space {} --study {} {} --algo tpe --objective value --direction up", space, study, command),
               "--direction: unknown direction 'up'; valid: minimize, maximize");
  expect_error(fmt::format("tune --space {} --study {} {} --algo tpe --objective value --direction minimize --pruner sha",
                           space, study, command),
               "--pruner: unknown pruner 'sha' (did you mean 'asha'?)");
  expect_error(fmt::format("tune --space {} --study {} {} --algo grid --objective value --direction minimize", space, study,
                           command),
               "grid search needs every parameter categorical or int");
  write_file(dir / "cond.yaml", "parameters:\n  o: [a, b]\n  m: {type: float, low: 0, high: 1, when: \"o == 'a'\"}\n");
  expect_error(fmt::format("tune --space {} --study {} --command 'echo {{m}}' --algo tpe --objective v --direction minimize",
                           (dir / "cond.yaml").string(), study),
               "--command: {m} is a conditional parameter");
  expect_error(fmt::format("tune --space {} --study {} {} --algo tpe --objective v --direction minimize --trial-ranks 3 "
                           "--slots 2",
                           space, study, command),
               "--trial-ranks 3: more than the 2 slots there are");
  expect_error(fmt::format("tune --space {} --study {} {} --algo tpe --objective v --direction minimize --strategy dp",
                           space, study, command),
               "--strategy dp: the command does not use {strategy}");
  expect_error(fmt::format("tune --space {} --study {} {} --algo tpe --objective v --direction minimize --strategy pp",
                           space, study, command),
               "--strategy: unknown strategy 'pp'");
  expect_error(fmt::format("tune --space {} --study {} {} --algo tpe --objective v --direction minimize --eta 2",
                           space, study, command),
               "--eta: rungs belong to --pruner asha or hyperband, not none");
  expect_error(fmt::format("tune --space {} --study {} {} --algo tpe --objective v --direction minimize --retrain-steps 5",
                           space, study, command),
               "--retrain-steps: needs --retrain");
  for (const auto& [value, message] : std::vector<std::pair<std::string, std::string>>{
           {"0", "--retrain-top 0: must be a whole number >= 1 (how many of the best configurations to retrain) or auto"},
           {"-2", "--retrain-top -2: must be a whole number >= 1"},
           {"abc", "--retrain-top abc: must be a whole number >= 1"},
           {"2.5", "--retrain-top 2.5: must be a whole number >= 1"},
           {"7", "--retrain-top 7: more than the 6 trials of --max-trials"}})
    expect_error(fmt::format("tune --space {} --study {} {} --algo tpe --objective v --direction minimize --max-trials 6 "
                             "--retrain-top {}",
                             space, study, command, value),
                 message);
  expect_error(fmt::format("tune --space {} --study {} {} --algo tpe --objective v --direction minimize --retrain-top 2 "
                           "--retrain-budget 3",
                           space, study, command),
               "--retrain-budget: needs --retrain-top auto");
  expect_error(fmt::format("tune --space {} --study {} {} --algo tpe --objective v --direction minimize --retrain-top auto "
                           "--retrain-budget 0",
                           space, study, command),
               "--retrain-budget");
  expect_error(fmt::format("tune --space {} --study {} {} --algo tpe --objective v --direction minimize --retrain-top 2 "
                           "--worker",
                           space, study, command),
               "--retrain-top with --worker");
  write_file(dir / "list.yaml", "parameters:\n  x1: [1, 2]\n  x2: [3, 4]\n");
  expect_error(fmt::format("tune --space {} --study {} {} --algo grid --retrain", (dir / "list.yaml").string(), study, command),
               "--retrain: belongs to hyperparameter studies");
  expect_error(fmt::format("tune --space {} --study {} {} --algo grid --retrain-top 2", (dir / "list.yaml").string(), study,
                           command),
               "--retrain-top: belongs to hyperparameter studies");
  expect_error(fmt::format("tune --space {} --study {} {} --algo tpe --objective throughput --direction minimize", space,
                           study, command),
               "--direction minimize: the throughput objective is maximized");
  write_file(dir / "typo.yaml", "parameters:\n  lr: {type: float, low: 1.0e-5, hi: 0.1, log: true}\n");
  expect_error(fmt::format("tune --space {} --study {} {} --algo tpe --objective v --direction minimize",
                           (dir / "typo.yaml").string(), study, command),
               "parameters.lr: unknown field 'hi' (did you mean 'high'?)");
  // Issue 21: a parameter named like a built-in placeholder was silently replaced by it.
  for (const char* builtin : {"steps", "config", "trial_id", "trial_dir", "strategy"}) {
    write_file(dir / "clash.yaml", fmt::format("parameters:\n  {}: [1, 2]\n  x2: [3, 4]\n", builtin));
    expect_error(fmt::format("tune --space {} --study {} {} --algo random --objective v --direction minimize",
                             (dir / "clash.yaml").string(), study, command),
                 fmt::format("clash.yaml: parameters.{}: '{}' is the name of a built-in placeholder", builtin, builtin));
    // The parallel-configuration search (throughput of value lists) refuses it the same way.
    if (std::string(builtin) != "strategy")
      expect_error(fmt::format("tune --space {} --study {} {} --algo random", (dir / "clash.yaml").string(),
                               (dir / "c.db").string(), command),
                   fmt::format("clash.yaml: parameters.{}: '{}' is the name of a built-in placeholder", builtin, builtin));
  }
  // A trial that never reports the objective fails, saying what it did report.
  const Result misnamed = run(fmt::format("tune --space {} --study {} {} --algo random --objective val_loss --direction "
                                          "minimize --steps 1 --max-trials 2",
                                          space, (dir / "m.db").string(), command));
  EXPECT_EQ(misnamed.exit_code, 3) << misnamed.output;
  EXPECT_NE(misnamed.output.find("reported no 'val_loss' (it reported value)"), std::string::npos) << misnamed.output;
}

}  // namespace
