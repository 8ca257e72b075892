// Hyperparameter samplers and the study controller, measured (docs/hyperparameter-studies.md):
//
//   bench_hpo functions [--seeds A-B] [--evaluations N] [--out FILE.tsv] [--functions a,b] [--samplers a,b]
//       random, tpe, gp and cmaes on Branin, Hartmann-6, Rosenbrock-4 and -20, and Levy-10 (bench/functions/
//       function_trial.cc as real trial processes through hpo::run_hpo, one trial at a time):
//       the best value after 10, 25, 50 and 100 evaluations per seed, one TSV row per study.
//   bench_hpo summarize FILE.tsv...
//       median and quartiles of log10 regret (best - known minimum) per function, sampler and
//       evaluation count, as a Markdown table.
//   bench_hpo multi ... | multi-summarize FILE.tsv...
//       multi-objective samplers on ZDT1-3 and DTLZ2 by hypervolume (bench/hpo_multi_objective.h).
//   bench_hpo overhead
//       controller time per trial beyond the trial program itself: a study of instant trials
//       (tpe + asha, and random + no pruner) against running the same program as often directly.
#include <fmt/format.h>
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "hpo_multi_objective.h"
#include "paratune/hpo/pruner.h"
#include "paratune/hpo/sampler.h"
#include "paratune/hpo/study.h"
#include "paratune/store/sqlite_store.h"

extern char** environ;

