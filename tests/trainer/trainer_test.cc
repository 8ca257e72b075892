// paratune-train end to end: model shapes and parameter counts, the protocol lines, determinism,
// the strategies' equivalence, a rank killed mid-step, bad input, and a `paratune tune` grid study
// that runs the trainer. Real processes, real data (Debian's Fashion-MNIST and fortunes), tiny
// models and few steps.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <thread>
#include <tuple>

#include "models.h"
#include "paratune/hpo/fusion.h"
#include "paratune/train/corpus.h"
#include "paratune/train/idx.h"
#include "paratune/train/options.h"
#include "paratune/train/strategy_cost.h"
#include "paratune/train/workload.h"

namespace paratune::train {
namespace {

namespace fs = std::filesystem;

bool trainer_data_present() { return fs::exists(kDebianFashionMnist) && fs::exists(kDebianFortunes); }

struct TrainRun {
  int exit_code = -1;
  std::string output;                       // stdout and stderr
  std::vector<nlohmann::json> reports;      // the @paratune lines, in order
  std::map<std::string, std::vector<double>> metrics;  // name -> values in order
  std::vector<std::int64_t> steps;
};

// Runs `command` (shell text) and returns its exit code and its stdout and stderr together.
std::pair<int, std::string> capture(const std::string& command) {
  FILE* pipe = popen((command + " 2>&1").c_str(), "r");
  std::string output;
  std::array<char, 4096> buffer{};
  while (fgets(buffer.data(), buffer.size(), pipe)) output += buffer.data();
  const int status = pclose(pipe);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status), output};
}

// Runs paratune-train with `args` (shell text) and `env` (shell assignments) and parses its lines.
TrainRun train(const std::string& args, const std::string& env = "") {
  TrainRun run;
  std::tie(run.exit_code, run.output) = capture(env + " " + PARATUNE_TRAIN_BINARY + " " + args);
  std::istringstream lines(run.output);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("@paratune ", 0) != 0) continue;
    const auto j = nlohmann::json::parse(line.substr(10));
    run.reports.push_back(j);
    if (j.contains("metric")) run.metrics[j["metric"].get<std::string>()].push_back(j["value"].get<double>());
    if (j.contains("step_time_s")) run.steps.push_back(j["step"].get<std::int64_t>());
  }
  return run;
}

// A tiny GPT and MLP that run in well under a second per step on one core.
const std::string kTinyGpt =
    "--model gpt --layers 2 --d-model 32 --heads 4 --seq-len 32 --batch-size 8 --eval-limit 32 --eval-batch 16 "
    "--threads 1";
const std::string kTinyMlp = "--model mlp --mlp-hidden 64,32 --batch-size 32 --eval-limit 256 --threads 1";

TEST(TrainModels, ShapesAndParameterCounts) {
  TrainOptions o;
  o.mlp_hidden = {256, 128};
  Model mlp = build_model(o);
  ASSERT_EQ(mlp.units.size(), 3u);
  EXPECT_EQ(mlp.parameter_count(), (784 * 256 + 256) + (256 * 128 + 128) + (128 * 10 + 10));
  torch::Tensor x = torch::zeros({5, 1, 28, 28});
  for (auto& u : mlp.units) x = u->forward(x);
  EXPECT_EQ(x.sizes(), (std::vector<std::int64_t>{5, 10}));

  o.model = Workload::kCnn;  // channels 16, 32, 64: stem, 3 residual blocks, classifier
  Model cnn = build_model(o);
  ASSERT_EQ(cnn.units.size(), 5u);
  const std::int64_t stem = 9 * 16 + 2 * 16;
  const std::int64_t block16 = 2 * 9 * 16 * 16 + 2 * 2 * 16;
  const std::int64_t block32 = 9 * 16 * 32 + 9 * 32 * 32 + 16 * 32 + 3 * 2 * 32;  // with the 1x1 shortcut
  const std::int64_t block64 = 9 * 32 * 64 + 9 * 64 * 64 + 32 * 64 + 3 * 2 * 64;
  EXPECT_EQ(cnn.parameter_count(), stem + block16 + block32 + block64 + 64 * 10 + 10);
  x = torch::zeros({3, 1, 28, 28});
  std::vector<std::vector<std::int64_t>> shapes;
  for (auto& u : cnn.units) {
    x = u->forward(x);
    shapes.push_back(x.sizes().vec());
  }
  EXPECT_EQ(shapes[1], (std::vector<std::int64_t>{3, 16, 28, 28}));
  EXPECT_EQ(shapes[2], (std::vector<std::int64_t>{3, 32, 14, 14}));
  EXPECT_EQ(shapes[3], (std::vector<std::int64_t>{3, 64, 7, 7}));
  EXPECT_EQ(shapes[4], (std::vector<std::int64_t>{3, 10}));

  o.model = Workload::kGpt;
  o.layers = 2, o.d_model = 64, o.heads = 4, o.seq_len = 16;
  const std::int64_t block = 2 * 2 * 64 + (64 * 192 + 192) + (64 * 64 + 64) + (64 * 256 + 256) + (256 * 64 + 64);
  Model gpt = build_model(o);
  ASSERT_EQ(gpt.units.size(), 4u);
  EXPECT_EQ(gpt.parameter_count(), 256 * 64 + 16 * 64 + 2 * block + 2 * 64);  // tied: no output matrix
  torch::Tensor tokens = torch::randint(0, 256, {2, 16}, torch::kInt64);
  for (auto& u : gpt.units) tokens = u->forward(tokens);
  EXPECT_EQ(tokens.sizes(), (std::vector<std::int64_t>{2, 16, 256}));
  o.tied_embeddings = false;
  EXPECT_EQ(build_model(o).parameter_count(), gpt.parameter_count() + 256 * 64);
  // Causality: the logits at position t do not change when later bytes do.
  Model g = build_model(o);
  torch::Tensor a = torch::randint(0, 256, {1, 16}, torch::kInt64), b = a.clone();
  b.index_put_({0, 10}, (a.index({0, 10}) + 1) % 256);
  auto run_all = [&](torch::Tensor t) {
    for (auto& u : g.units) t = u->forward(t);
    return t;
  };
  EXPECT_TRUE(torch::allclose(run_all(a).slice(1, 0, 10), run_all(b).slice(1, 0, 10)));
  EXPECT_FALSE(torch::allclose(run_all(a).slice(1, 10, 11), run_all(b).slice(1, 10, 11)));
}

