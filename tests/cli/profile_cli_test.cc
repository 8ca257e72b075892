// `paratune profile` end to end on this machine's CPU (the measurer is real: PyTorch and Gloo), and
// `--profile` on estimate and plan (issue 45).
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>

#include "../support/test_files.h"
#include "../test_paths.h"
#include "cli_util.h"

namespace paratune::profile_cli_test {

using paratune::testing::run;
using paratune::testing::Result;

// A small dense decoder the CPU measures in seconds.
constexpr const char* kTinyModel = R"(name: tiny-dense
num_layers: 4
hidden_size: 256
num_attention_heads: 4
num_kv_heads: 2
ffn_hidden_size: 512
gated_mlp: true
vocab_size: 1024
norm: rmsnorm
position_embedding: rope
)";

std::string setup_flags(const std::filesystem::path& dir) {
  paratune::testing::write_file(dir / "tiny.yaml", kTinyModel);
  return "--model " + (dir / "tiny.yaml").string() + " --cluster " + std::string(PARATUNE_SOURCE_DIR) +
         "/examples/cluster-cpu.yaml --seq-len 256 --global-batch 2";
}

TEST(ProfileCli, MeasuresTheCpuAndTheProfilePricesEstimates) {
  // The measurer is the Python package's: a sanitized tree builds no Python module (the Release
  // tree's run of this test measures).
  if (!std::filesystem::exists(std::filesystem::path(PARATUNE_BINARY).parent_path() / "python" / "paratune" / "profile.py"))
    GTEST_SKIP() << "no Python module in this build tree";
  const auto dir = paratune::testing::fresh_test_dir("ProfileCli", "measures");
  const std::string setup = setup_flags(dir);
  const std::string out = (dir / "profile.json").string();
  const Result measured = run("profile " + setup + " --config dp=2,mbs=1 --config tp=2,mbs=1 --quick --nproc 2 --warmup 0 " +
                              "--repetitions 2 --python /usr/bin/python3 --out " + out);
  ASSERT_EQ(measured.exit_code, 0) << measured.output;
  for (const char* kind : {"gemm", "attention forward", "attention backward", "all_reduce", "memory bandwidth", "training step of 1 layer"})
    EXPECT_NE(measured.output.find(kind), std::string::npos) << kind << " in\n" << measured.output;
  // The plan it measured lies next to the profile, with the model's QKV GEMM: 256 tokens x
  // (4 + 2·2)·64 x 256.
  const nlohmann::json plan = nlohmann::json::parse(paratune::testing::read_file(dir / "profile.plan.json"));
  bool qkv = false;
  for (const auto& g : plan["gemms"]) qkv = qkv || g["id"] == "gemm/256x512x256/bf16";
  EXPECT_TRUE(qkv) << plan["gemms"].dump();

  const std::string config = " --config dp=2,mbs=1 --json";
  const Result fitted = run("estimate " + setup + config);
  const Result profiled = run("estimate " + setup + config + " --profile " + out);
  ASSERT_EQ(fitted.exit_code, 0) << fitted.output;
  ASSERT_EQ(profiled.exit_code, 0) << profiled.output;
  const nlohmann::json a = nlohmann::json::parse(fitted.output), b = nlohmann::json::parse(profiled.output);
  EXPECT_NE(a["iteration_time_s"], b["iteration_time_s"]) << "the CPU is not the nominal device of cluster-cpu.yaml";
  EXPECT_EQ(b["predicted_by"]["profile"]["file"], out);
  EXPECT_FALSE(a["predicted_by"].contains("profile"));

  // The planner prices with it too, and says so.
  const Result plan_run = run("plan " + setup + " --profile " + out);
  ASSERT_EQ(plan_run.exit_code, 0) << plan_run.output;
  EXPECT_NE(plan_run.output.find("hardware profile " + out), std::string::npos) << plan_run.output;

  // Comparing again from the file gives the same table.
  const Result again = run("profile " + setup + " --from " + out + " --json");
  ASSERT_EQ(again.exit_code, 0) << again.output;
  const nlohmann::json table = nlohmann::json::parse(again.output);
  EXPECT_GT(table["rows"].size(), 5U);
  EXPECT_GT(table["step"]["measured_s"].get<double>(), 0);
}

