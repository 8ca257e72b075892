// What each framework can run (launch/framework_support.h), rule by rule, and the planner restricted
// to one framework (PlanOptions::framework, `plan --emit`).
#include "paratune/launch/framework_support.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <regex>

#include "paratune/cost/model_stats.h"
#include "paratune/launch/launch.h"
#include "paratune/plan/planner.h"
#include "paratune/report/plan_report.h"
#include "paratune/spec/io.h"
#include "paratune/spec/presets.h"

namespace paratune::launch {
namespace {

struct FrameworkScene {
  ModelSpec model;
  ClusterSpec cluster;
  TrainingSpec training;
};

FrameworkScene llama8b(int nodes = 1) {
  TrainingSpec t;
  t.seq_len = 4096;
  t.global_batch = 16;
  return {load_model("llama3-8b"), load_cluster(fmt::format("dgx-h100:{}", nodes)), t};
}

FrameworkScene tiny_moe() {
  TrainingSpec t;
  t.seq_len = 2048;
  t.global_batch = 32;
  return {load_model(std::string(PARATUNE_SOURCE_DIR) + "/examples/tiny-moe.yaml"), load_cluster("dgx-h100:2"), t};
}

// The configuration's reasons (those about the model itself, model_refusals, left out).
std::vector<std::string> reasons(Framework f, const FrameworkScene& s, const std::string& text) {
  std::vector<std::string> r =
      unsupported_reasons(f, resolve(parse_parallel_config(text), s.model, s.cluster, s.training), s.model, s.training);
  r.erase(r.begin(), r.begin() + static_cast<long>(model_refusals(f, s.model).size()));
  return r;
}

// `text` is refused by f with one reason that contains `what` and cites a rule id of the
// framework's rules file; or runs (what == nullptr).
void expect(Framework f, const FrameworkScene& s, const std::string& text, const char* what) {
  const std::vector<std::string> r = reasons(f, s, text);
  const ParallelConfig resolved = resolve(parse_parallel_config(text), s.model, s.cluster, s.training);
  EXPECT_EQ(can_run(f, resolved, s.model, s.training), r.empty()) << text;
  if (!what) {
    EXPECT_TRUE(r.empty()) << to_string(f) << " " << text << ": " << (r.empty() ? "" : r.front());
    return;
  }
  ASSERT_EQ(r.size(), 1u) << to_string(f) << " " << text << (r.empty() ? "" : ": " + r.front());
  EXPECT_NE(r[0].find(what), std::string::npos) << r[0];
  const char* id = f == Framework::kMegatron ? "(R\\d+|Schedules that)" : f == Framework::kTorchtitan ? "T\\d+" : "D\\d+";
  EXPECT_TRUE(std::regex_search(r[0], std::regex(id)) || r[0].find("deepspeed.json") != std::string::npos) << r[0];
}

TEST(FrameworkSupport, NamesParseAndPrint) {
  for (Framework f : kFrameworks) EXPECT_EQ(parse_enum<Framework>(to_string(f)), f);
  EXPECT_EQ(to_string(Framework::kTorchtitan), "torchtitan");
  try {
    parse_enum<Framework>("megatorn");
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("megatron"), std::string::npos) << e.what();
  }
}

TEST(FrameworkSupport, MegatronRules) {
  const FrameworkScene s = llama8b();
  const Framework m = Framework::kMegatron;
  expect(m, s, "dp=2,tp=1,pp=4,mbs=1,zero=1", nullptr);
  expect(m, s, "dp=2,tp=1,pp=4,vpp=2,mbs=1,zero=1", nullptr);                 // interleaved 1F1B
  expect(m, s, "dp=2,tp=1,pp=4,mbs=1,schedule=zb-h1", "schedule=zb-h1");     // not offered
  expect(m, s, "dp=2,tp=1,pp=4,mbs=1,schedule=gpipe", "schedule=gpipe");
  expect(m, s, "dp=2,tp=1,pp=4,vpp=2,mbs=1,schedule=zb-v", "schedule=zb-v");
  expect(m, s, "dp=2,tp=1,pp=4,vpp=2,mbs=1,schedule=dualpipev", "schedule=dualpipev");
  expect(m, s, "dp=2,tp=1,pp=4,mbs=1,schedule=dualpipe", "schedule=dualpipe");
  // ZeRO-2/3 through Megatron-FSDP over all of dp (R21.2); hybrid sharding only for ZeRO-1 (R22).
  expect(m, s, "dp=8,mbs=1,zero=2", nullptr);
  expect(m, s, "dp=4,tp=1,pp=2,mbs=1,zero=3", nullptr);
  expect(m, s, "dp=8,mbs=1,zero=1,op=4", nullptr);
  expect(m, s, "dp=8,mbs=1,zero=3,op=4", "R21.2");
  // The optimizer instances (dp/op) divide the expert data-parallel group too (R22).
  expect(m, tiny_moe(), "dp=16,ep=2,mbs=1,zero=1,op=8", nullptr);                 // instances 2, expert dp 8
  expect(m, tiny_moe(), "dp=16,ep=8,mbs=1,zero=1,op=2", "expert data-parallel");  // instances 8, expert dp 2
  // Any stage layout (R12, R13); one recompute count per model chunk (R19.5).
  expect(m, s, "dp=2,tp=1,pp=4,mbs=1,stage_layers=7/9/10/6", nullptr);
  expect(m, s, "dp=2,tp=1,pp=4,mbs=1,recompute=full,stage_layers=7/9/10/6,recompute_layers=3/3/3/3", nullptr);
  expect(m, s, "dp=2,tp=1,pp=4,mbs=1,recompute=full,stage_layers=2/10/10/10,recompute_layers=2/4/4/4", nullptr);
  expect(m, s, "dp=2,tp=1,pp=4,mbs=1,recompute=full,recompute_layers=3/0/0/0", "R19.5");
  expect(m, s, "dp=2,tp=1,pp=4,vpp=2,mbs=1,recompute=full,recompute_layers=4/4/4/4", nullptr);  // block 2
  expect(m, s, "dp=2,tp=1,pp=4,vpp=2,mbs=1,recompute=full,recompute_layers=3/3/3/3", "R19.5");  // 3 per 2 chunks
  // Gradient sync: overlapped or after the flush; never inside the backward pass.
  expect(m, s, "dp=2,tp=1,pp=4,mbs=1,grad_sync=shifted", nullptr);
  expect(m, s, "dp=2,tp=1,pp=4,mbs=1,grad_sync=in-backward", "R9");
  expect(m, s, "dp=4,tp=2,mbs=1,tp_comm_overlap=true", "R8.1");
  expect(m, s, "dp=4,tp=2,mbs=1,sp=true,tp_comm_overlap=true", nullptr);
  expect(m, s, "dp=2,tp=2,pp=2,vpp=2,mbs=1,overlap_p2p=false", "R10.4");
  // Every FP8 recipe (R20.1).
  FrameworkScene fp8 = s;
  fp8.training.precision = Precision::kFP8;
  for (Fp8Recipe r : {Fp8Recipe::kDelayed, Fp8Recipe::kTensorwise, Fp8Recipe::kBlockwise, Fp8Recipe::kMxfp8}) {
    fp8.training.fp8_recipe = r;
    expect(m, fp8, "dp=8,mbs=1,zero=1", nullptr);
  }
  // MoE: the all-to-all overlap (R17); expert-TP 1 with biases (R15.3).
  FrameworkScene moe = tiny_moe();
  expect(m, moe, "dp=16,ep=8,mbs=1,zero=1,ep_overlap=true", nullptr);
  expect(m, moe, "dp=4,pp=4,vpp=2,ep=4,mbs=1,zero=1,ep_overlap=true", nullptr);
  expect(m, moe, "dp=16,ep=8,mbs=1,zero=1,dispatcher=deepep", nullptr);  // the flex dispatcher (R16.4)
  moe.model.bias = true;
  expect(m, moe, "dp=8,tp=2,ep=8,mbs=1", "R15.3");
  expect(m, moe, "dp=8,tp=2,ep=8,etp=1,mbs=1", nullptr);
}

TEST(FrameworkSupport, TorchtitanRules) {
  const FrameworkScene s = llama8b();
  const Framework t = Framework::kTorchtitan;
  expect(t, s, "dp=8,mbs=1,zero=3", nullptr);                            // FSDP2
  expect(t, s, "dp=8,mbs=1,zero=2", nullptr);                            // reshard_after_forward never
  expect(t, s, "dp=8,mbs=1,zero=3,op=4", nullptr);                       // HSDP
  expect(t, s, "dp=8,mbs=1,zero=0", nullptr);                            // DDP alone
  expect(t, s, "dp=8,mbs=1,zero=1", "T1.8");                             // no ZeRO-1
  expect(t, s, "dp=4,tp=2,mbs=1,sp=true,zero=0", "T1.7");                // DDP with TP
  expect(t, s, "dp=4,tp=2,mbs=1,sp=true,zero=3", nullptr);
  expect(t, s, "dp=4,tp=2,mbs=1,zero=3", "T2.1");                        // TP always shards the sequence
  expect(t, s, "dp=1,tp=8,mbs=1,sp=true", "T5.2");                       // no FSDP: no mixed precision
  expect(t, s, "dp=4,cp=2,mbs=1,zero=0", "T1.7");                        // cp > 1 is FSDP
  expect(t, s, "dp=4,cp=2,mbs=1,zero=3", nullptr);
  expect(t, s, "dp=2,pp=4,mbs=1,zero=3,schedule=zb-h1", "T4.2");
  expect(t, s, "dp=2,pp=4,mbs=1,zero=3,schedule=gpipe", nullptr);
  expect(t, s, "dp=2,pp=4,vpp=2,mbs=1,zero=3,schedule=interleaved-zb", nullptr);  // InterleavedZeroBubble
  expect(t, s, "dp=2,pp=4,vpp=2,mbs=1,zero=3,schedule=zb-v", nullptr);            // ZBVZeroBubble
  expect(t, s, "dp=2,pp=4,vpp=2,mbs=1,zero=3,schedule=dualpipev", nullptr);       // DualPipeV
  expect(t, s, "dp=2,pp=4,mbs=1,zero=3,schedule=dualpipe", "T4.2");               // no two-direction DualPipe
  expect(t, s, "dp=2,pp=4,vpp=2,mbs=1,zero=3,stage_layers=6/10/10/6", nullptr);  // module_fqns_per_model_part
  expect(t, s, "dp=2,pp=4,mbs=1,zero=3,recompute=full", nullptr);
  expect(t, s, "dp=2,pp=4,mbs=1,zero=3,recompute=full,recompute_layers=8/8/8/0", "T9.3");
  expect(t, s, "dp=2,pp=4,mbs=1,zero=3,grad_sync=shifted", "T1.7");
  FrameworkScene fp = s;
  fp.training.precision = Precision::kFP16;
  expect(t, fp, "dp=8,mbs=1,zero=3", "T5.3");
  fp.training.precision = Precision::kFP8;
  fp.training.fp8_recipe = Fp8Recipe::kDelayed;
  expect(t, fp, "dp=8,mbs=1,zero=3", "T7.5");
  for (Fp8Recipe r : {Fp8Recipe::kTensorwise, Fp8Recipe::kBlockwise, Fp8Recipe::kMxfp8}) {
    fp.training.fp8_recipe = r;
    expect(t, fp, "dp=8,mbs=1,zero=3", nullptr);
  }
  // FSDP float8 all-gather: tensorwise scaling over sharded parameters only (T7.5); emitted as
  // enable_fsdp_float8_all_gather without a recipe_name, which the two exclude.
  fp.training.fp8_param_gather = true;
  fp.training.fp8_recipe = Fp8Recipe::kBlockwise;
  expect(t, fp, "dp=8,mbs=1,zero=3", "T7.5");
  fp.training.fp8_recipe = Fp8Recipe::kTensorwise;
  expect(t, fp, "dp=8,mbs=1,zero=2", "T7.5");
  expect(t, fp, "dp=8,mbs=1,zero=3", nullptr);
  const std::string toml =
      launch_settings(t, resolve(parse_parallel_config("dp=8,mbs=1,zero=3"), fp.model, fp.cluster, fp.training),
                      fp.model, fp.training)
          .text;
  EXPECT_NE(toml.find("enable_fsdp_float8_all_gather = true"), std::string::npos) << toml;
  EXPECT_EQ(toml.find("recipe_name"), std::string::npos) << toml;
  const std::string megatron =
      launch_settings(Framework::kMegatron,
                      resolve(parse_parallel_config("dp=8,mbs=1,zero=1"), fp.model, fp.cluster, fp.training),
                      fp.model, fp.training)
          .text;
  EXPECT_NE(megatron.find("--fp8-param-gather"), std::string::npos) << megatron;
  EXPECT_NE(megatron.find("--use-distributed-optimizer"), std::string::npos) << megatron;
  // MoE: etp 1 or tp (T1.4), EP from the shard ranks only (T1.5), no EP overlap outside DualPipeV (T4.6).
  const FrameworkScene moe = tiny_moe();
  expect(t, moe, "dp=8,tp=2,ep=8,mbs=1,sp=true,zero=3", nullptr);
  expect(t, moe, "dp=4,tp=4,ep=4,etp=2,mbs=1,sp=true,zero=3", "T1.4");
  expect(t, moe, "dp=8,tp=2,ep=8,mbs=1,sp=true,zero=3,op=2", "T1.5");
  expect(t, moe, "dp=16,ep=8,mbs=1,zero=3,ep_overlap=true", "T4.6");
  expect(t, moe, "dp=8,pp=2,vpp=2,ep=8,mbs=1,zero=3,schedule=dualpipev,ep_overlap=true", nullptr);  // T4.6
  expect(t, moe, "dp=8,pp=2,vpp=2,ep=8,mbs=1,zero=3,schedule=zb-v,ep_overlap=true", "T4.6");
  expect(t, moe, "dp=8,tp=2,ep=8,etp=1,mbs=1,sp=true,zero=3,dispatcher=deepep", nullptr);
  expect(t, moe, "dp=8,tp=2,ep=8,mbs=1,sp=true,zero=3,dispatcher=deepep", "T8.3");  // etp = tp = 2
}

TEST(FrameworkSupport, DeepSpeedRules) {
  const FrameworkScene s = llama8b();
  const Framework d = Framework::kDeepSpeed;
  expect(d, s, "dp=2,tp=1,pp=4,mbs=1,zero=1,grad_sync=shifted", nullptr);
  expect(d, s, "dp=2,tp=1,pp=4,mbs=1,zero=2,grad_sync=shifted", "D3.2");
  expect(d, s, "dp=2,tp=1,pp=4,mbs=1,zero=1", "D5.3");                    // the engine reduces after the flush
  expect(d, s, "dp=8,mbs=1,zero=3", nullptr);
  expect(d, s, "dp=8,mbs=1,zero=3,op=4", "MiCS_Init");  // Megatron-DeepSpeed builds under zero.Init
  expect(d, s, "dp=8,mbs=1,zero=2,op=4", "mics_shard_size");
  expect(d, s, "dp=4,cp=2,mbs=1,zero=1", "D2.4");
  expect(d, s, "dp=2,pp=4,vpp=2,mbs=1,grad_sync=shifted", "D5.3");
  expect(d, s, "dp=2,pp=4,mbs=1,grad_sync=shifted,stage_layers=7/9/9/7", "D5");
  expect(d, s, "dp=2,pp=4,mbs=1,grad_sync=shifted,recompute=full,recompute_layers=8/8/8/0", "D5.2");
  expect(d, s, "dp=8,mbs=1,recompute=selective", nullptr);  // the model code chooses (D7)
  FrameworkScene fp8 = s;
  fp8.training.precision = Precision::kFP8;
  expect(d, fp8, "dp=8,mbs=1", "D3.4");
  const FrameworkScene moe = tiny_moe();
  expect(d, moe, "dp=16,ep=8,mbs=1,zero=2", nullptr);
  expect(d, moe, "dp=16,ep=8,mbs=1,zero=3", "D3.3");
  expect(d, moe, "dp=8,tp=2,ep=8,mbs=1,sp=true,zero=1", nullptr);
  expect(d, moe, "dp=16,ep=8,mbs=1,zero=1,ep_overlap=true", "ep_overlap");
  expect(d, moe, "dp=16,ep=8,mbs=1,zero=2,dispatcher=deepep", "dispatcher=deepep");
}

// Each refusal is one line per rule; several rules give several lines.
// Megatron-Core's --recompute-modules (R19.4): Megatron runs them, except moe_act/layernorm under the
// delayed FP8 recipe; torchtitan (per-op or per-layer AC, T9.2) and DeepSpeed (Megatron-DeepSpeed's
// core-attention selective recompute, D7) have no module list.
TEST(FrameworkSupport, RecomputeModules) {
  FrameworkScene s = tiny_moe();
  const char* modules = "dp=16,mbs=1,zero=1,recompute=selective,recompute_modules=core_attn+moe_act+layernorm";
  expect(Framework::kMegatron, s, modules, nullptr);
  expect(Framework::kMegatron, s, "dp=16,ep=8,mbs=1,zero=1,recompute=selective,recompute_modules=moe", nullptr);
  expect(Framework::kTorchtitan, s, "dp=16,mbs=1,zero=3,recompute=selective,recompute_modules=moe_act", "T9.2");
  expect(Framework::kTorchtitan, s, "dp=16,mbs=1,zero=3,recompute=selective", nullptr);
  expect(Framework::kDeepSpeed, s, modules, "no --recompute-modules (D7)");
  expect(Framework::kDeepSpeed, s, "dp=16,mbs=1,zero=1,recompute=selective", nullptr);
  s.training.precision = Precision::kFP8;
  s.training.fp8_recipe = Fp8Recipe::kDelayed;
  expect(Framework::kMegatron, s, modules, "cannot recompute moe_act or layernorm (R19.4)");
  s.training.fp8_recipe = Fp8Recipe::kBlockwise;
  expect(Framework::kMegatron, s, modules, nullptr);
}

TEST(FrameworkSupport, EveryReasonIsListed) {
  const FrameworkScene s = llama8b();
  const std::vector<std::string> r =
      reasons(Framework::kDeepSpeed, s, "dp=1,tp=2,pp=2,cp=2,vpp=2,mbs=1,zero=3,grad_sync=in-backward");
  EXPECT_EQ(r.size(), 4u);  // zero=3 with pp, cp, interleaving, grad sync
  const std::vector<FrameworkVerdict> all = framework_verdicts(
      resolve(parse_parallel_config("dp=8,mbs=1,zero=1"), s.model, s.cluster, s.training), s.model, s.training);
  ASSERT_EQ(all.size(), 3u);
  EXPECT_TRUE(all[0].reasons.empty());   // Megatron: the distributed optimizer
  EXPECT_FALSE(all[1].reasons.empty());  // torchtitan: no ZeRO-1
  EXPECT_TRUE(all[2].reasons.empty());   // DeepSpeed: stage 1
}

// --emit X: every plan and baseline is one X can run, and its launch settings say nothing is lost.
void expect_plans_run_on(Framework f, const FrameworkScene& s, plan::PlanOptions options) {
  options.frameworks = {f};
  options.top = 8;
  const plan::PlanResult r = plan::plan(s.model, s.cluster, s.training, options);
  ASSERT_FALSE(r.plans.empty()) << to_string(f);
  EXPECT_GT(r.stats.unsupported, 0) << to_string(f);
  for (const plan::Plan& p : r.plans) {
    const ParallelConfig& c = p.estimate.config;
    // The configuration runs; a model the framework has no flavor of is said apart (model_refusals).
    EXPECT_TRUE(can_run(f, c, s.model, s.training)) << to_string(f) << ": " << to_string(c);
    // torchtitan registers no flavor with tiny-moe's shape (T10): the line saying so is about the
    // model, not a part of the plan that is lost.
    const std::vector<std::string> lost = launch_settings(f, c, s.model, s.training).cannot_express;
    EXPECT_TRUE(f == Framework::kDeepSpeed || std::all_of(lost.begin(), lost.end(), [](const std::string& line) {
                  return line.find("registered flavor (T10)") != std::string::npos;
                }))
        << to_string(c) << (lost.empty() ? "" : ": " + lost.front());
    switch (f) {
      case Framework::kMegatron:
        EXPECT_TRUE(c.schedule == Schedule::kOneFOneB || c.schedule == Schedule::kInterleaved1F1B) << to_string(c);
        if (c.zero >= 2) {  // only through Megatron-FSDP, over all of dp
          EXPECT_EQ(c.op, c.dp) << to_string(c);
          EXPECT_NE(launch_settings(f, c, s.model, s.training).text.find("--use-megatron-fsdp"), std::string::npos);
        }
        break;
      case Framework::kTorchtitan:
        EXPECT_NE(c.zero, 1) << to_string(c);
        EXPECT_NE(c.schedule, Schedule::kZeroBubbleH1) << to_string(c);
        break;
      case Framework::kDeepSpeed:
        EXPECT_FALSE(c.pp > 1 && c.zero >= 2) << to_string(c);
        EXPECT_EQ(c.cp, 1) << to_string(c);
        if (c.pp > 1) {
          EXPECT_EQ(c.schedule, Schedule::kOneFOneB) << to_string(c);
          EXPECT_EQ(c.stage_layers, even_stage_layers(s.model.num_layers, c.pp)) << to_string(c);
        }
        break;
    }
    for (const FrameworkVerdict& v : p.frameworks)
      if (v.framework == f) EXPECT_EQ(v.reasons, model_refusals(f, s.model));
  }
  for (const plan::Baseline* b : {&r.expert, &r.three_axis})
    if (b->estimate) EXPECT_TRUE(can_run(f, b->estimate->config, s.model, s.training)) << b->rule;
}

TEST(FrameworkSupport, EmitRestrictsTheSearch) {
  plan::PlanOptions options;
  options.keep = 4;
  FrameworkScene long_seq = llama8b();
  long_seq.training.seq_len = 16384;  // memory forces recompute and pipelining
  for (Framework f : kFrameworks) {
    expect_plans_run_on(f, llama8b(), options);
    expect_plans_run_on(f, long_seq, options);
    expect_plans_run_on(f, tiny_moe(), options);
  }
}

// For every preset model on three cluster sizes, the default #1 plan runs on at least one
// framework as planned. The sizes start from the nodes the model's training state needs (about 20
// bytes a parameter in three quarters of the GPUs' memory) and double twice.
TEST(FrameworkSupport, EveryPresetsDefaultWinnerRunsOnAFramework) {
  int planned = 0;
  for (const std::string& name : model_preset_names()) {
    const ModelSpec model = load_model(name);
    const double state_bytes = 20.0 * count_parameters(model).total;
    int nodes = 1;
    while (nodes * 8 * 80e9 * 0.75 < state_bytes) nodes *= 2;
    for (int size = 0; size < 3; ++size, nodes *= 2) {
      const ClusterSpec cluster = load_cluster(fmt::format("dgx-h100:{}", nodes));
      TrainingSpec training;
      training.seq_len = std::min(4096, model.max_position_embeddings > 0 ? model.max_position_embeddings : 4096);
      training.global_batch = 2 * static_cast<int>(cluster.num_gpus());
      plan::PlanOptions options;
      options.top = 1;
      options.baselines = false;
      options.advise = false;
      options.threads = 2;
      const plan::PlanResult r = plan::plan(model, cluster, training, options);
      const std::string where = fmt::format("{} on {} GPUs", name, cluster.num_gpus());
      ASSERT_FALSE(r.plans.empty()) << where;
      const std::vector<FrameworkVerdict>& verdicts = r.plans.front().frameworks;
      EXPECT_TRUE(std::any_of(verdicts.begin(), verdicts.end(),
                              [](const FrameworkVerdict& v) { return v.reasons.empty(); }))
          << where << ": " << to_string(r.plans.front().estimate.config);
      ++planned;
    }
  }
  EXPECT_EQ(planned, 3 * static_cast<int>(model_preset_names().size()));
}

// --framework none: the whole space, each plan saying which frameworks run it.
TEST(FrameworkSupport, TheWholeSpaceSaysWhoRunsEachPlan) {
  const FrameworkScene s = llama8b();
  plan::PlanOptions options;
  options.keep = 4;
  options.frameworks.clear();
  const plan::PlanResult r = plan::plan(s.model, s.cluster, s.training, options);
  ASSERT_FALSE(r.plans.empty());
  EXPECT_EQ(r.stats.unsupported, 0);
  EXPECT_TRUE(r.searched_within.empty());
  for (const plan::Plan& p : r.plans) {
    ASSERT_EQ(p.frameworks.size(), 3u);
    for (const FrameworkVerdict& v : p.frameworks)
      EXPECT_EQ(v.reasons, unsupported_reasons(v.framework, p.estimate.config, s.model, s.training));
  }
}

// The default (--framework any): every ranked plan runs on at least one framework, and the search
// skipped what none runs.
TEST(FrameworkSupport, ByDefaultEveryPlanRunsSomewhere) {
  for (const FrameworkScene& s : {llama8b(), tiny_moe()}) {
    plan::PlanOptions options;
    options.keep = 4;
    options.top = 8;
    const plan::PlanResult r = plan::plan(s.model, s.cluster, s.training, options);
    ASSERT_FALSE(r.plans.empty());
    // tiny-moe has no torchtitan flavor (T10): torchtitan is not searched, and says why.
    const bool titan_builds_it = model_refusals(Framework::kTorchtitan, s.model).empty();
    EXPECT_EQ(r.searched_within.size(), titan_builds_it ? 3u : 2u);
    EXPECT_EQ(r.not_searched.size(), titan_builds_it ? 0u : 1u);
    EXPECT_GT(r.stats.unsupported, 0);
    for (const plan::Plan& p : r.plans)
      EXPECT_TRUE(std::any_of(p.frameworks.begin(), p.frameworks.end(),
                              [](const FrameworkVerdict& v) { return v.reasons.empty(); }))
          << to_string(p.estimate.config);
  }
}

// A constraint no framework can meet (ZB-H1 is none of the three's schedule) is said to be that,
// with the best plan of the whole space and why each framework refuses it, not "nothing fits".
TEST(FrameworkSupport, AConstraintNoFrameworkRunsIsSaidToBeThat) {
  const FrameworkScene s = llama8b();
  plan::PlanOptions options;
  options.keep = 4;
  plan::add_constraints(options.space, "schedule=zb-h1,pp=2", plan::ConstraintKind::kFix, "--fix");
  const plan::PlanResult r = plan::plan(s.model, s.cluster, s.training, options);
  EXPECT_TRUE(r.plans.empty());
  ASSERT_TRUE(r.best_unrunnable.has_value());
  EXPECT_EQ(r.best_unrunnable->estimate.config.schedule, Schedule::kZeroBubbleH1);
  for (const FrameworkVerdict& v : r.best_unrunnable->frameworks) EXPECT_FALSE(v.reasons.empty()) << to_string(v.framework);
  const std::string text = format_plan(r, s.model, s.cluster, s.training);
  EXPECT_NE(text.find("NO CONFIGURATION THAT megatron, torchtitan or deepspeed RUNS AS PLANNED FITS"), std::string::npos)
      << text;
  EXPECT_NE(text.find("not megatron: "), std::string::npos) << text;
  EXPECT_EQ(text.find("NO CONFIGURATION FITS."), std::string::npos) << text;
}

// Level 2 within Megatron: per-stage recompute counts become one count per model chunk; within
// DeepSpeed's pipeline: even stages, every layer or none.
TEST(FrameworkSupport, RefinementStaysWithinTheFramework) {
  FrameworkScene s = llama8b();
  s.training.seq_len = 16384;
  plan::PlanOptions options;
  int refined_full = 0;
  for (const char* text : {"dp=2,tp=1,pp=4,mbs=1,recompute=full", "dp=1,tp=2,pp=4,mbs=1,sp=true,recompute=full",
                           "dp=2,tp=2,pp=2,mbs=1,sp=true,recompute=full", "dp=1,tp=1,pp=8,mbs=1,recompute=full",
                           "dp=2,tp=1,pp=4,vpp=2,mbs=1,recompute=full"}) {
    const ParallelConfig p = parse_parallel_config(text);
    plan::Candidate c;
    c.dp = static_cast<std::int16_t>(p.dp), c.tp = static_cast<std::int16_t>(p.tp), c.pp = static_cast<std::int16_t>(p.pp);
    c.vpp = static_cast<std::int16_t>(p.vpp), c.mbs = static_cast<std::int16_t>(p.mbs);
    c.sequence_parallel = p.sequence_parallel, c.recompute = p.recompute;
    c.schedule = p.vpp > 1 ? Schedule::kInterleaved1F1B : Schedule::kOneFOneB;
    for (Framework f : kFrameworks) {
      options.frameworks = {f};
      const std::optional<Estimate> within = refine(s.model, s.cluster, s.training, c, options);
      if (!within) continue;
      EXPECT_TRUE(unsupported_reasons(f, within->config, s.model, s.training).empty())
          << to_string(f) << ": " << to_string(within->config);
      if (within->config.recompute == RecomputeMode::kFull) ++refined_full;
    }
  }
  EXPECT_GT(refined_full, 0);
}

}  // namespace
}  // namespace paratune::launch
