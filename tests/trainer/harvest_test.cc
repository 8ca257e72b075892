// Hydro's Coordinator for real (hpo/bubble_coordinator.h, src/trainer/bubble_gate.h): a 2-rank
// GPipe job of paratune-train with a trial parked beside each rank. The trial (a program that
// timestamps its own progress every 0.2 ms of CPU) must make progress, and only inside its rank's
// bubbles: paused (SIGSTOP) whenever the rank computes, resumed (SIGCONT) while it waits.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "paratune/train/idx.h"

namespace {

namespace fs = std::filesystem;

// The MLP trains on Fashion-MNIST as Debian installs it (dataset-fashion-mnist).
bool harvest_data_present() { return fs::exists(paratune::train::kDebianFashionMnist); }

std::pair<int, std::string> capture(const std::string& command) {
  std::string out;
  FILE* pipe = popen((command + " 2>&1").c_str(), "r");
  std::array<char, 4096> buffer{};
  while (fgets(buffer.data(), buffer.size(), pipe)) out += buffer.data();
  const int status = pclose(pipe);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
}

TEST(Harvest, TrialsRunOnlyInsideTheirRanksBubbles) {
  if (!harvest_data_present()) GTEST_SKIP() << "dataset-fashion-mnist not installed";
  const fs::path dir = fs::absolute(fs::path(::testing::TempDir()) / "harvest");
  // One harvest of a `steps`-step job: every tick of every trial must lie inside a bubble of its
  // rank; returns how many ticks there were.
  const auto harvest_ticks = [&](int steps) -> std::size_t {
    fs::remove_all(dir);
    fs::create_directories(dir);
    std::ofstream(dir / "params.jsonl") << R"({"lr": 0.1})" << "\n";
    const std::string command =
        std::string(PARATUNE_BINARY) + " harvest --ranks 2 --baseline --out " + (dir / "out").string() +
        " --trial-params " + (dir / "params.jsonl").string() + " --trial '" + PARATUNE_FAKE_TRIAL +
        " --tick TRIAL_DIR' --job '" + PARATUNE_TRAIN_BINARY +
        " --model mlp --mlp-hidden 256,128 --ranks 2 --strategy gpipe --micro-batches 4 --steps " + std::to_string(steps) +
        " --eval-limit 128 --threads 1' --svg " + (dir / "timeline.svg").string() + " --json";
    const auto [exit_code, output] = capture(command);
    EXPECT_EQ(exit_code, 0) << output;
    if (exit_code != 0) return 0;
    const nlohmann::json j = nlohmann::json::parse(output.substr(output.find("{\n")));
    for (const char* run : {"baseline", "harvest"}) {
      EXPECT_EQ(j[run]["job_steps"].size(), static_cast<std::size_t>(steps)) << run;
      EXPECT_EQ(j[run]["job_exit_code"], 0) << run;
    }
    EXPECT_TRUE(j["baseline"]["trials"].empty());
    EXPECT_TRUE(fs::exists(dir / "timeline.svg"));
    // Each rank's bubbles (CLOCK_MONOTONIC, as the rank wrote them) and its trial's ticks.
    std::size_t ticks_seen = 0;
    for (int rank = 0; rank < 2; ++rank) {
      std::vector<std::pair<double, double>> bubbles;
      std::ifstream in(dir / "out" / "harvest" / ("rank-" + std::to_string(rank) + ".bubbles"));
      for (double a = 0, b = 0; in >> a >> b;) bubbles.emplace_back(a, b);
      EXPECT_FALSE(bubbles.empty()) << "rank " << rank << " reported no bubble";
      for (const auto& trial : j["harvest"]["trials"]) {
        if (trial["rank"] != rank) continue;
        std::ifstream ticks(fs::path(trial["dir"].get<std::string>()) / "ticks");
        for (double t = 0; ticks >> t; ++ticks_seen) {
          bool inside = false;
          for (const auto& [start, end] : bubbles) inside = inside || (t >= start && t <= end);
          EXPECT_TRUE(inside) << "rank " << rank << "'s trial ran at " << t << ", outside every bubble of its rank";
        }
      }
    }
    return ticks_seen;
  };
  // How many ticks fit into the bubbles depends on the machine's load: on 2 cores shared with a
  // sanitized build, a 20-step job's bubbles (about 0.1 s each) once passed before a sanitized trial
  // program ticked at all. So what is checked is that trials run, only inside bubbles, given a job
  // long enough: a harvest with no tick is repeated with a job twice as long (up to 80 steps).
  std::size_t ticks_seen = 0;
  for (int steps = 20; steps <= 80 && ticks_seen == 0 && !HasFailure(); steps *= 2) ticks_seen = harvest_ticks(steps);
  EXPECT_GT(ticks_seen, 0u) << "the trials never ran inside a bubble, in jobs of up to 80 steps";
}

}  // namespace

namespace {

// A trial slot whose trials end without a step (here `true`) is given up after three, noted, while
// the job runs on; a program that does not exist is refused before anything runs.
TEST(Harvest, TrialsThatNeverStepAreGivenUpAndMissingProgramsRefused) {
  if (!harvest_data_present()) GTEST_SKIP() << "dataset-fashion-mnist not installed";
  const fs::path dir = fs::absolute(fs::path(::testing::TempDir()) / "harvest-give-up");
  fs::remove_all(dir);
  fs::create_directories(dir);
  std::ofstream(dir / "params.jsonl") << "{}\n";
  const std::string job = std::string(" --job '") + PARATUNE_TRAIN_BINARY +
                          " --model mlp --mlp-hidden 256,128 --ranks 2 --strategy gpipe --micro-batches 4 --steps 30 "
                          "--eval-limit 128 --threads 1'";
  const std::string harvest = std::string(PARATUNE_BINARY) + " harvest --ranks 2 --out " + (dir / "out").string() +
                              " --trial-params " + (dir / "params.jsonl").string();
  auto [exit_code, output] = capture(harvest + " --trial true" + job + " --json");
  ASSERT_EQ(exit_code, 0) << output;
  const nlohmann::json j = nlohmann::json::parse(output.substr(output.find("{\n")));
  EXPECT_EQ(j["harvest"]["job_steps"].size(), 30u);
  const std::string notes = j["harvest"]["notes"].dump();
  // How many trials end inside the job's 30 steps depends on the machine's load (under sanitizers on
  // a loaded machine, fewer than three did): the rule checked is that a slot runs at most three
  // stepless trials, and is given up, with the note, once three have ended.
  for (int rank : {0, 1}) {
    std::size_t ended = 0;
    for (const auto& t : j["harvest"]["trials"])
      if (t["rank"] == rank && t["status"] == "completed") ++ended;
    EXPECT_LE(ended, 3u) << j["harvest"]["trials"].dump();
    if (ended == 3)
      EXPECT_NE(notes.find(fmt::format("rank {}'s trial slot was given up: 3 trials in a row ended without a step",
                                       rank)),
                std::string::npos)
          << notes;
  }
  EXPECT_FALSE(j["harvest"]["trials"].empty()) << "no trial ran: " << output;
  EXPECT_LE(j["harvest"]["trials"].size(), 6u) << j["harvest"]["trials"].dump();
  std::tie(exit_code, output) = capture(harvest + " --trial /no/such/trainer" + job);
  EXPECT_EQ(exit_code, 2) << output;
  EXPECT_NE(output.find("--trial: '/no/such/trainer' is not an executable program"), std::string::npos) << output;
}

}  // namespace