namespace {

using namespace paratune;
using Clock = std::chrono::steady_clock;

double since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

std::filesystem::path scratch(const std::string& name) {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / "paratune_bench_hpo" / name;
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

struct Function {
  std::string name;
  std::string space;
  double minimum;  // the known global minimum (Surjanovic & Bingham)
};

// A space of x1..xn, each a float in [low, high].
std::string box_space(int dimensions, double low, double high) {
  std::string p = "parameters:\n";
  for (int d = 1; d <= dimensions; ++d) p += fmt::format("  x{}: {{type: float, low: {}, high: {}}}\n", d, low, high);
  return p;
}

const std::vector<Function>& functions() {
  static const std::vector<Function> all{
      {"branin", "parameters:\n  x1: {type: float, low: -5, high: 10}\n  x2: {type: float, low: 0, high: 15}\n", 0.397887357729738},
      {"hartmann6", box_space(6, 0, 1), -3.32236801141551},
      {"rosenbrock4", box_space(4, -5, 10), 0.0},
      {"rosenbrock20", box_space(20, -5, 10), 0.0},
      {"levy10", box_space(10, -10, 10), 0.0},
  };
  return all;
}

const std::vector<int> kCheckpoints{10, 25, 50, 100, 300};

// One study of function `f` as real trial processes, one at a time, minimizing its value; the
// study's wall time goes to `seconds`.
hpo::HpoSummary function_study(const Function& f, const std::string& program_args, int steps, int max_trials,
                               hpo::SamplerKind kind, std::uint64_t seed, hpo::PrunerKind pruner_kind,
                               std::int64_t min_resource, const std::filesystem::path& dir, double& seconds) {
  const hpo::Space space = hpo::Space::parse(f.space, f.name);
  hpo::HpoOptions options;
  options.command = fmt::format("{} {} {}", PARATUNE_FUNCTION_TRIAL, f.name, program_args);
  options.steps = steps;
  options.objective = "value";
  options.direction = hpo::Direction::kMinimize;
  options.max_trials = max_trials;
  options.trials_dir = dir / "trials";
  store::SqliteStudyStore store(dir / "study.db");
  trial::LocalBackend backend(1);
  hpo::SamplerOptions sampler_options;
  sampler_options.seed = seed;
  auto sampler = hpo::make_sampler(kind, space, sampler_options);
  hpo::PrunerOptions pruner_options;
  pruner_options.max_resource = steps;
  pruner_options.min_resource = min_resource;
  auto pruner = hpo::make_pruner(pruner_kind, pruner_options);
  tune::StudyObserver quiet;
  const std::atomic<int> no_stop{0};
  const Clock::time_point start = Clock::now();
  hpo::HpoSummary s = hpo::run_hpo(space, options, store, backend, *sampler, *pruner, quiet, no_stop);
  seconds = since(start);
  return s;
}

// One study; returns the best value after each checkpoint's number of evaluations (trial order).
std::vector<double> one_study(const Function& f, hpo::SamplerKind kind, std::uint64_t seed, int evaluations,
                              double& seconds) {
  const std::filesystem::path dir = scratch(fmt::format("{}-{}-{}", f.name, hpo::to_string(kind), seed));
  const hpo::HpoSummary s = function_study(f, "", 1, evaluations, kind, seed, hpo::PrunerKind::kNone, 0, dir, seconds);
  std::vector<double> best_after;
  double best = INFINITY;
  std::size_t next = 0;
  for (std::size_t i = 0; i < s.trials.size(); ++i) {
    if (s.trials[i].objective) best = std::min(best, *s.trials[i].objective);
    while (next < kCheckpoints.size() && static_cast<int>(i + 1) == kCheckpoints[next]) {
      best_after.push_back(best);
      ++next;
    }
  }
  std::filesystem::remove_all(dir);
  return best_after;
}

int run_functions(int first_seed, int last_seed, int evaluations, const std::string& out_path,
                  const std::set<std::string>& only_functions, const std::vector<hpo::SamplerKind>& samplers) {
  std::ofstream out(out_path);
  out << "function\tsampler\tseed\tseconds";
  for (int c : kCheckpoints)
    if (c <= evaluations) out << "\tbest_" << c;
  out << "\n";
  for (const Function& f : functions()) {
    if (!only_functions.empty() && !only_functions.contains(f.name)) continue;
    for (hpo::SamplerKind kind : samplers)
      for (int seed = first_seed; seed <= last_seed; ++seed) {
        double seconds = 0;
        const std::vector<double> best = one_study(f, kind, static_cast<std::uint64_t>(seed), evaluations, seconds);
        out << fmt::format("{}\t{}\t{}\t{:.2f}", f.name, hpo::to_string(kind), seed, seconds);
        for (double b : best) out << fmt::format("\t{:.17g}", b);
        out << "\n" << std::flush;
        fmt::print(stderr, "{} {} seed {}: best {:.6g} after {} evaluations, {:.1f} s\n", f.name, hpo::to_string(kind),
                   seed, best.back(), evaluations, seconds);
      }
  }
  return 0;
}

std::vector<std::string> split_commas(const std::string& text) {
  std::vector<std::string> out;
  std::stringstream in(text);
  for (std::string item; std::getline(in, item, ',');) out.push_back(item);
  return out;
}

double quantile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  const double position = q * static_cast<double>(v.size() - 1);
  const auto lower = static_cast<std::size_t>(std::floor(position));
  const std::size_t upper = std::min(lower + 1, v.size() - 1);
  return v[lower] + (position - static_cast<double>(lower)) * (v[upper] - v[lower]);
}

int summarize(const std::vector<std::string>& files) {
  // function -> sampler -> checkpoint column -> log10 regrets; and study seconds.
  std::map<std::string, std::map<std::string, std::map<int, std::vector<double>>>> regret;
  std::map<std::string, std::map<std::string, std::vector<double>>> seconds;
  std::map<std::string, double> minimum;
  for (const Function& f : functions()) minimum[f.name] = f.minimum;
  for (const std::string& file : files) {
    std::ifstream in(file);
    std::string header;
    std::getline(in, header);
    std::vector<int> columns;
    std::istringstream h(header);
    for (std::string field; std::getline(h, field, '\t');)
      if (field.rfind("best_", 0) == 0) columns.push_back(std::stoi(field.substr(5)));
    for (std::string line; std::getline(in, line);) {
      std::istringstream row(line);
      std::string function, sampler, seed, secs;
      std::getline(row, function, '\t');
      std::getline(row, sampler, '\t');
      std::getline(row, seed, '\t');
      std::getline(row, secs, '\t');
      seconds[function][sampler].push_back(std::stod(secs));
      for (int c : columns) {
        std::string value;
        std::getline(row, value, '\t');
        // log10 of the regret, floored at 1e-12 (a found minimum to double precision).
        regret[function][sampler][c].push_back(std::log10(std::max(std::stod(value) - minimum.at(function), 1e-12)));
      }
    }
  }
  // The checkpoints any file has, as columns.
  std::set<int> present;
  for (const auto& [function, by_sampler] : regret)
    for (const auto& [sampler, cols] : by_sampler)
      for (const auto& [c, values] : cols) present.insert(c);
  std::string out = "| function | sampler | seeds | log10 regret after";
  for (int c : present) out += fmt::format(" {} |", c);
  out += " s per study |\n|---|---|---|";
  for (std::size_t i = 0; i <= present.size(); ++i) out += "---|";
  out += "\n";
  // paratune's samplers, then Optuna's (bench/optuna_functions.py) beside them.
  for (const auto& [function, by_sampler] : regret)
    for (const char* sampler : {"random", "tpe", "gp", "cmaes", "optuna-tpe", "optuna-cmaes"}) {
      if (!by_sampler.contains(sampler)) continue;
      const auto& cols = by_sampler.at(sampler);
      out += fmt::format("| {} | {} | {} |", function, sampler, cols.begin()->second.size());
      for (int c : present) {
        if (!cols.contains(c)) {
          out += " - |";
          continue;
        }
        const auto& v = cols.at(c);
        out += fmt::format(" {:.2f} [{:.2f}, {:.2f}] |", quantile(v, 0.5), quantile(v, 0.25), quantile(v, 0.75));
      }
      out += fmt::format(" {:.1f} |\n", quantile(seconds[function][sampler], 0.5));
    }
  fmt::print("{}", out);
  fmt::print("\nmedian [quartiles] over seeds of log10(best found - known minimum); lower is better.\n");
  return 0;
}

// The trial program run `n` times directly, one after the other: what a study could not beat.
double bare_runs(int n, const std::string& params) {
  std::vector<std::string> env_strings;
  for (char** e = environ; *e; ++e) env_strings.emplace_back(*e);
  env_strings.push_back("PARATUNE_PARAMS=" + params);
  env_strings.push_back("PARATUNE_MAX_STEPS=1");
  std::vector<char*> envp;
  for (std::string& s : env_strings) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::string program = PARATUNE_FUNCTION_TRIAL, function = "branin";
  char* argv[] = {program.data(), function.data(), nullptr};
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
  const Clock::time_point start = Clock::now();
  for (int i = 0; i < n; ++i) {
    pid_t pid = 0;
    if (posix_spawn(&pid, program.c_str(), &actions, nullptr, argv, envp.data()) != 0) return -1;
    ::waitpid(pid, nullptr, 0);
  }
  posix_spawn_file_actions_destroy(&actions);
  return since(start);
}

void overhead_case(hpo::SamplerKind kind, hpo::PrunerKind pruner_kind, int trials, int steps) {
  const std::filesystem::path dir = scratch("overhead");
  double wall = 0;
  const hpo::HpoSummary s = function_study(functions()[0], "--curve", steps, trials, kind, 0, pruner_kind,
                                           pruner_kind == hpo::PrunerKind::kAsha ? 1 : 0, dir, wall);
  const int runs = s.started + s.promotions;
  const double bare = bare_runs(runs, R"({"x1": 1, "x2": 2})");
  fmt::print("  {:<7} + {:<9} {:>4} trials, {:>4} runs of up to {} steps: {:6.2f} s wall; the program run {} times "
             "directly {:5.2f} s; {:5.1f} ms per run beyond the program\n",
             hpo::to_string(kind), hpo::to_string(pruner_kind), trials, runs, steps, wall, runs, bare,
             (wall - bare) / runs * 1e3);
}

}  // namespace

