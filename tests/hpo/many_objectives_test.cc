// Studies of several objectives through `paratune tune --objective a,b --direction d1,d2` with real
// trial processes: the values stored, the Pareto front that `tune`, `study show` and `study show
// --json` give (checked against one computed by hand), resuming, and the refusals.
//
// The trial program is a shell script over a grid of x = 0..5: two steps, each reporting loss and
// cost before its step line; the last step's values are x and the cost below (the first step's are 10 more, so a front
// built from anything but the last value would differ). x = 5 reports no cost.
//
//   x     0  1  2  3  4
//   loss  0  1  2  3  4
//   cost  4  2  3  0  1
//
// Both minimized: x = 2 is dominated by x = 1 (1 <= 2, 2 < 3), x = 4 by x = 3; the front is x = 0,
// 1, 3 -- trials 1, 2 and 4 in grid order -- by loss. Its hypervolume against the worst value of
// each objective, (4, 4): the boxes [1, 4] x [2, 4] (6) and [3, 4] x [0, 4] (4) overlap in [3, 4] x
// [2, 4] (2), and x = 0's box has no height: 6 + 4 - 2 = 8.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "../cli/cli_util.h"
#include "../support/test_files.h"

namespace {

using paratune::testing::Result;
using paratune::testing::run;
using paratune::testing::write_file;

const char* kParetoTrial = R"(#!/bin/sh
x=$1
case $x in 0) c=4;; 1) c=2;; 2) c=3;; 3) c=0;; 4) c=1;; *) c=;; esac
for step in 0 1; do
  late=$((10 * (1 - step)))
  echo "@paratune {\"metric\": \"loss\", \"value\": $((x + late)), \"step\": $step}"
  [ -n "$c" ] && echo "@paratune {\"metric\": \"cost\", \"value\": $((c + late)), \"step\": $step}"
  echo "@paratune {\"step\": $step, \"step_time_s\": 0.01}"
done
exit 0
)";

// A folder with the space (x: 0..5 as a grid), the trial program, and the study file s.db to come.
std::filesystem::path pareto_study_dir(const std::string& name) {
  const auto dir = paratune::testing::fresh_test_dir("paratune_many_objectives", name);
  write_file(dir / "space.yaml", "parameters:\n  x: {type: categorical, choices: [0, 1, 2, 3, 4, 5]}\n");
  write_file(dir / "trial.sh", kParetoTrial);
  return dir;
}

// `paratune tune` of the study in `dir` with `flags` after the space, store and command.
Result pareto_tune(const std::filesystem::path& dir, const std::string& flags) {
  return run(fmt::format("tune --space {} --study {} --trials-dir {} --command 'sh {} {{x}}' --steps 2 {}",
                         (dir / "space.yaml").string(), (dir / "s.db").string(), (dir / "trials").string(),
                         (dir / "trial.sh").string(), flags));
}

const std::string kParetoFlags = "--algo grid --objective loss,cost --direction minimize,minimize";

// The front as it is expected: x = 0, 1 and 3 with their values, trials 1, 2 and 4 when the grid ran
// in its order (`numbered`).
void expect_hand_computed_pareto_front(const nlohmann::json& front, const std::string& where, bool numbered = true) {
  ASSERT_TRUE(front.is_object()) << where;
  EXPECT_EQ(front["objectives"], nlohmann::json::array({"loss", "cost"})) << where;
  EXPECT_EQ(front["directions"], nlohmann::json::array({"minimize", "minimize"})) << where;
  ASSERT_EQ(front["trials"].size(), 3u) << where;
  const int numbers[] = {1, 2, 4};
  const double values[][2] = {{0, 4}, {1, 2}, {3, 0}};
  const int xs[] = {0, 1, 3};
  for (std::size_t i = 0; i < 3; ++i) {
    if (numbered) EXPECT_EQ(front["trials"][i]["number"], numbers[i]) << where;
    EXPECT_EQ(front["trials"][i]["values"], nlohmann::json::array({values[i][0], values[i][1]})) << where;
    EXPECT_EQ(front["trials"][i]["params"]["x"], xs[i]) << where;
  }
  EXPECT_EQ(front["completed"], 5) << where;
  EXPECT_EQ(front["reference"], nlohmann::json::array({4.0, 4.0})) << where;
  EXPECT_DOUBLE_EQ(front["hypervolume"].get<double>(), 8.0) << where;
}

