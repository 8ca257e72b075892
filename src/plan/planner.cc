// The two-level search. Reading order: helpers (threads), level 1 (bounds, then estimates in
// bound order), level 2 (refinement and the exactness sweep), advice when nothing fits, plan().
#include "paratune/plan/planner.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <limits>
#include <map>
#include <set>
#include <thread>

#include "paratune/cost/stage_model.h"
#include "paratune/plan/ranking.h"
#include "paratune/plan/stage_assignment.h"
#include "paratune/sim/schedule.h"
#include "paratune/spec/error.h"
#include "paratune/spec/units.h"

namespace paratune::plan {
namespace {

using Clock = std::chrono::steady_clock;
constexpr double kInfinity = std::numeric_limits<double>::infinity();
// Candidates costed (level 1) or refined (level 2) between two updates of the pruning threshold.
// Fixed, not per thread, so the set of candidates evaluated is the same for every thread count.
// Level 1 starts with batches of K (the threshold exists once K candidates fit) and doubles them.
constexpr std::size_t kLevel1MaxBatch = 256;
constexpr std::size_t kLevel2Batch = 32;
// Groups bounded between two additions to PlanOptions::progress (one shared atomic add per group
// would cost threads more than its bound).
constexpr long long kProgressEvery = 1024;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// body(i) for every i in [0, n) on up to `threads` threads. Each i writes only its own output slot,
// so results do not depend on the thread count or on scheduling.
template <typename Body>
void parallel_for(std::size_t n, int threads, Body&& body) {
  const std::size_t workers = std::min<std::size_t>(n, static_cast<std::size_t>(std::max(1, threads)));
  if (workers <= 1) {
    for (std::size_t i = 0; i < n; ++i) body(i);
    return;
  }
  std::atomic<std::size_t> next{0};
  std::exception_ptr failure;
  std::atomic<bool> failed{false};
  auto work = [&] {
    for (std::size_t i = next++; i < n && !failed; i = next++) {
      try {
        body(i);
      } catch (...) {
        if (!failed.exchange(true)) failure = std::current_exception();
      }
    }
  };
  std::vector<std::thread> pool;
  for (std::size_t t = 1; t < workers; ++t) pool.emplace_back(work);
  work();
  for (std::thread& t : pool) t.join();
  if (failure) std::rethrow_exception(failure);
}

// A level-1 candidate that survived the memory bound, with its time bound and its place in the
// enumeration (group, then member: the tie-breaker that makes the order total).
struct Bounded {
  Candidate candidate;
  double lower_bound_s = 0;
  std::uint64_t order = 0;   // its group's (Group::order)
  std::uint32_t member = 0;  // its place among the group's members
};

bool by_bound(const Bounded& a, const Bounded& b) {
  if (a.lower_bound_s != b.lower_bound_s) return a.lower_bound_s < b.lower_bound_s;
  return a.order != b.order ? a.order < b.order : a.member < b.member;
}

// A layer-shape group of candidates (plan/space.h enumerate_groups) with bounds that hold for every
// member (cost/stage_model.h group_bounds). Its members are enumerated and bounded one by one only
// when the search reaches its time bound.
struct Group {
  Candidate first;
  double lower_bound_s = 0;
  double memory_bytes = 0;
  std::uint64_t order = 0;  // mesh index << 32 | place in the mesh's enumeration
};

struct MeshGroups {
  std::vector<Group> groups;      // those whose memory bound fits
  long long pruned_memory = 0;    // groups whose memory bound exceeds the GPU's
  long long excluded = 0;         // groups the base's recompute modules exclude
  std::optional<Group> smallest_memory;  // the group with the smallest memory bound (for "nothing fits")
};

std::vector<GradSync> grad_sync_choices(const SearchSpace& space) {
  std::vector<GradSync> out;
  for (GradSync g : {GradSync::kOverlapped, GradSync::kShifted, GradSync::kInBackward})
    if (space.permits(Axis::kGradSync, static_cast<int>(g))) out.push_back(g);
  return out;
}

// Whether one of the searched frameworks reduces gradients with `grad_sync` on pp stages (always,
// when the search is over the whole space).
bool some_framework_syncs(const PlanOptions& options, int pp, GradSync grad_sync) {
  if (options.frameworks.empty()) return true;
  return std::any_of(options.frameworks.begin(), options.frameworks.end(),
                     [&](launch::Framework f) { return launch::runs_grad_sync(f, pp, grad_sync); });
}

// Whether one of the searched frameworks runs `config` as planned (always, over the whole space).
bool some_framework_runs(const PlanOptions& options, const ParallelConfig& config, const ModelSpec& model,
                         const TrainingSpec& training) {
  if (options.frameworks.empty()) return true;
  return std::any_of(options.frameworks.begin(), options.frameworks.end(),
                     [&](launch::Framework f) { return launch::can_run(f, config, model, training); });
}

// A candidate's level-1 configuration: even stages, the flags of options.base, and base's
// gradient-sync placement unless no searched framework does it: then the first allowed one that
// one does (so that the level-1 time is one a framework could run and level 2 never loses to it).
ParallelConfig level1_config(const Candidate& c, const PlanOptions& options) {
  ParallelConfig config = to_config(c, options.base);
  if (!some_framework_syncs(options, config.pp, config.grad_sync))
    for (GradSync g : grad_sync_choices(options.space))
      if (some_framework_syncs(options, config.pp, g)) {
        config.grad_sync = g;
        break;
      }
  return config;
}

// Whether `framework` can run a level-1 candidate's configuration with one of the gradient-sync
// placements level 2 may choose (launch/framework_support.h).
bool runs_level1(launch::Framework framework, const ParallelConfig& config, const ModelSpec& model,
                 const TrainingSpec& training, const std::vector<GradSync>& grad_syncs) {
  return std::any_of(grad_syncs.begin(), grad_syncs.end(),
                     [&](GradSync g) { return launch::runs_grad_sync(framework, config.pp, g); }) &&
         launch::can_run(framework, config, model, training, /*judge_grad_sync=*/false);
}

// Whether a level-1 candidate is searched: over the whole space always, else when one of the
// frameworks runs it.
bool searched(const PlanOptions& options, const ParallelConfig& config, const ModelSpec& model,
              const TrainingSpec& training, const std::vector<GradSync>& grad_syncs) {
  return options.frameworks.empty() ||
         std::any_of(options.frameworks.begin(), options.frameworks.end(),
                     [&](launch::Framework f) { return runs_level1(f, config, model, training, grad_syncs); });
}

// A selective candidate that overlaps the MoE all-to-all cannot recompute the moe module (Megatron
// R17.1, resolve refuses it): with a base naming moe, such candidates are not run. The enumeration
// groups candidates of one recompute mode and overlap, so a group is excluded whole.
// A base naming its own modules fixes the selective set: the memory-saving one is not searched.
bool excluded_by_base_modules(const Candidate& c, const ParallelConfig& base) {
  if (c.recompute_modules != 0 && base.recompute_modules != kDefaultRecomputeModules) return true;
  return c.recompute == RecomputeMode::kSelective && c.ep_overlap != 0 &&
         (base.recompute_modules & recompute_module_bit(RecomputeModule::kMoe)) != 0;
}

// The largest optimizer-sharding degree the space allows on dp ranks (0: none).
int largest_allowed_op(int dp, const SearchSpace& space) {
  const std::vector<int> ops = divisors(dp);
  const auto largest = std::find_if(ops.rbegin(), ops.rend(), [&](int op) { return space.permits(Axis::kOp, op); });
  return largest == ops.rend() ? 0 : *largest;
}

// The configurations whose sharding is the most a member of a group may have, from the level-1
// configuration of its first member (`first`; the ZeRO stage and op change nothing else of it): one
// per ZeRO stage the space allows, with the largest optimizer-sharding degree it allows
// (`largest_op`, of the group's mesh: largest_allowed_op). Into `out` (reused from group to group).
void most_sharded(const ParallelConfig& first, int largest_op, const PlanOptions& options, const TrainingSpec& training,
                  std::vector<ParallelConfig>& out) {
  // Assigned into the entries already there: a copy into a configuration whose lists are empty
  // allocates nothing, one constructed anew does more work (a million groups).
  std::size_t n = 0;
  for (int zero = training.fp8_param_gather ? 1 : 0; zero <= 3; ++zero) {
    if (!options.space.permits(Axis::kZero, zero) || (zero > 0 && largest_op == 0)) continue;
    if (n == out.size()) out.push_back(first);
    else out[n] = first;
    out[n].zero = zero;
    out[n].op = zero > 0 ? largest_op : 1;
    ++n;
  }
  out.resize(n);
}

// Level 1, one mesh shape: every layer-shape group with bounds for all its members; groups that
// cannot fit are dropped whole. `bounder` keeps the layer costs of the shapes met so far.
MeshGroups bound_groups(const ModelSpec& model, const TrainingSpec& training, const PlanOptions& options,
                        GroupBounder& bounder, const MeshShape& mesh, std::uint64_t mesh_index) {
  MeshGroups out;
  const int largest_op = largest_allowed_op(mesh.dp, options.space);
  std::uint64_t index = 0;
  long long visited = 0;  // counted into options.progress every kProgressEvery groups
  std::vector<ParallelConfig> sharded;
  enumerate_groups(model, training, options.space, mesh, [&](const Candidate& first) {
    const std::uint64_t order = (mesh_index << 32) | index++;
    if (options.progress && ++visited == kProgressEvery) {
      options.progress->groups_bounded.fetch_add(visited, std::memory_order_relaxed);
      visited = 0;
    }
    if (excluded_by_base_modules(first, options.base)) {
      ++out.excluded;
      return;
    }
    const ParallelConfig config = level1_config(first, options);
    most_sharded(config, largest_op, options, training, sharded);
    const PlanningBounds b = bounder.bounds(config, sharded);
    const Group group{first, b.iteration_time_s, b.memory_bytes, order};
    if (!out.smallest_memory || b.memory_bytes < out.smallest_memory->memory_bytes) out.smallest_memory = group;
    if (b.memory_bytes > bounder.memory_limit_bytes()) {
      ++out.pruned_memory;
      return;
    }
    out.groups.push_back(group);
  });
  if (options.progress) {
    options.progress->groups_bounded.fetch_add(visited, std::memory_order_relaxed);
    options.progress->meshes_done.fetch_add(1, std::memory_order_relaxed);
  }
  return out;
}

// What expanding a group found: its members that may fit (bounded), and counts.
struct Expansion {
  std::vector<Bounded> survivors;
  long long seen = 0;           // members a searched framework runs
  long long unsupported = 0;    // members none runs
  long long pruned_memory = 0;  // of the seen, those whose memory bound exceeds the GPU's
  std::optional<Bounded> smallest_memory;
  double smallest_memory_bytes = kInfinity;
};

// Enumerates and bounds the members of a group; those whose memory bound exceeds the GPU are
// dropped unless `keep_all` (for "nothing fits": the member needing the least memory).
Expansion expand_group(const ModelSpec& model, const ClusterSpec& cluster, const TrainingSpec& training,
                       const PlanOptions& options, const Calibration& calibration, const Group& group,
                       bool keep_all = false) {
  Expansion out;
  const std::vector<GradSync> grad_syncs = grad_sync_choices(options.space);
  const StageCostModel layers(model, cluster, training, level1_config(group.first, options), calibration,
                              options.estimate);
  const double limit = keep_all ? kInfinity : layers.memory_limit_bytes();
  std::uint32_t member = 0;
  enumerate_members(model, training, options.space, group.first, [&](const Candidate& c) {
    const ParallelConfig config = level1_config(c, options);
    if (!searched(options, config, model, training, grad_syncs)) {
      ++out.unsupported;
      return;
    }
    ++out.seen;
    const PlanningBounds b = planning_bounds(layers, config);
    const Bounded entry{c, b.iteration_time_s, group.order, member++};
    if (b.memory_bytes < out.smallest_memory_bytes) {
      out.smallest_memory_bytes = b.memory_bytes;
      out.smallest_memory = entry;
    }
    if (b.memory_bytes > limit) {
      ++out.pruned_memory;
      return;
    }
    out.survivors.push_back(entry);
  });
  if (options.progress) options.progress->bounded.fetch_add(out.seen + out.unsupported, std::memory_order_relaxed);
  return out;
}

// The candidates of the groups in order of their time bounds: groups are expanded only when the
// search reaches their bound, their members then join a heap. Since a group's bound is at most
// each member's, candidates come out in increasing order of their own bounds, as if every group had
// been expanded first.
class Frontier {
 public:
  using Expand = std::function<Expansion(const Group&)>;
  // The groups wait unsorted: the search expands a few of them (DeepSeek-V3 on 2,048 GPUs: 41
  // thousand of 1.2 million), in bound order, so only the smallest keys are sorted, a batch at a
  // time (next_waiting). The keys move, the groups stay put, in the vectors of their meshes
  // (`per_mesh`, by mesh index): not copied into one (100 MB for DeepSeek-V3 on 2,048 GPUs).
  Frontier(std::vector<std::vector<Group>> per_mesh, Expand expand)
      : per_mesh_(std::move(per_mesh)), expand_(std::move(expand)) {
    std::size_t count = 0;
    for (const std::vector<Group>& groups : per_mesh_) count += groups.size();
    count_ = static_cast<long long>(count);
    waiting_.reserve(count);
    for (std::size_t mesh = 0; mesh < per_mesh_.size(); ++mesh)
      for (std::size_t i = 0; i < per_mesh_[mesh].size(); ++i)
        waiting_.push_back({per_mesh_[mesh][i].lower_bound_s, static_cast<std::uint32_t>(mesh), static_cast<std::uint32_t>(i)});
  }

