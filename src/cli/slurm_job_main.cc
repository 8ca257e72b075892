// paratune-slurm-job: runs one trial's command as a Slurm batch job and mirrors it here (output,
// start, end) for the trial runner; the Slurm backend (trial/slurm_backend.h) launches it, one per
// trial. What it does: trial/slurm_job.h.
//
//   paratune-slurm-job [--poll-s S] [SBATCH_OPTION...] -- COMMAND [ARG...]
//
// The trial's directory is $PARATUNE_TRIAL_DIR (the runner sets it). SIGTERM, SIGINT or SIGHUP
// cancel the job (scancel); so does the controller's death (the parent-death signal is SIGTERM).
#include <sys/prctl.h>

#include <atomic>
#include <cctype>
#include <cstdint>
#include <cstdio>
#include <csignal>
#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

#include "paratune/spec/error.h"
#include "paratune/trial/slurm_job.h"

namespace {

std::atomic<int> g_stop{0};
void on_stop_signal(int sig) { g_stop.store(sig); }

int usage(const std::string& problem) {
  std::cerr << "paratune-slurm-job: " << problem
            << "\nusage: paratune-slurm-job [--poll-s S] [SBATCH_OPTION...] -- COMMAND [ARG...]  (in $PARATUNE_TRIAL_DIR)\n";
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  // The runner starts trials with SIGKILL as their parent-death signal; this program must live
  // long enough to cancel its job when the controller dies.
  prctl(PR_SET_PDEATHSIG, SIGTERM);
  struct sigaction action {};
  action.sa_handler = on_stop_signal;
  sigemptyset(&action.sa_mask);
  for (int sig : {SIGTERM, SIGINT, SIGHUP}) sigaction(sig, &action, nullptr);
  // A dead controller closes the pipes this program writes the job's output to: writing must fail
  // quietly (EPIPE), not end the program before it cancels the job.
  std::signal(SIGPIPE, SIG_IGN);

  paratune::trial::SlurmJobRequest request;
  int i = 1;
  for (; i < argc && std::string(argv[i]) != "--"; ++i) {
    const std::string arg = argv[i];
    if (arg == "--poll-s") {
      if (i + 1 >= argc) return usage("--poll-s needs a number of seconds");
      char* end = nullptr;
      request.poll_s = std::strtod(argv[++i], &end);
      if (*end != '\0' || !(request.poll_s >= 0.05 && request.poll_s <= 3600))
        return usage(std::string("--poll-s ") + argv[i] + ": must be a number of seconds from 0.05 to 3600");
    } else {
      request.sbatch_args.push_back(arg);
    }
  }
  if (i + 1 >= argc) return usage("no command after --");
  request.command.assign(argv + i + 1, argv + argc);
  const char* dir = std::getenv("PARATUNE_TRIAL_DIR");
  if (dir == nullptr || *dir == '\0') return usage("PARATUNE_TRIAL_DIR is not set (the trial runner sets it)");
  request.dir = dir;
  // The job's name: paratune-STUDY-NUMBER (the trial's id), in the characters Slurm shows plainly,
  // then a hash of the trial's directory: two studies named alike never share a job name, so a job
  // may be cancelled by its name.
  if (const char* id = std::getenv("PARATUNE_TRIAL_ID"); id != nullptr && *id != '\0') {
    request.job_name = "paratune-";
    for (const char* c = id; *c != '\0' && request.job_name.size() < 100; ++c)
      request.job_name.push_back(std::isalnum(static_cast<unsigned char>(*c)) || *c == '-' || *c == '_' || *c == '.' ? *c : '_');
    std::uint32_t hash = 2166136261U;  // FNV-1a, 32 bits
    for (const char* c = dir; *c != '\0'; ++c) hash = (hash ^ static_cast<unsigned char>(*c)) * 16777619U;
    char suffix[16];
    std::snprintf(suffix, sizeof suffix, "-%08x", hash);
    request.job_name += suffix;
  }
  // The runner's token for this trial's backend lines; the job must not see it.
  if (const char* token = std::getenv("PARATUNE_BACKEND_TOKEN"); token != nullptr) {
    request.token = token;
    ::unsetenv("PARATUNE_BACKEND_TOKEN");
  }
  try {
    const int code = paratune::trial::run_slurm_job(request, std::cout, std::cerr, g_stop);
    std::cout.flush();
    std::cerr.flush();
    if (code < 0) {
      // Mirror the signal that killed the job's program.
      std::signal(-code, SIG_DFL);
      std::raise(-code);
    }
    return code < 0 ? 128 - code : code;
  } catch (const paratune::Error& e) {
    std::cerr << "paratune-slurm-job: " << e.what() << "\n";
    return 1;
  } catch (const std::exception& e) {
    std::cerr << "paratune-slurm-job: internal error: " << e.what() << "\n";
    return 1;
  }
}
