// What the worker tests share (workers_test.cc, store_faults_test.cc): `paratune tune --worker`
// processes over a space file, running paratune_fake_trial, which logs each run it starts.
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "../cli/cli_util.h"
#include "paratune/store/study_store.h"

namespace paratune::store {

using paratune::testing::Result;
using paratune::testing::run_command;

// "-- a:1 b:2" -> runs, from fake_trial's --log-run lines ("TRIAL_ID PARAMS").
inline std::map<std::string, int> runs_by_params(const std::filesystem::path& log) {
  std::map<std::string, int> runs;
  std::ifstream in(log);
  for (std::string line; std::getline(in, line);) ++runs[line.substr(line.find(' ') + 1)];
  return runs;
}

// `paratune tune --worker` over a space file, as shell text (the caller adds flags).
inline std::string worker_command(const std::string& locator, const std::filesystem::path& dir,
                                  const std::string& trial_args) {
  return std::string(PARATUNE_BINARY) + " tune --worker --space " + (dir / "space.yaml").string() + " --study '" +
         locator + "' --trials-dir " + (dir / "trials").string() + " --command '" + PARATUNE_FAKE_TRIAL + " " +
         trial_args + " --log-run " + (dir / "runs.log").string() + "' --steps 2";
}

// `count` workers at once, named w1, w2, ...; waits for all and returns their stderr and "ok=N",
// N the number that exited 0 (their exit codes and stderr go to DIR/wN.rc and wN.err).
inline Result run_workers(int count, const std::filesystem::path& dir, const std::string& command) {
  std::string script = "TMPD=" + dir.string() + "; ok=0; ";
  for (int i = 1; i <= count; ++i)
    script += "(" + command + " --worker-name w" + std::to_string(i) + " > /dev/null 2>$TMPD/w" + std::to_string(i) +
              ".err; echo $? > $TMPD/w" + std::to_string(i) + ".rc) & ";
  script += "wait; for f in $TMPD/w*.rc; do [ \"$(cat $f)\" = 0 ] && ok=$((ok+1)); done; cat $TMPD/w*.err; echo ok=$ok";
  return run_command(script);
}

inline void write_space(const std::filesystem::path& dir, int a_values, int b_values) {
  std::ofstream space(dir / "space.yaml");
  space << "parameters:\n  a: [";
  for (int i = 0; i < a_values; ++i) space << (i ? ", " : "") << i;
  space << "]\n  b: [";
  for (int i = 0; i < b_values; ++i) space << (i ? ", " : "") << i;
  space << "]\n";
}

// Every point of the study ran exactly once (one non-interrupted trial each, completed, and one run
// in the log), except those in `twice`, which ran twice (one interrupted trial, then one more).
inline void expect_each_point_once(const std::vector<StoredTrial>& trials, const std::filesystem::path& log,
                                   std::size_t points, const std::set<std::string>& twice = {}) {
  std::set<std::string> done;
  for (const StoredTrial& t : trials) {
    if (t.status == "interrupted") continue;
    EXPECT_EQ(t.status, "completed") << t.params_json << " " << t.reason;
    EXPECT_TRUE(done.insert(t.params_json).second) << "run twice: " << t.params_json;
  }
  EXPECT_EQ(done.size(), points);
  const std::map<std::string, int> runs = runs_by_params(log);
  EXPECT_EQ(runs.size(), points);
  for (const auto& [params, n] : runs) EXPECT_EQ(n, twice.contains(params) ? 2 : 1) << params;
}

}  // namespace paratune::store
