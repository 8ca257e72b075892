#include "paratune/plan/space.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <span>

#include "paratune/spec/error.h"

namespace paratune::plan {
namespace {

constexpr std::array<std::string_view, kAxisCount> kAxisNames{
    "dp", "tp", "pp", "cp", "ep", "etp", "mbs", "vpp", "zero", "op", "sp", "schedule", "recompute", "grad_sync",
    "ep_overlap", "dispatcher", "offload"};

bool is_enum_axis(Axis axis) {
  return axis == Axis::kSequenceParallel || axis == Axis::kSchedule || axis == Axis::kRecompute ||
         axis == Axis::kGradSync || axis == Axis::kEpOverlap || axis == Axis::kDispatcher || axis == Axis::kOffload;
}

Axis parse_axis(std::string_view key, std::string_view flag) {
  for (int i = 0; i < kAxisCount; ++i)
    if (kAxisNames[static_cast<std::size_t>(i)] == key) return static_cast<Axis>(i);
  std::vector<std::string> names(kAxisNames.begin(), kAxisNames.end());
  throw Error(fmt::format("{}: {}", flag, unknown_name_message("axis", key, names)));
}

int parse_value(Axis axis, std::string_view text, std::string_view flag) {
  const std::string_view key = axis_name(axis);
  try {
    switch (axis) {
      case Axis::kSequenceParallel:
      case Axis::kEpOverlap:
      case Axis::kOffload:
        if (text == "true" || text == "1" || text == "on") return 1;
        if (text == "false" || text == "0" || text == "off") return 0;
        throw Error(fmt::format("'{}' is not a boolean (true/false)", text));
      case Axis::kSchedule: return static_cast<int>(parse_enum<Schedule>(text));
      case Axis::kRecompute: return static_cast<int>(parse_enum<RecomputeMode>(text));
      case Axis::kGradSync: return static_cast<int>(parse_enum<GradSync>(text));
      case Axis::kDispatcher: return static_cast<int>(parse_enum<MoeDispatcher>(text));
      default: break;
    }
    int value = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (ec != std::errc() || end != text.data() + text.size())
      throw Error(fmt::format("'{}' is not an integer", text));
    const int lowest = axis == Axis::kZero ? 0 : 1;
    if (value < lowest) throw Error(fmt::format("{} must be >= {}", value, lowest));
    if (axis == Axis::kZero && value > 3) throw Error(fmt::format("{} must be 0, 1, 2 or 3", value));
    return value;
  } catch (const Error& e) {
    throw e.with_context(fmt::format("{} {}", flag, key));
  }
}

}  // namespace

bool valid_tp(const ModelSpec& model, int tp) {
  if (model.num_attention_heads % tp != 0 || model.ffn_hidden_size % tp != 0) return false;
  return model.mla || model.kv_heads() % tp == 0 || tp % model.kv_heads() == 0;
}

std::string_view axis_name(Axis axis) { return kAxisNames[static_cast<std::size_t>(axis)]; }

bool SearchSpace::permits(Axis axis, int value) const {
  const AxisRule& r = rule(axis);
  if (value > r.max) return false;
  return r.allowed.empty() || std::find(r.allowed.begin(), r.allowed.end(), value) != r.allowed.end();
}

void add_constraints(SearchSpace& space, std::string_view text, ConstraintKind kind, std::string_view flag) {
  // Split "a=1,2,b=3" into (a, [1, 2]), (b, [3]).
  std::vector<std::pair<std::string, std::vector<std::string>>> entries;
  std::size_t pos = 0;
  while (pos <= text.size()) {
    std::size_t comma = text.find(',', pos);
    if (comma == std::string_view::npos) comma = text.size();
    const std::string_view token = text.substr(pos, comma - pos);
    const std::size_t eq = token.find('=');
    if (eq != std::string_view::npos) {
      entries.push_back({std::string(token.substr(0, eq)), {std::string(token.substr(eq + 1))}});
    } else if (!entries.empty() && !token.empty()) {
      entries.back().second.emplace_back(token);
    } else {
      throw Error(fmt::format("{} '{}': expected KEY=VALUE[,VALUE...], e.g. tp=8 or zero=0,1", flag, text));
    }
    pos = comma + 1;
  }
  for (const auto& [key, values] : entries) {
    const Axis axis = parse_axis(key, flag);
    AxisRule& rule = space.rule(axis);
    std::vector<int> parsed;
    for (const std::string& v : values) {
      if (v.empty()) throw Error(fmt::format("{} {}: empty value", flag, key));
      parsed.push_back(parse_value(axis, v, flag));
    }
    if (kind == ConstraintKind::kMax) {
      if (is_enum_axis(axis))
        throw Error(fmt::format("{} {}: not a numeric axis, so it has no upper bound; allow a list of values ({}=...)",
                                flag, key, key));
      if (parsed.size() != 1) throw Error(fmt::format("{} {}: takes one value, got {}", flag, key, values.size()));
      rule.max = std::min(rule.max, parsed[0]);
      continue;
    }
    if (kind == ConstraintKind::kFix && parsed.size() != 1)
      throw Error(fmt::format("{} {}: takes one value, got {} (allow a list of values instead)", flag, key,
                              values.size()));
    if (rule.allowed.empty()) {
      rule.allowed = parsed;
    } else {  // both --fix and --allow (or two --allow): the values allowed by both
      std::vector<int> both;
      for (int v : parsed)
        if (std::find(rule.allowed.begin(), rule.allowed.end(), v) != rule.allowed.end()) both.push_back(v);
      if (both.empty())
        throw Error(fmt::format("{} {}={}: no value is also allowed by the earlier constraint on {}", flag, key,
                                fmt::join(values, ","), key));
      rule.allowed = both;
    }
  }
}

ParallelConfig to_config(const Candidate& c, const ParallelConfig& base) {
  ParallelConfig p = base;
  p.dp = c.dp;
  p.tp = c.tp;
  p.pp = c.pp;
  p.cp = c.cp;
  p.ep = c.ep;
  p.etp = c.etp;
  p.mbs = c.mbs;
  p.vpp = c.vpp;
  p.zero = c.zero;
  p.op = c.op;
  p.sequence_parallel = c.sequence_parallel != 0;
  p.ep_overlap = c.ep_overlap != 0;
  p.dispatcher = c.dispatcher;
  p.account_embedding = (c.pipeline_split & 1) != 0;
  p.account_loss = (c.pipeline_split & 2) != 0;
  p.schedule = c.schedule;
  p.recompute = c.recompute;
  // The base's recompute_modules (plan --base) are the modules of the selective candidates unless
  // the candidate names its own; the others have none (resolve refuses a module list without
  // recompute=selective).
  if (c.recompute != RecomputeMode::kSelective) p.recompute_modules = kDefaultRecomputeModules;
  else if (c.recompute_modules != 0) p.recompute_modules = c.recompute_modules;
  p.offload_modules = c.offload_modules;
  p.recompute_layers = -1;
  p.stage_recompute_layers.clear();
  p.stage_layers.clear();
  return p;
}

unsigned memory_saving_modules(const ModelSpec& model, const TrainingSpec& training) {
  if ((!model.moe && !model.mla) || training.per_op_selective_recompute) return 0;
  unsigned modules = kDefaultRecomputeModules | recompute_module_bit(RecomputeModule::kLayernorm);
  if (model.moe) modules |= recompute_module_bit(RecomputeModule::kMoeAct);
  if (model.mla) modules |= recompute_module_bit(RecomputeModule::kMlaUpProj);
  return modules;
}

unsigned offload_saving_modules(const TrainingSpec& training) {
  if (training.per_op_selective_recompute) return 0;
  return offload_module_bit(OffloadModule::kCoreAttn) | offload_module_bit(OffloadModule::kAttnProj);
}

std::vector<int> divisors(int n) {
  // Pairs (d, n/d) for d up to sqrt(n): O(sqrt n), so a batch of 2^30 sequences takes 32,768 steps.
  std::vector<int> small, large;
  for (int d = 1; d <= n / d; ++d)
    if (n % d == 0) {
      small.push_back(d);
      if (d != n / d) large.push_back(n / d);
    }
  small.insert(small.end(), large.rbegin(), large.rend());
  return small;
}

std::vector<MeshShape> mesh_shapes(const ModelSpec& model, const ClusterSpec& cluster, const TrainingSpec& training,
                                   const SearchSpace& space) {
  const int gpus = static_cast<int>(cluster.num_gpus());  // <= kMaxGpus (validate(ClusterSpec))
  std::vector<MeshShape> shapes;
  for (int tp : divisors(gpus)) {
    if (!space.permits(Axis::kTp, tp) || !valid_tp(model, tp)) continue;
    for (int cp : divisors(gpus / tp)) {
      // Load-balanced causal context parallelism splits each sequence into 2·cp chunks.
      if (!space.permits(Axis::kCp, cp) || training.seq_len % (cp * (cp > 1 ? 2 : 1)) != 0) continue;
      for (int pp : divisors(gpus / (tp * cp))) {
        const int dp = gpus / (tp * cp * pp);
        if (!space.permits(Axis::kPp, pp) || pp > model.num_layers) continue;
        if (!space.permits(Axis::kDp, dp) || training.global_batch % dp != 0) continue;
        shapes.push_back({tp, cp, pp, dp});
      }
    }
  }
  return shapes;
}

namespace {

// One way a layer shape saves activation memory: recompute modules (with recompute=selective; 0 =
// the base's) and activation offload (0 = none).
struct MemorySaving {
  std::uint8_t recompute_modules = 0;
  std::uint8_t offload_modules = 0;
};

// The memory savers searched under one recompute mode: none or the base's modules; with
// selective, the memory-saving set (memory_saving_modules); and the offload setting (one per model,
// offload_saving_modules): recompute=none with offload for a model without a memory-saving set,
// else that set less core_attn (a recomputed core attention bypasses the offload) and less
// mla_up_proj (the offload moves Q, K, V to the host: recomputing them too would only add work).
std::vector<MemorySaving> memory_settings(RecomputeMode rc, unsigned saving_modules, unsigned offload_set) {
  const auto bits = [](unsigned set) { return static_cast<std::uint8_t>(set); };
  std::vector<MemorySaving> out{MemorySaving{}};
  if (rc == RecomputeMode::kNone && offload_set != 0 && saving_modules == 0) out.push_back({0, bits(offload_set)});
  if (rc == RecomputeMode::kSelective && saving_modules != 0) {
    out.push_back({bits(saving_modules), 0});
    if (offload_set != 0)
      out.push_back({bits(saving_modules & ~(recompute_module_bit(RecomputeModule::kCoreAttn) |
                                             recompute_module_bit(RecomputeModule::kMlaUpProj))),
                     bits(offload_set)});
  }
  return out;
}

// The members of one layer-shape group: every ZeRO stage and sharding degree, schedule and vpp (and
// Megatron's embedding/loss split) that resolve accepts with the group's other axes. `visit`
// returns false to stop; the return value says whether it did.
// The divisors a mesh shape's members are drawn from, computed once per mesh.
struct MemberDivisors {
  std::vector<int> ops;           // of dp: optimizer-sharding degrees
  std::vector<int> chunk_counts;  // of the layers per rank: interleaving's chunks
  // Of the slots per rank with Megatron's embedding/loss split (1: the embedding, 2: the loss,
  // 3: both count as a layer); empty where the slots do not divide over pp.
  std::array<std::vector<int>, 4> split_chunk_counts;

