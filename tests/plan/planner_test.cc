// The planner: enumeration = what resolve() accepts, bounds below every refinement, the exact stage
// assignment, the search = brute force over the whole space, constraints, threads, launch settings.
#include "paratune/plan/planner.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <optional>
#include <random>
#include <regex>
#include <set>

#include "paratune/cost/stage_model.h"
#include "paratune/launch/launch.h"
#include "paratune/plan/ranking.h"
#include "paratune/plan/stage_assignment.h"
#include "paratune/report/plan_report.h"
#include "paratune/spec/io.h"

namespace paratune::plan {
namespace {

using launch::Framework;
using launch::kFrameworks;
using launch::LaunchSettings;

struct Scenario {
  ModelSpec model;
  ClusterSpec cluster;
  TrainingSpec training;
};

// Llama-3-8B on one 8-GPU node: memory is tight enough that recompute, ZeRO and pipelining matter.
Scenario llama8b_on_8() {
  TrainingSpec t;
  t.seq_len = 4096;
  t.global_batch = 16;
  return {load_model("llama3-8b"), load_cluster("dgx-h100:1"), t};
}

// A small MoE model (examples/tiny-moe.yaml) on 16 GPUs: ep and etp are searched too.
Scenario tiny_moe_on_16() {
  TrainingSpec t;
  t.seq_len = 2048;
  t.global_batch = 32;
  return {load_model(std::string(PARATUNE_SOURCE_DIR) + "/examples/tiny-moe.yaml"), load_cluster("dgx-h100:2"), t};
}

// tiny-moe with its first two layers dense (DeepSeek-style): layers of two kinds, whose stage costs
// depend on where a stage starts. On one node at 8K tokens memory forces pipelining and recompute.
Scenario dense_first_moe_on_8() {
  TrainingSpec t;
  t.seq_len = 8192;
  t.global_batch = 16;
  ModelSpec model = load_model(std::string(PARATUNE_SOURCE_DIR) + "/examples/tiny-moe.yaml");
  model.moe->first_dense_layers = 2;
  return {model, load_cluster("dgx-h100:1"), t};
}

std::vector<Candidate> all_candidates(const Scenario& s, const SearchSpace& space) {
  std::vector<Candidate> out;
  for (const MeshShape& mesh : mesh_shapes(s.model, s.cluster, s.training, space))
    enumerate_mesh(s.model, s.training, space, mesh, [](const Candidate&) {},
                   [&](const Candidate& c) { out.push_back(c); });
  return out;
}

// resolve's answer for `p` (its resolved form), or none where it refuses. A function of its own, not
// inlined: a refusal unwinds to this small frame, not through the test's loop nest, whose large
// exception table made each of the brute force's millions of refusals several times dearer.
[[gnu::noinline]] std::optional<std::string> resolved_key(const ParallelConfig& p, const Scenario& s) {
  try {
    return to_string(resolve(p, s.model, s.cluster, s.training));
  } catch (const Error&) {
    return std::nullopt;
  }
}

TEST(Space, EnumerationIsExactlyWhatResolveAccepts) {
  Scenario s = tiny_moe_on_16();
  s.cluster = load_cluster("dgx-h100:1");
  s.training.global_batch = 16;
  const SearchSpace space;
  std::set<std::string> enumerated;
  for (const Candidate& c : all_candidates(s, space)) {
    const std::string key = to_string(resolve(to_config(c), s.model, s.cluster, s.training));
    EXPECT_TRUE(enumerated.insert(key).second) << "enumerated twice: " << key;
  }
  // Brute force over the cartesian product of every axis value.
  std::set<std::string> accepted;
  const unsigned saving = recompute_module_bit(RecomputeModule::kCoreAttn) |
                          recompute_module_bit(RecomputeModule::kLayernorm) |
                          recompute_module_bit(RecomputeModule::kMoeAct);
  ASSERT_EQ(memory_saving_modules(s.model, s.training), saving);
  const unsigned offload_set = offload_module_bit(OffloadModule::kCoreAttn) | offload_module_bit(OffloadModule::kAttnProj);
  ASSERT_EQ(offload_saving_modules(s.training), offload_set);
  const int n = s.cluster.num_gpus();
  for (int tp : divisors(n))
    for (int cp : divisors(n / tp))
      for (int pp : divisors(n / (tp * cp))) {
        const int dp = n / (tp * cp * pp);
        for (int ep : {1, 2, 3, 4, 8})  // the divisors of the 8 experts, and one that refuses
          for (int etp : divisors(tp))
            for (int mbs : {1, 2, 3, 4, 5, 8, 16})  // the divisors of the batch of 16, and two that refuse
              for (bool sp : {false, true})
                for (RecomputeMode rc : {RecomputeMode::kNone, RecomputeMode::kSelective, RecomputeMode::kFull})
                  // Selective: Megatron's default core_attn, the memory-saving set of an MoE model,
                  // or that set less core_attn with core attention's tensors offloaded.
                  for (auto [modules, offload] :
                       rc == RecomputeMode::kSelective
                           ? std::vector<std::pair<unsigned, unsigned>>{{kDefaultRecomputeModules, 0},
                                                                        {saving, 0},
                                                                        {saving & ~kDefaultRecomputeModules, offload_set}}
                           : std::vector<std::pair<unsigned, unsigned>>{{kDefaultRecomputeModules, 0}})
                  for (bool overlap : {false, true})
                  for (MoeDispatcher dispatcher : ep > 1 ? std::vector{MoeDispatcher::kAllToAll, MoeDispatcher::kDeepEP}
                                                         : std::vector{MoeDispatcher::kAllToAll})
                  for (int zero = 0; zero <= 3; ++zero)
                    for (int op : zero == 0 ? std::vector<int>{0} : divisors(dp))
                      for (Schedule sched : {Schedule::kOneFOneB, Schedule::kZeroBubbleH1, Schedule::kGPipe,
                                             Schedule::kInterleaved1F1B, Schedule::kInterleavedZeroBubble,
                                             Schedule::kZeroBubbleV, Schedule::kDualPipeV, Schedule::kDualPipe})
                        for (int vpp = 1; vpp <= s.model.num_layers; ++vpp) {
                          const bool chunked = sched == Schedule::kInterleaved1F1B ||
                                               sched == Schedule::kInterleavedZeroBubble ||
                                               sched == Schedule::kZeroBubbleV || sched == Schedule::kDualPipeV;
                          if ((vpp > 1) != chunked) continue;
                          // A V holds two chunks: beyond 3 resolve's answer is the same refusal.
                          const bool v_shaped = sched == Schedule::kZeroBubbleV || sched == Schedule::kDualPipeV;
                          if (v_shaped && vpp > 3) break;
                          // More chunks than layers (with the embedding and loss a split may count):
                          // the first such vpp is tried, the ones past it are the same refusal.
                          if (pp * (vpp - 1) > s.model.num_layers + 2) break;
                          if (pp == 1 && sched != Schedule::kOneFOneB) continue;  // the same as 1F1B
                          if (sp && tp == 1) continue;                            // resolve drops it
                          // Megatron's embedding-/loss-aware split: searched for interleaving whose
                          // layers do not split evenly over pp x vpp (not for 1F1B, whose uneven
                          // stages level 2 chooses itself).
                          const bool uneven = vpp > 1 && s.model.num_layers % (pp * vpp) != 0;
                          for (int split = 0; split <= (uneven ? 3 : 0); ++split) {
                            ParallelConfig p;
                            p.dp = dp, p.tp = tp, p.pp = pp, p.cp = cp, p.ep = ep, p.etp = etp, p.mbs = mbs;
                            p.sequence_parallel = sp, p.recompute = rc, p.zero = zero, p.op = op, p.schedule = sched;
                            p.vpp = vpp, p.ep_overlap = overlap, p.dispatcher = dispatcher;
                            p.recompute_modules = modules;
                            p.offload_modules = offload;
                            p.account_embedding = (split & 1) != 0, p.account_loss = (split & 2) != 0;
                            if (std::optional<std::string> key = resolved_key(p, s)) accepted.insert(*key);
                          }
                        }
      }
  EXPECT_EQ(enumerated, accepted);
  EXPECT_GT(accepted.size(), 5000u);
  EXPECT_TRUE(std::any_of(accepted.begin(), accepted.end(),
                          [](const std::string& k) { return k.find("ep_overlap=true") != std::string::npos; }));
  EXPECT_TRUE(std::any_of(accepted.begin(), accepted.end(),
                          [](const std::string& k) { return k.find("dispatcher=deepep") != std::string::npos; }));
  EXPECT_TRUE(std::any_of(accepted.begin(), accepted.end(), [](const std::string& k) {
    return k.find("offload_modules=core_attn+attn_proj") != std::string::npos;
  }));
  EXPECT_TRUE(std::any_of(accepted.begin(), accepted.end(),
                          [](const std::string& k) { return k.find("account_embedding=true") != std::string::npos; }));
  EXPECT_TRUE(std::any_of(accepted.begin(), accepted.end(), [](const std::string& k) {
    return k.find("recompute_modules=core_attn+moe_act+layernorm") != std::string::npos;
  }));
  for (const char* schedule : {"schedule=interleaved-zb", "schedule=zb-v", "schedule=dualpipev", "schedule=dualpipe"})
    EXPECT_TRUE(std::any_of(accepted.begin(), accepted.end(),
                            [&](const std::string& k) { return k.find(schedule) != std::string::npos; }))
        << schedule;
}

// ep_overlap is searched for MoE models only, and --fix/--allow take it like sp.
TEST(Space, EpOverlapIsAnAxisOfMoeModelsOnly) {
  SearchSpace space;
  add_constraints(space, "ep_overlap=true", ConstraintKind::kFix, "--fix");
  EXPECT_TRUE(space.permits(Axis::kEpOverlap, 1));
  EXPECT_FALSE(space.permits(Axis::kEpOverlap, 0));
  Scenario moe = tiny_moe_on_16();
  const std::vector<Candidate> with = all_candidates(moe, space);
  ASSERT_FALSE(with.empty());
  for (const Candidate& c : with) {
    EXPECT_EQ(c.ep_overlap, 1);
    EXPECT_GT(c.ep, 1);
    EXPECT_NE(c.recompute, RecomputeMode::kFull);
    EXPECT_TRUE(c.pp == 1 || c.vpp > 1 || c.schedule == Schedule::kDualPipe);  // DualPipe overlaps by design
    EXPECT_TRUE(to_config(c).ep_overlap);
  }
  EXPECT_TRUE(all_candidates(llama8b_on_8(), space).empty());  // dense: never on
  for (const Candidate& c : all_candidates(llama8b_on_8(), SearchSpace{})) ASSERT_EQ(c.ep_overlap, 0);
  SearchSpace bad;
  try {
    add_constraints(bad, "ep_overlap=maybe", ConstraintKind::kAllow, "--allow");
    FAIL() << "accepted ep_overlap=maybe";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("--allow ep_overlap: 'maybe' is not a boolean"), std::string::npos) << e.what();
  }
}

TEST(Space, ConstraintsParseAndRejectBadInput) {
  SearchSpace space;
  add_constraints(space, "tp=2,pp=4", ConstraintKind::kFix, "--fix");
  add_constraints(space, "zero=0,1,schedule=1f1b,zb-h1", ConstraintKind::kAllow, "--allow");
  add_constraints(space, "mbs=4", ConstraintKind::kMax, "--max");
  EXPECT_TRUE(space.permits(Axis::kTp, 2));
  EXPECT_FALSE(space.permits(Axis::kTp, 4));
  EXPECT_TRUE(space.permits(Axis::kZero, 1));
  EXPECT_FALSE(space.permits(Axis::kZero, 2));
  EXPECT_TRUE(space.permits(Axis::kSchedule, static_cast<int>(Schedule::kZeroBubbleH1)));
  EXPECT_FALSE(space.permits(Axis::kSchedule, static_cast<int>(Schedule::kGPipe)));
  EXPECT_FALSE(space.permits(Axis::kMbs, 8));
  auto message = [&](const char* text, ConstraintKind kind) {
    try {
      SearchSpace s;
      add_constraints(s, text, kind, "--fix");
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message("tpp=2", ConstraintKind::kFix).find("did you mean 'tp'"), std::string::npos);
  EXPECT_NE(message("tp=two", ConstraintKind::kFix).find("'two' is not an integer"), std::string::npos);
  EXPECT_NE(message("tp=2,4", ConstraintKind::kFix).find("takes one value"), std::string::npos);
  EXPECT_NE(message("zero=5", ConstraintKind::kAllow).find("0, 1, 2 or 3"), std::string::npos);
  EXPECT_NE(message("schedule=1f1b", ConstraintKind::kMax).find("not a numeric axis"), std::string::npos);
  EXPECT_NE(message("8", ConstraintKind::kFix).find("KEY=VALUE"), std::string::npos);
}

// Llama-3-8B on one node with 16k-token sequences: memory forces recompute and pipelining.
Scenario llama8b_long_on_8() {
  Scenario s = llama8b_on_8();
  s.training.seq_len = 16384;
  return s;
}

// GroupBounder keeps each layer shape's costs and reuses them for groups of other dp, pp and
// sharding: its bounds are those of a model built for the group, bit for bit.
TEST(Bounds, GroupBounderEqualsAModelPerGroup) {
  for (const Scenario& s : {llama8b_on_8(), dense_first_moe_on_8()}) {
    GroupBounder bounder(s.model, s.cluster, s.training, default_calibration());
    int checked = 0;
    for (const Candidate& c : all_candidates(s, SearchSpace{})) {
      const ParallelConfig first = to_config(c);
      std::vector<ParallelConfig> sharded;
      for (int zero = 0; zero <= 3; ++zero) {
        ParallelConfig q = first;
        q.zero = zero;
        q.op = zero == 0 ? 1 : q.dp;
        sharded.push_back(q);
      }
      const PlanningBounds expected =
          group_bounds(StageCostModel(s.model, s.cluster, s.training, first, default_calibration()), sharded);
      const PlanningBounds got = bounder.bounds(first, sharded);
      EXPECT_EQ(got.iteration_time_s, expected.iteration_time_s) << to_string(first);
      EXPECT_EQ(got.memory_bytes, expected.memory_bytes) << to_string(first);
      ++checked;
    }
    EXPECT_GT(checked, 1000);
  }
}

// The planner's pruning is only exact if the bounds hold for every refinement that fits: any stage
// layout, any per-stage recompute, any gradient-sync placement (the memory bound for every one).
TEST(Bounds, HoldForRandomStageLayoutsAndRecompute) {
  std::mt19937 rng(7);
  for (const Scenario& s : {llama8b_on_8(), llama8b_long_on_8(), dense_first_moe_on_8()}) {
    int checked = 0, fitting = 0;
    for (const Candidate& c : all_candidates(s, SearchSpace{})) {
      if (rng() % 20 != 0) continue;
      if (c.pipeline_split != 0) continue;  // Megatron's split fixes the layout: none to draw
      const ParallelConfig base = to_config(c);
      const StageCostModel layers(s.model, s.cluster, s.training, base, default_calibration());
      const PlanningBounds b = planning_bounds(layers, base);
      // The group's bounds (any ZeRO stage with the most sharding, any schedule) are below the member's.
      std::vector<ParallelConfig> sharded;
      for (int zero = 0; zero <= 3; ++zero) {
        ParallelConfig q = base;
        q.zero = zero;
        q.op = zero == 0 ? 1 : q.dp;
        sharded.push_back(q);
      }
      const PlanningBounds g = group_bounds(layers, sharded);
      EXPECT_LE(g.memory_bytes, b.memory_bytes * (1 + 1e-12)) << to_string(base);
      EXPECT_LE(g.iteration_time_s, b.iteration_time_s * (1 + 1e-12)) << to_string(base);
      for (int layout = 0; layout < 3; ++layout) {
        ParallelConfig p = layers.config();
        // A random layout of multiples of vpp layers, and random recompute counts with recompute=full.
        std::vector<int> blocks(static_cast<std::size_t>(p.pp), 1);
        for (int extra = s.model.num_layers / p.vpp - p.pp; extra > 0; --extra) ++blocks[rng() % blocks.size()];
        p.stage_layers.clear();
        for (int k : blocks) p.stage_layers.push_back(k * p.vpp);
        if (p.recompute == RecomputeMode::kFull) {
          p.stage_recompute_layers.clear();
          for (int n : p.stage_layers) p.stage_recompute_layers.push_back(static_cast<int>(rng() % (n + 1)));
        }
        p.grad_sync = static_cast<GradSync>(rng() % 3);
        const Estimate e = estimate(s.model, s.cluster, s.training, p);
        EXPECT_LE(b.memory_bytes, e.peak_memory_bytes * (1 + 1e-12)) << to_string(p);
        if (e.fits) {
          EXPECT_LE(b.iteration_time_s, e.iteration_time_s * (1 + 1e-12)) << to_string(p);
          ++fitting;
        }
        ++checked;
      }
    }
    EXPECT_GT(checked, 300) << s.training.seq_len;
    EXPECT_GT(fitting, 100) << s.training.seq_len;
  }
}

// assign_stages against every contiguous layout and every recompute count, on its own objective.
TEST(StageAssignment, IsExactOnItsObjective) {
  const std::vector<std::pair<Scenario, const char*>> cases{
      {llama8b_on_8(), "dp=2,tp=1,pp=4,mbs=1,recompute=full"},
      {llama8b_on_8(), "dp=1,tp=2,pp=4,mbs=2,recompute=full"},
      {llama8b_on_8(), "dp=2,tp=2,pp=2,vpp=4,mbs=1,recompute=none"},
      {llama8b_on_8(), "dp=1,tp=1,pp=8,mbs=1,recompute=full"},
      {llama8b_on_8(), "dp=2,tp=1,pp=4,mbs=1,zero=3,recompute=full,schedule=zb-h1"},
      {llama8b_on_8(), "dp=1,tp=2,pp=4,mbs=1,recompute=full,schedule=gpipe"},
      // Dense and MoE layers: where a stage starts matters.
      {dense_first_moe_on_8(), "dp=2,tp=1,pp=4,ep=2,mbs=1,recompute=full"},
      {dense_first_moe_on_8(), "dp=1,tp=2,pp=4,mbs=1,sp=true,recompute=full,schedule=gpipe"},
      {dense_first_moe_on_8(), "dp=1,tp=1,pp=8,mbs=1,recompute=none"}};
  for (const auto& one_case : cases) {
    const Scenario& s = one_case.first;
    const char* text = one_case.second;
    const ParallelConfig config = parse_parallel_config(text);
    const StageCostModel costs(s.model, s.cluster, s.training, config, default_calibration());
    const Estimate uniform = estimate(s.model, s.cluster, s.training, config);
    std::vector<double> in_flight;
    for (const StageEstimate& st : uniform.stages) in_flight.push_back(std::max(1.0, st.in_flight_microbatches));
    const bool full = config.recompute == RecomputeMode::kFull;
    const StageAssignment a = assign_stages(costs, in_flight, full);

    // Brute force: every composition of the layers into pp parts of multiples of vpp, each stage
    // with the smallest recompute count that fits (scanned linearly).
    const int pp = config.pp, v = config.vpp, blocks = s.model.num_layers / v;
    const double m = costs.num_microbatches(), limit = costs.memory_limit_bytes();
    double best = std::numeric_limits<double>::infinity();
    std::vector<int> k(static_cast<std::size_t>(pp), 1);
    std::function<void(int, int)> place = [&](int stage, int left) {
      if (stage == pp - 1) {
        k[static_cast<std::size_t>(stage)] = left;
        double sum = 0, worst = 0;
        int first = 0;
        for (int st = 0; st < pp; ++st) {
          const int layers = k[static_cast<std::size_t>(st)] * v;
          double t = std::numeric_limits<double>::infinity();
          for (int r = 0; r <= (full ? layers : 0); ++r) {
            const StageWork w = costs.stage_work(st, first, layers, r, in_flight[static_cast<std::size_t>(st)]);
            if (w.memory_bytes <= limit) {
              t = w.time_s;
              break;
            }
          }
          sum += t;
          worst = std::max(worst, t);
          first += layers;
        }
        best = std::min(best, (m - 1.0 / v) * worst + sum / v);
        return;
      }
      for (int n = 1; n <= left - (pp - 1 - stage); ++n) {
        k[static_cast<std::size_t>(stage)] = n;
        place(stage + 1, left - n);
      }
    };
    place(0, blocks);
    ASSERT_TRUE(a.feasible) << text;
    EXPECT_NEAR(a.objective_s, best, 1e-12 * best) << text;
    int total = 0;
    for (std::size_t i = 0; i < a.stage_layers.size(); ++i) {
      total += a.stage_layers[i];
      EXPECT_EQ(a.stage_layers[i] % v, 0);
      EXPECT_LE(a.recomputed[i], a.stage_layers[i]);
    }
    EXPECT_EQ(total, s.model.num_layers);
  }
}

// With alike layers a stage's time and memory never fall as it holds more layers (the stage
// assignment's search over sizes stops at the first one over a cap), ZeRO-3 included.
TEST(StageAssignment, StageCostsGrowWithTheLayersHeld) {
  const Scenario s = llama8b_on_8();
  for (const char* text : {"dp=2,tp=1,pp=4,mbs=1,recompute=full", "dp=2,tp=1,pp=4,mbs=1,zero=3,op=2,recompute=full",
                           "dp=4,tp=1,pp=2,vpp=2,mbs=2,zero=3,recompute=full,schedule=interleaved-1f1b"}) {
    const StageCostModel costs(s.model, s.cluster, s.training, parse_parallel_config(text), default_calibration());
    ASSERT_TRUE(costs.layers_alike());
    const int v = costs.config().vpp;
    for (int rank : {0, 1, costs.config().pp - 1})
      for (int recomputed : {0, 2})
        for (int layers = 2 * v; layers + v <= s.model.num_layers; layers += v) {
          const StageWork a = costs.stage_work(rank, 0, layers, recomputed, 2);
          const StageWork b = costs.stage_work(rank, 0, layers + v, recomputed, 2);
          EXPECT_GE(b.time_s, a.time_s) << text << " rank " << rank << " layers " << layers;
          EXPECT_GE(b.memory_bytes, a.memory_bytes) << text << " rank " << rank << " layers " << layers;
        }
  }
}

// The search equals refining every candidate of the space (level 2 everywhere, no pruning).
// Ranked by the same rule (plan/ranking.h); refine() keeps to what one of options.frameworks runs.
void expect_equals_brute_force(const Scenario& s, PlanOptions options) {
  // Among several frameworks, plan() searches only those that can build the model.
  if (options.frameworks.size() > 1)
    std::erase_if(options.frameworks, [&](Framework f) { return !model_refusals(f, s.model).empty(); });
  std::map<std::string, std::pair<double, ParallelConfig>> best;  // best refinement per configuration
  long long runnable = 0;
  for (const Candidate& c : all_candidates(s, options.space)) {
    if (options.frameworks.empty() ||
        std::any_of(options.frameworks.begin(), options.frameworks.end(), [&](Framework f) {
          return can_run(f, to_config(c, options.base), s.model, s.training, false);
        }))
      ++runnable;
    if (auto e = refine(s.model, s.cluster, s.training, c, options)) {
      auto [it, inserted] = best.try_emplace(to_string(e->config), e->iteration_time_s, e->config);
      if (!inserted && e->iteration_time_s < it->second.first) it->second = {e->iteration_time_s, e->config};
    }
  }
  std::vector<std::pair<double, std::string>> all;
  std::vector<std::pair<double, ParallelConfig>> ranked;
  for (const auto& [key, entry] : best) ranked.push_back(entry);
  rank(ranked, [](const auto& e) { return e.first; }, [](const auto& e) -> const ParallelConfig& { return e.second; });
  for (const auto& [t, config] : ranked) all.emplace_back(t, to_string(config));
  ASSERT_FALSE(all.empty());
  options.baselines = false;
  const PlanResult r = plan(s.model, s.cluster, s.training, options);
  ASSERT_FALSE(r.plans.empty());
  ASSERT_LE(r.plans.size(), all.size());
  for (std::size_t i = 0; i < r.plans.size(); ++i) {
    EXPECT_EQ(r.plans[i].estimate.iteration_time_s, all[i].first) << i;
    EXPECT_EQ(to_string(r.plans[i].estimate.config), all[i].second) << i;
  }
  // Groups are expanded only when the search reaches their bound: some candidates are never seen.
  const long long never_expanded = r.stats.groups - r.stats.groups_expanded - r.stats.groups_pruned_memory;
  EXPECT_GE(never_expanded, 0);
  EXPECT_GT(r.stats.pruned_memory + r.stats.pruned_time + r.stats.groups_pruned_memory + never_expanded, 0);
  EXPECT_LE(r.stats.candidates_level1, runnable);
  EXPECT_LE(r.stats.candidates_level1 + r.stats.unsupported,
            static_cast<long long>(all_candidates(s, options.space).size()));
}

TEST(Planner, TopPlansEqualBruteForceDense) {
  PlanOptions options;  // what any framework runs (the default)
  options.keep = 4;
  expect_equals_brute_force(llama8b_on_8(), options);
  options.frameworks.clear();  // the whole space
  expect_equals_brute_force(llama8b_on_8(), options);
}

// Memory forces recompute (without context parallelism, part of the top 5 recomputes some layers).
TEST(Planner, TopPlansEqualBruteForceUnderMemoryPressure) {
  PlanOptions options;
  options.keep = 4;
  add_constraints(options.space, "cp=1", ConstraintKind::kFix, "--fix");
  expect_equals_brute_force(llama8b_long_on_8(), options);
}

// Layers of two kinds: stage costs depend on where a stage starts (shared between ranges alike in
// their MoE layers, StageCostModel::range_signature).
TEST(Planner, TopPlansEqualBruteForceWithDenseAndMoeLayers) {
  PlanOptions options;
  options.keep = 4;
  add_constraints(options.space, "mbs=2", ConstraintKind::kMax, "--max");
  expect_equals_brute_force(dense_first_moe_on_8(), options);
}

TEST(Planner, TopPlansEqualBruteForceMoe) {
  PlanOptions options;
  options.keep = 4;
  add_constraints(options.space, "mbs=4", ConstraintKind::kMax, "--max");
  expect_equals_brute_force(tiny_moe_on_16(), options);
}

// Within a framework (--emit) the search is still exact: the same as refining, within what the
// framework can express, every candidate it can run (level 2's restricted layouts and recompute
// counts are a subset of what the bounds hold for).
TEST(Planner, TopPlansEqualBruteForceWithinEachFramework) {
  for (Framework f : kFrameworks) {
    PlanOptions options;
    options.keep = 4;
    options.frameworks = {f};
    add_constraints(options.space, "cp=1", ConstraintKind::kFix, "--fix");
    expect_equals_brute_force(llama8b_long_on_8(), options);
  }
  PlanOptions options;
  options.keep = 4;
  options.frameworks = {Framework::kMegatron};
  add_constraints(options.space, "mbs=4", ConstraintKind::kMax, "--max");
  expect_equals_brute_force(tiny_moe_on_16(), options);
}

// Llama-3.1-405B's 126 layers on pp 8 x vpp 8 (NVIDIA's and Meta's schedule): only Megatron's
// embedding- and loss-aware split makes them 128 even slots, and the planner finds it.
TEST(Planner, SearchesMegatronsEmbeddingAndLossAwareSplit) {
  TrainingSpec t;
  t.seq_len = 8192;
  t.global_batch = 256;
  PlanOptions options;
  options.keep = 2;
  options.top = 2;
  options.baselines = false;
  add_constraints(options.space, "tp=8,pp=8,vpp=8,cp=1,mbs=1", ConstraintKind::kFix, "--fix");
  const PlanResult r = plan(load_model("llama3.1-405b"), load_cluster("dgx-h100:128"), t, options);
  ASSERT_FALSE(r.plans.empty());
  const ParallelConfig& best = r.plans.front().estimate.config;
  EXPECT_EQ(best.vpp, 8);
  EXPECT_TRUE(best.account_embedding && best.account_loss) << to_string(best);
  int layers = 0;
  for (int n : best.stage_layers) layers += n;
  EXPECT_EQ(layers, 126);
  // Emitted as Megatron's own split (R11), which excludes the uneven first/last flags (R11.4).
  const std::string args = launch_settings(Framework::kMegatron, best, load_model("llama3.1-405b"), t).text;
  EXPECT_NE(args.find("--account-for-embedding-in-pipeline-split"), std::string::npos) << args;
  EXPECT_NE(args.find("--account-for-loss-in-pipeline-split"), std::string::npos) << args;
  EXPECT_NE(args.find("--num-virtual-stages-per-pipeline-rank 8"), std::string::npos) << args;
  EXPECT_EQ(args.find("--decoder-first-pipeline-num-layers"), std::string::npos) << args;
}

// FP8 parameters need a sharded optimizer: the search leaves zero=0 out instead of failing on it.
TEST(Planner, Fp8ParamGatherSearchesShardedOptimizersOnly) {
  Scenario s = llama8b_on_8();
  s.training.precision = Precision::kFP8;
  s.training.fp8_param_gather = true;
  PlanOptions options;
  options.keep = 4;
  options.baselines = false;
  const PlanResult r = plan(s.model, s.cluster, s.training, options);
  ASSERT_FALSE(r.plans.empty());
  for (const auto& p : r.plans) EXPECT_GE(p.estimate.config.zero, 1) << to_string(p.estimate.config);
}

// --allow recompute=full: the refinement may recompute fewer layers, never none.
TEST(Planner, AllowRecomputeFullIsHonoured) {
  PlanOptions options;
  options.top = 5;
  options.baselines = false;
  add_constraints(options.space, "recompute=full", ConstraintKind::kAllow, "--allow");
  const Scenario s = llama8b_on_8();
  const PlanResult r = plan(s.model, s.cluster, s.training, options);
  ASSERT_FALSE(r.plans.empty());
  for (const auto& p : r.plans) EXPECT_EQ(p.estimate.config.recompute, RecomputeMode::kFull) << to_string(p.estimate.config);
}

TEST(Planner, RespectsConstraints) {
  const Scenario s = tiny_moe_on_16();
  PlanOptions options;
  options.top = 10;
  add_constraints(options.space, "tp=2", ConstraintKind::kFix, "--fix");
  add_constraints(options.space, "pp=2", ConstraintKind::kMax, "--max");
  add_constraints(options.space, "zero=0,1,schedule=1f1b,zb-h1,grad_sync=shifted", ConstraintKind::kAllow, "--allow");
  const PlanResult r = plan(s.model, s.cluster, s.training, options);
  ASSERT_FALSE(r.plans.empty());
  for (const Plan& p : r.plans) {
    const ParallelConfig& c = p.estimate.config;
    EXPECT_EQ(c.tp, 2);
    EXPECT_LE(c.pp, 2);
    EXPECT_LE(c.zero, 1);
    EXPECT_TRUE(c.schedule == Schedule::kOneFOneB || c.schedule == Schedule::kZeroBubbleH1);
    EXPECT_EQ(c.grad_sync, GradSync::kShifted);
    EXPECT_LE(c.mbs, 16);
  }
}

TEST(Planner, SameResultForEveryThreadCount) {
  const Scenario s = tiny_moe_on_16();
  PlanOptions options;
  options.keep = 3;
  std::string first;
  for (int threads : {1, 2, 5}) {
    options.threads = threads;
    nlohmann::json j = to_json(plan(s.model, s.cluster, s.training, options));
    for (const char* timing : {"elapsed_s", "bounds_s", "level1_s", "level2_s"}) j["search"].erase(timing);
    if (first.empty()) first = j.dump();
    else EXPECT_EQ(j.dump(), first) << threads << " threads";
  }
}

// PlanOptions::progress counts what the search did, on every thread count, and changes nothing in
// its result.
TEST(Planner, ProgressCountsTheSearchAndChangesNothing) {
  const Scenario s = tiny_moe_on_16();
  PlanOptions options;
  options.keep = 3;
  nlohmann::json unwatched = to_json(plan(s.model, s.cluster, s.training, options));
  for (int threads : {1, 3}) {
    PlanProgress progress;
    options.threads = threads;
    options.progress = &progress;
    const PlanResult r = plan(s.model, s.cluster, s.training, options);
    nlohmann::json j = to_json(r);
    for (nlohmann::json* k : {&j, &unwatched})
      for (const char* timing : {"elapsed_s", "bounds_s", "level1_s", "level2_s"}) (*k)["search"].erase(timing);
    EXPECT_EQ(j.dump(), unwatched.dump()) << threads << " threads";
    EXPECT_EQ(progress.stage.load(), PlanProgress::kDone);
    EXPECT_GT(progress.meshes.load(), 0);
    EXPECT_EQ(progress.meshes_done.load(), progress.meshes.load());
    EXPECT_EQ(progress.bounded.load(), r.stats.candidates_level1 + r.stats.unsupported);
    EXPECT_EQ(progress.groups_bounded.load(), r.stats.groups);
    EXPECT_EQ(progress.groups.load(), r.stats.groups - r.stats.groups_pruned_memory);
    EXPECT_EQ(progress.estimated.load(), r.stats.level1_evaluated);
    EXPECT_EQ(progress.refined.load(), r.stats.level2_evaluated);
    EXPECT_GT(progress.refined.load(), 0);
  }
}

// plan --base "recompute_modules=...": the selective candidates recompute those modules, the others
// none; a set the model cannot recompute is an error naming the base, not an empty search.
TEST(Planner, SelectiveCandidatesTakeTheBasesRecomputeModules) {
  const Scenario s = tiny_moe_on_16();
  PlanOptions options;
  options.baselines = false;
  options.base.recompute_modules = recompute_module_bit(RecomputeModule::kCoreAttn) |
                                   recompute_module_bit(RecomputeModule::kMoeAct);
  add_constraints(options.space, "recompute=selective,tp=1,pp=1", ConstraintKind::kFix, "--fix");
  const PlanResult r = plan(s.model, s.cluster, s.training, options);
  ASSERT_FALSE(r.plans.empty());
  for (const auto& p : r.plans) {
    EXPECT_EQ(p.estimate.config.recompute_modules, options.base.recompute_modules) << to_string(p.estimate.config);
    EXPECT_NE(to_string(p.estimate.config).find("recompute_modules=core_attn+moe_act"), std::string::npos);
  }
  // moe cannot be recomputed with the all-to-all overlapped (R17.1): those candidates are left out.
  PlanOptions whole = options;
  whole.base.recompute_modules = recompute_module_bit(RecomputeModule::kMoe);
  const PlanResult w = plan(s.model, s.cluster, s.training, whole);
  ASSERT_FALSE(w.plans.empty());
  EXPECT_GT(w.stats.unsupported, 0);
  for (const auto& p : w.plans) EXPECT_FALSE(p.estimate.config.ep_overlap) << to_string(p.estimate.config);
  const Scenario dense = llama8b_on_8();
  try {
    plan(dense.model, dense.cluster, dense.training, options);
    FAIL() << "planned moe_act for a dense model";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("base: recompute_modules=core_attn+moe_act: moe_act"), std::string::npos)
        << e.what();
  }
}

// Activation offload is one more memory saver of the space (offload_saving_modules): searched by
// default, excluded by --fix offload=false, the only kind with --fix offload=true; a GPU whose host
// link is not known is planned without it.
TEST(Planner, SearchesActivationOffload) {
  const Scenario s = llama8b_long_on_8();
  PlanOptions options;
  options.baselines = false;
  const double best = plan(s.model, s.cluster, s.training, options).plans.front().estimate.iteration_time_s;
  PlanOptions without = options;
  add_constraints(without.space, "offload=false", ConstraintKind::kFix, "--fix");
  const PlanResult w = plan(s.model, s.cluster, s.training, without);
  for (const auto& p : w.plans) EXPECT_EQ(p.estimate.config.offload_modules, 0u) << to_string(p.estimate.config);
  EXPECT_LE(best, w.plans.front().estimate.iteration_time_s);
  PlanOptions only = options;
  add_constraints(only.space, "offload=true", ConstraintKind::kFix, "--fix");
  const PlanResult o = plan(s.model, s.cluster, s.training, only);
  ASSERT_FALSE(o.plans.empty());
  for (const auto& p : o.plans)
    EXPECT_EQ(p.estimate.config.offload_modules, offload_saving_modules(s.training)) << to_string(p.estimate.config);
  ClusterSpec unknown_link = s.cluster;
  unknown_link.gpu.host_link_bandwidth_bytes_per_s = 0;
  for (const auto& p : plan(s.model, unknown_link, s.training, options).plans)
    EXPECT_EQ(p.estimate.config.offload_modules, 0u) << to_string(p.estimate.config);
  try {
    plan(s.model, unknown_link, s.training, only);
    FAIL() << "planned offload without a host link";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("has no host_link_bandwidth"), std::string::npos) << e.what();
  }
}

