// StageCostModel::Impl: one configuration's per-layer costs, parameter bytes and communication
// groups, and what a model chunk (ChunkPart) of a pipeline rank costs from them. Shared by
// estimate.cc (pipeline ranks, the replay's input) and bounds.cc (planning_bounds). Internal to the
// cost module.
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "device.h"
#include "fp8.h"
#include "layer_cost.h"
#include "measured_rates.h"
#include "memory.h"
#include "moe.h"
#include "paratune/cost/collectives.h"
#include "paratune/cost/estimate.h"
#include "paratune/cost/model_stats.h"
#include "paratune/cost/stage_model.h"
#include "paratune/sim/pipeline.h"
#include "paratune/sim/schedule.h"

namespace paratune {
namespace cost_detail {

// One model chunk (a pipeline rank's share of layers, 1/v of it with interleaving) for one
// micro-batch: compute, exposed communication, parameters and activation memory.
struct ChunkPart {
  double forward_s = 0, backward_s = 0, weight_grad_s = 0;  // compute
  double recompute_s = 0, recompute_flops = 0;
  // Full recompute re-runs the forward's exposed communication too, by kind.
  double recompute_tp_s = 0, recompute_cp_s = 0, recompute_ep_s = 0;
  double tp_forward_s = 0, tp_backward_s = 0, cp_forward_s = 0, cp_backward_s = 0, ep_forward_s = 0,
         ep_backward_s = 0;
  double dense_params = 0, expert_params = 0;  // on one GPU, TP/EP-sharded, before ZeRO
  double kept_bytes = 0;                       // activations kept from forward to backward
  double offloaded_bytes = 0;                  // activations kept in host memory instead (offload)
  double recompute_bytes = 0;                  // working set of the layer being recomputed
  int layers = 0, recomputed_layers = 0;

  // A rank's total over its chunks (the recompute working set is one layer's, not a sum).
  ChunkPart& operator+=(const ChunkPart& q) {
    forward_s += q.forward_s;
    backward_s += q.backward_s;
    weight_grad_s += q.weight_grad_s;
    recompute_s += q.recompute_s;
    recompute_tp_s += q.recompute_tp_s;
    recompute_cp_s += q.recompute_cp_s;
    recompute_ep_s += q.recompute_ep_s;
    recompute_flops += q.recompute_flops;
    tp_forward_s += q.tp_forward_s;
    tp_backward_s += q.tp_backward_s;
    cp_forward_s += q.cp_forward_s;
    cp_backward_s += q.cp_backward_s;
    ep_forward_s += q.ep_forward_s;
    ep_backward_s += q.ep_backward_s;
    dense_params += q.dense_params;
    expert_params += q.expert_params;
    kept_bytes += q.kept_bytes;
    offloaded_bytes += q.offloaded_bytes;
    recompute_bytes = std::max(recompute_bytes, q.recompute_bytes);
    layers += q.layers;
    recomputed_layers += q.recomputed_layers;
    return *this;
  }
  // Passes of one micro-batch incl. exposed TP/CP/EP communication (ZeRO-3 traffic comes on top).
  [[nodiscard]] double forward_with_comm_s() const { return forward_s + tp_forward_s + cp_forward_s + ep_forward_s; }
  [[nodiscard]] double recompute_comm_s() const { return recompute_tp_s + recompute_cp_s + recompute_ep_s; }
  [[nodiscard]] double backward_with_comm_s() const {
    return backward_s + recompute_s + tp_backward_s + cp_backward_s + ep_backward_s + recompute_comm_s();
  }
};

// A pipeline rank as estimate() needs it: the replay's input and the report's per-stage figures.
struct RankCost {
  sim::StageCost sim;
  StageEstimate estimate;  // memory without activations
  double tp_s = 0, cp_s = 0, ep_s = 0, zero3_s = 0;  // exposed per micro-batch
  double kept_bytes = 0, recompute_bytes = 0, recompute_flops = 0;
  double offloaded_bytes = 0;  // per micro-batch, in host memory (activation offload)
};

// One layer shape's costs: a configuration's per-layer costs and what a model chunk costs from
// them. It reads only the axes that change a layer's cost (cost/layer_cost.h) and pp (a tied
// embedding's copy on the last stage); the group bounds need no more (bounds.cc GroupBounder),
// StageCostModel::Impl adds the pipeline. Not copyable: `c` refers to `config`.
struct LayerCosts {
  ParallelConfig config;  // resolved
  Fp8Costs fp8;  // what the precision costs (cost/fp8.h); before `c`, which is built from it
  // The hardware profile's factors (EstimateOptions::profile); before `c`, whose device and fabric
  // point to it.
  std::optional<MeasuredRates> measured;
  Context c;
  LayerCost dense, moe;
  ParamCounts counts;
  ParamBytes bytes;
  double sp_div = 1, vocab_local = 0;

