#include "paratune/report/harvest_report.h"

#include <fmt/format.h>

#include "paratune/spec/units.h"

namespace paratune {
namespace {

constexpr double kSecondsPerDay = 86400;

// Sum over stages of a per-iteration quantity, times GPUs per stage and iterations per day.
template <typename Field>
double per_day(const HarvestReport& r, Field field) {
  if (r.harvest.iteration_time_s <= 0) return 0;
  double per_iteration = 0;
  for (const sim::StageHarvest& s : r.harvest.stages) per_iteration += field(s);
  return per_iteration * r.gpus_per_stage * kSecondsPerDay / r.harvest.iteration_time_s;
}

}  // namespace

double harvested_gpu_hours_per_day(const HarvestReport& r) {
  return per_day(r, [](const sim::StageHarvest& s) { return s.trial_busy_s; }) / 3600;
}

double harvested_trial_steps_per_day(const HarvestReport& r) {
  return per_day(r, [](const sim::StageHarvest& s) { return s.member_steps; });
}

std::string format_harvest(const HarvestReport& r) {
  const SurrogateFootprint& f = r.footprint;
  std::string out = fmt::format(
      "\nbubble harvest (Hydro): tuning trials of the surrogate {} (hidden {}, {} parameters), one sequence per "
      "step, on one GPU: {} per step, {} each (cost model), + {} runtime once, {} to switch in\n",
      f.surrogate.name, f.surrogate.hidden_size, units::format_count(f.parameters), units::format_duration(r.trial.step_time_s),
      units::format_bytes(r.trial.memory_bytes), units::format_bytes(r.trial.runtime_memory_bytes),
      units::format_duration(r.trial.switch_s));
  out += fmt::format("  {:>5}  {:>10}  {:>12}  {:>7}  {:>10}  {:>12}\n", "stage", "idle", "free memory", "fused B",
                     "trial busy", "member-steps");
  for (const sim::StageHarvest& s : r.harvest.stages)
    out += fmt::format("  {:>5}  {:>10}  {:>12}  {:>7}  {:>10}  {:>12.0f}\n", s.stage, units::format_duration(s.idle_s),
                       units::format_bytes(s.free_memory_bytes), s.members, units::format_duration(s.trial_busy_s),
                       s.member_steps);
  out += fmt::format("  per iteration of {}; {} GPUs per stage\n", units::format_duration(r.harvest.iteration_time_s),
                     r.gpus_per_stage);
  out += fmt::format("  harvestable: {:.0f} GPU-hours/day of tuning ({:.3g} trial steps/day), model prediction\n",
                     harvested_gpu_hours_per_day(r), harvested_trial_steps_per_day(r));
  return out;
}

nlohmann::json to_json(const HarvestReport& r) {
  nlohmann::json stages = nlohmann::json::array();
  for (const sim::StageHarvest& s : r.harvest.stages)
    stages.push_back({{"stage", s.stage},
                      {"idle_s", s.idle_s},
                      {"free_memory_bytes", s.free_memory_bytes},
                      {"members", s.members},
                      {"trial_busy_s", s.trial_busy_s},
                      {"member_steps", s.member_steps}});
  nlohmann::json windows = nlohmann::json::array();
  for (const sim::HarvestWindow& w : r.harvest.windows)
    windows.push_back({{"stage", w.stage}, {"start_s", w.start_s}, {"end_s", w.end_s}, {"members", w.members},
                       {"steps", w.steps}});
  return {{"surrogate", r.footprint.surrogate.name},
          {"surrogate_parameters", r.footprint.parameters},
          {"trial_step_time_s", r.trial.step_time_s},
          {"trial_memory_bytes", r.trial.memory_bytes},
          {"runtime_memory_bytes", r.trial.runtime_memory_bytes},
          {"switch_s", r.trial.switch_s},
          {"gpus_per_stage", r.gpus_per_stage},
          {"iteration_time_s", r.harvest.iteration_time_s},
          {"stages", stages},
          {"windows", windows},
          {"gpu_hours_per_day", harvested_gpu_hours_per_day(r)},
          {"trial_steps_per_day", harvested_trial_steps_per_day(r)}};
}

std::vector<double> bubble_fractions(const hpo::HarvestRun& run, int ranks) {
  std::vector<double> idle(static_cast<std::size_t>(ranks), 0);
  for (const hpo::HarvestBubble& b : run.bubbles)
    if (b.rank >= 0 && b.rank < ranks) idle[static_cast<std::size_t>(b.rank)] += b.end_s - b.start_s;
  for (double& v : idle) v = run.elapsed_s > 0 ? v / run.elapsed_s : 0;
  return idle;
}

double trial_member_steps_per_hour(const hpo::HarvestRun& run) {
  double member_steps = 0;
  for (const hpo::HarvestTrialRun& t : run.trials) member_steps += static_cast<double>(t.steps * t.members);
  return run.elapsed_s > 0 ? member_steps / run.elapsed_s * 3600 : 0;
}

namespace {

std::string run_line(const char* what, const hpo::HarvestRun& run, int ranks) {
  std::string out = fmt::format("{:<12} {} steps, median step {} (exit {}), {} in all; bubbles:", what,
                                run.job_steps.size(), units::format_duration(hpo::median_step_time(run)),
                                run.job_exit_code, units::format_duration(run.elapsed_s));
  const std::vector<double> f = bubble_fractions(run, ranks);
  for (std::size_t r = 0; r < f.size(); ++r) out += fmt::format(" rank {} {:.1f}%", r, 100 * f[r]);
  return out + "\n";
}

}  // namespace

std::string format_harvest_measurement(const HarvestMeasurement& m) {
  std::string out;
  if (m.baseline) out += run_line("job alone:", *m.baseline, m.ranks);
  out += run_line("with trials:", m.harvest, m.ranks);
  if (m.baseline && hpo::median_step_time(*m.baseline) > 0)
    out += fmt::format("slowdown of the job's median step: {:+.2f}%\n",
                       100 * (hpo::median_step_time(m.harvest) / hpo::median_step_time(*m.baseline) - 1));
  std::int64_t steps = 0, member_steps = 0;
  for (const hpo::HarvestTrialRun& t : m.harvest.trials) {
    steps += t.steps;
    member_steps += t.steps * t.members;
  }
  out += fmt::format("tuning in the bubbles: {} trial runs, {} fused steps ({} member-steps), {:.0f} member-steps "
                     "per hour\n",
                     m.harvest.trials.size(), steps, member_steps, trial_member_steps_per_hour(m.harvest));
  for (const hpo::HarvestTrialRun& t : m.harvest.trials)
    out += fmt::format("  rank {}  {:>4} steps x {:>2} members  {}  {}\n", t.rank, t.steps, t.members, t.status,
                       t.params.size() > 60 ? t.params.substr(0, 57) + "..." : t.params);
  for (const std::string& note : m.harvest.notes) out += "note: " + note + "\n";
  return out;
}

namespace {

nlohmann::json run_json(const hpo::HarvestRun& run, int ranks) {
  nlohmann::json bubbles = nlohmann::json::array(), trials = nlohmann::json::array(), steps = nlohmann::json::array();
  for (const hpo::HarvestBubble& b : run.bubbles) bubbles.push_back({{"rank", b.rank}, {"start_s", b.start_s}, {"end_s", b.end_s}});
  for (const hpo::HarvestTrialRun& t : run.trials)
    trials.push_back({{"rank", t.rank}, {"params", t.params}, {"dir", t.dir}, {"members", t.members}, {"steps", t.steps},
                      {"status", t.status}, {"started_s", t.started_s}, {"ended_s", t.ended_s},
                      {"step_times_s", t.step_times_s}});
  for (std::size_t i = 0; i < run.job_steps.size(); ++i)
    steps.push_back({{"step", run.job_steps[i].step},
                     {"step_time_s", run.job_steps[i].step_time_s},
                     {"read_s", i < run.job_step_read_s.size() ? run.job_step_read_s[i] : 0.0}});
  return {{"job_exit_code", run.job_exit_code},
          {"elapsed_s", run.elapsed_s},
          {"start_monotonic_s", run.start_monotonic_s},
          {"median_step_time_s", hpo::median_step_time(run)},
          {"bubble_fractions", bubble_fractions(run, ranks)},
          {"trial_member_steps_per_hour", trial_member_steps_per_hour(run)},
          {"job_steps", steps},
          {"bubbles", bubbles},
          {"trials", trials},
          {"notes", run.notes}};
}

}  // namespace

nlohmann::json to_json(const HarvestMeasurement& m) {
  nlohmann::json j{{"ranks", m.ranks}, {"harvest", run_json(m.harvest, m.ranks)}};
  if (m.baseline) {
    j["baseline"] = run_json(*m.baseline, m.ranks);
    const double base = hpo::median_step_time(*m.baseline);
    j["slowdown"] = base > 0 ? hpo::median_step_time(m.harvest) / base - 1 : 0.0;
  }
  return j;
}

std::string harvest_timeline_svg(const HarvestMeasurement& m, std::size_t first_step, std::size_t steps) {
  struct Panel {
    const char* title;
    const hpo::HarvestRun* run;
  };
  std::vector<Panel> panels;
  if (m.baseline) panels.push_back({"the job alone", &*m.baseline});
  panels.push_back({"with tuning trials in its bubbles", &m.harvest});
  const double width = 1000, left = 110, row = 26, panel_gap = 40;
  double height = 40;
  for (std::size_t p = 0; p < panels.size(); ++p) height += 30 + row * m.ranks + panel_gap;
  std::string svg = fmt::format(
      R"(<svg xmlns="http://www.w3.org/2000/svg" width="{}" height="{}" font-family="sans-serif" font-size="12">)"
      "\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n",
      width + 20, height + 30);
  double y = 20;
  for (const Panel& p : panels) {
    const hpo::HarvestRun& run = *p.run;
    // The window: from the end of step first_step - 1 (its line's read time) over `steps` steps.
    const auto& reads = run.job_step_read_s;
    if (steps < 1 || first_step >= reads.size() || steps >= reads.size() - first_step) {
      svg += fmt::format(R"(<text x="10" y="{}">{}: the run has {} steps, fewer than the window's last ({} + {})</text>)"
                         "\n",
                         y + 12, p.title, reads.size(), first_step, steps);
      y += 30;
      continue;
    }
    const double t0 = reads[first_step], t1 = reads[first_step + steps];
    const auto x = [&](double t) { return left + (t - t0) / (t1 - t0) * (width - left); };
    svg += fmt::format(R"(<text x="10" y="{}" font-weight="bold">{}: {} steps, median {}</text>)"
                       "\n",
                       y + 12, p.title, steps, units::format_duration(hpo::median_step_time(run)));
    y += 22;
    for (int r = 0; r < m.ranks; ++r) {
      const double top = y + r * row;
      svg += fmt::format(R"(<text x="10" y="{}">rank {}</text>)"
                         "\n"
                         R"(<rect x="{}" y="{}" width="{}" height="{}" fill="#4a78c2"/>)"
                         "\n",
                         top + 15, r, left, top, width - left, row - 6);
      for (const hpo::HarvestBubble& b : run.bubbles) {
        if (b.rank != r || b.end_s < t0 || b.start_s > t1) continue;
        const bool trial_ran = !run.trials.empty();
        svg += fmt::format(R"(<rect x="{:.2f}" y="{}" width="{:.2f}" height="{}" fill="{}"/>)"
                           "\n",
                           x(std::max(b.start_s, t0)), top, std::max(0.5, x(std::min(b.end_s, t1)) - x(std::max(b.start_s, t0))),
                           row - 6, trial_ran ? "#3cb44b" : "#dddddd");
      }
      for (const hpo::HarvestTrialRun& t : run.trials)
        if (t.rank == r)
          for (double s : t.step_times_s)
            if (s >= t0 && s <= t1)
              svg += fmt::format(R"(<line x1="{:.2f}" x2="{:.2f}" y1="{}" y2="{}" stroke="black" stroke-width="1"/>)"
                                 "\n",
                                 x(s), x(s), top + row - 6, top + row - 1);
    }
    y += row * m.ranks;
    svg += fmt::format(R"(<text x="{}" y="{}">{} .. {} after the job's start</text>)"
                       "\n",
                       left, y + 12, units::format_duration(t0), units::format_duration(t1));
    y += panel_gap;
  }
  svg += fmt::format(R"(<text x="10" y="{}">blue: the job computes; grey: a bubble (a rank waits for its peer); green: a )"
                     R"(bubble a tuning trial ran in; black ticks: the trial's steps</text>)"
                     "\n</svg>\n",
                     y);
  return svg;
}

}  // namespace paratune
