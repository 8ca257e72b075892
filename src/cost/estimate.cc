// The analytic iteration model: one pipeline rank's costs (data-parallel synchronisation, optimizer
// step, static memory), StageCostModel, the pipeline problem, and the totals. One layer's costs are
// in layer_cost.cc, memory formulas in memory.cc, a chunk's costs in stage_cost_model_impl.h and
// the planner's lower bounds in bounds.cc.
#include "paratune/cost/estimate.h"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cmath>

#include "device.h"
#include "memory.h"
#include "paratune/cost/collectives.h"
#include "paratune/cost/model_stats.h"
#include "paratune/spec/units.h"
#include "stage_cost_model_impl.h"

namespace paratune {
namespace {

using cost_detail::ChunkPart;
using cost_detail::kActivationBytes;
using cost_detail::RankCost;
using cost_detail::static_memory;

// Megatron-LM's gradient bucket: max(40M, 1M x dp) parameters (DistributedDataParallelConfig).
double grad_bucket_params(const ParallelConfig& p) { return std::max(40e6, 1e6 * p.dp); }

}  // namespace

// Pipeline rank `s` made of `parts` (one per model chunk): its costs per micro-batch, its
// once-per-iteration data-parallel work and its memory without activations.
RankCost StageCostModel::Impl::rank_cost(int s, const std::vector<ChunkPart>& parts) const {
  const ParallelConfig& p = config;
  const Calibration& cal = c.calibration;
  const ClusterSpec& cluster = c.cluster;
  const int v = static_cast<int>(parts.size());  // the replay's chunks: vpp, or DualPipe's two copies
  RankCost out;
  StageEstimate& st = out.estimate;
  sim::StageCost& sc = out.sim;
  ChunkPart total;
  for (const ChunkPart& q : parts) total += q;
  st.layers = total.layers;
  st.recomputed_layers = total.recomputed_layers;
  const double dense_params = total.dense_params, expert_params = total.expert_params;
  st.params = dense_params + expert_params;

  const auto [zero3_forward_s, zero3_backward_s] = zero3_exposed_s(total);
  double grad_sync = 0, param_gather = 0;
  if (p.zero >= 2) {
    // The gradients were reduce-scattered every micro-batch (zero3_exposed_s); across replicas
    // (op < dp, hybrid sharding) one all-reduce of the gradient shard remains.
    grad_sync = all_reduce_s(dense_params * bytes.grad / shards.dense, dense_replica_group, c.fabric) +
                all_reduce_s(expert_params * bytes.grad / shards.expert, expert_replica_group, c.fabric);
    // ZeRO-2 keeps whole parameters: the updated shards are all-gathered after the step.
    if (p.zero == 2)
      param_gather = all_gather_s(dense_params * c.fp8.param_gather_bytes, dense_shard_group, c.fabric) +
                     all_gather_s(expert_params * c.fp8.param_gather_bytes, expert_shard_group, c.fabric);
  } else if (p.zero == 0) {
    // --- Data-parallel gradient synchronisation once per iteration ------------------------------
    // ZeRO-0: all-reduce the gradients over dp x cp.
    grad_sync = all_reduce_s(dense_params * bytes.grad, dense_replica_group, c.fabric) +
                all_reduce_s(expert_params * bytes.grad, expert_replica_group, c.fabric);
  } else {
    // ZeRO-1 (Rajbhandari et al. 2020; Megatron's distributed optimizer, which keeps the whole
    // gradient buffer and reduces it once per iteration): reduce-scatter over the shard group,
    // all-reduce the shard across replicas, all-gather the updated parameters (bf16, or FP8 with
    // fp8_param_gather).
    grad_sync = reduce_scatter_s(dense_params * bytes.grad, dense_shard_group, c.fabric) +
                all_reduce_s(dense_params * bytes.grad / shards.dense, dense_replica_group, c.fabric) +
                reduce_scatter_s(expert_params * bytes.grad, expert_shard_group, c.fabric) +
                all_reduce_s(expert_params * bytes.grad / shards.expert, expert_replica_group, c.fabric);
    param_gather = all_gather_s(dense_params * c.fp8.param_gather_bytes, dense_shard_group, c.fabric) +
                   all_gather_s(expert_params * c.fp8.param_gather_bytes, expert_shard_group, c.fabric);
  }
  // DualPipe holds each part twice (rank s and rank pp-1-s, DeepSeek-V3 Sec. 3.2.1): the two
  // copies' gradients are summed before the step, here on the shards the data-parallel reduction
  // left (a 2-rank all-reduce, (pp-1-2s)·tp·cp·dp GPUs apart).
  if (p.schedule == Schedule::kDualPipe) {
    const int distance = std::abs(p.pp - 1 - 2 * s) * p.tp * p.cp * p.dp;
    grad_sync += all_reduce_s(dense_params * bytes.grad / shards.dense + expert_params * bytes.grad / shards.expert,
                              place_group(2, distance, cluster), c.fabric);
  }
  // The parameter all-gather overlaps the next iteration's forward (overlap-param-gather); what
  // is left is exposed after the optimizer step.
  sc.param_gather_s =
      p.overlap_param_gather ? std::max(0.0, param_gather - cal.dp_overlap * total.forward_s) : param_gather;
  const double owned_params = dense_params / shards.dense + expert_params / shards.expert;
  sc.optimizer_s = owned_params * bytes.optimizer_traffic / c.device.hbm_bytes_per_s;
  // Interference of the data-parallel traffic hidden behind compute (the overlapped gradient
  // reduction, at most all of it; the hidden part of the parameter gather) slows that compute by
  // overlap_interference x its time; charged once per iteration, with the optimizer step.
  const bool reduce_overlapped = p.grad_sync == GradSync::kOverlapped && p.overlap_grad_reduce;
  sc.optimizer_s += cal.overlap_interference * ((reduce_overlapped ? grad_sync : 0.0) + param_gather - sc.param_gather_s);
  sc.memory_capacity_bytes = cluster.gpu.memory_bytes;
  sc.usable_memory_bytes = cluster.gpu.memory_bytes * (1 - options.memory_margin);

  // Chunk costs for the replay: communication and ZeRO-3 traffic go with the pass that waits for
  // them; the gradient reduction is split by each chunk's share of the parameters.
  sc.chunks.resize(static_cast<std::size_t>(v));
  for (int ch = 0; ch < v; ++ch) {
    const ChunkPart& q = parts[static_cast<std::size_t>(ch)];
    const double layer_share = st.layers > 0 ? static_cast<double>(q.layers) / st.layers : 1.0 / v;
    const double chunk_params = q.dense_params + q.expert_params;
    sim::ChunkCost& cc = sc.chunks[static_cast<std::size_t>(ch)];
    // With pipelining, each chunk pass pays its scheduling and send/receive launch overhead.
    const double chunk_overhead = p.pp > 1 ? cal.pipeline_chunk_overhead_s : 0.0;
    cc.forward_s = q.forward_with_comm_s() + layer_share * zero3_forward_s + chunk_overhead;
    cc.backward_weight_s = q.weight_grad_s;
    cc.backward_input_s = q.backward_with_comm_s() - q.weight_grad_s + layer_share * zero3_backward_s + chunk_overhead;
    // The allocator's fragmentation comes on top of the activations (Calibration::fragmentation).
    cc.activation_bytes = q.kept_bytes * (1 + cal.fragmentation);
    cc.recompute_bytes = q.recompute_bytes * (1 + cal.fragmentation);
    cc.grad_sync_s = st.params > 0 ? grad_sync * chunk_params / st.params : grad_sync / v;
    cc.grad_sync_buckets = std::max(1, static_cast<int>(std::ceil(chunk_params / grad_bucket_params(p))));
  }

  st.compute_s = total.forward_s + total.backward_s + total.recompute_s;
  st.forward_s = total.forward_with_comm_s() + zero3_forward_s;
  st.backward_s = total.backward_with_comm_s() + zero3_backward_s;
  out.tp_s = total.tp_forward_s + total.tp_backward_s + total.recompute_tp_s;
  out.cp_s = total.cp_forward_s + total.cp_backward_s + total.recompute_cp_s;
  out.ep_s = total.ep_forward_s + total.ep_backward_s + total.recompute_ep_s;
  out.zero3_s = zero3_forward_s + zero3_backward_s;
  out.kept_bytes = total.kept_bytes;
  out.offloaded_bytes = total.offloaded_bytes;
  out.recompute_bytes = total.recompute_bytes;
  out.recompute_flops = total.recompute_flops;

  st.memory =
      static_memory(p, bytes, shards, buffer_bytes, dense_params, expert_params, largest_layer_params(), logits_bytes(s));
  sc.static_memory_bytes = st.memory.total_bytes();
  return out;
}

void validate(const EstimateOptions& options) {
  // A negative margin would make more memory usable than the GPU has; 1 or more leaves none.
  if (!(options.memory_margin >= 0 && options.memory_margin < 1))
    throw Error(fmt::format("memory_margin: {} must be a finite number >= 0 and < 1 (the fraction of GPU memory "
                            "kept free)",
                            options.memory_margin));
}

StageCostModel::StageCostModel(const ModelSpec& model, const ClusterSpec& cluster, const TrainingSpec& training,
                               const ParallelConfig& config, const Calibration& calibration,
                               const EstimateOptions& options)
    : impl_((validate(options), std::make_unique<Impl>(model, cluster, training, config, calibration, options))) {}

StageCostModel::~StageCostModel() = default;

const ParallelConfig& StageCostModel::config() const { return impl_->config; }
int StageCostModel::num_microbatches() const { return impl_->microbatches; }
double StageCostModel::memory_limit_bytes() const { return paratune::memory_limit_bytes(impl_->c.cluster, impl_->options); }

double memory_limit_bytes(const ClusterSpec& cluster, const EstimateOptions& options) {
  return cluster.gpu.memory_bytes * (1 - options.memory_margin);
}

bool StageCostModel::layers_alike() const {
  const ModelSpec& m = impl_->c.model;
  return !m.moe || (m.moe->first_dense_layers == 0 && m.moe->layer_freq == 1);
}

double StageCostModel::model_work_s() const {
  const ChunkPart whole = impl_->chunk(0, impl_->c.model.num_layers, 0, true, true, impl_->c.model.mtp_layers);
  return whole.forward_with_comm_s() + whole.backward_with_comm_s();
}

std::uint64_t StageCostModel::range_signature(int first_layer, int layers) const {
  const Impl& im = *impl_;
  const int v = im.config.vpp, chunk_layers = layers / v;
  // MoE counts per chunk, packed in as many bits as a chunk's layer count needs; where they do not
  // fit in 63 bits, the range itself (top bit set): no sharing, never a false one.
  const int bits = static_cast<int>(std::bit_width(static_cast<unsigned>(chunk_layers)));
  if (static_cast<long long>(bits) * v > 63) return (std::uint64_t{1} << 63) | static_cast<std::uint64_t>(first_layer);
  std::uint64_t signature = 0;
  for (int ch = 0; ch < v; ++ch) {
    const int begin = first_layer + ch * chunk_layers;
    const int moe = cost_detail::moe_layers_below(im.c.model, begin + chunk_layers) -
                    cost_detail::moe_layers_below(im.c.model, begin);
    signature = (signature << bits) | static_cast<std::uint64_t>(moe);
  }
  return signature;
}

StageWork StageCostModel::stage_work(int rank, int first_layer, int layers, int recomputed, double in_flight) const {
  const Impl& im = *impl_;
  const int v = im.config.vpp;
  // The stage assignment knows only each rank's total: its chunks are taken as even (layers / v),
  // which the planner's candidates are (it plans no uneven layout).
  const int chunk_layers = layers / v;
  ChunkPart total;
  for (int ch = 0; ch < v; ++ch)
    total += im.chunk(first_layer + ch * chunk_layers, chunk_layers, im.recomputed_in_chunk(recomputed, ch),
                      rank == 0 && ch == 0, rank == im.config.pp - 1 && ch == v - 1,
                      im.mtp_of_chunk[static_cast<std::size_t>(ch) * im.config.pp + rank]);
  const auto [zero3_forward_s, zero3_backward_s] = im.zero3_exposed_s(total);
  StageWork w;
  w.time_s = total.forward_with_comm_s() + total.backward_with_comm_s() + zero3_forward_s + zero3_backward_s +
             (im.config.pp > 1 ? 2 * v * im.c.calibration.pipeline_chunk_overhead_s : 0.0);
  const MemoryBreakdown mem = static_memory(im.config, im.bytes, im.shards, im.buffer_bytes, total.dense_params,
                                            total.expert_params, im.largest_layer_params(), im.logits_bytes(rank));
  w.memory_bytes =
      mem.total_bytes() + (1 + im.c.calibration.fragmentation) * (in_flight * total.kept_bytes + total.recompute_bytes);
  return w;
}

namespace {

// Everything estimate() and pipeline_problem() share.
struct Analysis {
  Estimate out;
  sim::PipelineProblem problem;
  // Per rank, per micro-batch: exposed TP (incl. recompute), CP, EP and ZeRO-3 communication.
  std::vector<double> stage_tp, stage_cp, stage_ep, stage_z3;
  std::vector<double> kept_per_microbatch, recompute_bytes;  // per rank
  std::vector<double> offloaded_per_microbatch;             // per rank: in host memory (offload)
  double hardware_extra_flops = 0;
  double fragmentation = 0;
};

Analysis analyse(const ModelSpec& model, const ClusterSpec& cluster, const TrainingSpec& training,
                 const ParallelConfig& requested, const Calibration& cal, const EstimateOptions& options) {
  const StageCostModel stage_model(model, cluster, training, requested, cal, options);
  const StageCostModel::Impl& im = stage_model.impl();
  Analysis a;
  Estimate& out = a.out;
  out.config = im.config;
  const ParallelConfig& p = out.config;
  const int m = im.microbatches;
  out.num_microbatches = m;

  // Pipeline P2P: one activation (or its gradient) per micro-batch per stage boundary. Rank r holds
  // GPUs [r·S, (r+1)·S), S = tp·cp·dp; a boundary inside one node uses NVLink, else the network.
  const int rank_gpus = p.tp * p.cp * p.dp;
  const double p2p_bytes = im.c.tokens * model.hidden_size * kActivationBytes / im.sp_div;
  auto boundary_p2p_s = [&](int r) {
    const int gpn = cluster.scale_up_gpus();
    const bool wrap = r == p.pp - 1;
    const bool same_node = wrap ? p.pp * rank_gpus <= gpn
                                : (r * rank_gpus) / gpn == ((r + 2) * rank_gpus - 1) / gpn;
    return p2p_s(p2p_bytes, same_node ? im.c.fabric.intra : im.c.fabric.inter);
  };

  // --- Pipeline problem ------------------------------------------------------------------------------
  sim::PipelineProblem& pb = a.problem;
  pb.microbatches = m;
  pb.schedule = p.schedule;
  // Without overlap-grad-reduce Megatron reduces all gradients after the flush (finalize_model_grads):
  // that is the shifted placement.
  pb.grad_sync = (p.grad_sync == GradSync::kOverlapped && !p.overlap_grad_reduce) ? GradSync::kShifted : p.grad_sync;
  pb.overlap_window = cal.dp_overlap;
  pb.blocking_p2p = !p.overlap_p2p;
  pb.iteration_overhead_s = cal.iteration_overhead_s;
  pb.stages.resize(static_cast<std::size_t>(p.pp));

  // Which model part each chunk is: the schedule's placement (sim/schedule.h). The configuration
  // numbers its chunks c·pp + r (chunk_layers); the replay may hold more chunks than the
  // configuration's vpp (DualPipe: two copies of each rank's part).
  const sim::PipelineSchedule& schedule = sim::schedule_for(p.schedule);
  const sim::PipelineShape shape = sim::pipeline_shape(p.schedule, p.pp, p.vpp, m);
  const int v = shape.chunks, model_parts = schedule.parts(shape);
  const std::vector<int> layers_of = sim::by_model_part(p, chunk_layers(p));
  const std::vector<int> mtp_of = sim::by_model_part(p, im.mtp_of_chunk);
  // First decoder layer of each part, in model order.
  std::vector<int> first_layer_of(static_cast<std::size_t>(model_parts) + 1, 0);
  for (int k = 0; k < model_parts; ++k) first_layer_of[k + 1] = first_layer_of[k] + layers_of[static_cast<std::size_t>(k)];

  out.stages.resize(static_cast<std::size_t>(p.pp));
  a.stage_tp.assign(p.pp, 0);
  a.stage_cp.assign(p.pp, 0);
  a.stage_ep.assign(p.pp, 0);
  a.stage_z3.assign(p.pp, 0);
  a.kept_per_microbatch.assign(p.pp, 0);
  a.recompute_bytes.assign(p.pp, 0);
  a.offloaded_per_microbatch.assign(p.pp, 0);
  std::vector<ChunkPart> parts(static_cast<std::size_t>(v));
  const std::vector<int> recomputed_per_stage = recomputed_layers_per_stage(p);
  std::vector<int> layers_in_chunk(static_cast<std::size_t>(v)), recomputed;
  for (int s = 0; s < p.pp; ++s) {
    for (int ch = 0; ch < v; ++ch)
      layers_in_chunk[static_cast<std::size_t>(ch)] = layers_of[static_cast<std::size_t>(schedule.part_of(shape, s, ch))];
    im.recomputed_per_chunk(recomputed_per_stage[static_cast<std::size_t>(s)], layers_in_chunk, recomputed);
    for (int ch = 0; ch < v; ++ch) {
      const int k = schedule.part_of(shape, s, ch);
      parts[static_cast<std::size_t>(ch)] = im.chunk(first_layer_of[k], layers_in_chunk[static_cast<std::size_t>(ch)],
                                                     recomputed[static_cast<std::size_t>(ch)], k == 0,
                                                     k == model_parts - 1, mtp_of[static_cast<std::size_t>(k)]);
    }
    RankCost rank = im.rank_cost(s, parts);
    rank.sim.p2p_next_s = p.pp > 1 ? boundary_p2p_s(s) : 0;
    pb.stages[static_cast<std::size_t>(s)] = std::move(rank.sim);
    out.stages[static_cast<std::size_t>(s)] = rank.estimate;
    a.stage_tp[s] = rank.tp_s;
    a.stage_cp[s] = rank.cp_s;
    a.stage_ep[s] = rank.ep_s;
    a.stage_z3[s] = rank.zero3_s;
    a.hardware_extra_flops +=
        rank.recompute_flops * schedule.microbatches_per_chunk(shape) * (static_cast<double>(p.dp) * p.tp * p.cp);
    a.kept_per_microbatch[s] = rank.kept_bytes;
    a.recompute_bytes[s] = rank.recompute_bytes;
    a.offloaded_per_microbatch[s] = rank.offloaded_bytes;
  }
  a.fragmentation = cal.fragmentation;
  out.memory_limit_bytes = stage_model.memory_limit_bytes();
  return a;
}

// Fills the estimate from the replay: time, breakdown, activation memory, throughput, fit.
Estimate finish(Analysis&& a, const sim::SimulationResult& replay, const ModelSpec& model, const ClusterSpec& cluster,
                const TrainingSpec& training, const EstimateOptions& options) {
  Estimate out = std::move(a.out);
  const ParallelConfig& p = out.config;
  const int m = out.num_microbatches;
  out.iteration_time_s = replay.iteration_time_s;
  out.bubble_fraction = replay.bubble_fraction;

  // Activations per rank: the replay's peak, split back into the activations proper and the
  // allocator fragmentation on top of them.
  for (int s = 0; s < p.pp; ++s) {
    StageEstimate& st = out.stages[static_cast<std::size_t>(s)];
    const double peak = replay.stages[static_cast<std::size_t>(s)].peak_activation_bytes / (1 + a.fragmentation);
    st.memory.activations_bytes = peak;
    st.memory.other_bytes += a.fragmentation * peak;
    st.in_flight_microbatches =
        a.kept_per_microbatch[s] > 0 ? (peak - a.recompute_bytes[s]) / a.kept_per_microbatch[s] : 0;
    // What those in-flight micro-batches keep in host memory instead (activation offload).
    st.host_activation_bytes = st.in_flight_microbatches * a.offloaded_per_microbatch[s];
  }

  // --- Breakdown, on the bottleneck rank (most work per micro-batch) ------------------------------
  // Its timeline is: passes (compute + exposed TP/CP/EP/ZeRO-3), blocking sends, idle before the
  // flush (bubble, incl. waiting on P2P), gradient reduction exposed after its last pass (incl.
  // waiting for slower ranks' updates), its optimizer step and the fixed overhead.
  int b = 0;
  for (int s = 1; s < p.pp; ++s)
    if (out.stages[s].forward_s + out.stages[s].backward_s > out.stages[b].forward_s + out.stages[b].backward_s) b = s;
  const StageEstimate& bs = out.stages[static_cast<std::size_t>(b)];
  const sim::StageResult& rs = replay.stages[static_cast<std::size_t>(b)];
  TimeBreakdown& br = out.breakdown;
  // Each chunk runs every micro-batch, DualPipe's each direction's half.
  const double runs = sim::schedule_for(p.schedule).microbatches_per_chunk(sim::pipeline_shape(p.schedule, p.pp, p.vpp, m));
  br.compute_s = runs * bs.compute_s;
  br.tp_comm_s = runs * a.stage_tp[b];
  br.cp_comm_s = runs * a.stage_cp[b];
  br.ep_comm_s = runs * a.stage_ep[b];
  br.zero3_comm_s = runs * a.stage_z3[b];
  br.bubble_s = rs.bubble_s;
  br.pp_comm_s = rs.blocking_p2p_s;
  br.optimizer_s = a.problem.stages[static_cast<std::size_t>(b)].optimizer_s;
  br.overhead_s = a.problem.iteration_overhead_s;
  br.dp_comm_s = out.iteration_time_s - (br.compute_s + br.tp_comm_s + br.cp_comm_s + br.ep_comm_s + br.zero3_comm_s +
                                         br.bubble_s + br.pp_comm_s + br.optimizer_s + br.overhead_s);

  // --- Throughput ------------------------------------------------------------------------------------
  const GpuSpec& gpu = cluster.gpu;
  const double peak = gpu.peak_flops_per_s(training.precision);
  const double tokens = static_cast<double>(training.global_batch) * training.seq_len;
  const double n_gpus = cluster.num_gpus();
  out.tokens_per_s = tokens / out.iteration_time_s;
  out.model_flops = training_flops_per_token(model, training.seq_len) * tokens;
  out.hardware_flops = out.model_flops + a.hardware_extra_flops;
  out.mfu = out.model_flops / (out.iteration_time_s * n_gpus * peak);
  out.hfu = out.hardware_flops / (out.iteration_time_s * n_gpus * peak);
  out.tflops_per_gpu = out.model_flops / (out.iteration_time_s * n_gpus) / 1e12;

  // --- Fit -----------------------------------------------------------------------------------------
  int worst = 0;
  for (int s = 0; s < p.pp; ++s) {
    const double total = out.stages[static_cast<std::size_t>(s)].memory.total_bytes();
    if (total > out.peak_memory_bytes) {
      out.peak_memory_bytes = total;
      worst = s;
    }
  }
  out.fits = out.peak_memory_bytes <= out.memory_limit_bytes;
  if (!out.fits) {
    const MemoryBreakdown& w = out.stages[static_cast<std::size_t>(worst)].memory;
    out.reason = fmt::format(
        "stage {} needs {} but the limit is {} ({} x (1 - margin {})): weights {}, grads {}, optimizer {}, "
        "activations {}, other {}",
        worst, units::format_bytes(out.peak_memory_bytes), units::format_bytes(out.memory_limit_bytes),
        units::format_bytes(gpu.memory_bytes), options.memory_margin, units::format_bytes(w.weights_bytes),
        units::format_bytes(w.grads_bytes), units::format_bytes(w.optimizer_bytes),
        units::format_bytes(w.activations_bytes), units::format_bytes(w.other_bytes));
  }
  return out;
}

}  // namespace

sim::PipelineProblem pipeline_problem(const ModelSpec& model, const ClusterSpec& cluster, const TrainingSpec& training,
                                      const ParallelConfig& config, const Calibration& calibration,
                                      const EstimateOptions& options) {
  return analyse(model, cluster, training, config, calibration, options).problem;
}

sim::PipelineProblem pipeline_problem_with_stage_meshes(const ModelSpec& model, const ClusterSpec& cluster,
                                                        const TrainingSpec& training, const ParallelConfig& config,
                                                        const std::vector<StageMesh>& meshes,
                                                        const Calibration& calibration, const EstimateOptions& options) {
  if (static_cast<int>(meshes.size()) != config.pp)
    throw Error(fmt::format("{} stage meshes given but pp={}", meshes.size(), config.pp));
  // Counts in 64 bits, each mesh at most the cluster (so the sum cannot wrap either).
  std::int64_t gpus = 0;
  for (const StageMesh& mesh : meshes) {
    const std::int64_t mesh_gpus = static_cast<std::int64_t>(mesh.dp) * mesh.tp;
    if (mesh_gpus > cluster.num_gpus())
      throw Error(fmt::format("stage mesh {}x{} = {} GPUs exceeds the cluster's {}", mesh.dp, mesh.tp, mesh_gpus,
                              cluster.num_gpus()));
    gpus += mesh_gpus;
  }
  if (gpus != cluster.num_gpus())
    throw Error(fmt::format("the stage meshes use {} GPUs but the cluster has {}", gpus, cluster.num_gpus()));
  const std::int64_t microbatch_sequences = static_cast<std::int64_t>(config.dp) * config.mbs;
  if (microbatch_sequences > training.global_batch)
    throw Error(fmt::format("dp*mbs = {}*{} = {} exceeds global_batch={}", config.dp, config.mbs, microbatch_sequences,
                            training.global_batch));
  sim::PipelineProblem problem;
  for (int i = 0; i < config.pp; ++i) {
    const StageMesh& mesh = meshes[static_cast<std::size_t>(i)];
    auto fail = [&](const std::string& rule) {
      return Error(fmt::format("stage mesh {} ({}x{}): {}", i, mesh.dp, mesh.tp, rule));
    };
    if (microbatch_sequences % mesh.dp != 0)
      throw fail(fmt::format("dp={} does not divide the micro-batch of dp*mbs = {} sequences", mesh.dp,
                             microbatch_sequences));
    ParallelConfig stage_config = config;
    stage_config.dp = mesh.dp;
    stage_config.tp = mesh.tp;
    stage_config.mbs = static_cast<int>(microbatch_sequences / mesh.dp);
    stage_config.op = 0;
    // The stage is costed as if the whole pipeline ran on meshes like its own.
    ClusterSpec stage_cluster = cluster;
    // At most pp x the cluster: each mesh is a part of the cluster's GPUs (checked above).
    const std::int64_t stage_gpus = static_cast<std::int64_t>(config.pp) * mesh.dp * mesh.tp;
    if (stage_gpus % cluster.gpus_per_node != 0)
      throw fail(fmt::format("pp x dp x tp = {} GPUs do not fill whole {}-GPU nodes", stage_gpus, cluster.gpus_per_node));
    if (stage_gpus > kMaxGpus)
      throw fail(fmt::format("pp x dp x tp = {} GPUs: costed as a whole pipeline of such meshes, more than {}",
                             stage_gpus, kMaxGpus));
    stage_cluster.nodes = static_cast<int>(stage_gpus / cluster.gpus_per_node);
    sim::PipelineProblem stage_problem;
    try {
      stage_problem = pipeline_problem(model, stage_cluster, training, stage_config, calibration, options);
    } catch (const Error& e) {
      throw e.with_context(fmt::format("stage mesh {} ({}x{})", i, mesh.dp, mesh.tp));
    }
    if (i == 0) problem = stage_problem;
    else problem.stages[static_cast<std::size_t>(i)] = stage_problem.stages[static_cast<std::size_t>(i)];
  }
  return problem;
}

Estimate estimate(const ModelSpec& model, const ClusterSpec& cluster, const TrainingSpec& training,
                  const ParallelConfig& config, const Calibration& calibration, const EstimateOptions& options) {
  Analysis a = analyse(model, cluster, training, config, calibration, options);
  const sim::SimulationResult replay = sim::simulate(a.problem, sim::SimulationOptions{.record = false});
  return finish(std::move(a), replay, model, cluster, training, options);
}

std::optional<Estimate> estimate_if_faster(const ModelSpec& model, const ClusterSpec& cluster,
                                           const TrainingSpec& training, const ParallelConfig& config,
                                           double faster_than_s, const Calibration& calibration,
                                           const EstimateOptions& options) {
  Analysis a = analyse(model, cluster, training, config, calibration, options);
  if (sim::iteration_time_lower_bound_s(a.problem) >= faster_than_s) return std::nullopt;
  const sim::SimulationResult replay = sim::simulate(a.problem, sim::SimulationOptions{.record = false});
  return finish(std::move(a), replay, model, cluster, training, options);
}

}  // namespace paratune
