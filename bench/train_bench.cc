// paratune-train's benchmark (issue 18): real training processes on this machine.
//
//   bench_train strategies [--runs 3]   steps/s and peak RSS per rank of none/dp/mp/gpipe, N in {1, 2},
//                                       for the CNN and a ~10M-parameter GPT (HyperTune Fig. 3/7, Table 1)
//   bench_train overhead [--runs 5]     paratune-train's step against a bare libtorch loop doing the same
//                                       work (same model code, data, optimizer, threads)
//   bench_train accuracy                time to 90% Fashion-MNIST test accuracy (CNN)
//   bench_train perplexity              the GPT's validation perplexity after a fixed budget of steps
//   bench_train auto [--runs 2]         paratune's strategy cost model (--strategy auto) against measured
//                                       steps: predicted and measured s/step per strategy on 2 ranks
//
// Every figure is measured; each mode prints a Markdown table. Timings come from the step lines'
// arrival at this process (everything the trainer does per step, printing included) and from the
// trainer's own step_time_s.
#include <fmt/format.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <numeric>
#include <sstream>
#include <string>
#include <vector>

#include "data.h"
#include "models.h"
#include "trainer.h"
#include "paratune/train/options.h"
#include "paratune/train/strategy_cost.h"
#include "paratune/trial/command.h"