// Megatron's account-for-embedding/loss split fixes the stage layout, which level 2 chooses.
TEST(Planner, RefusesAccountFlagsInTheBase) {
  const Scenario s = llama8b_on_8();
  PlanOptions options;
  options.base.account_embedding = true;
  try {
    plan(s.model, s.cluster, s.training, options);
    FAIL() << "planned with account_embedding";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("account_embedding=true"), std::string::npos) << e.what();
  }
}

// Issue 21: degrees were stored in 16 bits, and `plan` on 32,768 GPUs failed with "dp=-32768". On
// 32,768 and 131,072 GPUs the planner finds plans that use every GPU, whose predictions are what
// estimate() says for them (a wrapped degree would fail resolve() or change the time).
TEST(Planner, PlansForTensOfThousandsOfGpus) {
  for (int nodes : {4096, 16384}) {
    const int gpus = nodes * 8;
    TrainingSpec t;
    t.seq_len = 4096;
    t.global_batch = gpus;  // one sequence per GPU: pure data parallelism is among the best
    const ModelSpec model = load_model("llama3-8b");
    const ClusterSpec cluster = load_cluster(fmt::format("dgx-h100:{}", nodes));
    const PlanResult r = plan(model, cluster, t, PlanOptions{});
    ASSERT_FALSE(r.plans.empty()) << gpus;
    EXPECT_EQ(r.plans.front().estimate.config.dp, gpus) << to_string(r.plans.front().estimate.config);
    for (const Plan& p : r.plans) {
      const ParallelConfig& c = p.estimate.config;
      EXPECT_EQ(c.num_gpus(), gpus) << to_string(c);
      EXPECT_GT(p.estimate.mfu, 0.05) << to_string(c);
      EXPECT_LT(p.estimate.mfu, 0.8) << to_string(c);
      const Estimate again = estimate(model, cluster, t, c);
      EXPECT_DOUBLE_EQ(again.iteration_time_s, p.estimate.iteration_time_s) << to_string(c);
    }
  }
}

