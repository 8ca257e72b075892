// Inter-trial fusion (fused_models.h, fused_optimizer.h, fused_trainer.h): a fused group of trials
// gives each member the curve it trains alone, member by member, for SGD, AdamW and Adam, MLP, CNN
// and GPT (with muP and clipping); a member that diverges leaves the others' curves untouched; a
// group whose members differ in a shared option is refused naming it. Real processes, real data.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <array>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "paratune/train/corpus.h"
#include "paratune/train/idx.h"

namespace paratune::train {
namespace {

bool fused_data_present() {
  return std::filesystem::exists(kDebianFashionMnist) && std::filesystem::exists(kDebianFortunes);
}

struct Output {
  int exit_code = -1;
  std::string text;
  // member (-1: a trial alone) -> metric -> values in step order
  std::map<int, std::map<std::string, std::vector<double>>> metrics;
  std::vector<nlohmann::json> diverged;
};

Output run(const std::string& args, const std::string& params = "") {
  const std::string command = (params.empty() ? "" : "PARATUNE_PARAMS='" + params + "' ") +
                              std::string(PARATUNE_TRAIN_BINARY) + " " + args + " 2>&1";
  Output out;
  FILE* pipe = popen(command.c_str(), "r");
  std::array<char, 4096> buffer{};
  while (fgets(buffer.data(), buffer.size(), pipe)) out.text += buffer.data();
  const int status = pclose(pipe);
  out.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  std::istringstream lines(out.text);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("@paratune ", 0) != 0) continue;
    const nlohmann::json j = nlohmann::json::parse(line.substr(10));
    if (j.contains("diverged")) out.diverged.push_back(j);
    if (j.contains("metric")) out.metrics[j.value("member", -1)][j["metric"].get<std::string>()].push_back(j["value"]);
  }
  return out;
}

// Every metric of the member equals the alone run's within `relative` (float reassociation in the
// batched kernels: measured below 1e-6 after 6 steps).
void expect_same_curves(const std::map<std::string, std::vector<double>>& fused,
                        const std::map<std::string, std::vector<double>>& alone, double relative,
                        const std::string& what) {
  ASSERT_EQ(fused.size(), alone.size()) << what;
  for (const auto& [name, values] : alone) {
    ASSERT_EQ(fused.at(name).size(), values.size()) << what << " " << name;
    for (std::size_t i = 0; i < values.size(); ++i)
      EXPECT_NEAR(fused.at(name)[i], values[i], relative * std::abs(values[i])) << what << " " << name << " #" << i;
  }
}

TEST(FusedTraining, EachMemberFollowsTheCurveItTrainsAlone) {
  if (!fused_data_present()) GTEST_SKIP() << "dataset-fashion-mnist or fortunes not installed";
  struct Case {
    std::string shared;
    std::vector<std::string> members;  // JSON objects
    std::vector<std::string> alone;    // the same as arguments
  };
  const std::vector<Case> cases{
      {"--model mlp --mlp-hidden 64,32 --batch-size 32 --optimizer sgd --eval-limit 256",
       {R"({"lr": 0.05})", R"({"lr": 0.2, "momentum": 0.5, "weight_decay": 0.01})",
        R"({"lr": 0.1, "momentum": 0, "schedule": "cosine", "warmup_steps": 2, "init_scale": 1.5})"},
       {"--lr 0.05", "--lr 0.2 --momentum 0.5 --weight-decay 0.01",
        "--lr 0.1 --momentum 0 --schedule cosine --warmup-steps 2 --init-scale 1.5"}},
      {"--model cnn --cnn-channels 8,16 --batch-size 16 --optimizer adamw --eval-limit 64",
       {R"({"lr": 0.001})", R"({"lr": 0.01, "weight_decay": 0.1, "init_scale": 0.7})"},
       {"--lr 0.001", "--lr 0.01 --weight-decay 0.1 --init-scale 0.7"}},
      {"--model gpt --layers 2 --d-model 64 --heads 4 --seq-len 16 --batch-size 4 --optimizer adam --eval-limit 16 "
       "--surrogate-ratio 2 --parametrization mup --clip-norm 0.5",
       {R"({"lr": 0.001})", R"({"lr": 0.01, "weight_decay": 0.1, "beta2": 0.95})"},
       {"--lr 0.001", "--lr 0.01 --weight-decay 0.1 --beta2 0.95"}},
  };
  for (const Case& c : cases) {
    const std::string shared = c.shared + " --steps 6 --eval-every 3 --threads 1";
    std::string group = "[";
    for (const std::string& m : c.members) group += (group.size() > 1 ? "," : "") + m;
    const Output fused = run(shared, group + "]");
    ASSERT_EQ(fused.exit_code, 0) << fused.text;
    for (std::size_t b = 0; b < c.alone.size(); ++b) {
      const Output alone = run(shared + " " + c.alone[b]);
      ASSERT_EQ(alone.exit_code, 0) << alone.text;
      expect_same_curves(fused.metrics.at(static_cast<int>(b)), alone.metrics.at(-1), 1e-5, c.shared + " " + c.alone[b]);
    }
  }
}

