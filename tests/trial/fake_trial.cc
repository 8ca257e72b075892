// A trial program for the tests: speaks the @paratune protocol and misbehaves on request.
//
//   paratune_fake_trial [--steps N] [--step-time S] [--warmup S] [--peak-memory BYTES]
//                       [--crash-at K] [--hang-at K] [--oom-at K] [--garbage] [--no-steps]
//                       [--ignore-sigterm] [--grandchild] [--megatron] [--exit-code C]
//                       [--record FILE] [--log-run FILE] [--behave NAME] [--tick FILE]
//                       [--escape FILE] [--escape-bare] [--allocate-mb M] [args...]
//
// N defaults to $PARATUNE_MAX_STEPS (else 5). Step k (1-based) sleeps S seconds (the first one
// S + warmup) and reports it. --crash-at K exits with code 3 before step K; --hang-at K sleeps
// forever there; --oom-at K prints PyTorch's CUDA OOM message and exits 1; --garbage prints
// malformed protocol lines and binary noise between steps; --grandchild forks a child that sleeps
// (and ignores SIGTERM too with --ignore-sigterm), to test that stopping a trial stops its whole
// process group; --megatron reports steps as Megatron-LM log lines; --record FILE writes its
// arguments (one per line) and its PARATUNE_* environment to FILE, then exits 0 after the steps;
// --log-run FILE appends "PARATUNE_TRIAL_ID PARATUNE_PARAMS" to FILE when it starts (to count runs);
// --behave ok|crash|hang|oom|garbage|no-steps is the same as the flags above at step 2, so that a
// search-space parameter can choose how a trial misbehaves. --tick FILE does nothing else: it
// computes forever, appending a CLOCK_MONOTONIC timestamp to FILE (TRIAL_DIR: $PARATUNE_TRIAL_DIR/ticks) about every 0.2 ms of its own CPU
// time and a step line every 100 ticks (what `paratune harvest`'s test watches: when it ran).
// --escape FILE starts a process that leaves the trial's process group and session (setsid, then a
// second fork, so it is reparented), lets go of the output pipes, writes its pid to FILE and
// sleeps for ever (ignoring SIGTERM with --ignore-sigterm); with --escape-bare it also execs
// /bin/sleep with an empty environment, so nothing but a cgroup can tell it was the trial's.
// --allocate-mb M allocates and touches M MiB, 10 MiB every 20 ms, before its first step (a real
// out-of-memory for a scheduler's memory limit).
#include <fcntl.h>
#include <time.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace {

void sleep_s(double s) { std::this_thread::sleep_for(std::chrono::duration<double>(s)); }

}  // namespace