// The description without libtorch (train/workload.h) is the model the trainer builds: per unit the
// same FLOPs, and parameters that add up to the model's (a tied projection counted once).
TEST(TrainModels, TheWorkloadDescriptionMatchesTheBuiltModels) {
  for (const std::string args : {"--model mlp --mlp-hidden 64,32", "--model cnn --cnn-channels 8,16",
                                 "--model cnn --cnn-channels 16,32,64", "--model gpt --layers 2 --d-model 32 --heads 4 --seq-len 16",
                                 "--model gpt --layers 1 --d-model 32 --heads 4 --seq-len 16 --tied-embeddings false",
                                 "--model mlp --mlp-hidden 64,32 --surrogate-ratio 4 --parametrization mup",
                                 "--model cnn --cnn-channels 16,32 --surrogate-ratio 2",
                                 "--model gpt --layers 1 --d-model 64 --heads 2 --seq-len 16 --surrogate-ratio 4 "
                                 "--parametrization mup --tied-embeddings false"}) {
    std::vector<std::string> words;
    std::istringstream in(args);
    for (std::string w; in >> w;) words.push_back(w);
    const TrainOptions o = parse_train_options(words, "", "");
    const Model model = build_model(o);
    const std::vector<UnitShape> units = workload_units(o);
    ASSERT_EQ(units.size(), model.units.size()) << args;
    std::int64_t parameters = 0;
    // One sample through the model: each unit's output has the described size.
    torch::NoGradGuard no_grad;
    torch::Tensor x = o.model == Workload::kGpt ? torch::zeros({1, o.seq_len}, torch::kLong) : torch::zeros({1, 1, 28, 28});
    for (std::size_t i = 0; i < units.size(); ++i) {
      EXPECT_EQ(units[i].forward_flops_per_sample, model.unit_flops()[i]) << args << " unit " << i;
      model.units[i]->eval();
      x = model.units[i]->forward(x);
      EXPECT_EQ(units[i].output_elements, x.numel()) << args << " unit " << i;
      parameters += units[i].parameters;
    }
    EXPECT_EQ(parameters, model.parameter_count()) << args;
  }
}

TEST(TrainProtocol, EveryStepReportsLossThenItsStepLine) {
  if (!trainer_data_present()) GTEST_SKIP() << "dataset-fashion-mnist or fortunes not installed";
  const TrainRun r = train(kTinyMlp + " --steps 4 --eval-every 2");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.steps, (std::vector<std::int64_t>{0, 1, 2, 3}));
  EXPECT_EQ(r.metrics.at("train_loss").size(), 4u);
  EXPECT_EQ(r.metrics.at("val_loss").size(), 2u);  // after steps 1 and 3
  EXPECT_EQ(r.metrics.at("val_accuracy").size(), 2u);
  EXPECT_EQ(r.metrics.at("test_accuracy").size(), 1u);
  for (double a : r.metrics.at("val_accuracy")) EXPECT_TRUE(a >= 0 && a <= 1);
  // Each step's lines close with its step line; peak memory is a plausible RSS.
  ASSERT_TRUE(r.reports.back().contains("step_time_s"));
  EXPECT_EQ(r.reports.back()["step"], 3);
  bool saw_memory = false;
  for (const auto& j : r.reports)
    if (j.contains("peak_memory_bytes")) {
      saw_memory = true;
      EXPECT_GT(j["peak_memory_bytes"].get<double>(), 10e6);
    }
  EXPECT_TRUE(saw_memory);
  // PARATUNE_MAX_STEPS caps the run; PARATUNE_PARAMS sets options.
  const TrainRun capped = train(kTinyMlp + " --steps 50", "PARATUNE_MAX_STEPS=2 PARATUNE_PARAMS='{\"lr\": 0.01}'");
  ASSERT_EQ(capped.exit_code, 0) << capped.output;
  EXPECT_EQ(capped.steps.size(), 2u);
  EXPECT_EQ(capped.metrics.at("val_loss").size(), 1u);  // evaluated before the last step line
  const TrainRun gpt = train(kTinyGpt + " --steps 2");
  ASSERT_EQ(gpt.exit_code, 0) << gpt.output;
  EXPECT_NEAR(gpt.metrics.at("val_perplexity").at(0), std::exp(gpt.metrics.at("val_loss").at(0)), 1e-9);
  EXPECT_EQ(gpt.metrics.count("val_accuracy"), 0u);
}

TEST(TrainProtocol, BadInputIsAClearErrorBeforeTraining) {
  const TrainRun bad = train("--lr 0", "PARATUNE_PARAMS=");
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.output.find("paratune-train: error: --lr: lr: value '0' must be a number in (0, 10]"),
            std::string::npos)
      << bad.output;
  EXPECT_TRUE(bad.reports.empty());
  const TrainRun params = train("", "PARATUNE_PARAMS='{\"optimiser\": \"sgd\"}'");
  EXPECT_EQ(params.exit_code, 2);
  EXPECT_NE(params.output.find("unknown option 'optimiser' (did you mean 'optimizer'?)"), std::string::npos)
      << params.output;
  const TrainRun split = train(kTinyMlp + " --strategy gpipe --ranks 2 --stage-layers 1,1 --steps 1");
  EXPECT_EQ(split.exit_code, 2);
  EXPECT_NE(split.output.find("stage_layers: value '1,1' places 2 layers; the model has 3"), std::string::npos)
      << split.output;
  // A corrupt data file: the error names the file and the rule, from every rank, and no rank hangs.
  const fs::path dir = fs::path(::testing::TempDir()) / "bad-fashion";
  fs::create_directories(dir);
  std::ofstream(dir / "train-images-idx3-ubyte", std::ios::binary) << "not an idx file";
  const TrainRun data = train(kTinyMlp + " --strategy dp --ranks 2 --steps 1 --data " + dir.string());
  EXPECT_EQ(data.exit_code, 2);  // the rank's bad-input code, passed on by the launcher
  EXPECT_NE(data.output.find((dir / "train-images-idx3-ubyte").string()), std::string::npos) << data.output;
  EXPECT_NE(data.output.find("the other ranks were stopped and the trial failed"), std::string::npos) << data.output;
}

// A run that diverges ends with exit 3 and says where, never with a protocol line holding NaN.
TEST(TrainProtocol, DivergenceEndsTheTrialWithItsStep) {
  if (!trainer_data_present()) GTEST_SKIP() << "dataset-fashion-mnist or fortunes not installed";
  const TrainRun r = train(kTinyMlp + " --optimizer sgd --lr 10 --momentum 0.9 --init-scale 100 --steps 50");
  EXPECT_EQ(r.exit_code, 3) << r.output;
  EXPECT_NE(r.output.find("paratune-train: training diverged: the train loss is"), std::string::npos) << r.output;
  EXPECT_LT(r.steps.size(), 50u);
  for (const auto& [name, values] : r.metrics)
    for (double v : values) EXPECT_TRUE(std::isfinite(v)) << name;
}

// Same seed, same strategy: the same loss curve, bit for bit (the protocol prints the shortest text
// that reads back as the same double, so equal text is equal bits). Dropout included.
TEST(TrainDeterminism, SameSeedSameCurveBitForBit) {
  if (!trainer_data_present()) GTEST_SKIP() << "dataset-fashion-mnist or fortunes not installed";
  for (const std::string& workload : {kTinyGpt + " --dropout 0.1", kTinyMlp + " --dropout 0.2"}) {
    const TrainRun a = train(workload + " --steps 5 --seed 7");
    const TrainRun b = train(workload + " --steps 5 --seed 7");
    const TrainRun c = train(workload + " --steps 5 --seed 8");
    ASSERT_EQ(a.exit_code, 0) << a.output;
    EXPECT_EQ(a.metrics.at("train_loss"), b.metrics.at("train_loss")) << workload;
    EXPECT_EQ(a.metrics.at("val_loss"), b.metrics.at("val_loss")) << workload;
    EXPECT_NE(a.metrics.at("train_loss"), c.metrics.at("train_loss")) << workload;
  }
}