  // `dense_layers`: where to take the dense layer's costs from, if given (of the same model,
  // cluster, training and calibration).
  // `options`: its hardware profile and kernel log (the memory margin is the pipeline's business).
  LayerCosts(const ModelSpec& model, const ClusterSpec& cluster, const TrainingSpec& training,
             const ParallelConfig& requested, const Calibration& cal, const EstimateOptions& options,
             DenseLayerCosts* dense_layers = nullptr)
      : config(resolve(requested, model, cluster, training)),
        fp8(fp8_costs(cluster.gpu, training, cal)),
        measured(options.profile ? std::optional<MeasuredRates>(std::in_place, *options.profile,
                                                                  device_for(cluster, training, cal, fp8, nullptr, false),
                                                                  fabric_for(cluster, cal, nullptr, nullptr))
                                 : std::nullopt),
        c{model,
          cluster,
          training,
          config,
          cal,
          device_for(cluster, training, cal, fp8, measured ? &*measured : nullptr, true, options.kernel_log),
          fabric_for(cluster, cal, measured ? &*measured : nullptr, options.kernel_log),
          fp8,
          static_cast<double>(config.mbs) * training.seq_len / config.cp,
          model.moe ? moe_rank_load_factor(*model.moe, config, training, cal) : 1.0},
        dense(dense_layers ? dense_layers->get(c) : layer_cost(c, false)),
        counts(count_parameters(model)),
        bytes(param_bytes(training, c.fp8)),
        sp_div(config.sequence_parallel ? config.tp : 1),
        vocab_local(static_cast<double>(model.vocab_size) / config.tp) {
    if (model.moe) moe = layer_cost(c, true);
  }
  LayerCosts(const LayerCosts&) = delete;
  LayerCosts& operator=(const LayerCosts&) = delete;

