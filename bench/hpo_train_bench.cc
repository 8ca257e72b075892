// Hyperparameter search with the real trainer (paratune-train), measured
// (docs/hyperparameter-studies.md):
//
//   bench_hpo_train search [--seeds A-B] [--budget SECONDS] [--steps 81] [--min-resource 9]
//                          [--algorithms random,asha+tpe,...] [--out DIR]
//       Search quality: the Fashion-MNIST CNN over a continuous space (log-uniform lr and weight
//       decay, momentum, batch size, schedule), each of random, tpe, gp, asha+random, asha+tpe and
//       hyperband for the same wall-clock budget per seed, 2 slots of one core each. Every study's
//       best validation accuracy of a fully trained trial against time goes to DIR/curves.csv;
//       DIR/summary.md has median and quartiles over seeds at 10 time points and when each
//       algorithm's median first reaches random's full-budget median; DIR/plot.svg (and plot.png
//       with rsvg-convert) draws them.
//       random/serve, asha+tpe/serve and hyperband/serve (not run by default) are the same searches
//       with trials that stay alive (paratune tune --serve: one paratune-train process per slot
//       serves every run); --algorithms random,asha+tpe,asha+tpe/serve,hyperband,hyperband/serve
//       runs both ways interleaved, seed by seed (bench/results/hpo_search_serve.md).
//
//   bench_hpo_train hypertune [--epochs E] [--strategies none,dp,mp,gpipe,auto] [--out DIR]
//       HyperTune's MNIST experiment (data/papers/README.md#hypertune-distributed-hpo-report Sec. 4,
//       Fig. 3/7, Table 1) on Fashion-MNIST, and the two levels of parallelism: its 27-point grid
//       (batch size x learning rate x StepLR gamma) on 2 slots of one core each, once per strategy:
//       none (2 one-rank trials at a time), dp, mp, gpipe (one two-rank trial at a time) and auto
//       (paratune's cost model picks per trial). Per trial: runtime, peak memory (RSS high-water of
//       a rank, max over ranks), validation and test accuracy; per strategy: the whole search's
//       time, the best trial and when it had finished. DIR/hypertune.md.
//
// Run it on an otherwise idle machine: the x axis is wall time.
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <stdexcept>
#include <string>
#include <vector>

#include "paratune/hpo/pruner.h"
#include "paratune/hpo/sampler.h"
#include "paratune/hpo/study.h"
#include "paratune/report/tune_report.h"
#include "paratune/store/sqlite_store.h"
#include "paratune/trial/command.h"

namespace {

using namespace paratune;

// The search space: SGD with momentum on the CNN, as a practitioner would open it.
constexpr const char* kSpace = R"(parameters:
  lr: {type: float, low: 1.0e-3, high: 1.0, log: true}
  momentum: {type: float, low: 0.5, high: 0.99}
  weight_decay: {type: float, low: 1.0e-6, high: 1.0e-2, log: true}
  batch_size: [64, 128, 256]
  schedule: [constant, cosine, step]
)";
// A small ResNet-style CNN, one thread per trial, 2,000 validation samples per evaluation.
constexpr const char* kTrainer = "--model cnn --cnn-channels 8,16 --optimizer sgd --threads 1 --eval-limit 2000";
// A full trial's steps and ASHA's first rung: by default 81 and 9 (rungs 9, 27, 81 with eta 3);
// --steps and --min-resource change them (e.g. 243 and 9: rungs 9, 27, 81, 243).
struct Resources {
  int steps = 81;
  int min_resource = 9;
};
constexpr double kChance = 0.1;

// "/serve": the same search with trials that stay alive (HpoOptions::serve: one paratune-train
// process per slot serves every run, paused trials kept in its memory); without it a process per run.
struct Algorithm {
  std::string name;
  hpo::SamplerKind sampler;
  hpo::PrunerKind pruner;
  bool serve = false;
};

