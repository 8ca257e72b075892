// The SSH backend: quoting, the hosts file and placement without a server; then trials over a real
// sshd the test starts (tests/support/ssh_server.h): measured like local trials, hostile values
// arriving byte for byte, and no remote process left after a stop, a timeout, a lost connection
// or a controller killed with SIGKILL.
#include "paratune/trial/ssh_backend.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <thread>

#include "../support/require_servers.h"
#include "../support/ssh_server.h"
#include "paratune/spec/error.h"
#include "../support/test_files.h"

namespace paratune::trial {
namespace {

using paratune::testing::read_file;
using paratune::testing::SshServer;

std::filesystem::path ssh_trial_dir(const std::string& name) { return paratune::testing::fresh_test_dir("paratune_ssh", name); }

// What POSIX sh makes of `words`: the output of `printf WORDS`, run by /bin/sh.
std::string through_sh(const std::string& words) {
  const std::string command = "printf " + words;
  int fds[2];
  if (::pipe(fds) != 0) return "<pipe failed>";
  const pid_t child = ::fork();
  if (child == 0) {
    ::dup2(fds[1], 1);
    ::close(fds[0]);
    ::execl("/bin/sh", "sh", "-c", command.c_str(), nullptr);
    ::_exit(127);
  }
  ::close(fds[1]);
  std::string out;
  std::array<char, 4096> buffer{};
  for (ssize_t n; (n = ::read(fds[0], buffer.data(), buffer.size())) > 0;) out.append(buffer.data(), static_cast<std::size_t>(n));
  ::close(fds[0]);
  ::waitpid(child, nullptr, 0);
  return out;
}

const std::vector<std::string> kHostile = {"a'b",
                                           "$(touch HOSTILE_MARK)",
                                           "`touch HOSTILE_MARK`",
                                           ";touch HOSTILE_MARK",
                                           "x && touch HOSTILE_MARK",
                                           "* ?",
                                           "line1\nline2",
                                           "",
                                           "'",
                                           "\\'\\\"",
                                           "$HOME ${PATH}",
                                           "\xff\xfe non-UTF-8 \x80",
                                           "-n",
                                           " lead and trail "};

TEST(ShellSingleQuote, EveryValueArrivesByteForByte) {
  EXPECT_EQ(shell_single_quote(""), "''");
  EXPECT_EQ(shell_single_quote("abc"), "'abc'");
  EXPECT_EQ(shell_single_quote("a'b"), "'a'\\''b'");
  const std::filesystem::path dir = ssh_trial_dir("quote");
  const std::filesystem::path cwd = std::filesystem::current_path();
  std::filesystem::current_path(dir);
  for (const std::string& value : kHostile) EXPECT_EQ(through_sh("'%s' " + shell_single_quote(value)), value) << value;
  // Several words in one string, as ssh joins them: each stays one word.
  std::string joined;
  for (const std::string& value : kHostile) joined += " " + shell_single_quote(value);
  std::string expected;
  for (const std::string& value : kHostile) expected += "[" + value + "]";
  EXPECT_EQ(through_sh("'[%s]'" + joined), expected);
  std::filesystem::current_path(cwd);
  EXPECT_FALSE(std::filesystem::exists(dir / "HOSTILE_MARK"));
}

TEST(SshHosts, ParsesHostsSlotsDevicesAndComments) {
  const std::vector<SshHost> hosts = parse_hosts("# gpus\n\ngpu-1 slots=2 slot-devices=0,1;2,3  # two\n"
                                                 "  alice@gpu-2\t\nalias-3 slots=3\r\n",
                                                 "hosts.txt");
  ASSERT_EQ(hosts.size(), 3u);
  EXPECT_EQ(hosts[0].destination, "gpu-1");
  EXPECT_EQ(hosts[0].slots, 2);
  EXPECT_EQ(hosts[0].slot_devices, (std::vector<std::string>{"0,1", "2,3"}));
  EXPECT_EQ(hosts[1].destination, "alice@gpu-2");
  EXPECT_EQ(hosts[1].slots, 1);
  EXPECT_EQ(hosts[2].slots, 3);
}

TEST(SshHosts, ErrorsNameFileLineValueAndRule) {
  const auto message = [](const std::string& text) {
    try {
      parse_hosts(text, "hosts.txt");
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("(no error)");
  };
  std::string m = message("a\nb slots=0\n");
  EXPECT_NE(m.find("hosts.txt:2"), std::string::npos) << m;
  EXPECT_NE(m.find("'slots=0'"), std::string::npos) << m;
  EXPECT_NE(m.find("from 1 to"), std::string::npos) << m;
  m = message("-oProxyCommand=x\n");
  EXPECT_NE(m.find("hosts.txt:1"), std::string::npos) << m;
  EXPECT_NE(m.find("'-'"), std::string::npos) << m;
  m = message("a colour=blue\n");
  EXPECT_NE(m.find("'colour=blue'"), std::string::npos) << m;
  m = message("a slots=2 slot-devices=0\n");
  EXPECT_NE(m.find("one device list per slot"), std::string::npos) << m;
  m = message("a slot-devices=x\n");
  EXPECT_NE(m.find("'slot-devices=x'"), std::string::npos) << m;
  m = message("# nothing\n");
  EXPECT_NE(m.find("names no host"), std::string::npos) << m;
  EXPECT_THROW(parse_hosts_file("/nonexistent/hosts"), Error);
  EXPECT_THROW(SshBackend({{"h", 1, {}}}, SshOptions{{"-F/etc/passwd"}}), Error);
}

TEST(SshBackendPlacement, ATrialNeverSpansHosts) {
  const SshBackend backend({{"a", 2, {}}, {"b", 3, {}}});
  EXPECT_EQ(backend.slots(), 5);
  EXPECT_EQ(backend.max_trial_slots(), 3);
  std::vector<char> busy(5, 0);
  EXPECT_EQ(backend.place(busy, 2), (std::vector<int>{0, 1}));
  EXPECT_EQ(backend.place(busy, 3), (std::vector<int>{2, 3, 4}));  // a cannot hold 3
  EXPECT_TRUE(backend.place(busy, 4).empty());
  busy[0] = 1;
  EXPECT_EQ(backend.place(busy, 1), (std::vector<int>{1}));
  EXPECT_EQ(backend.place(busy, 2), (std::vector<int>{2, 3}));  // a has 1 free: b
  busy[2] = 1;
  EXPECT_TRUE(backend.place(busy, 3).empty());  // 3 free slots, but never on one host
  EXPECT_EQ(backend.host_of(1), 0u);
  EXPECT_EQ(backend.host_of(2), 1u);
}

TEST(SshBackendCommand, BatchModeFirstThenOptionsAndTheQuotedRemoteCommand) {
  const SshBackend backend({{"a", 1, {}}, {"bob@b", 2, {"0", "1"}}}, SshOptions{{"ConnectTimeout=3"}, "/cfg"});
  const TrialCommand trial{{"prog", "x y"}, "/t/dir", {{"PARATUNE_TRIAL_ID", "7"}}, 2.5};
  const LaunchCommand c = backend.command_for(trial, {1, 2});
  ASSERT_GE(c.argv.size(), 8u);
  EXPECT_EQ(c.argv[0], "ssh");
  EXPECT_EQ(std::vector<std::string>(c.argv.begin() + 1, c.argv.begin() + 7),
            (std::vector<std::string>{"-F", "/cfg", "-o", "BatchMode=yes", "-o", "ConnectTimeout=3"}));
  EXPECT_EQ(c.argv[c.argv.size() - 2], "bob@b");
  EXPECT_EQ(c.argv[c.argv.size() - 3], "--");
  const std::string& remote = c.argv.back();
  EXPECT_NE(remote.find(" 'CUDA_VISIBLE_DEVICES=0,1'"), std::string::npos) << remote;
  EXPECT_NE(remote.find(" 'PARATUNE_TRIAL_ID=7'"), std::string::npos);
  EXPECT_NE(remote.find(" -- 'prog' 'x y'"), std::string::npos);
  EXPECT_NE(remote.find(" '3' '/t/dir' "), std::string::npos);  // the grace, rounded up
  EXPECT_EQ(c.location, "ssh bob@b");
  EXPECT_TRUE(c.keep_stdin_open);
  EXPECT_TRUE(c.env.empty());  // nothing for the local ssh: all of it travels
  EXPECT_THROW((void)backend.command_for({{"p"}, "/d", {{"BAD-NAME", "1"}}, 1}, {0}), Error);
}

TEST(SshBackendCommand, ExitCode255IsTheConnectionUnlessTheProgramSaidSo) {
  const SshBackend backend({{"gpu-7", 1, {}}});
  LaunchCommand c;
  c.location = "ssh gpu-7";
  const std::optional<std::string> lost = backend.launcher_failure(c, 255, "Connection closed by 10.0.0.7 port 22");
  ASSERT_TRUE(lost);
  EXPECT_NE(lost->find("gpu-7"), std::string::npos) << *lost;
  EXPECT_NE(lost->find("Connection closed by 10.0.0.7 port 22"), std::string::npos) << *lost;
  EXPECT_FALSE(backend.launcher_failure(c, 255, std::string(kProgramExit255Line)));
  EXPECT_FALSE(backend.launcher_failure(c, 3, "boom"));
  EXPECT_FALSE(LocalBackend(1).launcher_failure(c, 255, ""));
}

// ---- Over a real sshd. ----

// Live processes (not zombies: their environment reads empty) whose environment holds `needle` ("PARATUNE_TRIAL_DIR=/...").
std::vector<pid_t> processes_with(const std::string& needle) {
  std::vector<pid_t> found;
  for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
    const std::string name = entry.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos || std::stol(name) == ::getpid()) continue;
    std::ifstream in(entry.path() / "environ", std::ios::binary);
    std::string var;
    while (std::getline(in, var, '\0'))
      if (var == needle) {
        found.push_back(static_cast<pid_t>(std::stol(name)));
        break;
      }
  }
  return found;
}

// The remote trial's processes: the program and what it started carry PARATUNE_SSH_TRIAL.
std::vector<pid_t> remote_processes_of(const std::filesystem::path& dir) {
  std::vector<pid_t> out;
  for (pid_t pid : processes_with("PARATUNE_TRIAL_DIR=" + dir.string())) {
    std::ifstream in("/proc/" + std::to_string(pid) + "/environ", std::ios::binary);
    std::string var;
    while (std::getline(in, var, '\0'))
      if (var.rfind("PARATUNE_SSH_TRIAL=", 0) == 0) {
        out.push_back(pid);
        break;
      }
  }
  return out;
}

// Whether every remote process of the trial is gone within `seconds` (the remote side stops them
// asynchronously when a connection breaks).
bool remote_gone_within(const std::filesystem::path& dir, double seconds) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (!remote_processes_of(dir).empty()) {
    if (std::chrono::steady_clock::now() > until) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return true;
}

// Gone, or a zombie (killed, and its new parent -- init here -- has not reaped it yet).
bool pid_gone(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string text;
  if (!std::getline(stat, text)) return true;
  const std::size_t close = text.rfind(')');
  return close != std::string::npos && close + 2 < text.size() && text[close + 2] == 'Z';
}

// pid_gone within `seconds`: a SIGKILLed process may take a moment to leave /proc (it failed once in
// CI under the sanitizers' load, 2026-11-27, right after the remote side had stopped everything).
bool pid_gone_within(pid_t pid, double seconds) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (!pid_gone(pid)) {
    if (std::chrono::steady_clock::now() > until) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return true;
}

class SshTrials : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { server_ = new SshServer(); }
  static void TearDownTestSuite() {
    delete server_;
    server_ = nullptr;
  }
  void SetUp() override {
    PARATUNE_NEED_SERVER(server_->running() ? std::string() : server_->skip_reason());
  }
  static SshBackend backend(int slots = 1, std::vector<std::string> devices = {}) {
    SshOptions options;
    options.config_file = server_->client_config().string();
    return SshBackend({{SshServer::host(), slots, std::move(devices)}}, options);
  }
  static TrialLaunch launch(const std::string& id, std::vector<std::string> args, TrialLimits limits = {}) {
    TrialLaunch l;
    l.id = id;
    l.argv = {PARATUNE_FAKE_TRIAL};
    l.argv.insert(l.argv.end(), args.begin(), args.end());
    l.dir = ssh_trial_dir(id) / "trial";  // not created here: the remote side makes it
    l.params_json = R"({"tp":2})";
    if (limits.grace_s == 10) limits.grace_s = 1;
    l.limits = limits;
    return l;
  }
  static TrialResult run_one(const Backend& b, const TrialLaunch& l, const TrialRunner::StepCallback& on_step = {},
                             const std::function<void()>& while_running = {}) {
    TrialRunner runner(b);
    runner.start(l);
    for (int i = 0; i < 600; ++i) {
      std::vector<TrialResult> done = runner.wait(0.1, on_step);
      if (!done.empty()) return done.front();
      if (while_running) while_running();
    }
    ADD_FAILURE() << "trial " << l.id << " did not end within 60 s";
    return {};
  }
  static SshServer* server_;
};
SshServer* SshTrials::server_ = nullptr;

