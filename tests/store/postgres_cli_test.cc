// `paratune tune --study postgresql://...` end to end (a parallel-configuration study and a
// hyperparameter study, with real trial processes), `study show`, `study copy`, `study delete`, `report` and
// `dashboard` on it, and a bad locator's exit code.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>

#include "../cli/cli_util.h"
#include "store_test_util.h"
#include "../support/test_files.h"

namespace paratune::store {
namespace {

using paratune::testing::Result;
using paratune::testing::run;
using paratune::testing::run_command;

std::filesystem::path pg_cli_dir(const std::string& name) { return paratune::testing::fresh_test_dir("paratune_pg_cli", name); }

nlohmann::json json_of(const Result& r) { return nlohmann::json::parse(r.output.substr(r.output.find("\n{") + 1)); }

TEST(PostgresCli, TuneStudyShowAndCopy) {
  PARATUNE_NEED_POSTGRES();
  const std::string db = fresh_locator("postgres");
  const auto dir = pg_cli_dir("tune");
  std::ofstream(dir / "space.yaml") << "parameters:\n  st: [0.02, 0.01]\n  behave: [ok, crash]\n";
  const std::string tune = "tune --space " + (dir / "space.yaml").string() + " --study " + db + " --trials-dir " +
                           (dir / "trials").string() + " --command '" + PARATUNE_FAKE_TRIAL +
                           " --step-time {st} --behave {behave}' --steps 4 --json";
  const Result r = run(tune);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const nlohmann::json j = json_of(r);
  EXPECT_EQ(j["status_counts"]["completed"], 2) << r.output;
  EXPECT_EQ(j["status_counts"]["failed"], 2) << r.output;

  const Result show = run("study show " + db + " --json");
  ASSERT_EQ(show.exit_code, 0) << show.output;
  const nlohmann::json s = nlohmann::json::parse(show.output);
  EXPECT_EQ(s["best"], j["best"]);
  ASSERT_EQ(s["trials"].size(), 4u);
  for (const auto& t : s["trials"]) {
    EXPECT_EQ(t["location"], "local") << t.dump();
    EXPECT_NE(t["worker"].get<std::string>().find(':'), std::string::npos) << t.dump();
    EXPECT_TRUE(t["heartbeat_unix_s"].is_number()) << t.dump();
  }
  // Resumed: every trial is reused.
  const Result again = run(tune);
  ASSERT_EQ(again.exit_code, 0) << again.output;
  EXPECT_EQ(json_of(again)["trials"].size(), 4u);

  // The same study in an SQLite file shows the same trials.
  const std::string file = (dir / "copy.db").string();
  const Result copy = run("study copy " + db + " " + file);
  ASSERT_EQ(copy.exit_code, 0) << copy.output;
  EXPECT_NE(copy.output.find("copied main (4 trials"), std::string::npos) << copy.output;
  const Result shown = run("study show " + file + " --json");
  ASSERT_EQ(shown.exit_code, 0) << shown.output;
  EXPECT_EQ(nlohmann::json::parse(shown.output)["trials"], s["trials"]);
  const Result twice = run("study copy " + db + " " + file);
  EXPECT_EQ(twice.exit_code, 2) << twice.output;
  EXPECT_NE(twice.output.find("already holds a study 'main'"), std::string::npos) << twice.output;
  // Under another name beside it, then deleted from each store; the other study stays.
  const Result renamed = run("study copy " + db + " " + file + " --study main --as main-2026");
  ASSERT_EQ(renamed.exit_code, 0) << renamed.output;
  EXPECT_NE(renamed.output.find("copied main-2026 (4 trials"), std::string::npos) << renamed.output;
  for (const std::string& store : {db, file}) {
    const Result deleted = run("study delete " + store + " --study-name main --json");
    ASSERT_EQ(deleted.exit_code, 0) << deleted.output;
    EXPECT_EQ(nlohmann::json::parse(deleted.output)["trials"], 4) << deleted.output;
    const Result gone = run("study delete " + store + " --study-name main");
    EXPECT_EQ(gone.exit_code, 2) << gone.output;
    EXPECT_NE(gone.output.find("unknown study 'main'"), std::string::npos) << gone.output;
  }
  const Result left = run("study show " + file + " --study-name main-2026 --json");
  ASSERT_EQ(left.exit_code, 0) << left.output;
  EXPECT_EQ(nlohmann::json::parse(left.output)["trials"].size(), 4u);
}

// `paratune dashboard` on `locator`: what GET /api/study answers (the server is stopped after). It
// waits up to 60 s for the server to print its address: under AddressSanitizer on a loaded 2-core
// machine, start-up took more than the 10 s this waited before (CI, 2026-11-27).
std::string dashboard_answer(const std::string& locator, const std::filesystem::path& dir) {
  const std::string out = (dir / "dashboard.out").string();
  return run_command(fmt::format(
                         "{} dashboard '{}' --port 0 > {} 2>&1 & pid=$!; url=; for i in $(seq 1200); do "
                         "url=$(grep -o 'http://127.0.0.1:[0-9]*/' {}); [ -n \"$url\" ] && break; sleep 0.05; done; "
                         "curl -s \"${{url}}api/study\"; kill $pid; wait $pid",
                         PARATUNE_BINARY, locator, out, out))
      .output;
}

TEST(PostgresCli, ReportAndDashboardReadTheStudyWithoutWriting) {
  PARATUNE_NEED_POSTGRES();
  const auto dir = pg_cli_dir("dashboard");
  // A database without paratune's schema: the dashboard says so, and creates nothing (read-only).
  const std::string empty = fresh_locator("postgres");
  const nlohmann::json waiting = nlohmann::json::parse(dashboard_answer(empty, dir));
  EXPECT_NE(waiting["waiting"].get<std::string>().find("holds no paratune schema"), std::string::npos) << waiting.dump();
  EXPECT_THROW(paratune::testing::PostgresServer::execute(empty, "SELECT 1 FROM paratune_meta"), std::runtime_error)
      << "the dashboard created paratune's schema";

  const std::string db = fresh_locator("postgres");
  std::ofstream(dir / "space.yaml") << "parameters:\n  st: [0.02, 0.01]\n";
  const Result r = run("tune --space " + (dir / "space.yaml").string() + " --study " + db + " --trials-dir " +
                       (dir / "trials").string() + " --command '" + PARATUNE_FAKE_TRIAL + " --step-time {st}' --steps 4");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const nlohmann::json live = nlohmann::json::parse(dashboard_answer(db, dir));
  EXPECT_EQ(live["study"], "main") << live.dump();
  EXPECT_EQ(live["trials"].size(), 2u) << live.dump();
  EXPECT_EQ(live["kind"], "configurations");
  const Result report = run("report " + db + " --html " + (dir / "s.html").string());
  ASSERT_EQ(report.exit_code, 0) << report.output;
  EXPECT_GT(std::filesystem::file_size(dir / "s.html"), 100000u);
}

TEST(PostgresCli, HyperparameterStudy) {
  PARATUNE_NEED_POSTGRES();
  const std::string db = fresh_locator("postgres");
  const auto dir = pg_cli_dir("hpo");
  std::ofstream(dir / "space.yaml") << "parameters:\n  st: {type: float, low: 0.005, high: 0.02}\n";
  const Result r = run("tune --space " + (dir / "space.yaml").string() + " --study " + db + " --trials-dir " +
                       (dir / "trials").string() + " --command '" + PARATUNE_FAKE_TRIAL +
                       " --step-time {st}' --steps 4 --algo random --max-trials 3 --objective loss --direction "
                       "minimize --json");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(json_of(r)["status_counts"]["completed"], 3) << r.output;
  const Result show = run("study show " + db);
  ASSERT_EQ(show.exit_code, 0) << show.output;
  EXPECT_NE(show.output.find("study 'main' in " + db), std::string::npos) << show.output;
}

TEST(PostgresCli, ABadLocatorExitsTwo) {
  const Result r = run("study show postgresql://user:pa55@nohost:1/x");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("postgresql://user:***@nohost:1/x"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("pa55"), std::string::npos) << r.output;
}

}  // namespace
}  // namespace paratune::store
