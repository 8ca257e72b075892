// The `plan` report: a plan level 1 has no time for says why (no "inf s"), JSON null; which
// frameworks run each plan.
#include "paratune/report/plan_report.h"

#include <gtest/gtest.h>

#include "paratune/spec/io.h"

namespace paratune {
namespace {

struct Fixture {
  ModelSpec model = load_model("llama3-8b");
  ClusterSpec cluster = load_cluster("dgx-h100:1");
  TrainingSpec training;
  Fixture() {
    training.seq_len = 4096;
    training.global_batch = 16;
  }
  plan::Plan make(const char* config, plan::Level1 level1, double level1_time_s) const {
    plan::Plan p;
    p.estimate = estimate(model, cluster, training, parse_parallel_config(config));
    p.level1 = level1;
    p.level1_time_s = level1_time_s;
    p.lower_bound_s = p.estimate.iteration_time_s / 2;
    p.frameworks = launch::framework_verdicts(p.estimate.config, model, training);
    return p;
  }
};

TEST(PlanReport, ExactSweepPlanHasNoLevelOneTime) {
  const Fixture f;
  plan::PlanResult r;
  r.plans.push_back(f.make("dp=8,mbs=1,zero=1", plan::Level1::kNotCosted,
                           std::numeric_limits<double>::infinity()));
  r.plans.push_back(f.make("dp=4,tp=2,mbs=1,sp=true,zero=1", plan::Level1::kTimed, 1.25));
  const std::string text = format_plan(r, f.model, f.cluster, f.training);
  EXPECT_EQ(text.find("inf"), std::string::npos) << text;
  EXPECT_NE(text.find("level 1 (even stages): - (found in the exact sweep"), std::string::npos) << text;
  const nlohmann::json j = to_json(r);
  EXPECT_TRUE(j["plans"][0]["level1_time_s"].is_null());
  EXPECT_EQ(j["plans"][0]["level1"], "exact-sweep");
  EXPECT_DOUBLE_EQ(j["plans"][1]["level1_time_s"].get<double>(), 1.25);
  EXPECT_EQ(j["plans"][1]["level1"], "timed");

  // A level-1 time is printed as a time; the other reasons say what happened.
  std::swap(r.plans[0], r.plans[1]);
  EXPECT_NE(format_plan(r, f.model, f.cluster, f.training).find("level 1 (even stages): 1.25"), std::string::npos);
  r.plans[0].level1 = plan::Level1::kDidNotFit;
  EXPECT_NE(format_plan(r, f.model, f.cluster, f.training).find("even stages do not fit"), std::string::npos);
  r.plans[0].level1 = plan::Level1::kNotReplayed;
  EXPECT_NE(format_plan(r, f.model, f.cluster, f.training).find("not replayed at level 1"), std::string::npos);
}

TEST(PlanReport, SaysWhichFrameworksRunEachPlan) {
  const Fixture f;
  plan::PlanResult r;
  r.plans.push_back(f.make("dp=8,mbs=1,zero=1", plan::Level1::kTimed, 1.0));         // not torchtitan (T1.8)
  r.plans.push_back(f.make("dp=4,cp=2,mbs=1,zero=3", plan::Level1::kTimed, 1.0));    // not DeepSpeed (D2.4)
  const std::string text = format_plan(r, f.model, f.cluster, f.training);
  EXPECT_NE(text.find("runs on"), std::string::npos) << text;
  EXPECT_NE(text.find(" M-D\n"), std::string::npos) << text;
  EXPECT_NE(text.find(" MT-\n"), std::string::npos) << text;
  EXPECT_NE(text.find("  runs on: megatron, deepspeed\n"), std::string::npos) << text;
  EXPECT_NE(text.find("  not torchtitan: zero=1"), std::string::npos) << text;  // why, for the winner
  const nlohmann::json j = to_json(r);
  EXPECT_EQ(j["plans"][0]["frameworks"], nlohmann::json({"megatron", "deepspeed"}));
  EXPECT_TRUE(j["plans"][0]["unsupported_by"].contains("torchtitan"));
  EXPECT_EQ(j["plans"][1]["frameworks"], nlohmann::json({"megatron", "torchtitan"}));
  EXPECT_FALSE(j.contains("framework"));  // searched within all three
  EXPECT_EQ(j["searched_within"], nlohmann::json::array());
  r.searched_within = {launch::Framework::kMegatron};
  EXPECT_EQ(to_json(r)["framework"], "megatron");
  EXPECT_NE(format_plan(r, f.model, f.cluster, f.training).find("only plans megatron runs as planned"),
            std::string::npos);
  r.searched_within = {launch::kFrameworks.begin(), launch::kFrameworks.end()};
  EXPECT_EQ(to_json(r)["searched_within"], nlohmann::json({"megatron", "torchtitan", "deepspeed"}));
  EXPECT_NE(format_plan(r, f.model, f.cluster, f.training)
                .find("only plans megatron, torchtitan or deepspeed runs as planned"),
            std::string::npos);
}

}  // namespace
}  // namespace paratune
