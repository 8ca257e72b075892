// One trial as one Slurm batch job (trial/slurm_job.h).
#include "paratune/trial/slurm_job.h"

#include <fcntl.h>
#include <signal.h>  // NOLINT(modernize-deprecated-headers): POSIX signal numbers, not in <csignal>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <chrono>
#include <exception>
#include <fstream>
#include <ostream>
#include <stop_token>
#include <thread>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "paratune/spec/error.h"
#include "paratune/trial/run_command.h"

namespace paratune::trial {
namespace {

using Clock = std::chrono::steady_clock;

// The exit code when sbatch refuses the job: before any step, so the configuration is "refused".
constexpr int kRefusedExitCode = 3;
// How often the job's output files are read (scontrol is asked every poll_s).
constexpr double kTailPeriodS = 0.2;
// After our scancel, how long to wait for Slurm to end the job before giving up on seeing it end.
constexpr double kCancelWaitS = 30;
// How long the job may be unknown to both scontrol and sacct (slurmctld unreachable, a failover)
// before it counts as lost.
constexpr double kMaxUnknownS = 60;
// sbatch's message when Slurm itself refuses the job (no such partition, more GPUs than a node has):
// the configuration's fault. Any other failure (a timeout, no answer) is the cluster's.
constexpr std::string_view kSlurmRefusal = "Batch job submission failed";

// Slurm's tools in a process group of their own: a stop signal to the trial must not cut an sbatch
// or scancel short.
CommandOutput slurm_command(const std::vector<std::string>& argv, double timeout_s) {
  return run_command(argv, timeout_s, /*own_process_group=*/true);
}

// "X:Y" -> {X, Y}; {0, 0} when malformed.
std::pair<int, int> parse_exit_code(std::string_view text) {
  const std::size_t colon = text.find(':');
  int code = 0, signal = 0;
  const std::string_view a = text.substr(0, colon);
  std::from_chars(a.data(), a.data() + a.size(), code);
  if (colon != std::string_view::npos) {
    const std::string_view b = text.substr(colon + 1);
    std::from_chars(b.data(), b.data() + b.size(), signal);
  }
  return {code, signal};
}

// The value of `key=` among the space-separated fields of scontrol's one-line output.
std::optional<std::string> field(std::string_view text, std::string_view key) {
  std::size_t at = 0;
  while (at < text.size()) {
    while (at < text.size() && (text[at] == ' ' || text[at] == '\n')) ++at;
    std::size_t end = at;
    while (end < text.size() && text[end] != ' ' && text[end] != '\n') ++end;
    const std::string_view token = text.substr(at, end - at);
    if (token.size() > key.size() && token.starts_with(key) && token[key.size()] == '=')
      return std::string(token.substr(key.size() + 1));
    at = end;
  }
  return std::nullopt;
}

// The first word of a state ("CANCELLED by 0" -> "CANCELLED"; "RUNNING+" in some versions).
std::string state_word(std::string_view state) {
  std::size_t end = 0;
  while (end < state.size() && ((state[end] >= 'A' && state[end] <= 'Z') || state[end] == '_')) ++end;
  return std::string(state.substr(0, end));
}

// A protocol line of this watcher's, with the trial's backend token (trial/protocol.h) when it has one.
std::string protocol_line(nlohmann::json j, const std::string& token) {
  if (!token.empty()) j["token"] = token;
  return "@paratune " + j.dump() + "\n";
}

// A file's bytes from `offset` on, to `sink`; only whole lines when `whole_lines` (the rest waits
// for its newline, so a protocol line of ours never lands in the middle of one of the job's).
void copy_new_bytes(const std::filesystem::path& file, std::uint64_t& offset, std::string& partial, std::ostream& sink,
                    bool whole_lines) {
  const int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return;
  std::array<char, 65536> buffer{};
  for (;;) {
    const ssize_t n = ::pread(fd, buffer.data(), buffer.size(), static_cast<off_t>(offset));
    if (n <= 0) break;
    offset += static_cast<std::uint64_t>(n);
    partial.append(buffer.data(), static_cast<std::size_t>(n));
  }
  ::close(fd);
  const std::size_t cut = whole_lines ? partial.rfind('\n') : partial.size() - 1;
  if (partial.empty() || cut == std::string::npos) return;
  sink.write(partial.data(), static_cast<std::streamsize>(cut + 1));
  sink.flush();
  partial.erase(0, cut + 1);
}

void sleep_unless_stopped(double seconds, const std::atomic<int>& stop) {
  const auto until = Clock::now() + std::chrono::duration<double>(seconds);
  while (Clock::now() < until && stop.load() == 0) std::this_thread::sleep_for(std::chrono::milliseconds(20));
}

}  // namespace

std::optional<SlurmJobState> parse_scontrol_job(std::string_view text) {
  const std::optional<std::string> state = field(text, "JobState");
  if (!state) return std::nullopt;
  SlurmJobState job;
  job.state = state_word(*state);
  job.reason = field(text, "Reason").value_or("");
  std::tie(job.exit_code, job.exit_signal) = parse_exit_code(field(text, "ExitCode").value_or("0:0"));
  job.nodes = field(text, "NodeList").value_or("");
  if (job.nodes == "(null)") job.nodes.clear();
  return job;
}

std::optional<SlurmJobState> parse_sacct_job(std::string_view text) {
  const std::string_view line = text.substr(0, text.find('\n'));
  std::array<std::string_view, 4> parts;
  std::size_t at = 0;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    const std::size_t bar = line.find('|', at);
    parts[i] = line.substr(at, bar == std::string_view::npos ? std::string_view::npos : bar - at);
    if (bar == std::string_view::npos) {
      if (i + 1 < parts.size()) return std::nullopt;
      break;
    }
    at = bar + 1;
  }
  SlurmJobState job;
  job.state = state_word(parts[0]);
  if (job.state.empty()) return std::nullopt;
  job.reason = std::string(parts[1]);
  std::tie(job.exit_code, job.exit_signal) = parse_exit_code(parts[2]);
  job.nodes = std::string(parts[3]);
  if (job.nodes == "None assigned") job.nodes.clear();
  return job;
}