namespace {

using namespace paratune::train;
using Clock = std::chrono::steady_clock;

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

struct Trace {
  int exit_code = -1;
  std::vector<double> step_time_s;     // the trainer's own per-step times
  std::vector<double> arrival_s;       // when each step line arrived, from the start
  std::map<std::string, std::vector<std::pair<std::int64_t, double>>> metrics;  // name -> (step, value)
  double peak_memory_bytes = 0;
  double wall_s = 0;
  std::string log;
};

Trace run_trainer(const std::string& args) {
  const std::string command = fmt::format("{} {} 2>&1", PARATUNE_TRAIN_BINARY, args);
  const auto start = Clock::now();
  FILE* pipe = popen(command.c_str(), "r");
  Trace t;
  char buffer[8192];
  while (fgets(buffer, sizeof buffer, pipe)) {
    const double now = std::chrono::duration<double>(Clock::now() - start).count();
    const std::string line(buffer);
    if (line.rfind("@paratune ", 0) != 0) {
      t.log += line;
      continue;
    }
    const auto j = nlohmann::json::parse(line.substr(10));
    if (j.contains("step_time_s")) {
      t.step_time_s.push_back(j["step_time_s"].get<double>());
      t.arrival_s.push_back(now);
    } else if (j.contains("metric")) {
      t.metrics[j["metric"].get<std::string>()].emplace_back(j.value("step", -1), j["value"].get<double>());
    } else if (j.contains("peak_memory_bytes")) {
      t.peak_memory_bytes = std::max(t.peak_memory_bytes, j["peak_memory_bytes"].get<double>());
    }
  }
  const int status = pclose(pipe);
  t.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  t.wall_s = std::chrono::duration<double>(Clock::now() - start).count();
  if (t.exit_code != 0) {
    std::fprintf(stderr, "bench_train: paratune-train %s failed (%d):\n%s\n", args.c_str(), t.exit_code, t.log.c_str());
    std::exit(1);
  }
  return t;
}

// Median time per step after `warmup` steps: from the step lines' arrivals (all the trainer's work
// per step) and from its own step_time_s.
double median_interval(const Trace& t, std::size_t warmup) {
  std::vector<double> d;
  for (std::size_t k = warmup + 1; k < t.arrival_s.size(); ++k) d.push_back(t.arrival_s[k] - t.arrival_s[k - 1]);
  return median(d);
}

std::string mib(double bytes) { return fmt::format("{:.0f}", bytes / (1024.0 * 1024.0)); }

// ---- strategies ----

struct BenchWorkload {
  std::string name, args;
  int steps;
};

// Evaluation in batches no larger than training's, so peak memory is training's.
const BenchWorkload kCnn{"CNN (78k params), batch 128", "--model cnn --batch-size 128 --eval-limit 256 --eval-batch 128", 30};
// 6 layers x d 384: 6 x 12 x 384^2 + embeddings = 10.8M parameters.
const BenchWorkload kGpt{"GPT (10.8M params), batch 16 x 128 bytes",
                    "--model gpt --layers 6 --d-model 384 --heads 6 --seq-len 128 --batch-size 16 --eval-limit 32 --eval-batch 16",
                    12};

int strategies(int runs) {
  struct Setup {
    const char* strategy;
    int ranks;
    const char* extra;
  };
  const std::vector<Setup> setups{{"none", 1, ""},
                                  {"dp", 1, ""},
                                  {"mp", 1, ""},
                                  {"gpipe", 1, "--micro-batches 4"},
                                  {"dp", 2, ""},
                                  {"mp", 2, ""},
                                  {"gpipe", 2, "--micro-batches 4"}};
  std::printf("| workload | strategy | N | threads/rank | steps/s median [min, max] | s/step | peak RSS per rank MiB (max over ranks) |\n");
  std::printf("|---|---|---|---|---|---|---|\n");
  for (const BenchWorkload& w : {kCnn, kGpt}) {
    for (const Setup& s : setups) {
      const int threads = std::max(1, 2 / s.ranks);  // the machine's 2 cores shared by the ranks
      std::vector<double> rates, memory;
      for (int r = 0; r < runs; ++r) {
        const Trace t = run_trainer(fmt::format("{} --steps {} --strategy {} --ranks {} --threads {} {}", w.args, w.steps,
                                                s.strategy, s.ranks, threads, s.extra));
        rates.push_back(1.0 / median_interval(t, 2));
        memory.push_back(t.peak_memory_bytes);
      }
      std::printf("| %s | %s | %d | %d | %.2f [%.2f, %.2f] | %.3f | %s |\n", w.name.c_str(), s.strategy, s.ranks, threads,
                  median(rates), *std::min_element(rates.begin(), rates.end()),
                  *std::max_element(rates.begin(), rates.end()), 1.0 / median(rates), mib(median(memory)).c_str());
      std::fflush(stdout);
    }
  }
  return 0;
}

// ---- auto: the strategy cost model against measured steps ----

// `paratune-train ARGS --profile`, as paratune's --strategy auto runs it, and how long it took.
std::pair<StrategyProfile, double> measure_profile(const std::string& args) {
  const auto start = Clock::now();
  FILE* pipe = popen(fmt::format("{} {} --profile 2>&1", PARATUNE_TRAIN_BINARY, args).c_str(), "r");
  std::string line, log;
  char buffer[65536];
  while (fgets(buffer, sizeof buffer, pipe)) {
    log += buffer;
    if (std::string(buffer).rfind("@profile ", 0) == 0) line = std::string(buffer).substr(9);
  }
  if (pclose(pipe) != 0 || line.empty()) {
    std::fprintf(stderr, "bench_train: the profile of %s failed:\n%s\n", args.c_str(), log.c_str());
    std::exit(1);
  }
  return {StrategyProfile::from_json(nlohmann::json::parse(line), "profile"),
          std::chrono::duration<double>(Clock::now() - start).count()};
}

int auto_strategy(int runs) {
  struct Case {
    std::string name, model, batch_args;
    int steps;
  };
  const std::string gpt = "--model gpt --layers 6 --d-model 384 --heads 6 --seq-len 128";
  const std::string small_gpt = "--model gpt --layers 4 --d-model 128 --heads 4 --seq-len 128";
  const std::vector<Case> cases{
      {"CNN 16,32,64", "--model cnn", "--batch-size 32", 40},
      {"CNN 16,32,64", "--model cnn", "--batch-size 128", 30},
      {"CNN 16,32,64", "--model cnn", "--batch-size 512", 12},
      {"CNN 8,16", "--model cnn --cnn-channels 8,16", "--batch-size 64", 40},
      {"CNN 8,16", "--model cnn --cnn-channels 8,16", "--batch-size 256", 30},
      {"MLP 256,128", "--model mlp", "--batch-size 64", 60},
      {"GPT 4x128", small_gpt, "--batch-size 8", 20},
      {"GPT 6x384 (10.8M)", gpt, "--batch-size 16", 10},
  };
  constexpr int kRanks = 2;
  std::printf("Strategy cost model (paratune tune --strategy auto) against measured steps: %d ranks, 1 thread each, "
              "median of %d run(s) per strategy.\n\n",
              kRanks, runs);
  std::printf("| workload | batch | profile s | strategy | predicted s/step | measured s/step | error | auto's pick | "
              "measured fastest | pick / fastest |\n|---|---|---|---|---|---|---|---|---|---|\n");
  std::vector<double> errors, regrets;
  std::map<std::string, std::pair<StrategyProfile, double>> profiles;
  for (const Case& c : cases) {
    if (!profiles.contains(c.model)) profiles[c.model] = measure_profile(fmt::format("{} --ranks {}", c.model, kRanks));
    const auto& [profile, profile_s] = profiles.at(c.model);
    TrainOptions o = read_train_options(paratune::trial::split_words(fmt::format("{} {} --ranks {}", c.model, c.batch_args, kRanks)), "", "");
    const std::vector<StrategyPrediction> ranked = rank_strategies(o, profile);
    std::map<std::string, double> measured;
    for (const StrategyPrediction& p : ranked) {
      std::vector<double> times;
      for (int r = 0; r < runs; ++r) {
        const Trace t = run_trainer(fmt::format("{} {} --steps {} --strategy {} --ranks {} --eval-limit 64",
                                                c.model, c.batch_args, c.steps, to_string(p.strategy), kRanks));
        times.push_back(median_interval(t, 2));
      }
      measured[to_string(p.strategy)] = median(times);
    }
    const auto fastest = std::min_element(measured.begin(), measured.end(),
                                          [](const auto& a, const auto& b) { return a.second < b.second; });
    const std::string pick = to_string(ranked.front().strategy);
    const double regret = measured.at(pick) / fastest->second;
    regrets.push_back(regret);
    for (const StrategyPrediction& p : ranked) {
      const double truth = measured.at(to_string(p.strategy));
      const double error = (p.step_s - truth) / truth;
      errors.push_back(std::abs(error));
      std::printf("| %s | %s | %.1f | %s | %.4f | %.4f | %+.0f%% | %s | %s | %.2f |\n", c.name.c_str(),
                  c.batch_args.substr(13).c_str(), profile_s, to_string(p.strategy), p.step_s, truth, 100 * error,
                  pick.c_str(), fastest->first.c_str(), regret);
      std::fflush(stdout);
    }
  }
  std::printf("\nmedian |error| %.0f%%, max %.0f%%; auto picked the measured fastest in %ld of %zu cases; worst pick / "
              "fastest %.2f\n",
              100 * median(errors), 100 * *std::max_element(errors.begin(), errors.end()),
              std::count_if(regrets.begin(), regrets.end(), [](double r) { return r <= 1.0; }), regrets.size(),
              *std::max_element(regrets.begin(), regrets.end()));
  return 0;
}

// ---- overhead ----

// The same steps with no trainer around them: the model's units in a row, AdamW, the loss read back.
std::vector<double> bare_loop(const std::string& args, int steps) {
  std::vector<std::string> words;
  std::istringstream in(args);
  for (std::string w; in >> w;) words.push_back(w);
  const TrainOptions o = parse_train_options(words, "", "");
  torch::set_num_threads(o.threads);
  Model model = build_model(o);
  std::vector<torch::Tensor> params = unique_parameters(model, 0, static_cast<int>(model.units.size()));
  torch::optim::AdamW optimizer(
      params, torch::optim::AdamWOptions(o.lr).betas({o.beta1, o.beta2}).eps(o.eps).weight_decay(o.weight_decay));
  auto data = o.model == Workload::kGpt ? load_text_data(o) : load_fashion_data(o);
  std::vector<double> times;
  for (int step = 0; step < steps; ++step) {
    const auto start = Clock::now();
    const Batch batch = data->train_batch(step, o.batch_size, 0, o.batch_size);
    optimizer.zero_grad();
    torch::Tensor x = batch.inputs;
    for (auto& u : model.units) x = u->forward(x);
    torch::Tensor loss = torch::nn::functional::cross_entropy(x.reshape({-1, model.classes}), batch.targets.reshape(-1));
    loss.backward();
    optimizer.step();
    volatile double value = loss.item<double>();
    (void)value;
    times.push_back(std::chrono::duration<double>(Clock::now() - start).count());
  }
  return times;
}

// The bare loop in a process of its own, like the trainer: a process that has run torch keeps
// OpenMP threads that spin while waiting, and would take cores from a trainer it runs beside.
std::vector<double> run_bare_loop(const std::string& args, int steps, bool default_malloc = false) {
  const std::string self = std::filesystem::read_symlink("/proc/self/exe").string();
  FILE* pipe = popen(
      fmt::format("{}{} bare-loop {} {}", default_malloc ? "BARE_LOOP_DEFAULT_MALLOC=1 " : "", self, steps, args).c_str(),
      "r");
  std::vector<double> times;
  char buffer[256];
  while (fgets(buffer, sizeof buffer, pipe)) times.push_back(std::atof(buffer));
  if (pclose(pipe) != 0 || static_cast<int>(times.size()) != steps) {
    std::fprintf(stderr, "bench_train: the bare loop failed\n");
    std::exit(1);
  }
  return times;
}

int overhead(int runs) {
  const std::vector<std::pair<std::string, std::string>> cases{
      {"MLP 784-256-128-10, batch 64", "--model mlp --batch-size 64 --threads 2 --eval-limit 100"},
      {"CNN, batch 128", "--model cnn --batch-size 128 --threads 2 --eval-limit 100"},
      {"GPT 4 x 128, batch 16 x 128",
       "--model gpt --layers 4 --d-model 128 --heads 4 --seq-len 128 --batch-size 16 --threads 2 --eval-limit 16"}};
  const int steps = 60, warmup = 5;
  std::printf("| workload | bare loop s/step | paratune-train s/step (line arrivals) | (its step_time_s) | overhead, median of runs [each run] | bare loop, glibc's default malloc |\n");
  std::printf("|---|---|---|---|---|---|\n");
  for (const auto& [name, args] : cases) {
    std::vector<double> bare, trainer, trainer_own, ratio, bare_default;
    for (int r = 0; r < runs; ++r) {  // alternate, so drifts hit both
      const std::vector<double> d = run_bare_loop(args, steps, true);
      bare_default.push_back(median(std::vector<double>(d.begin() + warmup, d.end())));
      const std::vector<double> b = run_bare_loop(args, steps);
      bare.push_back(median(std::vector<double>(b.begin() + warmup, b.end())));
      const Trace t = run_trainer(fmt::format("{} --steps {}", args, steps));
      trainer.push_back(median_interval(t, warmup));
      trainer_own.push_back(median(std::vector<double>(t.step_time_s.begin() + warmup, t.step_time_s.end())));
      ratio.push_back(trainer.back() / bare.back() - 1);
    }
    std::string each;
    for (double x : ratio) each += fmt::format("{}{:+.1f}%", each.empty() ? "" : ", ", 100 * x);
    std::printf("| %s | %.5f | %.5f | %.5f | %+.1f%% [%s] | %.5f [%.5f, %.5f] |\n", name.c_str(), median(bare),
                median(trainer), median(trainer_own), 100 * median(ratio), each.c_str(), median(bare_default),
                *std::min_element(bare_default.begin(), bare_default.end()),
                *std::max_element(bare_default.begin(), bare_default.end()));
    std::fflush(stdout);
  }
  return 0;
}

// ---- accuracy and perplexity ----

int accuracy() {
  // A good configuration (AdamW, cosine over 8 epochs with warm-up); the test split is scored every
  // quarter epoch; the clock is the sum of the step times until the first score >= 90%.
  const int batch = 128, per_epoch = 55000 / batch, every = per_epoch / 4;
  const std::string args = fmt::format(
      "--model cnn --batch-size {} --lr 0.003 --weight-decay 0.05 --schedule cosine --warmup-steps 100 --epochs 8 "
      "--eval-every {} --eval-test true --eval-batch 1000 --threads 2",
      batch, every);
  const Trace t = run_trainer(args);
  double trained_s = 0, reached_s = -1;
  std::int64_t reached_step = -1;
  double best = 0;
  std::size_t next = 0;
  const auto& tests = t.metrics.at("test_accuracy");
  for (std::size_t step = 0; step < t.step_time_s.size(); ++step) {
    trained_s += t.step_time_s[step];
    while (next < tests.size() && tests[next].first == static_cast<std::int64_t>(step)) {
      best = std::max(best, tests[next].second);
      if (reached_s < 0 && tests[next].second >= 0.90) reached_s = trained_s, reached_step = static_cast<std::int64_t>(step);
      ++next;
    }
  }
  std::printf("| paratune-train %s |\n|---|\n", args.c_str());
  std::printf("| 90%% test accuracy after step %lld: %.1f s of training (%.1f epochs); best %.4f; whole run %.0f s wall incl. evaluations |\n",
              static_cast<long long>(reached_step), reached_s, (reached_step + 1.0) / per_epoch, best, t.wall_s);
  return reached_s < 0 ? 1 : 0;
}

int perplexity() {
  const std::string args =
      "--model gpt --layers 6 --d-model 384 --heads 6 --seq-len 128 --batch-size 16 --lr 0.001 --weight-decay 0.1 "
      "--schedule cosine --warmup-steps 20 --steps 300 --eval-every 100 --eval-batch 1000 --clip-norm 1 --threads 2";
  const Trace t = run_trainer(args);
  std::printf("| paratune-train %s |\n|---|\n", args.c_str());
  for (const auto& [step, value] : t.metrics.at("val_perplexity"))
    std::printf("| after %lld steps (%lld bytes seen): validation perplexity %.3f per byte (%.3f bits/byte) |\n",
                static_cast<long long>(step + 1), static_cast<long long>((step + 1) * 16 * 128), value,
                std::log2(value));
  std::printf("| wall %.0f s, %.3f s/step median |\n", t.wall_s, median(t.step_time_s));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  int runs = 3;
  for (int i = 2; mode != "bare-loop" && i + 1 < argc; ++i)
    if (std::string(argv[i]) == "--runs") runs = std::max(1, std::atoi(argv[i + 1]));
  if (mode == "strategies") return strategies(runs);
  if (mode == "overhead") return overhead(runs);
  if (mode == "auto") return auto_strategy(runs);
  // bench_train bare-loop STEPS TRAINER-ARGS...: one step time per line; with the trainer's allocator
  // setting unless BARE_LOOP_DEFAULT_MALLOC is set.
  if (mode == "bare-loop" && argc > 2) {
    if (!std::getenv("BARE_LOOP_DEFAULT_MALLOC")) keep_freed_memory();
    std::string args;
    for (int i = 3; i < argc; ++i) args += std::string(argv[i]) + " ";
    for (double t : bare_loop(args, std::atoi(argv[2]))) std::printf("%.9f\n", t);
    return 0;
  }
  if (mode == "accuracy") return accuracy();
  if (mode == "perplexity") return perplexity();
  std::fprintf(stderr, "usage: bench_train strategies|overhead|accuracy|perplexity|auto [--runs N]\n");
  return 2;
}