const std::vector<Algorithm> kAlgorithms{
    {"random", hpo::SamplerKind::kRandom, hpo::PrunerKind::kNone},
    {"tpe", hpo::SamplerKind::kTpe, hpo::PrunerKind::kNone},
    {"gp", hpo::SamplerKind::kGp, hpo::PrunerKind::kNone},
    {"asha+random", hpo::SamplerKind::kRandom, hpo::PrunerKind::kAsha},
    {"asha+tpe", hpo::SamplerKind::kTpe, hpo::PrunerKind::kAsha},
    {"hyperband", hpo::SamplerKind::kRandom, hpo::PrunerKind::kHyperband},
    {"random/serve", hpo::SamplerKind::kRandom, hpo::PrunerKind::kNone, true},
    {"asha+tpe/serve", hpo::SamplerKind::kTpe, hpo::PrunerKind::kAsha, true},
    {"hyperband/serve", hpo::SamplerKind::kRandom, hpo::PrunerKind::kHyperband, true}};
// What runs without --algorithms: the process-per-run searches (the issue-19 benchmark as it was).
const std::vector<std::string> kDefaultAlgorithms{"random", "tpe", "gp", "asha+random", "asha+tpe", "hyperband"};

// A study's best fully trained validation accuracy over time: (seconds since its start, best).
struct Curve {
  std::string algorithm;
  int seed = 0;
  std::vector<std::pair<double, double>> points;
  int trials = 0, runs = 0;
  std::int64_t steps = 0;  // trained over every run
  int processes = 0;       // serving processes (0: a process per run)
};

double best_at(const Curve& c, double t) {
  double best = kChance;
  for (const auto& [time, value] : c.points)
    if (time <= t) best = std::max(best, value);
  return best;
}

Curve run_study(const Algorithm& a, int seed, double budget_s, const Resources& resources,
                const std::filesystem::path& dir) {
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const hpo::Space space = hpo::Space::parse(kSpace, "bench-space");
  hpo::HpoOptions options;
  options.command = fmt::format("{} {} --steps {{steps}}", PARATUNE_TRAIN_BINARY, kTrainer);
  options.steps = resources.steps;
  options.objective = "val_accuracy";
  options.direction = hpo::Direction::kMaximize;
  options.budget_s = budget_s;
  options.trials_dir = dir / "trials";
  options.serve = a.serve;
  store::SqliteStudyStore store(dir / "study.db");
  trial::LocalBackend backend(2, {}, {{0}, {1}});
  hpo::SamplerOptions sampler_options;
  sampler_options.direction = options.direction;
  sampler_options.seed = static_cast<std::uint64_t>(seed);
  auto sampler = hpo::make_sampler(a.sampler, space, sampler_options);
  hpo::PrunerOptions pruner_options;
  pruner_options.direction = options.direction;
  pruner_options.max_resource = resources.steps;
  pruner_options.min_resource = resources.min_resource;
  pruner_options.eta = 3;
  auto pruner = hpo::make_pruner(a.pruner, pruner_options);
  tune::StudyObserver quiet;
  const std::atomic<int> no_stop{0};
  const hpo::HpoSummary s = hpo::run_hpo(space, options, store, backend, *sampler, *pruner, quiet, no_stop);
  Curve c{a.name, seed, {}, static_cast<int>(s.trials.size()), s.started + s.promotions, 0, s.serving_processes};
  double start = 1e300;
  for (const auto& t : s.trials) start = std::min(start, t.started_unix_s);
  for (const auto& t : s.trials) {
    c.steps += t.steps;
    if (t.status == "completed" && t.objective) c.points.emplace_back(t.ended_unix_s - start, *t.objective);
  }
  std::sort(c.points.begin(), c.points.end());
  return c;
}

double quantile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  const double position = q * static_cast<double>(v.size() - 1);
  const auto lower = static_cast<std::size_t>(std::floor(position));
  const std::size_t upper = std::min(lower + 1, v.size() - 1);
  return v[lower] + (position - static_cast<double>(lower)) * (v[upper] - v[lower]);
}

std::vector<double> at_time(const std::vector<Curve>& curves, const std::string& algorithm, double t) {
  std::vector<double> v;
  for (const Curve& c : curves)
    if (c.algorithm == algorithm) v.push_back(best_at(c, t));
  return v;
}

