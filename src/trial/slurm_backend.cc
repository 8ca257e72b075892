// The Slurm backend (trial/slurm_backend.h).
#include "paratune/trial/slurm_backend.h"

#include <unistd.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <random>

#include <fmt/format.h>

#include "paratune/spec/error.h"
#include "paratune/spec/option_error.h"
#include "paratune/trial/run_command.h"
#include "paratune/trial/slurm_job.h"

namespace paratune::trial {
namespace {

constexpr int kMaxSlots = 100000;
constexpr double kSlurmCommandTimeoutS = 60;

// paratune-slurm-job beside the running program (an installed or built paratune), else by PATH.
std::filesystem::path default_watcher() {
  std::error_code ec;
  const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    std::filesystem::path beside = self.parent_path() / "paratune-slurm-job";
    if (::access(beside.c_str(), X_OK) == 0) return beside;
  }
  return "paratune-slurm-job";
}

// Seconds -> Slurm's "hours:minutes:seconds".
std::string slurm_time(double seconds) {
  const auto total = static_cast<long long>(std::ceil(seconds));
  return fmt::format("{}:{:02d}:{:02d}", total / 3600, (total / 60) % 60, total % 60);
}

}  // namespace

void validate(const SlurmOptions& o) {
  if (o.slots < 1 || o.slots > kMaxSlots)
    throw OptionError("slots", std::to_string(o.slots), fmt::format("must be from 1 to {}", kMaxSlots));
  if (o.cpus_per_slot < 1 || o.cpus_per_slot > 4096)
    throw OptionError("cpus_per_slot", std::to_string(o.cpus_per_slot), "must be from 1 to 4096");
  if (o.gpus_per_slot < 0 || o.gpus_per_slot > 1024)
    throw OptionError("gpus_per_slot", std::to_string(o.gpus_per_slot), "must be from 0 to 1024");
  if (!std::isfinite(o.time_limit_s) || o.time_limit_s < 0 || o.time_limit_s > 365 * 86400.0)
    throw OptionError("time_limit_s", fmt::format("{:g}", o.time_limit_s), "must be from 0 (the partition's default) to a year");
  if (!std::isfinite(o.memory_per_slot_bytes) || o.memory_per_slot_bytes < 0 || o.memory_per_slot_bytes > 0x1p50)
    throw OptionError("memory_per_slot_bytes", fmt::format("{:g}", o.memory_per_slot_bytes), "must be from 0 (the default) to 1 PiB");
  if (!std::isfinite(o.poll_s) || o.poll_s < 0.05 || o.poll_s > 3600)
    throw OptionError("poll_s", fmt::format("{:g}", o.poll_s), "must be from 0.05 to 3600 seconds");
  // The options paratune-slurm-job sets itself: the job's output files (which it reads as they grow),
  // its directory, its name, its environment, how sbatch answers.
  static constexpr std::array<std::string_view, 18> kOwnOptions{
      "--output", "--error", "--chdir", "--parsable", "--open-mode", "--export", "--job-name", "--wrap", "--array",
      "--wait",   "--test-only", "--input", "-o", "-e", "-D", "-J", "-a", "-W"};
  for (const std::string& option : o.extra_sbatch_options) {
    if (!option.starts_with("-"))
      throw OptionError("extra_sbatch_options", fmt::format("'{}'", option), "each must be an sbatch option (starting with -)");
    const std::string_view name = std::string_view(option).substr(0, option.find('='));
    const bool own = std::any_of(kOwnOptions.begin(), kOwnOptions.end(), [&](std::string_view own_option) {
      return name == own_option || (own_option.size() == 2 && !option.starts_with("--") && option.starts_with(own_option));
    });
    if (own)
      throw OptionError("extra_sbatch_options", fmt::format("'{}'", option),
                        "is set by paratune itself (the job's output files, directory, name and environment)");
  }
}

SlurmBackend::SlurmBackend(SlurmOptions options) : options_(std::move(options)) {
  validate(options_);
  watcher_ = options_.watcher.empty() ? default_watcher() : options_.watcher;
}

