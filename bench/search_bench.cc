// How well the tuner's searches find the fastest configuration on the simulated cluster
// (bench/simcluster, issue 6), the way OPPA's Fig. 4 compares them.
//
// For each scenario, algorithm and seed a real study runs: `paratune-sim-trial` processes speak the
// protocol, the study store records them, the search decides. Search time is simulated: each trial
// costs the scenario's start-up time plus the simulated step times it reported (an out-of-memory
// trial: start-up plus a warm-up step), and the study is stopped once the scenario's budget (OPPA
// Table 2) is spent. Reported against search time and against trials: the *true* (noise-free)
// throughput of the configuration each search would return at that point (its best completed
// trial, Algorithm 3 line 26), as a fraction of the true optimum over the whole space; medians and
// quartiles over seeds; time to reach 98% of the optimum; trials and steps spent.
//
//   bench_search [--scenario NAME]... [--algo NAME]... [--seeds N] [--out DIR] [--time-scale X]
//   bench_search --overhead      # one BO iteration (fit + acquisition over 10,000 candidates)
//
// --out DIR writes results.json, curves.csv and plot.svg (plot.png too when rsvg-convert exists).
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <string>
#include <vector>

#include "paratune/cost/calibration.h"
#include "paratune/hpo/pruner.h"
#include "paratune/hpo/sampler.h"
#include "paratune/hpo/study.h"
#include "paratune/spec/error.h"
#include "paratune/store/sqlite_store.h"
#include "paratune/tune/bayes.h"
#include "paratune/tune/study.h"
#include "simcluster.h"

namespace {

using namespace paratune;
namespace fs = std::filesystem;

constexpr double kTarget = 0.98;  // of the true optimum
constexpr int kMaxTrials = 150;   // a cap besides the time budget
const std::vector<double> kBudgetFractions{0.05, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.6, 0.8, 1.0};
const std::vector<int> kTrialCounts{5, 10, 15, 20, 30, 40, 60};

// One study's trajectory: after each trial (in start order), the simulated time and steps spent and
// the true throughput ratio of the best completed trial so far.
struct Trajectory {
  std::vector<double> time_s, ratio;
  std::vector<int> steps;
  int trials = 0, total_steps = 0;
  double total_time_s = 0;
  std::map<std::string, int> statuses;
  double wall_s = 0;
};

// Stops the study when the simulated search time is spent.
class BudgetObserver final : public tune::StudyObserver {
 public:
  BudgetObserver(const simcluster::World& world, const store::StudyStore& store, double budget_s, std::atomic<int>& stop)
      : world_(world), store_(store), budget_s_(budget_s), stop_(stop) {}
  void trial_finished(const store::StoredTrial& t) override {
    spent_s_ += trial_cost(world_, store_, t);
    if (spent_s_ >= budget_s_) stop_.store(1);
  }
  // Start-up plus the reported steps; a trial that reported none (OOM in its first step): start-up
  // plus that warm-up step (3 x the true step time).
  static double trial_cost(const simcluster::World& world, const store::StoredTrial& t, const std::vector<double>& steps) {
    double cost = world.scenario.startup_s;
    for (double s : steps) cost += s;
    if (steps.empty()) {
      const auto point = world.space.point_of(nlohmann::json::parse(t.params_json));
      const simcluster::Truth truth = simcluster::ground_truth(world, *point);
      cost += 3 * truth.step_time_s;
    }
    return cost;
  }