// One panel: median line and quartile band per algorithm, accuracy against seconds.
std::string plot_svg(const std::vector<Curve>& curves, double budget_s) {
  const double width = 760, height = 440, x0 = 60, y0 = 30, w = 520, h = 360;
  const char* colors[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd", "#d62728",
                          "#8c564b", "#7f7f7f", "#e377c2", "#17becf"};
  std::vector<const Algorithm*> shown;  // the algorithms that ran
  for (const Algorithm& a : kAlgorithms)
    if (std::any_of(curves.begin(), curves.end(), [&](const Curve& c) { return c.algorithm == a.name; }))
      shown.push_back(&a);
  double low = 1, high = 0;
  for (const Curve& c : curves)
    for (const auto& [t, v] : c.points) low = std::min(low, v), high = std::max(high, v);
  low = std::floor(std::max(kChance, low - 0.02) * 50) / 50, high = std::ceil(std::min(1.0, high + 0.01) * 50) / 50;
  const auto X = [&](double t) { return x0 + w * t / budget_s; };
  const auto Y = [&](double v) { return y0 + h * (1 - (std::clamp(v, low, high) - low) / (high - low)); };
  std::string svg = fmt::format(R"(<svg xmlns="http://www.w3.org/2000/svg" width="{0}" height="{1}" viewBox="0 0 {0} {1}" font-family="sans-serif" font-size="11">)"
                                "\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n",
                                width, height);
  svg += fmt::format(R"(<text x="{}" y="18" text-anchor="middle" font-weight="bold">Fashion-MNIST CNN: best validation accuracy of a fully trained trial vs search time</text>)" "\n", x0 + w / 2);
  svg += fmt::format(R"(<rect x="{}" y="{}" width="{}" height="{}" fill="none" stroke="#333"/>)" "\n", x0, y0, w, h);
  for (double g = low; g <= high + 1e-9; g += 0.02)
    svg += fmt::format(R"(<line x1="{}" y1="{:.1f}" x2="{}" y2="{:.1f}" stroke="#ddd"/><text x="{}" y="{:.1f}" text-anchor="end">{:.0f}%</text>)" "\n",
                       x0, Y(g), x0 + w, Y(g), x0 - 4, Y(g) + 4, g * 100);
  for (double t = 0; t <= budget_s + 1e-9; t += budget_s / 6)
    svg += fmt::format(R"(<text x="{:.1f}" y="{}" text-anchor="middle">{:.0f} s</text>)" "\n", X(t), y0 + h + 16, t);
  for (std::size_t a = 0; a < shown.size(); ++a) {
    std::string median, band_top, band_bottom;
    for (int i = 0; i <= 120; ++i) {
      const double t = budget_s * i / 120;
      const std::vector<double> v = at_time(curves, shown[a]->name, t);
      if (v.empty()) continue;
      median += fmt::format("{:.1f},{:.1f} ", X(t), Y(quantile(v, 0.5)));
      band_top += fmt::format("{:.1f},{:.1f} ", X(t), Y(quantile(v, 0.75)));
      band_bottom = fmt::format("{:.1f},{:.1f} ", X(t), Y(quantile(v, 0.25))) + band_bottom;
    }
    svg += fmt::format(R"(<polygon points="{}{}" fill="{}" opacity="0.12"/>)" "\n", band_top, band_bottom, colors[a]);
    svg += fmt::format(R"(<polyline points="{}" fill="none" stroke="{}" stroke-width="2"/>)" "\n", median, colors[a]);
    svg += fmt::format(R"(<line x1="{}" y1="{}" x2="{}" y2="{}" stroke="{}" stroke-width="2"/><text x="{}" y="{}">{}</text>)" "\n",
                       x0 + w + 15, y0 + 20 + 18 * a, x0 + w + 35, y0 + 20 + 18 * a, colors[a], x0 + w + 40,
                       y0 + 24 + 18 * a, shown[a]->name);
  }
  svg += fmt::format(R"(<text x="{}" y="{}" font-size="10">median over seeds; band: quartiles</text>)" "\n", x0 + w + 15,
                     y0 + 20 + 18 * (shown.size() + 1));
  return svg + "</svg>\n";
}

std::string summary_md(const std::vector<Curve>& curves, double budget_s) {
  std::string out = "| algorithm | seeds |";
  for (int i = 1; i <= 10; ++i) out += fmt::format(" {:.0f} s |", budget_s * i / 10);
  out += " trials (median) | runs (median) | steps (median) | processes (median) |\n|---|---|";
  for (int i = 0; i < 14; ++i) out += "---|";
  out += "\n";
  const double target = quantile(at_time(curves, "random", budget_s), 0.5);
  std::string reach;
  double random_first = -1;
  for (const Algorithm& a : kAlgorithms) {
    std::vector<double> trials, runs, steps, processes;
    for (const Curve& c : curves)
      if (c.algorithm == a.name) {
        trials.push_back(c.trials), runs.push_back(c.runs), steps.push_back(static_cast<double>(c.steps));
        // A process per run: as many processes as runs.
        processes.push_back(c.processes > 0 ? c.processes : c.runs);
      }
    if (trials.empty()) continue;
    out += fmt::format("| {} | {} |", a.name, trials.size());
    for (int i = 1; i <= 10; ++i) {
      const std::vector<double> v = at_time(curves, a.name, budget_s * i / 10);
      out += fmt::format(" {:.1f} [{:.1f}, {:.1f}] |", 100 * quantile(v, 0.5), 100 * quantile(v, 0.25), 100 * quantile(v, 0.75));
    }
    out += fmt::format(" {:.0f} | {:.0f} | {:.0f} | {:.0f} |\n", quantile(trials, 0.5), quantile(runs, 0.5),
                       quantile(steps, 0.5), quantile(processes, 0.5));
    double first = -1;
    for (int i = 0; i <= 1000 && first < 0; ++i) {
      const double t = budget_s * i / 1000;
      if (quantile(at_time(curves, a.name, t), 0.5) >= target) first = t;
    }
    if (a.name == "random") random_first = first;
    const std::string of_random =
        random_first > 0 && first >= 0 ? fmt::format(", {:.2f} of random's time", first / random_first) : "";
    reach += first < 0 ? fmt::format("- {}: never within the budget\n", a.name)
                       : fmt::format("- {}: {:.0f} s ({:.2f} of the budget{})\n", a.name, first, first / budget_s,
                                     of_random);
  }
  out += fmt::format("\nvalidation accuracy (%) of the best fully trained trial, median [quartiles] over seeds; before "
                     "the first one, chance (10%).\n\nWhen the median first reaches random's full-budget median "
                     "({:.2f}%):\n{}",
                     100 * target, reach);
  return out;
}

// ---- hypertune: the 27-point grid, once per strategy ----

// HyperTune's space for MNIST, verbatim. Its rates are Adadelta's (PyTorch's MNIST example);
// libtorch has no Adadelta, so the trials run plain SGD (no momentum) at the same rates, which the
// CNN's BatchNorm layers tolerate (0.99 trains best of the three in a half-epoch check).
constexpr const char* kHyperTuneSpace = R"(parameters:
  batch_size: [64, 128, 256]
  lr: [0.5, 0.9, 0.99]
  gamma: [0.5, 0.7, 0.9]
)";

