// What the store tests share: StoreTest, parameterized by the store ("sqlite" or "postgres": a
// fresh file, or a fresh database on the test process's PostgreSQL server), and a finished run.
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <memory>
#include <string>

#include "../support/postgres_server.h"
#include "paratune/store/study_store.h"

namespace paratune::store {

inline std::filesystem::path fresh_file(const std::string& name) {
  const std::filesystem::path dir = std::filesystem::path(::testing::TempDir()) / "paratune_store";
  std::filesystem::create_directories(dir);
  for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(dir / (name + suffix));
  return dir / name;
}

inline trial::TrialResult completed(double step_time) {
  trial::TrialResult r;
  r.status = trial::TrialStatus::kCompleted;
  r.exit_code = 0;
  r.started_unix_s = 100;
  r.ended_unix_s = 101;
  for (int k = 1; k <= 4; ++k) r.output.steps.push_back({k, k == 1 ? 1.0 : step_time});
  r.output.metrics.push_back({"loss", 2.5, 4});
  r.output.peak_memory_bytes = 1e9;
  std::vector<double> times;
  for (const auto& s : r.output.steps) times.push_back(s.step_time_s);
  r.throughput = trial::estimate_throughput(times);
  r.stdout_path = "/tmp/out.log";
  return r;
}

// A fresh locator of the parameter's kind, named after the test.
inline std::string fresh_locator(const std::string& kind) {
  const ::testing::TestInfo* test = ::testing::UnitTest::GetInstance()->current_test_info();
  std::string name = std::string(test->test_suite_name()) + "_" + test->name();
  for (char& c : name)
    if (c == '/') c = '_';
  if (kind == "postgres") return ::paratune::testing::PostgresServer::instance().fresh_database(name);
  return fresh_file(name + ".db").string();
}

class StoreTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    if (GetParam() == "postgres") PARATUNE_NEED_POSTGRES();
    locator_ = fresh_locator(GetParam());
  }
  // The test's store, opened anew.
  [[nodiscard]] std::unique_ptr<StudyStore> open() const { return open_store(locator_); }
  std::string locator_;
};

}  // namespace paratune::store