// Llama-3.1-405B on 131,072 H100 with 8,192 sequences of 8,192 tokens (64M tokens per step): the
// plan is Megatron-style 3D + CP parallelism within the cost model's realistic range.
TEST(Planner, Llama405bOn131072Gpus) {
  TrainingSpec t;
  t.seq_len = 8192;
  t.global_batch = 8192;
  const ModelSpec model = load_model("llama3.1-405b");
  const ClusterSpec cluster = load_cluster("dgx-h100:16384");
  PlanOptions options;
  options.threads = 2;
  const PlanResult r = plan(model, cluster, t, options);
  ASSERT_EQ(r.plans.size(), 5u);
  const Estimate& best = r.plans.front().estimate;
  EXPECT_EQ(best.config.num_gpus(), 131072);
  EXPECT_TRUE(best.fits);
  EXPECT_GE(best.config.tp, 8) << to_string(best.config);  // 405B needs model parallelism
  EXPECT_GE(best.config.dp, 256) << to_string(best.config);
  EXPECT_GT(best.mfu, 0.25) << to_string(best.config);
  EXPECT_LT(best.mfu, 0.6) << to_string(best.config);
  ASSERT_TRUE(r.expert.estimate.has_value());
  EXPECT_LE(best.iteration_time_s, r.expert.estimate->iteration_time_s);
}