TEST(HpoManyObjectives, AGridStudyStoresTheParetoFrontAndEveryViewShowsIt) {
  const auto dir = pareto_study_dir("grid");
  const Result r = pareto_tune(dir, kParetoFlags + " --json");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const nlohmann::json summary = nlohmann::json::parse(r.output.substr(r.output.find("{\n")), nullptr, false);
  ASSERT_TRUE(summary.is_object()) << r.output;
  expect_hand_computed_pareto_front(summary["pareto_front"], "tune --json");
  EXPECT_TRUE(summary["best"].is_null()) << "a front, not one best";

  const Result shown = run(fmt::format("study show {} --json", (dir / "s.db").string()));
  ASSERT_EQ(shown.exit_code, 0) << shown.output;
  const nlohmann::json j = nlohmann::json::parse(shown.output);
  expect_hand_computed_pareto_front(j["pareto_front"], "study show --json");
  EXPECT_EQ(j["config"]["objectives"], nlohmann::json::array({"loss", "cost"}));
  EXPECT_EQ(j["config"]["directions"], nlohmann::json::array({"minimize", "minimize"}));
  EXPECT_TRUE(j["best"].is_null());
  // x = 5 reported no cost: failed, saying so, and the study went on.
  ASSERT_EQ(j["trials"].size(), 6u);
  EXPECT_EQ(j["trials"][5]["status"], "failed");
  EXPECT_NE(j["trials"][5]["reason"].get<std::string>().find("reported no finite 'cost', one of the study's objectives "
                                                             "(it reported loss)"),
            std::string::npos)
      << j["trials"][5];
  // The trial's stored objective is the first objective's last value.
  EXPECT_EQ(j["trials"][3]["objective"], 3.0);

  const Result text = run(fmt::format("study show {}", (dir / "s.db").string()));
  ASSERT_EQ(text.exit_code, 0) << text.output;
  for (const std::string& line :
       {std::string("objectives: loss (minimize), cost (minimize)"),
        std::string("Pareto front (3 of 5 completed trials; loss minimize, cost minimize), by loss:"),
        std::string("hypervolume 8 against the reference (4, 4): the worst value of each objective among the "
                    "completed trials")})
    EXPECT_NE(text.output.find(line), std::string::npos) << line << "\n" << text.output;
  EXPECT_EQ(text.output.find("best:"), std::string::npos) << text.output;
  // tune's own summary ends with the front too.
  const Result again = pareto_tune(dir, kParetoFlags);
  EXPECT_EQ(again.exit_code, 0) << again.output;
  EXPECT_NE(again.output.find("objectives loss (minimize), cost (minimize)"), std::string::npos) << again.output;
  EXPECT_NE(again.output.find("Pareto front (3 of 5 completed trials"), std::string::npos) << again.output;
}

TEST(HpoManyObjectives, AResumeReusesTheTrialsAndAnotherListOfObjectivesIsRefused) {
  const auto dir = pareto_study_dir("resume");
  ASSERT_EQ(pareto_tune(dir, kParetoFlags + " --max-trials 3").exit_code, 0);
  const Result resumed = pareto_tune(dir, kParetoFlags + " --json");
  ASSERT_EQ(resumed.exit_code, 0) << resumed.output;
  const nlohmann::json j = nlohmann::json::parse(resumed.output.substr(resumed.output.find("{\n")));
  EXPECT_EQ(j["reused"], 3);
  EXPECT_EQ(j["started"], 3);
  // (A grid cut short by --max-trials is spread over the grid: the numbers are another order's.)
  expect_hand_computed_pareto_front(j["pareto_front"], "resumed", /*numbered=*/false);
  // The identity holds the objectives and their directions: another list is another study.
  for (const std::string& flags :
       {std::string("--algo grid --objective loss,cost --direction minimize,maximize"),
        std::string("--algo grid --objective cost,loss --direction minimize,minimize"),
        std::string("--algo grid --objective loss --direction minimize")}) {
    const Result refused = pareto_tune(dir, flags);
    EXPECT_EQ(refused.exit_code, 2) << flags << "\n" << refused.output;
    EXPECT_NE(refused.output.find("when the study was created"), std::string::npos) << flags << "\n" << refused.output;
  }
}

TEST(HpoManyObjectives, BadListsAndWhatNeedsOneObjectiveAreRefusedBeforeAnythingRuns) {
  const auto dir = pareto_study_dir("bad");
  const auto expect_error = [&](const std::string& flags, const std::string& message) {
    const Result r = pareto_tune(dir, flags);
    EXPECT_EQ(r.exit_code, 2) << flags << "\n" << r.output;
    EXPECT_NE(r.output.find(message), std::string::npos) << flags << "\n" << r.output;
    EXPECT_FALSE(std::filesystem::exists(dir / "trials")) << flags << ": a trial ran";
  };
  expect_error("--algo grid --objective loss,cost",
               "--objective loss,cost: give --direction with one direction per objective, in the same order (e.g. "
               "--direction minimize,minimize)");
  expect_error("--algo grid --objective loss,cost --direction minimize",
               "--direction minimize: 1 directions for the 2 objectives of --objective loss,cost");
  expect_error("--algo grid --objective loss --direction minimize,minimize",
               "--direction minimize,minimize: 2 directions for one objective (loss)");
  expect_error("--algo grid --objective loss,cost --direction minimize,up", "--direction minimize,up");
  expect_error("--algo grid --objective loss,loss --direction minimize,minimize",
               "--objective loss,loss: 'loss' is named twice");
  expect_error("--algo grid --objective loss, --direction minimize,minimize", "objective 2 is empty");
  expect_error("--algo grid --objective loss,throughput --direction minimize,minimize",
               "objective 2 is throughput, which is maximized");
  expect_error(kParetoFlags + " --pruner median",
               "--pruner median: stops trials by one objective's learning curve; a study of several objectives runs "
               "every trial to its end (pruner none)");
  expect_error("--algo cmaes --objective loss,cost --direction minimize,minimize --max-trials 2",
               "sampler cmaes: searches one objective, the study has 2");
  expect_error(kParetoFlags + " --retrain", "--retrain with --objective loss,cost: retrains the best configurations");
}

TEST(HpoManyObjectives, ThroughputMayBeOneOfTheObjectives) {
  const auto dir = pareto_study_dir("throughput");
  const Result r = pareto_tune(dir, "--algo random --max-trials 3 --objective loss,throughput --direction minimize,maximize "
                             "--json");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const nlohmann::json j = nlohmann::json::parse(r.output.substr(r.output.find("{\n")));
  const nlohmann::json& front = j["pareto_front"];
  ASSERT_FALSE(front["trials"].empty()) << j.dump(1);
  for (const nlohmann::json& t : front["trials"]) {
    ASSERT_EQ(t["values"].size(), 2u);
    EXPECT_GT(t["values"][1].get<double>(), 0) << "steps/s";
  }
}

}  // namespace