  MemberDivisors(const ModelSpec& model, int dp, int pp) : ops(divisors(dp)) {
    if (pp == 1) return;
    chunk_counts = divisors(model.num_layers / pp);
    for (int split : {1, 2, 3}) {
      const int slots = model.num_layers + (split == 3 ? 2 : 1);
      if (slots % pp == 0) split_chunk_counts[static_cast<std::size_t>(split)] = divisors(slots / pp);
    }
  }
};

template <typename Visit>
bool for_each_member(const ModelSpec& model, const TrainingSpec& training, const SearchSpace& space,
                     const Candidate& group, const MemberDivisors& d, Visit&& visit) {
  const int pp = group.pp, dp = group.dp;
  const int microbatches = training.global_batch / (dp * group.mbs);
  Candidate c = group;
  const std::vector<int>& ops = d.ops;
  const std::vector<int>& chunk_counts = d.chunk_counts;
  const auto& split_chunk_counts = d.split_chunk_counts;
  // FP8 parameters need a sharded optimizer (resolve: --fp8-param-gather, R20.3).
  for (int zero = training.fp8_param_gather ? 1 : 0; zero <= 3; ++zero) {
    if (!space.permits(Axis::kZero, zero)) continue;
    c.zero = static_cast<std::int8_t>(zero);
    // Without ZeRO the optimizer is not sharded (op 1). A fixed array, not a vector: group
    // enumeration visits this loop once per group (a million for DeepSeek-V3 on 2,048 GPUs).
    static constexpr std::array<int, 1> kUnsharded{1};
    for (int op : zero == 0 ? std::span<const int>(kUnsharded) : std::span<const int>(ops)) {
      if (zero > 0 && !space.permits(Axis::kOp, op)) continue;
      c.op = op;
      bool go_on = true;
      auto emit = [&](Schedule schedule, int vpp, int split = 0) {
        if (!go_on) return;
        if (c.ep_overlap == 1 && pp > 1 && vpp < 2 && schedule != Schedule::kDualPipe) return;
        if (static_cast<std::int64_t>(pp) * vpp * microbatches > kMaxPipelineSlots) return;
        if (!space.permits(Axis::kSchedule, static_cast<int>(schedule)) || !space.permits(Axis::kVpp, vpp)) return;
        c.schedule = schedule;
        c.vpp = vpp;
        c.pipeline_split = static_cast<std::int8_t>(split);
        go_on = visit(static_cast<const Candidate&>(c));
      };
      emit(Schedule::kOneFOneB, 1);
      if (pp > 1) {  // with one stage these are all the same as 1F1B
        emit(Schedule::kZeroBubbleH1, 1);
        emit(Schedule::kGPipe, 1);
        // Interleaving: equal chunks of whole layers, micro-batches in groups of pp.
        if (microbatches % pp == 0) {
          for (int vpp : chunk_counts)
            if (vpp > 1 && model.num_layers % (pp * vpp) == 0) emit(Schedule::kInterleaved1F1B, vpp);
          // Where they do not split evenly: Megatron's split counting the embedding and/or the
          // loss as a layer (R11), e.g. 126 + 2 slots on pp 8 x vpp 8.
          for (int split : {3, 1, 2}) {
            const int slots = model.num_layers + (split == 3 ? 2 : 1);
            if (slots % pp != 0) continue;
            // A chunk holding the embedding or the loss needs a layer besides (R11).
            for (int vpp : split_chunk_counts[static_cast<std::size_t>(split)])
              if (vpp > 1 && slots % (pp * vpp) == 0 && model.num_layers % (pp * vpp) != 0 && slots / (pp * vpp) >= 2)
                emit(Schedule::kInterleaved1F1B, vpp, split);
          }
        }
        // PyTorch's interleaved zero-bubble (torchtitan): equal chunks, whole rounds of micro-batches.
        if (microbatches % std::max(1, microbatches / pp) == 0)
          for (int vpp : chunk_counts)
            if (vpp > 1 && model.num_layers % (pp * vpp) == 0) emit(Schedule::kInterleavedZeroBubble, vpp);
        // V-shapes: two equal chunks per rank; DualPipeV runs at least 2·pp micro-batches.
        if (model.num_layers % (2 * pp) == 0) {
          emit(Schedule::kZeroBubbleV, 2);
          if (microbatches >= 2 * pp) emit(Schedule::kDualPipeV, 2);
        }
        // DualPipe: two directions of half the micro-batches each, an even pp.
        if (pp % 2 == 0 && microbatches % 2 == 0 && microbatches >= 2 * pp) emit(Schedule::kDualPipe, 1);
      }
      if (!go_on) return false;
    }
  }
  return true;
}

}  // namespace

void enumerate_groups(const ModelSpec& model, const TrainingSpec& training, const SearchSpace& space,
                      const MeshShape& mesh, const std::function<void(const Candidate&)>& visit_group) {
  // Plain variables, not a structured binding: the lambdas below capture them (clang < 16 cannot
  // capture structured bindings).
  const int tp = mesh.tp, cp = mesh.cp, pp = mesh.pp, dp = mesh.dp;
  const bool moe = model.moe.has_value();
  std::vector<int> eps{1}, etps{0};
  if (moe) {
    eps.clear();
    for (int ep : divisors(model.moe->num_experts))
      if ((dp * cp * tp) % ep == 0 && space.permits(Axis::kEp, ep)) eps.push_back(ep);
    etps.clear();
    for (int etp : divisors(tp))
      if (model.moe->expert_ffn_hidden_size % etp == 0 && space.permits(Axis::kEtp, etp)) etps.push_back(etp);
  } else if (!space.permits(Axis::kEp, 1) || !space.permits(Axis::kEpOverlap, 0) ||
             !space.permits(Axis::kDispatcher, static_cast<int>(MoeDispatcher::kAllToAll))) {
    return;
  }
  const int mbs_cap = space.rule(Axis::kMbs).max != INT_MAX || !space.rule(Axis::kMbs).allowed.empty()
                          ? INT_MAX
                          : space.max_mbs;
  Candidate c;
  c.dp = dp;
  c.tp = tp;
  c.pp = pp;
  c.cp = cp;
  const MemberDivisors member_divisors(model, dp, pp);
  const unsigned saving_modules = memory_saving_modules(model, training);
  const unsigned offload_set = offload_saving_modules(training);
  // The axes inside a layer shape's recompute setting: expert overlap and dispatcher; each
  // combination is one group, whose first member stands for it (its configuration is valid).
  auto visit_expert_variants = [&] {
    for (int overlap : {0, 1}) {
      // The MoE all-to-all overlap (Megatron-Core's rules, as resolve checks them): ep > 1,
      // no full recompute, and with pp > 1 only in the interleaved schedule or DualPipe (in emit).
      if (overlap == 1 && (c.ep < 2 || c.recompute == RecomputeMode::kFull)) continue;
      if (!space.permits(Axis::kEpOverlap, overlap)) continue;
      c.ep_overlap = static_cast<std::int8_t>(overlap);
      for (MoeDispatcher dispatcher : {MoeDispatcher::kAllToAll, MoeDispatcher::kDeepEP}) {
        // Node-deduplicated dispatch moves tokens between expert ranks: ep > 1 (resolve).
        if (dispatcher != MoeDispatcher::kAllToAll && c.ep < 2) continue;
        if (!space.permits(Axis::kDispatcher, static_cast<int>(dispatcher))) continue;
        c.dispatcher = dispatcher;
        for_each_member(model, training, space, c, member_divisors, [&](const Candidate& first) {
          visit_group(first);
          return false;
        });
      }
    }
  };
  for (int ep : eps) {
    c.ep = ep;
    for (int etp : etps) {
      // Megatron-Core's expert grid etp x ep x edp x pp must tile the ranks (R1.3).
      if (moe && (static_cast<std::int64_t>(dp) * cp * tp) % (static_cast<std::int64_t>(ep) * etp) != 0) continue;
      c.etp = etp;
      for (int mbs : divisors(training.global_batch / dp)) {
        if (mbs > mbs_cap || !space.permits(Axis::kMbs, mbs)) continue;
        c.mbs = mbs;
        for (int sp : {1, 0}) {
          // Sequence parallelism is a no-op without TP and needs the sequence shard divisible by tp.
          if (sp == 1 && (tp == 1 || (training.seq_len / cp) % tp != 0)) continue;
          if (!space.permits(Axis::kSequenceParallel, sp)) continue;
          c.sequence_parallel = static_cast<std::int8_t>(sp);
          for (RecomputeMode rc : {RecomputeMode::kNone, RecomputeMode::kSelective, RecomputeMode::kFull}) {
            if (!space.permits(Axis::kRecompute, static_cast<int>(rc))) continue;
            c.recompute = rc;
            for (const MemorySaving& saving : memory_settings(rc, saving_modules, offload_set)) {
              if (!space.permits(Axis::kOffload, saving.offload_modules != 0 ? 1 : 0)) continue;
              c.recompute_modules = saving.recompute_modules;
              c.offload_modules = saving.offload_modules;
              visit_expert_variants();
            }
          }
        }
      }
    }
  }
}

void enumerate_members(const ModelSpec& model, const TrainingSpec& training, const SearchSpace& space,
                       const Candidate& group, const std::function<void(const Candidate&)>& visit_member) {
  for_each_member(model, training, space, group, MemberDivisors(model, group.dp, group.pp), [&](const Candidate& c) {
    visit_member(c);
    return true;
  });
}

void enumerate_mesh(const ModelSpec& model, const TrainingSpec& training, const SearchSpace& space,
                    const MeshShape& mesh, const std::function<void(const Candidate&)>& visit_group,
                    const std::function<void(const Candidate&)>& visit_member) {
  enumerate_groups(model, training, space, mesh, [&](const Candidate& first) {
    visit_group(first);
    enumerate_members(model, training, space, first, visit_member);
  });
}

}  // namespace paratune::plan