// A run stopped after 3 of 6 steps and resumed from its checkpoint continues exactly as the
// uninterrupted run (weights, optimizer state and random state restored), on one rank and under
// gpipe; a checkpoint of another configuration is refused.
TEST(TrainCheckpoint, ResumingContinuesTheSameCurveBitForBit) {
  if (!trainer_data_present()) GTEST_SKIP() << "dataset-fashion-mnist or fortunes not installed";
  for (const std::string strategy : {"", " --strategy gpipe --ranks 2"}) {
    const std::string workload = kTinyMlp + " --dropout 0.2 --steps 6 --seed 5" + strategy;
    const fs::path dir = fs::path(::testing::TempDir()) / "checkpoint";
    fs::remove_all(dir);
    const TrainRun whole = train(workload);
    const TrainRun first = train(workload + " --checkpoint-dir " + dir.string(), "PARATUNE_MAX_STEPS=3");
    const TrainRun rest = train(workload + " --checkpoint-dir " + dir.string() + " --resume true");
    ASSERT_EQ(whole.exit_code, 0) << whole.output;
    ASSERT_EQ(first.exit_code, 0) << first.output;
    ASSERT_EQ(rest.exit_code, 0) << rest.output;
    EXPECT_EQ(rest.steps, (std::vector<std::int64_t>{3, 4, 5})) << strategy;
    const auto& all = whole.metrics.at("train_loss");
    EXPECT_EQ(std::vector<double>(all.begin(), all.begin() + 3), first.metrics.at("train_loss")) << strategy;
    EXPECT_EQ(std::vector<double>(all.begin() + 3, all.end()), rest.metrics.at("train_loss")) << strategy;
    EXPECT_EQ(whole.metrics.at("val_loss"), rest.metrics.at("val_loss")) << strategy;
  }
  const fs::path dir = fs::path(::testing::TempDir()) / "checkpoint";  // holds the gpipe run's
  const TrainRun other = train(kTinyMlp + " --steps 6 --checkpoint-dir " + dir.string() + " --resume true");
  EXPECT_EQ(other.exit_code, 2);
  EXPECT_NE(other.output.find("written by a different configuration"), std::string::npos) << other.output;
}

// Every strategy computes the same mathematical step; only the order of floating-point additions
// differs (the batch mean split over replicas and micro-batches, the all-reduce's sum, the tied
// embedding's two gradient halves), so curves agree to float32 rounding, amplified a little by
// Adam over the steps: relative 2e-5 after 6 steps (observed ~1e-7). Dropout is off (its masks
// depend on how each rank draws random numbers) and the models have no BatchNorm (its statistics
// are per micro-batch by design, as in GPipe).
TEST(TrainStrategies, DpMpAndGpipeFollowTheSameCurveAsNone) {
  if (!trainer_data_present()) GTEST_SKIP() << "dataset-fashion-mnist or fortunes not installed";
  for (const std::string& workload : {kTinyGpt + " --clip-norm 0.5", kTinyMlp + " --optimizer sgd --lr 0.05"}) {
    const std::string base = workload + " --steps 6 --seed 3";
    const TrainRun none = train(base);
    ASSERT_EQ(none.exit_code, 0) << none.output;
    for (const std::string strategy :
         {"--strategy dp --ranks 2", "--strategy dp --ranks 2 --overlap off", "--strategy mp --ranks 2",
          "--strategy gpipe --ranks 2 --micro-batches 4", "--strategy dp+gpipe --ranks 4 --pp 2 --micro-batches 2"}) {
      const TrainRun other = train(base + " " + strategy);
      ASSERT_EQ(other.exit_code, 0) << strategy << "\n" << other.output;
      for (const char* metric : {"train_loss", "val_loss"}) {
        const auto& want = none.metrics.at(metric);
        const auto& got = other.metrics.at(metric);
        ASSERT_EQ(got.size(), want.size()) << strategy;
        for (std::size_t k = 0; k < want.size(); ++k)
          EXPECT_NEAR(got[k], want[k], 2e-5 * std::abs(want[k])) << workload << " " << strategy << " " << metric << " " << k;
      }
    }
  }
}

std::vector<pid_t> children_of(pid_t parent) {
  std::vector<pid_t> out;
  for (const auto& entry : fs::directory_iterator("/proc")) {
    const std::string name = entry.path().filename();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream stat(entry.path() / "stat");
    std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
    const auto close = text.rfind(')');
    if (close == std::string::npos) continue;
    std::istringstream rest(text.substr(close + 2));
    char state;
    pid_t ppid;
    rest >> state >> ppid;
    if (ppid == parent) out.push_back(std::stoi(name));
  }
  return out;
}

std::string environment_of(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/environ");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::replace(text.begin(), text.end(), '\0', '\n');
  return text;
}