int main(int argc, char** argv) {
  const std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty()) {
    fmt::print(stderr, "usage: bench_hpo functions [--seeds A-B] [--evaluations N] [--out FILE] [--functions a,b] [--samplers a,b] | summarize FILE... | multi [--seeds A-B] [--trials N] [--problems a,b] [--samplers a,b] [--out FILE] | multi-summarize FILE... | overhead\n");
    return 2;
  }
  if (args[0] == "functions") {
    int first = 0, last = 19, evaluations = 100;
    std::string out = "hpo_functions.tsv";
    std::set<std::string> only;
    std::vector<hpo::SamplerKind> samplers{hpo::SamplerKind::kRandom, hpo::SamplerKind::kTpe, hpo::SamplerKind::kGp,
                                           hpo::SamplerKind::kCmaes};
    for (std::size_t i = 1; i + 1 < args.size(); i += 2) {
      if (args[i] == "--seeds") {
        const auto dash = args[i + 1].find('-');
        first = std::stoi(args[i + 1].substr(0, dash));
        last = std::stoi(args[i + 1].substr(dash + 1));
      } else if (args[i] == "--evaluations") {
        evaluations = std::stoi(args[i + 1]);
      } else if (args[i] == "--out") {
        out = args[i + 1];
      } else if (args[i] == "--functions") {
        for (const std::string& name : split_commas(args[i + 1])) only.insert(name);
      } else if (args[i] == "--samplers") {
        samplers.clear();
        for (const std::string& name : split_commas(args[i + 1])) samplers.push_back(hpo::parse_sampler(name));
      }
    }
    return run_functions(first, last, evaluations, out, only, samplers);
  }
  if (args[0] == "summarize") return summarize({args.begin() + 1, args.end()});
  if (args[0] == "multi") return paratune::bench::run_multi_objective(args);
  if (args[0] == "multi-summarize") return paratune::bench::summarize_multi_objective({args.begin() + 1, args.end()});
  if (args[0] == "overhead") {
    fmt::print("controller overhead per run (real processes; the trial program does no work):\n");
    overhead_case(hpo::SamplerKind::kRandom, hpo::PrunerKind::kNone, 200, 1);
    overhead_case(hpo::SamplerKind::kTpe, hpo::PrunerKind::kNone, 200, 1);
    overhead_case(hpo::SamplerKind::kTpe, hpo::PrunerKind::kAsha, 200, 27);
    overhead_case(hpo::SamplerKind::kRandom, hpo::PrunerKind::kMedian, 100, 27);
    return 0;
  }
  fmt::print(stderr, "bench_hpo: unknown scenario '{}'\n", args[0]);
  return 2;
}
