// DeepSpeed launch (../shared/frameworks/deepspeed-rules.md; rule ids D*): a ds_config.
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <numeric>
#include <optional>

#include "launch_emitters.h"
#include "paratune/report/launch_check.h"
#include "paratune/spec/error.h"

namespace paratune::launch_detail {

LaunchSettings deepspeed(const ParallelConfig& p, const TrainingSpec& training, const ModelSpec& model,
                         const LaunchTarget& target, const std::string& version, const std::string& commit) {
  (void)target, (void)version, (void)commit;
  LaunchSettings out;
  nlohmann::ordered_json j;
  // The batch rule train = micro x accumulation x dp, with dp from the mpu (D1, D2).
  j["train_batch_size"] = training.global_batch;
  j["train_micro_batch_size_per_gpu"] = p.mbs;
  j["gradient_accumulation_steps"] = p.num_microbatches(training);
  if (training.precision == Precision::kFP16) j["fp16"] = {{"enabled", true}};
  else j["bf16"] = {{"enabled", true}};
  const bool overlap = p.grad_sync == GradSync::kOverlapped && p.overlap_grad_reduce;
  nlohmann::ordered_json zero{{"stage", p.zero}, {"overlap_comm", overlap}, {"contiguous_gradients", true}};
  if (p.zero == 3 && p.op < p.dp) zero["mics_shard_size"] = p.op;  // MiCS: shard within op ranks
  j["zero_optimization"] = zero;
  if (p.recompute != RecomputeMode::kNone)
    j["activation_checkpointing"] = {{"partition_activations", p.sequence_parallel},
                                     {"contiguous_memory_optimization", false},
                                     {"cpu_checkpointing", false}};
  out.text = j.dump(2) + "\n";
  // Parallel degrees are not ds_config keys (D5.1, D6.1, the plan table).
  out.cannot_express.push_back(fmt::format(
      "parallel degrees are not DeepSpeed config keys: pass --tensor-model-parallel-size {} "
      "--pipeline-model-parallel-size {} to Megatron-DeepSpeed (PipelineModule(num_stages={})){}",
      p.tp, p.pp, p.pp, model.moe ? fmt::format(", and ep_size={} to the MoE layers", p.ep) : ""));
  return out;
}


}  // namespace paratune::launch_detail