// SIGKILL to one rank in the middle of training: the launcher stops the other and fails the
// trial with the reason, within seconds, and leaves no process behind.
TEST(TrainLauncher, ARankKilledMidStepFailsTheTrialWithoutOrphans) {
  if (!trainer_data_present()) GTEST_SKIP() << "dataset-fashion-mnist or fortunes not installed";
  const fs::path out = fs::path(::testing::TempDir()) / "killed-rank.out";
  fs::remove(out);  // a previous run's
  const pid_t launcher = fork();
  ASSERT_GE(launcher, 0);
  if (launcher == 0) {
    const std::string command = std::string("exec ") + PARATUNE_TRAIN_BINARY + " " + kTinyGpt +
                                " --strategy dp --ranks 2 --steps 100000 > " + out.string() + " 2>&1";
    execl("/bin/sh", "sh", "-c", command.c_str(), nullptr);
    _exit(127);
  }
  // Whatever happens below, the launcher does not outlive the test (it stops its ranks on SIGTERM).
  struct StopLauncher {
    pid_t pid;
    ~StopLauncher() {
      if (kill(pid, 0) == 0) {
        kill(pid, SIGTERM);
        int ignored = 0;
        waitpid(pid, &ignored, 0);
      }
    }
  } stop_launcher{launcher};
  auto read_out = [&] {
    std::ifstream in(out);
    return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  };
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  while (read_out().find("\"step\": 3,") == std::string::npos && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  ASSERT_NE(read_out().find("\"step\": 3,"), std::string::npos) << read_out();
  const std::vector<pid_t> ranks = children_of(launcher);
  ASSERT_EQ(ranks.size(), 2u);
  pid_t victim = -1;
  for (pid_t p : ranks)
    if (environment_of(p).find("PARATUNE_TRAIN_RANK=1\n") != std::string::npos) victim = p;
  ASSERT_GT(victim, 0);
  ASSERT_EQ(kill(victim, SIGKILL), 0);
  int status = 0;
  pid_t done = 0;
  const auto stop_deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while ((done = waitpid(launcher, &status, WNOHANG)) == 0 && std::chrono::steady_clock::now() < stop_deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  if (done == 0) {  // a hang: clean up, then fail
    kill(launcher, SIGKILL);
    waitpid(launcher, &status, 0);
    FAIL() << "the launcher did not stop within 30 s\n" << read_out();
  }
  EXPECT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 1);
  EXPECT_NE(read_out().find("paratune-train: rank 1 killed by signal 9 (Killed); the other ranks were stopped and "
                            "the trial failed"),
            std::string::npos)
      << read_out();
  for (pid_t p : ranks) EXPECT_FALSE(fs::exists("/proc/" + std::to_string(p))) << "rank process " << p << " left";
}

// `paratune tune` runs the trainer unchanged: a grid over two learning rates, every trial's curve
// and evaluation stored in the study.
TEST(TrainTune, AGridStudyOverTwoLearningRatesRunsTheTrainer) {
  if (!trainer_data_present()) GTEST_SKIP() << "dataset-fashion-mnist or fortunes not installed";
  const fs::path dir = fs::path(::testing::TempDir()) / "train-tune";
  fs::remove_all(dir);
  fs::create_directories(dir);
  std::ofstream(dir / "space.yaml") << "parameters:\n  lr: [0.001, 0.5]\n";
  const std::string command = std::string(PARATUNE_BINARY) + " tune --space " + (dir / "space.yaml").string() +
                              " --study " + (dir / "study.db").string() + " --steps 6 --command '" +
                              PARATUNE_TRAIN_BINARY + " " + kTinyMlp +
                              " --optimizer sgd --momentum 0 --steps 100 --lr {lr} --strategy dp --ranks 2' --json";
  const auto [exit_code, output] = capture(command);
  ASSERT_EQ(exit_code, 0) << output;
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open((dir / "study.db").c_str(), &db), SQLITE_OK);
  std::map<std::string, std::map<std::string, std::vector<double>>> by_lr;  // params -> metric -> values
  sqlite3_stmt* q = nullptr;
  ASSERT_EQ(sqlite3_prepare_v2(db,
                               "SELECT t.params_json, m.name, m.value FROM trials t JOIN metrics m ON m.trial_id = "
                               "t.id ORDER BY t.id, m.rowid",
                               -1, &q, nullptr),
            SQLITE_OK)
      << sqlite3_errmsg(db);
  while (sqlite3_step(q) == SQLITE_ROW)
    by_lr[reinterpret_cast<const char*>(sqlite3_column_text(q, 0))][reinterpret_cast<const char*>(sqlite3_column_text(q, 1))]
        .push_back(sqlite3_column_double(q, 2));
  sqlite3_finalize(q);
  sqlite3_close(db);
  ASSERT_EQ(by_lr.size(), 2u) << output;
  std::vector<double> final_loss;
  for (const auto& [params, metrics] : by_lr) {
    EXPECT_EQ(metrics.at("train_loss").size(), 6u) << params;  // stopped after --steps 6 ...
    EXPECT_EQ(metrics.at("val_loss").size(), 1u) << params;    // ... with its evaluation
    EXPECT_EQ(metrics.at("test_accuracy").size(), 1u) << params;
    final_loss.push_back(metrics.at("val_loss").back());
  }
  EXPECT_NE(final_loss[0], final_loss[1]);  // the two rates trained differently
}


// A hyperparameter study of the trainer: TPE over a conditional space, ASHA promoting by resuming
// from the trainer's checkpoints. A promoted trial's curve is the one an uninterrupted run draws,
// bit for bit.
TEST(TrainTune, AshaStudyResumesTheTrainerFromItsCheckpoints) {
  if (!trainer_data_present()) GTEST_SKIP() << "dataset-fashion-mnist or fortunes not installed";
  const fs::path dir = fs::path(::testing::TempDir()) / "train-hpo";
  fs::remove_all(dir);
  fs::create_directories(dir);
  std::ofstream(dir / "space.yaml") << "parameters:\n"
                                       "  lr: {type: float, low: 1.0e-3, high: 0.3, log: true}\n"
                                       "  optimizer: [sgd, adam]\n"
                                       "  momentum: {type: float, low: 0.5, high: 0.95, when: \"optimizer == 'sgd'\"}\n";
  const std::string command = std::string(PARATUNE_BINARY) + " tune --space " + (dir / "space.yaml").string() +
                              " --study " + (dir / "study.db").string() + " --algo tpe --seed 2 --pruner asha --eta 3 " +
                              "--min-resource 1 --steps 9 --max-trials 4 --parallel 2 --objective val_loss --direction "
                              "minimize --command '" + PARATUNE_TRAIN_BINARY + " " + kTinyMlp + " --steps {steps}' --json";
  const auto [exit_code, output] = capture(command);
  ASSERT_EQ(exit_code, 0) << output;
  const nlohmann::json study = nlohmann::json::parse(output.substr(output.find("{\n")));
  const nlohmann::json& best = study["best"];
  ASSERT_TRUE(best.is_object()) << output;
  const nlohmann::json* completed = nullptr;
  for (const auto& t : study["trials"])
    if (t["number"] == best["number"]) completed = &t;
  ASSERT_NE(completed, nullptr);
  EXPECT_EQ((*completed)["steps"], 9);
  // It rested at rungs 1 and 3 and was resumed twice from its checkpoint.
  const fs::path trial_dir = (*completed)["dir"].get<std::string>();
  std::ifstream log(trial_dir / "stdout.log");
  const std::string text((std::istreambuf_iterator<char>(log)), std::istreambuf_iterator<char>());
  int resumed = 0;
  for (std::size_t at = text.find("resumed from"); at != std::string::npos; at = text.find("resumed from", at + 1)) ++resumed;
  EXPECT_EQ(resumed, 2) << text;
  // The same configuration trained in one go ends at the same validation loss, bit for bit.
  const TrainRun whole = train(kTinyMlp + " --steps 9", "PARATUNE_PARAMS='" + best["params"].dump() + "'");
  ASSERT_EQ(whole.exit_code, 0) << whole.output;
  EXPECT_EQ(whole.metrics.at("val_loss").back(), best["objective"].get<double>());
}


