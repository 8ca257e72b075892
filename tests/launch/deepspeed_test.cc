// The DeepSpeed launch (launch/launch.h, rules D* of data/frameworks/deepspeed-rules.md): a bash
// script that writes the ds_config with a quoted heredoc and starts Megatron-DeepSpeed's
// pretrain_gpt.py. The JSON passes DeepSpeed's key schema and the batch rule (D1), the parallel
// degrees are arguments of the script, the launcher flags exist (deepspeed.json launcher), and the
// script runs (with stand-ins for the launchers) as far as the launch.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include "../support/test_files.h"
#include "paratune/launch/launch.h"
#include "paratune/launch/schema_check.h"
#include "paratune/spec/io.h"

namespace paratune::launch {
namespace {

using paratune::testing::read_file;

// The text of the script's `<<'JSON'` heredoc.
std::string heredoc_json(const std::string& script) {
  const std::string open = "<<'JSON'\n", close = "\nJSON\n";
  const std::size_t begin = script.find(open);
  if (begin == std::string::npos) return "";
  const std::size_t end = script.find(close, begin + open.size());
  if (end == std::string::npos) return "";
  return script.substr(begin + open.size(), end - begin - open.size());
}

// The value of `--flag V` in the script's ARGS, or -1.
int arg_value(const std::string& script, const std::string& flag) {
  std::smatch m;
  if (!std::regex_search(script, m, std::regex("\n  " + flag + " (\\d+)\n"))) return -1;
  return std::stoi(m[1]);
}

bool has_line(const std::string& script, const std::string& line) {
  return script.find("\n" + line + "\n") != std::string::npos;
}

struct Plan {
  ModelSpec model;
  TrainingSpec training;
  ParallelConfig config;
  LaunchTarget target;
};

Plan make(const std::string& model_name, const std::string& cluster_name, int seq_len, int global_batch,
          const std::string& config, Precision precision = Precision::kBF16) {
  Plan p;
  p.model = load_model(model_name);
  const ClusterSpec cluster = load_cluster(cluster_name);
  p.training.seq_len = seq_len;
  p.training.global_batch = global_batch;
  p.training.precision = precision;
  p.config = resolve(parse_parallel_config(config), p.model, cluster, p.training);
  p.target = {.nodes = cluster.nodes, .gpus_per_node = cluster.gpus_per_node, .gpu = cluster.gpu.name};
  return p;
}

// Plans DeepSpeed can run: each ZeRO stage with one stage, pipelines with ZeRO 0/1, tp with sp, MoE
// with expert tensor parallelism on and off, fp16, SGD, several nodes.
std::vector<Plan> runnable_plans() {
  const std::string tiny_moe = std::string(PARATUNE_SOURCE_DIR) + "/examples/tiny-moe.yaml";
  std::vector<Plan> plans{
      make("gpt2", "dgx-h100:1", 1024, 64, "dp=8,mbs=2,zero=0"),
      make("gpt2", "dgx-h100:1", 1024, 64, "dp=8,mbs=2,zero=1", Precision::kFP16),
      make("llama3-8b", "dgx-h100:1", 8192, 64, "dp=8,mbs=1,zero=1,recompute=selective"),
      make("llama3-8b", "dgx-h100:1", 8192, 64, "dp=8,mbs=1,zero=2"),
      make("llama3-8b", "dgx-h100:1", 8192, 64, "dp=8,mbs=1,zero=3,recompute=full"),
      make("llama3-8b", "dgx-h100:1", 8192, 64, "dp=8,mbs=1,zero=3,op=8"),
      make("llama3-8b", "dgx-h100:2", 8192, 64, "dp=8,tp=2,mbs=1,sp=true,zero=1"),
      make("llama3.1-70b", "dgx-h100:8", 8192, 128, "dp=4,tp=4,pp=4,mbs=1,sp=true,zero=1,recompute=full,grad_sync=shifted"),
      make("llama3.1-70b", "dgx-h100:8", 8192, 128, "dp=8,tp=8,pp=1,mbs=1,sp=true,zero=3,recompute=full"),
      make(tiny_moe, "dgx-h100:2", 2048, 32, "dp=16,ep=8,mbs=1,zero=1"),
      make(tiny_moe, "dgx-h100:2", 2048, 32, "dp=4,tp=4,ep=4,etp=4,mbs=1,sp=true,zero=2"),
      make("mixtral-8x7b", "dgx-h100:4", 4096, 64, "dp=8,tp=4,ep=8,etp=1,mbs=1,sp=true,zero=1,recompute=full"),
  };
  Plan sgd = make("gpt2", "dgx-h100:1", 1024, 64, "dp=8,mbs=2,zero=2");
  sgd.training.optimizer = Optimizer::kSGD;
  plans.push_back(sgd);
  return plans;
}

// Every launch: the heredoc'd JSON passes the key schema, the batch rule holds with W = dp (D1, D2),
// and the script's arguments carry the plan's layout and the model's shape.
TEST(LaunchDeepSpeed, ConfigPassesTheSchemaAndTheBatchRule) {
  for (const Plan& p : runnable_plans()) {
    const ParallelConfig& c = p.config;
    const std::string what = p.model.name + " " + to_string(c);
    ASSERT_TRUE(can_run(Framework::kDeepSpeed, c, p.model, p.training)) << what;
    LaunchSettings l;
    ASSERT_NO_THROW(l = launch_settings(Framework::kDeepSpeed, c, p.model, p.training, p.target)) << what;
    const std::string json = heredoc_json(l.text);
    ASSERT_FALSE(json.empty()) << l.text;
    nlohmann::json j;
    ASSERT_NO_THROW(j = nlohmann::json::parse(json)) << json;
    EXPECT_TRUE(check_deepspeed_config(j, "0.16.5").empty()) << what;
    // D1: train = micro x accumulation x dp, all three given and > 0.
    const int train = j.at("train_batch_size"), micro = j.at("train_micro_batch_size_per_gpu"),
              gas = j.at("gradient_accumulation_steps");
    EXPECT_GT(micro, 0);
    EXPECT_GT(gas, 0);
    EXPECT_EQ(train, micro * gas * c.dp) << what;
    EXPECT_EQ(train, p.training.global_batch);
    EXPECT_EQ(micro, c.mbs);
    EXPECT_EQ(j.at("zero_optimization").at("stage"), c.zero);
    EXPECT_FALSE(c.pp > 1 && c.zero >= 2) << what;  // D3.2
    EXPECT_EQ(j.contains("fp16"), p.training.precision == Precision::kFP16) << what;  // D3.4
    EXPECT_NE(j.contains("bf16"), j.contains("fp16")) << what;
    EXPECT_FALSE(j.contains("optimizer") && j["optimizer"].contains("params") &&
                 j["optimizer"]["params"].contains("max_grad_norm"));  // D3.10
    EXPECT_EQ(j.at("gradient_clipping"), 1.0);
    EXPECT_EQ(j.at("wall_clock_breakdown"), false);
    EXPECT_EQ(j.value("zero_allow_untested_optimizer", false), p.training.optimizer == Optimizer::kSGD && c.zero > 0);

    // The layout and batch for Megatron-DeepSpeed, agreeing with the config.
    const std::string& s = l.text;
    EXPECT_EQ(arg_value(s, "--tensor-model-parallel-size"), c.tp) << s;
    EXPECT_EQ(arg_value(s, "--pipeline-model-parallel-size"), c.pp) << s;
    EXPECT_EQ(has_line(s, "  --no-pipeline-parallel"), c.pp == 1) << s;  // mpu, W = dp (D2.4)
    EXPECT_EQ(arg_value(s, "--zero-stage"), c.zero) << s;
    EXPECT_EQ(arg_value(s, "--micro-batch-size"), micro) << s;
    EXPECT_EQ(arg_value(s, "--global-batch-size"), train) << s;
    EXPECT_EQ(has_line(s, "  --sequence-parallel"), c.sequence_parallel && c.tp > 1) << s;
    EXPECT_EQ(arg_value(s, "--num-layers"), p.model.num_layers) << s;
    EXPECT_EQ(arg_value(s, "--hidden-size"), p.model.hidden_size) << s;
    EXPECT_EQ(arg_value(s, "--num-attention-heads"), p.model.num_attention_heads) << s;
    EXPECT_EQ(arg_value(s, "--seq-length"), p.training.seq_len) << s;
    if (p.model.kv_heads() != p.model.num_attention_heads)
      EXPECT_EQ(arg_value(s, "--num-key-value-heads"), p.model.kv_heads()) << s;
    EXPECT_EQ(has_line(s, "  --bf16"), p.training.precision != Precision::kFP16) << s;
    if (p.model.moe) {
      EXPECT_EQ(arg_value(s, "--num-experts"), p.model.moe->num_experts) << s;
      EXPECT_EQ(arg_value(s, "--moe-expert-parallel-size"), c.ep) << s;
      EXPECT_EQ(c.dp % c.ep, 0);  // D6.3
      EXPECT_EQ(has_line(s, "  --enable-expert-tensor-parallelism"), c.tp > 1 && c.expert_tp() == c.tp) << s;
    }
    if (c.recompute == RecomputeMode::kFull) {
      EXPECT_TRUE(j.contains("activation_checkpointing")) << what;
      EXPECT_TRUE(has_line(s, "  --recompute-granularity full")) << s;
    }
    for (const char* required : {"--data-path \"${DATA_PATH}\"", "--tokenizer-model \"${TOKENIZER}\"", "--train-iters ",
                                 "--lr ", "--deepspeed\n", "--deepspeed_config \"$DS_CONFIG\"",
                                 "\"$MEGATRON_DEEPSPEED/pretrain_gpt.py\""})
      EXPECT_NE(s.find(required), std::string::npos) << required << " missing for " << what << "\n" << s;
    // The degrees are arguments now, not something DeepSpeed cannot express.
    for (const std::string& line : l.cannot_express)
      EXPECT_EQ(line.find("parallel degrees are not DeepSpeed config keys"), std::string::npos) << line;
  }
}

// A plan DeepSpeed runs as planned has nothing left over.
TEST(LaunchDeepSpeed, NothingLostForAPlainPlan) {
  const Plan p = make("llama3-8b", "dgx-h100:1", 8192, 64, "dp=8,mbs=1,zero=2");
  EXPECT_TRUE(launch_settings(Framework::kDeepSpeed, p.config, p.model, p.training, p.target).cannot_express.empty());
  // bf16 gradients without ZeRO or a pipeline: DeepSpeed refuses that accumulation dtype (D4.3).
  Plan bf16_grads = make("gpt2", "dgx-h100:1", 1024, 64, "dp=8,mbs=2,zero=0");
  bf16_grads.training.fp32_grad_accumulation = false;
  const LaunchSettings g =
      launch_settings(Framework::kDeepSpeed, bf16_grads.config, bf16_grads.model, bf16_grads.training, bf16_grads.target);
  ASSERT_EQ(g.cannot_express.size(), 1u);
  EXPECT_NE(g.cannot_express[0].find("(D4.3)"), std::string::npos) << g.cannot_express[0];
  // What Megatron-DeepSpeed cannot build is named: MLA, shared experts, leading dense layers.
  const Plan v3 = make("deepseek-v3", "dgx-h100:64", 4096, 1024, "dp=64,tp=2,pp=4,ep=64,etp=1,mbs=1,sp=true,zero=1,"
                                                                 "recompute=full,grad_sync=shifted");
  ASSERT_TRUE(can_run(Framework::kDeepSpeed, v3.config, v3.model, v3.training));
  const LaunchSettings l = launch_settings(Framework::kDeepSpeed, v3.config, v3.model, v3.training, v3.target);
  for (const char* what : {"multi-latent attention", "shared expert", "first_dense_layers=3"})
    EXPECT_TRUE(std::any_of(l.cannot_express.begin(), l.cannot_express.end(),
                            [&](const std::string& line) { return line.find(what) != std::string::npos; }))
        << what;
}

// What Megatron-DeepSpeed does with the settings, not only what the schema accepts
// (microsoft/Megatron-DeepSpeed@f4157bea): --deepspeed-activation-checkpointing checkpoints every
// layer whatever the method, so a block of N layers goes through Megatron's own checkpointing; MoE
// with pp > 1 and tp > 1 needs the pipeline's partitioned send off, which DeepSpeed's defaults have on.
TEST(LaunchDeepSpeed, WhatMegatronDeepSpeedRunsIsWhatWasPlanned) {
  Plan block = make("llama3-8b", "dgx-h100:1", 8192, 64, "dp=8,mbs=1,zero=1,recompute=full");
  block.config.stage_recompute_layers = {20};
  ASSERT_TRUE(can_run(Framework::kDeepSpeed, block.config, block.model, block.training));
  const std::string b = launch_settings(Framework::kDeepSpeed, block.config, block.model, block.training, block.target).text;
  EXPECT_NE(b.find("--recompute-method block"), std::string::npos) << b;
  EXPECT_NE(b.find("--recompute-num-layers 20"), std::string::npos) << b;
  EXPECT_EQ(b.find("--deepspeed-activation-checkpointing"), std::string::npos) << b;
  const Plan all = make("llama3-8b", "dgx-h100:1", 8192, 64, "dp=8,mbs=1,zero=1,recompute=full");
  const std::string a = launch_settings(Framework::kDeepSpeed, all.config, all.model, all.training, all.target).text;
  EXPECT_NE(a.find("--recompute-method uniform"), std::string::npos) << a;
  EXPECT_NE(a.find("--deepspeed-activation-checkpointing"), std::string::npos) << a;

  const Plan moe = make("mixtral-8x7b", "dgx-h100:4", 4096, 64, "dp=4,tp=2,pp=4,ep=4,etp=1,mbs=1,sp=true,zero=1,"
                                                                "grad_sync=shifted");
  ASSERT_TRUE(can_run(Framework::kDeepSpeed, moe.config, moe.model, moe.training));
  const nlohmann::json j = nlohmann::json::parse(
      heredoc_json(launch_settings(Framework::kDeepSpeed, moe.config, moe.model, moe.training, moe.target).text));
  EXPECT_EQ(j.at("pipeline").at("pipe_partitioned"), false);
  EXPECT_EQ(j.at("pipeline").at("grad_partitioned"), false);
  EXPECT_TRUE(check_deepspeed_config(j, "0.16.5").empty());
  const Plan dense = make("llama3-8b", "dgx-h100:4", 8192, 64, "dp=4,tp=2,pp=4,mbs=1,sp=true,zero=1,grad_sync=shifted");
  EXPECT_FALSE(nlohmann::json::parse(heredoc_json(launch_settings(Framework::kDeepSpeed, dense.config, dense.model,
                                                                  dense.training, dense.target)
                                                      .text))
                   .contains("pipeline"));
}

// Every flag the script gives the deepspeed launcher is one of its flags at the version (deepspeed.json
// launcher, compiled into data/frameworks/deepspeed.schema.json).
TEST(LaunchDeepSpeed, LauncherFlagsExist) {
  const auto schema = nlohmann::json::parse(read_file(std::string(PARATUNE_SOURCE_DIR) + "/data/frameworks/deepspeed.schema.json"));
  std::set<std::string> known;
  for (const auto& f : schema.at("launcher_flags")) {
    const std::string spelling = f.get<std::string>();
    const std::size_t slash = spelling.find('/');
    known.insert(slash == std::string::npos ? spelling : spelling.substr(slash + 1));
  }
  int lines = 0;
  for (const int nodes : {1, 2}) {  // one node; several with a hostfile
    const Plan p = make("llama3-8b", fmt::format("dgx-h100:{}", nodes), 8192, 64,
                        fmt::format("dp={},tp=2,mbs=1,sp=true,zero=1", 4 * nodes));
    const std::string s = launch_settings(Framework::kDeepSpeed, p.config, p.model, p.training, p.target).text;
    const std::regex launcher("LAUNCH=\\(deepspeed ([^)]*)\\)");
    for (auto it = std::sregex_iterator(s.begin(), s.end(), launcher); it != std::sregex_iterator(); ++it) {
      ++lines;
      std::istringstream words((*it)[1].str());
      for (std::string w; words >> w;)
        if (w.rfind("--", 0) == 0) EXPECT_TRUE(known.contains(w)) << w << " is not a flag of the deepspeed launcher";
    }
  }
  EXPECT_EQ(lines, 2);
}

// The script runs as far as the launch, with stand-ins for deepspeed, srun, torchrun and scontrol:
// it refuses to start without the data and tokenizer, writes exactly the heredoc'd config, and
// starts the launcher each way.
TEST(LaunchDeepSpeed, ScriptRunsWithStandInLaunchers) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::path(::testing::TempDir()) / "paratune_ds_launch";
  fs::remove_all(dir);
  fs::create_directories(dir / "bin");
  for (const char* tool : {"deepspeed", "srun"}) {
    std::ofstream(dir / "bin" / tool) << "#!/bin/bash\necho \"" << tool << " $*\" > \"$RECORD\"\n";
    fs::permissions(dir / "bin" / tool, fs::perms::owner_all);
  }
  std::ofstream(dir / "bin" / "scontrol") << "#!/bin/bash\necho node-a\necho node-b\n";
  fs::permissions(dir / "bin" / "scontrol", fs::perms::owner_all);

