// The paths of test_paths.h, from the PARATUNE_PATH_* definitions tests/CMakeLists.txt gives this file
// alone.
#include "test_paths.h"

namespace paratune::test_paths {
const char* source_dir() { return PARATUNE_PATH_SOURCE_DIR; }
const char* build_dir() { return PARATUNE_PATH_BUILD_DIR; }
const char* paratune() { return PARATUNE_PATH_PARATUNE; }
const char* fake_trial() { return PARATUNE_PATH_FAKE_TRIAL; }
const char* slurm_job() { return PARATUNE_PATH_SLURM_JOB; }
const char* sim_trial() { return PARATUNE_PATH_SIM_TRIAL; }
const char* function_trial() { return PARATUNE_PATH_FUNCTION_TRIAL; }
const char* train() { return PARATUNE_PATH_TRAIN; }
}  // namespace paratune::test_paths