// Trials that stay alive (paratune tune --serve): one paratune-train process serves every run of an
// ASHA study, loading the data once; its promotions resume from memory (or, with --serve-memory 0,
// from the checkpoint each pause is saved to at once), and every trial ends where it ends with a
// process per run, bit for bit.
TEST(TrainTune, ServedAshaStudyLoadsTheDataOnceAndMatchesProcessPerRun) {
  if (!trainer_data_present()) GTEST_SKIP() << "dataset-fashion-mnist or fortunes not installed";
  const fs::path dir = fs::path(::testing::TempDir()) / "train-serve";
  fs::remove_all(dir);
  fs::create_directories(dir);
  std::ofstream(dir / "space.yaml") << "parameters:\n"
                                       "  lr: {type: float, low: 1.0e-3, high: 0.3, log: true}\n"
                                       "  momentum: {type: float, low: 0.5, high: 0.95}\n";
  const auto study = [&](const std::string& name, const std::string& trainer_args, const std::string& flags) {
    const auto [exit_code, output] = capture(
        std::string(PARATUNE_BINARY) + " tune --space " + (dir / "space.yaml").string() + " --study " +
        (dir / (name + ".db")).string() + " --trials-dir " + (dir / name).string() +
        " --algo tpe --seed 2 --pruner asha --eta 3 --min-resource 1 --steps 9 --max-trials 6 --parallel 1 "
        "--objective val_loss --direction minimize --json " + flags + " --command '" + PARATUNE_TRAIN_BINARY + " " +
        kTinyMlp + " --optimizer sgd --steps {steps}" + trainer_args + "'");
    EXPECT_EQ(exit_code, 0) << output;
    return nlohmann::json::parse(output.substr(output.find("{\n")));
  };
  const auto in_logs = [&](const std::string& name, const std::string& what) {
    int n = 0;
    for (const auto& trial : fs::directory_iterator(dir / name)) {
      std::ifstream log(trial.path() / "stdout.log");
      const std::string text((std::istreambuf_iterator<char>(log)), std::istreambuf_iterator<char>());
      for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
    }
    return n;
  };
  const nlohmann::json alone = study("alone", "", "");
  const nlohmann::json memory = study("memory", "", "--serve");
  const nlohmann::json spilled = study("spilled", " --serve-memory 0", "--serve");
  const int promotions = alone["promotions"].get<int>();
  ASSERT_GT(promotions, 0);
  for (const nlohmann::json* served : {&memory, &spilled}) {
    EXPECT_EQ((*served)["serving_processes"], 1);
    ASSERT_EQ((*served)["trials"].size(), alone["trials"].size());
    for (std::size_t i = 0; i < alone["trials"].size(); ++i) {
      const nlohmann::json &want = alone["trials"][i], &got = (*served)["trials"][i];
      EXPECT_EQ(got["params"], want["params"]);
      EXPECT_EQ(got["status"], want["status"]) << got.dump();
      EXPECT_EQ(got["steps"], want["steps"]) << got.dump();
      EXPECT_EQ(got["objective"], want["objective"]) << "trial " << i << ": bit for bit";
    }
  }
  EXPECT_EQ(in_logs("memory", "serve: loaded Fashion-MNIST"), 1) << "the data is loaded once";
  EXPECT_EQ(in_logs("memory", "from memory after step"), promotions);
  EXPECT_EQ(in_logs("spilled", "from memory after step"), 0);
  EXPECT_EQ(in_logs("spilled", "resumed from"), promotions);
  EXPECT_GE(in_logs("spilled", "(kept trials above --serve-memory)"), promotions);
}

// --profile: what paratune's --strategy auto decides from, measured with two ranks busy.
TEST(TrainProfile, MeasuresEachUnitTheOptimizerAndTheCollectives) {
  const auto [exit_code, output] = capture(std::string(PARATUNE_TRAIN_BINARY) + " --model mlp --mlp-hidden 32 --ranks 2 --profile");
  ASSERT_EQ(exit_code, 0) << output;
  const std::size_t at = output.find("@profile ");
  ASSERT_NE(at, std::string::npos) << output;
  const StrategyProfile p =
      StrategyProfile::from_json(nlohmann::json::parse(output.substr(at + 9, output.find('\n', at) - at - 9)), "profile");
  EXPECT_EQ(p.ranks, 2);
  EXPECT_GE(p.threads, 1);
  ASSERT_EQ(p.unit_seconds.size(), 2u);  // 784 -> 32 -> 10
  ASSERT_GE(p.batches.size(), 2u);
  for (const auto& unit : p.unit_seconds) EXPECT_GT(unit.back(), 0);
  EXPECT_GT(p.optimizer_s, 0);
  EXPECT_GT(p.allreduce.seconds(1 << 20), 0);  // Gloo between two processes costs something
  EXPECT_GT(p.p2p.seconds(1 << 20), 0);
  // A bad option is the trainer's usual error.
  const auto [bad_code, bad_output] = capture(std::string(PARATUNE_TRAIN_BINARY) + " --model mlp --ranks 0 --profile");
  EXPECT_EQ(bad_code, 2);
  EXPECT_NE(bad_output.find("ranks"), std::string::npos) << bad_output;
}

// --strategy auto: trials of one rank train with none; trials of two get the strategy the cost
// model predicts fastest for their batch, recorded with the predictions; the profile is measured
// once and kept.
TEST(TrainTune, StrategyAutoGivesEachTrialTheCostModelsChoice) {
  if (!trainer_data_present()) GTEST_SKIP() << "dataset-fashion-mnist or fortunes not installed";
  const fs::path dir = fs::path(::testing::TempDir()) / "train-auto";
  fs::remove_all(dir);
  fs::create_directories(dir);
  std::ofstream(dir / "space.yaml") << "parameters:\n  ranks: [1, 2]\n  batch_size: [16, 64]\n";
  const std::string command = std::string(PARATUNE_BINARY) + " tune --space " + (dir / "space.yaml").string() +
                              " --study " + (dir / "study.db").string() + " --trials-dir " + (dir / "trials").string() +
                              " --slots 2 --strategy auto --steps 4 --objective val_loss --direction minimize --command '" +
                              PARATUNE_TRAIN_BINARY +
                              " --model mlp --mlp-hidden 64,32 --eval-limit 128 --steps {steps} --ranks {ranks} "
                              "--strategy {strategy}' --json";
  const auto [exit_code, output] = capture(command);
  ASSERT_EQ(exit_code, 0) << output;
  const nlohmann::json study = nlohmann::json::parse(output.substr(output.find("{\n")));
  ASSERT_EQ(study["trials"].size(), 4u) << output;
  for (const auto& t : study["trials"]) {
    ASSERT_EQ(t["status"], "completed") << t.dump();
    const nlohmann::json& choice = t["prediction"]["strategy_auto"];
    const std::string strategy = t["hpo"]["strategy"].get<std::string>();
    EXPECT_EQ(choice["strategy"], strategy) << t.dump();
    EXPECT_NE(t["command"].get<std::string>().find("--strategy " + strategy), std::string::npos) << t.dump();
    EXPECT_EQ(t["hpo"]["slots"].size(), t["params"]["ranks"].get<std::size_t>()) << t.dump();
    if (t["params"]["ranks"] == 1) {
      EXPECT_EQ(strategy, "none");
      continue;
    }
    // The fastest of the predictions it recorded, each strategy that can run two ranks.
    const nlohmann::json& predicted = choice["predicted_step_s"];
    ASSERT_EQ(predicted.size(), 3u) << choice.dump();
    for (const auto& [name, seconds] : predicted.items()) EXPECT_LE(predicted[strategy].get<double>(), seconds.get<double>());
  }
  // One profile: the model and two ranks (one-rank trials need none).
  int profiles = 0;
  for (const auto& entry : fs::directory_iterator(dir / "trials" / "strategy-profiles")) profiles += entry.path().extension() == ".json";
  EXPECT_EQ(profiles, 1);
  // study show lists each trial's ranks and strategy.
  const auto [show_code, shown] = capture(std::string(PARATUNE_BINARY) + " study show " + (dir / "study.db").string());
  ASSERT_EQ(show_code, 0) << shown;
  EXPECT_TRUE(std::regex_search(shown, std::regex("2 (dp|gpipe|mp) "))) << shown;
  EXPECT_NE(shown.find("1 none"), std::string::npos) << shown;
}

