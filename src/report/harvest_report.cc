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

}  // namespace paratune
