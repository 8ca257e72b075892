// The subcommands of the paratune program, one file each (presets_command.cc, plan_command.cc, ...):
// each registers its CLI11 subcommand and flags on the program's app, and says what runs it. The
// dispatcher (main.cc) registers them all, parses the command line and runs the one chosen.
#pragma once

#include <CLI/CLI.hpp>

#include <functional>
#include <vector>

namespace paratune::cli {

// A subcommand the command line may choose: CLI11's record of it (true once parsed) and what runs
// it then, returning the program's exit code. `run` may throw: the dispatcher turns paratune::Error
// and the rest into messages and exit codes.
struct Command {
  const CLI::App* app;
  std::function<int()> run;
};
using Commands = std::vector<Command>;

// Each adds its subcommand to `app` (a group such as `study show|copy`, each runnable one to
// `commands`). The order of the calls is the order `paratune --help` lists them in.
void add_presets_command(CLI::App& app, Commands& commands);
void add_model_command(CLI::App& app, Commands& commands);
void add_estimate_command(CLI::App& app, Commands& commands);
void add_simulate_command(CLI::App& app, Commands& commands);
void add_plan_command(CLI::App& app, Commands& commands);
void add_harvest_command(CLI::App& app, Commands& commands);
void add_tune_command(CLI::App& app, Commands& commands);
void add_study_command(CLI::App& app, Commands& commands);   // study show | copy
void add_report_command(CLI::App& app, Commands& commands);  // in study_command.cc
void add_dashboard_command(CLI::App& app, Commands& commands);
void add_validate_command(CLI::App& app, Commands& commands);
void add_calibrate_command(CLI::App& app, Commands& commands);
void add_profile_command(CLI::App& app, Commands& commands);

}  // namespace paratune::cli