struct StrategyRun {
  std::string strategy;
  double elapsed_s = 0;
  std::vector<store::StoredTrial> trials;  // with metrics
  std::optional<std::size_t> best;
};

StrategyRun run_grid(const std::string& strategy, double epochs, const std::filesystem::path& dir) {
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const hpo::Space space = hpo::Space::parse(kHyperTuneSpace, "hypertune-space");
  hpo::HpoOptions options;
  // StepLR stepped every quarter of the run (HyperTune's example steps it every epoch, over more
  // epochs), so gamma acts three times.
  options.command = fmt::format(
      "{} --model cnn --cnn-channels 8,16 --optimizer sgd --momentum 0 --threads 1 --epochs {} --schedule step "
      "--step-epochs {} --eval-limit 2000 --ranks {{ranks}} --strategy {{strategy}}",
      PARATUNE_TRAIN_BINARY, epochs, epochs / 4);
  options.steps = 1 << 30;  // the trials' length is their epochs
  options.objective = "val_accuracy";
  options.direction = hpo::Direction::kMaximize;
  options.trials_dir = dir / "trials";
  options.trial_ranks = strategy == "none" ? 1 : 2;
  options.strategy = strategy;
  store::SqliteStudyStore store(dir / "study.db");
  trial::LocalBackend backend(2, {}, {{0}, {1}});
  hpo::SamplerOptions sampler_options;
  sampler_options.direction = options.direction;
  auto sampler = hpo::make_sampler(hpo::SamplerKind::kGrid, space, sampler_options);
  hpo::PrunerOptions pruner_options;
  pruner_options.direction = options.direction;
  pruner_options.max_resource = options.steps;
  auto pruner = hpo::make_pruner(hpo::PrunerKind::kNone, pruner_options);
  tune::StudyObserver quiet;
  const std::atomic<int> no_stop{0};
  const hpo::HpoSummary summary = hpo::run_hpo(space, options, store, backend, *sampler, *pruner, quiet, no_stop);
  StrategyRun run{strategy, summary.elapsed_s, {}, summary.best};
  for (const store::StudyInfo& study : store.studies())
    if (study.name == options.name) run.trials = store.trials(study.id, true);
  return run;
}

