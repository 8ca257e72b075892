// What one GET /api/study costs the dashboard (dashboard/server.h) on a big study: a hyperparameter
// study of N completed trials (2 parameters, 10 steps each with a loss value, as `paratune tune`
// stores them), in an SQLite file, timed three ways:
//   Build   -- the document built from the store, as every request did before the cache
//              (live_study + embeddable_json);
//   Cached  -- StudyReplies::now() with the store unchanged: the store opened and the study's rows
//              read and hashed (the version), the reply from the cache;
//   Changed -- StudyReplies::now() after each write (a trial's heartbeat): version, then a build.
//
//   bench_dashboard [--benchmark_filter=...]
// The study file goes in $TMPDIR, made anew (about a minute for 20,000 trials).
//
// Measured (this 2-core VM, shared with builds, load about 9; CPU time, as wall time there mostly
// waits for a core): 20,000 trials, a 13.3 MB document: Build 568 ms, Cached 40 ms, Changed 575 ms;
// 1,000 trials: 24.6 ms, 2.0 ms, 25.7 ms. Over HTTP (curl, same VM, wall time): 1.3-1.5 s per GET
// before, 0.11-0.24 s cached, 304 in 0.1-0.2 s.
#include <benchmark/benchmark.h>
#include <fmt/format.h>

#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "paratune/dashboard/server.h"
#include "paratune/hpo/space.h"
#include "paratune/report/html_page.h"
#include "paratune/store/sqlite_store.h"

namespace {

using namespace paratune;

// The study file of `trials` trials (made once per size).
std::filesystem::path study_of(int trials) {
  static std::map<int, std::filesystem::path> made;
  if (made.contains(trials)) return made[trials];
  const std::filesystem::path path =
      std::filesystem::temp_directory_path() / fmt::format("paratune-dashboard-bench-{}.db", trials);
  for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(path.string() + suffix);
  store::SqliteStudyStore store(path);
  const hpo::Space space = hpo::Space::parse(
      "parameters:\n  lr: {type: float, low: 0.0001, high: 0.1, log: true}\n  layers: {type: int, low: 1, high: 8}\n",
      "bench");
  const nlohmann::ordered_json identity{{"kind", "hpo"}, {"space", space.describe()}, {"command", "train"},
                                        {"steps", 10},   {"objective", "loss"},       {"direction", "minimize"}};
  const std::int64_t study = store.open_study("bench", identity.dump());
  for (int n = 0; n < trials; ++n) {
    const double lr = 0.0001 * (1 + n % 997);
    const int layers = 1 + n % 8;
    const std::int64_t id =
        store.begin_trial(study, fmt::format(R"({{"lr":{},"layers":{}}})", lr, layers), "{}", "train", "/tmp/t").first;
    trial::TrialResult r;
    r.status = trial::TrialStatus::kCompleted;
    r.exit_code = 0;
    r.started_unix_s = 1000.0 + n;
    r.ended_unix_s = 1030.0 + n;
    for (int s = 1; s <= 10; ++s) {
      r.output.steps.push_back({s, 0.5});
      r.output.metrics.push_back({"loss", lr * layers / s, s, std::nullopt});
    }
    store::TrialOutcome outcome;
    outcome.status = "completed";
    outcome.objective = lr * layers / 10;
    store.finish_trial(id, r, &outcome);
  }
  made[trials] = path;
  return path;
}

dashboard::DashboardOptions options_for(int trials) {
  dashboard::DashboardOptions o;
  o.locator = study_of(trials).string();
  return o;
}

void Build(benchmark::State& state) {
  const dashboard::DashboardOptions o = options_for(static_cast<int>(state.range(0)));
  std::size_t bytes = 0;
  for (auto _ : state) bytes = embeddable_json(dashboard::live_study(o)).size();
  state.counters["MB"] = static_cast<double>(bytes) / 1e6;
}

void Cached(benchmark::State& state) {
  dashboard::StudyReplies replies(options_for(static_cast<int>(state.range(0))));
  const std::size_t bytes = replies.now()->json.size();  // the first request builds
  for (auto _ : state) benchmark::DoNotOptimize(replies.now());
  state.counters["MB"] = static_cast<double>(bytes) / 1e6;
  state.counters["builds"] = replies.builds();
}

void Changed(benchmark::State& state) {
  const dashboard::DashboardOptions o = options_for(static_cast<int>(state.range(0)));
  dashboard::StudyReplies replies(o);
  store::SqliteStudyStore writer(o.locator);
  const std::int64_t some_trial = writer.trials(writer.studies().at(0).id).front().id;
  for (auto _ : state) {
    state.PauseTiming();
    writer.heartbeat({some_trial});
    state.ResumeTiming();
    benchmark::DoNotOptimize(replies.now());
  }
  state.counters["builds"] = replies.builds();
}

void Sizes(benchmark::internal::Benchmark* b) {
  b->ArgNames({"trials"});
  for (const int trials : {1000, 20000}) b->Arg(trials);
  b->Unit(benchmark::kMillisecond);
}

BENCHMARK(Build)->Apply(Sizes);
BENCHMARK(Cached)->Apply(Sizes);
BENCHMARK(Changed)->Apply(Sizes);

}  // namespace

BENCHMARK_MAIN();
