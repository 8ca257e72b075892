// planning_bounds(): lower bounds on a candidate's fullest stage and iteration time over every
// stage assignment, from one StageCostModel's per-layer costs (paratune/cost/stage_model.h says
// what they bound and why they hold).
#include "paratune/cost/stage_model.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <utility>

#include "flat_table.h"
#include "memory.h"
#include "paratune/cost/collectives.h"
#include "paratune/sim/schedule.h"
#include "stage_cost_model_impl.h"

namespace paratune {
namespace {

using cost_detail::ChunkPart;
using cost_detail::shard_degrees;
using cost_detail::ShardDegrees;
using cost_detail::static_memory;

constexpr double kInfinity = std::numeric_limits<double>::infinity();

double work_s(const ChunkPart& c) { return c.forward_with_comm_s() + c.backward_with_comm_s(); }

// ZeRO-3's per-micro-batch traffic for a part of the model without the collectives' latency
// terms: {gather - hide·forward, gather + scatter - hide·backward}. Collective times are
// latency + bytes/bandwidth, so these are linear in the part (the value for a sum of parts is the
// sum of the values) and, clamped at 0, below zero3_exposed_s() of any rank holding the part.
struct Zero3Traffic {
  const Fabric& fabric;
  GroupPlacement dense_group, expert_group;
  double gather_bytes, grad_bytes, hide;