TEST_F(SshTrials, CompletedTrialIsMeasuredLikeALocalOne) {
  const SshBackend ssh = backend();
  const TrialLaunch l = launch("ok", {"--steps", "6", "--step-time", "0.02", "--peak-memory", "1e9"});
  const TrialResult r = run_one(ssh, l);
  EXPECT_EQ(r.status, TrialStatus::kCompleted) << r.reason;
  EXPECT_EQ(r.location, "ssh paratune-test");
  EXPECT_EQ(r.exit_code, 0);
  ASSERT_EQ(r.output.steps.size(), 6u);
  EXPECT_GT(r.output.steps.front().step_time_s, 0.0);
  ASSERT_TRUE(r.output.peak_memory_bytes);
  EXPECT_EQ(*r.output.peak_memory_bytes, 1e9);
  EXPECT_GT(r.throughput.steps_per_s, 0.0);
  // Logs streamed back over the connection, written here.
  EXPECT_NE(read_file(r.stdout_path).find("@paratune"), std::string::npos);
  const LocalBackend local(1);
  const TrialResult here = run_one(local, launch("ok-local", {"--steps", "6", "--step-time", "0.02", "--peak-memory", "1e9"}));
  EXPECT_EQ(here.status, r.status);
  EXPECT_EQ(here.output.steps.size(), r.output.steps.size());
  EXPECT_EQ(here.location, "local");
}

