// paratune-train's options (train/options.h), learning-rate schedules (train/schedule.h), pipeline
// split (train/stage_split.h) and text corpus (train/corpus.h): everything of the trainer that needs
// no libtorch.
#include "paratune/train/options.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "paratune/spec/error.h"
#include "paratune/train/corpus.h"
#include "paratune/train/schedule.h"
#include "paratune/train/stage_split.h"

namespace paratune::train {
namespace {

TrainOptions parse(const std::vector<std::string>& args, const std::string& params = "", const std::string& max = "") {
  return parse_train_options(args, params, max);
}

// The error's text, or "" when there is none.
std::string error_of(const std::vector<std::string>& args, const std::string& params = "",
                     const std::string& max = "") {
  try {
    (void)parse(args, params, max);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(TrainOptions, ArgumentsAndParamsBothSetOptionsAndArgumentsWin) {
  const TrainOptions o = parse({"--lr", "0.05", "--optimizer=sgd", "--batch-size", "32", "--mlp-hidden", "64,32"},
                               R"({"lr": 0.5, "momentum": 0.8, "schedule": "cosine", "steps": 7, "tied_embeddings": false})");
  EXPECT_DOUBLE_EQ(o.lr, 0.05);
  EXPECT_EQ(o.optimizer, Optimizer::kSgd);
  EXPECT_DOUBLE_EQ(o.momentum, 0.8);
  EXPECT_EQ(o.schedule, Schedule::kCosine);
  EXPECT_EQ(o.steps, 7);
  EXPECT_EQ(o.batch_size, 32);
  EXPECT_EQ(o.mlp_hidden, (std::vector<int>{64, 32}));
  EXPECT_FALSE(o.tied_embeddings);
  EXPECT_EQ(o.dp, 1);
  EXPECT_EQ(o.pp, 1);
}

TEST(TrainOptions, DefaultsToOneEpochAndReadsTheStepCap) {
  const TrainOptions o = parse({}, "", "25");
  EXPECT_DOUBLE_EQ(o.epochs, 1);
  EXPECT_EQ(o.max_steps, 25);
}

TEST(TrainOptions, BadValuesNameTheSourceOptionValueAndRule) {
  EXPECT_EQ(error_of({"--lr", "-1"}), "--lr: lr: value '-1' must be a number in (0, 10]");
  EXPECT_EQ(error_of({"--lr", "fast"}), "--lr: lr: value 'fast' must be a number in (0, 10]");
  EXPECT_EQ(error_of({"--optimizer", "lamb"}), "--optimizer: optimizer: value 'lamb' must be one of sgd adam adamw");
  EXPECT_EQ(error_of({}, R"({"momentum": 1.0})"), "PARATUNE_PARAMS: momentum: value '1' must be a number in [0, 1)");
  EXPECT_EQ(error_of({"--batch-size", "99999999999999999999"}),
            "--batch-size: batch_size: value '99999999999999999999' must be an integer in [1, 1048576]");
  EXPECT_EQ(error_of({"--batch-size", "2.5"}), "--batch-size: batch_size: value '2.5' must be an integer in [1, 1048576]");
  EXPECT_NE(error_of({"--lerning-rate", "1"}).find("unknown option 'lerning_rate'"), std::string::npos);
  EXPECT_NE(error_of({}, R"({"lrr": 0.1})").find("PARATUNE_PARAMS: unknown option 'lrr' (did you mean 'lr'?)"),
            std::string::npos);
  EXPECT_EQ(error_of({"--mlp-hidden", "64,,32"}),
            "--mlp-hidden: mlp_hidden: value '64,,32' must be comma-separated widths in [1, 65536] (empty: a linear "
            "model)");
  EXPECT_EQ(error_of({"--lr"}), "argument '--lr': missing its value");
  EXPECT_EQ(error_of({"lr=1"}), "argument 'lr=1': expected --option value or --option=value");
  EXPECT_EQ(error_of({"--lr", "0.1", "--lr=0.2"}), "argument '--lr': given more than once");
  EXPECT_EQ(error_of({"--steps", "5", "--epochs", "1"}), "epochs and steps: give one training length, not both");
  EXPECT_EQ(error_of({}, "[1]"), "PARATUNE_PARAMS: must be a JSON object of option names and values");
  EXPECT_NE(error_of({}, "{lr: 1}").find("PARATUNE_PARAMS: not valid JSON"), std::string::npos);
  EXPECT_EQ(error_of({}, "", "0"), "PARATUNE_MAX_STEPS: value '0' must be an integer >= 1");
  EXPECT_EQ(error_of({}, "", "ten"), "PARATUNE_MAX_STEPS: value 'ten' must be an integer >= 1");
}

// --surrogate-ratio divides the widths the model uses into whole numbers, or says which does not.
TEST(TrainOptions, SurrogateRatioNarrowsEveryWidthOrNamesTheOneItCannot) {
  TrainOptions o = parse({"--model", "mlp", "--mlp-hidden", "256,128", "--surrogate-ratio", "4", "--parametrization",
                          "mup"});
  EXPECT_EQ(o.parametrization, Parametrization::kMup);
  EXPECT_EQ(narrowed(o).mlp_hidden, (std::vector<int>{64, 32}));
  EXPECT_EQ(narrowed(o).surrogate_ratio, 1);
  EXPECT_EQ(o.mlp_hidden, (std::vector<int>{256, 128}));  // the base stays in the options
  o = parse({"--model", "gpt", "--d-model", "128", "--heads", "4", "--surrogate-ratio", "8"});
  EXPECT_EQ(narrowed(o).d_model, 16);
  EXPECT_EQ(narrowed(o).heads, 4);  // 8 does not divide 4 heads: kept, each of 4 dimensions instead of 32
  o = parse({"--model", "gpt", "--d-model", "256", "--heads", "4", "--surrogate-ratio", "4"});
  EXPECT_EQ(narrowed(o).d_model, 64);
  EXPECT_EQ(narrowed(o).heads, 1);  // fewer heads, each of the base's 64 dimensions
  EXPECT_EQ(o.heads, 4);
  o = parse({"--model", "cnn", "--cnn-channels", "16,32", "--surrogate-ratio", "2"});  // mlp_hidden unused
  EXPECT_EQ(narrowed(o).cnn_channels, (std::vector<int>{8, 16}));
  EXPECT_EQ(error_of({"--model", "mlp", "--mlp-hidden", "256,100", "--surrogate-ratio", "8"}),
            "surrogate_ratio: value 8 must divide mlp_hidden (100) into a whole number >= 1");
  EXPECT_EQ(error_of({"--model", "gpt", "--d-model", "192", "--heads", "8", "--surrogate-ratio", "16"}),
            "surrogate_ratio: value 16 leaves d_model 192 / 16 = 12, which heads (8) must divide (a ratio that does not "
            "divide the heads keeps them, each narrower)");
  EXPECT_EQ(error_of({"--surrogate-ratio", "0.5"}),
            "--surrogate-ratio: surrogate_ratio: value '0.5' must be a number in [1, 4096] dividing every width into a "
            "whole number");
  EXPECT_EQ(error_of({"--parametrization", "ntk"}),
            "--parametrization: parametrization: value 'ntk' must be one of sp mup");
}

TEST(TrainOptions, StrategiesDeriveTheirDegreesAndRefuseContradictions) {
  TrainOptions o = parse({"--strategy", "dp", "--ranks", "2", "--batch-size", "8"});
  EXPECT_EQ(o.dp, 2);
  EXPECT_EQ(o.pp, 1);
  EXPECT_EQ(o.micro_batches, 1);
  o = parse({"--strategy", "gpipe", "--ranks", "2", "--batch-size", "8"});
  EXPECT_EQ(o.pp, 2);
  EXPECT_EQ(o.micro_batches, 4);  // 2 x pp by default
  o = parse({"--strategy", "dp+gpipe", "--ranks", "4", "--pp", "2", "--micro-batches", "2", "--batch-size", "8"});
  EXPECT_EQ(o.dp, 2);
  EXPECT_EQ(o.pp, 2);
  o = parse({"--strategy", "mp", "--ranks", "3", "--batch-size", "8"});
  EXPECT_EQ(o.pp, 3);
  EXPECT_EQ(o.micro_batches, 1);

  EXPECT_EQ(error_of({"--ranks", "2"}), "ranks: value 2 with strategy none: none runs one process (ranks 1)");
  EXPECT_EQ(error_of({"--strategy", "mp", "--ranks", "2", "--micro-batches", "2"}),
            "micro_batches: value 2 with strategy mp: only gpipe and dp+gpipe split a batch into micro-batches");
  EXPECT_EQ(error_of({"--strategy", "dp", "--ranks", "3", "--batch-size", "64"}),
            "batch_size: value 64 must divide into dp = 3 replicas evenly");
  EXPECT_EQ(error_of({"--strategy", "gpipe", "--ranks", "2", "--batch-size", "6"}),
            "batch_size: value 6 must divide into dp x micro_batches = 1 x 4 equal micro-batches");
  EXPECT_EQ(error_of({"--strategy", "dp+gpipe", "--ranks", "4"}),
            "dp, pp: strategy dp+gpipe needs --dp or --pp (ranks = dp x pp)");
  EXPECT_EQ(error_of({"--strategy", "dp+gpipe", "--ranks", "4", "--dp", "3"}), "dp: value 3 does not divide ranks (4)");
  EXPECT_EQ(error_of({"--strategy", "gpipe", "--ranks", "2", "--stage-layers", "1,1,1"}),
            "stage_layers: 3 stages given for pp = 2");
  EXPECT_EQ(error_of({"--model", "gpt", "--d-model", "100", "--heads", "3"}), "heads: value 3 must divide d_model (100)");
  EXPECT_EQ(error_of({"--strategy", "dp", "--ranks", "2", "--nnodes", "2"}),
            "master_addr: several hosts (nnodes > 1) rendezvous over TCP");
}

TEST(TrainOptions, HelpListsEveryOptionWithItsDefault) {
  const std::string help = train_options_help();
  for (const char* expected : {"--lr ", "--optimizer ", "adamw", "--stage-layers", "--micro-batches", "--clip-norm"})
    EXPECT_NE(help.find(expected), std::string::npos) << expected;
}

TEST(TrainSchedule, WarmupThenConstantStepAndCosine) {
  TrainOptions o;
  o.lr = 0.1;
  o.warmup_steps = 4;
  EXPECT_DOUBLE_EQ(learning_rate(o, 0, 100), 0.025);
  EXPECT_DOUBLE_EQ(learning_rate(o, 3, 100), 0.1);
  EXPECT_DOUBLE_EQ(learning_rate(o, 50, 100), 0.1);
  o.schedule = Schedule::kStep;
  o.step_size = 10;
  o.gamma = 0.5;
  EXPECT_DOUBLE_EQ(learning_rate(o, 13, 100), 0.1);   // 9 steps after warm-up
  EXPECT_DOUBLE_EQ(learning_rate(o, 14, 100), 0.05);  // 10
  EXPECT_DOUBLE_EQ(learning_rate(o, 34, 100), 0.0125);
  o.schedule = Schedule::kCosine;
  o.min_lr_ratio = 0.1;
  EXPECT_DOUBLE_EQ(learning_rate(o, 4, 104), 0.1);
  EXPECT_NEAR(learning_rate(o, 54, 104), 0.1 * (0.1 + 0.9 * 0.5), 1e-15);  // half way
  EXPECT_NEAR(learning_rate(o, 104, 104), 0.01, 1e-15);
  // Decay per epoch (HyperTune's StepLR): step_epochs 1 with 10 steps per epoch is step_size 10.
  TrainOptions per_epoch = parse_train_options({"--schedule", "step", "--lr", "0.1", "--gamma", "0.5", "--step-epochs", "1"}, "", "");
  EXPECT_DOUBLE_EQ(learning_rate(per_epoch, 9, 100, 10), 0.1);
  EXPECT_DOUBLE_EQ(learning_rate(per_epoch, 10, 100, 10), 0.05);
  EXPECT_DOUBLE_EQ(learning_rate(per_epoch, 25, 100, 10), 0.025);
  EXPECT_THROW(parse_train_options({"--step-size", "5", "--step-epochs", "1"}, "", ""), Error);
  o.steps = 0;
  o.epochs = 2.5;
  EXPECT_EQ(total_steps(o, 7), 18);
  o.steps = 5;
  EXPECT_EQ(total_steps(o, 7), 5);
}

TEST(TrainStageSplit, UsesThePlannersAssignmentOnCountedWork) {
  // An embedding of no cost, a block of 2, three of 1 and a head of 1: on 2 stages only
  // {embedding, 2, 1} | {1, 1, head} balances the work (3 | 3).
  const std::vector<double> flops{0.0, 2, 1, 1, 1, 1};
  EXPECT_EQ(split_stages(flops, 2, 4), (std::vector<int>{3, 3}));
  EXPECT_EQ(split_stages(flops, 1, 4), (std::vector<int>{6}));
  // A heavy first layer takes a stage of its own.
  const std::vector<double> heavy{10, 1, 1, 1};
  EXPECT_EQ(split_stages(heavy, 2, 8), (std::vector<int>{1, 3}));
  EXPECT_THROW((void)split_stages(heavy, 5, 8), Error);
  EXPECT_NO_THROW(check_stage_layers(std::vector<int>{2, 2}, 4, 2));
  try {
    check_stage_layers(std::vector<int>{2, 3}, 4, 2);
    FAIL();
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "stage_layers: value '2,3' places 5 layers; the model has 4");
  }
}

TEST(TrainCorpus, SplitsRecordsEveryTenthToValidation) {
  const auto dir = std::filesystem::path(::testing::TempDir()) / "corpus";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  {
    std::ofstream a(dir / "a");
    for (int i = 0; i < 15; ++i) a << "record " << i << "\n%\n";
    std::ofstream(dir / "a.dat") << "index, skipped";
    std::ofstream b(dir / "b");
    for (int i = 15; i < 20; ++i) b << "record " << i << "\n%\n";
  }
  std::filesystem::create_symlink(dir / "a", dir / "a.u8");
  const TextCorpus c = load_text_corpus(dir.string(), 4);
  EXPECT_EQ(c.files, 2);
  EXPECT_EQ(c.records, 20);
  EXPECT_EQ(std::string(c.validation.begin(), c.validation.end()), "record 9\nrecord 19\n");
  EXPECT_EQ(c.train.size(), 9 * std::string("record 0\n").size() + 9 * std::string("record 10\n").size());
  try {
    (void)load_text_corpus(dir.string(), 100);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("each split needs at least 100"), std::string::npos) << e.what();
  }
  EXPECT_THROW((void)load_text_corpus((dir / "missing").string(), 4), Error);
}

TEST(TrainCorpus, DebiansFortunesWhenInstalled) {
  if (!std::filesystem::exists(kDebianFortunes)) GTEST_SKIP() << "fortunes not installed";
  const TextCorpus c = load_text_corpus(kDebianFortunes, 129);
  EXPECT_GT(c.files, 20);
  EXPECT_GT(c.records, 10000);
  EXPECT_GT(c.train.size(), 2'000'000u);
  EXPECT_NEAR(static_cast<double>(c.validation.size()) / (c.train.size() + c.validation.size()), 0.1, 0.02);
}

}  // namespace
}  // namespace paratune::train