std::optional<double> final_metric(const store::StoredTrial& t, const std::string& name) {
  std::optional<double> v;
  for (const trial::MetricReport& m : t.metrics)
    if (m.name == name) v = m.value;
  return v;
}

std::string strategy_of(const store::StoredTrial& t) {
  const nlohmann::json j = nlohmann::json::parse(t.hpo_json.empty() ? "{}" : t.hpo_json, nullptr, false);
  return j.is_object() ? j.value("strategy", "") : "";
}

std::string hypertune_md(const std::vector<StrategyRun>& runs, double epochs) {
  std::string out = fmt::format(
      "HyperTune's MNIST experiment on Fashion-MNIST: the 27-point grid (batch 64/128/256 x lr 0.5/0.9/0.99 (plain SGD; "
      "HyperTune's are Adadelta's) x StepLR gamma 0.5/0.7/0.9, {} epoch(s) each, decayed every {} epoch), CNN 8,16 (11k parameters), 2 slots of one "
      "core; validation on 2,000 held-out training images, test on the 10,000 test images. One run per strategy.\n\n",
      epochs, epochs / 4);
  out += "| strategy | trials at once | whole search s | trial runtime s median [min, max] | peak memory per rank MiB "
         "median [min, max] | best val acc % | its test acc % | best found after s | failed |\n"
         "|---|---|---|---|---|---|---|---|---|\n";
  for (const StrategyRun& r : runs) {
    std::vector<double> runtime, memory;
    int failed = 0;
    double start = 1e300;
    for (const auto& t : r.trials) start = std::min(start, t.started_unix_s);
    for (const auto& t : r.trials) {
      if (t.status != "completed") ++failed;
      runtime.push_back(t.ended_unix_s - t.started_unix_s);
      if (t.peak_memory_bytes) memory.push_back(*t.peak_memory_bytes / (1024.0 * 1024.0));
    }
    const auto range = [](const std::vector<double>& v, const char* format) {
      if (v.empty()) return std::string("-");
      return fmt::format(fmt::runtime(format), quantile(v, 0.5), *std::min_element(v.begin(), v.end()),
                         *std::max_element(v.begin(), v.end()));
    };
    std::string best = "-", test = "-", when = "-";
    if (r.best) {
      const store::StoredTrial& b = r.trials[*r.best];
      best = fmt::format("{:.2f}", 100 * *b.objective);
      if (const auto t = final_metric(b, "test_accuracy")) test = fmt::format("{:.2f}", 100 * *t);
      when = fmt::format("{:.0f}", b.ended_unix_s - start);
    }
    out += fmt::format("| {} | {} | {:.0f} | {} | {} | {} | {} | {} | {} |\n", r.strategy, r.strategy == "none" ? 2 : 1,
                       r.elapsed_s, range(runtime, "{:.1f} [{:.1f}, {:.1f}]"), range(memory, "{:.0f} [{:.0f}, {:.0f}]"),
                       best, test, when, failed);
  }
  // Per trial (HyperTune's Fig. 3/7): runtime and peak memory under each strategy.
  out += "\nPer trial: runtime s / peak memory per rank MiB (auto: the strategy it picked).\n\n| trial | params |";
  for (const StrategyRun& r : runs) out += fmt::format(" {} |", r.strategy);
  out += "\n|---|---|";
  for (std::size_t i = 0; i < runs.size(); ++i) out += "---|";
  out += "\n";
  for (std::size_t k = 0; !runs.empty() && k < runs.front().trials.size(); ++k) {
    out += fmt::format("| {} | {} |", runs.front().trials[k].number, params_words(runs.front().trials[k].params_json));
    for (const StrategyRun& r : runs) {
      if (k >= r.trials.size()) {
        out += " - |";
        continue;
      }
      const store::StoredTrial& t = r.trials[k];
      out += fmt::format(" {:.1f} / {}{} |", t.ended_unix_s - t.started_unix_s,
                         t.peak_memory_bytes ? fmt::format("{:.0f}", *t.peak_memory_bytes / (1024.0 * 1024.0)) : "-",
                         r.strategy == "auto" ? " (" + strategy_of(t) + ")" : "");
    }
    out += "\n";
  }
  return out;
}