// Hydro's surrogate study: the trials train the model 4x narrower under muP (MLP 64,32 -> 16,8:
// 12,786 parameters instead of 52,650), the best is transferred (Adam: the hidden weights' rate 4x on
// the surrogate, 1x on the target) and --retrain trains the target.
TEST(TrainTune, SurrogateStudyTunesANarrowModelAndRetrainsTheTarget) {
  if (!trainer_data_present()) GTEST_SKIP() << "dataset-fashion-mnist or fortunes not installed";
  const fs::path dir = fs::path(::testing::TempDir()) / "train-surrogate";
  fs::remove_all(dir);
  fs::create_directories(dir);
  std::ofstream(dir / "space.yaml") << "parameters:\n  lr: [0.003, 0.03]\n";
  const std::string command = std::string(PARATUNE_BINARY) + " tune --space " + (dir / "space.yaml").string() +
                              " --study " + (dir / "study.db").string() + " --trials-dir " + (dir / "trials").string() +
                              " --steps 8 --surrogate-ratio 4 --objective val_loss --direction minimize --retrain "
                              "--command '" + PARATUNE_TRAIN_BINARY +
                              " --model mlp --mlp-hidden 64,32 --optimizer adam --eval-limit 128 --steps {steps} "
                              "--threads 1' --json";
  const auto [exit_code, output] = capture(command);
  ASSERT_EQ(exit_code, 0) << output;
  const nlohmann::json study = nlohmann::json::parse(output.substr(output.find("{\n")));
  ASSERT_EQ(study["trials"].size(), 2u) << output;
  auto log_of = [&](const std::string& name) {
    std::ifstream in(dir / "trials" / name / "stdout.log");
    return std::string(std::istreambuf_iterator<char>(in), {});
  };
  for (const char* trial : {"trial-0001", "trial-0002"})
    EXPECT_NE(log_of(trial).find("mlp, 12786 parameters"), std::string::npos) << log_of(trial);
  EXPECT_NE(log_of("retrain-0001-of-trial-0001").find("mlp, 52650 parameters"), std::string::npos)
      << log_of("retrain-0001-of-trial-0001");
  const nlohmann::json& transfer = study["transfer"];
  EXPECT_EQ(transfer["surrogate_widths"], "mlp_hidden 16,8");
  EXPECT_EQ(transfer["target_widths"], "mlp_hidden 64,32");
  const double lr = study["trials"][0]["objective"] < study["trials"][1]["objective"] ? 0.003 : 0.03;
  EXPECT_EQ(transfer["hyperparameters"]["lr"], lr);
  for (const auto& role : transfer["rates"]) {
    EXPECT_DOUBLE_EQ(role["target_lr"].get<double>(), lr);
    EXPECT_DOUBLE_EQ(role["surrogate_lr"].get<double>(), role["role"] == "hidden" ? 4 * lr : lr) << role.dump();
  }
  EXPECT_EQ(study["retrain"]["trial"]["status"], "completed");
  EXPECT_EQ(study["retrain"]["trial"]["params"]["lr"], lr);
}

// Hydro end to end (--retrain-top): the surrogate study's two best configurations retrained at the
// target's width, two at a time over the slots, and the one with the lower target val_loss chosen.
TEST(TrainTune, SurrogateStudyRetrainsItsTopTwoAtTheTargetAndChoosesThere) {
  if (!trainer_data_present()) GTEST_SKIP() << "dataset-fashion-mnist or fortunes not installed";
  const fs::path dir = fs::path(::testing::TempDir()) / "train-surrogate-top";
  fs::remove_all(dir);
  fs::create_directories(dir);
  std::ofstream(dir / "space.yaml") << "parameters:\n  lr: [0.001, 0.003, 0.03]\n";
  const std::string command = std::string(PARATUNE_BINARY) + " tune --space " + (dir / "space.yaml").string() +
                              " --study " + (dir / "study.db").string() + " --trials-dir " + (dir / "trials").string() +
                              " --steps 8 --slots 2 --surrogate-ratio 4 --objective val_loss --direction minimize "
                              "--retrain-top 2 --command '" + PARATUNE_TRAIN_BINARY +
                              " --model mlp --mlp-hidden 64,32 --optimizer adam --eval-limit 128 --steps {steps} "
                              "--threads 1' --json";
  const auto [exit_code, output] = capture(command);
  ASSERT_EQ(exit_code, 0) << output;
  const nlohmann::json study = nlohmann::json::parse(output.substr(output.find("{\n")));
  ASSERT_EQ(study["trials"].size(), 3u) << output;
  const nlohmann::json& runs = study["reevaluation"]["runs"];
  ASSERT_EQ(runs.size(), 2u) << output;
  // In the surrogate's order, each at the target's size.
  EXPECT_LE(runs[0]["search_objective"].get<double>(), runs[1]["search_objective"].get<double>());
  EXPECT_EQ(runs[0]["of_trial"], study["best"]["number"]);
  for (const auto& run : runs) {
    ASSERT_EQ(run["trial"]["status"], "completed") << run.dump();
    std::ifstream in(dir / "trials" / fmt::format("retrain-0001-of-trial-{:04d}", run["of_trial"].get<int>()) / "stdout.log");
    const std::string log(std::istreambuf_iterator<char>(in), {});
    EXPECT_NE(log.find("mlp, 52650 parameters"), std::string::npos) << log;
  }
  const std::size_t better = runs[0]["objective"].get<double>() <= runs[1]["objective"].get<double>() ? 0 : 1;
  EXPECT_EQ(study["reevaluation"]["chosen"], runs[better]["of_trial"]);
  EXPECT_EQ(study["retrain"]["of_trial"], runs[better]["of_trial"]);
  EXPECT_EQ(study["retrain"]["final_metrics"]["val_loss"], runs[better]["objective"]);
}