TEST(Planner, OptionsAreValidatedBeforeSearching) {
  const Scenario s = llama8b_on_8();
  auto error_of = [&](const PlanOptions& options) -> std::string {
    try {
      plan(s.model, s.cluster, s.training, options);
    } catch (const Error& e) {
      return e.what();
    }
    return "";
  };
  PlanOptions o;
  o.estimate.memory_margin = -1;
  EXPECT_EQ(error_of(o), "memory_margin: -1 must be a finite number >= 0 and < 1 (the fraction of GPU memory kept free)");
  o = {};
  o.threads = 0;
  EXPECT_EQ(error_of(o), "threads: 0 must be from 1 to 1024");
  o = {};
  o.top = 0;
  EXPECT_EQ(error_of(o), "top: 0 must be >= 1");
  o = {};
  o.keep = -3;
  EXPECT_EQ(error_of(o), "keep: -3 must be >= 1");
  o = {};
  o.space.max_mbs = 0;
  EXPECT_EQ(error_of(o), "space.max_mbs: 0 must be >= 1");
}

TEST(Space, DivisorsInIncreasingOrder) {
  EXPECT_EQ(divisors(1), (std::vector<int>{1}));
  EXPECT_EQ(divisors(12), (std::vector<int>{1, 2, 3, 4, 6, 12}));
  EXPECT_EQ(divisors(49), (std::vector<int>{1, 7, 49}));
  EXPECT_EQ(divisors(97), (std::vector<int>{1, 97}));
  EXPECT_EQ(divisors(131072).size(), 18u);
  // O(sqrt n): about 46,000 trial divisions for the largest ints, not 2^31.
  const std::vector<int> big = divisors(2147483646);  // 2 x 3^2 x 7 x 11 x 31 x 151 x 331
  EXPECT_EQ(big.size(), 192u);
  EXPECT_TRUE(std::is_sorted(big.begin(), big.end()));
  EXPECT_EQ(big.back(), 2147483646);
  EXPECT_EQ(divisors(2147483647), (std::vector<int>{1, 2147483647}));  // a Mersenne prime
}

