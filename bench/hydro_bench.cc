// Hydro's surrogate tuning (issue 20, part 1) measured with the real trainer, paratune-train
// (docs/hydro.md). Every number is a real training run on this machine; two
// runs at a time, one thread each.
//
//   bench_hydro lr-width [--model gpt|cnn] [--steps N] [--out DIR]
//       The optimal learning rate against width under the standard parametrization (SP) and muP
//       (Hydro's slide "Scaling Effect"; Tensor Programs V Fig. 1): the model at 1/8, 1/4, 1/2 and
//       1x its base width, each trained at 7 learning rates a factor 2 apart, its final validation
//       loss. DIR/lr_width_MODEL.md (the table and each width's optimum) and .svg.
//
//   bench_hydro coord-check [--steps 4] [--out DIR]
//       mup's coordinate check as pictures: each layer's mean |output| after the last step against
//       width (1/16 .. 1 of the base), SP and muP, for the GPT (Adam) and the MLP (SGD).
//       DIR/coord_check_{gpt,mlp}.svg and .png, DIR/coord_check.md.
//
//   bench_hydro rank-transfer [--model gpt|cnn] [--configs 10] [--steps N] [--out DIR]
//       Ranking transfer: 10 configurations (learning rate, init scale, weight decay,
//       drawn by a fixed seed) trained at the base width and as surrogates 4x and 8x narrower,
//       under muP and under SP; Kendall's tau-b between the base's ranking by final validation loss
//       and each surrogate's. DIR/rank_transfer_MODEL.md.
//
//   bench_hydro fusion [--steps 40] [--out DIR]
//       Inter-trial fusion (issue 20, part 2): per-trial throughput of B = 1, 2, 4, 8, 16 GPT trials
//       fused in one process against B separate processes on the same cores, for the surrogate (S = 8)
//       and the target; peak memory of each. DIR/fusion.md.
//
//   bench_hydro end-to-end [--ratio 8] [--trials 24] [--seeds 0-1] [--steps 300] [--retrain-top K|auto]
//                          [--retrain-budget F] [--reuse DIR] [--only direct|surrogate] [--out DIR]
//                          [--surrogate-search "TUNE FLAGS"] [--surrogate-train "TRAINER FLAGS"]
//                          [--direct-search "TUNE FLAGS"] [--direct-train "TRAINER FLAGS"]
//       `paratune tune` with TPE over the GPT's learning rate, init scale and weight decay, the same
//       number of trials: on the target directly, and on the surrogate (--surrogate-ratio) with the
//       best transferred and retrained at the target's width (--retrain), or its top K retrained
//       there and the best of them chosen (--retrain-top). CPU time of each whole tuning (the
//       paratune process and every trial it ran: wait4's rusage), its wall time, and the target's
//       final validation loss; the median over the seeds. Each run is also written to
//       DIR/end-to-end/KIND-seedN.json (KIND direct or surrogate, with the commit); --reuse D takes
//       D/KIND-seedN.json where it exists instead of running that side again (so seeds run apart
//       can be reported together; --only runs one side and writes its JSON alone). DIR/end_to_end.md
//       (--retrain-top: DIR/end_to_end_topk.md). --surrogate-search adds `paratune tune` flags to the
//       surrogate's study (e.g. "--pruner asha --min-resource 100"), --surrogate-train trainer flags to
//       its command (e.g. "--eval-every 100", so the rungs see a validation loss); --direct-search and
//       --direct-train do the same for the direct study (the same search at the target: a fair
//       baseline for the surrogate's); all are printed.
//
//   bench_hydro tuning-fusion [--ratio 8] [--trials 24] [--seeds 0-2] [--steps 300] [--out DIR]
//       The whole tuning with and without inter-trial fusion: the end-to-end bench's surrogate study
//       (TPE, 2 slots, no retrain) run with --fuse 1 and with --fuse auto, the same seed; CPU and wall
//       time of each, the best surrogate val_loss it found, how many groups it fused, the probe's
//       choice. DIR/tuning_fusion.md.
//
//   bench_hydro bubbles [--repeats 3] [--steps 60] [--out DIR]
//       Trials packed into pipeline bubbles (issue 20, part 3): `paratune harvest --baseline` on a
//       2-rank GPipe pretraining job of the GPT (4 layers, d_model 256, 4 micro-batches) with fused
//       groups of 4 muP surrogates (S = 8) beside each rank, `repeats` times: the job's median step
//       time alone and with the trials, and the trials' member-steps per hour. DIR/bubbles.md and
//       DIR/bubble_timeline.svg/.png (the last repeat).
#include <fcntl.h>
#include <fmt/format.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>

#include <algorithm>
#include <cctype>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <optional>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "paratune/trial/command.h"
#include "svg_chart.h"

extern char** environ;