  // The rates of this GPU: linear layers at the precision's peak (FP8 under an FP8 recipe),
  // attention and the output layer at the BF16/FP16 peak (cost/fp8.h). Per-step jitter: every
  // synchronising step waits for the slowest of the N GPUs, E[max of N normal] ~ mean x (1 + cv
  // sqrt(2 ln N)) (extreme-value asymptotics of the normal; "The Tail at Scale", Dean & Barroso
  // 2013, for why the slowest sets the pace), applied as a slowdown of every kernel. A power limit
  // below the board power slows the compute, not HBM (Calibration::power_clock_exponent).
  // `measured`: a hardware profile's factors (they replace the HBM rate by the measured copy rate,
  // and scale GEMMs and attention: measured_rates.h); `jitter`: false for the one-GPU rates a
  // profile's factors are taken against; `log`: records the GEMMs and attention priced.
  static Device device_for(const ClusterSpec& cluster, const TrainingSpec& training, const Calibration& cal,
                           const Fp8Costs& fp8, const MeasuredRates* measured = nullptr, bool jitter_on = true,
                           KernelLog* log = nullptr) {
    const GpuSpec& gpu = cluster.gpu;
    const Precision high = training.precision == Precision::kFP8 ? Precision::kBF16 : training.precision;
    const double n = cluster.num_gpus();
    const double jitter = 1 + (jitter_on && n > 1 ? cal.step_jitter_cv * std::sqrt(2 * std::log(n)) : 0.0);
    const bool capped = gpu.power_limit_w > 0 && gpu.board_power_w > 0 && gpu.power_limit_w < gpu.board_power_w;
    const double clock = capped ? std::pow(gpu.power_limit_w / gpu.board_power_w, cal.power_clock_exponent) : 1.0;
    const double slowdown = jitter / clock;
    const double efficiency = cal.gemm_efficiency_for(gpu.name);
    const double bf16_peak = gpu.peak_flops_per_s(high) / slowdown;
    return Device{.linear_peak_flops_per_s = fp8.linear_peak_flops_per_s / slowdown,
                  .linear_efficiency_max = efficiency * fp8.linear_efficiency_factor,
                  .bf16_peak_flops_per_s = bf16_peak,
                  .bf16_efficiency_max = efficiency,
                  .half_dim = cal.gemm_half_efficiency_dim,
                  .attention_flops_per_s = bf16_peak * cal.attention_efficiency_for(gpu.name) *
                                           (training.flash_attention_2 ? cal.flash_attention_2_speed_for(gpu.name) : 1.0) *
                                           (training.fp8_attention ? cal.fp8_attention_speed : 1.0),
                  .attention_half_kv_tokens = cal.attention_half_kv_tokens,
                  .hbm_bytes_per_s = (measured && measured->memory_bandwidth_bytes_per_s()
                                          ? *measured->memory_bandwidth_bytes_per_s()
                                          : gpu.hbm_bandwidth_bytes_per_s * cal.hbm_efficiency) / jitter,
                  .linear_dtype = gemm_dtype_of(training.precision),
                  .high_dtype = gemm_dtype_of(high),
                  .measured = measured,
                  .log = log};
  }
  static GemmDtype gemm_dtype_of(Precision precision) {
    switch (precision) {
      case Precision::kFP8: return GemmDtype::kFP8;
      case Precision::kFP16: return GemmDtype::kFP16;
      case Precision::kBF16: break;
    }
    return GemmDtype::kBF16;
  }
  static Fabric fabric_for(const ClusterSpec& cluster, const Calibration& cal, const MeasuredRates* measured, KernelLog* log) {
    Fabric fabric = make_fabric(cluster, cal.intra_node_bandwidth_efficiency, cal.inter_node_bandwidth_efficiency);
    fabric.measured = measured;
    fabric.log = log;
    return fabric;
  }