// --surrogate-ratio narrows paratune-train's model: another program, or a throughput objective, is
// refused before anything runs.
TEST(TrainTune, SurrogateRatioRefusesWhatItCannotNarrow) {
  const fs::path dir = fs::path(::testing::TempDir()) / "train-surrogate-refused";
  fs::remove_all(dir);
  fs::create_directories(dir);
  std::ofstream(dir / "space.yaml") << "parameters:\n  lr: [0.1, 0.2]\n";
  const std::string tune = std::string(PARATUNE_BINARY) + " tune --space " + (dir / "space.yaml").string() +
                           " --study " + (dir / "study.db").string() + " --steps 4 --surrogate-ratio 4 ";
  auto [exit_code, output] =
      capture(tune + "--objective loss --direction minimize --command 'python3 train.py --lr {lr}'");
  EXPECT_EQ(exit_code, 2) << output;
  EXPECT_NE(output.find("--surrogate-ratio: narrows the model of paratune-train"), std::string::npos) << output;
  EXPECT_NE(output.find("'python3'"), std::string::npos) << output;
  std::tie(exit_code, output) = capture(tune + "--command '" + PARATUNE_TRAIN_BINARY + " --lr {lr}'");
  EXPECT_EQ(exit_code, 2) << output;
  EXPECT_NE(output.find("a surrogate's throughput says nothing of the target's"), std::string::npos) << output;
  std::tie(exit_code, output) = capture(std::string(PARATUNE_BINARY) + " tune --space " + (dir / "space.yaml").string() +
                                        " --study " + (dir / "study.db").string() +
                                        " --steps 4 --surrogate-ratio 0.5 --objective loss --direction minimize "
                                        "--command '" + PARATUNE_TRAIN_BINARY + " --lr {lr}'");
  EXPECT_EQ(exit_code, 2) << output;
  EXPECT_NE(output.find("--surrogate-ratio: 0.5 must be a finite number >= 1"), std::string::npos) << output;
}

// --strategy auto models paratune-train only: another program is refused before anything runs.
TEST(TrainTune, StrategyAutoRefusesAProgramItCannotModel) {
  const fs::path dir = fs::path(::testing::TempDir()) / "train-auto-refused";
  fs::remove_all(dir);
  fs::create_directories(dir);
  std::ofstream(dir / "space.yaml") << "parameters:\n  lr: [0.1, 0.2]\n";
  const auto [exit_code, output] =
      capture(std::string(PARATUNE_BINARY) + " tune --space " + (dir / "space.yaml").string() + " --study " +
              (dir / "study.db").string() + " --trial-ranks 2 --slots 2 --strategy auto --steps 4 --objective loss "
              "--direction minimize --command 'python3 train.py --ranks {ranks} --strategy {strategy}'");
  EXPECT_EQ(exit_code, 2) << output;
  EXPECT_NE(output.find("--strategy auto"), std::string::npos) << output;
  EXPECT_NE(output.find("'python3'"), std::string::npos) << output;
}

// Inter-trial fusion in the search (hpo/fusion.h): `--fuse 3` trains the trials that differ only in
// optimizer options three to a process, and each trial's objective is the one it gets alone (the
// same study without fusion), within the fused kernels' rounding (1e-5 relative, as
// fused_train_test.cc measures per step).
std::string fusion_study(const fs::path& dir, const std::string& space, const std::string& name,
                         const std::string& extra, const std::string& trainer_args) {
  return std::string(PARATUNE_BINARY) + " tune --space " + (dir / space).string() + " --study " +
         (dir / "study.db").string() + " --study-name " + name + " --trials-dir " + (dir / name).string() +
         " --objective val_loss --direction minimize " + extra + " --command '" + PARATUNE_TRAIN_BINARY +
         " --model mlp --mlp-hidden 64,32 --optimizer sgd --eval-limit 256 --eval-every 5 --steps {steps} --threads 1 " +
         trainer_args + "' --json";
}

nlohmann::json study_json(const std::string& output) { return nlohmann::json::parse(output.substr(output.find("{\n"))); }

TEST(TrainTune, FusedTrialsGetTheObjectiveTheyGetAlone) {
  if (!trainer_data_present()) GTEST_SKIP() << "dataset-fashion-mnist or fortunes not installed";
  const fs::path dir = fs::path(::testing::TempDir()) / "train-fused-study";
  fs::remove_all(dir);
  fs::create_directories(dir);
  std::ofstream(dir / "space.yaml") << "parameters:\n  lr: [0.01, 0.03, 0.1]\n  momentum: [0.5, 0.9]\n";
  auto [exit_code, output] = capture(fusion_study(dir, "space.yaml", "fused", "--steps 10 --fuse 3", ""));
  ASSERT_EQ(exit_code, 0) << output;
  const nlohmann::json fused = study_json(output);
  EXPECT_EQ(fused["fused_groups"], 2);
  EXPECT_EQ(fused["fused_trials"], 6);
  std::tie(exit_code, output) = capture(fusion_study(dir, "space.yaml", "alone", "--steps 10", ""));
  ASSERT_EQ(exit_code, 0) << output;
  const nlohmann::json alone = study_json(output);
  EXPECT_EQ(alone["fused_groups"], 0);
  ASSERT_EQ(fused["trials"].size(), 6u);
  ASSERT_EQ(alone["trials"].size(), 6u);
  for (std::size_t i = 0; i < 6; ++i) {
    const nlohmann::json &f = fused["trials"][i], &a = alone["trials"][i];
    ASSERT_EQ(f["params"], a["params"]);
    ASSERT_EQ(f["status"], "completed") << f.dump();
    EXPECT_EQ(f["steps"], 10);
    EXPECT_NEAR(f["objective"].get<double>(), a["objective"].get<double>(), 1e-5 * a["objective"].get<double>())
        << f["params"].dump();
  }
  // One process per group, in its first member's directory; every member's stored command
  // reproduces it alone.
  std::ifstream log(dir / "fused" / "trial-0001" / "stdout.log");
  const std::string text(std::istreambuf_iterator<char>(log), {});
  EXPECT_NE(text.find("3 fused trials of mlp"), std::string::npos) << text;
  EXPECT_FALSE(fs::exists(dir / "fused" / "trial-0002" / "stdout.log"));
  EXPECT_NE(fused["trials"][1]["command"].get<std::string>().find(R"(PARATUNE_PARAMS='{"lr":0.01,"momentum":0.9}')"),
            std::string::npos)
      << fused["trials"][1]["command"];
}