  [[nodiscard]] std::pair<double, double> linear_s(const ChunkPart& part) const {
    auto bandwidth_s = [&](double (*collective)(double, const GroupPlacement&, const Fabric&), double bytes,
                           const GroupPlacement& g) { return collective(bytes, g, fabric) - collective(0, g, fabric); };
    const double gather = bandwidth_s(all_gather_s, part.dense_params * gather_bytes, dense_group) +
                          bandwidth_s(all_gather_s, part.expert_params * gather_bytes, expert_group);
    const double scatter = bandwidth_s(reduce_scatter_s, part.dense_params * grad_bytes, dense_group) +
                           bandwidth_s(reduce_scatter_s, part.expert_params * grad_bytes, expert_group);
    return {gather - hide * part.forward_s, gather + scatter - hide * part.backward_s};
  }
  // At least the exposed traffic of any set of ranks holding the part together.
  [[nodiscard]] double floor_s(const ChunkPart& part) const {
    const auto [forward, backward] = linear_s(part);
    return std::max(0.0, forward) + std::max(0.0, backward);
  }
  // What an extra part (embedding, head) adds at least to a rank's exposed traffic, whatever else
  // the rank holds: max(0, x + e) >= max(0, x) + min(0, e). Not positive.
  [[nodiscard]] double extra_floor_s(const ChunkPart& part) const {
    const auto [forward, backward] = linear_s(part);
    return std::min(0.0, forward) + std::min(0.0, backward);
  }
};

// min over k_s >= 1 with sum k_s = blocks of max_s w_s, w_s = k_s·block + [s = 0]·embedding +
// [s = pp-1]·head: the least bottleneck of any stage assignment of alike blocks of vpp layers. The
// optimum equals one of k·block (+ embedding or + head); feasibility of a cap C is
// sum_s floor((C - extra_s) / block) >= blocks, monotone in C, so each family is binary-searched.
double least_bottleneck_s(double block, double embedding, double head, int blocks, int pp) {
  if (pp == 1) return blocks * block + embedding + head;
  auto fits = [&](double cap) {
    auto most = [&](double extra) { return std::floor((cap - extra) / block + 1e-9); };
    const double first = most(embedding), middle = most(0), last = most(head);
    if (first < 1 || last < 1 || (pp > 2 && middle < 1)) return false;
    return first + last + (pp - 2) * middle >= blocks;
  };
  double best = std::numeric_limits<double>::infinity();
  const std::array<double, 3> extras{0.0, embedding, head};
  for (std::size_t e = 0; e < extras.size(); ++e) {
    const double extra = extras[e];
    // A family met before gives the same cap again (embedding and head are 0 under ZeRO-3's bounds).
    if (std::find(extras.begin(), extras.begin() + static_cast<std::ptrdiff_t>(e), extra) !=
        extras.begin() + static_cast<std::ptrdiff_t>(e))
      continue;
    if (!fits(blocks * block + extra)) continue;
    // The fewest blocks k whose cap fits (fits() only turns true as k grows): a walk from an even
    // share, which is close, where block > 0; a binary search otherwise.
    int k = 1;
    if (block > 0) {
      k = std::clamp((blocks + pp - 1) / pp, 1, blocks);
      if (fits(k * block + extra)) {
        while (k > 1 && fits((k - 1) * block + extra)) --k;
      } else {
        while (!fits(++k * block + extra)) {}
      }
    } else {
      int hi = blocks;
      while (k < hi) {
        const int mid = (k + hi) / 2;
        if (fits(mid * block + extra)) hi = mid;
        else k = mid + 1;
      }
    }
    best = std::min(best, k * block + extra);
  }
  return best;
}

// One decoder layer of each kind the model has (dense, MoE), from those that stand for every kind:
// the first, and in an MoE model the first after the dense ones and the one after it (MoE after
// dense ones, or dense between). A chunk of one layer depends on nothing else of it, and the
// bounds take minima and maxima over the kinds, so a kind met again is left out. Fixed storage:
// every layer shape the planner bounds asks for them.
struct KindLayers {
  std::array<int, 2> layer{};
  int count = 0;
  [[nodiscard]] const int* begin() const { return layer.data(); }
  [[nodiscard]] const int* end() const { return layer.data() + count; }
};

KindLayers kind_layers(const ModelSpec& model) {
  KindLayers out;
  std::array<bool, 2> seen{};  // by the number of MoE layers in the one-layer chunk
  auto add = [&](int layer) {
    const int moe = cost_detail::moe_layers_below(model, layer + 1) - cost_detail::moe_layers_below(model, layer);
    if (!std::exchange(seen[static_cast<std::size_t>(moe)], true)) out.layer[static_cast<std::size_t>(out.count++)] = layer;
  };
  add(0);
  if (model.moe)
    for (int layer : {model.moe->first_dense_layers, model.moe->first_dense_layers + 1})
      if (layer < model.num_layers) add(layer);
  return out;
}

// min over w_s >= 0 with sum w_s = W of max_s (rho·sum_{j<s} w_j + m·w_s): all terms equal, w_s
// geometric with ratio (1 - rho/m), giving W·rho / (1 - (1 - rho/m)^p), and m·W/p as rho -> 0.
double pipeline_relaxation_s(double work, double rho, double m, double pp) {
  return rho > 0 ? work * rho / (1 - std::pow(1 - rho / m, pp)) : m * work / pp;
}

}  // namespace

StageCostModel::Impl::BoundBasis& StageCostModel::Impl::bound_basis() const {
  if (basis) return *basis;
  const ModelSpec& model = c.model;
  // The last rank also runs the multi-token-prediction layers (Megatron-Core puts them there).
  const ChunkPart embedding = chunk(0, 0, 0, true, false), head = chunk(0, 0, 0, false, true, model.mtp_layers);
  std::vector<ChunkPart> kinds, kinds_recomputed;
  for (int layer : kind_layers(model)) {
    kinds.push_back(chunk(layer, 1, 0, false, false));
    kinds_recomputed.push_back(chunk(layer, 1, 1, false, false));
  }
  std::vector<ChunkPart> parts = kinds;
  parts.push_back(embedding);
  parts.push_back(head);
  double forward_share = 1, critical_share = 1;
  for (const ChunkPart& part : parts) {
    const double w = work_s(part);
    if (w <= 0) continue;
    forward_share = std::min(forward_share, part.forward_with_comm_s() / w);
    critical_share = std::min(critical_share, (w - part.weight_grad_s) / w);
  }
  basis = std::make_unique<BoundBasis>(BoundBasis{.whole = chunk(0, model.num_layers, 0, true, true, model.mtp_layers),
                                                  .layer = chunk(0, 1, 0, false, false),
                                                  .layer_kinds = kinds,
                                                  .layer_kinds_recomputed = kinds_recomputed,
                                                  .embedding = embedding,
                                                  .head = head,
                                                  .smallest_forward_share = forward_share,
                                                  .smallest_critical_share = critical_share,
                                                  .in_flight_shape = {0, 0, 0},
                                                  .in_flight_schedule = Schedule::kOneFOneB,
                                                  .in_flight = {}});
  return *basis;
}

PlanningBounds planning_bounds(const StageCostModel& layers, const ParallelConfig& q) {
  const StageCostModel::Impl& im = layers.impl();
  const ParallelConfig& p = im.config;
  if (q.tp != p.tp || q.cp != p.cp || q.ep != p.ep || q.expert_tp() != p.expert_tp() || q.mbs != p.mbs ||
      q.sequence_parallel != p.sequence_parallel || q.recompute != p.recompute ||
      q.recompute_modules != p.recompute_modules || q.offload_modules != p.offload_modules ||
      q.tp_comm_overlap != p.tp_comm_overlap)
    throw Error(fmt::format("planning_bounds: candidate '{}' has other layer costs than '{}'", to_string(q), to_string(p)));
  const ModelSpec& model = im.c.model;
  const Calibration& cal = im.c.calibration;
  StageCostModel::Impl::BoundBasis& basis = im.bound_basis();
  const ShardDegrees shards = shard_degrees(q);
  const double m = q.num_microbatches(im.c.training);
  const double pp = q.pp;
  PlanningBounds b;

  // --- Memory ------------------------------------------------------------------------------------------
  const bool full = q.recompute == RecomputeMode::kFull;
  const double smallest_kept_layer =
      full ? std::min(im.dense.input_bytes, model.moe ? im.moe.input_bytes : im.dense.input_bytes)
           : std::min(im.dense.activation_bytes, model.moe ? im.moe.activation_bytes : im.dense.activation_bytes);
  const double fragmented = 1 + cal.fragmentation;
  const double kept_layer = fragmented * smallest_kept_layer;
  const double gathered_layer = im.largest_layer_params();  // ZeRO-3: on every rank
  const double candidate_buffers = im.buffer_bytes_for(q);
  auto static_bytes = [&](double dense_params, double expert_params, double logits) {
    return static_memory(q, im.bytes, shards, candidate_buffers, dense_params, expert_params, gathered_layer, logits)
        .total_bytes();
  };
  // (2) Stage s holds L_s layers and the schedule's in-flight micro-batches e_s of them:
  // M_s >= fixed + (params + e_s·kept per layer)·L_s = fixed + a_s·L_s. The fullest stage is
  // smallest when all are equal: M = fixed + L / sum_s 1/a_s.
  const sim::PipelineShape shape = sim::pipeline_shape(q.schedule, q.pp, q.vpp, static_cast<int>(m));
  if (shape.ranks != basis.in_flight_shape.ranks || shape.chunks != basis.in_flight_shape.chunks ||
      shape.microbatches != basis.in_flight_shape.microbatches || q.schedule != basis.in_flight_schedule) {
    basis.in_flight = sim::schedule_for(q.schedule).peak_in_flight(shape);
    basis.in_flight_shape = shape;
    basis.in_flight_schedule = q.schedule;
  }
  // (1) At least the mean stage: 1/p of all weights, gradients and optimizer state, and of the
  // activations held: rank s keeps e_s = held_s / v micro-batches of each of its L_s >= v layers,
  // so sum_s e_s·L_s >= sum_s held_s + (L - p·v)·min_s held_s / v.
  double held_sum = 0, held_min = std::numeric_limits<double>::infinity();
  for (int held : basis.in_flight) {
    held_sum += held;
    held_min = std::min(held_min, static_cast<double>(held));
  }
  const double layer_microbatches = held_sum + std::max(0.0, model.num_layers - pp * q.vpp) * held_min / q.vpp;
  const double mean = static_bytes(basis.whole.dense_params / pp, basis.whole.expert_params / pp,
                                   im.c.tokens * im.vocab_local * 6 / pp) +
                      kept_layer * layer_microbatches / pp;
  const double fixed = static_bytes(0, 0, 0);
  double layer_static = static_bytes(im.dense.params_dense, im.dense.params_expert, 0) - fixed;
  if (model.moe) layer_static = std::min(layer_static, static_bytes(im.moe.params_dense, im.moe.params_expert, 0) - fixed);
  // (3) Every rank holds at least vpp layers: M >= fixed + vpp·max_s a_s.
  double inverse_sum = 0, fullest_rank = 0;
  for (int held : basis.in_flight) {
    const double a = layer_static + kept_layer * held / q.vpp;
    inverse_sum += 1 / a;
    fullest_rank = std::max(fullest_rank, q.vpp * a);
  }
  b.memory_bytes = std::max({mean, fixed + model.num_layers / inverse_sum, fixed + fullest_rank});

  // Recompute that memory forces (recompute=full): stage s fits its L_s layers' full activations
  // only up to L_s = (limit - fixed) / a_s; each layer beyond needs a_s / (e_s·(full - input
  // activations)) layers recomputed. However the layers are spread, at least
  // (L - sum_s (limit - fixed)/a_s) x min_s of that are recomputed, each re-running its forward.
  // With layers of two kinds, each term takes the kind that makes it smallest (the least static
  // state and full activations, the most saved by a recompute, the cheapest forward to re-run).
  double forced_recompute_s = 0;
  if (full) {
    double full_layer = std::numeric_limits<double>::infinity(), saved_per_recompute = 0;
    double recompute_time = std::numeric_limits<double>::infinity();
    for (std::size_t k = 0; k < basis.layer_kinds.size(); ++k) {
      const double kind_full = fragmented * basis.layer_kinds[k].kept_bytes;
      full_layer = std::min(full_layer, kind_full);
      saved_per_recompute =
          std::max(saved_per_recompute, kind_full - fragmented * basis.layer_kinds_recomputed[k].kept_bytes);
      recompute_time = std::min(recompute_time, basis.layer_kinds_recomputed[k].recompute_s +
                                                    basis.layer_kinds_recomputed[k].recompute_comm_s());
    }
    const double room = layers.memory_limit_bytes() - fixed;
    double fitting_layers = 0, recompute_per_layer = std::numeric_limits<double>::infinity();
    for (int held : basis.in_flight) {
      const double in_flight = static_cast<double>(held) / q.vpp;
      const double per_layer = layer_static + in_flight * full_layer;
      fitting_layers += std::max(0.0, room) / per_layer;
      if (saved_per_recompute > 0) recompute_per_layer = std::min(recompute_per_layer, per_layer / (in_flight * saved_per_recompute));
    }
    const double excess = model.num_layers - fitting_layers;
    if (excess > 0 && recompute_per_layer < std::numeric_limits<double>::infinity())
      forced_recompute_s = excess * recompute_per_layer * recompute_time;
  }

  // --- Time ---------------------------------------------------------------------------------------------
  // The candidate's ZeRO-3 traffic (its shard groups, not the group model's); placing the groups
  // is the costly part of a bound, so only for ZeRO-3 candidates.
  const bool zero3_on = q.zero == 3;
  const ClusterSpec& gpn = im.c.cluster;
  const GroupPlacement none{};
  const Zero3Traffic zero3{im.c.fabric, zero3_on ? place_group(static_cast<int>(shards.dense), q.tp, gpn) : none,
                           zero3_on ? place_group(static_cast<int>(shards.expert), q.expert_tp() * q.ep, gpn) : none,
                           im.c.fp8.param_gather_bytes, im.bytes.grad,
                           q.overlap_param_gather ? cal.dp_overlap : 0.0};
  const double compute_work = work_s(basis.whole);
  // Sum over ranks of the passes: compute, traffic no layout hides, recompute memory forces.
  const double work = compute_work + (zero3_on ? zero3.floor_s(basis.whole) : 0) + forced_recompute_s;
  double pipeline = 0;
  switch (q.schedule) {
    case Schedule::kGPipe:
    case Schedule::kOneFOneB: pipeline = pipeline_relaxation_s(work, 1, m, pp); break;
    case Schedule::kInterleaved1F1B:  // one chunk, 1/v of a rank's work when the layers are alike
      pipeline = pipeline_relaxation_s(work, layers.layers_alike() ? 1.0 / q.vpp : 0, m, pp);
      break;
    case Schedule::kZeroBubbleH1:
      // Rank s starts after the first forward passed the ranks before it and runs all of its
      // passes (fill: the forward's compute share). Or: it runs its forwards and B passes, then the
      // last micro-batch's B passes back through the ranks before it (rho = 1 on forward + B work,
      // which holds all ZeRO-3 traffic and recompute).
      pipeline = std::max({pipeline_relaxation_s(compute_work, basis.smallest_forward_share, m, pp), m * work / pp,
                           pipeline_relaxation_s(basis.smallest_critical_share * compute_work + (work - compute_work),
                                                 1, m, pp)});
      break;
    case Schedule::kInterleavedZeroBubble:
    case Schedule::kZeroBubbleV:
    case Schedule::kDualPipeV:
    case Schedule::kDualPipe:
      // Every rank runs its share of all passes one after another: the mean rank's work.
      pipeline = m * work / pp;
      break;
  }
  // Whole layers: every rank runs its m micro-batches one after another, so the iteration takes at
  // least m x the smallest possible bottleneck over assignments of blocks of vpp layers (the
  // embedding on the first rank, the output layer on the last), each layer costing at least the
  // lightest kind's; with few blocks per rank this is well above the continuous bound. Only for
  // the looped placements: a V puts the output layer on rank 0, DualPipe holds two copies.
  if (sim::schedule_for(q.schedule).looped()) {
    double layer = kInfinity;
    for (const ChunkPart& kind : basis.layer_kinds)
      layer = std::min(layer, work_s(kind) + (zero3_on ? zero3.floor_s(kind) : 0.0));
    double embedding = work_s(basis.embedding), head = work_s(basis.head);
    if (zero3_on) {
      embedding += zero3.extra_floor_s(basis.embedding);
      head += zero3.extra_floor_s(basis.head);
    }
    pipeline =
        std::max(pipeline, m * least_bottleneck_s(q.vpp * layer, embedding, head, model.num_layers / q.vpp, q.pp));
  }
  b.iteration_time_s = pipeline + cal.iteration_overhead_s;
  return b;
}

double StageCostModel::lightest_layer_s() const {
  double lightest = kInfinity;
  for (const ChunkPart& kind : impl().bound_basis().layer_kinds) lightest = std::min(lightest, work_s(kind));
  return lightest;
}

namespace cost_detail {

// What group_bounds() needs of a layer shape's costs (every axis that changes a layer's cost, and
// whether the pipeline has more than one stage: a tied embedding is then held twice). The same for
// every group of the shape, whatever its dp, pp and micro-batch count.
struct GroupBasis {
  double whole_work_s = 0;  // the whole model's passes, one micro-batch, no full recompute
  double lightest_layer_s = 0, embedding_work_s = 0, head_work_s = 0;
  double dense_params = 0, expert_params = 0;  // the whole model's, on one GPU before ZeRO
  double largest_layer_params = 0;
  double logits_bytes = 0;      // the loss's logits (BF16 + fp32 softmax), on one rank
  double kept_layer_bytes = 0;  // the least a layer keeps for its backward (with fragmentation)
  double cp_buffer_bytes = 0;
};

// `kinds`: kind_layers(im.c.model), which a caller that builds many bases computes once.
GroupBasis group_basis(const LayerCosts& im, const KindLayers& kinds) {
  const ModelSpec& model = im.c.model;
  const bool full = im.config.recompute == RecomputeMode::kFull;
  const double smallest_kept_layer =
      full ? std::min(im.dense.input_bytes, model.moe ? im.moe.input_bytes : im.dense.input_bytes)
           : std::min(im.dense.activation_bytes, model.moe ? im.moe.activation_bytes : im.dense.activation_bytes);
  // The last rank also runs the multi-token-prediction layers (Megatron-Core puts them there).
  const ChunkPart whole = im.chunk(0, model.num_layers, 0, true, true, model.mtp_layers);
  double lightest = kInfinity;
  for (int layer : kinds) lightest = std::min(lightest, work_s(im.chunk(layer, 1, 0, false, false)));
  return GroupBasis{.whole_work_s = work_s(whole),
                    .lightest_layer_s = lightest,
                    .embedding_work_s = work_s(im.chunk(0, 0, 0, true, false)),
                    .head_work_s = work_s(im.chunk(0, 0, 0, false, true, model.mtp_layers)),
                    .dense_params = whole.dense_params,
                    .expert_params = whole.expert_params,
                    .largest_layer_params = im.largest_layer_params(),
                    .logits_bytes = im.c.tokens * im.vocab_local * 6,
                    .kept_layer_bytes = (1 + im.c.calibration.fragmentation) * smallest_kept_layer,
                    .cp_buffer_bytes = im.cp_buffer_bytes()};
}

// group_bounds() of a group of `pp` stages and `microbatches` micro-batches from its layer shape's basis.
PlanningBounds group_bounds(const GroupBasis& g, const ModelSpec& model, const Calibration& cal, const ParamBytes& bytes,
                            int pp_ranks, double microbatches, std::span<const ParallelConfig> most_sharded) {
  const double m = microbatches;
  const double pp = pp_ranks;
  PlanningBounds b;
  b.memory_bytes = std::numeric_limits<double>::infinity();
  for (const ParallelConfig& q : most_sharded) {
    const double buffers = StageCostModel::Impl::fixed_buffer_bytes(cal, q, model.moe.has_value(), g.cp_buffer_bytes);
    const double mean = static_memory(q, bytes, shard_degrees(q), buffers, g.dense_params / pp, g.expert_params / pp,
                                      g.largest_layer_params, g.logits_bytes / pp)
                            .total_bytes() +
                        g.kept_layer_bytes * model.num_layers / pp;
    b.memory_bytes = std::min(b.memory_bytes, mean);
  }
  // A ZeRO-3 member may hide part of the embedding's and head's passes behind its prefetches
  // (Zero3Traffic::extra_floor_s, at most what they take): they count as nothing then.
  const bool zero3 = std::any_of(most_sharded.begin(), most_sharded.end(), [](const ParallelConfig& q) { return q.zero == 3; });
  const double embedding = zero3 ? 0.0 : g.embedding_work_s, head = zero3 ? 0.0 : g.head_work_s;
  const double pipeline = std::max(m * g.whole_work_s / pp,
                                   m * least_bottleneck_s(g.lightest_layer_s, embedding, head, model.num_layers, pp_ranks));
  b.iteration_time_s = pipeline + cal.iteration_overhead_s;
  return b;
}

}  // namespace cost_detail

PlanningBounds group_bounds(const StageCostModel& layers, std::span<const ParallelConfig> most_sharded) {
  const StageCostModel::Impl& im = layers.impl();
  return cost_detail::group_bounds(cost_detail::group_basis(im, kind_layers(im.c.model)), im.c.model, im.c.calibration, im.bytes, im.config.pp,
                                   layers.num_microbatches(), most_sharded);
}

// The axes of a configuration that its layers' costs depend on (cost/layer_cost.h reads no others;
// planning_bounds checks the same list),
// and whether the last stage holds a copy of a tied embedding (pp > 1: GroupBasis).
struct GroupBounder::LayerShape {
  int tp, cp, ep, etp, mbs;
  bool sequence_parallel;
  RecomputeMode recompute;
  unsigned recompute_modules, offload_modules;
  bool tp_comm_overlap, ep_overlap;
  MoeDispatcher dispatcher;
  bool tied_copy;