std::vector<std::string> SlurmBackend::sbatch_options(int slot_count) const {
  std::vector<std::string> args{"--ntasks=1", fmt::format("--cpus-per-task={}", slot_count * options_.cpus_per_slot)};
  if (options_.gpus_per_slot > 0) args.push_back(fmt::format("--gpus={}", slot_count * options_.gpus_per_slot));
  if (options_.memory_per_slot_bytes > 0)
    args.push_back(fmt::format("--mem={}M", static_cast<long long>(std::ceil(slot_count * options_.memory_per_slot_bytes / 1048576.0))));
  if (options_.time_limit_s > 0) args.push_back("--time=" + slurm_time(options_.time_limit_s));
  if (!options_.partition.empty()) args.push_back("--partition=" + options_.partition);
  if (!options_.account.empty()) args.push_back("--account=" + options_.account);
  if (!options_.qos.empty()) args.push_back("--qos=" + options_.qos);
  if (!options_.constraint.empty()) args.push_back("--constraint=" + options_.constraint);
  args.insert(args.end(), options_.extra_sbatch_options.begin(), options_.extra_sbatch_options.end());
  return args;
}

LaunchCommand SlurmBackend::command_for(const TrialCommand& trial, const std::vector<int>& slots) const {
  LaunchCommand out;
  out.argv = {watcher_.string(), "--poll-s", fmt::format("{:g}", options_.poll_s)};
  for (std::string& option : sbatch_options(static_cast<int>(slots.size()))) out.argv.push_back(std::move(option));
  out.argv.emplace_back("--");
  out.argv.insert(out.argv.end(), trial.argv.begin(), trial.argv.end());
  out.location = "slurm";  // until the job starts and the watcher says where
  // A secret per trial: the watcher's queued/started/ended lines carry it, the job cannot forge them.
  std::random_device random;
  out.backend_token = fmt::format("{:08x}{:08x}{:08x}{:08x}", random(), random(), random(), random());
  out.env.emplace_back("PARATUNE_BACKEND_TOKEN", out.backend_token);
  // The job's processes are Slurm's (slurmstepd's children, on a node): only the watcher is ours.
  out.find_by_environment = false;
  return out;
}

int SlurmBackend::clean_up_left_over(const std::filesystem::path& dir) const {
  return cancel_left_over_slurm_job(dir) + kill_trial_processes(dir);
}

void SlurmBackend::check_with_slurm() const {
  std::vector<std::string> argv{"sbatch", "--test-only"};
  for (std::string& option : sbatch_options(1)) argv.push_back(std::move(option));
  argv.insert(argv.end(), {"--wrap", "true"});
  std::string options_text;
  for (std::size_t i = 2; i + 2 < argv.size(); ++i) options_text += (options_text.empty() ? "" : " ") + argv[i];
  CommandOutput test;
  try {
    test = run_command(argv, kSlurmCommandTimeoutS);
  } catch (const Error& e) {
    throw OptionError("backend", "slurm", fmt::format("needs Slurm's sbatch on this host: {}", e.what()));
  }
  if (!test.ok())
    throw OptionError("backend", "slurm",
                      fmt::format("Slurm refuses a trial's job ({}): sbatch --test-only: {} ({})", options_text,
                                  last_lines(test.err, 3), test.describe_end(kSlurmCommandTimeoutS)));
}

int cancel_left_over_slurm_job(const std::filesystem::path& dir) {
  const std::optional<SlurmJobRecord> job = slurm_job_in(dir);
  if (!job) return 0;
  // Only if it still runs, and, where its name is known, only that job (ids are reused after a
  // cluster's restart).
  std::vector<std::string> argv{"scancel"};
  if (!job->name.empty()) argv.push_back("--name=" + job->name);
  argv.push_back(job->id);
  try {
    const CommandOutput state = run_command({"squeue", "-h", "-j", job->id, "-o", "%j %T"}, kSlurmCommandTimeoutS);
    if (!state.ok() || state.out.empty() || (!job->name.empty() && !state.out.starts_with(job->name + " "))) return 0;
    return run_command(argv, kSlurmCommandTimeoutS).ok() ? 1 : 0;
  } catch (const Error&) {
    return 0;  // no Slurm here: nothing this controller could cancel
  }
}

}  // namespace paratune::trial
