// `paratune tune --backend ssh`: its flags, and both kinds of study run over a real sshd the test
// starts (tests/support/ssh_server.h), with hostile categorical values arriving byte for byte.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "../support/require_servers.h"
#include "../support/ssh_server.h"
#include "cli_util.h"
#include "paratune/store/sqlite_store.h"
#include "../support/test_files.h"

namespace {

using paratune::testing::read_file;
using paratune::testing::write_file;
using paratune::testing::Result;
using paratune::testing::run;
using paratune::testing::SshServer;

std::filesystem::path ssh_cli_dir(const std::string& name) { return paratune::testing::fresh_test_dir("paratune_ssh_cli", name); }

TEST(SshCli, BackendFlagsAreCheckedBeforeAnyTrialRuns) {
  const auto dir = ssh_cli_dir("flags");
  write_file(dir / "space.yaml", "parameters:\n  x: [1, 2]\n");
  write_file(dir / "hosts.txt", "h1 slots=2\nh2 slots=many\n");
  const std::string base = "tune --space " + (dir / "space.yaml").string() + " --study " + (dir / "s.db").string() +
                           " --command 'true {x}' ";
  Result r = run(base + "--backend ssh");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.output.find("--hosts"), std::string::npos) << r.output;
  r = run(base + "--backend carrier-pigeon");
  EXPECT_EQ(r.exit_code, 2);
  r = run(base + "--backend ssh --hosts " + (dir / "hosts.txt").string());
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.output.find("hosts.txt:2: 'slots=many'"), std::string::npos) << r.output;
  write_file(dir / "hosts.txt", "h1 slots=2\n");
  r = run(base + "--backend ssh --hosts " + (dir / "hosts.txt").string() + " --slots 2");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.output.find("--slots: belongs to --backend local"), std::string::npos) << r.output;
  r = run(base + "--hosts " + (dir / "hosts.txt").string());
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.output.find("--hosts: belongs to --backend ssh"), std::string::npos) << r.output;
  r = run(base + "--backend ssh --hosts " + (dir / "hosts.txt").string() + " --ssh-option=-oProxyCommand=x");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.output.find("--ssh-option '-oProxyCommand=x': an ssh option is given as NAME=VALUE"), std::string::npos)
      << r.output;
  EXPECT_FALSE(std::filesystem::exists(dir / "s.trials"));
}

class SshCliStudy : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { server_ = new SshServer(); }
  static void TearDownTestSuite() {
    delete server_;
    server_ = nullptr;
  }
  void SetUp() override {
    PARATUNE_NEED_SERVER(server_->running() ? std::string() : server_->skip_reason());
  }
  static std::string ssh_flags(const std::filesystem::path& dir) {
    write_file(dir / "hosts.txt", "# the test's sshd\n" + SshServer::host() + " slots=2\n");
    return " --backend ssh --hosts " + (dir / "hosts.txt").string() + " --ssh-config " +
           server_->client_config().string() + " --ssh-option ConnectTimeout=10 ";
  }
  static SshServer* server_;
};
SshServer* SshCliStudy::server_ = nullptr;

// Hostile values as YAML strings (single-quoted YAML: '' is one quote).
const char* kSshHostileSpace = R"(parameters:
  x: ['$(touch HOSTILE_MARK)', 'a''b', ';rm -rf ~', '`touch HOSTILE_MARK` && *']
)";
const std::vector<std::string> kHostileValues = {"$(touch HOSTILE_MARK)", "a'b", ";rm -rf ~", "`touch HOSTILE_MARK` && *"};

// Every trial of the study under `dir` ran over ssh, recorded the value it got, and nothing ran.
void expect_hostile_values_arrived(const std::filesystem::path& dir, std::size_t trials) {
  const paratune::store::SqliteStudyStore store(dir / "s.db");
  std::set<std::string> seen;
  std::size_t n = 0;
  for (const auto& study : store.studies())
    for (const auto& t : store.trials(study.id)) {
      ++n;
      EXPECT_EQ(t.status, "completed") << t.reason;
      EXPECT_EQ(nlohmann::json::parse(t.config_json).at("backend"), "ssh");
      const std::string record = read_file(std::filesystem::path(t.dir) / "record.txt");
      const std::string value = nlohmann::json::parse(t.params_json).at("x").get<std::string>();
      EXPECT_NE(record.find("\narg=" + value + "\n"), std::string::npos) << record;
      EXPECT_NE(record.find("PARATUNE_TRIAL_DIR=" + t.dir + "\n"), std::string::npos) << record;
      seen.insert(value);
      EXPECT_FALSE(std::filesystem::exists(std::filesystem::path(t.dir) / "HOSTILE_MARK"));
    }
  EXPECT_EQ(n, trials);
  for (const std::string& v : kHostileValues) EXPECT_TRUE(seen.contains(v)) << v;
  EXPECT_FALSE(std::filesystem::exists(dir / "HOSTILE_MARK"));
}

TEST_F(SshCliStudy, ConfigurationStudyRunsOverSsh) {
  const auto dir = ssh_cli_dir("config-study");
  write_file(dir / "space.yaml", kSshHostileSpace);
  const Result r = run("tune --space " + (dir / "space.yaml").string() + " --study " + (dir / "s.db").string() +
                       " --command '" + PARATUNE_FAKE_TRIAL + " --record {trial_dir}/record.txt {x}' --steps 4" +
                       ssh_flags(dir) + " --grace 1s");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("2 slot(s) on 1 host(s) over ssh"), std::string::npos) << r.output;
  expect_hostile_values_arrived(dir, kHostileValues.size());
}

TEST_F(SshCliStudy, HyperparameterStudyRunsOverSsh) {
  const auto dir = ssh_cli_dir("hpo-study");
  write_file(dir / "space.yaml", kSshHostileSpace);
  const Result r = run("tune --space " + (dir / "space.yaml").string() + " --study " + (dir / "s.db").string() +
                       " --command '" + PARATUNE_FAKE_TRIAL + " --record {trial_dir}/record.txt {x}' --steps 4 --algo grid" +
                       ssh_flags(dir) + " --grace 1s --trial-ranks 2");  // ranks != 1: a hyperparameter study
  ASSERT_EQ(r.exit_code, 0) << r.output;
  expect_hostile_values_arrived(dir, kHostileValues.size());
}

}  // namespace
