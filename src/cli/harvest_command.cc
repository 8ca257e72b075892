// `paratune harvest`: a pipeline job of paratune-train with tuning trials in its bubbles
// (hpo/bubble_coordinator.h), measured.
#include <filesystem>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>

#include "commands.h"
#include "duration_flag.h"
#include "flag_checks.h"
#include "output.h"
#include "paratune/hpo/bubble_coordinator.h"
#include "paratune/report/harvest_report.h"
#include "paratune/spec/error.h"
#include "paratune/spec/input_file.h"
#include "paratune/trial/command.h"

namespace paratune::cli {
namespace {

struct HarvestFlags {
  std::string job, trial, trial_params, out = "harvest", svg, timeout;
  int ranks = 2;
  bool baseline = false;
  std::size_t timeline_first_step = 3, timeline_steps = 2;
};

// `paratune harvest`: a pipeline job with tuning trials in its bubbles (hpo/bubble_coordinator.h),
// and, with --baseline, the same job alone first.
int run_harvest_command(const HarvestFlags& f, bool json) {
  hpo::HarvestOptions options;
  options.job_argv = trial::split_words(f.job);
  options.ranks = f.ranks;
  options.trial_argv = trial::split_words(f.trial);
  options.timeout_s = optional_duration(f.timeout, "--timeout");
  if (!f.trial_params.empty()) {
    std::istringstream in(read_input_file(f.trial_params, "trial-parameter list (--trial-params)"));
    std::string line;
    for (int n = 1; std::getline(in, line); ++n) {
      if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
      const nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
      if (j.is_discarded() || !(j.is_object() || (j.is_array() && !j.empty())))
        throw Error(fmt::format("{}:{}: each line is one trial's PARATUNE_PARAMS: a JSON object, or an array of "
                                "them (a fused group)",
                                f.trial_params, n));
      options.trial_params.push_back(j.dump());
    }
  }
  if (options.trial_argv.empty()) throw Error("--trial: the tuning trial's command is required");
  if (options.trial_params.empty()) throw Error("--trial-params: the file must name at least one trial");
  HarvestMeasurement m;
  m.ranks = f.ranks;
  if (f.baseline) {
    hpo::HarvestOptions alone = options;
    alone.trial_argv.clear();
    alone.dir = std::filesystem::path(f.out) / "baseline";
    std::cerr << "paratune harvest: the job alone ...\n";
    m.baseline = hpo::run_harvest(alone);
  }
  options.dir = std::filesystem::path(f.out) / "harvest";
  std::cerr << "paratune harvest: the job with trials in its bubbles ...\n";
  m.harvest = hpo::run_harvest(options);
  if (!f.svg.empty()) write_file(f.svg, harvest_timeline_svg(m, f.timeline_first_step, f.timeline_steps));
  if (json) write_json(to_json(m));
  else std::cout << format_harvest_measurement(m) << (f.svg.empty() ? "" : "wrote " + f.svg + "\n");
  return m.harvest.job_exit_code == 0 && (!m.baseline || m.baseline->job_exit_code == 0) ? 0 : 1;
}

}  // namespace

void add_harvest_command(CLI::App& app, Commands& commands) {
  struct Flags {
    HarvestFlags harvest;
    bool json = false;
  };
  const auto flags = std::make_shared<Flags>();
  HarvestFlags& harvest_flags = flags->harvest;
  bool& json = flags->json;
  auto* harvest_cmd = app.add_subcommand(
      "harvest", "run a pipeline job of paratune-train with tuning trials paused in its compute and resumed in its "
                 "bubbles (Hydro's Coordinator); measure both");
  harvest_cmd->add_option("--job", harvest_flags.job, "the pipeline job, e.g. 'paratune-train --ranks 2 --strategy gpipe ...'")
      ->required();
  harvest_cmd->add_option("--ranks", harvest_flags.ranks, "the job's ranks (one trial slot beside each)")
      ->capture_default_str()
      ->transform(whole_number(1, kMaxHostSlots));
  harvest_cmd->add_option("--trial", harvest_flags.trial, "a tuning trial's command (paratune-train ...)")->required();
  harvest_cmd->add_option("--trial-params", harvest_flags.trial_params,
                          "a file of the trials' PARATUNE_PARAMS, one JSON per line (an array: a fused group), taken in "
                          "turn")
      ->required();
  harvest_cmd->add_option("--out", harvest_flags.out, "where the logs, bubbles and trials go")->capture_default_str();
  harvest_cmd->add_flag("--baseline", harvest_flags.baseline, "run the job alone first, to measure the slowdown");
  harvest_cmd->add_option("--svg", harvest_flags.svg, "write both runs on one timeline (SVG)");
  harvest_cmd->add_option("--timeline-first-step", harvest_flags.timeline_first_step, "the timeline's first job step")
      ->capture_default_str()
      ->transform(whole_number(0, kInt64Max));
  harvest_cmd->add_option("--timeline-steps", harvest_flags.timeline_steps, "job steps the timeline shows")
      ->capture_default_str()
      ->transform(whole_number(1, kInt64Max));
  harvest_cmd->add_option("--timeout", harvest_flags.timeout, "stop the job after this long (e.g. 10m)");
  harvest_cmd->add_flag("--json", json, "machine-readable output");
  commands.push_back({harvest_cmd, [flags] { return run_harvest_command(flags->harvest, flags->json); }});
}

}  // namespace paratune::cli