  // Decoder layers [first_layer, first_layer + layers) as one chunk, `recomputed` of them fully
  // recomputed; `first`/`last`: the chunk holds the embedding / the output layer and loss; `mtp`:
  // its multi-token-prediction layers.
  ChunkPart chunk(int first_layer, int layers, int recomputed, bool first, bool last, int mtp = 0) const {
    const ModelSpec& model = c.model;
    const ParallelConfig& p = config;
    const Device& d = c.device;
    const double t = p.tp, h = model.hidden_size;
    ChunkPart part;
    part.layers = layers;
    part.recomputed_layers = recomputed;
    const int n_moe =
        moe_layers_below(model, first_layer + layers) - moe_layers_below(model, first_layer);
    const int n_dense = layers - n_moe;
    // Recomputed layers are taken from the dense ones first (they are the cheaper kind to redo).
    const int rc_dense = std::min(recomputed, n_dense);
    const int rc_moe = recomputed - rc_dense;
    auto sum = [&](double LayerCost::*field) { return n_dense * dense.*field + n_moe * moe.*field; };
    part.forward_s = sum(&LayerCost::forward_compute_s);
    part.backward_s = sum(&LayerCost::backward_compute_s);
    part.weight_grad_s = sum(&LayerCost::weight_grad_s);
    // Full recompute re-runs the forward (and its TP/CP/EP communication) before the backward.
    part.recompute_s = rc_dense * dense.forward_compute_s + rc_moe * moe.forward_compute_s;
    part.recompute_tp_s = rc_dense * dense.tp_forward_s + rc_moe * moe.tp_forward_s;
    part.recompute_cp_s = rc_dense * dense.cp_forward_s + rc_moe * moe.cp_forward_s;
    part.recompute_ep_s = rc_dense * dense.ep_forward_s + rc_moe * moe.ep_forward_s;
    part.recompute_flops = rc_dense * dense.forward_flops + rc_moe * moe.forward_flops;
    if (p.recompute == RecomputeMode::kSelective) {
      part.recompute_s += sum(&LayerCost::selective_recompute_s);
      part.recompute_flops += sum(&LayerCost::selective_recompute_flops);
      part.recompute_tp_s += sum(&LayerCost::selective_recompute_tp_s);
      part.recompute_ep_s += sum(&LayerCost::selective_recompute_ep_s);
    }
    // Embedding on the first virtual stage (a lookup: memory-bound; its gradient is a weight
    // gradient); output layer and loss on the last: logits GEMM (tokens x V/t x h) and a fused
    // softmax cross-entropy over fp32 logits.
    if (first) {
      part.forward_s += kActivationBytes * c.tokens * h / d.hbm_bytes_per_s;
      part.backward_s += 3 * kActivationBytes * c.tokens * h / d.hbm_bytes_per_s;
      part.weight_grad_s += 3 * kActivationBytes * c.tokens * h / d.hbm_bytes_per_s;
    }
    if (last) {
      const double head = bf16_gemm_s(d, c.tokens, vocab_local, h);  // BF16 under every FP8 recipe
      const double loss = c.tokens * vocab_local * (kActivationBytes + 4 + 4) / d.hbm_bytes_per_s;
      part.forward_s += head + loss;
      part.backward_s += 2 * head + loss;
      part.weight_grad_s += head;
    }
    part.tp_forward_s = sum(&LayerCost::tp_forward_s);
    part.tp_backward_s = sum(&LayerCost::tp_backward_s);
    part.cp_forward_s = sum(&LayerCost::cp_forward_s);
    part.cp_backward_s = sum(&LayerCost::cp_backward_s);
    part.ep_forward_s = sum(&LayerCost::ep_forward_s);
    part.ep_backward_s = sum(&LayerCost::ep_backward_s);
    part.dense_params = sum(&LayerCost::params_dense);
    part.expert_params = sum(&LayerCost::params_expert);
    if (first) part.dense_params += counts.embedding / t;
    if (last) {
      part.dense_params += (counts.output_layer + h) / t;
      if (model.tie_embeddings && p.pp > 1) part.dense_params += static_cast<double>(model.vocab_size) * h / t;
    }
    // Full recompute keeps only each recomputed layer's input; the others keep everything. The
    // layer being recomputed holds its full activations while its backward runs.
    part.kept_bytes = (n_dense - rc_dense) * dense.activation_bytes + (n_moe - rc_moe) * moe.activation_bytes +
                      rc_dense * dense.input_bytes + rc_moe * moe.input_bytes +
                      (first ? kActivationBytes * c.tokens * h / sp_div : 0);
    part.offloaded_bytes = (n_dense - rc_dense) * dense.offloaded_bytes + (n_moe - rc_moe) * moe.offloaded_bytes;
    if (mtp > 0) {
      add_mtp(part, mtp);
      // A pipeline stage with MTP layers but not the embedding keeps its own copy of the embedding
      // (Megatron-Core GPTModel builds it when mtp_process), unless tying already put one there.
      if (!first && p.pp > 1 && !(last && model.tie_embeddings)) part.dense_params += counts.embedding / t;
    }
    // While a fully recomputed layer's backward runs it also holds the gradient arriving at its
    // output and the one it writes for its input, two hidden-sized tensors (input_bytes each).
    if (recomputed > 0)
      part.recompute_bytes = std::max(rc_dense > 0 ? dense.activation_bytes + 2 * dense.input_bytes : 0,
                                      rc_moe > 0 ? moe.activation_bytes + 2 * moe.input_bytes : 0);
    // Selective recompute re-creates the dropped tensors of one layer at a time in its backward;
    // activation offload brings them back one layer (and the next, prefetched) at a time.
    auto working = [](const LayerCost& layer) { return layer.selective_working_bytes + layer.offload_working_bytes; };
    if (p.recompute == RecomputeMode::kSelective || p.offload_modules != 0)
      part.recompute_bytes =
          std::max({part.recompute_bytes, n_dense > 0 ? working(dense) : 0, n_moe > 0 ? working(moe) : 0});
    return part;
  }