TEST(Planner, NothingFitsSaysWhatWould) {
  TrainingSpec t;
  t.seq_len = 4096;
  t.global_batch = 8;
  const PlanResult r = plan(load_model("llama3-8b"), load_cluster("h100x1"), t, PlanOptions{});
  EXPECT_TRUE(r.plans.empty());
  ASSERT_TRUE(r.closest.has_value());
  EXPECT_FALSE(r.closest->fits);
  ASSERT_FALSE(r.advice.empty());
  EXPECT_NE(r.advice.front().find("the GPUs"), std::string::npos) << r.advice.front();
  // On a GPU without FP8 the advice does not try FP8 (it used to fail the whole plan).
  const PlanResult a100 = plan(load_model("llama3-8b"), load_cluster("a100-80gbx1"), t, PlanOptions{});
  EXPECT_TRUE(a100.plans.empty());
  ASSERT_FALSE(a100.advice.empty());
  for (const std::string& line : a100.advice) EXPECT_EQ(line.find("FP8"), std::string::npos) << line;
}

TEST(Launch, MegatronArgumentsMatchThePlan) {
  const Scenario s = llama8b_on_8();
  const ParallelConfig p = resolve(parse_parallel_config("dp=1,tp=2,pp=4,mbs=1,zero=1,sp=true,recompute=full,"
                                                         "recompute_layers=3/0/0/0,stage_layers=6/9/9/8"),
                                   s.model, s.cluster, s.training);
  const LaunchSettings l = launch_settings(Framework::kMegatron, p, s.model, s.training);
  auto value = [&](const std::string& flag) {
    std::smatch match;
    const std::regex re(flag + " (\\d+)");
    return std::regex_search(l.text, match, re) ? std::stoi(match[1]) : -1;
  };
  EXPECT_EQ(value("--tensor-model-parallel-size"), 2);
  EXPECT_EQ(value("--pipeline-model-parallel-size"), 4);
  EXPECT_EQ(value("--micro-batch-size"), 1);
  EXPECT_EQ(value("--global-batch-size"), 16);
  const int first = value("--decoder-first-pipeline-num-layers"), last = value("--decoder-last-pipeline-num-layers");
  EXPECT_EQ(first, 6);
  EXPECT_EQ(last, 8);
  // The middle stages share the rest evenly, which must give the plan's 9/9.
  EXPECT_EQ((s.model.num_layers - first - last) % (p.pp - 2), 0);
  EXPECT_EQ((s.model.num_layers - first - last) / (p.pp - 2), 9);
  EXPECT_NE(l.text.find("--sequence-parallel"), std::string::npos);
  EXPECT_NE(l.text.find("--use-distributed-optimizer"), std::string::npos);
  EXPECT_EQ(value("--recompute-num-layers"), 3);
  ASSERT_EQ(l.cannot_express.size(), 1u);  // 3/0/0/0 is not one count for every stage
  EXPECT_NE(l.cannot_express[0].find("3/0/0/0"), std::string::npos);

  // Middle stages of different sizes: --pipeline-model-parallel-layout (R13), no first/last flags.
  ParallelConfig middle_uneven = p;
  middle_uneven.stage_layers = {8, 7, 9, 8};
  middle_uneven.recompute = RecomputeMode::kSelective;
  middle_uneven.stage_recompute_layers.clear();
  const LaunchSettings m = launch_settings(Framework::kMegatron, middle_uneven, s.model, s.training);
  EXPECT_EQ(m.text.find("--decoder-first-pipeline-num-layers"), std::string::npos);
  EXPECT_NE(m.text.find("--pipeline-model-parallel-layout \"E,t*8|t*7|t*9|t*8,L\""), std::string::npos) << m.text;
  EXPECT_TRUE(m.cannot_express.empty());

  // ZeRO-3 is Megatron-FSDP (R21.2); virtual stages with --num-virtual-stages-per-pipeline-rank (R10.1).
  const ParallelConfig fsdp = resolve(parse_parallel_config("dp=2,tp=1,pp=4,vpp=2,mbs=1,zero=3"), s.model, s.cluster,
                                      s.training);
  const LaunchSettings f = launch_settings(Framework::kMegatron, fsdp, s.model, s.training);
  for (const char* flag : {"--use-megatron-fsdp", "--data-parallel-sharding-strategy optim_grads_params",
                           "--ckpt-format fsdp_dtensor", "--num-virtual-stages-per-pipeline-rank 2"})
    EXPECT_NE(f.text.find(flag), std::string::npos) << flag << "\n" << f.text;
  EXPECT_EQ(f.text.find("--use-distributed-optimizer"), std::string::npos);
  EXPECT_EQ(f.text.find("--virtual-pipeline-model-parallel-size"), std::string::npos);  // no such flag (R0.3)
  EXPECT_TRUE(f.cannot_express.empty());
}