// A member that diverges (lr 10 with weight decay 1: alone, an infinite loss at step 12) is reported
// once and dropped from the reports; the other trains on as it does alone.
TEST(FusedTraining, ADivergingMemberLeavesTheOthersUntouched) {
  if (!fused_data_present()) GTEST_SKIP() << "dataset-fashion-mnist or fortunes not installed";
  const std::string shared = "--model mlp --mlp-hidden 32 --batch-size 32 --optimizer sgd --eval-limit 128 --steps 30 "
                             "--threads 1";
  const Output fused = run(shared, R"([{"lr": 0.05}, {"lr": 10, "momentum": 0.9, "weight_decay": 1}])");
  ASSERT_EQ(fused.exit_code, 0) << fused.text;
  ASSERT_EQ(fused.diverged.size(), 1u) << fused.text;
  EXPECT_EQ(fused.diverged.front()["member"], 1);
  EXPECT_LT(fused.metrics.at(1).at("train_loss").size(), 30u);
  const Output alone = run(shared + " --lr 0.05");
  expect_same_curves(fused.metrics.at(0), alone.metrics.at(-1), 1e-5, "the surviving member");
  // Every member diverged: the group fails as a diverged trial does.
  const Output all = run(shared, R"([{"lr": 10, "momentum": 0.9, "weight_decay": 1}, {"lr": 9, "momentum": 0.9, "weight_decay": 1}])");
  EXPECT_EQ(all.exit_code, 3) << all.text;
}

// Members differing in a shared option, a member's option also on the command line (which would
// override every member's), a group of one, a bad value, several ranks: refused, naming the member.
TEST(FusedTraining, MembersThatDifferInASharedOptionAreRefused) {
  const Output batch = run("--model mlp --steps 2", R"([{"lr": 0.1}, {"lr": 0.1, "batch_size": 16}])");
  EXPECT_EQ(batch.exit_code, 2);
  EXPECT_NE(batch.text.find("PARATUNE_PARAMS[1]: batch_size: value 16 differs from member 0's 64"), std::string::npos)
      << batch.text;
  const Output one = run("--model mlp --steps 2", R"([{"lr": 0.1}])");
  EXPECT_EQ(one.exit_code, 2);
  EXPECT_NE(one.text.find("at least 2 objects"), std::string::npos) << one.text;
  const Output bad = run("--model mlp --steps 2", R"([{"lr": 0.1}, {"lr": -1}])");
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.text.find("PARATUNE_PARAMS[1]: PARATUNE_PARAMS: lr: value '-1'"), std::string::npos) << bad.text;
  const Output overridden = run("--model mlp --steps 2 --lr 0.5", R"([{"lr": 0.1}, {"lr": 0.2}])");
  EXPECT_EQ(overridden.exit_code, 2);
  EXPECT_NE(overridden.text.find("PARATUNE_PARAMS[0]: lr: also on the command line"), std::string::npos)
      << overridden.text;
  const Output ranks = run("--model mlp --steps 2 --strategy dp --ranks 2", R"([{"lr": 0.1}, {"lr": 0.2}])");
  EXPECT_EQ(ranks.exit_code, 2);
  EXPECT_NE(ranks.text.find("a fused group trains in one process"), std::string::npos) << ranks.text;
}

}  // namespace
}  // namespace paratune::train