  // MTP layers (Megatron-Core multi_token_prediction.py, MultiTokenPredictionLayer), per layer:
  // enorm and hnorm (the shifted tokens' embedding and the hidden state), eh_proj (the two
  // concatenated, 2h -> h, column-parallel over tp), one transformer layer of the kind decoder
  // layer num_layers would be (DeepSeek-V3: MoE), then the shared output head and cross-entropy
  // again, as on the last stage. Parameters: the norms, eh_proj (tp-split) and the layer. Never
  // recomputed in full.
  void add_mtp(ChunkPart& part, int mtp) const {
    const ModelSpec& model = c.model;
    const Device& d = c.device;
    const double t = config.tp, h = model.hidden_size, act = kActivationBytes;
    const LayerCost& layer = model.is_moe_layer(model.num_layers) ? moe : dense;
    const double proj = gemm_s(d, c.tokens, h / t, 2 * h);
    const double norms = 2 * 2 * act * c.tokens * h / d.hbm_bytes_per_s;  // two norms, read + write each
    const double embed = act * c.tokens * h / d.hbm_bytes_per_s;           // the shifted tokens' lookup
    const double head = bf16_gemm_s(d, c.tokens, vocab_local, h);
    const double loss = c.tokens * vocab_local * (act + 4 + 4) / d.hbm_bytes_per_s;
    part.forward_s += mtp * (layer.forward_compute_s + embed + norms + proj + head + loss);
    part.backward_s += mtp * (layer.backward_compute_s + norms + 2 * proj + 2 * head + loss);
    part.weight_grad_s += mtp * (layer.weight_grad_s + proj + head);
    if (config.recompute == RecomputeMode::kSelective) {
      part.recompute_s += mtp * layer.selective_recompute_s;
      part.recompute_flops += mtp * layer.selective_recompute_flops;
      part.recompute_tp_s += mtp * layer.selective_recompute_tp_s;
      part.recompute_ep_s += mtp * layer.selective_recompute_ep_s;
    }
    part.tp_forward_s += mtp * layer.tp_forward_s;
    part.tp_backward_s += mtp * layer.tp_backward_s;
    part.cp_forward_s += mtp * layer.cp_forward_s;
    part.cp_backward_s += mtp * layer.cp_backward_s;
    part.ep_forward_s += mtp * layer.ep_forward_s;
    part.ep_backward_s += mtp * layer.ep_backward_s;
    const double norm_params = model.norm == NormKind::kLayerNorm ? 2 * h : h;
    part.dense_params += mtp * (layer.params_dense + 2 * norm_params + 2 * h * h / t);
    part.expert_params += mtp * layer.params_expert;
    // Kept for the backward: the layer's activations, the two normed inputs and their concatenation
    // (eh_proj's input, 2h per token).
    part.kept_bytes += mtp * (layer.activation_bytes + 4 * act * c.tokens * h / sp_div);
    part.offloaded_bytes += mtp * layer.offloaded_bytes;
  }

