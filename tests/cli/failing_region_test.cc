// Issue 21 item 17, end to end: a region of the space where every configuration is refused at
// start-up (exit 3 "invalid configuration", as Megatron refuses a tp that does not divide the
// heads). Space a, b in {1, 2, 4, 8}, c in {0..3}; the trial (bench/functions/function_trial.cc,
// "abc") fails at once whenever a >= 4 and otherwise measures (1 + (log2 b - 1)^2 + (c - 2)^2 / 4) / a
// (as step time, so throughput = 1 / that; as the objective "value" to minimize), which falls with a:
// a model is drawn towards the failing region. --max-trials 30, seed 1.
//
// Before the searches learned from failures: bo ran 25, oppa 17, tpe 11 and gp 10 of the 30 trials
// in the failing region (random: 15). Now every model-based search must keep to at most 5, still
// find the best configuration that runs, count every failure as a trial, and never run a refused
// configuration twice.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <set>

#include <unistd.h>

#include "cli_util.h"

namespace {

using paratune::testing::Result;
using paratune::testing::run;

std::filesystem::path failing_region_dir(const std::string& name) {
  const std::filesystem::path dir = std::filesystem::absolute(std::filesystem::path(::testing::TempDir())) /
                                    fmt::format("paratune_failing_region_{}_{}", ::getpid(), name);
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

TEST(FailingRegion, EveryModelBasedSearchLearnsToStayOutOfIt) {
  for (const std::string algo : {"bo", "oppa", "tpe", "gp"}) {
    const auto dir = failing_region_dir(algo);
    std::ofstream(dir / "space.yaml") << "parameters:\n  a: [1, 2, 4, 8]\n  b: [1, 2, 4, 8]\n  c: [0, 1, 2, 3]\n";
    const bool hpo = algo == "tpe" || algo == "gp";
    const Result r = run(fmt::format(
        "tune --space {} --study {} --algo {} --seed 1 --max-trials 30 --steps 6 --json "
        "--command '{} abc --step-time-is-value --fail-above a 2 --fail-code 3' {}",
        (dir / "space.yaml").string(), (dir / "s.db").string(), algo, PARATUNE_FUNCTION_TRIAL,
        hpo ? "--objective value --direction minimize" : ""));
    ASSERT_EQ(r.exit_code, 0) << algo << ": " << r.output;
    const nlohmann::json j = nlohmann::json::parse(r.output.substr(r.output.find("{\n")));

    // Failures are trials like any other: --max-trials counts them.
    ASSERT_EQ(j["trials"].size(), 30u) << algo;
    int failing_region = 0;
    std::set<std::string> refused;
    for (const auto& t : j["trials"]) {
      const bool fails = t["params"]["a"].get<int>() >= 4;
      failing_region += fails;
      if (!fails) {
        EXPECT_TRUE(t["status"] == "completed" || t["status"] == "early-stopped") << algo << ": " << t.dump();
        continue;
      }
      EXPECT_EQ(t["status"], "failed") << algo << ": " << t.dump();
      EXPECT_EQ(t["exit_code"], 3) << algo;
      EXPECT_TRUE(refused.insert(t["params"].dump()).second) << algo << ": ran a refused configuration again: "
                                                             << t["params"].dump();
    }
    EXPECT_LE(failing_region, 5) << algo << ": " << failing_region << " of 30 trials in the failing region";
    // What the failures cost, by kind: exit 3 before a step is a refusal, never run again.
    EXPECT_TRUE(j.contains("failures")) << algo;
    if (!j.contains("failures")) continue;
    EXPECT_EQ(j["failures"]["trials"], failing_region) << algo;
    EXPECT_EQ(j["failures"]["never_again"], failing_region) << algo;
    if (failing_region > 0) EXPECT_EQ(j["failures"]["kinds"]["refused"], failing_region) << algo;

    // It still finds the best configuration that runs: (a, b, c) = (2, 2, 2), value 0.5.
    ASSERT_TRUE(j["best"].is_object()) << algo;
    EXPECT_EQ(j["best"]["params"], nlohmann::json::parse(R"({"a": 2, "b": 2, "c": 2})")) << algo;
  }
}

}  // namespace