namespace {

namespace fs = std::filesystem;
using paratune::bench::line_chart_svg;
using paratune::bench::Panel;
using paratune::bench::Series;

// The two models of the issue at their base (target) widths, one thread per run.
struct ModelSetup {
  std::string name, args, lr_note;
  std::vector<double> lr_grid;  // the lr-width sweep's rates
  int steps = 200;
};

ModelSetup model_setup(const std::string& name) {
  std::vector<double> grid;
  if (name == "gpt") {
    // Byte-level Transformer (fortunes), AdamW as nanoGPT trains one (beta2 0.95, clipping 1, warm-up and
    // cosine decay: with beta2 0.999 and no clipping, 200-step runs spiked, their losses too noisy to rank):
    // muP's Adam rules.
    for (int k = 0; k <= 6; ++k) grid.push_back(1.25e-4 * std::pow(2.0, k));  // 1.25e-4 .. 8e-3
    return {"gpt",
            "--model gpt --layers 2 --d-model 256 --heads 4 --seq-len 64 --batch-size 16 --optimizer adamw "
            "--beta2 0.95 --clip-norm 1 --warmup-steps 20 --schedule cosine --eval-limit 512 --threads 1",
            "AdamW", grid, 200};
  }
  if (name == "cnn") {
    // ResNet-style CNN (Fashion-MNIST), SGD with momentum: muP's SGD rules.
    for (int k = 0; k <= 6; ++k) grid.push_back(0.003125 * std::pow(2.0, k));  // 0.003125 .. 0.2
    return {"cnn",
            "--model cnn --cnn-channels 32,64,128 --batch-size 32 --optimizer sgd --momentum 0.9 --schedule cosine "
            "--eval-limit 2000 --threads 1",
            "SGD, momentum 0.9", grid, 200};
  }
  throw std::runtime_error("--model: gpt or cnn, not " + name);
}

// One paratune-train run and what it ended with.
struct Run {
  std::string args;
  double val_loss = NAN;  // the last one reported; NAN when the run diverged or failed
  double train_tail = NAN;  // mean train loss over the last quarter of the steps (Tensor Programs V's Fig. 1)
  int exit_code = -1;
  double seconds = 0;
  std::string tail;  // the output's last lines, for a failure
};

void execute(Run& run) {
  const auto start = std::chrono::steady_clock::now();
  FILE* pipe = popen((std::string(PARATUNE_TRAIN_BINARY) + " " + run.args + " 2>&1").c_str(), "r");
  char line[4096];
  std::vector<std::string> lines;
  std::vector<double> train_losses;
  while (pipe && fgets(line, sizeof line, pipe)) {
    const std::string text = line;
    if (text.rfind("@paratune ", 0) == 0) {
      const nlohmann::json j = nlohmann::json::parse(text.substr(10), nullptr, false);
      if (j.is_discarded()) continue;
      if (j.value("metric", "") == "val_loss") run.val_loss = j["value"].get<double>();
      if (j.value("metric", "") == "train_loss") train_losses.push_back(j["value"].get<double>());
    } else {
      lines.push_back(text);
    }
  }
  const int status = pipe ? pclose(pipe) : -1;
  run.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  const std::size_t tail = std::max<std::size_t>(1, train_losses.size() / 4);
  if (train_losses.size() >= tail) {
    double sum = 0;
    for (std::size_t i = train_losses.size() - tail; i < train_losses.size(); ++i) sum += train_losses[i];
    run.train_tail = sum / static_cast<double>(tail);
  }
  if (run.exit_code != 0) run.val_loss = run.train_tail = NAN;  // 3: diverged (a non-finite loss stops the trainer)
  for (std::size_t i = lines.size() > 3 ? lines.size() - 3 : 0; i < lines.size(); ++i) run.tail += lines[i];
  run.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// Runs every job, `workers` at a time, printing each as it ends.
void run_all(std::vector<Run>& runs, int workers = 2) {
  std::atomic<std::size_t> next{0};
  std::mutex print;
  std::vector<std::thread> threads;
  for (int w = 0; w < workers; ++w)
    threads.emplace_back([&] {
      for (std::size_t i; (i = next++) < runs.size();) {
        execute(runs[i]);
        std::lock_guard lock(print);
        std::fprintf(stderr, "[%zu/%zu] %.1f s  val_loss %.4f  exit %d  %s\n", i + 1, runs.size(), runs[i].seconds,
                     runs[i].val_loss, runs[i].exit_code, runs[i].args.c_str());
        if (runs[i].exit_code != 0 && runs[i].exit_code != 3) std::fprintf(stderr, "%s", runs[i].tail.c_str());
      }
    });
  for (auto& t : threads) t.join();
  // Exit 2 is paratune-train refusing its options: the benchmark's mistake, not a result.
  for (const Run& r : runs)
    if (r.exit_code == 2) throw std::runtime_error("paratune-train refused its options: " + r.args + "\n" + r.tail);
}

// Kendall's tau-b of two score lists (ties in either count as neither concordant nor discordant,
// and shrink the denominator). A NAN score (a diverged run) ranks last, tied with other NANs.
double kendall_tau_b(const std::vector<double>& a, const std::vector<double>& b) {
  auto key = [](double v) { return std::isnan(v) ? INFINITY : v; };
  double concordant = 0, discordant = 0, ties_a = 0, ties_b = 0;
  for (std::size_t i = 0; i < a.size(); ++i)
    for (std::size_t j = i + 1; j < a.size(); ++j) {
      const double da = key(a[i]) == key(a[j]) ? 0 : key(a[i]) < key(a[j]) ? 1 : -1;
      const double db = key(b[i]) == key(b[j]) ? 0 : key(b[i]) < key(b[j]) ? 1 : -1;
      if (da == 0 && db == 0) continue;
      if (da == 0) ++ties_a;
      else if (db == 0) ++ties_b;
      else (da == db ? concordant : discordant) += 1;
    }
  const double denominator = std::sqrt((concordant + discordant + ties_a) * (concordant + discordant + ties_b));
  return denominator > 0 ? (concordant - discordant) / denominator : NAN;
}

void write(const fs::path& path, const std::string& text) {
  fs::create_directories(path.parent_path());
  std::ofstream(path) << text;
  std::fprintf(stderr, "wrote %s\n", path.c_str());
}

void to_png(const fs::path& svg) {
  const std::string command = fmt::format("rsvg-convert -o {} {} 2>/dev/null", paratune::trial::shell_quote(
                                              fs::path(svg).replace_extension(".png").string()),
                                          paratune::trial::shell_quote(svg.string()));
  if (std::system(command.c_str()) != 0) std::fprintf(stderr, "(no PNG: rsvg-convert is not installed)\n");
}

constexpr int kRatios[] = {8, 4, 2, 1};

int lr_width(const ModelSetup& m, int steps, const fs::path& out) {
  struct Cell {
    std::string parametrization;
    int ratio;
    double lr;
  };
  std::vector<Cell> cells;
  std::vector<Run> runs;
  for (const char* p : {"sp", "mup"})
    for (int s : kRatios)
      for (double lr : m.lr_grid) {
        // SP at the base width is muP at the base width, bit for bit (tested): run it once.
        if (std::string(p) == "mup" && s == 1) continue;
        cells.push_back({p, s, lr});
        runs.push_back({fmt::format("{} --steps {} --lr {} --parametrization {} --surrogate-ratio {}", m.args, steps,
                                    lr, p, s)});
      }
  run_all(runs);
  auto loss_of = [&](const std::string& p, int s, double lr) {
    for (std::size_t i = 0; i < cells.size(); ++i)
      if (cells[i].ratio == s && cells[i].lr == lr && (cells[i].parametrization == p || s == 1)) return runs[i].train_tail;
    return std::nan("");
  };
  std::string md = fmt::format(
      "# Optimal learning rate against width: {} ({}), {} steps\n\n"
      "Training loss (the mean over the last quarter of the steps, as Tensor Programs V's Figure 1; less noisy than "
      "one final evaluation) of `paratune-train {} --steps {}` at each learning rate and width (the base divided by "
      "S), under SP and under muP (base: S = 1, where the two are the same run). `-`: diverged. One run per cell "
      "(seed 0), this machine, one thread per run.\n\n",
      m.name, m.lr_note, steps, m.args, steps);
  std::vector<Panel> panels;
  for (const char* p : {"sp", "mup"}) {
    Panel panel{std::string(p) == "sp" ? "standard parametrization" : "muP", "learning rate",
                "training loss (last quarter)", true};
    panel.x_ticks = m.lr_grid;
    md += fmt::format("## {}\n\n| width (S) |", p);
    for (double lr : m.lr_grid) md += fmt::format(" lr {:g} |", lr);
    md += " best lr |\n|---|";
    for (std::size_t i = 0; i <= m.lr_grid.size(); ++i) md += "---|";
    md += "\n";
    for (int s : kRatios) {
      Series series{fmt::format("1/{} width", s)};
      if (s == 1) series.name = "base width";
      std::size_t best = 0;
      md += fmt::format("| 1/{} |", s);
      for (std::size_t k = 0; k < m.lr_grid.size(); ++k) {
        const double v = loss_of(p, s, m.lr_grid[k]);
        series.points.emplace_back(m.lr_grid[k], v);
        md += std::isnan(v) ? " - |" : fmt::format(" {:.4f} |", v);
        if (!std::isnan(v) && (std::isnan(series.points[best].second) || v < series.points[best].second)) best = k;
      }
      series.highlighted = {best};
      md += fmt::format(" **{:g}** |\n", m.lr_grid[best]);
      panel.series.push_back(series);
    }
    md += "\n";
    panels.push_back(panel);
  }
  // A shared y range: the best losses and a bit above, so diverging rates do not squash the curves.
  double low = INFINITY;
  for (const Run& r : runs)
    if (!std::isnan(r.train_tail)) low = std::min(low, r.train_tail);
  for (Panel& p : panels) p.y_low = low - 0.05, p.y_high = low + (m.name == "gpt" ? 1.0 : 0.6);
  const fs::path svg = out / fmt::format("lr_width_{}.svg", m.name);
  write(svg, line_chart_svg(fmt::format("{} ({}): training loss vs learning rate at 4 widths ({} steps)", m.name, m.lr_note, steps),
                            panels, "circled: each width's best rate; off the top: diverged or worse"));
  to_png(svg);
  write(out / fmt::format("lr_width_{}.md", m.name), md);
  return 0;
}

int rank_transfer(const ModelSetup& m, int configs, int steps, const fs::path& out) {
  std::mt19937_64 rng(20);
  auto log_uniform = [&](double low, double high) {
    return std::exp(std::uniform_real_distribution<double>(std::log(low), std::log(high))(rng));
  };
  std::vector<std::string> config_args;
  for (int c = 0; c < configs; ++c) {
    if (m.name == "gpt")
      config_args.push_back(fmt::format("--lr {:.3g} --init-scale {:.3g} --weight-decay {:.3g}", log_uniform(1e-4, 1e-2),
                                        log_uniform(0.5, 2), log_uniform(1e-4, 0.3)));
    else
      config_args.push_back(fmt::format("--lr {:.3g} --init-scale {:.3g} --weight-decay {:.3g}", log_uniform(0.003, 0.2),
                                        log_uniform(0.5, 2), log_uniform(1e-5, 1e-2)));
  }
  const std::vector<std::pair<std::string, int>> settings{{"sp", 1}, {"mup", 4}, {"mup", 8}, {"sp", 4}, {"sp", 8}};
  std::vector<Run> runs;
  for (const auto& [p, s] : settings)
    for (const std::string& c : config_args)
      runs.push_back({fmt::format("{} --steps {} {} --parametrization {} --surrogate-ratio {}", m.args, steps, c, p, s)});
  run_all(runs);
  auto losses = [&](std::size_t setting) {
    std::vector<double> v;
    for (int c = 0; c < configs; ++c) v.push_back(runs[setting * configs + c].val_loss);
    return v;
  };
  std::string md = fmt::format(
      "# Ranking transfer: {} ({}), {} configurations, {} steps\n\n"
      "Each configuration trained at the base width (S = 1) and as surrogates S = 4 and 8 times narrower, under "
      "muP and under SP; final validation loss (`-`: diverged, ranked last). One run each (seed 0).\n\n"
      "| configuration | S=1 | muP S=4 | muP S=8 | SP S=4 | SP S=8 |\n|---|---|---|---|---|---|\n",
      m.name, m.lr_note, configs, steps);
  for (int c = 0; c < configs; ++c) {
    md += fmt::format("| `{}` |", config_args[c]);
    for (std::size_t s = 0; s < settings.size(); ++s) {
      const double v = runs[s * configs + c].val_loss;
      md += std::isnan(v) ? " - |" : fmt::format(" {:.4f} |", v);
    }
    md += "\n";
  }
  md += "\nKendall's tau-b with the base's ranking (1: the same order; 0: unrelated):\n\n| | S=4 | S=8 |\n|---|---|---|\n";
  md += fmt::format("| muP | {:.3f} | {:.3f} |\n", kendall_tau_b(losses(0), losses(1)), kendall_tau_b(losses(0), losses(2)));
  md += fmt::format("| SP | {:.3f} | {:.3f} |\n", kendall_tau_b(losses(0), losses(3)), kendall_tau_b(losses(0), losses(4)));
  // Does the surrogate's best configuration do well at the base width?
  auto best_of = [](const std::vector<double>& v) {
    std::size_t b = 0;
    for (std::size_t i = 0; i < v.size(); ++i)
      if (!std::isnan(v[i]) && (std::isnan(v[b]) || v[i] < v[b])) b = i;
    return b;
  };
  const std::vector<double> base = losses(0);
  md += fmt::format("\nThe base's best configuration: #{} (loss {:.4f}). Each surrogate's best, trained at the base:\n\n",
                    best_of(base) + 1, base[best_of(base)]);
  for (std::size_t s = 1; s < settings.size(); ++s) {
    const std::size_t b = best_of(losses(s));
    md += fmt::format("- {} S={}: #{}, base loss {:.4f} ({:+.2f}% against the base's best)\n", settings[s].first,
                      settings[s].second, b + 1, base[b], 100 * (base[b] / base[best_of(base)] - 1));
  }
  write(out / fmt::format("rank_transfer_{}.md", m.name), md);
  return 0;
}

// `paratune tune ...` as a child: its JSON output, wall time and CPU time (its own and every trial's:
// the trials are its children, waited for, so wait4's rusage counts them).
struct TuneRun {
  nlohmann::json result;
  double wall_s = 0, cpu_s = 0;
  int exit_code = -1;
};

TuneRun run_tune(const std::vector<std::string>& argv, const fs::path& log) {
  TuneRun t;
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  const fs::path json = fs::path(log).replace_extension(".json");
  posix_spawn_file_actions_addopen(&actions, 1, json.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addopen(&actions, 2, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  const auto start = std::chrono::steady_clock::now();
  pid_t pid = 0;
  if (posix_spawn(&pid, args[0], &actions, nullptr, args.data(), environ) != 0) throw std::runtime_error("spawn failed");
  posix_spawn_file_actions_destroy(&actions);
  int status = 0;
  rusage usage{};
  wait4(pid, &status, 0, &usage);
  t.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  t.cpu_s = usage.ru_utime.tv_sec + usage.ru_utime.tv_usec * 1e-6 + usage.ru_stime.tv_sec + usage.ru_stime.tv_usec * 1e-6;
  t.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  std::ifstream in(json);
  t.result = nlohmann::json::parse(in, nullptr, false);
  return t;
}

// One side of one seed (a `paratune tune` run): its CPU and wall time and --json result, with where
// it ran. The bench writes each run it makes to DIR/end-to-end/KIND-seedN.json; --reuse D takes
// D/KIND-seedN.json instead of running that side again (the direct runs cost ~1,070 CPU s each).
struct SideRun {
  double cpu_s = 0, wall_s = 0;
  nlohmann::json result, source;
};

std::optional<SideRun> reused_run(const fs::path& file) {
  if (file.empty() || !fs::exists(file)) return std::nullopt;
  std::ifstream in(file);
  const nlohmann::json j = nlohmann::json::parse(in, nullptr, false);
  if (j.is_discarded() || !j.contains("cpu_s") || !j.contains("wall_s") || !j.contains("result"))
    throw std::runtime_error(file.string() + ": needs cpu_s, wall_s and result (paratune tune --json)");
  return SideRun{j["cpu_s"].get<double>(), j["wall_s"].get<double>(), j["result"], j.value("source", nlohmann::json(nullptr))};
}

std::string git_commit() {
  std::string out;
  if (FILE* p = popen("git rev-parse --short HEAD 2>/dev/null", "r")) {
    char buffer[64];
    while (std::fgets(buffer, sizeof buffer, p)) out += buffer;
    pclose(p);
  }
  while (!out.empty() && std::isspace(static_cast<unsigned char>(out.back()))) out.pop_back();
  return out.empty() ? "unknown" : out;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

struct EndToEnd {
  double ratio = 8;
  int trials = 24, first_seed = 0, last_seed = 1, steps = 300;
  std::string retrain_top = "1";    // --retrain-top of the surrogate study (1: --retrain)
  std::string retrain_budget;       // --retrain-budget (auto only; empty: paratune's default)
  fs::path reuse;                   // take DIR/KIND-seedN.json where it exists; empty: run every side
  std::string only;                 // "direct" or "surrogate": run that side only, write its JSON, no table
  std::string surrogate_search;     // extra `paratune tune` flags of the surrogate study (space-separated)
  std::string surrogate_train;      // extra paratune-train flags of the surrogate study's command
  std::string direct_search;        // the same two for the direct study
  std::string direct_train;
  fs::path out;
};

int end_to_end(const EndToEnd& e) {
  const ModelSetup m = model_setup("gpt");
  fs::create_directories(e.out / "end-to-end");
  const fs::path space = e.out / "end-to-end" / "space.yaml";
  std::ofstream(space) << "parameters:\n"
                          "  lr: {type: float, low: 3.0e-5, high: 3.0e-2, log: true}\n"
                          "  init_scale: {type: float, low: 0.25, high: 4.0, log: true}\n"
                          "  weight_decay: {type: float, low: 1.0e-4, high: 0.3, log: true}\n";
  const bool top = e.retrain_top != "1";
  const std::string retrain_flags =
      top ? fmt::format("--retrain-top {}{}", e.retrain_top,
                        e.retrain_budget.empty() ? "" : " --retrain-budget " + e.retrain_budget)
          : "--retrain";
  std::string md = fmt::format(
      "# End to end: tuning the GPT on a {:g}x narrower muP surrogate vs tuning it directly\n\n"
      "`paratune tune --algo tpe --max-trials {} --steps {} --slots 2` over lr, init_scale and weight_decay "
      "(log-uniform) of `paratune-train {}`, objective val_loss; the surrogate run adds `--surrogate-ratio {:g} "
      "{}` ({}).{} CPU time: the paratune process and every trial it ran (wait4). Same TPE seed for both.\n\n"
      "| seed | direct: CPU s | wall s | target val_loss | surrogate: CPU s | wall s | retrained | target val_loss "
      "(chosen) | CPU saving | loss difference |\n|---|---|---|---|---|---|---|---|---|---|\n",
      e.ratio, e.trials, e.steps, m.args, e.ratio, retrain_flags,
      top ? "the search's best distinct configurations trained at the target's width, the best of them there chosen: "
            "its final validation loss is the surrogate tuning's result"
          : "the best configuration transferred and trained at the target's width: its final validation loss is the "
            "surrogate tuning's result",
      (e.surrogate_search.empty() && e.surrogate_train.empty()
           ? std::string()
           : fmt::format(" The surrogate study adds `{}` and its trials `{}`.", e.surrogate_search, e.surrogate_train)) +
          (e.direct_search.empty() && e.direct_train.empty()
               ? std::string()
               : fmt::format(" The direct study adds `{}` and its trials `{}`.", e.direct_search, e.direct_train)));
  std::vector<double> savings, differences;
  std::string sources;
  const std::string commit = git_commit();
  for (int seed = e.first_seed; seed <= e.last_seed; ++seed) {
    std::map<std::string, SideRun> by_kind;
    for (const std::string kind : {"direct", "surrogate"}) {
      if (!e.only.empty() && kind != e.only) continue;
      const std::string file = fmt::format("{}-seed{}.json", kind, seed);
      if (std::optional<SideRun> reused = reused_run(e.reuse.empty() ? fs::path() : e.reuse / file)) {
        by_kind[kind] = *reused;
        sources += fmt::format("- seed {} {}: `{}`, {}\n", seed, kind, (e.reuse / file).string(), reused->source.dump());
        continue;
      }
      const fs::path dir = e.out / "end-to-end" / fmt::format("{}-seed{}", kind, seed);
      fs::remove_all(dir);
      fs::create_directories(dir);
      std::vector<std::string> argv{PARATUNE_BINARY, "tune", "--space", space.string(), "--study",
                                    (dir / "study.db").string(), "--trials-dir", (dir / "trials").string(),
                                    "--algo", "tpe", "--seed", std::to_string(seed), "--max-trials",
                                    std::to_string(e.trials), "--steps", std::to_string(e.steps), "--slots", "2",
                                    "--objective", "val_loss", "--direction", "minimize", "--json", "--command",
                                    std::string(PARATUNE_TRAIN_BINARY) + " " + m.args + " --steps {steps}"};
      const std::string& train_flags = kind == "surrogate" ? e.surrogate_train : e.direct_train;
      if (!train_flags.empty()) argv.back() += " " + train_flags;
      std::istringstream extra(kind == "surrogate" ? e.surrogate_search : e.direct_search);
      for (std::string word; extra >> word;) argv.push_back(word);
      if (kind == "surrogate") {
        argv.insert(argv.end(), {"--surrogate-ratio", fmt::format("{:g}", e.ratio)});
        if (top) {
          argv.insert(argv.end(), {"--retrain-top", e.retrain_top});
          if (!e.retrain_budget.empty()) argv.insert(argv.end(), {"--retrain-budget", e.retrain_budget});
        } else {
          argv.push_back("--retrain");
        }
      }
      std::fprintf(stderr, "%s seed %d ...\n", kind.c_str(), seed);
      const TuneRun t = run_tune(argv, dir / "tune.log");
      std::fprintf(stderr, "  exit %d, %.0f s wall, %.0f s CPU\n", t.exit_code, t.wall_s, t.cpu_s);
      if (t.exit_code != 0 || t.result.is_discarded()) {
        std::fprintf(stderr, "paratune tune failed: see %s\n", (dir / "tune.log").c_str());
        return 1;
      }
      by_kind[kind] = {t.cpu_s, t.wall_s, t.result, {{"commit", commit}, {"by", "bench_hydro end-to-end"}}};
      std::ofstream(e.out / "end-to-end" / file)
          << nlohmann::json{{"seed", seed}, {"cpu_s", t.cpu_s}, {"wall_s", t.wall_s}, {"source", by_kind[kind].source},
                            {"result", t.result}}
                 .dump(1)
          << "\n";
    }
    if (!e.only.empty()) continue;
    const SideRun& direct = by_kind["direct"];
    const SideRun& surrogate = by_kind["surrogate"];
    const double direct_loss = direct.result["best"]["objective"].get<double>();
    const double surrogate_loss = surrogate.result["retrain"]["final_metrics"]["val_loss"].get<double>();
    const std::size_t retrained =
        surrogate.result.contains("reevaluation") ? surrogate.result["reevaluation"]["runs"].size() : 1;
    savings.push_back(direct.cpu_s / surrogate.cpu_s);
    differences.push_back(100 * (surrogate_loss / direct_loss - 1));
    md += fmt::format("| {} | {:.0f} | {:.0f} | {:.4f} | {:.0f} | {:.0f} | {} | {:.4f} | {:.1f}x | {:+.2f}% |\n", seed,
                      direct.cpu_s, direct.wall_s, direct_loss, surrogate.cpu_s, surrogate.wall_s, retrained,
                      surrogate_loss, savings.back(), differences.back());
    md += fmt::format("|  | best: `{}` | | | chosen: `{}` (trial {}) | | | | | |\n",
                      direct.result["best"]["params"].dump(), surrogate.result["retrain"]["trial"]["params"].dump(),
                      surrogate.result["retrain"].value("of_trial", 0));
    if (surrogate.result.contains("reevaluation")) {
      std::string runs;
      for (const auto& r : surrogate.result["reevaluation"]["runs"])
        runs += fmt::format("{}trial {}: {} -> {}", runs.empty() ? "" : "; ", r["of_trial"].get<int>(),
                            r["search_objective"].is_number() ? fmt::format("{:.4f}", r["search_objective"].get<double>()) : "-",
                            r["objective"].is_number() ? fmt::format("{:.4f}", r["objective"].get<double>())
                                                       : r["trial"]["status"].get<std::string>());
      md += fmt::format("|  | | | | retrained (surrogate -> target val_loss): {}; {} | | | | | |\n", runs,
                        surrogate.result["reevaluation"]["rule"].get<std::string>());
    }
  }
  if (!e.only.empty()) return 0;
  md += fmt::format("\nMedian over {} seeds: {:.1f}x less CPU time, target validation loss {:+.2f}% against direct "
                    "tuning (goal: >= 5x, <= +1%). Table written on commit {}; the runs it made are in "
                    "KIND-seedN.json with theirs, the reused ones below.\n",
                    savings.size(), median(savings), median(differences), commit);
  if (!sources.empty()) md += "\nRuns reused (`--reuse`; the commit each ran on):\n\n" + sources;
  write(e.out / (top ? "end_to_end_topk.md" : "end_to_end.md"), md);
  return 0;
}



// mup's coordinate check as a picture: each unit's mean |output| after `steps` steps against width,
// under SP and muP, for the GPT (AdamW) and the MLP (SGD).
int coord_check(int steps, const fs::path& out) {
  struct Setup {
    std::string name, args;
  };
  const std::vector<Setup> setups{
      {"GPT, AdamW lr 3e-3", "--model gpt --layers 2 --d-model 256 --heads 4 --seq-len 64 --batch-size 16 "
                             "--optimizer adam --lr 0.003 --threads 2"},
      {"MLP, SGD lr 0.05", "--model mlp --mlp-hidden 1024,1024 --batch-size 64 --optimizer sgd --lr 0.05 --threads 2"}};
  const std::vector<int> ratios{16, 8, 4, 2, 1};
  std::vector<Panel> panels;
  std::string md = fmt::format("# Coordinate check ({} steps)\n\nmean |output| of each layer after step {} (mup's "
                               "coordinate check), widths 1/16 .. 1 of the base.\n\n",
                               steps, steps - 1);
  for (const Setup& setup : setups)
    for (const char* p : {"sp", "mup"}) {
      Panel panel{fmt::format("{}: {}", setup.name, std::string(p) == "sp" ? "SP" : "muP"), "width (of the base)",
                  "mean |output|", true, true};
      std::map<std::string, Series> by_unit;
      std::vector<std::string> order;
      md += fmt::format("## {} {}\n\n| layer |", setup.name, p);
      for (int s : ratios) md += fmt::format(" 1/{} |", s);
      md += "\n|---|";
      for (std::size_t i = 0; i < ratios.size(); ++i) md += "---|";
      md += "\n";
      std::map<std::string, std::vector<double>> rows;
      for (int s : ratios) {
        const std::string command = fmt::format("{} {} --coord-check --steps {} --parametrization {} --surrogate-ratio {} 2>&1",
                                                PARATUNE_TRAIN_BINARY, setup.args, steps, p, s);
        FILE* pipe = popen(command.c_str(), "r");
        char line[4096];
        while (pipe && fgets(line, sizeof line, pipe)) {
          const std::string text = line;
          if (text.rfind("@coord ", 0) != 0) continue;
          const nlohmann::json j = nlohmann::json::parse(text.substr(7));
          if (j["step"].get<int>() != steps - 1) continue;
          const std::string unit = fmt::format("layer {}", j["unit"].get<int>());
          if (!by_unit.count(unit)) order.push_back(unit), by_unit[unit].name = unit;
          by_unit[unit].points.emplace_back(1.0 / s, j["l1"].get<double>());
          rows[unit].push_back(j["l1"].get<double>());
        }
        if (pipe) pclose(pipe);
      }
      for (const std::string& unit : order) {
        panel.series.push_back(by_unit[unit]);
        md += "| " + unit + " |";
        for (double v : rows[unit]) md += fmt::format(" {:.3g} |", v);
        md += "\n";
      }
      md += "\n";
      panel.x_ticks = {1.0 / 16, 1.0 / 8, 1.0 / 4, 1.0 / 2, 1};
      panels.push_back(panel);
    }
  // Two pictures of two panels: GPT, then MLP.
  for (std::size_t k = 0; k < 2; ++k) {
    const fs::path svg = out / fmt::format("coord_check_{}.svg", k == 0 ? "gpt" : "mlp");
    write(svg, line_chart_svg(fmt::format("Coordinate check: each layer's mean |output| after {} steps vs width", steps),
                              {panels[2 * k], panels[2 * k + 1]}, "flat lines: the layer's scale does not depend on width"));
    to_png(svg);
  }
  write(out / "coord_check.md", md);
  return 0;
}

// One process of paratune-train (PARATUNE_PARAMS `params`, "" = none) to its end: wall seconds,
// the median step time after the first 5 steps, and peak RSS (the protocol's peak_memory_bytes).
struct Timed {
  double wall_s = 0, median_step_s = 0, peak_bytes = 0;
  int exit_code = -1;
};

Timed timed_run(const std::string& args, const std::string& params) {
  Timed t;
  const auto start = std::chrono::steady_clock::now();
  const std::string command = (params.empty() ? "" : "PARATUNE_PARAMS=" + paratune::trial::shell_quote(params) + " ") +
                              PARATUNE_TRAIN_BINARY + " " + args + " 2>&1";
  FILE* pipe = popen(command.c_str(), "r");
  char line[4096];
  std::vector<double> steps;
  while (pipe && fgets(line, sizeof line, pipe)) {
    const std::string text = line;
    if (text.rfind("@paratune ", 0) != 0) continue;
    const nlohmann::json j = nlohmann::json::parse(text.substr(10), nullptr, false);
    if (j.is_discarded()) continue;
    if (j.contains("step_time_s")) steps.push_back(j["step_time_s"].get<double>());
    if (j.contains("peak_memory_bytes")) t.peak_bytes = std::max(t.peak_bytes, j["peak_memory_bytes"].get<double>());
  }
  const int status = pipe ? pclose(pipe) : -1;
  t.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  t.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (steps.size() > 5) steps.erase(steps.begin(), steps.begin() + 5);
  std::sort(steps.begin(), steps.end());
  t.median_step_s = steps.empty() ? NAN : steps[steps.size() / 2];
  return t;
}

// B trials (learning rates 1e-3 x 1.1^b) as one fused process with 2 threads, or as B processes of
// one thread each on the same 2 cores at once.
int fusion(int steps, const fs::path& out) {
  const ModelSetup m = model_setup("gpt");
  std::string args = m.args;
  args.replace(args.find("--threads 1"), 11, "--threads {}");
  std::string md = fmt::format(
      "# Inter-trial fusion: per-trial throughput against the group size B\n\n"
      "B trials of `paratune-train {}` (AdamW; trial b's lr = 1e-3 x 1.1^b), {} steps each: **fused** = one "
      "process training them as one fused model (`PARATUNE_PARAMS='[{{...}}, ...]'`, 2 threads); **separate** = B "
      "processes at once, one thread each, on the same 2 cores. Trial-steps/s = B x steps / wall time of the whole "
      "run (start-up and final evaluation included); steady = B / the median step time after 5 steps (fused only: "
      "the separate processes' steps overlap). Peak memory: fused, the process; separate, the sum of the processes' "
      "peaks. One run per cell, this machine (2 cores).\n\n",
      m.args, steps);
  for (const auto& [label, ratio] : std::vector<std::pair<std::string, int>>{{"surrogate (S = 8, d_model 32)", 8},
                                                                               {"target (d_model 256)", 1}}) {
    md += fmt::format("## {}\n\n| B | fused: trial-steps/s | steady | peak MiB | separate: trial-steps/s | peak MiB "
                      "(sum) | fused / separate |\n|---|---|---|---|---|---|---|\n",
                      label);
    for (int b : {1, 2, 4, 8, 16}) {
      const std::string common = fmt::format(fmt::runtime(args), 2) +
                                 fmt::format(" --steps {} --surrogate-ratio {} --parametrization mup", steps, ratio);
      std::string group = "[";
      for (int k = 0; k < b; ++k) group += fmt::format("{}{{\"lr\": {:.6g}}}", k ? "," : "", 1e-3 * std::pow(1.1, k));
      group += "]";
      // B = 1 is a plain trial (a fused group has at least 2 members).
      const Timed fused = b == 1 ? timed_run(common + " --lr 0.001", "") : timed_run(common, group);
      // Separate: B processes of one thread each, started together.
      const auto start = std::chrono::steady_clock::now();
      std::vector<std::thread> threads;
      std::vector<Timed> separate(static_cast<std::size_t>(b));
      for (int k = 0; k < b; ++k)
        threads.emplace_back([&, k] {
          separate[static_cast<std::size_t>(k)] =
              timed_run(fmt::format(fmt::runtime(args), 1) +
                            fmt::format(" --steps {} --surrogate-ratio {} --parametrization mup --lr {:.6g}", steps,
                                        ratio, 1e-3 * std::pow(1.1, k)),
                        "");
        });
      for (auto& t : threads) t.join();
      const double separate_wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      double separate_peak = 0;
      for (const Timed& t : separate) separate_peak += t.peak_bytes;
      const double fused_rate = b * steps / fused.wall_s, separate_rate = b * steps / separate_wall;
      md += fmt::format("| {} | {:.1f} | {:.1f} | {:.0f} | {:.1f} | {:.0f} | {:.2f}x |\n", b, fused_rate,
                        b / fused.median_step_s, fused.peak_bytes / (1 << 20), separate_rate, separate_peak / (1 << 20),
                        fused_rate / separate_rate);
      std::fprintf(stderr, "%s B=%d: fused %.1f trial-steps/s (exit %d), separate %.1f\n", label.c_str(), b, fused_rate,
                   fused.exit_code, separate_rate);
    }
    md += "\n";
  }
  write(out / "fusion.md", md);
  return 0;
}

}  // namespace
int tuning_fusion(double ratio, int trials, int first_seed, int last_seed, int steps, const fs::path& out) {
  const ModelSetup m = model_setup("gpt");
  fs::create_directories(out / "tuning-fusion");
  const fs::path space = out / "tuning-fusion" / "space.yaml";
  std::ofstream(space) << "parameters:\n"
                          "  lr: {type: float, low: 3.0e-5, high: 3.0e-2, log: true}\n"
                          "  init_scale: {type: float, low: 0.25, high: 4.0, log: true}\n"
                          "  weight_decay: {type: float, low: 1.0e-4, high: 0.3, log: true}\n";
  std::string md = fmt::format(
      "# The whole tuning with and without inter-trial fusion\n\n"
      "`paratune tune --algo tpe --max-trials {} --steps {} --slots 2 --surrogate-ratio {:g}` over lr, init_scale "
      "and weight_decay of `paratune-train {}`, objective val_loss, with `--fuse 1` (every trial its own process) "
      "and `--fuse auto` (the probe's B per process); same TPE seed. CPU time: the paratune process and every "
      "process it ran, the probe's included (wait4).\n\n"
      "| seed | alone: wall s | CPU s | best val_loss | fused: wall s | CPU s | best val_loss | groups (trials) | "
      "probe's B | wall saving | CPU saving |\n|---|---|---|---|---|---|---|---|---|---|---|\n",
      trials, steps, ratio, m.args);
  std::vector<double> wall_savings, cpu_savings;
  for (int seed = first_seed; seed <= last_seed; ++seed) {
    std::map<std::string, TuneRun> by_kind;
    for (const std::string kind : {"alone", "fused"}) {
      const fs::path dir = out / "tuning-fusion" / fmt::format("{}-seed{}", kind, seed);
      fs::remove_all(dir);
      fs::create_directories(dir);
      const std::vector<std::string> argv{
          PARATUNE_BINARY, "tune", "--space", space.string(), "--study", (dir / "study.db").string(), "--trials-dir",
          (dir / "trials").string(), "--algo", "tpe", "--seed", std::to_string(seed), "--max-trials",
          std::to_string(trials), "--steps", std::to_string(steps), "--slots", "2", "--objective", "val_loss",
          "--direction", "minimize", "--surrogate-ratio", fmt::format("{:g}", ratio), "--fuse",
          kind == "fused" ? "auto" : "1", "--json", "--command",
          std::string(PARATUNE_TRAIN_BINARY) + " " + m.args + " --steps {steps}"};
      std::fprintf(stderr, "%s seed %d ...\n", kind.c_str(), seed);
      by_kind[kind] = run_tune(argv, dir / "tune.log");
      const TuneRun& t = by_kind[kind];
      std::fprintf(stderr, "  exit %d, %.0f s wall, %.0f s CPU\n", t.exit_code, t.wall_s, t.cpu_s);
      if (t.exit_code != 0 || t.result.is_discarded()) {
        std::fprintf(stderr, "paratune tune failed: see %s\n", (dir / "tune.log").c_str());
        return 1;
      }
    }
    const TuneRun& alone = by_kind["alone"];
    const TuneRun& fused = by_kind["fused"];
    wall_savings.push_back(alone.wall_s / fused.wall_s);
    cpu_savings.push_back(alone.cpu_s / fused.cpu_s);
    const nlohmann::json& probe = fused.result["fusion_probe"];
    md += fmt::format("| {} | {:.0f} | {:.0f} | {:.4f} | {:.0f} | {:.0f} | {:.4f} | {} ({}) | {} | {:.2f}x | {:.2f}x |\n",
                      seed, alone.wall_s, alone.cpu_s, alone.result["best"]["objective"].get<double>(), fused.wall_s,
                      fused.cpu_s, fused.result["best"]["objective"].get<double>(), fused.result["fused_groups"].get<int>(),
                      fused.result["fused_trials"].get<int>(), probe.is_object() ? probe["chosen"].get<int>() : 1,
                      wall_savings.back(), cpu_savings.back());
    if (probe.is_object()) {
      md += fmt::format("|  | probe: ");
      for (const auto& r : probe["runs"])
        md += fmt::format("B={} {:.2f} trial-steps/s; ", r["size"].get<int>(), r["trial_steps_per_s"].get<double>());
      md += probe["reason"].get<std::string>() + " | | | | | | | | | |\n";
    }
  }
  double wall = 0, cpu = 0;
  for (double s : wall_savings) wall += s / wall_savings.size();
  for (double s : cpu_savings) cpu += s / cpu_savings.size();
  md += fmt::format("\nMean over {} seeds: fusion takes {:.2f}x less wall time and {:.2f}x less CPU time.\n",
                    wall_savings.size(), wall, cpu);
  write(out / "tuning_fusion.md", md);
  return 0;
}

int bubbles(int repeats, int steps, const fs::path& out) {
  const fs::path dir = out / "bubbles";
  fs::create_directories(dir);
  {
    std::ofstream params(dir / "params.jsonl");
    std::mt19937 rng(0);
    std::uniform_real_distribution<double> log_lr(-4, -2);
    for (int g = 0; g < 16; ++g) {
      nlohmann::json group = nlohmann::json::array();
      for (int b = 0; b < 4; ++b)
        group.push_back({{"lr", std::pow(10.0, log_lr(rng))}, {"surrogate_ratio", 8}, {"parametrization", "mup"}});
      params << group.dump() << "\n";
    }
  }
  const std::string job = fmt::format("{} --model gpt --layers 4 --d-model 256 --heads 4 --seq-len 64 --batch-size 16 "
                                      "--ranks 2 --strategy gpipe --micro-batches 4 --steps {} --eval-limit 256 --threads 1",
                                      PARATUNE_TRAIN_BINARY, steps);
  const std::string trial = fmt::format("{} --model gpt --layers 2 --d-model 256 --heads 4 --seq-len 64 --batch-size 16 "
                                        "--optimizer adamw --beta2 0.95 --clip-norm 1 --eval-limit 256 --steps 300 --threads 1",
                                        PARATUNE_TRAIN_BINARY);
  std::string md = fmt::format(
      "# Tuning trials in a pipeline job's bubbles (Hydro's Coordinator, for real)\n\n"
      "`paratune harvest --baseline --ranks 2`: the job `{}` alone, then with a trial slot beside each rank running fused "
      "groups of 4 muP surrogates (S = 8) of `{}`, paused (SIGSTOP) while its rank computes and resumed (SIGCONT) while it "
      "waits for its peer. Median job step over steps 2..{} (the job's own step times); trial work in member-steps "
      "(fused steps x 4) per hour of the job. This 2-core machine, one rank and one trial slot per core.\n\n"
      "| repeat | job alone: median step | bubbles rank 0 / 1 | with trials: median step | slowdown | trial member-steps/hour |\n"
      "|---|---|---|---|---|---|\n",
      job, trial, steps - 1);
  std::vector<double> slowdowns, rates;
  for (int r = 0; r < repeats; ++r) {
    const std::vector<std::string> argv{PARATUNE_BINARY, "harvest", "--ranks", "2", "--baseline", "--out",
                                        (dir / "run").string(), "--trial-params", (dir / "params.jsonl").string(),
                                        "--trial", trial, "--job", job, "--svg", (out / "bubble_timeline.svg").string(),
                                        "--json"};
    std::fprintf(stderr, "repeat %d ...\n", r + 1);
    const TuneRun t = run_tune(argv, dir / "harvest.log");
    if (t.exit_code != 0 || t.result.is_discarded()) {
      std::fprintf(stderr, "paratune harvest failed: see %s\n", (dir / "harvest.log").c_str());
      return 1;
    }
    const nlohmann::json& base = t.result["baseline"];
    const nlohmann::json& with = t.result["harvest"];
    slowdowns.push_back(t.result["slowdown"].get<double>());
    rates.push_back(with["trial_member_steps_per_hour"].get<double>());
    md += fmt::format("| {} | {:.1f} ms | {:.1f}% / {:.1f}% | {:.1f} ms | {:+.2f}% | {:.0f} |\n", r + 1,
                      1e3 * base["median_step_time_s"].get<double>(), 100 * base["bubble_fractions"][0].get<double>(),
                      100 * base["bubble_fractions"][1].get<double>(), 1e3 * with["median_step_time_s"].get<double>(),
                      100 * slowdowns.back(), rates.back());
  }
  std::vector<double> sorted = slowdowns;
  std::sort(sorted.begin(), sorted.end());
  double rate = 0;
  for (double v : rates) rate += v / rates.size();
  md += fmt::format("\nMedian slowdown over {} repeats: {:+.2f}% (goal: <= 3%); mean tuning work: {:.0f} member-steps "
                    "per hour.\n",
                    repeats, 100 * sorted[sorted.size() / 2], rate);
  write(out / "bubbles.md", md);
  to_png(out / "bubble_timeline.svg");
  return 0;
}

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty()) {
    std::fprintf(stderr, "usage: bench_hydro lr-width|rank-transfer|coord-check|fusion|end-to-end|tuning-fusion|bubbles [options] (see "
                         "bench/hydro_bench.cc)\n");
    return 2;
  }
  std::map<std::string, std::string> flags;
  for (std::size_t i = 1; i + 1 < args.size(); i += 2) {
    if (args[i].rfind("--", 0) != 0) {
      std::fprintf(stderr, "bench_hydro: expected --flag value, not '%s'\n", args[i].c_str());
      return 2;
    }
    flags[args[i].substr(2)] = args[i + 1];
  }
  if (args.size() % 2 == 0) {
    std::fprintf(stderr, "bench_hydro: '%s' has no value\n", args.back().c_str());
    return 2;
  }
  auto flag = [&](const std::string& name, const std::string& fallback) {
    const auto it = flags.find(name);
    return it == flags.end() ? fallback : it->second;
  };
  try {
    const fs::path out = flag("out", "bench/results/hydro");
    if (args[0] == "lr-width") {
      const ModelSetup m = model_setup(flag("model", "gpt"));
      return lr_width(m, std::stoi(flag("steps", std::to_string(m.steps))), out);
    }
    if (args[0] == "rank-transfer") {
      const ModelSetup m = model_setup(flag("model", "gpt"));
      return rank_transfer(m, std::stoi(flag("configs", "10")), std::stoi(flag("steps", std::to_string(m.steps))), out);
    }
    if (args[0] == "fusion") return fusion(std::stoi(flag("steps", "40")), out);
    if (args[0] == "coord-check") return coord_check(std::stoi(flag("steps", "4")), out);
    if (args[0] == "bubbles") return bubbles(std::stoi(flag("repeats", "3")), std::stoi(flag("steps", "60")), out);
    if (args[0] == "end-to-end" || args[0] == "tuning-fusion") {
      const std::string seeds = flag("seeds", args[0] == "end-to-end" ? "0-1" : "0-2");
      const auto dash = seeds.find('-');
      const int first = std::stoi(seeds.substr(0, dash)), last = dash == std::string::npos ? first : std::stoi(seeds.substr(dash + 1));
      if (args[0] == "tuning-fusion")
        return tuning_fusion(std::stod(flag("ratio", "8")), std::stoi(flag("trials", "24")), first, last,
                             std::stoi(flag("steps", "300")), out);
      EndToEnd e;
      e.ratio = std::stod(flag("ratio", "8"));
      e.trials = std::stoi(flag("trials", "24"));
      e.first_seed = first;
      e.last_seed = last;
      e.steps = std::stoi(flag("steps", "300"));
      e.retrain_top = flag("retrain-top", "1");
      e.retrain_budget = flag("retrain-budget", "");
      e.reuse = flag("reuse", "");
      e.only = flag("only", "");
      e.surrogate_search = flag("surrogate-search", "");
      e.surrogate_train = flag("surrogate-train", "");
      e.direct_search = flag("direct-search", "");
      e.direct_train = flag("direct-train", "");
      if (!e.only.empty() && e.only != "direct" && e.only != "surrogate")
        throw std::runtime_error("--only: direct or surrogate, not " + e.only);
      e.out = out;
      return end_to_end(e);
    }
    std::fprintf(stderr, "bench_hydro: unknown command '%s'\n", args[0].c_str());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_hydro: %s\n", e.what());
    return 1;
  }
}