  // The next candidate whose bound is below `threshold`, in bound order; none when there is none.
  std::optional<Bounded> pop_below(double threshold) {
    for (const GroupKey* key = next_waiting();
         key && key->lower_bound_s < threshold && (heap_.empty() || key->lower_bound_s <= heap_.front().lower_bound_s);
         key = next_waiting()) {
      ++next_;
      Expansion e = expand_(per_mesh_[key->mesh][key->index]);
      stats_.seen += e.seen;
      stats_.unsupported += e.unsupported;
      stats_.pruned_memory += e.pruned_memory;
      ++stats_.expanded;
      for (Bounded& b : e.survivors) {
        heap_.push_back(b);
        std::push_heap(heap_.begin(), heap_.end(), after);
      }
    }
    if (heap_.empty() || !(heap_.front().lower_bound_s < threshold)) return std::nullopt;
    std::pop_heap(heap_.begin(), heap_.end(), after);
    Bounded b = heap_.back();
    heap_.pop_back();
    return b;
  }

  struct Stats {
    long long seen = 0, unsupported = 0, pruned_memory = 0, expanded = 0;
  };
  [[nodiscard]] const Stats& stats() const { return stats_; }
  [[nodiscard]] long long left_in_heap() const { return static_cast<long long>(heap_.size()); }
  [[nodiscard]] long long groups() const { return count_; }