  const Plan p = make("llama3-8b", "dgx-h100:2", 8192, 64, "dp=8,tp=2,mbs=1,sp=true,zero=1");
  const std::string text = launch_settings(Framework::kDeepSpeed, p.config, p.model, p.training, p.target).text;
  const fs::path script = dir / "launch.sh";
  std::ofstream(script) << text;
  const std::string env = "cd " + dir.string() + " && PATH=" + (dir / "bin").string() + ":$PATH RECORD=" +
                          (dir / "record").string() + " MEGATRON_DEEPSPEED=/opt/mds ";
  auto run = [&](const std::string& vars) {
    fs::remove(dir / "record");
    fs::remove(dir / "ds_config.json");
    return std::system((env + vars + " bash " + script.string() + " > " + (dir / "out").string() + " 2>&1").c_str());
  };

  // No DATA_PATH: refused before anything is written.
  EXPECT_NE(run("TOKENIZER=t"), 0);
  EXPECT_NE(read_file((dir / "out").string()).find("set DATA_PATH"), std::string::npos) << read_file((dir / "out").string());
  EXPECT_FALSE(fs::exists(dir / "ds_config.json"));

  // Under Slurm: srun + torchrun on every node, the config written as emitted.
  ASSERT_EQ(run("DATA_PATH=/d/text TOKENIZER=t SLURM_JOB_NODELIST=x SLURM_JOB_ID=7"), 0) << read_file((dir / "out").string());
  EXPECT_EQ(nlohmann::json::parse(read_file((dir / "ds_config.json").string())), nlohmann::json::parse(heredoc_json(text)));
  std::string record = read_file((dir / "record").string());
  EXPECT_EQ(record.rfind("srun --ntasks-per-node=1 torchrun --nnodes 2 --nproc-per-node 8 ", 0), 0) << record;
  EXPECT_NE(record.find("--rdzv-endpoint node-a:29500"), std::string::npos) << record;
  EXPECT_NE(record.find(" /opt/mds/pretrain_gpt.py --tensor-model-parallel-size 2 "), std::string::npos) << record;
  EXPECT_NE(record.find(" --data-path /d/text "), std::string::npos) << record;
  EXPECT_NE(record.find(" --deepspeed_config " + (dir / "ds_config.json").string()), std::string::npos) << record;

