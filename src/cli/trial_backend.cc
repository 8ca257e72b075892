#include "trial_backend.h"

#include <fmt/format.h>

#include <vector>

#include "duration_flag.h"
#include "paratune/spec/error.h"
#include "paratune/spec/units.h"
#include "paratune/trial/slurm_backend.h"
#include "paratune/trial/ssh_backend.h"
#include "tune_options.h"

namespace paratune::cli {
namespace {

const std::vector<std::string> kSlurmFlags{"--slurm-partition", "--slurm-account",  "--slurm-qos",
                                           "--slurm-constraint", "--slurm-time",     "--slurm-cpus-per-slot",
                                           "--slurm-gpus-per-slot", "--slurm-mem-per-slot", "--slurm-poll",
                                           "--sbatch-option"};

std::unique_ptr<trial::Backend> slurm_backend_from(const TuneFlags& f) {
  refuse_flags(f, {"--slot-devices", "--slot-cpus"},
               "belongs to --backend local; with --backend slurm each trial asks Slurm for --slurm-gpus-per-slot "
               "and --slurm-cpus-per-slot per slot");
  if (f.slots && f.given.contains("--parallel"))
    throw Error("--slots and --parallel: give one (--slots is the newer name: the slots trials are packed onto)");
  trial::SlurmOptions options;
  options.slots = f.slots.value_or(f.parallel);
  options.partition = f.slurm_partition;
  options.account = f.slurm_account;
  options.qos = f.slurm_qos;
  options.constraint = f.slurm_constraint;
  options.time_limit_s = optional_duration(f.slurm_time, "--slurm-time");
  options.cpus_per_slot = f.slurm_cpus_per_slot;
  options.gpus_per_slot = f.slurm_gpus_per_slot;
  if (!f.slurm_mem_per_slot.empty()) {
    try {
      options.memory_per_slot_bytes = units::parse_bytes(f.slurm_mem_per_slot);
    } catch (const Error& e) {
      throw e.with_context("--slurm-mem-per-slot");
    }
  }
  options.poll_s = optional_duration(f.slurm_poll, "--slurm-poll");
  options.extra_sbatch_options = f.sbatch_options;
  auto backend = std::make_unique<trial::SlurmBackend>(options);
  backend->check_with_slurm();  // a partition or account Slurm refuses: said now, not by every trial
  return backend;
}

}  // namespace

std::unique_ptr<trial::Backend> backend_from(const TuneFlags& f) {
  if (f.backend != "slurm") refuse_flags(f, kSlurmFlags, "belongs to --backend slurm");
  if (f.backend == "slurm") {
    refuse_flags(f, {"--hosts", "--ssh-option", "--ssh-config"}, "belongs to --backend ssh");
    return slurm_backend_from(f);
  }
  if (f.backend == "ssh") {
    refuse_flags(f, {"--parallel", "--slots", "--slot-devices", "--slot-cpus"},
                 "belongs to --backend local; with --backend ssh the hosts file gives each host's slots= and "
                 "slot-devices=");
    if (f.hosts.empty()) throw Error("--backend ssh: needs --hosts FILE (one host per line: host [slots=N] [slot-devices=LIST])");
    trial::SshOptions options;
    options.options = f.ssh_options;
    options.config_file = f.ssh_config;
    return std::make_unique<trial::SshBackend>(trial::parse_hosts_file(f.hosts), options);
  }
  refuse_flags(f, {"--hosts", "--ssh-option", "--ssh-config"}, "belongs to --backend ssh");
  if (f.slots && f.given.contains("--parallel"))
    throw Error("--slots and --parallel: give one (--slots is the newer name: the slots trials are packed onto)");
  std::vector<std::string> slot_devices;
  if (!f.slot_devices.empty()) slot_devices = trial::parse_slot_devices(f.slot_devices);
  std::vector<std::vector<int>> slot_cpus;
  if (!f.slot_cpus.empty()) slot_cpus = trial::parse_slot_cpus(f.slot_cpus);
  return std::make_unique<trial::LocalBackend>(f.slots.value_or(f.parallel), slot_devices, slot_cpus);
}

std::string slots_line(const trial::Backend& backend) {
  if (const auto* ssh = dynamic_cast<const trial::SshBackend*>(&backend))
    return fmt::format("{} slot(s) on {} host(s) over ssh", backend.slots(), ssh->hosts().size());
  if (backend.name() == "slurm") return fmt::format("{} slot(s) in flight as Slurm jobs", backend.slots());
  return fmt::format("{} slot(s)", backend.slots());
}

}  // namespace paratune::cli
