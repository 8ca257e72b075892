// bench_hpo multi and multi-summarize (bench/hpo_multi_objective.h): multi-objective samplers on the
// standard test problems, measured by hypervolume at equal trials.
#include "hpo_multi_objective.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <fstream>
#include <map>
#include <numbers>
#include <set>
#include <sstream>
#include <stdexcept>

#include "paratune/hpo/pareto.h"
#include "paratune/hpo/sampler.h"
#include "paratune/hpo/space.h"

namespace paratune::bench {
namespace {
namespace multi_objective_bench {  // unity builds

using Clock = std::chrono::steady_clock;

struct Problem {
  std::string name;
  int variables = 0;
  int objectives = 0;
  std::vector<double> (*evaluate)(const std::vector<double>& x) = nullptr;
  // Every objective value of the problem lies below it (all minimised), so every trial counts.
  std::vector<double> reference;
};

// ZDT's g for x_2..x_n: 1 + 9 sum x_i / (n - 1) (Zitzler, Deb & Thiele 2000, Eq. 3-5).
double zdt_g(const std::vector<double>& x) {
  double sum = 0;
  for (std::size_t i = 1; i < x.size(); ++i) sum += x[i];
  return 1.0 + 9.0 * sum / static_cast<double>(x.size() - 1);
}

// ZDT1: f1 = x1, f2 = g (1 - sqrt(f1 / g)); convex front f2 = 1 - sqrt(f1) at g = 1.
std::vector<double> zdt1(const std::vector<double>& x) {
  const double g = zdt_g(x);
  return {x[0], g * (1.0 - std::sqrt(x[0] / g))};
}
// ZDT2: f2 = g (1 - (f1 / g)^2); concave front.
std::vector<double> zdt2(const std::vector<double>& x) {
  const double g = zdt_g(x);
  return {x[0], g * (1.0 - (x[0] / g) * (x[0] / g))};
}
// ZDT3: f2 = g (1 - sqrt(f1 / g) - (f1 / g) sin(10 pi f1)); a front of five disconnected pieces.
std::vector<double> zdt3(const std::vector<double>& x) {
  const double g = zdt_g(x);
  const double h = 1.0 - std::sqrt(x[0] / g) - (x[0] / g) * std::sin(10.0 * std::numbers::pi * x[0]);
  return {x[0], g * h};
}
// DTLZ2 with M = 3 objectives, k = 10: g = sum_{i >= M} (x_i - 1/2)^2 over the last k variables,
// f1 = (1 + g) cos(x1 pi/2) cos(x2 pi/2), f2 = (1 + g) cos(x1 pi/2) sin(x2 pi/2),
// f3 = (1 + g) sin(x1 pi/2) (Deb et al. 2002, "Scalable multi-objective optimization test
// problems", Sec. 6.2); the front is the unit sphere's positive octant.
std::vector<double> dtlz2(const std::vector<double>& x) {
  double g = 0;
  for (std::size_t i = 2; i < x.size(); ++i) g += (x[i] - 0.5) * (x[i] - 0.5);
  const double a = x[0] * std::numbers::pi / 2, b = x[1] * std::numbers::pi / 2;
  return {(1 + g) * std::cos(a) * std::cos(b), (1 + g) * std::cos(a) * std::sin(b), (1 + g) * std::sin(a)};
}

// References: ZDT's f1 <= 1 and f2 <= g <= 10, DTLZ2's f_i <= 1 + g <= 3.5.
const std::vector<Problem>& problems() {
  static const std::vector<Problem> all{{"zdt1", 30, 2, zdt1, {11, 11}},
                                        {"zdt2", 30, 2, zdt2, {11, 11}},
                                        {"zdt3", 30, 2, zdt3, {11, 11}},
                                        {"dtlz2", 12, 3, dtlz2, {4, 4, 4}}};
  return all;
}

const Problem& problem_named(const std::string& name) {
  for (const Problem& p : problems())
    if (p.name == name) return p;
  throw std::runtime_error(fmt::format("--problems: unknown problem '{}' (zdt1, zdt2, zdt3, dtlz2)", name));
}

// The hypervolume of the true front against the reference: DTLZ2's exactly (the box less the unit
// sphere's octant, pi/6); ZDT's from 2,000 points of the front (g = 1; slightly below the exact).
double front_hypervolume(const Problem& p) {
  if (p.name == "dtlz2") return std::pow(p.reference[0], 3) - std::numbers::pi / 6;
  std::vector<hpo::pareto::Losses> front;
  std::vector<double> x(static_cast<std::size_t>(p.variables), 0.0);
  for (int i = 0; i <= 2000; ++i) {
    x[0] = i / 2000.0;
    front.push_back(p.evaluate(x));
  }
  return hpo::pareto::hypervolume(front, p.reference);
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

// One study of `trials` trials, each row written as it ends.
void one_study(const Problem& p, hpo::SamplerKind kind, std::uint64_t seed, int trials, std::ostream& out) {
  const hpo::Space space = hpo::Space::parse(
      [&] {
        std::string text = "parameters:\n";
        for (int d = 1; d <= p.variables; ++d) text += fmt::format("  x{}: {{type: float, low: 0, high: 1}}\n", d);
        return text;
      }(),
      p.name);
  hpo::SamplerOptions options;
  options.seed = seed;
  options.directions.assign(static_cast<std::size_t>(p.objectives), hpo::Direction::kMinimize);
  std::unique_ptr<hpo::Sampler> sampler = hpo::make_sampler(kind, space, options);
  std::vector<hpo::TrialRecord> history;
  const Clock::time_point start = Clock::now();
  for (int n = 1; n <= trials; ++n) {
    const std::optional<hpo::Config> config = sampler->propose(history);
    if (!config) throw std::runtime_error(fmt::format("{} proposed nothing at trial {}", hpo::to_string(kind), n));
    std::vector<double> x;
    for (int d = 1; d <= p.variables; ++d) x.push_back(config->at(fmt::format("x{}", d)).get<double>());
    hpo::TrialRecord record;
    record.number = n;
    record.config = *config;
    record.state = hpo::TrialRecord::State::kCompleted;
    record.values = p.evaluate(x);
    record.value = record.values.front();
    const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
    out << fmt::format("{}\t{}\t{}\t{}\t{:.3f}", p.name, hpo::to_string(kind), seed, n, seconds);
    for (double v : record.values) out << fmt::format("\t{:.17g}", v);
    out << "\n";
    history.push_back(std::move(record));
  }
  out.flush();
}

}  // namespace multi_objective_bench
}  // namespace

int run_multi_objective(const std::vector<std::string>& args) {
  using namespace multi_objective_bench;
  int first = 0, last = 4, trials = 300;
  std::string out_path = "hpo_multi_objective.tsv";
  std::vector<std::string> names{"zdt1", "zdt2", "zdt3", "dtlz2"};
  std::vector<hpo::SamplerKind> samplers{hpo::SamplerKind::kNsga2, hpo::SamplerKind::kTpe, hpo::SamplerKind::kRandom};
  for (std::size_t i = 1; i + 1 < args.size(); i += 2) {
    if (args[i] == "--seeds") {
      const auto dash = args[i + 1].find('-');
      first = std::stoi(args[i + 1].substr(0, dash));
      last = std::stoi(args[i + 1].substr(dash + 1));
    } else if (args[i] == "--trials") {
      trials = std::stoi(args[i + 1]);
    } else if (args[i] == "--out") {
      out_path = args[i + 1];
    } else if (args[i] == "--problems") {
      names = split_commas(args[i + 1]);
    } else if (args[i] == "--samplers") {
      samplers.clear();
      for (const std::string& name : split_commas(args[i + 1])) samplers.push_back(hpo::parse_sampler(name));
    } else {
      throw std::runtime_error(fmt::format("bench_hpo multi: unknown flag '{}'", args[i]));
    }
  }
  std::ofstream out(out_path);
  out << "problem\tsampler\tseed\ttrial\tseconds\tvalues...\n";
  for (const std::string& name : names) {
    const Problem& p = problem_named(name);
    for (hpo::SamplerKind kind : samplers)
      for (int seed = first; seed <= last; ++seed) {
        const Clock::time_point start = Clock::now();
        one_study(p, kind, static_cast<std::uint64_t>(seed), trials, out);
        fmt::print(stderr, "{} {} seed {}: {} trials, {:.1f} s\n", p.name, hpo::to_string(kind), seed, trials,
                   std::chrono::duration<double>(Clock::now() - start).count());
      }
  }
  return 0;
}

int summarize_multi_objective(const std::vector<std::string>& files) {
  using namespace multi_objective_bench;
  // problem -> sampler -> seed -> each trial's values, in trial order; and the study's seconds.
  std::map<std::string, std::map<std::string, std::map<int, std::vector<hpo::pareto::Losses>>>> runs;
  std::map<std::string, std::map<std::string, std::map<int, double>>> seconds;
  for (const std::string& file : files) {
    std::ifstream in(file);
    if (!in) throw std::runtime_error(fmt::format("{}: cannot read it", file));
    std::string line;
    std::getline(in, line);  // header
    for (int row = 2; std::getline(in, line); ++row) {
      std::istringstream fields(line);
      std::string problem, sampler, seed, trial, secs;
      std::getline(fields, problem, '\t');
      std::getline(fields, sampler, '\t');
      std::getline(fields, seed, '\t');
      std::getline(fields, trial, '\t');
      std::getline(fields, secs, '\t');
      hpo::pareto::Losses values;
      for (std::string v; std::getline(fields, v, '\t');) values.push_back(std::stod(v));
      const Problem& p = problem_named(problem);
      if (static_cast<int>(values.size()) != p.objectives)
        throw std::runtime_error(fmt::format("{}:{}: {} values, {} has {} objectives", file, row, values.size(),
                                             problem, p.objectives));
      std::vector<hpo::pareto::Losses>& study = runs[problem][sampler][std::stoi(seed)];
      if (std::stoi(trial) != static_cast<int>(study.size()) + 1)
        throw std::runtime_error(fmt::format("{}:{}: trial {} out of order", file, row, trial));
      study.push_back(std::move(values));
      seconds[problem][sampler][std::stoi(seed)] = std::stod(secs);
    }
  }
  const std::vector<int> checkpoints{100, 300};
  std::string table = "| problem | reference | front's HV | sampler | seeds at 100 / 300 |";
  for (int c : checkpoints) table += fmt::format(" HV after {} | gap after {} |", c, c);
  table += " s per study |\n|---|---|---|---|---|";
  for (std::size_t i = 0; i < 2 * checkpoints.size() + 1; ++i) table += "---|";
  table += "\n";
  for (const Problem& p : problems()) {
    if (!runs.contains(p.name)) continue;
    const double ideal = front_hypervolume(p);
    std::string reference;
    for (double r : p.reference) reference += fmt::format("{}{:g}", reference.empty() ? "" : ", ", r);
    // paratune's, then Optuna's, then anything else in name order.
    std::vector<std::string> order{"nsga2", "tpe", "random", "optuna-nsga2", "optuna-motpe", "optuna-random"};
    for (const auto& [sampler, studies] : runs[p.name])
      if (std::find(order.begin(), order.end(), sampler) == order.end()) order.push_back(sampler);
    for (const std::string& sampler : order) {
      if (!runs[p.name].contains(sampler)) continue;
      const auto& studies = runs[p.name][sampler];
      // Seeds with at least each checkpoint's trials (a study stopped early counts only where it got).
      std::string seeds;
      for (int c : checkpoints)
        seeds += fmt::format("{}{}", seeds.empty() ? "" : " / ",
                             std::count_if(studies.begin(), studies.end(),
                                           [c](const auto& s) { return static_cast<int>(s.second.size()) >= c; }));
      table += fmt::format("| {} | ({}) | {:.4f} | {} | {} |", p.name, reference, ideal, sampler, seeds);
      for (int c : checkpoints) {
        std::vector<double> volumes, gaps;
        for (const auto& [seed, trials] : studies) {
          if (static_cast<int>(trials.size()) < c) continue;
          const double hv =
              hpo::pareto::hypervolume({trials.begin(), trials.begin() + static_cast<std::ptrdiff_t>(c)}, p.reference);
          volumes.push_back(hv);
          gaps.push_back(ideal - hv);
        }
        if (volumes.empty()) {
          table += " - | - |";
          continue;
        }
        table += fmt::format(" {:.3f} | {:.3f} [{:.3f}, {:.3f}] |", quantile(volumes, 0.5), quantile(gaps, 0.5),
                             quantile(gaps, 0.25), quantile(gaps, 0.75));
      }
      // Wall seconds of the studies that reached the last checkpoint.
      std::vector<double> secs;
      for (const auto& [seed, s] : seconds[p.name][sampler])
        if (static_cast<int>(studies.at(seed).size()) >= checkpoints.back()) secs.push_back(s);
      table += secs.empty() ? std::string(" - |\n") : fmt::format(" {:.1f} |\n", quantile(secs, 0.5));
    }
  }
  fmt::print("{}", table);
  fmt::print("\nHV: median over seeds of the hypervolume of the first N trials' objective vectors (all minimised) "
             "against the reference point (hpo/pareto.h, the same code for every row); gap: the true front's HV "
             "minus it, median [quartiles] over seeds, lower is better; s per study: median wall seconds of the studies that "
             "reached the last checkpoint, study start to its last trial's end.\n");
  // Every study's figures, for the record (the trial values themselves are too large to keep).
  fmt::print("\nper study (hypervolume after 100 and 300 trials; - where the study stopped before):\n\n```\n"
             "problem\tsampler\tseed\thv_100\thv_300\n");
  for (const auto& [problem, by_sampler] : runs)
    for (const auto& [sampler, studies] : by_sampler)
      for (const auto& [seed, trials] : studies) {
        std::string row = fmt::format("{}\t{}\t{}", problem, sampler, seed);
        for (int c : checkpoints)
          row += static_cast<int>(trials.size()) < c
                     ? std::string("\t-")
                     : fmt::format("\t{:.6f}", hpo::pareto::hypervolume(
                                                  {trials.begin(), trials.begin() + static_cast<std::ptrdiff_t>(c)},
                                                  problem_named(problem).reference));
        fmt::print("{}\n", row);
      }
  fmt::print("```\n");
  return 0;
}

}  // namespace paratune::bench