  bool model_has_larger_moe_layers() const {
    return c.model.moe && moe.params_dense + moe.params_expert > dense.params_dense + dense.params_expert;
  }
  double largest_layer_params() const {
    const LayerCost& largest = model_has_larger_moe_layers() ? moe : dense;
    return largest.params_dense + largest.params_expert;
  }
  // Ring attention's K/V buffers: the larger layer kind's (a working set, one layer at a time).
  double cp_buffer_bytes() const { return std::max(dense.cp_buffer_bytes, moe.cp_buffer_bytes); }
};

}  // namespace cost_detail

// Everything about one configuration that does not depend on which layers a stage holds: its
// layer shape's costs (cost_detail::LayerCosts) and the pipeline's groups, buffers and layout.
struct StageCostModel::Impl : cost_detail::LayerCosts {
  // The cost module's internal types (namespace cost_detail) by their short names.
  using ChunkPart = cost_detail::ChunkPart;
  using LayerCost = cost_detail::LayerCost;
  using RankCost = cost_detail::RankCost;
  using ShardDegrees = cost_detail::ShardDegrees;

  EstimateOptions options;
  int microbatches = 0;
  ShardDegrees shards;
  GroupPlacement dense_shard_group, dense_replica_group, expert_shard_group, expert_replica_group;
  // Fixed per-GPU buffers: CUDA context and workspaces, communication staging, NCCL's buffers for
  // each communicator this rank uses, ring attention's K/V buffers.
  double buffer_bytes = 0;
  std::vector<int> mtp_of_chunk;  // MTP layers of each virtual stage (where the layout puts "m")
  std::array<int, 2> loss_ranks{};  // the ranks that compute the loss (the same one twice but for DualPipe)

  Impl(const ModelSpec& model, const ClusterSpec& cluster, const TrainingSpec& training, const ParallelConfig& requested,
       const Calibration& cal, const EstimateOptions& opts)
      : LayerCosts(model, cluster, training, requested, cal, opts),
        options(opts),
        microbatches(config.num_microbatches(training)),
        shards(cost_detail::shard_degrees(config)) {
    const ParallelConfig& p = config;
    const ClusterSpec& gpn = cluster;  // groups are placed on the cluster's NVLink domains and pods
    dense_shard_group = place_group(static_cast<int>(shards.dense), p.tp, gpn);
    dense_replica_group = place_group(p.zero > 0 ? p.dp / p.op : p.dp * p.cp, p.tp * static_cast<int>(shards.dense), gpn);
    // Expert data-parallel groups: Megatron-Core's expert mesh orders etp, ep, edp, pp, so an edp
    // group's members are etp·ep ranks apart.
    const int expert_stride = p.expert_tp() * p.ep;
    expert_shard_group = place_group(static_cast<int>(shards.expert), expert_stride, gpn);
    expert_replica_group = place_group(p.zero > 0 ? static_cast<int>(shards.expert_dp / shards.expert) : shards.expert_dp,
                                       expert_stride * static_cast<int>(shards.expert), gpn);
    buffer_bytes = buffer_bytes_for(p);
    mtp_of_chunk = chunk_mtp_layers(p, model);
    // Where the model's last part runs for the first and the last micro-batch: the last rank, a V's
    // rank 0, both end ranks under DualPipe (its two directions; sim/schedule.h).
    const sim::PipelineSchedule& schedule = sim::schedule_for(p.schedule);
    const sim::PipelineShape shape = sim::pipeline_shape(p.schedule, p.pp, p.vpp, microbatches);
    const int last_part = schedule.parts(shape) - 1;
    loss_ranks = {schedule.place(shape, last_part, 0).rank, schedule.place(shape, last_part, microbatches - 1).rank};
  }

  // True when one of the rank's chunks is the model's last part (output layer and loss).
  bool computes_loss(int rank) const { return rank == loss_ranks[0] || rank == loss_ranks[1]; }

  // MTP layers on pipeline rank `rank` (all its chunks): the layout's, else with the loss.
  int mtp_on_rank(int rank) const {
    if (config.layout.empty()) return computes_loss(rank) ? c.model.mtp_layers : 0;
    int n = 0;
    for (std::size_t k = static_cast<std::size_t>(rank); k < mtp_of_chunk.size(); k += static_cast<std::size_t>(config.pp))
      n += mtp_of_chunk[k];
    return n;
  }