TEST_F(SshTrials, HostileValuesArriveByteForByteAndNothingRuns) {
  const std::filesystem::path dir = ssh_trial_dir("hostile");
  const SshBackend ssh = backend(2, {"4", "5"});
  std::vector<std::string> args = {"--steps", "2", "--record", (dir / "record.txt").string()};
  args.insert(args.end(), kHostile.begin(), kHostile.end());
  TrialLaunch l = launch("hostile", args);
  l.dir = dir / "trial $(touch HOSTILE_MARK) 'q'";
  l.params_json = R"json({"choice":"$(touch HOSTILE_MARK)","q":"a'b;rm -rf ~"})json";
  l.env = {{"PARATUNE_CHECKPOINT_DIR", "`touch HOSTILE_MARK`\n;x"}};
  l.max_steps = 2;
  l.slots = 1;
  const TrialResult r = run_one(ssh, l);
  ASSERT_EQ(r.status, TrialStatus::kCompleted) << r.reason << "\n" << read_file(r.stderr_path);
  std::string expected = std::string("arg=") + PARATUNE_FAKE_TRIAL + "\n";
  for (const std::string& a : args) expected += "arg=" + a + "\n";
  expected += "PARATUNE_TRIAL_ID=hostile\nPARATUNE_TRIAL_DIR=" + l.dir.string() + "\nPARATUNE_PARAMS=" + l.params_json +
              "\nPARATUNE_MAX_STEPS=2\nCUDA_VISIBLE_DEVICES=4\n";
  EXPECT_EQ(read_file(dir / "record.txt"), expected);
  // Nothing was executed: no marker in the trial's directory (the remote cwd), its parent, or home.
  EXPECT_FALSE(std::filesystem::exists(l.dir / "HOSTILE_MARK"));
  EXPECT_FALSE(std::filesystem::exists(dir / "HOSTILE_MARK"));
  if (const char* home = std::getenv("HOME")) EXPECT_FALSE(std::filesystem::exists(std::filesystem::path(home) / "HOSTILE_MARK"));
}

