// Emitted launches (launch/launch.h) against the frameworks' schemas (launch/schema_check.h): the
// checker catches what each framework's loader refuses, and every launch paratune emits for a
// matrix of plans passes it, with the flags a run needs.
#include "paratune/launch/launch.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "paratune/launch/schema_check.h"
#include "paratune/spec/io.h"

namespace paratune::launch {
namespace {

bool mentions(const std::vector<std::string>& problems, const std::string& what) {
  for (const std::string& p : problems)
    if (p.find(what) != std::string::npos) return true;
  return false;
}

TEST(LaunchCheck, VersionsParseAndUnknownOnesAreRefused) {
  EXPECT_EQ(parse_framework_target("megatron").version, framework_versions(Framework::kMegatron).front());
  EXPECT_EQ(parse_framework_target("megatron@core_v0.19.0").version, "core_v0.19.0");
  EXPECT_EQ(parse_framework_target("torchtitan").version, "v0.2.2");
  EXPECT_EQ(to_string(parse_framework_target("deepspeed")), "deepspeed@0.16.5");
  try {
    (void)parse_framework_target("megatron@0.7");
    FAIL() << "accepted an unknown version";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("core_v0.19.0"), std::string::npos) << e.what();
  }
  EXPECT_THROW((void)parse_framework_target("nemo"), Error);
}

// What Megatron-LM's argparse and validate_args refuse (R0): unknown and removed flags, values of
// the wrong type or outside the choices, a switch with a value, a repeated flag, and a flag the
// older release does not have.
TEST(LaunchCheck, MegatronFlags) {
  const std::string v = framework_versions(Framework::kMegatron).front();
  EXPECT_TRUE(check_megatron_args({"--tensor-model-parallel-size 2", "--sequence-parallel", "--bf16",
                                   "--recompute-granularity full", "--cp-comm-type p2p a2a"},
                                  v)
                  .empty());
  EXPECT_TRUE(mentions(check_megatron_args({"--virtual-pipeline-model-parallel-size 2"}, v), "not a flag"));
  EXPECT_TRUE(mentions(check_megatron_args({"--tensor-model-parallel-size two"}, v), "not an integer"));
  EXPECT_TRUE(mentions(check_megatron_args({"--recompute-granularity most"}, v), "not one of"));
  EXPECT_TRUE(mentions(check_megatron_args({"--sequence-parallel true"}, v), "a switch"));
  EXPECT_TRUE(mentions(check_megatron_args({"--bf16", "--bf16"}, v), "twice"));
  EXPECT_TRUE(mentions(check_megatron_args({"--fp8-interval 1"}, v), "deprecated"));
  // --batch-invariant-backend is new after core_v0.19.0.
  EXPECT_FALSE(mentions(check_megatron_args({"--batch-invariant-backend"}, v), "not a flag"));
  EXPECT_TRUE(mentions(check_megatron_args({"--batch-invariant-backend"}, "core_v0.19.0"), "not a flag"));
}

TEST(LaunchCheck, TorchtitanKeys) {
  const std::string v = "v0.2.2";
  EXPECT_TRUE(check_torchtitan_toml("[parallelism]\ntensor_parallel_degree = 2\n[training]\nseq_len = 4096\n", v).empty());
  // Removed before v0.2.0 (T0; keys_absent_at_this_tag).
  EXPECT_TRUE(mentions(check_torchtitan_toml("[parallelism]\npipeline_parallel_split_points = [\"layers.4\"]\n", v),
                       "not a key"));
  EXPECT_TRUE(mentions(check_torchtitan_toml("[float8]\nenable_fsdp_float8_all_gather = true\n", v), "not a key"));
  EXPECT_TRUE(mentions(check_torchtitan_toml("[parallelism]\ntensor_parallel_degree = \"2\"\n", v), "an integer"));
  EXPECT_TRUE(mentions(check_torchtitan_toml("[quantize.linear.float8]\nrecipe_name = \"colwise\"\n", v), "not one of"));
}

TEST(LaunchCheck, DeepSpeedKeys) {
  const std::string v = "0.16.5";
  EXPECT_TRUE(check_deepspeed_config(nlohmann::json::parse(R"({"train_batch_size": 64, "zero_optimization": {"stage": 2}})"), v)
                  .empty());
  EXPECT_TRUE(mentions(check_deepspeed_config(nlohmann::json::parse(R"({"train_batchsize": 64})"), v), "not a ds_config key"));
  EXPECT_TRUE(mentions(check_deepspeed_config(nlohmann::json::parse(R"({"zero_optimization": {"stage": 4}})"), v), "not one of"));
  EXPECT_TRUE(mentions(check_deepspeed_config(nlohmann::json::parse(R"({"train_batch_size": "64"})"), v), "an integer"));
}

// The checker against the frameworks' own verdicts (data/frameworks/*-cases.json: argv and
// TOML files run through Megatron-LM's parser and torchtitan's loader): every argv Megatron's
// argparse accepted passes, every one it refused is caught; the same for torchtitan's loader.
nlohmann::json shared_cases(const char* name) {
  std::ifstream in(std::string(PARATUNE_SOURCE_DIR) + "/data/frameworks/" + name);
  if (!in) return nullptr;
  return nlohmann::json::parse(in);
}

TEST(LaunchCheck, AgreesWithMegatronsParser) {
  const nlohmann::json cases = shared_cases("megatron-lm-cases.json");
  ASSERT_FALSE(cases.is_null()) << "data/frameworks/ ships the cases";
  int checked = 0;
  for (const auto& c : cases.at("cases")) {
    // "--flag v1 v2" entries; a value with spaces is quoted.
    std::vector<std::string> args;
    for (const auto& token : c.at("argv")) {
      const std::string t = token.get<std::string>();
      if (t.rfind("--", 0) == 0) args.push_back(t);
      else if (!args.empty()) args.back() += t.find(' ') != std::string::npos ? " \"" + t + "\"" : " " + t;
    }
    const std::vector<std::string> problems = check_megatron_args(args, framework_versions(Framework::kMegatron).front());
    const bool parsed = c.at("outcome") == "accepted" || c.value("rejected_at", "") != "argparse";
    if (parsed) EXPECT_TRUE(problems.empty()) << c.at("id") << ": " << (problems.empty() ? "" : problems.front());
    else EXPECT_FALSE(problems.empty()) << c.at("id") << " was refused by argparse";
    ++checked;
  }
  EXPECT_GE(checked, 100);
}

TEST(LaunchCheck, AgreesWithTorchtitansLoader) {
  const nlohmann::json cases = shared_cases("torchtitan-cases.json");
  ASSERT_FALSE(cases.is_null()) << "data/frameworks/ ships the cases";
  for (const auto& c : cases.at("toml_loader")) {
    const std::vector<std::string> problems = check_torchtitan_toml(c.at("toml").get<std::string>(), "v0.2.2");
    EXPECT_EQ(problems.empty(), c.at("outcome") == "accepted")
        << c.at("id") << ": " << (problems.empty() ? "no problem found" : problems.front());
  }
}

struct Case {
  const char* model;
  const char* cluster;
  int seq_len, global_batch;
  const char* config;
  Precision precision = Precision::kBF16;
};

// Dense, GQA, MoE with etp < tp, MLA, FP8, CP, uneven stages, pp = 1 with accumulation, each ZeRO
// stage: every framework that can run the plan gets a launch that passes its schema (launch_settings
// checks and throws otherwise), and Megatron's script carries what R3 requires.
TEST(Launch, EveryEmittedLaunchPassesItsSchema) {
  const std::string tiny_moe = std::string(PARATUNE_SOURCE_DIR) + "/examples/tiny-moe.yaml";
  const std::vector<Case> cases{
      {"gpt2", "dgx-h100:1", 1024, 64, "dp=8,mbs=2,zero=0"},
      {"llama3-8b", "dgx-h100:1", 8192, 64, "dp=8,mbs=1,zero=1,recompute=selective"},
      {"llama3-8b", "dgx-h100:1", 8192, 64, "dp=8,mbs=1,zero=2"},
      {"llama3-8b", "dgx-h100:1", 8192, 64, "dp=8,mbs=1,zero=3,recompute=full"},
      {"llama3-8b", "dgx-h100:2", 8192, 64, "dp=4,tp=2,cp=2,mbs=1,sp=true,zero=1"},
      {"llama3.1-70b", "dgx-h100:8", 8192, 128, "dp=4,tp=4,pp=4,vpp=5,mbs=1,sp=true,zero=1"},
      {"llama3.1-70b", "dgx-h100:8", 8192, 128, "dp=4,tp=4,pp=4,mbs=1,sp=true,zero=1,stage_layers=18/21/21/20"},
      {"llama3.1-70b", "dgx-h100:8", 8192, 128, "dp=4,tp=4,pp=4,mbs=1,sp=true,zero=1,stage_layers=16/22/24/18"},
      {"llama3.1-70b", "dgx-h100:8", 8192, 128, "dp=4,tp=4,pp=4,mbs=1,sp=true,zero=1", Precision::kFP8},
      {tiny_moe.c_str(), "dgx-h100:2", 2048, 32, "dp=4,tp=4,ep=4,etp=2,mbs=1,sp=true,zero=1"},
      {tiny_moe.c_str(), "dgx-h100:2", 2048, 32, "dp=16,ep=8,mbs=1,zero=1,ep_overlap=true"},
      {tiny_moe.c_str(), "dgx-h100:2", 2048, 32, "dp=16,ep=8,mbs=1,zero=1,recompute=selective,recompute_modules=core_attn+moe_act+layernorm"},
      {"deepseek-v3", "dgx-h100:64", 4096, 1024,
       "dp=64,tp=2,pp=4,ep=64,etp=1,mbs=1,sp=true,zero=1,recompute=selective,recompute_modules=mla_up_proj+moe+shared_experts"},
      {tiny_moe.c_str(), "dgx-h100:2", 2048, 32, "dp=16,ep=8,mbs=1,zero=1,dispatcher=deepep"},
      {tiny_moe.c_str(), "dgx-h100:2", 2048, 32, "dp=16,ep=8,mbs=1,zero=3,dispatcher=deepep"},
      {"deepseek-v3", "dgx-h100:64", 4096, 1024, "dp=64,tp=2,pp=4,ep=64,etp=1,mbs=1,sp=true,zero=1,recompute=full"},
  };
  int megatron_launches = 0;
  for (const Case& c : cases) {
    const ModelSpec model = load_model(c.model);
    const ClusterSpec cluster = load_cluster(c.cluster);
    TrainingSpec t;
    t.seq_len = c.seq_len;
    t.global_batch = c.global_batch;
    t.precision = c.precision;
    const ParallelConfig p = resolve(parse_parallel_config(c.config), model, cluster, t);
    const LaunchTarget target{.nodes = cluster.nodes, .gpus_per_node = cluster.gpus_per_node, .gpu = cluster.gpu.name};
    for (Framework f : kFrameworks) {
      if (!can_run(f, p, model, t)) continue;
      LaunchSettings l;
      ASSERT_NO_THROW(l = launch_settings(f, p, model, t, target)) << to_string(f) << " " << c.model << " " << c.config;
      if (f != Framework::kMegatron) continue;
      ++megatron_launches;
      for (const char* required : {"--num-layers ", "--hidden-size ", "--num-attention-heads ", "--seq-length ",
                                   "--max-position-embeddings ", "--micro-batch-size ", "--global-batch-size ",
                                   "--train-iters ", "--lr ", "--data-path ", "--tokenizer-type ", "torchrun"})
        EXPECT_NE(l.text.find(required), std::string::npos) << required << " missing for " << c.config << "\n" << l.text;
      if (model.kv_heads() != model.num_attention_heads && !model.mla)
        EXPECT_NE(l.text.find("--group-query-attention"), std::string::npos) << c.model;
      if (model.moe) EXPECT_NE(l.text.find("--num-experts "), std::string::npos) << c.model;
      if (model.mla) EXPECT_NE(l.text.find("--multi-latent-attention"), std::string::npos) << c.model;
      if (c.precision == Precision::kFP8) EXPECT_NE(l.text.find("--bf16"), std::string::npos);  // R20.2
    }
  }
  EXPECT_GE(megatron_launches, 10);
}

// examples/tiny-moe.yaml on two DGX H100 (16 GPUs), seq 2048, batch 32: the module-list launches.
struct TinyMoeOnTwoNodes {
  ModelSpec model = load_model(std::string(PARATUNE_SOURCE_DIR) + "/examples/tiny-moe.yaml");
  ClusterSpec cluster = load_cluster("dgx-h100:2");
  TrainingSpec t = [] {
    TrainingSpec training;
    training.seq_len = 2048;
    training.global_batch = 32;
    return training;
  }();
  LaunchTarget target{.nodes = cluster.nodes, .gpus_per_node = cluster.gpus_per_node, .gpu = cluster.gpu.name};
  [[nodiscard]] ParallelConfig resolved(const char* config) const {
    return resolve(parse_parallel_config(config), model, cluster, t);
  }
};

// Selective recompute of chosen modules: Megatron-LM's flags, the names space-separated (R19); the
// default core_attn alone is Megatron's default and not written out.
TEST(Launch, MegatronCarriesTheRecomputeModules) {
  const TinyMoeOnTwoNodes s;
  auto launch = [&](const char* config) {
    return launch_settings(Framework::kMegatron, s.resolved(config), s.model, s.t, s.target).text;
  };
  const std::string chosen = launch("dp=16,mbs=1,zero=1,recompute=selective,recompute_modules=moe_act+layernorm");
  EXPECT_NE(chosen.find("--recompute-granularity selective"), std::string::npos) << chosen;
  EXPECT_NE(chosen.find("--recompute-modules moe_act layernorm"), std::string::npos) << chosen;
  const std::string plain = launch("dp=16,mbs=1,zero=1,recompute=selective");
  EXPECT_NE(plain.find("--recompute-granularity selective"), std::string::npos) << plain;
  EXPECT_EQ(plain.find("--recompute-modules"), std::string::npos) << plain;
  const std::string v = framework_versions(Framework::kMegatron).front();
  EXPECT_TRUE(check_megatron_args({"--recompute-granularity selective", "--recompute-modules moe_act layernorm"}, v).empty());
}

// Activation offload: Megatron-LM's fine-grained offloading flags and Transformer Engine's variable.
TEST(Launch, MegatronCarriesTheActivationOffload) {
  const TinyMoeOnTwoNodes s;
  const ParallelConfig p = s.resolved(
      "dp=16,ep=8,mbs=1,zero=1,recompute=selective,recompute_modules=moe_act+layernorm,"
      "offload_modules=core_attn+attn_proj+expert_fc1");
  ASSERT_TRUE(can_run(Framework::kMegatron, p, s.model, s.t));
  EXPECT_FALSE(can_run(Framework::kTorchtitan, p, s.model, s.t));
  EXPECT_FALSE(can_run(Framework::kDeepSpeed, p, s.model, s.t));
  const std::string text = launch_settings(Framework::kMegatron, p, s.model, s.t, s.target).text;
  EXPECT_NE(text.find("--fine-grained-activation-offloading"), std::string::npos) << text;
  EXPECT_NE(text.find("--offload-modules core_attn attn_proj expert_fc1"), std::string::npos) << text;
  EXPECT_NE(text.find("export NVTE_CPU_OFFLOAD_V1=1"), std::string::npos) << text;
}

// The complete Megatron-LM launch of one plan, as a golden file (tests/golden/). Regenerate with
// PARATUNE_UPDATE_GOLDEN=1 after an intended change, and read the diff.
TEST(Launch, MegatronGoldenScript) {
  const ModelSpec model = load_model("llama3.1-70b");
  const ClusterSpec cluster = load_cluster("dgx-h100:8");
  TrainingSpec t;
  t.seq_len = 8192;
  t.global_batch = 128;
  const ParallelConfig p =
      resolve(parse_parallel_config("dp=4,tp=4,pp=4,vpp=5,mbs=1,sp=true,zero=1,tp_comm_overlap=true"), model, cluster, t);
  const std::string text =
      launch_settings(Framework::kMegatron, p, model, t, {.nodes = 8, .gpus_per_node = 8, .gpu = "h100-sxm"}).text;
  const std::string path = std::string(PARATUNE_SOURCE_DIR) + "/tests/golden/megatron_llama3.1-70b_64xh100.sh";
  if (std::getenv("PARATUNE_UPDATE_GOLDEN")) std::ofstream(path) << text;
  std::ifstream in(path);
  ASSERT_TRUE(in) << path;
  std::stringstream golden;
  golden << in.rdbuf();
  EXPECT_EQ(text, golden.str());
  // And bash parses it.
  const std::string script = ::testing::TempDir() + "megatron_launch.sh";
  std::ofstream(script) << text;
  EXPECT_EQ(std::system(("bash -n " + script).c_str()), 0) << text;
}

}  // namespace
}  // namespace paratune::launch