// A member the pruner stops ends at once while its group trains on; a member that diverges fails
// alone; a group refused at start-up (one member's bad value) is split and each member runs alone.
TEST(TrainTune, FusedGroupsLoseOnlyTheirFailingMembers) {
  if (!trainer_data_present()) GTEST_SKIP() << "dataset-fashion-mnist or fortunes not installed";
  const fs::path dir = fs::path(::testing::TempDir()) / "train-fused-members";
  fs::remove_all(dir);
  fs::create_directories(dir);
  // Group 1: three good rates (the median pruner's start-up trials); group 2: a rate too small to
  // learn (pruned at the first evaluation), a good one, and 10 with decay 1 (diverges).
  std::ofstream(dir / "space.yaml") << "parameters:\n  lr: [0.05, 0.1, 0.02, 0.000001, 0.04, 10]\n";
  auto [exit_code, output] = capture(fusion_study(dir, "space.yaml", "pruned",
                                                  "--steps 20 --fuse 3 --pruner median --pruner-startup 3",
                                                  "--momentum 0.9 --weight-decay 1"));
  ASSERT_EQ(exit_code, 0) << output;
  nlohmann::json study = study_json(output);
  ASSERT_EQ(study["trials"].size(), 6u) << output;
  EXPECT_EQ(study["fused_groups"], 2);
  const nlohmann::json& tiny = study["trials"][3];
  const nlohmann::json& good = study["trials"][4];
  const nlohmann::json& diverged = study["trials"][5];
  EXPECT_EQ(tiny["status"], "pruned") << tiny.dump();
  EXPECT_EQ(tiny["steps"], 5);
  EXPECT_GT(good["steps"].get<int>(), 5) << good.dump();  // trained on after its group-mate was pruned
  EXPECT_EQ(diverged["status"], "failed") << diverged.dump();
  EXPECT_NE(diverged["reason"].get<std::string>().find("diverged in its fused group"), std::string::npos)
      << diverged.dump();
  // A value paratune-train refuses: the group fails before its first step, its members run alone.
  std::ofstream(dir / "bad.yaml") << "parameters:\n  lr: [0.05, 0.1, 50]\n";
  std::tie(exit_code, output) = capture(fusion_study(dir, "bad.yaml", "split", "--steps 10 --fuse 3", ""));
  ASSERT_EQ(exit_code, 0) << output;
  study = study_json(output);
  ASSERT_EQ(study["trials"].size(), 3u) << output;
  EXPECT_EQ(study["trials"][0]["status"], "completed");
  EXPECT_EQ(study["trials"][1]["status"], "completed");
  EXPECT_EQ(study["trials"][2]["status"], "failed");
  EXPECT_NE(study["trials"][2]["reason"].get<std::string>().find("lr: value '50' must be a number in (0, 10]"),
            std::string::npos)
      << study["trials"][2].dump();
}

// --fuse auto measures B = 1, 2, ... fused before the first group and keeps the size its rule
// picks from those measurements; ASHA's promotions of fused members run again alone from step 0.
TEST(TrainTune, FuseAutoPicksItsSizeFromTheProbeAndAshaPromotesMembersAlone) {
  if (!trainer_data_present()) GTEST_SKIP() << "dataset-fashion-mnist or fortunes not installed";
  const fs::path dir = fs::path(::testing::TempDir()) / "train-fuse-auto";
  fs::remove_all(dir);
  fs::create_directories(dir);
  std::ofstream(dir / "space.yaml") << "parameters:\n  lr: {type: float, low: 0.001, high: 0.3, log: true}\n";
  auto [exit_code, output] =
      capture(fusion_study(dir, "space.yaml", "auto",
                           "--algo random --max-trials 9 --steps 15 --fuse auto --pruner asha --min-resource 5 --eta 3",
                           "--surrogate-ratio 2"));
  ASSERT_EQ(exit_code, 0) << output;
  const nlohmann::json study = study_json(output);
  const nlohmann::json& probe = study["fusion_probe"];
  ASSERT_TRUE(probe.is_object()) << output;
  std::vector<hpo::FusionProbeRun> runs;
  int size = 1;
  for (const auto& r : probe["runs"]) {
    EXPECT_EQ(r["size"], size);
    size *= 2;
    hpo::FusionProbeRun run;
    run.size = r["size"];
    run.status = r["status"];
    run.step_time_s = r["step_time_s"];
    run.trial_steps_per_s = r["trial_steps_per_s"];
    if (!r["peak_memory_bytes"].is_null()) run.peak_memory_bytes = r["peak_memory_bytes"].get<double>();
    runs.push_back(run);
  }
  ASSERT_GE(runs.size(), 2u) << probe.dump();
  EXPECT_EQ(runs.front().status, "completed");
  const hpo::FusionDecision decision = hpo::decide_fusion(runs, probe["memory_budget_bytes"], 9);
  EXPECT_FALSE(decision.next.has_value());
  EXPECT_EQ(probe["chosen"], decision.chosen) << probe.dump();
  EXPECT_EQ(study["fused_groups"].get<int>() > 0, decision.chosen > 1) << output;
  // ASHA: 9 trials at 5 steps, the best third promoted to 15 (alone, from step 0: 15 steps done).
  EXPECT_GT(study["promotions"].get<int>(), 0) << output;
  int finished = 0;
  for (const auto& t : study["trials"])
    if (t["status"] == "completed") {
      EXPECT_EQ(t["steps"], 15) << t.dump();
      ++finished;
    }
  EXPECT_GT(finished, 0) << output;
}

// --fuse needs paratune-train, a metric objective, one slot per trial and trial options off the
// shared command line; the size is a number from 1 to 64 or auto.
TEST(TrainTune, FuseRefusesWhatItCannotFuse) {
  const fs::path dir = fs::path(::testing::TempDir()) / "train-fuse-refused";
  fs::remove_all(dir);
  fs::create_directories(dir);
  std::ofstream(dir / "space.yaml") << "parameters:\n  lr: [0.1, 0.2]\n  batch_size: [32, 64]\n";
  const std::string tune = std::string(PARATUNE_BINARY) + " tune --space " + (dir / "space.yaml").string() +
                           " --study " + (dir / "study.db").string() + " --steps 4 ";
  const std::string trainer = std::string(" --command '") + PARATUNE_TRAIN_BINARY;
  const std::pair<std::string, std::string> cases[] = {
      {"--fuse 4 --objective loss --direction minimize --command 'python3 train.py'",
       "--fuse 4: fuses the trials of paratune-train"},
      {"--fuse 4" + trainer + " --model mlp'", "--fuse 4: a fused trial has no throughput of its own"},
      {"--fuse 4 --objective val_loss --direction minimize" + trainer + " --model mlp --lr {lr}'",
       "--command: {lr} differs between fused trials (--fuse 4)"},
      {"--fuse 0 --objective val_loss --direction minimize" + trainer + " --model mlp'",
       "--fuse 0: must be a size from 1 to 64 (or --fuse auto)"},
      {"--fuse many --objective val_loss --direction minimize" + trainer + " --model mlp'",
       "--fuse many: must be auto or a size from 1 to 64"},
      {"--fuse auto --trial-ranks 2 --slots 2 --strategy dp --objective val_loss --direction minimize" + trainer +
           " --model mlp --ranks {ranks} --strategy {strategy}'",
       "--fuse auto: fused groups train on one slot; --trial-ranks is 2"},
  };
  for (const auto& [flags, message] : cases) {
    const auto [exit_code, output] = capture(tune + flags);
    EXPECT_EQ(exit_code, 2) << flags << "\n" << output;
    EXPECT_NE(output.find(message), std::string::npos) << flags << "\nexpected: " << message << "\n" << output;
  }
}

}  // namespace
}  // namespace paratune::train
