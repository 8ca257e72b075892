// What the tuning layer costs besides the trials themselves (docs/tune.md, Overhead):
//   1. controller overhead per trial: a study of short real trials (the test suite's fake trial
//      program), wall time per trial minus the time its steps sleep;
//   2. parsing trial output: lines per second for protocol, Megatron-LM and unrelated lines;
//   3. the study store: a trial of 1,000 steps and 1,000 metrics written, 1,000 trials read back;
//   4. a random search over a 1M-point space: its sampler built and 1,000 proposals.
// A scenario program: prints one table; run it on an idle machine, e.g. `taskset -c 0`.
#include <fmt/format.h>

#include <chrono>
#include <filesystem>
#include <string>
#include <vector>

#include "paratune/hpo/pruner.h"
#include "paratune/hpo/sampler.h"
#include "paratune/hpo/study.h"
#include "paratune/store/sqlite_store.h"
#include "paratune/trial/protocol.h"
#include "paratune/tune/bayes.h"
#include "paratune/tune/study.h"

namespace {

using namespace paratune;
using Clock = std::chrono::steady_clock;

double since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

std::filesystem::path scratch(const std::string& name) {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / "paratune_bench_tune" / name;
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

void controller_overhead(int trials, int parallel, int steps, double step_time_s) {
  const std::filesystem::path dir = scratch(fmt::format("overhead_{}", parallel));
  std::string values;
  for (int i = 0; i < trials; ++i) values += fmt::format("{}{}", i ? ", " : "", i);
  const hpo::Space space = hpo::Space::parse("parameters:\n  i: [" + values + "]\n", "bench");
  const tune::SearchSpace view = tune::SearchSpace::of(space);
  hpo::HpoOptions options;
  options.command = fmt::format("{} --step-time {} --steps {}", PARATUNE_FAKE_TRIAL, step_time_s, steps);
  options.steps = steps;
  options.trials_dir = dir / "trials";
  store::SqliteStudyStore store(dir / "study.db");
  trial::LocalBackend backend(parallel);
  tune::BayesOptions grid;
  grid.algorithm = tune::Algorithm::kGrid;
  const auto sampler = tune::make_configuration_sampler(space, view, std::nullopt, grid, 0);
  const auto pruner = hpo::make_pruner(hpo::PrunerKind::kNone, hpo::PrunerOptions{.max_resource = steps});
  tune::StudyObserver quiet;
  const std::atomic<int> no_stop{0};
  const Clock::time_point start = Clock::now();
  const hpo::HpoSummary s = tune::run_configuration_study(space, view, options, store, backend, *sampler, *pruner,
                                                             nullptr, quiet, no_stop);
  const double wall = since(start);
  const double sleeping = trials * steps * step_time_s / parallel;
  int completed = 0;
  for (const auto& t : s.trials) completed += t.status == "completed";
  fmt::print("  {:>3} trials x {} steps x {:.0f} ms, {} slot(s): {:6.2f} s wall, {:5.1f} ms per trial beyond its steps "
             "({} completed)\n",
             trials, steps, step_time_s * 1e3, parallel, wall, (wall - sleeping) / trials * parallel * 1e3, completed);
}

void parsing() {
  const std::pair<const char*, std::string> kinds[] = {
      {"protocol step", R"(@paratune {"step": 1234, "step_time_s": 0.512345})"},
      {"protocol metric", R"(@paratune {"metric": "loss", "value": 2.3125, "step": 1234})"},
      {"Megatron-LM iteration",
       " [2026-11-21 10:00:00] iteration     1234/   10000 | consumed samples: 78976 | elapsed time per iteration "
       "(ms): 512.3 | learning rate: 3.0E-04 | global batch size:    64 | lm loss: 2.312500E+00 |"},
      {"unrelated log line", "INFO:torch.distributed:rank 3 finished all-reduce of bucket 17 in 0.003 s"},
  };
  for (const auto& [name, line] : kinds) {
    trial::OutputParser parser;
    constexpr int kLines = 200'000;
    const Clock::time_point start = Clock::now();
    for (int i = 0; i < kLines; ++i) parser.feed(line);
    const double s = since(start);
    fmt::print("  {:<22} {:6.2f} M lines/s\n", name, kLines / s / 1e6);
  }
}

void store_speed() {
  const std::filesystem::path dir = scratch("store");
  store::SqliteStudyStore store(dir / "study.db");
  const std::int64_t study = store.open_study("bench", "{}");
  trial::TrialResult r;
  r.status = trial::TrialStatus::kCompleted;
  for (int k = 0; k < 1000; ++k) {
    r.output.steps.push_back({k, 0.5});
    r.output.metrics.push_back({"loss", 2.0, k});
  }
  constexpr int kTrials = 1000;
  Clock::time_point start = Clock::now();
  for (int i = 0; i < kTrials; ++i) {
    const auto [id, number] = store.begin_trial(study, R"({"tp":2})", "{}", "train.py", "/tmp/x");
    store.finish_trial(id, r);
  }
  const double write = since(start);
  start = Clock::now();
  const auto trials = store.trials(study);
  const double read = since(start);
  fmt::print("  begin + finish of a trial with 1,000 steps and 1,000 metrics: {:.2f} ms\n", write / kTrials * 1e3);
  fmt::print("  read {} trials back: {:.1f} ms; file {:.1f} MB\n", trials.size(), read * 1e3,
             static_cast<double>(std::filesystem::file_size(dir / "study.db") +
                                 std::filesystem::file_size(dir / "study.db-wal")) / 1e6);
}

void random_order() {
  const hpo::Space space = hpo::Space::parse(
      "parameters:\n  a: [1,2,3,4,5,6,7,8,9,10]\n  b: [1,2,3,4,5,6,7,8,9,10]\n  c: [1,2,3,4,5,6,7,8,9,10]\n"
      "  d: [1,2,3,4,5,6,7,8,9,10]\n  e: [1,2,3,4,5,6,7,8,9,10]\n  f: [1,2,3,4,5,6,7,8,9,10]\n"
      "constraints:\n  - a + b != 3\n",
      "bench");
  const tune::SearchSpace view = tune::SearchSpace::of(space);
  const Clock::time_point start = Clock::now();
  tune::BayesOptions random;
  random.algorithm = tune::Algorithm::kRandom;
  random.seed = 1;
  const auto sampler = tune::make_configuration_sampler(space, view, std::nullopt, random, 0);
  std::vector<hpo::TrialRecord> trials;
  for (int i = 0; i < 1000; ++i) {
    hpo::TrialRecord r;
    r.number = i + 1;
    r.config = *sampler->propose(trials);
    trials.push_back(std::move(r));
  }
  fmt::print("  1,000,000 points, one constraint: the sampler built and 1,000 proposals in {:.2f} s\n", since(start));
}

}  // namespace

int main() {
  fmt::print("controller overhead (real processes; the fake trial sleeps its steps):\n");
  controller_overhead(40, 1, 5, 0.01);
  controller_overhead(40, 4, 5, 0.01);
  fmt::print("parsing trial output:\n");
  parsing();
  fmt::print("study store (SQLite, WAL, synchronous=NORMAL):\n");
  store_speed();
  fmt::print("random search order:\n");
  random_order();
  return 0;
}