TEST(Launch, TorchtitanSplitPointsAndDeepSpeedBatch) {
  const Scenario s = llama8b_on_8();
  const ParallelConfig p = resolve(parse_parallel_config("dp=2,tp=2,pp=2,vpp=2,mbs=2,zero=3,op=2,sp=true,"
                                                         "recompute=selective"),
                                   s.model, s.cluster, s.training);
  const LaunchSettings t = launch_settings(Framework::kTorchtitan, p, s.model, s.training);
  // Stage s (rank s % pp) holds 8 layers; the first the embedding, the last norm and output (T4.3a).
  EXPECT_NE(t.text.find("module_fqns_per_model_part = [[\"tok_embeddings\", \"layers.0\", "), std::string::npos)
      << t.text;
  EXPECT_NE(t.text.find("\"layers.7\"], [\"layers.8\", "), std::string::npos) << t.text;
  EXPECT_NE(t.text.find("\"layers.31\", \"norm\", \"output\"]]"), std::string::npos) << t.text;
  EXPECT_EQ(t.text.find("split_points"), std::string::npos);  // removed before v0.2.0 (T0.3)
  EXPECT_NE(t.text.find("pipeline_parallel_schedule = \"Interleaved1F1B\""), std::string::npos);
  EXPECT_NE(t.text.find("data_parallel_shard_degree = 2"), std::string::npos);
  const LaunchSettings d = launch_settings(Framework::kDeepSpeed, p, s.model, s.training);
  // The script writes the ds_config with a quoted heredoc (cat > "$DS_CONFIG" <<'JSON' ... JSON).
  const std::size_t open = d.text.find("<<'JSON'\n");
  ASSERT_NE(open, std::string::npos) << d.text;
  const std::size_t begin = open + std::string("<<'JSON'\n").size();
  const auto j = nlohmann::json::parse(d.text.substr(begin, d.text.find("\nJSON\n", begin) - begin));
  EXPECT_EQ(j["train_batch_size"], 16);
  EXPECT_EQ(j["train_micro_batch_size_per_gpu"], 2);
  EXPECT_EQ(j["gradient_accumulation_steps"], 4);
  EXPECT_EQ(j["zero_optimization"]["stage"], 3);
  // zero=3 with pp=2, interleaving and overlapped gradient sync with a pipeline are each named.
  for (const char* what : {"zero=3 with pp=2", "schedule=interleaved-1f1b", "grad_sync=overlapped"})
    EXPECT_TRUE(std::any_of(d.cannot_express.begin(), d.cannot_express.end(),
                            [&](const std::string& line) { return line.find(what) != std::string::npos; }))
        << what;
}

}  // namespace
}  // namespace paratune::plan
