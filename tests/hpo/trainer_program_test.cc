// The trainer interface (hpo/trainer_program.h): the study's trainer is paratune-train when the
// command runs it, and another implementation plugs in through HpoOptions::trainer -- its surrogates,
// fused groups and --strategy auto choices are what the engine uses, checked and run end to end with
// a shell script as its trial program. (paratune-train's own: tests/trainer/trainer_test.cc.)
#include "paratune/hpo/trainer_program.h"

#include <gtest/gtest.h>

#include <fstream>

#include "paratune/hpo/fusion.h"
#include "paratune/hpo/pruner.h"
#include "paratune/hpo/sampler.h"
#include "paratune/hpo/study.h"
#include "paratune/spec/option_error.h"
#include "paratune/store/sqlite_store.h"

namespace paratune::hpo {
namespace {

// Picks "mp" for every trial of more than one rank, "none" for one; remembers what it was asked.
class FakeChooser final : public StrategyChooser {
 public:
  explicit FakeChooser(std::vector<std::string>* asked) : asked_(asked) {}
  Choice choose(const trial::TrialLaunch& launch, int ranks) override {
    asked_->push_back(launch.params_json);
    return {ranks > 1 ? "mp" : "none", {{"why", "the fake trainer's choice"}}};
  }

 private:
  std::vector<std::string>* asked_;
};

// A trainer that is not paratune-train: it fuses trials that differ in "lr", narrows its model by
// "width_divisor" and has a cost model of its own.
class FakeTrainer final : public TrainerProgram {
 public:
  std::string name() const override { return "fake-train"; }
  bool runs(const std::string& command) const override { return command_program(command) == "fake-train"; }
  std::vector<std::string> fusable_parameters() const override { return {"lr"}; }
  std::optional<nlohmann::ordered_json> surrogate_params(double ratio) const override {
    return nlohmann::ordered_json{{"width_divisor", ratio}};
  }
  Transfer transfer(const trial::TrialLaunch& target, double ratio) const override {
    Transfer t;
    t.surrogate_widths = "width " + std::to_string(static_cast<int>(64 / ratio));
    t.target_widths = "width 64 (" + target.id + ")";
    return t;
  }
  std::unique_ptr<StrategyChooser> strategy_chooser(std::filesystem::path /*profiles_dir*/,
                                                    std::vector<int> study_ranks) const override {
    chooser_ranks = study_ranks;
    return std::make_unique<FakeChooser>(&asked);
  }
  mutable std::vector<int> chooser_ranks;
  mutable std::vector<std::string> asked;
};

TEST(HpoTrainer, IsParatuneTrainWhereTheCommandRunsItUnlessTheOptionsNameOne) {
  EXPECT_EQ(trainer_for("/opt/paratune/bin/paratune-train --model mlp --lr {lr}"), &paratune_train());
  EXPECT_EQ(trainer_for("python3 train.py --lr {lr}"), nullptr);
  EXPECT_EQ(trainer_for(""), nullptr);
  HpoOptions options;
  options.command = "python3 train.py";
  EXPECT_EQ(trainer_of(options), nullptr);
  FakeTrainer fake;
  options.trainer = &fake;
  EXPECT_EQ(trainer_of(options), &fake);
}

// What the options' checks, a run's PARATUNE_PARAMS, fusion's shared key and the transfer take from
// the trainer.
TEST(HpoTrainer, AnotherTrainersSurrogatesAndFusionAreTheOnesUsed) {
  FakeTrainer fake;
  HpoOptions o{.name = "s", .command = "fake-train --batch {batch}", .steps = 4, .objective = "loss",
               .direction = Direction::kMinimize, .trials_dir = "t"};
  o.surrogate_ratio = 4;
  o.fuse = 2;
  try {
    validate(o);
    ADD_FAILURE() << "no trainer: no surrogates";
  } catch (const OptionError& e) {
    EXPECT_NE(std::string(e.what()).find("narrows the model of paratune-train"), std::string::npos) << e.what();
  }
  o.trainer = &fake;
  EXPECT_NO_THROW(validate(o));
  const Space space = Space::parse("parameters:\n  lr: [0.1, 0.2]\n  batch: [8, 16]\n", "space.yaml");
  EXPECT_NO_THROW(check_surrogate_space(space, o));
  EXPECT_NO_THROW(check_fusion_space(space, o));
  const Config config = Config::parse(R"({"lr": 0.1, "batch": 8})");
  EXPECT_EQ(render_run(space, o, config, "s-0001", "dir", 4, 4, "").params_json,
            R"({"lr":0.1,"batch":8,"width_divisor":4.0})");
  EXPECT_EQ(shared_key(config, fake), R"({"batch":8})");
  EXPECT_EQ(shared_key(config, paratune_train()), R"({"batch":8})");  // lr is paratune-train's too
  const Transfer t = transfer_to_target(space, o, config);
  EXPECT_EQ(t.ratio, 4);
  EXPECT_EQ(t.surrogate_widths, "width 16");
  EXPECT_EQ(t.target_widths, "width 64 (transfer)");
  EXPECT_EQ(t.hyperparameters, config);

  // Its surrogate parameter is not the space's to set; its fusable one not the command line's.
  try {
    check_surrogate_space(Space::parse("parameters:\n  width_divisor: [1, 2]\n", "space.yaml"), o);
    ADD_FAILURE() << "width_divisor is the trainer's";
  } catch (const OptionError& e) {
    EXPECT_NE(std::string(e.what()).find("the space's parameter 'width_divisor'"), std::string::npos) << e.what();
  }
  o.command = "fake-train --lr {lr}";
  try {
    check_fusion_space(space, o);
    ADD_FAILURE() << "{lr} differs between fused trials";
  } catch (const OptionError& e) {
    EXPECT_NE(std::string(e.what()).find("fake-train reads it from PARATUNE_PARAMS"), std::string::npos) << e.what();
  }
}

// A trial program for the fake trainer: PARATUNE_PARAMS is one configuration or, for a fused group,
// an array of them; each member reports its index as its loss. Every run's PARATUNE_PARAMS goes to
// runs.txt.
const char* kFakeTrainScript = R"(echo "$PARATUNE_PARAMS" >> "$(dirname "$0")/runs.txt"
case "$PARATUNE_PARAMS" in
  \[*) members=$(($(printf '%s' "$PARATUNE_PARAMS" | tr -cd '{' | wc -c))) ;;
  *) members=0 ;;
esac
step=0
while [ $step -lt "$PARATUNE_MAX_STEPS" ]; do
  if [ "$members" -eq 0 ]; then echo "@paratune {\"metric\": \"loss\", \"value\": 5, \"step\": $step}"; fi
  m=0
  while [ $m -lt "$members" ]; do
    echo "@paratune {\"member\": $m, \"metric\": \"loss\", \"value\": $m, \"step\": $step}"
    m=$((m + 1))
  done
  echo "@paratune {\"step\": $step, \"step_time_s\": 0.001}"
  step=$((step + 1))
done
)";

