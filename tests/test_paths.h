// Where the tests find the source tree, the build tree and the programs they run.
//
// The paths are compiled into one translation unit (test_paths.cc, the only one whose compile command
// names them), and this header is force-included into every test file (tests/CMakeLists.txt), so the
// macros the tests use read as before. Why not -D on every test file: then each file's compile command
// holds the checkout's absolute path, and a compiler cache (ccache, scripts/ccache_env.sh) shared by
// clones in other folders -- a CI run on a clean clone -- could never reuse a test object.
#pragma once

namespace paratune::test_paths {
const char* source_dir();     // the repository
const char* build_dir();      // the CMake build tree the tests were built in
const char* paratune();       // the paratune program
const char* fake_trial();     // tests/trial/fake_trial.cc
const char* slurm_job();      // paratune-slurm-job
const char* sim_trial();      // bench/simcluster's trial program
const char* function_trial(); // bench/functions' trial program
const char* train();          // paratune-train
}  // namespace paratune::test_paths

#define PARATUNE_SOURCE_DIR (::paratune::test_paths::source_dir())
#define PARATUNE_BUILD_DIR (::paratune::test_paths::build_dir())
#define PARATUNE_BINARY (::paratune::test_paths::paratune())
#define PARATUNE_FAKE_TRIAL (::paratune::test_paths::fake_trial())
#define PARATUNE_SLURM_JOB (::paratune::test_paths::slurm_job())
#define PARATUNE_SIM_TRIAL (::paratune::test_paths::sim_trial())
#define PARATUNE_FUNCTION_TRIAL (::paratune::test_paths::function_trial())
#define PARATUNE_TRAIN_BINARY (::paratune::test_paths::train())
