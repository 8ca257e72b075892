// torchtitan launch (../shared/frameworks/torchtitan-rules.md; rule ids T*): a TOML job file.
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <numeric>
#include <optional>

#include "launch_emitters.h"
#include "paratune/report/launch_check.h"
#include "paratune/spec/error.h"

namespace paratune::launch_detail {
namespace {

// module_fqns_per_model_part (T4.3a): one list of module names per stage, in stage order (stage s
// on rank s % pp, T4.4); the first holds tok_embeddings, the last norm and output.
std::string torchtitan_stages(const ParallelConfig& p) {
  std::vector<std::string> stages;
  const int n = p.pp * p.vpp;
  int layer = 0;
  for (int s = 0; s < n; ++s) {
    std::vector<std::string> modules;
    if (s == 0) modules.emplace_back("\"tok_embeddings\"");
    for (int k = 0; k < p.stage_layers[static_cast<std::size_t>(s % p.pp)] / p.vpp; ++k)
      modules.push_back(fmt::format("\"layers.{}\"", layer++));
    if (s == n - 1) {
      modules.emplace_back("\"norm\"");
      modules.emplace_back("\"output\"");
    }
    stages.push_back(fmt::format("[{}]", fmt::join(modules, ", ")));
  }
  return fmt::format("[{}]", fmt::join(stages, ", "));
}

}  // namespace

LaunchSettings torchtitan(const ParallelConfig& p, const TrainingSpec& training, const ModelSpec& model,
                          const LaunchTarget& target, const std::string& version, const std::string& commit) {
  (void)target, (void)version, (void)commit;
  LaunchSettings out;
  std::string& t = out.text;
  t += "[parallelism]\n";
  // FSDP2 shards over op ranks and replicates over dp/op (HSDP); without ZeRO-2/3, replication
  // (DDP) (T1.7, T1.8).
  const int shard = p.zero >= 2 ? p.op : 1;
  t += fmt::format("data_parallel_replicate_degree = {}\n", p.dp / shard);
  t += fmt::format("data_parallel_shard_degree = {}\n", shard);
  // ZeRO-2: parameters stay gathered from forward to backward; ZeRO-3: freed after forward (the
  // default frees them unless PP is on, T1.8).
  if (p.zero == 2) t += "fsdp_reshard_after_forward = \"never\"\n";
  if (p.zero == 3 && p.pp > 1) t += "fsdp_reshard_after_forward = \"always\"\n";
  t += fmt::format("tensor_parallel_degree = {}\n", p.tp);
  const bool async_tp = p.tp_comm_overlap && p.tp > 1;
  if (async_tp) t += "enable_async_tensor_parallel = true\n";
  t += fmt::format("context_parallel_degree = {}\n", p.cp);
  if (model.moe) {
    t += fmt::format("expert_parallel_degree = {}\n", p.ep);
    t += fmt::format("expert_tensor_parallel_degree = {}\n", p.expert_tp());
  }
  t += fmt::format("pipeline_parallel_degree = {}\n", p.pp);
  if (p.pp > 1) {
    const char* schedule = p.schedule == Schedule::kInterleaved1F1B ? "Interleaved1F1B"
                           : p.schedule == Schedule::kGPipe        ? "GPipe"
                                                                    : "1F1B";  // T4.2 names
    t += fmt::format("pipeline_parallel_schedule = \"{}\"\n", schedule);
    t += fmt::format("pipeline_parallel_microbatch_size = {}\n", p.mbs);
    t += fmt::format("module_fqns_per_model_part = {}\n", torchtitan_stages(p));
  }
  t += "\n[activation_checkpoint]\n";  // one mode for every layer (T9)
  t += fmt::format("mode = \"{}\"\n", to_string(p.recompute));
  if (p.recompute == RecomputeMode::kSelective) t += "selective_ac_option = \"op\"\n";
  // Batches (T3): with pp = 1 the local batch is one micro-batch (accumulation makes the rest);
  // with pp > 1 one pipeline schedule over the replica's whole batch per step.
  t += "\n[training]\n";
  t += fmt::format("local_batch_size = {}\n", p.pp > 1 ? training.global_batch / p.dp : p.mbs);
  t += fmt::format("global_batch_size = {}\n", training.global_batch);
  t += fmt::format("seq_len = {}\n", training.seq_len);
  // FP8 only through [model] converters (T7.1-T7.2): quantize.linear.float8 with a recipe (T7.5;
  // paratune's blockwise is torchao's rowwise), quantize.linear.mx for mxfp8 (T7.7); MoE experts
  // with the grouped_mm converter of the same kind (T7.4), float8 only with pp = cp = 1 (T7.6).
  if (training.precision == Precision::kFP8) {
    const bool mx = training.fp8_recipe == Fp8Recipe::kMxfp8;
    std::vector<std::string> converters{mx ? "\"quantize.linear.mx\"" : "\"quantize.linear.float8\""};
    if (model.moe && (mx || (p.pp == 1 && p.cp == 1)))
      converters.emplace_back(mx ? "\"quantize.grouped_mm.mx\"" : "\"quantize.grouped_mm.float8\"");
    t += fmt::format("\n[model]\nconverters = [{}]\n", fmt::join(converters, ", "));
    // FSDP's float8 all-gather is the default tensorwise scaling without a recipe_name (T7.5).
    if (training.fp8_param_gather)
      t += "\n[quantize.linear.float8]\nenable_fsdp_float8_all_gather = true\n"
           "precompute_float8_dynamic_scale_for_fsdp = true\n";
    else if (!mx && training.fp8_recipe != Fp8Recipe::kDelayed)
      t += fmt::format("\n[quantize.linear.float8]\nrecipe_name = \"{}\"\n",
                       training.fp8_recipe == Fp8Recipe::kTensorwise ? "tensorwise" : "rowwise");
  }
  if (async_tp) t += "\n[compile]\nenable = true\n";  // async TP needs the compiled model (T6.1)
  return out;
}


}  // namespace paratune::launch_detail