  // The fixed buffers of configuration `q` (which shares this model's layer shape).
  double buffer_bytes_for(const ParallelConfig& q) const {
    return fixed_buffer_bytes(c.calibration, q, c.model.moe.has_value(), cp_buffer_bytes());
  }
  static double fixed_buffer_bytes(const Calibration& cal, const ParallelConfig& q, bool moe, double cp_buffer_bytes) {
    return cal.cuda_context_bytes + cal.comm_buffer_bytes + communicators(q, moe) * cal.nccl_bytes_per_communicator +
           cp_buffer_bytes;
  }

  // NCCL communicators one rank uses: tensor, context and data parallel (dp x cp), expert and
  // expert-data parallel, the pipeline's neighbours and, with tied embeddings across stages, the
  // embedding group. Each holds its own buffers (Calibration::nccl_bytes_per_communicator).
  static int communicators(const ParallelConfig& p, bool moe) {
    int n = 0;
    if (p.tp > 1) n++;
    if (p.cp > 1) n++;
    if (p.dp * p.cp > 1) n++;
    if (p.pp > 1) n += 2;  // send to the next rank, receive from the previous one
    if (moe && p.ep > 1) n++;
    if (moe && p.expert_data_parallel_size() > 1) n++;
    return n;
  }

  // Recomputed layers of a rank spread over its v chunks, earlier chunks first.
  int recomputed_in_chunk(int recomputed, int chunk) const {
    return recomputed / config.vpp + (chunk < recomputed % config.vpp ? 1 : 0);
  }
  // The same split over chunks of unequal sizes (Megatron's embedding-/loss-aware split leaves the
  // first and last chunks a layer short): each chunk's share capped at its layers, what a short
  // chunk cannot take going to the next chunks with room. Fills `out` (one entry per chunk; reused
  // across ranks: this runs once per rank of every estimate).
  void recomputed_per_chunk(int recomputed, const std::vector<int>& chunk_layers, std::vector<int>& out) const {
    out.resize(chunk_layers.size());
    int left = recomputed;
    for (std::size_t ch = 0; ch < out.size(); ++ch) {
      out[ch] = std::min(chunk_layers[ch], recomputed_in_chunk(recomputed, static_cast<int>(ch)));
      left -= out[ch];
    }
    for (std::size_t ch = 0; ch < out.size() && left > 0; ++ch) {
      const int more = std::min(left, chunk_layers[ch] - out[ch]);
      out[ch] += more;
      left -= more;
    }
  }