int main(int argc, char** argv) {
  int steps = std::getenv("PARATUNE_MAX_STEPS") ? std::atoi(std::getenv("PARATUNE_MAX_STEPS")) : 5;
  double step_time = 0.01, warmup = 0, peak = -1;
  int crash_at = -1, hang_at = -1, oom_at = -1, exit_code = 0, allocate_mb = 0;
  bool garbage = false, no_steps = false, ignore_term = false, grandchild = false, megatron = false;
  std::string record, log_run, escape;
  bool escape_bare = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&] { return i + 1 < argc ? std::string(argv[++i]) : std::string(); };
    if (a == "--steps") steps = std::stoi(next());
    else if (a == "--step-time") step_time = std::stod(next());
    else if (a == "--warmup") warmup = std::stod(next());
    else if (a == "--peak-memory") peak = std::stod(next());
    else if (a == "--crash-at") crash_at = std::stoi(next());
    else if (a == "--hang-at") hang_at = std::stoi(next());
    else if (a == "--oom-at") oom_at = std::stoi(next());
    else if (a == "--exit-code") exit_code = std::stoi(next());
    else if (a == "--garbage") garbage = true;
    else if (a == "--no-steps") no_steps = true;
    else if (a == "--ignore-sigterm") ignore_term = true;
    else if (a == "--grandchild") grandchild = true;
    else if (a == "--megatron") megatron = true;
    else if (a == "--record") record = next();
    else if (a == "--log-run") log_run = next();
    else if (a == "--escape") escape = next();
    else if (a == "--escape-bare") escape_bare = true;
    else if (a == "--allocate-mb") allocate_mb = std::stoi(next());
    else if (a == "--tick") {
      std::string file = next();  // TRIAL_DIR: $PARATUNE_TRIAL_DIR/ticks
      if (file == "TRIAL_DIR" && std::getenv("PARATUNE_TRIAL_DIR")) file = std::string(std::getenv("PARATUNE_TRIAL_DIR")) + "/ticks";
      const int fd = open(file.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
      for (long n = 1;; ++n) {
        timespec cpu{}, now{};
        clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &cpu);
        const double until = static_cast<double>(cpu.tv_sec) + cpu.tv_nsec * 1e-9 + 0.0002;
        do clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &cpu);
        while (static_cast<double>(cpu.tv_sec) + cpu.tv_nsec * 1e-9 < until);
        clock_gettime(CLOCK_MONOTONIC, &now);
        char line[64];
        const int len = std::snprintf(line, sizeof line, "%.6f\n", static_cast<double>(now.tv_sec) + now.tv_nsec * 1e-9);
        if (write(fd, line, static_cast<std::size_t>(len)) < 0) return 1;
        if (n % 100 == 0) std::printf("@paratune {\"step\": %ld, \"step_time_s\": 0.02}\n", n / 100 - 1), std::fflush(stdout);
      }
    }
    else if (a == "--behave") {
      const std::string b = next();
      if (b == "crash") crash_at = 2;
      else if (b == "hang") hang_at = 2;
      else if (b == "oom") oom_at = 2;
      else if (b == "garbage") garbage = true;
      else if (b == "no-steps") no_steps = true;
      else if (b != "ok") return 64;
    }
  }
  if (ignore_term) std::signal(SIGTERM, SIG_IGN);
  if (grandchild && fork() == 0) {
    for (;;) pause();  // keeps the SIGTERM disposition inherited above
  }
  if (!escape.empty()) {
    if (fork() == 0) {
      setsid();
      if (fork() != 0) _exit(0);
      const int null_fd = open("/dev/null", O_RDWR);
      for (int fd = 0; fd <= 2; ++fd) dup2(null_fd, fd);
      if (FILE* f = std::fopen(escape.c_str(), "w")) {
        std::fprintf(f, "%d\n", static_cast<int>(getpid()));
        std::fclose(f);
      }
      if (escape_bare) {
        char* const no_env[] = {nullptr};
        execle("/bin/sleep", "sleep", "1000", static_cast<char*>(nullptr), no_env);
      }
      for (;;) pause();
    }
    for (int i = 0; i < 500 && access(escape.c_str(), F_OK) != 0; ++i) sleep_s(0.01);  // it is out before we go on
  }
  if (!log_run.empty()) {
    FILE* f = std::fopen(log_run.c_str(), "a");
    const char* id = std::getenv("PARATUNE_TRIAL_ID");
    const char* params = std::getenv("PARATUNE_PARAMS");
    std::fprintf(f, "%s %s\n", id ? id : "-", params ? params : "-");
    std::fclose(f);
  }
  if (!record.empty()) {
    FILE* f = std::fopen(record.c_str(), "w");
    for (int i = 0; i < argc; ++i) std::fprintf(f, "arg=%s\n", argv[i]);
    for (const char* key : {"PARATUNE_TRIAL_ID", "PARATUNE_TRIAL_DIR", "PARATUNE_PARAMS", "PARATUNE_MAX_STEPS",
                            "CUDA_VISIBLE_DEVICES"})
      std::fprintf(f, "%s=%s\n", key, std::getenv(key) ? std::getenv(key) : "(unset)");
    std::fclose(f);
  }
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  std::printf("fake trial starting, %d steps\n", steps);
  std::vector<std::vector<char>> held;
  for (int mb = 0; mb < allocate_mb; mb += 10) {
    held.emplace_back(std::size_t{10} << 20, 'x');
    sleep_s(0.02);
  }
  if (peak >= 0) std::printf("@paratune {\"peak_memory_bytes\": %.0f}\n", peak);
  for (int k = 1; k <= steps; ++k) {
    if (k == crash_at) {
      std::fprintf(stderr, "Traceback: something broke at step %d\n", k);
      return 3;
    }
    if (k == hang_at) {
      std::printf("hanging at step %d\n", k);
      for (;;) pause();
    }
    if (k == oom_at) {
      std::fprintf(stderr, "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\n");
      return 1;
    }
    const double t = step_time + (k == 1 ? warmup : 0);
    sleep_s(t);
    if (garbage) {
      std::printf("@paratune {\"step\": %d, \"step_time_s\": \n", k);
      std::printf("@paratune [\"not\", \"an\", \"object\"]\n");
      std::fwrite("\x00\x01\xff\xfe binary\n", 1, 12, stdout);
    }
    if (no_steps) continue;
    if (megatron)
      std::printf(" iteration %8d/%8d | elapsed time per iteration (ms): %.3f | lm loss: 1.0\n", k, steps, t * 1000);
    else
      std::printf("@paratune {\"step\": %d, \"step_time_s\": %.6f}\n", k, t);
    std::printf("@paratune {\"metric\": \"loss\", \"value\": %.4f, \"step\": %d}\n", 10.0 / k, k);
  }
  return exit_code;
}