 private:
  // A group's place in the search: its bound, then where it is, per_mesh_[mesh][index]. A mesh's
  // vector holds its groups in the order of their enumeration, so (mesh, index) orders groups as
  // Group::order does (a total order) in 16 bytes.
  struct GroupKey {
    double lower_bound_s;
    std::uint32_t mesh, index;
  };
  static bool after(const Bounded& a, const Bounded& b) { return by_bound(b, a); }  // min-heaps
  static bool key_before(const GroupKey& a, const GroupKey& b) {
    if (a.lower_bound_s != b.lower_bound_s) return a.lower_bound_s < b.lower_bound_s;
    return a.mesh != b.mesh ? a.mesh < b.mesh : a.index < b.index;
  }
  // The waiting group with the smallest key; none when all were expanded. Keys below sorted_end_
  // are sorted and below all the others; when the search reaches sorted_end_, the next batch of
  // smallest keys is selected (nth_element, linear) and sorted. Batches start at 1/16 of the groups
  // and double, so a search that expands few groups selects once or twice. The order is the keys'
  // total order whatever the batches.
  const GroupKey* next_waiting() {
    if (next_ == sorted_end_) {
      if (sorted_end_ == waiting_.size()) return nullptr;
      batch_ = batch_ == 0 ? std::max<std::size_t>(4096, waiting_.size() / 16) : 2 * batch_;
      const auto first = waiting_.begin() + static_cast<std::ptrdiff_t>(sorted_end_);
      sorted_end_ = std::min(waiting_.size(), sorted_end_ + batch_);
      const auto last = waiting_.begin() + static_cast<std::ptrdiff_t>(sorted_end_);
      if (last != waiting_.end()) std::nth_element(first, last, waiting_.end(), key_before);
      std::sort(first, last, key_before);
    }
    return &waiting_[next_];
  }
  std::vector<std::vector<Group>> per_mesh_;
  std::vector<GroupKey> waiting_;  // every group's; those from next_ on are not expanded yet
  std::size_t next_ = 0, sorted_end_ = 0, batch_ = 0;
  long long count_ = 0;
  std::vector<Bounded> heap_;
  Expand expand_;
  Stats stats_;
};

Estimate estimate_candidate(const ModelSpec& model, const ClusterSpec& cluster, const TrainingSpec& training,
                            const Candidate& c, const PlanOptions& options, const Calibration& calibration) {
  return estimate(model, cluster, training, level1_config(c, options), calibration, options.estimate);
}

// The exact top N: best refined plan per distinct configuration, ranked by plan/ranking.h.
class TopPlans {
 public:
  explicit TopPlans(int n) : n_(static_cast<std::size_t>(std::max(1, n))) {}