  // ZeRO-3: gather each layer's parameters forward and backward, reduce-scatter its gradients,
  // every micro-batch (FSDP FULL_SHARD; Zhao et al. 2023). Prefetch hides it behind the layer's
  // compute; the first layer's gather is always exposed. Returns the exposed {forward, backward}.
  // Neither part falls by more than hide x the compute a layer adds (hide <= 1), so a stage's time
  // never falls when it holds more layers: the stage assignment relies on that
  // (plan/stage_assignment.cc).
  //
  // ZeRO-2 keeps only its gradient shard, so with gradient accumulation it reduce-scatters every
  // micro-batch's gradients during that micro-batch's backward (DeepSpeed stage 2's
  // reduce_ipg_grads after each backward; FSDP SHARD_GRAD_OP without no_sync), not once per
  // iteration as Megatron's distributed optimizer (ZeRO-1) does: the backward part only.
  // What is hidden slows the compute it hides behind by overlap_interference x its time, added to
  // the exposed part (the kept part still falls with compute, by (1 - interference) x hide).
  std::pair<double, double> zero3_exposed_s(const ChunkPart& rank_total) const {
    if (config.zero < 2) return {0, 0};
    const double interference = c.calibration.overlap_interference;
    const double scatter = reduce_scatter_s(rank_total.dense_params * bytes.grad, dense_shard_group, c.fabric) +
                           reduce_scatter_s(rank_total.expert_params * bytes.grad, expert_shard_group, c.fabric);
    if (config.zero == 2) {
      const double hide_scatter = config.overlap_grad_reduce ? c.calibration.dp_overlap : 0;
      const double exposed = std::max(0.0, scatter - hide_scatter * rank_total.backward_s);
      return {0, exposed + interference * (scatter - exposed)};
    }
    const double gather_bytes = c.fp8.param_gather_bytes;
    const double gather = all_gather_s(rank_total.dense_params * gather_bytes, dense_shard_group, c.fabric) +
                          all_gather_s(rank_total.expert_params * gather_bytes, expert_shard_group, c.fabric);
    const double hide = config.overlap_param_gather ? c.calibration.dp_overlap : 0;
    // The first layer's own gather (latency included): nothing runs before it to hide it behind.
    const LayerCost& largest = model_has_larger_moe_layers() ? moe : dense;
    const double first_gather = all_gather_s(largest.params_dense * gather_bytes, dense_shard_group, c.fabric) +
                                all_gather_s(largest.params_expert * gather_bytes, expert_shard_group, c.fabric);
    const double forward = std::max(first_gather, gather - hide * rank_total.forward_s);
    const double backward = std::max(first_gather, gather + scatter - hide * rank_total.backward_s);
    return {forward + interference * std::max(0.0, gather - forward), backward + interference * std::max(0.0, gather + scatter - backward)};
  }

  // The loss's logits on the last stage, tokens x V/t elements. Megatron's fused vocab-parallel
  // cross-entropy: the BF16 logits and the fp32 softmax it saves (and overwrites with the
  // gradient), 2 + 4 = 6 bytes each. An unfused fp32 cross-entropy (torchtitan's
  // F.cross_entropy(pred.float(), labels)): at the start of its backward log_softmax_backward
  // holds its saved fp32 output, the fp32 incoming gradient and the fp32 gradient it writes,
  // 3 x 4 = 12 bytes each (the BF16 logits are freed by `del pred` before the backward: torchtitan
  // train.py; the forward peak, BF16 + fp32 input + fp32 log-softmax = 10 bytes, is lower).
  // Each MTP layer computes and keeps its own logits the same way, on its rank.
  double logits_bytes(int rank) const {
    const double bytes_per_logit = c.training.fp32_unfused_cross_entropy ? 12 : 6;
    const int heads = (computes_loss(rank) ? 1 : 0) + mtp_on_rank(rank);
    return heads * c.tokens * vocab_local * bytes_per_logit;
  }

  RankCost rank_cost(int s, const std::vector<ChunkPart>& parts) const;

  // planning_bounds' per-group ingredients, computed on first use (one model serves one thread).
  struct BoundBasis;
  BoundBasis& bound_basis() const;
  mutable std::unique_ptr<BoundBasis> basis;
};

// What planning_bounds needs of a group's layer costs, computed on its first call.
struct StageCostModel::Impl::BoundBasis {
  ChunkPart whole;                // the whole model, one micro-batch, no full recompute
  ChunkPart layer;                // one decoder layer (all alike when layers_alike())
  std::vector<ChunkPart> layer_kinds;  // one layer of each kind (dense, MoE) the model has
  std::vector<ChunkPart> layer_kinds_recomputed;  // the same, fully recomputed
  ChunkPart embedding, head;      // the first / last rank's extra
  // Of any layer, the embedding or the head: the forward's share of the passes, and the share of
  // forward and input gradient (B) without the weight gradient (W): what fills a ZB-H1 pipeline.
  double smallest_forward_share, smallest_critical_share;
  // peak_in_flight() of the last pipeline shape asked for (candidates come grouped by shape).
  sim::PipelineShape in_flight_shape{0, 0, 0};
  Schedule in_flight_schedule = Schedule::kOneFOneB;
  std::vector<int> in_flight;
};

}  // namespace paratune