constexpr const char* kUsage =
    "usage: bench_hpo_train search [--seeds A-B] [--budget SECONDS] [--steps 81] [--min-resource 9] "
    "[--algorithms random,tpe,...] [--out DIR]\n"
    "       bench_hpo_train hypertune [--epochs E] [--strategies none,dp,mp,gpipe,auto] [--out DIR]\n";

// Reads a subcommand's "--flag value" pairs into `setters`: 0 when read, 1 when --help printed the
// usage, 2 on an unknown flag, a flag without its value or a value that is not a number (std::stoi /
// std::stod throw), said on stderr before anything runs.
int read_flags(const std::vector<std::string>& args, const std::string& command,
               const std::map<std::string, std::function<void(const std::string&)>>& setters) {
  try {
    for (std::size_t i = 1; i < args.size(); i += 2) {
      const std::string& flag = args[i];
      if (flag == "--help" || flag == "-h") {
        fmt::print("{}", kUsage);
        return 1;
      }
      const auto setter = setters.find(flag);
      if (setter == setters.end()) throw std::invalid_argument("unknown flag " + flag);
      if (i + 1 >= args.size()) throw std::invalid_argument(flag + " needs a value");
      try {
        setter->second(args[i + 1]);
      } catch (const std::logic_error&) {  // std::invalid_argument, std::out_of_range
        throw std::invalid_argument(flag + ": '" + args[i + 1] + "' is not a number in range");
      }
    }
  } catch (const std::exception& e) {
    fmt::print(stderr, "bench_hpo_train {}: {}\n{}", command, e.what(), kUsage);
    return 2;
  }
  return 0;
}