  LayerShape(const ParallelConfig& p, const ModelSpec& model)
      : tp(p.tp), cp(p.cp), ep(p.ep), etp(p.expert_tp()), mbs(p.mbs), sequence_parallel(p.sequence_parallel),
        recompute(p.recompute), recompute_modules(p.recompute_modules), offload_modules(p.offload_modules),
        tp_comm_overlap(p.tp_comm_overlap),
        ep_overlap(p.ep_overlap), dispatcher(p.dispatcher), tied_copy(model.tie_embeddings && p.pp > 1) {}
  bool operator==(const LayerShape&) const = default;
};

struct GroupBounder::LayerShapeHash {
  std::size_t operator()(const LayerShape& s) const {
    std::size_t h = 0;
    for (const std::size_t v :
         {std::size_t(s.tp), std::size_t(s.cp), std::size_t(s.ep), std::size_t(s.etp), std::size_t(s.mbs),
          std::size_t(s.sequence_parallel), static_cast<std::size_t>(s.recompute), std::size_t(s.recompute_modules),
          std::size_t(s.offload_modules),
          std::size_t(s.tp_comm_overlap), std::size_t(s.ep_overlap), static_cast<std::size_t>(s.dispatcher),
          std::size_t(s.tied_copy)})
      h = h * 1000003u ^ v;
    return h;
  }
};

struct GroupBounder::Bases {
  cost_detail::FlatTable<LayerShape, cost_detail::GroupBasis, LayerShapeHash> by_shape;
  cost_detail::ParamBytes bytes{};  // the same for every configuration (training and precision)
  cost_detail::DenseLayerCosts dense_layers;  // shared by the shapes that differ in expert axes only
  KindLayers kinds;  // the model's, for every shape
};

GroupBounder::GroupBounder(const ModelSpec& model, const ClusterSpec& cluster, const TrainingSpec& training,
                           const Calibration& calibration, const EstimateOptions& options)
    : model_(model),
      cluster_(cluster),
      training_(training),
      calibration_(calibration),
      options_((validate(options), options)),
      bases_(std::make_unique<Bases>()) {
  bases_->kinds = kind_layers(model);
}

GroupBounder::~GroupBounder() = default;

PlanningBounds GroupBounder::bounds(const ParallelConfig& first, std::span<const ParallelConfig> most_sharded) {
  const cost_detail::GroupBasis& basis = bases_->by_shape.find_or_add(LayerShape(first, model_), [&] {
    // The shape's first group: its layers' costs (no pipeline).
    const cost_detail::LayerCosts layers(model_, cluster_, training_, first, calibration_, options_, &bases_->dense_layers);
    bases_->bytes = layers.bytes;
    return cost_detail::group_basis(layers, bases_->kinds);
  });
  return cost_detail::group_bounds(basis, model_, calibration_, bases_->bytes, first.pp,
                                   first.num_microbatches(training_), most_sharded);
}

double GroupBounder::memory_limit_bytes() const { return paratune::memory_limit_bytes(cluster_, options_); }

}  // namespace paratune