SlurmPhase slurm_phase(std::string_view state) {
  // Slurm's job states (squeue(1), "JOB STATE CODES").
  static constexpr std::array<std::string_view, 8> kWaiting{"PENDING",      "REQUEUED",     "REQUEUE_HOLD", "REQUEUE_FED",
                                                            "CONFIGURING",  "RESV_DEL_HOLD", "SPECIAL_EXIT_HOLD", "POWER_UP_NODE"};
  static constexpr std::array<std::string_view, 7> kRunning{"RUNNING",   "COMPLETING", "SUSPENDED", "STOPPED",
                                                            "SIGNALING", "STAGE_OUT",  "RESIZING"};
  if (std::find(kWaiting.begin(), kWaiting.end(), state) != kWaiting.end()) return SlurmPhase::kWaiting;
  if (std::find(kRunning.begin(), kRunning.end(), state) != kRunning.end()) return SlurmPhase::kRunning;
  return SlurmPhase::kEnded;
}

SlurmJobEnd slurm_job_end(const SlurmJobState& job, std::string_view job_id, bool cancelled_by_us) {
  SlurmJobEnd end;
  const std::string where = job.nodes.empty() ? "" : " on " + job.nodes;
  const auto said = [&](const char* status, std::string reason) {
    end.ended = BackendEnd{status, std::move(reason)};
    return end;
  };
  if (job.state == "FAILED" && job.exit_code == 0 && job.exit_signal == 0)
    return said("failed", fmt::format("Slurm: job {}{} FAILED without an exit code ({})", job_id, where, job.reason));
  if (job.state == "COMPLETED" || job.state == "FAILED") {
    // The program's own end: its exit code, or the signal that killed it.
    end.exit_code = job.exit_code;
    end.exit_signal = job.exit_signal;
    return end;
  }
  if (job.state == "CANCELLED") {
    if (cancelled_by_us) {
      end.exit_code = 128 + SIGTERM;
      return end;
    }
    return said("interrupted", fmt::format("Slurm: job {}{} was cancelled outside paratune", job_id, where));
  }
  if (job.state == "OUT_OF_MEMORY")
    return said("oom", fmt::format("Slurm: job {}{} ran out of memory (OUT_OF_MEMORY)", job_id, where));
  if (job.state == "TIMEOUT" || job.state == "DEADLINE")
    return said("timeout", fmt::format("Slurm: job {}{} reached its time limit ({})", job_id, where, job.state));
  if (job.state == "PREEMPTED")
    return said("interrupted", fmt::format("Slurm: job {}{} was preempted", job_id, where));
  // NODE_FAIL, BOOT_FAIL, REVOKED, SPECIAL_EXIT, anything newer: the cluster's failure, not the program's.
  return said("failed", fmt::format("Slurm: job {}{} ended {}{}", job_id, where, job.state,
                                    job.reason.empty() || job.reason == "None" ? "" : " (" + job.reason + ")"));
}

std::optional<std::string> slurm_job_id_in(const std::filesystem::path& dir) {
  const std::optional<SlurmJobRecord> job = slurm_job_in(dir);
  return job ? std::optional<std::string>(job->id) : std::nullopt;
}

