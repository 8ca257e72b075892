// The three emitters behind launch_settings (launch/launch.h), one file each: megatron.cc,
// torchtitan.cc, deepspeed.cc. Each writes the complete launch for its framework at
// `version` (commit: where that version's schema was read) and checks what it wrote against the
// schema (launch/schema_check.h) before returning; launch.cc adds what framework_support says the
// framework cannot run. Internal.
#pragma once

#include <string>
#include <vector>

#include "paratune/launch/launch.h"

namespace paratune::launch::detail {

inline bool all_equal(const std::vector<int>& v) { return std::adjacent_find(v.begin(), v.end(), std::not_equal_to<>()) == v.end(); }

inline std::string join_slash(const std::vector<int>& v) { return fmt::format("{}", fmt::join(v, "/")); }

// The bash lines that start torchrun on every node of a Slurm allocation: the first host as the
// c10d rendezvous endpoint (read with sed, which reads all of scontrol's output: `head` would make
// it fail with SIGPIPE under pipefail), one torchrun per node. Sets the LAUNCH array.
inline constexpr const char* kSlurmTorchrun =
    "  MASTER_ADDR=$(scontrol show hostnames \"$SLURM_JOB_NODELIST\" | sed -n 1p)  # reads all: no SIGPIPE\n"
    "  LAUNCH=(srun --ntasks-per-node=1 torchrun --nnodes \"$NNODES\" --nproc-per-node \"$GPUS_PER_NODE\" "
    "--rdzv-backend c10d --rdzv-endpoint \"$MASTER_ADDR:29500\" --rdzv-id \"$SLURM_JOB_ID\")\n";
// NNODES, GPUS_PER_NODE and LAUNCH: srun + torchrun on several nodes, torchrun on one.
inline std::string torchrun_launch(const LaunchTarget& target) {
  return "NNODES=" + std::to_string(target.nodes) + "\nGPUS_PER_NODE=" + std::to_string(target.gpus_per_node) +
         "\nif [ \"$NNODES\" -gt 1 ]; then\n" + kSlurmTorchrun +
         "else\n  LAUNCH=(torchrun --standalone --nproc-per-node \"$GPUS_PER_NODE\")\nfi\n";
}

LaunchSettings megatron(const ParallelConfig& p, const TrainingSpec& training, const ModelSpec& model,
                        const LaunchTarget& target, const std::string& version, const std::string& commit);
LaunchSettings torchtitan(const ParallelConfig& p, const TrainingSpec& training, const ModelSpec& model,
                          const LaunchTarget& target, const std::string& version, const std::string& commit);
LaunchSettings deepspeed(const ParallelConfig& p, const TrainingSpec& training, const ModelSpec& model,
                         const LaunchTarget& target, const std::string& version, const std::string& commit);

}  // namespace paratune::launch::detail