TEST_F(SshTrials, ExitStatusPassesThroughAndProgramsOwn255IsNotALostConnection) {
  const SshBackend ssh = backend();
  TrialResult r = run_one(ssh, launch("crash", {"--crash-at", "2"}));
  EXPECT_EQ(r.status, TrialStatus::kFailed);
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_NE(r.reason.find("exit code 3"), std::string::npos) << r.reason;
  r = run_one(ssh, launch("exit255", {"--steps", "1", "--exit-code", "255"}));
  EXPECT_EQ(r.status, TrialStatus::kFailed);
  EXPECT_EQ(r.exit_code, 255);
  EXPECT_EQ(r.reason.find("connection"), std::string::npos) << r.reason;
}

TEST_F(SshTrials, EarlyStopLeavesNoRemoteProcessEvenThoseIgnoringSigtermOrEscaping) {
  const SshBackend ssh = backend();
  const std::filesystem::path pid_file = ssh_trial_dir("escape") / "escaped.pid";
  const TrialLaunch l = launch("early", {"--steps", "1000", "--step-time", "0.05", "--ignore-sigterm", "--grandchild",
                                         "--escape", pid_file.string()});
  bool saw_remote = false;
  const TrialResult r = run_one(
      ssh, l,
      [&](const std::string&, const StepReport&, const TrialOutput& so_far) {
        if (so_far.steps.size() == 2) saw_remote = remote_processes_of(l.dir).size() >= 3;  // leader, grandchild, escaped
        return so_far.steps.size() < 3;
      });
  EXPECT_EQ(r.status, TrialStatus::kEarlyStopped) << r.reason;
  EXPECT_TRUE(saw_remote);
  // The remote side stopped everything before its exit status came back (a SIGKILLed process may
  // take a moment to be gone from /proc).
  EXPECT_TRUE(remote_gone_within(l.dir, 5)) << remote_processes_of(l.dir).size();
  const std::string escaped = read_file(pid_file);
  ASSERT_FALSE(escaped.empty());
  EXPECT_TRUE(pid_gone_within(static_cast<pid_t>(std::stol(escaped)), 5));
}

