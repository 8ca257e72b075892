// ParallelConfig: how one training iteration is spread over the GPUs.
//
// Rank order follows Megatron-LM: tp innermost, then cp, ep (inside the data-parallel dimension),
// dp, and pp outermost. With G GPUs per node, a group of consecutive ranks of size <= G stays in
// one node; the cost model uses this to decide which collectives cross the network.
#pragma once

#include <algorithm>

#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include "paratune/spec/enums.h"
#include "paratune/spec/hardware.h"
#include "paratune/spec/model.h"
#include "paratune/spec/training.h"

namespace paratune {

// The most (pipeline rank, model chunk, micro-batch) slots one iteration may have: pp x vpp x
// micro-batches <= 2^24. The pipeline replay (sim/pipeline.h) keeps state for each slot, about 55
// bytes, so this bounds it near 1 GB; 2^31 micro-batches of one sequence would need 100 GB. No real
// training run comes near it (Llama-3.1-405B: 8 x 8 x 16).
inline constexpr std::int64_t kMaxPipelineSlots = std::int64_t{1} << 24;

// A set of RecomputeModule as bits (1 << module).
constexpr unsigned recompute_module_bit(RecomputeModule m) { return 1u << static_cast<unsigned>(m); }
// Megatron-Core's default --recompute-modules: core attention only (Korthikanti et al. 2022's
// selective recompute, what recompute=selective meant before the module list existed).
inline constexpr unsigned kDefaultRecomputeModules = recompute_module_bit(RecomputeModule::kCoreAttn);
// A set of OffloadModule as bits (1 << module).
constexpr unsigned offload_module_bit(OffloadModule m) { return 1u << static_cast<unsigned>(m); }

// One stage (virtual pipeline stage, model chunk) of Megatron-LM's --pipeline-model-parallel-layout
// (data/frameworks/megatron-lm-rules.md R13): its decoder layers "t", MTP layers "m", and whether
// it holds the embedding "E" (only the first stage) and the output layer and loss "L" (only the last).
struct LayoutStage {
  int layers = 0;
  int mtp = 0;
  bool embedding = false;
  bool loss = false;
  bool operator==(const LayoutStage&) const = default;
};

struct ParallelConfig {
  int dp = 1;   // data-parallel replicas (includes the expert-parallel ranks, as in Megatron)
  int tp = 1;   // tensor-parallel degree
  int pp = 1;   // pipeline stages
  int vpp = 1;  // virtual stages (model chunks) per pipeline rank, interleaved 1F1B when > 1
  int cp = 1;   // context-parallel degree (sequence split across ranks for attention)
  int ep = 1;   // expert-parallel degree, a divisor of dp * cp (experts split over ep ranks)
  int etp = 0;  // expert tensor-parallel degree; 0 = same as tp
  int mbs = 1;  // micro-batch size, sequences
  bool sequence_parallel = false;  // Megatron SP: norms/dropout split over tp, RS+AG instead of AR
  int zero = 0;  // ZeRO stage: 0 none, 1 optimizer states, 2 + gradients, 3 + parameters
  int op = 0;    // optimizer-sharding degree, divides dp; 0 = dp (op < dp: hybrid sharding)
  RecomputeMode recompute = RecomputeMode::kNone;
  // With recompute=selective: the recomputed modules, a set of recompute_module_bit(); config text
  // "recompute_modules=core_attn+moe_act" (Megatron-LM --recompute-modules core_attn moe_act).
  unsigned recompute_modules = kDefaultRecomputeModules;
  // Activation offload: the modules whose saved tensors go to host memory between their forward
  // and backward, a set of offload_module_bit(); 0 = none. Config text
  // "offload_modules=core_attn+attn_proj" (Megatron-LM --fine-grained-activation-offloading
  // --offload-modules core_attn attn_proj). cost/memory.cc says which tensors each one moves.
  unsigned offload_modules = 0;
  // With recompute=full: layers per stage that are fully recomputed; -1 = all layers of the stage.
  int recompute_layers = -1;
  // With recompute=full: fully recomputed layers of each stage (overrides recompute_layers);
  // "recompute_layers=2/4/4/0" in the config text.
  std::vector<int> stage_recompute_layers;
  std::vector<int> stage_layers;  // decoder layers per pipeline stage; empty = as even as possible
  // Megatron-LM's --account-for-embedding-in-pipeline-split / --account-for-loss-in-pipeline-split
  // (R11): the embedding / the output layer and loss count as one layer slot, so the first chunk
  // of rank 0 / the last chunk of the last rank holds one decoder layer fewer. (L + e + l) must
  // split evenly over pp (and vpp); e.g. Llama-3.1-405B's 126 layers on pp = 8, vpp = 8:
  // 128 slots, 2 per chunk, 1 layer in the first and the last chunk. Excludes stage_layers.
  bool account_embedding = false;
  bool account_loss = false;
  // Megatron-LM's --pipeline-model-parallel-layout (R13), "layout=Et*4|(t*4|)*14tmL" in the config
  // text: pp·vpp stages in chunk order, stage s on rank s % pp (chunk s / pp). Chunks may be uneven;
  // stage_layers is derived from it (each rank's sum). Empty = no layout. Excludes stage_layers
  // (other than the derived one) and the account flags, as in Megatron.
  std::vector<LayoutStage> layout;
  Schedule schedule = Schedule::kOneFOneB;
  GradSync grad_sync = GradSync::kOverlapped;
  bool overlap_grad_reduce = true;   // DP gradient reduce overlapped with backward
  bool overlap_param_gather = true;  // ZeRO param all-gather overlapped with forward
  bool tp_comm_overlap = false;      // TP collectives overlapped with GEMMs (Megatron TE userbuffers)
  bool overlap_p2p = true;           // PP sends/receives overlapped with compute
  // MoE all-to-all of one micro-batch overlapped with another micro-batch's compute (Megatron-Core
  // --overlap-moe-expert-parallel-comm, the 1F1B A2A overlap; DualPipe-style). Megatron's rules
  // (R17): ep > 1, no full recompute, and with pp > 1 an interleaved schedule.
  bool ep_overlap = false;
  // How MoE tokens are dispatched to and combined from the expert ranks (enums.h MoeDispatcher;
  // cost/moe.h expert_dispatch_s). Needs ep > 1 when not the default.
  MoeDispatcher dispatcher = MoeDispatcher::kAllToAll;

