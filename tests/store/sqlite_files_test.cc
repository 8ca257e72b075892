// SQLite study files wherever they lie and whatever names them (store/sqlite_store.cc): workers
// reaching one file by two hard links are refused rather than running every point twice; a study
// on read-only storage is shown and reported; a file still being created is waited for, not "not a
// study".
//
// Read-only storage is a tmpfs remounted read-only in a private mount namespace (unshare -m): the
// tests run as root, whom file permissions do not stop, but a read-only mount stops everyone. Where
// namespaces cannot be made (no CAP_SYS_ADMIN) the test skips and says so.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <future>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>

#include "../support/test_files.h"
#include "paratune/spec/error.h"
#include "store_test_util.h"
#include "worker_test_util.h"

namespace paratune::store {
namespace {

using paratune::testing::read_file;
using paratune::testing::run;

std::filesystem::path fresh_dir(const std::string& name) {
  return paratune::testing::fresh_test_dir("paratune_sqlite_files", name);
}

TEST(SqliteFiles, AWorkerReachingTheStudyByASecondHardLinkIsRefusedAndNoPointRunsTwice) {
  const auto dir = fresh_dir("hard_link");
  write_space(dir, 4, 3);
  const std::filesystem::path study = dir / "study.db", alias = dir / "alias.db";
  // Worker w1 opens study.db; once its trials run, the file gets a second name, alias.db, and a
  // second worker opens it by that name.
  std::future<Result> first = std::async(
      std::launch::async, [&] { return run_workers(1, dir, worker_command(study.string(), dir, "--step-time 0.2")); });
  for (int i = 0; i < 600 && runs_by_params(dir / "runs.log").empty(); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  ASSERT_FALSE(runs_by_params(dir / "runs.log").empty()) << "the first worker ran no trial";
  std::filesystem::create_hard_link(study, alias);
  const Result second = run_command(worker_command(alias.string(), dir, "--step-time 0.2") + " --worker-name w2");
  EXPECT_EQ(second.exit_code, 2) << second.output;
  EXPECT_NE(second.output.find("study file " + alias.string() + ": the file has 2 names (hard links)"),
            std::string::npos)
      << second.output;
  EXPECT_NE(second.output.find("open it by one name only"), std::string::npos) << second.output;
  const Result r = first.get();
  EXPECT_NE(r.output.find("ok=1"), std::string::npos) << r.output;
  std::filesystem::remove(alias);  // one name again: the study can be read
  const std::unique_ptr<StudyStore> store = open_store(study.string());
  const std::vector<StoredTrial> trials = store->trials(store->studies().at(0).id);
  EXPECT_EQ(trials.size(), 12u);
  for (const StoredTrial& t : trials) EXPECT_EQ(t.worker, "w1");
  expect_each_point_once(trials, dir / "runs.log", 12);
}

TEST(SqliteFiles, AStudyOnReadOnlyStorageIsShownAndReported) {
  const auto dir = fresh_dir("read_only");
  write_space(dir, 2, 2);
  std::filesystem::create_directories(dir / "small");
  const std::string small = (dir / "small").string(), file = small + "/study.db";
  const std::string bin = PARATUNE_BINARY;
  // Made writable, run to its end (4 trials), then the file system is remounted read-only.
  const std::string script =
      "mount -t tmpfs tmpfs " + small + " || exit 99\n" + bin + " tune --space " + (dir / "space.yaml").string() +
      " --study " + file + " --trials-dir " + (dir / "trials").string() + " --command '" + PARATUNE_FAKE_TRIAL +
      " --step-time 0.01' --steps 2 > /dev/null 2>&1 || echo tune failed\n" + "mount -o remount,ro " + small +
      " || exit 98\n" + "touch " + small + "/probe 2> /dev/null && echo still writable\n" + bin + " study show " +
      file + " --json > " + (dir / "show.json").string() + " 2> " + (dir / "show.err").string() + "; echo show=$?\n" +
      bin + " report " + file + " --html " + (dir / "report.html").string() + " > /dev/null 2> " +
      (dir / "report.err").string() + "; echo report=$?\n" + "ls " + small + "\n";
  paratune::testing::write_file(dir / "script.sh", script);
  const Result r = run_command("unshare -m sh " + (dir / "script.sh").string());
  if (r.exit_code == 99 || r.exit_code == 98)
    GTEST_SKIP() << "cannot mount (and remount read-only) a tmpfs in a private mount namespace here (unshare -m, "
                    "mount: needs CAP_SYS_ADMIN): "
                 << r.output;
  EXPECT_EQ(r.output.find("tune failed"), std::string::npos) << r.output;
  ASSERT_EQ(r.output.find("still writable"), std::string::npos) << r.output;  // the storage really is read-only
  EXPECT_NE(r.output.find("show=0"), std::string::npos) << r.output << read_file(dir / "show.err");
  EXPECT_NE(r.output.find("report=0"), std::string::npos) << r.output << read_file(dir / "report.err");
  const nlohmann::json shown = nlohmann::json::parse(read_file(dir / "show.json"), nullptr, false);
  ASSERT_TRUE(shown.is_object()) << read_file(dir / "show.json");
  EXPECT_EQ(shown["trials"].size(), 4u) << shown.dump();
  EXPECT_NE(read_file(dir / "report.html").find("<html"), std::string::npos);
}

TEST(SqliteFiles, AStudyFileBeingCreatedIsWaitedForNotCalledNotAStudy) {
  const auto dir = fresh_dir("being_created");
  // The first moment of a new study file: it exists, empty (its creator has not committed yet).
  const std::filesystem::path empty = dir / "new.db";
  paratune::testing::write_file(empty, "");
  try {
    (void)open_store(empty.string(), Access::kReadOnly);
    FAIL() << "an empty file was read as a study";
  } catch (const StoreUnavailable& e) {
    EXPECT_NE(std::string(e.what()).find("waiting for study file " + empty.string() + ": it is being created"),
              std::string::npos)
        << e.what();
  }
  const Result shown = run("study show " + empty.string());
  EXPECT_EQ(shown.exit_code, 4) << shown.output;
  EXPECT_NE(shown.output.find("it is being created"), std::string::npos) << shown.output;
  EXPECT_EQ(shown.output.find("not a paratune study"), std::string::npos) << shown.output;
  // A file of something else is still not a study.
  const std::filesystem::path text = dir / "notes.db";
  paratune::testing::write_file(text, "these are notes, not a database\n");
  const Result other = run("study show " + text.string());
  EXPECT_EQ(other.exit_code, 2) << other.output;
  EXPECT_NE(other.output.find("not a paratune study file"), std::string::npos) << other.output;
}

}  // namespace
}  // namespace paratune::store