struct FakeStudy {
  std::filesystem::path dir;
  HpoOptions options;
};

FakeStudy fake_study(const std::string& name, const std::string& arguments) {
  const std::filesystem::path dir = std::filesystem::absolute(::testing::TempDir()) / "paratune_trainer" / name;
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "fake-train.sh") << kFakeTrainScript;
  HpoOptions o{.name = name, .command = "sh " + (dir / "fake-train.sh").string() + arguments, .steps = 3,
               .objective = "loss", .direction = Direction::kMinimize, .trials_dir = dir / "trials"};
  o.limits.hang_s = 10;
  return {dir, o};
}

HpoSummary run_fake_study(const FakeStudy& study, const std::string& space_text, int slots) {
  const Space space = Space::parse(space_text, "space.yaml");
  store::SqliteStudyStore store(study.dir / "study.db");
  trial::LocalBackend backend(slots);
  const std::unique_ptr<Sampler> sampler = make_grid_sampler(space, SamplerOptions{});
  const std::unique_ptr<Pruner> pruner = make_pruner(PrunerKind::kNone, PrunerOptions{.max_resource = 3});
  tune::StudyObserver observer;
  const std::atomic<int> no_stop{0};
  return run_hpo(space, study.options, store, backend, *sampler, *pruner, observer, no_stop);
}

std::vector<std::string> lines_of(const std::filesystem::path& file) {
  std::ifstream in(file);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

TEST(HpoTrainer, AnotherTrainerTrainsFusedGroups) {
  FakeTrainer fake;
  FakeStudy study = fake_study("fused", "");
  study.options.fuse = 2;
  study.options.trainer = &fake;
  const HpoSummary s = run_fake_study(study, "parameters:\n  lr: [0.1, 0.2, 0.3, 0.4]\n  batch: [8]\n", 1);
  EXPECT_EQ(s.fused_groups, 2);
  EXPECT_EQ(s.fused_trials, 4);
  const std::vector<std::string> runs = lines_of(study.dir / "runs.txt");
  ASSERT_EQ(runs.size(), 2u);
  for (const std::string& run : runs) EXPECT_EQ(nlohmann::json::parse(run).size(), 2u) << run;
  ASSERT_EQ(s.trials.size(), 4u);
  for (const store::StoredTrial& t : s.trials) {
    EXPECT_EQ(t.status, "completed") << t.reason;
    ASSERT_TRUE(t.objective.has_value()) << t.number;
    EXPECT_EQ(*t.objective, (t.number - 1) % 2) << t.number;  // its member's index: its own lines
  }
  EXPECT_NE(s.trials[1].config_json.find(R"("fused":{"dir":")" + s.trials[0].dir), std::string::npos)
      << s.trials[1].config_json;
}

TEST(HpoTrainer, AnotherTrainersCostModelChoosesEachTrialsStrategy) {
  FakeTrainer fake;
  FakeStudy study = fake_study("auto", " --strategy {strategy}");
  study.options.strategy = kAutoStrategy;
  study.options.trainer = &fake;
  const HpoSummary s = run_fake_study(study, "parameters:\n  ranks: [1, 2]\n  lr: [0.1]\n", 2);
  EXPECT_EQ(fake.chooser_ranks, std::vector<int>{2});
  ASSERT_EQ(fake.asked.size(), 2u);
  ASSERT_EQ(s.trials.size(), 2u);
  for (const store::StoredTrial& t : s.trials) {
    EXPECT_EQ(t.status, "completed") << t.reason;
    const std::string strategy = nlohmann::json::parse(t.params_json)["ranks"] == 2 ? "mp" : "none";
    EXPECT_NE(t.command.find("--strategy " + strategy), std::string::npos) << t.command;
    EXPECT_EQ(nlohmann::json::parse(t.prediction_json)["strategy_auto"]["why"], "the fake trainer's choice");
  }
}

}  // namespace
}  // namespace paratune::hpo