TEST(ProfileCli, AProfileOfAnotherModelOrABrokenFileIsRefusedWithTheReason) {
  const auto dir = paratune::testing::fresh_test_dir("ProfileCli", "refused");
  const std::string setup = setup_flags(dir);
  const Result missing = run("estimate " + setup + " --config dp=2 --profile " + (dir / "none.json").string());
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_NE(missing.output.find("--profile"), std::string::npos) << missing.output;
  paratune::testing::write_file(dir / "other.json", R"({"format": "paratune-hardware-profile", "version": 1,
    "plan": {"model": "llama3-8b", "model_fingerprint": "0123456789abcdef", "gpu": "cpu", "precision": "bf16"},
    "device": {"backend": "cpu", "name": "x"}})");
  const Result other = run("estimate " + setup + " --config dp=2 --profile " + (dir / "other.json").string());
  EXPECT_EQ(other.exit_code, 2);
  EXPECT_NE(other.output.find("measured for model 'llama3-8b'"), std::string::npos) << other.output;
  const Result plan_only = run("profile " + setup + " --plan-only --out " + (dir / "p.json").string());
  ASSERT_EQ(plan_only.exit_code, 0) << plan_only.output;
  EXPECT_TRUE(std::filesystem::exists(dir / "p.plan.json"));
  const Result bad_python = run("profile " + setup + " --python /nonexistent/python3 --out " + (dir / "q.json").string());
  EXPECT_NE(bad_python.exit_code, 0);
  EXPECT_NE(bad_python.output.find("/nonexistent/python3"), std::string::npos) << bad_python.output;
}

// --quick asks for fewer repetitions (its help says so; the plan once kept 3 + 10 and a CPU run of
// Llama 3 8B's widths took 2.6 minutes); a stated --warmup or --repetitions wins either way.
TEST(ProfileCli, QuickMeasuresFewerRepetitionsUnlessTold) {
  const auto dir = paratune::testing::fresh_test_dir("ProfileCli", "quick");
  const std::string setup = setup_flags(dir);
  const auto planned = [&](const std::string& flags) {
    const std::filesystem::path out = dir / "p.json";
    const Result r = run("profile " + setup + " --plan-only " + flags + " --out " + out.string());
    EXPECT_EQ(r.exit_code, 0) << r.output;
    const nlohmann::json plan = nlohmann::json::parse(paratune::testing::read_file(dir / "p.plan.json"));
    return std::pair{plan.at("warmup").get<int>(), plan.at("repetitions").get<int>()};
  };
  EXPECT_EQ(planned(""), std::pair(3, 10));
  EXPECT_EQ(planned("--quick"), std::pair(1, 3));
  EXPECT_EQ(planned("--quick --warmup 0"), std::pair(0, 3));
  EXPECT_EQ(planned("--quick --repetitions 7"), std::pair(1, 7));
  EXPECT_EQ(planned("--warmup 2 --repetitions 5"), std::pair(2, 5));
}

