// What a worker's claim costs as its study grows (store/study_store.h claim_trial with outputs: the
// proposer sees every trial with its steps and metrics). A study of N ended trials of S steps (one
// step time and one loss value per step, as a hyperparameter study stores them), then one claim that
// proposes nothing, timed two ways:
//   cold  -- a store just opened (not timed) claims: every trial's steps and metrics are read (what
//            each claim cost before store/output_cache.h, and what a worker's first claim costs);
//   warm  -- the same store claiming again: ended trials' outputs come from its cache, only rows are
//            read.
//
//   bench_store_claim [--store LOCATOR] [--benchmark_filter=...]
// LOCATOR: a PostgreSQL database (postgresql://...) or an SQLite file; default an SQLite file in
// $TMPDIR, made anew. Each size is a study of its own in it.
#include <benchmark/benchmark.h>
#include <fmt/format.h>

#include <cstring>
#include <exception>
#include <stdexcept>
#include <vector>
#include <filesystem>
#include <memory>
#include <set>
#include <string>

#include "paratune/store/study_store.h"

namespace {

using namespace paratune;

std::string g_locator;  // --store

// The study of N trials of S steps (its name), made once per (N, S).
std::string study_of(int trials, int steps) {
  static std::set<std::string> made;
  std::string name = fmt::format("bench-{}x{}", trials, steps);
  if (made.contains(name)) return name;
  const std::unique_ptr<store::StudyStore> store = store::open_store(g_locator);
  const std::int64_t study = store->open_study(name, "{}");
  if (!store->trials(study).empty()) throw std::runtime_error(g_locator + " has study " + name + " already: use a fresh store");
  for (int n = 1; n <= trials; ++n) {
    const std::int64_t id =
        store->begin_trial(study, fmt::format(R"({{"lr":{}}})", n), [](int number) {
               return store::StudyStore::LaunchRecord{"{}", "train", fmt::format("/tmp/t{}", number), "local"};
             }).first;
    trial::TrialResult r;
    r.status = trial::TrialStatus::kCompleted;
    r.exit_code = 0;
    r.started_unix_s = 1000.0 + n;
    r.ended_unix_s = 1000.5 + n;
    for (int s = 0; s < steps; ++s) {
      r.output.steps.push_back({s, 0.01});
      r.output.metrics.push_back({"loss", 1.0 / (s + 1), s, std::nullopt});
    }
    store::TrialOutcome outcome;
    outcome.status = "completed";
    outcome.objective = 1.0 / steps;
    store->finish_trial(id, r, &outcome);
  }
  made.insert(name);
  return name;
}

std::int64_t study_id(const store::StudyStore& store, const std::string& name) {
  for (const store::StudyInfo& info : store.studies())
    if (info.name == name) return info.id;
  throw std::runtime_error("no study " + name);
}

std::size_t claim(store::StudyStore& store, std::int64_t study) {
  std::size_t seen = 0;
  (void)store.claim_trial(
      study, 3600,
      [&](const std::vector<store::StoredTrial>& all, int) -> std::optional<store::StudyStore::NewTrial> {
        for (const store::StoredTrial& t : all) seen += t.metrics.size();
        return std::nullopt;
      },
      /*with_outputs=*/true);
  return seen;
}

void Cold(benchmark::State& state) {
  const std::string name = study_of(static_cast<int>(state.range(0)), static_cast<int>(state.range(1)));
  for (auto _ : state) {
    state.PauseTiming();
    const std::unique_ptr<store::StudyStore> store = store::open_store(g_locator);
    const std::int64_t study = study_id(*store, name);
    state.ResumeTiming();
    benchmark::DoNotOptimize(claim(*store, study));
  }
}

void Warm(benchmark::State& state) {
  const std::string name = study_of(static_cast<int>(state.range(0)), static_cast<int>(state.range(1)));
  const std::unique_ptr<store::StudyStore> store = store::open_store(g_locator);
  const std::int64_t study = study_id(*store, name);
  claim(*store, study);  // the worker's first claim fills the cache
  for (auto _ : state) benchmark::DoNotOptimize(claim(*store, study));
}

void Sizes(benchmark::internal::Benchmark* b) {
  b->ArgNames({"trials", "steps"});
  for (const int trials : {100, 1000, 5000}) b->Args({trials, 100});
  b->Unit(benchmark::kMillisecond);
}

BENCHMARK(Cold)->Apply(Sizes);
BENCHMARK(Warm)->Apply(Sizes);

}  // namespace

int main(int argc, char** argv) {
  std::vector<char*> rest;
  for (int i = 0; i < argc; ++i) {
    if (std::strcmp(argv[i], "--store") == 0 && i + 1 < argc) {
      g_locator = argv[++i];
      continue;
    }
    rest.push_back(argv[i]);
  }
  if (g_locator.empty()) {
    const std::filesystem::path path = std::filesystem::temp_directory_path() / "paratune-claim-bench.db";
    for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(path.string() + suffix);
    g_locator = path.string();
  }
  int rest_count = static_cast<int>(rest.size());
  benchmark::Initialize(&rest_count, rest.data());
  if (benchmark::ReportUnrecognizedArguments(rest_count, rest.data())) return 2;
  try {
    benchmark::RunSpecifiedBenchmarks();
  } catch (const std::exception& e) {
    fmt::print(stderr, "bench_store_claim: {}\n", e.what());
    return 1;
  }
  benchmark::Shutdown();
  return 0;
}