std::optional<SlurmJobRecord> slurm_job_in(const std::filesystem::path& dir) {
  std::ifstream in(dir / "slurm-job-id");
  SlurmJobRecord job;
  if (!(in >> job.id) || job.id.empty() || job.id.find_first_not_of("0123456789_") != std::string::npos) return std::nullopt;
  in >> job.name;  // absent in a job submitted without a name
  return job;
}

int run_slurm_job(const SlurmJobRequest& request, std::ostream& out, std::ostream& err, const std::atomic<int>& stop) {
  const std::filesystem::path dir = std::filesystem::absolute(request.dir);
  std::filesystem::create_directories(dir);
  // The batch script only runs its arguments: the trial's command never passes through a shell.
  const std::filesystem::path script = dir / "paratune-job.sh";
  {
    std::ofstream file(script, std::ios::trunc);
    file << "#!/bin/sh\n# paratune-slurm-job: the trial's command is this script's arguments, as sbatch passed them.\n"
            "exec \"$@\"\n";
    if (!file) throw Error(fmt::format("cannot write the batch script {}", script.string()));
  }
  std::filesystem::permissions(script, std::filesystem::perms::owner_all | std::filesystem::perms::group_read |
                                           std::filesystem::perms::group_exec);

  std::vector<std::string> sbatch{"sbatch",
                                  "--parsable",
                                  "--chdir=" + std::filesystem::current_path().string(),
                                  "--output=" + (dir / "slurm-%j.out").string(),
                                  "--error=" + (dir / "slurm-%j.err").string(),
                                  "--open-mode=append",
                                  "--export=ALL"};
  if (!request.job_name.empty()) sbatch.push_back("--job-name=" + request.job_name);
  sbatch.insert(sbatch.end(), request.sbatch_args.begin(), request.sbatch_args.end());
  sbatch.push_back(script.string());
  sbatch.insert(sbatch.end(), request.command.begin(), request.command.end());
  const CommandOutput submitted = slurm_command(sbatch, request.command_timeout_s);
  if (!submitted.ok()) {
    // One line: the runner keeps a trial's last stderr line as the reason.
    std::string said = last_lines(submitted.err, 3);
    std::replace(said.begin(), said.end(), '\n', ' ');
    const std::string why = fmt::format("({}): {}", submitted.describe_end(request.command_timeout_s), said);
    if (said.find(kSlurmRefusal) != std::string::npos) {
      err << "paratune-slurm-job: sbatch refused the job " << why << "\n";
      return kRefusedExitCode;
    }
    // Slurm did not answer: the job may exist all the same. Cancel it by its name, and fail the
    // trial as the cluster's failure, not the configuration's.
    if (!request.job_name.empty())
      slurm_command({"scancel", "--name=" + request.job_name}, request.command_timeout_s);
    out << protocol_line({{"ended", "failed"}, {"reason", "sbatch failed " + why}}, request.token);
    return 1;
  }
  // --parsable: "ID" or "ID;CLUSTER".
  std::string job_id = submitted.out.substr(0, submitted.out.find_first_of(";\n"));
  if (job_id.empty() || job_id.find_first_not_of("0123456789_") != std::string::npos) {
    err << fmt::format("paratune-slurm-job: sbatch printed no job id: '{}'\n", last_lines(submitted.out, 1));
    return kRefusedExitCode;
  }
  {
    std::ofstream id_file(dir / "slurm-job-id", std::ios::trunc);
    id_file << job_id << "\n" << request.job_name << "\n";
  }
  err << fmt::format("paratune-slurm-job: submitted Slurm job {}\n", job_id);
  err.flush();

  // scancel the moment a stop comes. The loop below may then be waiting on scontrol or sacct, which
  // a loaded slurmctld can hold for seconds, and a controller that dies takes this process down one
  // second after its SIGTERM (the trial runner's watchdog: SIGTERM, one second, SIGKILL): a scancel
  // issued only when the query returns could come too late and leave the job running. scancel runs
  // in a process group of its own, so it completes even if this process is killed meanwhile.
  CommandOutput cancel;
  std::string cancel_error;  // scancel could not be started
  std::jthread canceller([&](const std::stop_token& finished) {
    while (!finished.stop_requested() && stop.load() == 0) std::this_thread::sleep_for(std::chrono::milliseconds(20));
    if (finished.stop_requested()) return;
    try {
      cancel = slurm_command({"scancel", job_id}, request.command_timeout_s);
    } catch (const std::exception& e) {
      cancel_error = e.what();
    }
  });

  const std::filesystem::path out_file = dir / fmt::format("slurm-{}.out", job_id);
  const std::filesystem::path err_file = dir / fmt::format("slurm-{}.err", job_id);
  std::uint64_t out_offset = 0, err_offset = 0;
  std::string out_partial, err_partial;
  const auto tail = [&] {
    copy_new_bytes(out_file, out_offset, out_partial, out, /*whole_lines=*/true);
    copy_new_bytes(err_file, err_offset, err_partial, err, /*whole_lines=*/false);
  };
  const auto query = [&]() -> std::optional<SlurmJobState> {
    const CommandOutput shown = slurm_command({"scontrol", "show", "job", "-o", job_id}, request.command_timeout_s);
    if (shown.ok())
      if (auto job = parse_scontrol_job(shown.out)) return job;
    // Gone from slurmctld's memory (MinJobAge): accounting, where it runs, still knows.
    const CommandOutput accounted = slurm_command(
        {"sacct", "-j", job_id, "-X", "-n", "-P", "-o", "State,Reason,ExitCode,NodeList"}, request.command_timeout_s);
    return accounted.ok() ? parse_sacct_job(accounted.out) : std::nullopt;
  };

  bool cancelled = false, said_started = false;
  std::string said_waiting;  // the reason last said in a "queued" line
  Clock::time_point cancelled_at, known_at = Clock::now();
  for (;;) {
    if (stop.load() != 0 && !cancelled) {
      canceller.join();  // its scancel, issued when the stop came
      if (!cancel_error.empty())
        err << fmt::format("paratune-slurm-job: scancel {} failed: {}\n", job_id, cancel_error);
      else if (!cancel.ok())
        err << fmt::format("paratune-slurm-job: scancel {} failed ({}): {}\n", job_id,
                           cancel.describe_end(request.command_timeout_s), last_lines(cancel.err, 2));
      cancelled = true;
      cancelled_at = Clock::now();
    }
    const std::optional<SlurmJobState> job = query();
    tail();
    if (!job) {
      if (std::chrono::duration<double>(Clock::now() - known_at).count() > kMaxUnknownS) {
        // Gone, or slurmctld unreachable for a minute: try to cancel it before giving it up.
        slurm_command({"scancel", job_id}, request.command_timeout_s);
        out << protocol_line({{"ended", "failed"},
                              {"reason", fmt::format("Slurm did not know job {} for {:g} s (neither scontrol nor sacct); "
                                                     "cancelled",
                                                     job_id, kMaxUnknownS)}},
                             request.token);
        return 1;
      }
    } else {
      known_at = Clock::now();
      const SlurmPhase phase = slurm_phase(job->state);
      if (phase == SlurmPhase::kWaiting && said_waiting != job->reason) {
        out << protocol_line({{"queued", fmt::format("slurm job {} ({}: {})", job_id, job->state, job->reason)}}, request.token);
        said_waiting = job->reason;
        said_started = false;  // requeued jobs start again
      } else if (phase == SlurmPhase::kRunning && !said_started) {
        out << protocol_line({{"started", fmt::format("slurm job {} on {}", job_id, job->nodes)}}, request.token);
        said_started = true;
        said_waiting.clear();
      } else if (phase == SlurmPhase::kEnded) {
        // A short job may start and end between two polls: it ran, so say where.
        if (!said_started && !job->nodes.empty())
          out << protocol_line({{"started", fmt::format("slurm job {} on {}", job_id, job->nodes)}}, request.token);
        // Output written just before the end may reach the files a moment later (NFS).
        std::this_thread::sleep_for(std::chrono::milliseconds(300));
        tail();
        if (!out_partial.empty()) out << out_partial << "\n";
        if (!err_partial.empty()) err << err_partial;
        const SlurmJobEnd end = slurm_job_end(*job, job_id, cancelled);
        if (end.ended) out << protocol_line({{"ended", end.ended->status}, {"reason", end.ended->reason}}, request.token);
        out.flush();
        err.flush();
        if (end.exit_signal > 0 && end.exit_signal < 65) return -end.exit_signal;
        return end.ended ? 1 : end.exit_code;
      }
      out.flush();
    }
    if (cancelled && std::chrono::duration<double>(Clock::now() - cancelled_at).count() > kCancelWaitS) return 128 + SIGTERM;
    // Read the output often, ask Slurm every poll_s; a stop request is acted on at once.
    static const std::atomic<int> kNever{0};
    const std::atomic<int>& wake = cancelled ? kNever : stop;
    for (double waited = 0; waited < request.poll_s && wake.load() == 0; waited += kTailPeriodS) {
      sleep_unless_stopped(std::min(kTailPeriodS, request.poll_s - waited), wake);
      tail();
    }
  }
}

}  // namespace paratune::trial