// A measurer (here a wrapper script, as `--python` may name one) that runs past --timeout is
// stopped with everything it started: killing only the process paratune started left its children
// measuring (and one of them writing --out after paratune gave up on it).
TEST(ProfileCli, AMeasurerPastItsTimeoutIsStoppedWithTheProcessesItStarted) {
  const auto dir = paratune::testing::fresh_test_dir("ProfileCli", "timeout");
  const std::string setup = setup_flags(dir);
  const auto script = dir / "measurer.sh";
  paratune::testing::write_file(script,
                                "#!/bin/sh\nsleep 30 &\necho $! > " + (dir / "child.pid").string() + "\nsleep 30\n");
  std::filesystem::permissions(script, std::filesystem::perms::owner_all);
  const Result r =
      run("profile " + setup + " --timeout 1 --python " + script.string() + " --out " + (dir / "p.json").string());
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.output.find("ran past --timeout 1 s and was stopped"), std::string::npos) << r.output;
  const std::string child = paratune::testing::read_file(dir / "child.pid");
  ASSERT_FALSE(child.empty());
  // Gone, or a zombie waiting for its new parent to reap it: not running.
  auto running = [&] {
    std::ifstream stat("/proc/" + child.substr(0, child.find('\n')) + "/stat");
    std::string line;
    if (!std::getline(stat, line)) return false;
    return line.substr(line.rfind(')') + 2, 1) != "Z";
  };
  for (int i = 0; i < 20 && running(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_FALSE(running()) << "the measurer's child " << child << " still runs";
}

// A measurer that exits 0 without writing --out: the file an earlier run left there is not read as
// this run's profile (it was, silently).
TEST(ProfileCli, AMeasurerThatWritesNoProfileIsAnErrorEvenWithAnOldOneThere) {
  const auto dir = paratune::testing::fresh_test_dir("ProfileCli", "stale");
  const std::string setup = setup_flags(dir);
  const std::string out = (dir / "p.json").string();
  ASSERT_EQ(run("profile " + setup + " --plan-only --out " + out).exit_code, 0);
  const nlohmann::json plan = nlohmann::json::parse(paratune::testing::read_file(dir / "p.plan.json"));
  const nlohmann::json old = {{"format", "paratune-hardware-profile"},
                              {"version", 1},
                              {"plan",
                               {{"model", plan["model"]},
                                {"model_fingerprint", plan["model_fingerprint"]},
                                {"gpu", plan["gpu"]},
                                {"precision", plan["precision"]}}},
                              {"device", {{"backend", "cpu"}, {"name", "an earlier run"}}}};
  paratune::testing::write_file(out, old.dump());
  ASSERT_EQ(run("profile " + setup + " --from " + out).exit_code, 0) << "the old profile is a valid one";
  const Result r = run("profile " + setup + " --python /bin/true --out " + out);
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("exited with code 0 but wrote no profile to --out " + out +
                          " (the file there is an earlier run's)"),
            std::string::npos)
      << r.output;
  const Result none = run("profile " + setup + " --python /bin/true --out " + (dir / "q.json").string());
  EXPECT_EQ(none.exit_code, 2);
  EXPECT_NE(none.output.find("wrote no profile to --out"), std::string::npos) << none.output;
}

// --out that cannot be a profile file: refused with the flag and the reason, before measuring.
TEST(ProfileCli, AnOutThatCannotBeWrittenIsRefusedNamingTheFlagAndWhy) {
  const auto dir = paratune::testing::fresh_test_dir("ProfileCli", "out");
  const std::string setup = setup_flags(dir);
  Result r = run("profile " + setup + " --plan-only --out ''");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.output.find("--out: an empty path"), std::string::npos) << r.output;
  EXPECT_FALSE(std::filesystem::exists(".plan.json"));
  r = run("profile " + setup + " --plan-only --out " + dir.string());
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.output.find("is a folder"), std::string::npos) << r.output;
  // --fit-calibration over the profile itself: refused, the profile kept.
  paratune::testing::write_file(dir / "kept.json", "{}");
  r = run("profile " + setup + " --from " + (dir / "kept.json").string() + " --fit-calibration " + dir.string() +
          "/./kept.json");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.output.find("is the profile (--from "), std::string::npos) << r.output;
  EXPECT_EQ(paratune::testing::read_file(dir / "kept.json"), "{}");
  r = run("profile " + setup + " --plan-only --out " + (dir / "no-such-folder" / "p.json").string());
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(
      r.output.find("--out (the plan is written beside it): " + (dir / "no-such-folder" / "p.plan.json").string() +
                    ": cannot write file (No such file or directory)"),
      std::string::npos)
      << r.output;
}

}  // namespace paratune::profile_cli_test