  void offer(Plan plan) {
    const std::string key = to_string(plan.estimate.config);
    auto it = by_config_.find(key);
    if (it != by_config_.end() && !(plan.estimate.iteration_time_s < it->second.estimate.iteration_time_s)) return;
    by_config_[key] = std::move(plan);
  }
  // The N-th best time so far (infinity while fewer than N plans).
  [[nodiscard]] double threshold() const {
    if (by_config_.size() < n_) return kInfinity;
    std::vector<double> times;
    for (const auto& [key, p] : by_config_) times.push_back(p.estimate.iteration_time_s);
    std::nth_element(times.begin(), times.begin() + static_cast<long>(n_ - 1), times.end());
    return times[n_ - 1];
  }
  [[nodiscard]] std::vector<Plan> ranked() const {
    std::vector<Plan> out;
    for (const auto& [key, p] : by_config_) out.push_back(p);
    rank(out, [](const Plan& p) { return p.estimate.iteration_time_s; },
         [](const Plan& p) -> const ParallelConfig& { return p.estimate.config; });
    if (out.size() > n_) out.resize(n_);
    return out;
  }

 private:
  std::size_t n_;
  std::map<std::string, Plan> by_config_;
};

}  // namespace

std::optional<Estimate> refine(const ModelSpec& model, const ClusterSpec& cluster, const TrainingSpec& training,
                               const Candidate& candidate, const PlanOptions& options, const Calibration& calibration,
                               double faster_than_s) {
  std::optional<Estimate> best;
  // What the best so far leaves to beat: a refinement that ties with it may still rank before it.
  auto to_beat = [&] { return best ? std::min(faster_than_s, tie_limit_s(best->iteration_time_s)) : faster_than_s; };
  std::set<std::string> timed;
  // One layout under each allowed placement (that a searched framework runs); replays that cannot
  // beat to_beat() are skipped on their lower bound.
  auto time_layout = [&](const ParallelConfig& layout) {
    if (!timed.insert(to_string(layout)).second) return;
    for (GradSync g : grad_sync_choices(options.space)) {
      ParallelConfig c = layout;
      c.grad_sync = g;
      if (!some_framework_runs(options, c, model, training)) continue;
      std::optional<Estimate> e = estimate_if_faster(model, cluster, training, c, to_beat(), calibration, options.estimate);
      if (e && e->fits &&
          (!best || ranks_before(e->iteration_time_s, e->config, best->iteration_time_s, best->config)))
        best = std::move(e);
    }
  };
  const StageCostModel costs(model, cluster, training, level1_config(candidate, options), calibration,
                             options.estimate);
  const ParallelConfig& even = costs.config();  // resolved: even stages
  const bool full = even.recompute == RecomputeMode::kFull;
  // Megatron's embedding-/loss-aware split fixes the layout (R11): nothing to assign.
  // So do the V-shaped and two-direction schedules: the assignment below deals in looped stages.
  if ((even.pp == 1 && !full) || even.account_embedding || even.account_loss ||
      !sim::schedule_for(even.schedule).looped()) {
    time_layout(even);
    return best;
  }
  // The exact stage assignment and per-stage recompute, each rank holding the activations of as
  // many micro-batches as its schedule keeps in flight; within what a framework that runs the
  // candidate can express (each such framework's scope in turn; none: the whole space's).
  const sim::PipelineShape shape = sim::pipeline_shape(even.schedule, even.pp, even.vpp, costs.num_microbatches());
  std::vector<double> in_flight;
  for (int held : sim::schedule_for(even.schedule).peak_in_flight(shape))
    in_flight.push_back(static_cast<double>(held) / even.vpp);
  const double bottleneck_limit = (faster_than_s - calibration.iteration_overhead_s) / costs.num_microbatches();
  // Recomputing no layer is recompute=none, which --allow/--fix may rule out: then the layout keeps
  // full recompute of every layer, what the constraint asked for.
  const bool none_allowed = options.space.permits(Axis::kRecompute, static_cast<int>(RecomputeMode::kNone));
  auto layout_of = [&](const StageAssignment& a) {
    ParallelConfig assigned = even;
    assigned.stage_layers = a.stage_layers;
    if (full) {
      const bool any = std::any_of(a.recomputed.begin(), a.recomputed.end(), [](int r) { return r > 0; });
      if (any) assigned.stage_recompute_layers = a.recomputed;
      else if (none_allowed) assigned.recompute = RecomputeMode::kNone;
    }
    return assigned;
  };
  std::vector<std::optional<launch::Framework>> scopes;
  if (options.frameworks.empty()) scopes.emplace_back();
  const std::vector<GradSync> grad_syncs = grad_sync_choices(options.space);
  for (launch::Framework f : options.frameworks)
    if (runs_level1(f, even, model, training, grad_syncs)) scopes.emplace_back(f);
  std::optional<StageAssignment> free;  // the per-stage optimum, the same for every scope
  for (const std::optional<launch::Framework>& framework : scopes) {
    const launch::RefinementScope scope = launch::refinement_scope(framework, even);
    if (!scope.uneven_stages && even.pp > 1) continue;
    if (!free) free = assign_stages(costs, in_flight, full, bottleneck_limit);
    if (!free->feasible) break;
    // Per-stage counts the framework cannot express: the programme's optimum over one count per
    // model chunk (Megatron's block N, N = 0 .. the most layers a chunk can hold) or over "every
    // layer or none". Those are among the per-stage counts, so each is feasible only if `free` is.
    std::optional<StageAssignment> chosen;
    if (!full || scope.recompute == launch::RefinementScope::Recompute::kPerStage ||
        (framework && launch::can_run(*framework, layout_of(*free), model, training, false))) {
      chosen = free;
    } else {
      std::vector<int> counts{0, kAllLayers};
      if (scope.recompute == launch::RefinementScope::Recompute::kSameCountPerChunk)
        for (int n = 1; n < model.num_layers / even.vpp - (even.pp - 1); ++n) counts.push_back(n);
      // Each count's objective J >= m x its bottleneck, so beating the best so far needs a
      // bottleneck below J_best / m: the later counts are assigned under that cap.
      const double m = costs.num_microbatches();
      for (int n : counts) {
        const double limit = chosen ? std::min(bottleneck_limit, chosen->objective_s / m) : bottleneck_limit;
        const StageAssignment a = assign_stages(costs, in_flight, full, limit, n);
        if (a.feasible && (!chosen || a.objective_s < chosen->objective_s)) chosen = a;
      }
    }
    if (chosen) time_layout(layout_of(*chosen));
  }
  time_layout(even);  // even stages remain a choice: level 2 never loses to level 1
  return best;
}

namespace {

// What would make something fit: the same search with more GPUs, FP8, shorter sequences, no margin.
std::vector<std::string> advice_when_nothing_fits(const ModelSpec& model, const ClusterSpec& cluster,
                                                  const TrainingSpec& training, const PlanOptions& options,
                                                  const Calibration& calibration) {
  std::vector<std::string> advice;
  PlanOptions quick = options;
  quick.baselines = false;
  quick.advise = false;
  quick.top = 1;
  quick.progress = nullptr;  // the display says "advice" (PlanProgress::kAdvice), not each search's counts
  auto best_of = [&](const ClusterSpec& c, const TrainingSpec& t, const PlanOptions& o) -> std::optional<Plan> {
    PlanResult r = plan(model, c, t, o, calibration);
    if (r.plans.empty()) return std::nullopt;
    return r.plans.front();
  };
  auto describe = [](const Plan& p) {
    return fmt::format("{} ({:.3f} s/iteration, MFU {:.1f}%)", to_string(p.estimate.config),
                       p.estimate.iteration_time_s, 100 * p.estimate.mfu);
  };
  for (int factor : {2, 4, 8}) {
    if (cluster.num_gpus() * factor > kMaxGpus) break;
    ClusterSpec bigger = cluster;
    bigger.nodes *= factor;
    if (auto p = best_of(bigger, training, quick)) {
      advice.push_back(fmt::format("{}x the GPUs ({} nodes, {} GPUs): {}", factor, bigger.nodes, bigger.num_gpus(),
                                   describe(*p)));
      break;
    }
  }
  // FP8 only where the GPU has FP8 tensor cores (A100 and older do not: the advice skips it).
  if (training.precision != Precision::kFP8 && cluster.gpu.peak_fp8_flops_per_s > 0) {
    TrainingSpec fp8 = training;
    fp8.precision = Precision::kFP8;
    if (auto p = best_of(cluster, fp8, quick)) advice.push_back("FP8 training: " + describe(*p));
  }
  if (training.seq_len % 2 == 0) {
    TrainingSpec shorter = training;
    shorter.seq_len /= 2;
    if (auto p = best_of(cluster, shorter, quick))
      advice.push_back(fmt::format("sequences of {} tokens instead of {}: {}", shorter.seq_len, training.seq_len,
                                   describe(*p)));
  }
  if (options.estimate.memory_margin > 0) {
    PlanOptions no_margin = quick;
    no_margin.estimate.memory_margin = 0;
    if (auto p = best_of(cluster, training, no_margin))
      advice.push_back(fmt::format("no memory margin (--memory-margin 0, instead of {}): {}",
                                   options.estimate.memory_margin, describe(*p)));
  }
  if (advice.empty())
    advice.push_back("none of: 2x/4x/8x the GPUs, FP8, half the sequence length, no memory margin makes a plan fit");
  return advice;
}

}  // namespace

long long PlanProgress::Snapshot::stage_count() const {
  switch (stage) {
    case kBounds: return groups_bounded;
    case kLevel1: return estimated;
    case kLevel2: return refined;
    default: return 0;
  }
}

PlanProgress::Snapshot PlanProgress::snapshot() const {
  Snapshot s;
  s.stage = stage.load(std::memory_order_acquire);
  s.meshes = meshes.load(std::memory_order_relaxed);
  s.meshes_done = meshes_done.load(std::memory_order_relaxed);
  s.groups_bounded = groups_bounded.load(std::memory_order_relaxed);
  s.groups = groups.load(std::memory_order_relaxed);
  s.bounded = bounded.load(std::memory_order_relaxed);
  s.estimated = estimated.load(std::memory_order_relaxed);
  s.refined = refined.load(std::memory_order_relaxed);
  return s;
}

namespace {

// The axes the planner searches are constrained through the space (fix, allow, max), and the stage
// layout and per-stage recompute are its level 2's choice; in `base` either would be overwritten by
// every candidate, so a base that sets one is an error, not silently ignored.
void check_base_is_not_searched(const ParallelConfig& base) {
  const ParallelConfig d;
  std::vector<std::string> searched, chosen;
  const auto check = [](std::vector<std::string>& list, bool differs, std::string_view key, const auto& value) {
    if (differs) list.push_back(fmt::format("{}={}", key, value));
  };
  check(searched, base.dp != d.dp, "dp", base.dp);
  check(searched, base.tp != d.tp, "tp", base.tp);
  check(searched, base.pp != d.pp, "pp", base.pp);
  check(searched, base.vpp != d.vpp, "vpp", base.vpp);
  check(searched, base.cp != d.cp, "cp", base.cp);
  check(searched, base.ep != d.ep, "ep", base.ep);
  check(searched, base.etp != d.etp, "etp", base.etp);
  check(searched, base.mbs != d.mbs, "mbs", base.mbs);
  check(searched, base.sequence_parallel != d.sequence_parallel, "sp", base.sequence_parallel);
  check(searched, base.zero != d.zero, "zero", base.zero);
  check(searched, base.op != d.op, "op", base.op);
  check(searched, base.recompute != d.recompute, "recompute", to_string(base.recompute));
  check(searched, base.schedule != d.schedule, "schedule", to_string(base.schedule));
  check(searched, base.grad_sync != d.grad_sync, "grad_sync", to_string(base.grad_sync));
  check(searched, base.ep_overlap != d.ep_overlap, "ep_overlap", base.ep_overlap);
  check(searched, base.dispatcher != d.dispatcher, "dispatcher", to_string(base.dispatcher));
  check(searched, base.offload_modules != d.offload_modules, "offload", "true");
  check(chosen, base.recompute_layers != d.recompute_layers, "recompute_layers", base.recompute_layers);
  check(chosen, !base.stage_recompute_layers.empty(), "recompute_layers",
        fmt::format("{}", fmt::join(base.stage_recompute_layers, "/")));
  check(chosen, !base.stage_layers.empty(), "stage_layers", fmt::format("{}", fmt::join(base.stage_layers, "/")));
  check(chosen, !base.layout.empty(), "layout", to_string(base.layout));
  if (!searched.empty())
    throw Error(fmt::format("base: {} {} searched by the planner, which would overwrite {}: constrain the search "
                            "instead (fix {})",
                            fmt::join(searched, ", "), searched.size() == 1 ? "is" : "are",
                            searched.size() == 1 ? "it" : "them", fmt::join(searched, ",")));
  if (!chosen.empty())
    throw Error(fmt::format("base: {}: the planner chooses each stage's layers and recomputed layers itself; leave "
                            "{} out (estimate or simulate take them)",
                            fmt::join(chosen, ", "), chosen.size() == 1 ? "it" : "them"));
}

}  // namespace

void validate(const PlanOptions& options) {
  if (options.top < 1) throw Error(fmt::format("top: {} must be >= 1", options.top));
  if (options.keep < 1) throw Error(fmt::format("keep: {} must be >= 1", options.keep));
  if (options.threads < 1 || options.threads > kMaxPlanThreads)
    throw Error(fmt::format("threads: {} must be from 1 to {}", options.threads, kMaxPlanThreads));
  if (options.space.max_mbs < 1) throw Error(fmt::format("space.max_mbs: {} must be >= 1", options.space.max_mbs));
  validate(options.estimate);
}

PlanResult plan(const ModelSpec& model, const ClusterSpec& cluster, const TrainingSpec& training,
                const PlanOptions& requested, const Calibration& calibration) {
  validate(requested);
  // Among several frameworks, one that cannot build the model (torchtitan without a flavor of its
  // shape, T10) is not searched; named alone, it is (its launch says what to register).
  PlanOptions options = requested;
  std::vector<launch::FrameworkVerdict> not_searched;
  if (options.frameworks.size() > 1) {
    std::vector<launch::Framework> kept;
    for (launch::Framework f : options.frameworks) {
      std::vector<std::string> why = launch::model_refusals(f, model);
      if (why.empty()) kept.push_back(f);
      else not_searched.push_back({f, std::move(why)});
    }
    options.frameworks = std::move(kept);
  }
  // Level 2 chooses the stage layout; Megatron's account-for-embedding/loss split, which fixes it
  // instead (R11), is a searched candidate axis (Candidate::pipeline_split), not a base flag.
  if (options.base.account_embedding || options.base.account_loss)
    throw Error(fmt::format("base: account_embedding={}, account_loss={}: the planner chooses each stage's layers "
                            "itself and searches Megatron's embedding/loss split where layers do not divide evenly; "
                            "give account_embedding/account_loss to estimate or simulate, not to plan",
                            options.base.account_embedding, options.base.account_loss));
  check_base_is_not_searched(options.base);
  validate(model, training);
  // Activation offload needs the GPU's host-link bandwidth (resolve refuses it without): a GPU that
  // does not state it is searched without offload, unless offload is all the space allows.
  if (cluster.gpu.host_link_bandwidth_bytes_per_s <= 0) {
    if (!options.space.permits(Axis::kOffload, 0))
      throw Error(fmt::format("offload: the GPU '{}' has no host_link_bandwidth (its link to host memory), so "
                              "activation offload cannot be planned; give it in the cluster file's gpu object",
                              cluster.gpu.name));
    options.space.rule(Axis::kOffload).allowed = {0};
  }
  // The base's recompute_modules are those of the selective candidates (space.cc, to_config): a set
  // this model cannot recompute is an error here, not every selective candidate silently dropped.
  if (options.base.recompute_modules != kDefaultRecomputeModules) {
    ParallelConfig selective = options.base;
    selective.recompute = RecomputeMode::kSelective;
    try {
      check_recompute_modules(selective, model, training);
    } catch (const Error& e) {
      throw e.with_context("base");
    }
  }
  const Clock::time_point start = Clock::now();
  PlanResult result;
  result.searched_within = options.frameworks;
  result.not_searched = std::move(not_searched);
  SearchStats& stats = result.stats;

  PlanProgress* const progress = options.progress;
  // Release: a display that sees the stage sees the totals stored before it (meshes, survivors).
  auto enter = [progress](PlanProgress::Stage stage) {
    if (progress) progress->stage.store(stage, std::memory_order_release);
  };

  // --- Level 1: group bounds ---------------------------------------------------------------------------
  const std::vector<MeshShape> meshes = mesh_shapes(model, cluster, training, options.space);
  if (progress) progress->meshes.store(static_cast<long long>(meshes.size()), std::memory_order_relaxed);
  enter(PlanProgress::kBounds);
  // Meshes of one tp and cp (consecutive in mesh_shapes' order) share their layer shapes: one thread
  // bounds them all, building the costs of each shape once.
  std::vector<std::size_t> family_starts;
  for (std::size_t i = 0; i < meshes.size(); ++i)
    if (i == 0 || meshes[i].tp != meshes[i - 1].tp || meshes[i].cp != meshes[i - 1].cp) family_starts.push_back(i);
  family_starts.push_back(meshes.size());
  std::vector<MeshGroups> per_mesh(meshes.size());
  parallel_for(family_starts.size() - 1, options.threads, [&](std::size_t f) {
    GroupBounder bounder(model, cluster, training, calibration, options.estimate);
    for (std::size_t i = family_starts[f]; i < family_starts[f + 1]; ++i)
      per_mesh[i] = bound_groups(model, training, options, bounder, meshes[i], i);
  });
  std::vector<std::vector<Group>> groups;  // by mesh index
  groups.reserve(per_mesh.size());
  long long fitting_groups = 0;
  std::optional<Group> smallest_memory_group;
  long long excluded_groups = 0;
  for (MeshGroups& m : per_mesh) {
    fitting_groups += static_cast<long long>(m.groups.size());
    groups.push_back(std::move(m.groups));
    stats.groups_pruned_memory += m.pruned_memory;
    excluded_groups += m.excluded;
    if (m.smallest_memory &&
        (!smallest_memory_group || m.smallest_memory->memory_bytes < smallest_memory_group->memory_bytes))
      smallest_memory_group = m.smallest_memory;
  }
  per_mesh.clear();
  stats.groups = fitting_groups + stats.groups_pruned_memory + excluded_groups;
  // Constraints that exclude every configuration are the user's input to correct, not a memory
  // problem: an error naming them (no search variant could make them fit).
  if (stats.groups == 0)
    if (const std::string why = why_no_candidate(model, cluster, training, options.space); !why.empty())
      throw Error(why);
  Frontier frontier(std::move(groups), [&](const Group& g) {
    return expand_group(model, cluster, training, options, calibration, g);
  });
  stats.bounds_s = seconds_since(start);

  // --- Level 1: estimates in bound order until the bound reaches the K-th best time -----------------
  // The candidates taken from the frontier, in bound order, and what level 1 knew of each.
  std::vector<Bounded> survivors;
  std::vector<double> level1_time;  // infinity: not costed or not fitting
  std::vector<Level1> level1;
  std::vector<char> costed, refined;
  auto take = [&](const Bounded& b) {
    survivors.push_back(b);
    level1_time.push_back(kInfinity);
    level1.push_back(Level1::kNotCosted);
    costed.push_back(0);
    refined.push_back(0);
    return survivors.size() - 1;
  };
  if (progress) progress->groups.store(frontier.groups(), std::memory_order_relaxed);
  enter(PlanProgress::kLevel1);
  std::vector<double> best_k;  // max-heap of the K best fitting times
  const std::size_t keep = static_cast<std::size_t>(std::max(1, options.keep));
  auto kth_best = [&] { return best_k.size() < keep ? kInfinity : best_k.front(); };
  std::optional<std::size_t> closest;  // smallest peak memory among costed candidates
  double closest_bytes = kInfinity;
  for (std::size_t batch_size = keep;; batch_size = std::min(kLevel1MaxBatch, 2 * batch_size)) {
    const double threshold = kth_best();
    std::vector<std::size_t> batch;
    while (batch.size() < batch_size)
      if (std::optional<Bounded> b = frontier.pop_below(threshold)) batch.push_back(take(*b));
      else break;
    if (batch.empty()) break;
    std::vector<double> peak(batch.size());
    std::vector<char> fits(batch.size());
    std::vector<char> replayed(batch.size());
    parallel_for(batch.size(), options.threads, [&](std::size_t j) {
      const std::optional<Estimate> e =
          estimate_if_faster(model, cluster, training, level1_config(survivors[batch[j]].candidate, options),
                             threshold, calibration, options.estimate);
      if (progress) progress->estimated.fetch_add(1, std::memory_order_relaxed);
      replayed[j] = e.has_value() ? 1 : 0;
      if (!e) return;  // even stages cannot make the K best
      level1_time[batch[j]] = e->fits ? e->iteration_time_s : kInfinity;
      peak[j] = e->peak_memory_bytes;
      fits[j] = e->fits ? 1 : 0;
    });
    for (std::size_t j = 0; j < batch.size(); ++j) {
      const std::size_t i = batch[j];
      costed[i] = 1;
      ++stats.level1_evaluated;
      level1[i] = !replayed[j] ? Level1::kNotReplayed : fits[j] ? Level1::kTimed : Level1::kDidNotFit;
      if (!replayed[j]) continue;
      if (peak[j] < closest_bytes) {
        closest_bytes = peak[j];
        closest = i;
      }
      if (!fits[j]) continue;
      best_k.push_back(level1_time[i]);
      std::push_heap(best_k.begin(), best_k.end());
      if (best_k.size() > keep) {
        std::pop_heap(best_k.begin(), best_k.end());
        best_k.pop_back();
      }
    }
  }
  stats.level1_s = seconds_since(start);

  // --- Level 2: refine the K best, then every candidate whose bound is below the N-th best plan -------
  // (below tie_limit_s of it: a plan whose time ties with the N-th best may rank before it as the
  // simpler configuration, plan/ranking.h, so those are refined too)
  const Clock::time_point level2_start = Clock::now();
  enter(PlanProgress::kLevel2);
  std::vector<std::size_t> order;  // costed candidates, best level-1 time first
  for (std::size_t i = 0; i < survivors.size(); ++i)
    if (costed[i] && level1_time[i] < kInfinity) order.push_back(i);
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return level1_time[a] < level1_time[b]; });
  if (order.size() > keep) order.resize(keep);
  stats.kept = static_cast<long long>(order.size());

  TopPlans top(options.top);
  auto refine_all = [&](const std::vector<std::size_t>& batch) {
    std::vector<std::optional<Estimate>> out(batch.size());
    const double threshold = tie_limit_s(top.threshold());  // fixed for the batch: the same for every thread count
    parallel_for(batch.size(), options.threads, [&](std::size_t j) {
      out[j] = refine(model, cluster, training, survivors[batch[j]].candidate, options, calibration, threshold);
      if (progress) progress->refined.fetch_add(1, std::memory_order_relaxed);
    });
    for (std::size_t j = 0; j < batch.size(); ++j) {
      refined[batch[j]] = 1;
      ++stats.level2_evaluated;
      if (out[j]) {
        const std::size_t i = batch[j];
        top.offer(Plan{.estimate = std::move(*out[j]),
                       .level1_time_s = level1_time[i],
                       .level1 = level1[i],
                       .lower_bound_s = survivors[i].lower_bound_s,
                       .frameworks = {}});  // judged once the top plans are known
      }
    }
  };
  refine_all(order);
  // The exact sweep: the candidates taken so far, then more from the frontier, in bound order.
  for (std::size_t next = 0;;) {
    const double threshold = tie_limit_s(top.threshold());
    std::vector<std::size_t> batch;
    while (batch.size() < kLevel2Batch) {
      if (next < survivors.size()) {
        if (!(survivors[next].lower_bound_s < threshold)) break;
        if (!refined[next]) batch.push_back(next);
        ++next;
      } else if (std::optional<Bounded> b = frontier.pop_below(threshold)) {
        batch.push_back(take(*b));
        ++next;
      } else {
        break;
      }
    }
    if (batch.empty()) break;
    refine_all(batch);
  }
  const Frontier::Stats& f = frontier.stats();
  stats.candidates_level1 = f.seen;
  stats.unsupported = f.unsupported;
  stats.pruned_memory = f.pruned_memory;
  stats.groups_expanded = f.expanded;
  stats.pruned_time = frontier.left_in_heap();
  for (std::size_t i = 0; i < survivors.size(); ++i)
    if (!costed[i] && !refined[i]) ++stats.pruned_time;
  result.plans = top.ranked();
  for (Plan& p : result.plans) p.frameworks = launch::framework_verdicts(p.estimate.config, model, training);
  stats.level2_s = seconds_since(level2_start);

  // --- Baselines and, when nothing fits, what would ---------------------------------------------------
  if (options.baselines) {
    enter(PlanProgress::kBaselines);
    result.expert = expert_baseline(model, cluster, training, options, calibration);
    result.three_axis = three_axis_baseline(model, cluster, training, options, calibration);
    for (Baseline* b : {&result.expert, &result.three_axis})
      if (b->estimate) b->frameworks = launch::framework_verdicts(b->estimate->config, model, training);
  }
  if (result.plans.empty()) {
    // A constraint that meets the frameworks' limits is not a memory problem: the best of the whole
    // space, if something fits there, shows which it is.
    if (!options.frameworks.empty()) {
      PlanOptions whole = options;
      whole.frameworks.clear();
      whole.top = 1;
      whole.baselines = false;
      whole.advise = false;
      whole.progress = nullptr;
      PlanResult r = plan(model, cluster, training, whole, calibration);
      if (!r.plans.empty()) result.best_unrunnable = std::move(r.plans.front());
    }
    if (closest) {
      result.closest = estimate_candidate(model, cluster, training, survivors[*closest].candidate, options, calibration);
    } else if (smallest_memory_group) {
      // Nothing was costed: the member of least memory bound of the group of least bound.
      const Expansion e = expand_group(model, cluster, training, options, calibration, *smallest_memory_group,
                                       /*keep_all=*/true);
      if (e.smallest_memory)
        result.closest = estimate_candidate(model, cluster, training, e.smallest_memory->candidate, options, calibration);
    }
    if (options.advise && !result.best_unrunnable) {  // more GPUs do not make a framework run it
      enter(PlanProgress::kAdvice);
      result.advice = advice_when_nothing_fits(model, cluster, training, options, calibration);
    }
  }
  enter(PlanProgress::kDone);
  stats.elapsed_s = seconds_since(start);
  return result;
}

}  // namespace paratune::plan