 private:
  static double trial_cost(const simcluster::World& world, const store::StudyStore& store, const store::StoredTrial& t) {
    for (const store::StudyInfo& s : store.studies())
      for (const store::StoredTrial& full : store.trials(s.id, true))
        if (full.id == t.id) return trial_cost(world, full, full.step_times_s);
    return world.scenario.startup_s;
  }
  const simcluster::World& world_;
  const store::StudyStore& store_;
  double budget_s_;
  std::atomic<int>& stop_;
  double spent_s_ = 0;
};

std::unique_ptr<hpo::Sampler> make(tune::Algorithm algo, const simcluster::World& world, const tune::Prior& prior,
                                   std::uint64_t seed) {
  tune::BayesOptions o;
  o.algorithm = algo;
  o.steps = world.scenario.steps;
  o.seed = seed;
  o.memory_limit_bytes = world.nominal.gpu.memory_bytes;  // as `tune --model` does
  o.seed_from_prior = true;                                // the default with a model
  return tune::make_configuration_sampler(world.study_space, world.space, prior, o, 0);
}

// As `paratune tune` gives each search: OPPA's early termination with oppa, no pruner otherwise.
std::unique_ptr<hpo::Pruner> pruner_for(tune::Algorithm algo, int steps) {
  hpo::PrunerOptions o;
  o.direction = hpo::Direction::kMaximize;
  o.max_resource = steps;
  o.min_steps = std::min(5, steps);
  return hpo::make_pruner(algo == tune::Algorithm::kOppa ? hpo::PrunerKind::kOppa : hpo::PrunerKind::kNone, o);
}

Trajectory run_study(const simcluster::World& world, const tune::Prior& prior, tune::Algorithm algo,
                     std::uint64_t seed, double time_scale, const std::vector<double>& truth_ratio_by_row,
                     const tune::PointIndex& index) {
  const fs::path dir = fs::temp_directory_path() / "paratune_bench_search" /
                       fmt::format("{}-{}-{}", world.scenario.name, tune::to_string(algo), seed);
  fs::remove_all(dir);
  fs::create_directories(dir);
  hpo::HpoOptions options;
  options.command = fmt::format("{} --scenario {} --scenarios-dir {} --time-scale {}", PARATUNE_SIM_TRIAL,
                                world.scenario.name, PARATUNE_SIMCLUSTER_DIR, time_scale);
  options.steps = world.scenario.steps;
  options.max_trials = kMaxTrials;
  options.trials_dir = dir / "trials";
  store::SqliteStudyStore store(dir / "study.db");
  const trial::LocalBackend backend(1);
  const std::unique_ptr<hpo::Sampler> sampler = make(algo, world, prior, seed);
  const std::unique_ptr<hpo::Pruner> pruner = pruner_for(algo, options.steps);
  std::atomic<int> stop{0};
  BudgetObserver observer(world, store, world.scenario.search_budget_s, stop);
  const auto start = std::chrono::steady_clock::now();
  const hpo::HpoSummary summary = tune::run_configuration_study(world.study_space, world.space, options, store,
                                                                   backend, *sampler, *pruner, nullptr, observer, stop);
  Trajectory out;
  out.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const std::int64_t study = store.studies().front().id;
  double time = 0, best_measured = -1, best_ratio = 0;
  int steps = 0;
  for (const store::StoredTrial& t : store.trials(study, true)) {
    if (t.status == "interrupted") continue;
    time += BudgetObserver::trial_cost(world, t, t.step_times_s);
    steps += static_cast<int>(t.step_times_s.size());
    ++out.statuses[t.status];
    if (t.status == "completed" && t.throughput && *t.throughput > best_measured) {
      best_measured = *t.throughput;
      const auto point = world.space.point_of(nlohmann::json::parse(t.params_json));
      best_ratio = truth_ratio_by_row[static_cast<std::size_t>(*index.find(*point))];
    }
    out.time_s.push_back(time);
    out.steps.push_back(steps);
    out.ratio.push_back(best_ratio);
  }
  out.trials = static_cast<int>(out.time_s.size());
  out.total_steps = steps;
  out.total_time_s = time;
  fs::remove_all(dir);
  return out;
}

double ratio_at_time(const Trajectory& t, double time_s) {
  double r = 0;
  for (std::size_t i = 0; i < t.time_s.size() && t.time_s[i] <= time_s; ++i) r = t.ratio[i];
  return r;
}
double ratio_at_trials(const Trajectory& t, int trials) {
  if (t.ratio.empty()) return 0;
  return t.ratio[static_cast<std::size_t>(std::min<int>(trials, t.trials) - 1)];
}
double time_to_target(const Trajectory& t) {
  for (std::size_t i = 0; i < t.time_s.size(); ++i)
    if (t.ratio[i] >= kTarget) return t.time_s[i];
  return HUGE_VAL;
}

// Quartiles by linear interpolation (values may be +inf).
struct Quartiles {
  double q1 = 0, median = 0, q3 = 0;
};
Quartiles quartiles(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const auto at = [&](double q) {
    const double pos = q * static_cast<double>(v.size() - 1);
    const auto lo = static_cast<std::size_t>(std::floor(pos));
    const std::size_t hi = std::min(lo + 1, v.size() - 1);
    if (std::isinf(v[lo]) || std::isinf(v[hi])) return std::isinf(v[hi]) && pos > static_cast<double>(lo) ? v[hi] : v[lo];
    return v[lo] + (v[hi] - v[lo]) * (pos - static_cast<double>(lo));
  };
  return {at(0.25), at(0.5), at(0.75)};
}

std::string percent(const Quartiles& q) { return fmt::format("{:.1f} [{:.1f}, {:.1f}]", 100 * q.median, 100 * q.q1, 100 * q.q3); }
std::string separators(std::size_t columns) {
  std::string s;
  for (std::size_t i = 0; i < columns; ++i) s += "---|";
  return s;
}
std::string minutes(double s) { return std::isinf(s) ? "never" : fmt::format("{:.1f}", s / 60); }

struct Result {
  std::string scenario, title;
  double optimum = 0, budget_s = 0;
  std::map<std::string, std::vector<Trajectory>> runs;  // by algorithm
};

// --- The plot: one panel per scenario, median line and quartile band per algorithm ------------------

const std::map<std::string, std::string> kColors{{"random", "#7f7f7f"}, {"grid", "#bcbd22"}, {"bo", "#1f77b4"},
                                                 {"xgboost", "#ff7f0e"}, {"costmodel", "#9467bd"}, {"oppa", "#d62728"}};

std::string plot_svg(const std::vector<Result>& results) {
  constexpr double kPanelW = 360, kPanelH = 260, kMarginL = 55, kMarginB = 45, kMarginT = 30;
  constexpr double kLow = 0.5;  // the y axis starts at 50% of the optimum
  const double width = kPanelW * static_cast<double>(results.size()) + 20;
  const double height = kPanelH + kMarginB + kMarginT + 40;
  std::string svg = fmt::format(
      R"(<svg xmlns="http://www.w3.org/2000/svg" width="{0}" height="{1}" viewBox="0 0 {0} {1}" font-family="sans-serif" font-size="11">)"
      "\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n",
      width, height);
  for (std::size_t p = 0; p < results.size(); ++p) {
    const Result& r = results[p];
    const double x0 = static_cast<double>(p) * kPanelW + kMarginL, y0 = kMarginT;
    const double w = kPanelW - kMarginL - 15, h = kPanelH - 10;
    const auto X = [&](double t) { return x0 + w * t / r.budget_s; };
    const auto Y = [&](double ratio) { return y0 + h * (1 - (std::max(ratio, kLow) - kLow) / (1 - kLow)); };
    svg += fmt::format(R"(<text x="{}" y="{}" text-anchor="middle" font-weight="bold">{}</text>)" "\n", x0 + w / 2, y0 - 10, r.title);
    svg += fmt::format(R"(<rect x="{}" y="{}" width="{}" height="{}" fill="none" stroke="#333"/>)" "\n", x0, y0, w, h);
    for (double g : {0.5, 0.6, 0.7, 0.8, 0.9, 1.0}) {
      svg += fmt::format(R"(<line x1="{}" y1="{:.1f}" x2="{}" y2="{:.1f}" stroke="#ddd"/>)" "\n", x0, Y(g), x0 + w, Y(g));
      svg += fmt::format(R"(<text x="{}" y="{:.1f}" text-anchor="end">{:.0f}%</text>)" "\n", x0 - 4, Y(g) + 4, g * 100);
    }
    svg += fmt::format(R"(<line x1="{}" y1="{:.1f}" x2="{}" y2="{:.1f}" stroke="#2ca02c" stroke-dasharray="4 3"/>)" "\n", x0,
                       Y(kTarget), x0 + w, Y(kTarget));
    for (int m = 0; m <= 4; ++m) {
      const double t = r.budget_s * m / 4;
      svg += fmt::format(R"(<text x="{:.1f}" y="{}" text-anchor="middle">{:.0f}</text>)" "\n", X(t), y0 + h + 15, t / 60);
    }
    svg += fmt::format(R"(<text x="{}" y="{}" text-anchor="middle">search time (simulated minutes)</text>)" "\n", x0 + w / 2,
                       y0 + h + 32);
    if (p == 0)
      svg += fmt::format(R"svg(<text transform="translate({},{}) rotate(-90)" text-anchor="middle">best found / true optimum</text>)svg" "\n",
                         x0 - 40, y0 + h / 2);
    for (const auto& [algo, runs] : r.runs) {
      std::string band_top, band_bottom, line;
      constexpr int kSamples = 60;
      for (int i = 0; i <= kSamples; ++i) {
        const double t = r.budget_s * i / kSamples;
        std::vector<double> v;
        for (const Trajectory& tr : runs) v.push_back(ratio_at_time(tr, t));
        const Quartiles q = quartiles(v);
        line += fmt::format("{}{:.1f},{:.1f}", i ? " " : "", X(t), Y(q.median));
        band_top += fmt::format("{:.1f},{:.1f} ", X(t), Y(q.q3));
        band_bottom = fmt::format("{:.1f},{:.1f} ", X(t), Y(q.q1)) + band_bottom;
      }
      const std::string color = kColors.contains(algo) ? kColors.at(algo) : "#000";
      svg += fmt::format(R"(<polygon points="{}{}" fill="{}" fill-opacity="0.15" stroke="none"/>)" "\n", band_top, band_bottom, color);
      svg += fmt::format(R"(<polyline points="{}" fill="none" stroke="{}" stroke-width="{}"/>)" "\n", line, color,
                         algo == "oppa" ? 2.5 : 1.5);
    }
  }
  double lx = kMarginL;
  for (const auto& [algo, color] : kColors) {
    if (!results.front().runs.contains(algo)) continue;
    svg += fmt::format(R"(<line x1="{}" y1="{}" x2="{}" y2="{}" stroke="{}" stroke-width="2.5"/>)" "\n", lx, height - 14, lx + 20,
                       height - 14, color);
    svg += fmt::format(R"(<text x="{}" y="{}">{}</text>)" "\n", lx + 24, height - 10, algo);
    lx += 90;
  }
  svg += fmt::format(R"(<text x="{}" y="{}">median and quartiles over seeds; dashed: 98% of the optimum</text>)" "\n", lx + 10,
                     height - 10);
  return svg + "</svg>\n";
}

// --- Overhead: one BO iteration ---------------------------------------------------------------------

void overhead() {
  const simcluster::World world =
      simcluster::load_world(simcluster::scenario(PARATUNE_SIMCLUSTER_DIR, "llama2-7b-a100"));
  const tune::Prior prior = tune::cost_model_prior(world.space, world.model, world.nominal, world.scenario.training,
                                                   default_calibration());
  const std::vector<tune::Point>& points = world.space.enumerate();
  fmt::print("one BO iteration (fit of the throughput and memory GPs + cUCB over 10,000 candidates), {} space of {} "
             "points, one thread:\n", world.scenario.name, points.size());
  for (tune::Algorithm algo : {tune::Algorithm::kOppa, tune::Algorithm::kBo}) {
    for (int observed : {10, 30, 60}) {
      std::vector<double> ms;
      for (int rep = 0; rep < 5; ++rep) {
        tune::BayesOptions o;
        o.algorithm = algo;
        o.steps = 30;
        o.seed = static_cast<std::uint64_t>(rep);
        o.memory_limit_bytes = world.nominal.gpu.memory_bytes;
        o.max_candidates = 10000;
        auto search = tune::make_model_search(world.space, prior, o);
        std::mt19937_64 rng(static_cast<std::uint64_t>(rep));
        std::vector<hpo::TrialRecord> finished;
        for (int i = 0; i < observed; ++i) {
          const tune::Point& p = points[tune::uniform_below(rng, points.size())];
          const simcluster::Truth t = simcluster::ground_truth(world, p);
          hpo::TrialRecord& r = finished.emplace_back();
          r.number = i + 1;
          r.config = hpo::Config(world.space.to_json(p));
          r.state = t.oom ? hpo::TrialRecord::State::kFailed : hpo::TrialRecord::State::kCompleted;
          if (t.oom) {
            r.failure = trial::FailureKind::kOom;
          } else {
            r.measured.steps_per_s = t.throughput();
            r.measured.standard_error = 0.01 * t.throughput();
            r.measured.steps_used = o.steps - 1;
            r.peak_memory_bytes = t.peak_memory_bytes;
          }
        }
        const auto start = std::chrono::steady_clock::now();
        (void)search->propose(finished);
        ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
      }
      std::sort(ms.begin(), ms.end());
      fmt::print("  {:<5} {:>3} observed trials: median {:6.1f} ms, max {:6.1f} ms (5 runs)\n", tune::to_string(algo), observed,
                 ms[ms.size() / 2], ms.back());
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> scenario_names, algo_names;
  int seeds = 10;
  double time_scale = 1e-3;
  std::string out_dir;
  try {
    for (int i = 1; i < argc; ++i) {
      const std::string a = argv[i];
      const auto value = [&]() -> std::string {
        if (i + 1 >= argc) throw Error(a + ": needs a value");
        return argv[++i];
      };
      if (a == "--overhead") {
        overhead();
        return 0;
      }
      if (a == "--scenario") scenario_names.push_back(value());
      else if (a == "--algo") algo_names.push_back(value());
      else if (a == "--seeds") seeds = std::stoi(value());
      else if (a == "--time-scale") time_scale = std::stod(value());
      else if (a == "--out") out_dir = value();
      else throw Error("unknown argument " + a);
    }
    if (algo_names.empty()) algo_names = {"random", "xgboost", "bo", "costmodel", "oppa"};
    if (scenario_names.empty())
      for (const simcluster::Scenario& s : simcluster::scenarios(PARATUNE_SIMCLUSTER_DIR)) scenario_names.push_back(s.name);

    std::vector<Result> results;
    for (const std::string& name : scenario_names) {
      const simcluster::World world = simcluster::load_world(simcluster::scenario(PARATUNE_SIMCLUSTER_DIR, name));
      const simcluster::Optimum best = simcluster::optimum(world);
      const tune::Prior prior = tune::cost_model_prior(world.space, world.model, world.nominal, world.scenario.training,
                                                       default_calibration());
      const tune::PointIndex index(world.space);
      std::vector<double> truth_ratio;
      for (const tune::Point& p : world.space.enumerate())
        truth_ratio.push_back(simcluster::ground_truth(world, p).throughput() / best.throughput);
      Result r{name, world.scenario.title, best.throughput, world.scenario.search_budget_s, {}};
      fmt::print(stderr, "{}: {} points, {} fit, optimum {:.4f} steps/s\n", world.scenario.title,
                 world.space.enumerate().size(), best.fitting, best.throughput);
      for (const std::string& a : algo_names) {
        const tune::Algorithm algo = tune::parse_algorithm(a);
        for (int seed = 0; seed < seeds; ++seed) {
          r.runs[a].push_back(run_study(world, prior, algo, static_cast<std::uint64_t>(seed), time_scale, truth_ratio, index));
          const Trajectory& t = r.runs[a].back();
          fmt::print(stderr, "  {:<9} seed {:>2}: {:>3} trials, best {:5.1f}% of optimum, 98% at {} min, {:.1f} s wall\n", a,
                     seed, t.trials, 100 * (t.ratio.empty() ? 0 : t.ratio.back()), minutes(time_to_target(t)), t.wall_s);
        }
      }
      results.push_back(std::move(r));
    }

    // Tables.
    for (const Result& r : results) {
      fmt::print("\n### {}\n\ntrue optimum {:.4f} steps/s; budget {:.0f} simulated minutes; {} seeds\n\n", r.title, r.optimum,
                 r.budget_s / 60, seeds);
      fmt::print("best found, % of the true optimum, median [q1, q3], at a fraction of the search time:\n\n| algorithm |");
      for (double f : kBudgetFractions) fmt::print(" {:.0f} min |", f * r.budget_s / 60);
      fmt::print("\n|---|{}\n", separators(kBudgetFractions.size()));
      for (const auto& [algo, runs] : r.runs) {
        fmt::print("| {} |", algo);
        for (double f : kBudgetFractions) {
          std::vector<double> v;
          for (const Trajectory& t : runs) v.push_back(ratio_at_time(t, f * r.budget_s));
          fmt::print(" {} |", percent(quartiles(v)));
        }
        fmt::print("\n");
      }
      fmt::print("\nagainst trials:\n\n| algorithm |");
      for (int n : kTrialCounts) fmt::print(" {} trials |", n);
      fmt::print("\n|---|{}\n", separators(kTrialCounts.size()));
      for (const auto& [algo, runs] : r.runs) {
        fmt::print("| {} |", algo);
        for (int n : kTrialCounts) {
          std::vector<double> v;
          for (const Trajectory& t : runs) v.push_back(ratio_at_trials(t, n));
          fmt::print(" {} |", percent(quartiles(v)));
        }
        fmt::print("\n");
      }
      fmt::print("\n| algorithm | time to 98% (min), median [q1, q3] | runs reaching 98% | trials | steps | statuses (all seeds) |\n"
                 "|---|---|---|---|---|---|\n");
      for (const auto& [algo, runs] : r.runs) {
        std::vector<double> tt, trials, steps;
        std::map<std::string, int> statuses;
        int reached = 0;
        for (const Trajectory& t : runs) {
          tt.push_back(time_to_target(t));
          reached += std::isfinite(tt.back());
          trials.push_back(t.trials);
          steps.push_back(t.total_steps);
          for (const auto& [s, n] : t.statuses) statuses[s] += n;
        }
        const Quartiles q = quartiles(tt);
        std::string st;
        for (const auto& [s, n] : statuses) st += fmt::format("{}{} {}", st.empty() ? "" : ", ", n, s);
        fmt::print("| {} | {} [{}, {}] | {}/{} | {:.0f} | {:.0f} | {} |\n", algo, minutes(q.median), minutes(q.q1), minutes(q.q3),
                   reached, runs.size(), quartiles(trials).median, quartiles(steps).median, st);
      }
    }

    if (!out_dir.empty()) {
      fs::create_directories(out_dir);
      nlohmann::ordered_json doc = nlohmann::ordered_json::array();
      std::ofstream csv(fs::path(out_dir) / "curves.csv");
      csv << "scenario,algorithm,seed,trial,time_s,steps,best_true_ratio\n";
      for (const Result& r : results) {
        nlohmann::ordered_json s{{"scenario", r.scenario}, {"optimum", r.optimum}, {"budget_s", r.budget_s}};
        for (const auto& [algo, runs] : r.runs) {
          std::vector<double> tt;
          for (std::size_t seed = 0; seed < runs.size(); ++seed) {
            const Trajectory& t = runs[seed];
            tt.push_back(time_to_target(t));
            for (int i = 0; i < t.trials; ++i)
              csv << fmt::format("{},{},{},{},{:.3f},{},{:.6f}\n", r.scenario, algo, seed, i + 1, t.time_s[static_cast<std::size_t>(i)],
                                 t.steps[static_cast<std::size_t>(i)], t.ratio[static_cast<std::size_t>(i)]);
          }
          const Quartiles q = quartiles(tt);
          s["algorithms"][algo] = {{"time_to_98_median_s", std::isinf(q.median) ? -1 : q.median}};
        }
        doc.push_back(s);
      }
      std::ofstream(fs::path(out_dir) / "results.json") << doc.dump(2) << "\n";
      const fs::path svg = fs::path(out_dir) / "plot.svg";
      std::ofstream(svg) << plot_svg(results);
      const std::string png = (fs::path(out_dir) / "plot.png").string();
      if (std::system(fmt::format("command -v rsvg-convert >/dev/null && rsvg-convert -o '{}' '{}'", png, svg.string()).c_str()) != 0)
        fmt::print(stderr, "rsvg-convert not found: wrote {} only\n", svg.string());
    }
    return 0;
  } catch (const std::exception& e) {
    fmt::print(stderr, "bench_search: {}\n", e.what());
    return 2;
  }
}