int hypertune(const std::vector<std::string>& args) {
  double epochs = 0.5;
  std::vector<std::string> strategies{"none", "dp", "mp", "gpipe", "auto"};
  std::filesystem::path out = "hpo_hypertune";
  if (const int read = read_flags(args, "hypertune",
                                  {{"--epochs", [&](const std::string& v) { epochs = std::stod(v); }},
                                   {"--out", [&](const std::string& v) { out = v; }},
                                   {"--strategies", [&](const std::string& v) {
                                      strategies = trial::split_words(std::regex_replace(v, std::regex(","), " "));
                                    }}}))
    return read == 1 ? 0 : 2;
  std::filesystem::create_directories(out);
  std::vector<StrategyRun> runs;
  for (const std::string& s : strategies) {
    runs.push_back(run_grid(s, epochs, std::filesystem::temp_directory_path() / "paratune_bench_hypertune" / s));
    fmt::print(stderr, "{}: {} trials in {:.0f} s\n", s, runs.back().trials.size(), runs.back().elapsed_s);
    std::ofstream(out / "hypertune.md") << hypertune_md(runs, epochs);
  }
  fmt::print("{}", hypertune_md(runs, epochs));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const std::vector<std::string> args(argv + 1, argv + argc);
  if (!args.empty() && (args[0] == "--help" || args[0] == "-h")) {
    fmt::print("{}", kUsage);
    return 0;
  }
  if (!args.empty() && args[0] == "hypertune") return hypertune(args);
  if (args.empty() || args[0] != "search") {
    fmt::print(stderr, "{}", kUsage);
    return 2;
  }
  int first = 0, last = 4;
  double budget = 120;
  std::filesystem::path out = "hpo_search";
  Resources resources;
  std::vector<std::string> algorithms = kDefaultAlgorithms;
  const int read = read_flags(
      args, "search",
      {{"--steps", [&](const std::string& v) { resources.steps = std::stoi(v); }},
       {"--min-resource", [&](const std::string& v) { resources.min_resource = std::stoi(v); }},
       {"--algorithms",
        [&](const std::string& v) { algorithms = trial::split_words(std::regex_replace(v, std::regex(","), " ")); }},
       {"--seeds",
        [&](const std::string& v) {
          const auto dash = v.find('-');
          first = std::stoi(v.substr(0, dash));
          last = dash == std::string::npos ? first : std::stoi(v.substr(dash + 1));
        }},
       {"--budget", [&](const std::string& v) { budget = std::stod(v); }},
       {"--out", [&](const std::string& v) { out = v; }}});
  if (read != 0) return read == 1 ? 0 : 2;
  for (const std::string& name : algorithms)
    if (std::none_of(kAlgorithms.begin(), kAlgorithms.end(), [&](const Algorithm& a) { return a.name == name; })) {
      fmt::print(stderr, "--algorithms: unknown algorithm '{}' (random, tpe, gp, asha+random, asha+tpe, hyperband, "
                         "random/serve, asha+tpe/serve, hyperband/serve)\n", name);
      return 2;
    }
  std::filesystem::create_directories(out);
  std::vector<Curve> curves;
  std::ofstream csv(out / "curves.csv");
  csv << "algorithm,seed,seconds,best_val_accuracy\n";
  // Seeds outermost: each seed's studies run back to back, interleaved, so a slow period of the
  // machine touches every algorithm alike.
  for (int seed = first; seed <= last; ++seed)
    for (const Algorithm& a : kAlgorithms) {
      if (std::find(algorithms.begin(), algorithms.end(), a.name) == algorithms.end()) continue;
      Curve c = run_study(a, seed, budget, resources,
                          std::filesystem::temp_directory_path() / "paratune_bench_hpo_train" / a.name);
      for (const auto& [t, v] : c.points) csv << fmt::format("{},{},{:.2f},{:.6f}\n", a.name, seed, t, v);
      csv.flush();
      fmt::print(stderr, "{} seed {}: {} trials, {} runs, {} steps, {} serving processes; best {:.2f}%\n", a.name, seed,
                 c.trials, c.runs, c.steps, c.processes, 100 * best_at(c, budget));
      curves.push_back(std::move(c));
      std::ofstream(out / "summary.md") << summary_md(curves, budget);  // so far: a run cut short still tells
    }
  std::ofstream(out / "summary.md") << summary_md(curves, budget);
  std::ofstream(out / "plot.svg") << plot_svg(curves, budget);
  if (std::system(fmt::format("rsvg-convert -o '{}' '{}' 2>/dev/null", (out / "plot.png").string(), (out / "plot.svg").string()).c_str()) != 0)
    fmt::print(stderr, "rsvg-convert not found: plot.svg only\n");
  fmt::print("{}", summary_md(curves, budget));
  return 0;
}
