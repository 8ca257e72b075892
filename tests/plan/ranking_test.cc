// The ranking rule (plan/ranking.h): time, then simpler configuration first among equal times.
#include "paratune/plan/ranking.h"

#include <gtest/gtest.h>

#include <random>

#include "../test_util.h"
#include "paratune/plan/planner.h"
#include "paratune/spec/io.h"

namespace paratune::plan {
namespace {

ParallelConfig config(const char* text) { return parse_parallel_config(text); }

struct Fake {
  double time_s;
  ParallelConfig config;
};

std::vector<std::string> ranked_texts(std::vector<Fake> items) {
  rank(items, [](const Fake& f) { return f.time_s; }, [](const Fake& f) -> const ParallelConfig& { return f.config; });
  std::vector<std::string> out;
  for (const Fake& f : items) out.push_back(to_string(f.config));
  return out;
}

// Each pair: the first is simpler by exactly one key of the rule, in the rule's order.
TEST(Ranking, SimplerFollowsTheRuleKeyByKey) {
  const std::vector<std::pair<const char*, const char*>> pairs{
      {"dp=8,tp=1,pp=1", "dp=4,tp=2,pp=1"},                      // 1: fewer axes in use
      {"dp=2,tp=2,cp=2", "dp=1,tp=2,cp=4"},                      // 2: smaller cp (two axes each)
      {"dp=2,tp=2,pp=1,cp=2", "dp=2,tp=1,pp=2,cp=2"},            // 3: smaller pp (tp+cp vs pp+cp)
      {"dp=1,tp=4,pp=2", "dp=1,tp=2,pp=4"},                      // 3: smaller pp
      {"dp=2,pp=4,vpp=2", "dp=2,pp=4,vpp=4"},                    // 4: smaller vpp
      {"dp=8,zero=1", "dp=8,zero=2"},                            // 6: lower ZeRO stage
      {"dp=8,zero=1,op=8", "dp=8,zero=1,op=4"},                  // 7: sharded over all of dp first
      {"dp=8,recompute=none", "dp=8,recompute=selective"},       // 8: none < selective
      {"dp=8,recompute=selective", "dp=8,recompute=full"},       // 8: selective < full
      {"dp=2,pp=4,recompute=full,recompute_layers=1/1/1/1", "dp=2,pp=4,recompute=full,recompute_layers=2/1/1/1"},  // 9
      {"dp=2,tp=2,pp=2", "dp=2,tp=4,pp=2"},                      // 11: smaller tp (same count of axes)
      {"dp=4,tp=2", "dp=4,tp=2,sp=true"},                        // 13: SP off first
      {"dp=2,pp=4,schedule=1f1b", "dp=2,pp=4,schedule=gpipe"},   // 14: 1F1B < GPipe
      {"dp=2,pp=4,schedule=gpipe", "dp=2,pp=4,schedule=zb-h1"},  // 14: GPipe < ZB-H1
      {"dp=2,pp=4,stage_layers=8/8/8/8", "dp=2,pp=4,stage_layers=7/9/8/8"},  // 15: even stages first
      {"dp=8,grad_sync=overlapped", "dp=8,grad_sync=shifted"},   // 16
      {"dp=8,grad_sync=shifted", "dp=8,grad_sync=in-backward"},  // 16
      {"dp=8,mbs=1", "dp=8,mbs=2"},                              // 17: smaller micro-batch
  };
  for (const auto& [a, b] : pairs) {
    EXPECT_TRUE(simpler(config(a), config(b))) << a << " vs " << b;
    EXPECT_FALSE(simpler(config(b), config(a))) << b << " vs " << a;
  }
  // The earlier key wins over a later one: fewer axes beats a lower ZeRO stage and no recompute.
  EXPECT_TRUE(simpler(config("dp=8,zero=3,recompute=full"), config("dp=4,tp=2,zero=0")));
  // Expert keys: ep_overlap off first, etp equal to tp first.
  ParallelConfig a = config("dp=8,ep=4"), b = a;
  b.ep_overlap = true;
  EXPECT_TRUE(simpler(a, b));
  a = config("dp=4,tp=2,ep=4"), b = config("dp=4,tp=2,ep=4,etp=1");
  EXPECT_TRUE(simpler(a, b));
  // Total: distinct configurations never compare equal (only the text tells these apart).
  ParallelConfig x = config("dp=8"), y = x;
  y.overlap_param_gather = false;
  EXPECT_NE(simpler(x, y), simpler(y, x));
  EXPECT_FALSE(simpler(x, x));
}

// Two configurations with exactly the same predicted time come out in the rule's order, whatever
// order they come in and however their texts sort (alphabetically, "dp=2,tp=4" < "dp=8").
TEST(Ranking, ExactTiesComeOutSimplerFirst) {
  const std::vector<Fake> items{{5.0, config("dp=2,tp=4,pp=1")},
                                {5.0, config("dp=8,tp=1,pp=1,zero=1")},
                                {4.0, config("dp=1,tp=8")},
                                {5.0, config("dp=8,tp=1,pp=1")},
                                {6.0, config("dp=8,mbs=2")}};
  const std::vector<std::string> expected{to_string(config("dp=1,tp=8")), to_string(config("dp=8")),
                                          to_string(config("dp=8,zero=1")), to_string(config("dp=2,tp=4")),
                                          to_string(config("dp=8,mbs=2"))};
  std::vector<Fake> shuffled = items;
  std::mt19937 rng(3);
  for (int round = 0; round < 10; ++round) {
    std::shuffle(shuffled.begin(), shuffled.end(), rng);
    EXPECT_EQ(ranked_texts(shuffled), expected);
  }
  // The same for the pairwise choice.
  EXPECT_TRUE(ranks_before(5.0, config("dp=8"), 5.0, config("dp=2,tp=4")));
  EXPECT_FALSE(ranks_before(5.0, config("dp=2,tp=4"), 5.0, config("dp=8")));
  EXPECT_TRUE(ranks_before(4.0, config("dp=2,tp=4"), 5.0, config("dp=8")));
}

// Ties are equality within 1e-9 relative; a larger difference is ranked by time.
TEST(Ranking, TiesAreWithinTheStatedTolerance) {
  const double t = 7.25;
  EXPECT_TRUE(same_time(t, t * (1 + 0.5e-9)));
  EXPECT_FALSE(same_time(t, t * (1 + 2e-9)));
  EXPECT_TRUE(ranks_before(t * (1 + 0.5e-9), config("dp=8"), t, config("dp=2,tp=4")));  // simpler, a hair slower
  EXPECT_FALSE(ranks_before(t * (1 + 2e-9), config("dp=8"), t, config("dp=2,tp=4")));   // really slower
  // tie_limit_s: every time that ties with t, or is faster, is below it; infinity stays.
  EXPECT_LT(t * (1 + kTieRelativeTolerance), tie_limit_s(t));
  EXPECT_GE(t * (1 + 2e-9), tie_limit_s(t));
  EXPECT_EQ(tie_limit_s(std::numeric_limits<double>::infinity()), std::numeric_limits<double>::infinity());
  // A run of ties is anchored at its fastest member: a simpler plan within 1e-9 of it goes first.
  EXPECT_EQ(ranked_texts({{t, config("dp=2,tp=4")}, {t * (1 + 0.5e-9), config("dp=8")}, {t * 2, config("dp=1,tp=8")}}),
            (std::vector<std::string>{to_string(config("dp=8")), to_string(config("dp=2,tp=4")),
                                      to_string(config("dp=1,tp=8"))}));
}

// In a real search, every two neighbours of the ranking that tie are in the rule's order (a small
// model on one GPU: ZeRO over one rank changes nothing, so its stages tie exactly).
TEST(Ranking, PlannerOrdersTiesByTheRule) {
  const ModelSpec model = testing::ModelBuilder().layers(4).hidden(512).heads(8).build();
  ClusterSpec cluster = testing::dgx_h100(1);
  cluster.gpus_per_node = 2;
  PlanOptions options;
  options.top = 40;
  options.baselines = false;
  const PlanResult r = plan(model, cluster, testing::training(1024, 8), options);
  ASSERT_GE(r.plans.size(), 2u);
  int ties = 0;
  for (std::size_t i = 0; i + 1 < r.plans.size(); ++i) {
    const Estimate& a = r.plans[i].estimate;
    const Estimate& b = r.plans[i + 1].estimate;
    EXPECT_LE(a.iteration_time_s, b.iteration_time_s * (1 + kTieRelativeTolerance));
    if (same_time(a.iteration_time_s, b.iteration_time_s)) {
      ++ties;
      EXPECT_TRUE(simpler(a.config, b.config)) << to_string(a.config) << " before " << to_string(b.config);
    }
  }
  EXPECT_GT(ties, 0) << "no tie in this search: the test does not test the rule";
}

}  // namespace
}  // namespace paratune::plan