  // With a hostfile: the deepspeed launcher over ssh, the variable for tp > 1 passed on to the other
  // nodes through .deepspeed_env, once however often the script runs.
  ASSERT_EQ(run("DATA_PATH=/d/text TOKENIZER=t HOSTFILE=/etc/hosts.ds"), 0) << read_file((dir / "out").string());
  ASSERT_EQ(run("DATA_PATH=/d/text TOKENIZER=t HOSTFILE=/etc/hosts.ds"), 0) << read_file((dir / "out").string());
  record = read_file((dir / "record").string());
  EXPECT_EQ(record.rfind("deepspeed --hostfile /etc/hosts.ds --num_nodes 2 --num_gpus 8 ", 0), 0) << record;
  EXPECT_EQ(read_file((dir / ".deepspeed_env").string()), "CUDA_DEVICE_MAX_CONNECTIONS=1\n");

  // One node: the deepspeed launcher on it.
  const Plan one = make("gpt2", "dgx-h100:1", 1024, 64, "dp=8,mbs=2,zero=0");
  std::ofstream(script) << launch_settings(Framework::kDeepSpeed, one.config, one.model, one.training, one.target).text;
  ASSERT_EQ(run("DATA_PATH=/d/text TOKENIZER=gpt2 DS_CONFIG=" + (dir / "gpt2.json").string()), 0)
      << read_file((dir / "out").string());
  record = read_file((dir / "record").string());
  EXPECT_EQ(record.rfind("deepspeed --num_nodes 1 --num_gpus 8 --master_port 29500 /opt/mds/pretrain_gpt.py ", 0), 0)
      << record;
  EXPECT_TRUE(fs::exists(dir / "gpt2.json"));
}

// The complete launch of one plan, as a golden file (tests/golden/). Regenerate with
// PARATUNE_UPDATE_GOLDEN=1 after an intended change, and read the diff.
TEST(LaunchDeepSpeed, GoldenScript) {
  const Plan p = make("llama3-8b", "dgx-h100:1", 8192, 64, "dp=4,tp=2,mbs=1,sp=true,zero=1,recompute=full");
  const LaunchSettings l = launch_settings(Framework::kDeepSpeed, p.config, p.model, p.training, p.target);
  EXPECT_TRUE(l.cannot_express.empty());
  const std::string path = std::string(PARATUNE_SOURCE_DIR) + "/tests/golden/deepspeed_llama3-8b_8xh100.sh";
  if (std::getenv("PARATUNE_UPDATE_GOLDEN")) std::ofstream(path) << l.text;
  std::ifstream in(path);
  ASSERT_TRUE(in) << path;
  std::stringstream golden;
  golden << in.rdbuf();
  EXPECT_EQ(l.text, golden.str());
  // bash parses it.
  const std::string script = ::testing::TempDir() + "deepspeed_launch.sh";
  std::ofstream(script) << l.text;
  EXPECT_EQ(std::system(("bash -n " + script).c_str()), 0) << l.text;
}

}  // namespace
}  // namespace paratune::launch
