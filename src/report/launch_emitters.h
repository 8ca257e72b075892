// The three emitters behind launch_settings (report/launch.h), one file each: launch_megatron.cc,
// launch_torchtitan.cc, launch_deepspeed.cc. Each writes the complete launch for its framework at
// `version` (commit: where that version's schema was read); launch.cc checks the result against
// the schema and adds what framework_support says the framework cannot run. Internal.
#pragma once

#include <string>
#include <vector>

#include "paratune/report/launch.h"

namespace paratune::launch_detail {

inline bool all_equal(const std::vector<int>& v) { return std::adjacent_find(v.begin(), v.end(), std::not_equal_to<>()) == v.end(); }

inline std::string join_slash(const std::vector<int>& v) { return fmt::format("{}", fmt::join(v, "/")); }

LaunchSettings megatron(const ParallelConfig& p, const TrainingSpec& training, const ModelSpec& model,
                        const LaunchTarget& target, const std::string& version, const std::string& commit);
LaunchSettings torchtitan(const ParallelConfig& p, const TrainingSpec& training, const ModelSpec& model,
                          const LaunchTarget& target, const std::string& version, const std::string& commit);
LaunchSettings deepspeed(const ParallelConfig& p, const TrainingSpec& training, const ModelSpec& model,
                         const LaunchTarget& target, const std::string& version, const std::string& commit);

// The files the torchtitan and DeepSpeed scripts write with a quoted heredoc (<<'TOML' ... TOML,
// <<'JSON' ... JSON): the TOML job file and the ds_config. Throw Error when the script has none.
std::string torchtitan_job_file(const std::string& script);
std::string deepspeed_config(const std::string& script);

}  // namespace paratune::launch_detail