  // dp·tp·pp·cp in 64 bits, saturating at INT64_MAX (never wraps: dp=536870913 x tp=8 is not 8;
  // a degree < 1 gives INT64_MAX too, which matches no cluster).
  [[nodiscard]] std::int64_t num_gpus() const {
    std::int64_t n = 1;
    for (const int d : {dp, tp, pp, cp}) {
      if (d < 1 || n > std::numeric_limits<std::int64_t>::max() / d) return std::numeric_limits<std::int64_t>::max();
      n *= d;
    }
    return n;
  }
  // Whether module m's activations are recomputed (recompute=selective with m in recompute_modules).
  [[nodiscard]] bool recomputes(RecomputeModule m) const {
    return recompute == RecomputeMode::kSelective && (recompute_modules & recompute_module_bit(m)) != 0;
  }
  // Whether module m's saved tensors are offloaded to host memory.
  [[nodiscard]] bool offloads(OffloadModule m) const { return (offload_modules & offload_module_bit(m)) != 0; }
  [[nodiscard]] int expert_tp() const { return etp > 0 ? etp : tp; }
  [[nodiscard]] int optimizer_shard_degree() const { return zero > 0 ? (op > 0 ? op : dp) : 1; }
  // Megatron-Core's expert data-parallel size (MoE parallel folding): the expert grid is
  // etp x ep x edp x pp over all ranks, so edp = world / (etp·ep·pp) = dp·cp·tp / (etp·ep)
  // (data/frameworks/megatron-lm-rules.md R1.3).
  [[nodiscard]] int expert_data_parallel_size() const { return std::max(1, dp * cp * tp / (expert_tp() * ep)); }
  [[nodiscard]] int num_microbatches(const TrainingSpec& training) const {
    return static_cast<int>(training.global_batch / (static_cast<std::int64_t>(mbs) * dp));
  }
};

// Parses "dp=8,tp=8,pp=4,mbs=1,zero=1,recompute=selective,vpp=2,stage_layers=10/12/12/10".
// Unknown keys are rejected with a suggestion. Keys not given keep their values in `c`.
ParallelConfig parse_parallel_config(std::string_view text, ParallelConfig c = {});

// Canonical "key=value,..." rendering (round-trips through parse_parallel_config).
std::string to_string(const ParallelConfig& config);

// The names of a recompute_modules set in Megatron-Core's order, e.g. {"core_attn", "moe_act"}.
std::vector<std::string> recompute_module_names(unsigned modules);

// Megatron's rules for a recompute_modules set other than the default (resolve checks them): the
// set needs recompute=selective, and each module the part of the model it recomputes. Throws Error
// naming the field, the set and the rule.
void check_recompute_modules(const ParallelConfig& config, const ModelSpec& model, const TrainingSpec& training);

// The names of an offload_modules set in Megatron-Core's order, e.g. {"core_attn", "attn_proj"}.
std::vector<std::string> offload_module_names(unsigned modules);
// "core_attn+attn_proj" ("none" for the empty set), as the config text writes it.
std::string offload_modules_text(unsigned modules);

// The rules for a non-empty offload_modules set (resolve checks them): Megatron-Core's
// (transformer_config.py at d98e8a64: attn_proj only with core_attn; no expert module offloaded
// inside a recomputed moe module) and paratune's own: no full recompute (its layers save nothing
// to offload), each module present in the model as a module of its own, and a GPU whose host-link
// bandwidth is known. Throws Error naming the field, the set and the rule.
void check_offload_modules(const ParallelConfig& config, const ModelSpec& model, const ClusterSpec& cluster,
                           const TrainingSpec& training);

// Checks that the configuration is possible for this model, cluster and batch, filling in derived
// defaults (stage_layers when empty, schedule when vpp > 1, op when 0). Throws Error with the rule
// broken, e.g. "tp=3 does not divide num_attention_heads=64".
ParallelConfig resolve(const ParallelConfig& config, const ModelSpec& model, const ClusterSpec& cluster,
                       const TrainingSpec& training);

// Alpa-style per-stage device mesh: a pipeline stage that runs on dp x tp GPUs of its own.
struct StageMesh {
  int dp = 1;
  int tp = 1;
};
// "8x1,4x2,4x2,4x2" (dp x tp per stage, as the Comm-Shift poster writes Alpa's meshes).
std::vector<StageMesh> parse_stage_meshes(std::string_view text);

// Fully recomputed layers of each stage of a resolved configuration: 0 unless recompute=full; then
// the per-stage list, or recompute_layers (-1 = all) capped at each stage's layers.
std::vector<int> recomputed_layers_per_stage(const ParallelConfig& p);

// Decoder layers of chunk c of rank r at index k = c·pp + r (pp·vpp entries; looped schedules:
// virtual stage k, which part a chunk is otherwise: sim::PipelineSchedule::part_of) of a resolved
// configuration: the layout's stages when one is given; else each rank's stage_layers split evenly
// over its vpp chunks, except the one-layer deficits of account_embedding (rank 0, chunk 0) and
// account_loss (last rank, last chunk).
std::vector<int> chunk_layers(const ParallelConfig& c);
// MTP layers of each virtual stage (pp·vpp entries): where the layout puts "m"; without a layout
// all of the model's `mtp_layers` on the chunk that computes the loss (the last virtual stage:
// Megatron's default, R13.3; a V schedule's chunk 1 of rank 0).
std::vector<int> chunk_mtp_layers(const ParallelConfig& c, const ModelSpec& model);

// Megatron's layout syntax (R13.1): '|' separates stages, E embedding, t decoder layer, m MTP
// layer, L loss; "X*n" repeats a symbol, "(...)*n" a group (which may hold '|'); commas and spaces
// are ignored. Checks the syntax and the order Megatron requires (E first, L last, no decoder
// layer after an MTP layer); counts against the model and pp·vpp are resolve()'s. Throws Error
// naming the field, the value and the rule.
std::vector<LayoutStage> parse_pipeline_layout(std::string_view text);
// Compact Megatron form: runs of equal stages as "(t*4|)*14", e.g. "Et*4|(t*4|)*14tmL".
std::string to_string(const std::vector<LayoutStage>& layout);

// Even split of `layers` over `stages` (earlier stages get the remainder), e.g. 10 over 4 = 3,3,2,2.
std::vector<int> even_stage_layers(int layers, int stages);

}  // namespace paratune