TEST_F(SshTrials, TimeoutAndHangLeaveNoRemoteProcess) {
  const SshBackend ssh = backend();
  TrialLimits limits;
  limits.timeout_s = 1;
  TrialLaunch l = launch("timeout", {"--steps", "1000", "--step-time", "0.05", "--ignore-sigterm", "--grandchild"}, limits);
  TrialResult r = run_one(ssh, l);
  EXPECT_EQ(r.status, TrialStatus::kTimeout) << r.reason;
  EXPECT_TRUE(remote_gone_within(l.dir, 5)) << remote_processes_of(l.dir).size();
  limits = {};
  limits.hang_s = 1;
  l = launch("hang", {"--hang-at", "2"}, limits);
  r = run_one(ssh, l);
  EXPECT_EQ(r.status, TrialStatus::kTimeout) << r.reason;
  EXPECT_NE(r.reason.find("hung"), std::string::npos);
  EXPECT_TRUE(remote_gone_within(l.dir, 5)) << remote_processes_of(l.dir).size();
}

TEST_F(SshTrials, LostConnectionFailsTheTrialNamingTheHostAndStopsTheRemoteGroup) {
  const SshBackend ssh = backend();
  const TrialLaunch l = launch("lost", {"--steps", "100000", "--step-time", "0.05", "--grandchild"});
  bool killed = false;
  const TrialResult r = run_one(ssh, l, [&](const std::string&, const StepReport&, const TrialOutput& so_far) {
    if (!killed && so_far.steps.size() >= 2) {
      // The server side of the connection dies (sshd's session processes), as a crashed host's would.
      for (pid_t pid : server_->session_pids()) ::kill(pid, SIGKILL);
      killed = true;
    }
    return true;
  });
  ASSERT_TRUE(killed);
  EXPECT_EQ(r.status, TrialStatus::kFailed);
  EXPECT_EQ(r.exit_code, 255);
  EXPECT_NE(r.reason.find("paratune-test"), std::string::npos) << r.reason;
  EXPECT_NE(r.reason.find("ssh's last stderr line"), std::string::npos) << r.reason;
  // End-of-file on the wrapper's stdin, then TERM and KILL after the grace (1 s).
  EXPECT_TRUE(remote_gone_within(l.dir, 20)) << remote_processes_of(l.dir).size();
}

TEST_F(SshTrials, ControllerKilledWithSigkillLeavesNoRemoteProcess) {
  const std::filesystem::path dir = ssh_trial_dir("kill9");
  const TrialLaunch l = launch("kill9", {"--steps", "100000", "--step-time", "0.05", "--ignore-sigterm", "--grandchild"});
  const pid_t controller = ::fork();
  if (controller == 0) {
    const SshBackend ssh = backend();
    TrialRunner runner(ssh);
    runner.start(l);
    for (;;) (void)runner.wait(1);
  }
  // Wait for the remote trial to run (its leader and grandchild), then kill the controller.
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (remote_processes_of(l.dir).size() < 2 && std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  ASSERT_GE(remote_processes_of(l.dir).size(), 2u);
  ::kill(controller, SIGKILL);
  ::waitpid(controller, nullptr, 0);
  EXPECT_TRUE(remote_gone_within(l.dir, 20)) << remote_processes_of(l.dir).size();
}

TEST_F(SshTrials, UnreachableHostFailsWithSshsReason) {
  SshOptions options;
  options.config_file = server_->client_config().string();
  options.options = {"Port=1", "ConnectTimeout=5"};  // before the config file's Port: nothing listens on 1
  const SshBackend ssh({{SshServer::host(), 1, {}}}, options);
  const TrialResult r = run_one(ssh, launch("unreachable", {"--steps", "2"}));
  EXPECT_EQ(r.status, TrialStatus::kFailed);
  EXPECT_NE(r.reason.find("paratune-test"), std::string::npos) << r.reason;
  EXPECT_NE(r.reason.find("ssh's last stderr line: ssh: connect to host"), std::string::npos) << r.reason;
}

}  // namespace
}  // namespace paratune::trial
