// Which flag of the paratune program sets which library option, for the messages of OptionError.
//
// The library names the fields of its options structs ("option max_trials = -1: must be >= 0");
// the program names the flag the user typed ("--max-trials -1: must be >= 0"). A field maps to its
// snake_case name in kebab case (max_trials -> --max-trials) where the subcommand has that flag;
// kOptionFlags lists the fields whose flag is named otherwise. A field with neither keeps the
// library's name: the message never invents a flag. tests/cli/option_flags_test.cc checks that
// every flag listed here is one the subcommand registers.
#pragma once

#include <array>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

namespace paratune::cli {

struct OptionFlag {
  std::string_view command;  // the subcommand whose flag it is ("tune", "harvest")
  std::string_view field;    // the option as the library names it (OptionError::field())
  // Its flag. "A|B": either sets it (aliases); a message names the one given, else A. A flag with
  // a value ("--fuse auto") stands for a bool field that the value sets.
  std::string_view flags;
};

inline constexpr std::array<OptionFlag, 29> kOptionFlags{{
    // tune: tune::StudyOptions, hpo::HpoOptions (trial::TrialLimits in `limits`), tune::BayesOptions,
    // hpo::PrunerOptions, trial::LocalBackend's arguments, trial::SshOptions, trial::SlurmOptions.
    {"tune", "name", "--study-name"},
    {"tune", "budget_s", "--budget"},
    {"tune", "objectives", "--objective"},  // hpo::HpoOptions: several objectives, comma-separated
    {"tune", "directions", "--direction"},
    {"tune", "limits.timeout_s", "--timeout"},
    {"tune", "limits.hang_s", "--hang"},
    {"tune", "limits.grace_s", "--grace"},
    {"tune", "limits.memory_limit_bytes", "--memory-limit"},
    {"tune", "memory_limit_bytes", "--memory-limit"},
    {"tune", "initial_points", "--initial"},
    {"tune", "fuse_auto", "--fuse auto"},
    {"tune", "max_resource", "--steps"},  // the pruner's full trial: the study's steps
    {"tune", "startup_trials", "--pruner-startup"},
    {"tune", "warmup_steps", "--pruner-warmup"},
    {"tune", "slots", "--parallel|--slots"},
    {"tune", "ssh_options", "--ssh-option"},  // trial::SshOptions::options
    // trial::SlurmOptions.
    {"tune", "cpus_per_slot", "--slurm-cpus-per-slot"},
    {"tune", "gpus_per_slot", "--slurm-gpus-per-slot"},
    {"tune", "memory_per_slot_bytes", "--slurm-mem-per-slot"},
    {"tune", "time_limit_s", "--slurm-time"},
    {"tune", "poll_s", "--slurm-poll"},
    {"tune", "extra_sbatch_options", "--sbatch-option"},
    {"tune", "worker.enabled", "--worker"},  // tune::WorkerOptions
    {"tune", "worker.heartbeat_s", "--heartbeat"},
    {"tune", "worker.heartbeat_timeout_s", "--heartbeat-timeout"},
    // harvest: hpo::HarvestOptions.
    {"harvest", "job_argv", "--job"},
    {"harvest", "trial_argv", "--trial"},
    {"harvest", "timeout_s", "--timeout"},
    // dashboard: dashboard::DashboardOptions (host and port are --host, --port).
    {"dashboard", "poll_s", "--poll"},
}};

// max_trials -> --max-trials.
inline std::string kebab_flag(std::string_view field) {
  std::string flag = "--";
  for (char c : field) flag.push_back(c == '_' ? '-' : c);
  return flag;
}

// The flag of `field` in `command`, or nullopt (no flag sets it). `registered(flag)`: the subcommand
// has that flag; `given(flag)`: the command line has it.
inline std::optional<std::string> flag_for(std::string_view command, std::string_view field,
                                           const std::function<bool(std::string_view)>& registered,
                                           const std::function<bool(std::string_view)>& given) {
  for (const OptionFlag& entry : kOptionFlags) {
    if (entry.command != command || entry.field != field) continue;
    const std::string_view first = entry.flags.substr(0, entry.flags.find('|'));
    for (std::string_view rest = entry.flags; !rest.empty();) {
      const std::size_t bar = rest.find('|');
      const std::string_view flag = rest.substr(0, bar);
      if (given(flag)) return std::string(flag);
      rest = bar == std::string_view::npos ? std::string_view() : rest.substr(bar + 1);
    }
    return std::string(first);
  }
  if (field.find('.') != std::string_view::npos) return std::nullopt;  // nested: listed, or not a flag
  std::string flag = kebab_flag(field);
  if (registered(flag)) return flag;
  return std::nullopt;
}

}  // namespace paratune::cli
