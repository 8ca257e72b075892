// The torchtitan launch (launch/launch.h, src/launch/torchtitan.cc): a bash script that
// writes a complete TOML job file for torchtitan v0.2.2 and runs torchtitan.train under torchrun or
// srun + torchrun. The job file passes the key schema, names a registered model flavor with the
// model's shape (or says that none has it), and the script runs with only the placeholders set.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <numeric>
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

// The job file in the script: the text of its quoted heredoc, `<<'TOML'` to the line `TOML`.
std::string job_file(const std::string& script) {
  const std::string open = "<<'TOML'\n";
  const std::size_t begin = script.find(open);
  if (begin == std::string::npos) return {};
  const std::size_t start = begin + open.size();
  const std::size_t end = script.find("\nTOML\n", start - 1);
  return end == std::string::npos ? std::string() : script.substr(start, end + 1 - start);
}

// table -> key -> value (as written) of a job file, and the table headers in order.
struct Toml {
  std::map<std::string, std::map<std::string, std::string>> tables;
  std::vector<std::string> headers;
  [[nodiscard]] std::string at(const std::string& table, const std::string& key) const {
    const auto t = tables.find(table);
    if (t == tables.end()) return {};
    const auto k = t->second.find(key);
    return k == t->second.end() ? std::string() : k->second;
  }
};

Toml parse(const std::string& toml) {
  Toml out;
  std::istringstream in(toml);
  std::string line, table;
  while (std::getline(in, line)) {
    if (line.empty() || line.front() == '#') continue;
    if (line.front() == '[') {
      table = line.substr(1, line.find(']') - 1);
      out.headers.push_back(table);
      continue;
    }
    const std::size_t eq = line.find(" = ");
    if (eq != std::string::npos) out.tables[table][line.substr(0, eq)] = line.substr(eq + 3);
  }
  return out;
}

struct Scene {
  ModelSpec model;
  ClusterSpec cluster;
  TrainingSpec training;
  ParallelConfig plan;
};

Scene scene(const ModelSpec& model, const char* cluster, int seq_len, int global_batch, const char* config) {
  Scene s{model, load_cluster(cluster), {}, {}};
  s.training.seq_len = seq_len;
  s.training.global_batch = global_batch;
  s.plan = resolve(parse_parallel_config(config), s.model, s.cluster, s.training);
  return s;
}

LaunchSettings launch(const Scene& s) {
  const LaunchTarget target{
      .nodes = s.cluster.nodes, .gpus_per_node = s.cluster.gpus_per_node, .gpu = s.cluster.gpu.name};
  return launch_settings(Framework::kTorchtitan, s.plan, s.model, s.training, target);
}

bool torchtitan_mentions(const std::vector<std::string>& lines, const std::string& what) {
  for (const std::string& l : lines)
    if (l.find(what) != std::string::npos) return true;
  return false;
}

// The complete launch of one plan, as a golden file (tests/golden/). Regenerate with
// PARATUNE_UPDATE_GOLDEN=1 after an intended change, and read the diff.
TEST(LaunchTorchtitan, GoldenScript) {
  const Scene s = scene(load_model("llama3.1-70b"), "dgx-h100:8", 8192, 128,
                        "dp=4,tp=4,pp=4,vpp=5,mbs=1,sp=true,zero=3,tp_comm_overlap=true,recompute=selective");
  ASSERT_TRUE(can_run(Framework::kTorchtitan, s.plan, s.model, s.training))
      << unsupported_reasons(Framework::kTorchtitan, s.plan, s.model, s.training).front();
  const LaunchSettings l = launch(s);
  EXPECT_TRUE(l.cannot_express.empty()) << l.cannot_express.front();
  const std::string path = std::string(PARATUNE_SOURCE_DIR) + "/tests/golden/torchtitan_llama3.1-70b_64xh100.sh";
  if (std::getenv("PARATUNE_UPDATE_GOLDEN")) std::ofstream(path) << l.text;
  EXPECT_EQ(l.text, read_file(path));
  // And bash parses it.
  const std::string script = ::testing::TempDir() + "torchtitan_launch.sh";
  std::ofstream(script) << l.text;
  EXPECT_EQ(std::system(("bash -n " + script).c_str()), 0) << l.text;
}

// Every launch torchtitan can run, over a matrix of plans: the job file in the script passes the
// v0.2.2 key schema (T0), names each table once (TOML refuses a table defined twice) and has what
// a run needs ("Minimal complete launch").
TEST(LaunchTorchtitan, EveryJobFileIsCompleteAndPassesTheSchema) {
  const ModelSpec tiny_moe = load_model(std::string(PARATUNE_SOURCE_DIR) + "/examples/tiny-moe.yaml");
  struct Case {
    ModelSpec model;
    const char* cluster;
    int seq_len, global_batch;
    const char* config;
    Precision precision = Precision::kBF16;
    Fp8Recipe recipe = Fp8Recipe::kTensorwise;
  };
  const std::vector<Case> cases{
      {load_model("gpt2"), "dgx-h100:1", 1024, 64, "dp=8,mbs=2,zero=0"},
      {load_model("llama3-8b"), "dgx-h100:1", 8192, 64, "dp=8,mbs=1,zero=2"},
      {load_model("llama3-8b"), "dgx-h100:1", 8192, 64, "dp=8,mbs=1,zero=3,recompute=full"},
      {load_model("llama3-8b"), "dgx-h100:2", 8192, 64, "dp=4,tp=2,cp=2,mbs=1,sp=true,zero=3"},
      {load_model("llama3-8b"), "dgx-h100:1", 8192, 64, "dp=8,mbs=1,zero=3", Precision::kFP8},
      {load_model("llama3.1-70b"), "dgx-h100:8", 8192, 128,
       "dp=4,tp=4,pp=4,mbs=1,sp=true,zero=3,stage_layers=18/21/21/20"},
      {load_model("llama3.1-70b"), "dgx-h100:8", 8192, 128, "dp=4,tp=4,pp=4,mbs=1,sp=true,zero=2,schedule=gpipe"},
      {tiny_moe, "dgx-h100:2", 2048, 32, "dp=4,tp=4,ep=4,etp=4,mbs=1,sp=true,zero=3"},
      {tiny_moe, "dgx-h100:2", 2048, 32, "dp=16,ep=8,mbs=1,zero=3", Precision::kFP8, Fp8Recipe::kBlockwise},
      {load_model("deepseek-v3"), "dgx-h100:64", 4096, 1024,
       "dp=64,tp=2,pp=4,ep=64,etp=1,mbs=1,sp=true,zero=3,recompute=full"},
  };
  int launches = 0;
  for (const Case& c : cases) {
    Scene s = scene(c.model, c.cluster, c.seq_len, c.global_batch, c.config);
    s.training.precision = c.precision;
    s.training.fp8_recipe = c.recipe;
    ASSERT_TRUE(can_run(Framework::kTorchtitan, s.plan, s.model, s.training))
        << c.config << ": " << unsupported_reasons(Framework::kTorchtitan, s.plan, s.model, s.training).front();
    LaunchSettings l;
    ASSERT_NO_THROW(l = launch(s)) << c.model.name << " " << c.config;
    ++launches;
    const std::string toml = job_file(l.text);
    ASSERT_FALSE(toml.empty()) << l.text;
    EXPECT_TRUE(check_torchtitan_toml(toml, "v0.2.2").empty()) << check_torchtitan_toml(toml, "v0.2.2").front();
    const Toml t = parse(toml);
    EXPECT_EQ(std::set<std::string>(t.headers.begin(), t.headers.end()).size(), t.headers.size()) << toml;
    for (const auto& [table, key] : std::vector<std::pair<std::string, std::string>>{
             {"job", "dump_folder"}, {"job", "description"}, {"model", "name"}, {"model", "flavor"},
             {"optimizer", "name"}, {"optimizer", "lr"}, {"lr_scheduler", "warmup_steps"}, {"training", "dataset"},
             {"training", "local_batch_size"}, {"training", "global_batch_size"}, {"training", "seq_len"},
             {"training", "steps"}, {"parallelism", "data_parallel_shard_degree"},
             {"parallelism", "tensor_parallel_degree"}, {"parallelism", "pipeline_parallel_degree"},
             {"parallelism", "context_parallel_degree"}, {"activation_checkpoint", "mode"}, {"compile", "enable"},
             {"checkpoint", "enable"}})
      EXPECT_FALSE(t.at(table, key).empty()) << "[" << table << "] " << key << " missing, " << c.config << "\n" << toml;
    EXPECT_EQ(t.at("training", "seq_len"), std::to_string(c.seq_len));
    EXPECT_EQ(t.at("training", "global_batch_size"), std::to_string(c.global_batch));
    EXPECT_NE(t.at("job", "description").find("paratune"), std::string::npos);
    if (c.precision == Precision::kFP8)
      EXPECT_NE(t.at("model", "converters").find("quantize.linear.float8"), std::string::npos) << toml;
    // The launcher and the placeholders (T0.1; "Minimal complete launch").
    for (const char* required : {"set -euo pipefail", "${TORCHTITAN:?", "${TOKENIZER:?", "${DATASET:?",
                                 "-m torchtitan.train --job.config_file \"$CONFIG\"",
                                 "--model.hf_assets_path \"$TOKENIZER\"", "--training.dataset_path \"$DATASET\"",
                                 "torchrun --standalone", "--rdzv-backend c10d"})
      EXPECT_NE(l.text.find(required), std::string::npos) << required << " missing:\n" << l.text;
  }
  EXPECT_EQ(launches, static_cast<int>(cases.size()));
}

// The script runs: with the placeholders set it writes the job file it carries, byte for byte, and
// starts torchrun (one node) or srun + torchrun with a c10d rendezvous on the first node (several);
// without them it stops and names what to set. torchrun, srun and scontrol are stand-ins here.
TEST(LaunchTorchtitan, ScriptWritesItsJobFileAndStartsTorchtitan) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::path(::testing::TempDir()) / "torchtitan_launch_run";
  fs::remove_all(dir);
  fs::create_directories(dir / "bin");
  const std::string record = "#!/bin/bash\n{ echo \"$(basename \"$0\")\"; printf '%s\\n' \"$@\"; } > \"$ARGS_OUT\"\n";
  for (const char* tool : {"torchrun", "srun"}) {
    std::ofstream(dir / "bin" / tool) << record;
    fs::permissions(dir / "bin" / tool, fs::perms::owner_all);
  }
  std::ofstream(dir / "bin" / "scontrol") << "#!/bin/bash\necho node7\necho node8\n";
  fs::permissions(dir / "bin" / "scontrol", fs::perms::owner_all);
  const std::string env = "env PATH=\"" + (dir / "bin").string() + ":$PATH\" ARGS_OUT=\"" + (dir / "args").string() +
                          "\" CONFIG=\"" + (dir / "job.toml").string() +
                          "\" TORCHTITAN=/opt/torchtitan TOKENIZER=/data/tok DATASET=/data/c4 "
                          "SLURM_JOB_NODELIST=node[7-8] SLURM_JOB_ID=42 ";
  auto lines = [](const std::string& text) {
    std::vector<std::string> out;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) out.push_back(line);
    return out;
  };

  // One node.
  const Scene one = scene(load_model("llama3-8b"), "dgx-h100:1", 8192, 64, "dp=8,mbs=1,zero=3");
  const LaunchSettings a = launch(one);
  std::ofstream(dir / "one.sh") << a.text;
  ASSERT_EQ(std::system((env + "bash " + (dir / "one.sh").string() + " --training.steps 10").c_str()), 0) << a.text;
  EXPECT_EQ(read_file((dir / "job.toml").string()), job_file(a.text));
  const std::vector<std::string> expected_one{"torchrun", "--standalone", "--nproc-per-node", "8", "-m",
                                              "torchtitan.train", "--job.config_file", (dir / "job.toml").string(),
                                              "--model.hf_assets_path", "/data/tok", "--training.dataset_path",
                                              "/data/c4", "--training.steps", "10"};
  EXPECT_EQ(lines(read_file((dir / "args").string())), expected_one);

  // Several nodes: srun starts one torchrun per node, the rendezvous on the allocation's first node.
  const Scene many = scene(load_model("llama3.1-70b"), "dgx-h100:8", 8192, 128, "dp=4,tp=4,pp=4,mbs=1,sp=true,zero=3");
  const LaunchSettings b = launch(many);
  std::ofstream(dir / "many.sh") << b.text;
  ASSERT_EQ(std::system((env + "bash " + (dir / "many.sh").string()).c_str()), 0) << b.text;
  EXPECT_EQ(read_file((dir / "job.toml").string()), job_file(b.text));
  const std::vector<std::string> expected_many{
      "srun", "--ntasks-per-node=1", "torchrun", "--nnodes", "8", "--nproc-per-node", "8", "--rdzv-backend", "c10d",
      "--rdzv-endpoint", "node7:29500", "--rdzv-id", "42", "-m", "torchtitan.train", "--job.config_file",
      (dir / "job.toml").string(), "--model.hf_assets_path", "/data/tok", "--training.dataset_path", "/data/c4"};
  EXPECT_EQ(lines(read_file((dir / "args").string())), expected_many);

  // A placeholder left unset: the script stops before writing or starting anything, naming it.
  fs::remove(dir / "args");
  const std::string unset = "env -u TOKENIZER PATH=\"" + (dir / "bin").string() + ":$PATH\" ARGS_OUT=\"" +
                            (dir / "args").string() + "\" TORCHTITAN=/opt/torchtitan DATASET=/data/c4 bash " +
                            (dir / "one.sh").string() + " 2> " + (dir / "err").string();
  EXPECT_NE(std::system(unset.c_str()), 0);
  EXPECT_NE(read_file((dir / "err").string()).find("set TOKENIZER"), std::string::npos) << read_file((dir / "err").string());
  EXPECT_FALSE(fs::exists(dir / "args"));
}

// The model: a registered flavor with the model spec's shape (T10), the plain (sdpa) one among
// same-shape variants; a shape no flavor has keeps the nearest family and says what to register.
// module_fqns_per_model_part names every decoder layer once, in order, over pp x vpp parts, the
// embedding first and the output last: uneven stages, interleaving and Megatron's embedding/loss
// split included (a part list that drops layers would train a smaller model without a word).
TEST(LaunchTorchtitan, StagesNameEveryLayerOnce) {
  const ModelSpec llama405 = load_model("llama3.1-405b");
  const ModelSpec llama8 = load_model("llama3-8b");
  const std::vector<Scene> scenes{
      scene(llama405, "dgx-h100:32", 8192, 64, "dp=2,tp=8,pp=16,vpp=2,mbs=1,sp=true,zero=3,account_embedding=true,"
                                               "account_loss=true"),
      scene(llama405, "dgx-h100:16", 8192, 64, "dp=2,tp=8,pp=8,vpp=2,mbs=1,sp=true,zero=3,stage_layers="
                                               "14/16/16/16/16/16/16/16"),
      scene(llama8, "dgx-h100:1", 8192, 64, "dp=2,pp=4,vpp=2,mbs=1,zero=3,stage_layers=6/10/10/6"),
      scene(llama8, "dgx-h100:1", 8192, 64, "dp=2,pp=4,mbs=1,zero=3,stage_layers=5/9/9/9")};
  for (const Scene& s : scenes) {
    ASSERT_TRUE(can_run(Framework::kTorchtitan, s.plan, s.model, s.training)) << to_string(s.plan);
    const std::string parts = parse(job_file(launch(s).text)).at("parallelism", "module_fqns_per_model_part");
    ASSERT_FALSE(parts.empty()) << to_string(s.plan);
    std::vector<int> layers;
    const std::regex layer("\"layers\\.(\\d+)\"");
    for (auto it = std::sregex_iterator(parts.begin(), parts.end(), layer); it != std::sregex_iterator(); ++it)
      layers.push_back(std::stoi((*it)[1]));
    std::vector<int> expected(static_cast<std::size_t>(s.model.num_layers));
    std::iota(expected.begin(), expected.end(), 0);
    EXPECT_EQ(layers, expected) << to_string(s.plan) << "\n" << parts;
    EXPECT_EQ(std::count(parts.begin(), parts.end(), '[') - 1, s.plan.pp * s.plan.vpp) << parts;
    EXPECT_EQ(parts.find("[[\"tok_embeddings\""), 0u) << parts;
    EXPECT_NE(parts.find("\"norm\", \"output\"]]"), std::string::npos) << parts;
  }
}

// The multi-stage schedules torchtitan has (T4.2), by their names; a V-shape's stages in stage
// order, rank r holding stages r and 2·pp-1-r (T4.4): the embedding and the output on rank 0.
TEST(LaunchTorchtitan, ZeroBubbleAndVShapedSchedulesKeepTheirStageOrder) {
  const ModelSpec llama8 = load_model("llama3-8b");
  const std::vector<std::pair<const char*, const char*>> cases{
      {"dp=2,pp=4,vpp=2,mbs=1,zero=3,stage_layers=6/10/10/6,schedule=zb-v", "\"ZBVZeroBubble\""},
      {"dp=2,pp=4,vpp=2,mbs=1,zero=3,stage_layers=6/10/10/6,schedule=dualpipev", "\"DualPipeV\""},
      {"dp=2,pp=4,vpp=2,mbs=1,zero=3,schedule=interleaved-zb", "\"InterleavedZeroBubble\""}};
  for (const auto& [config, name] : cases) {
    const Scene s = scene(llama8, "dgx-h100:1", 8192, 64, config);
    ASSERT_TRUE(can_run(Framework::kTorchtitan, s.plan, s.model, s.training)) << config;
    const Toml job = parse(job_file(launch(s).text));
    EXPECT_EQ(job.at("parallelism", "pipeline_parallel_schedule"), name) << config;
    const std::string parts = job.at("parallelism", "module_fqns_per_model_part");
    // Layers per stage, in stage order.
    std::vector<int> per_stage;
    for (std::size_t open = parts.find('[', 1); open != std::string::npos; open = parts.find('[', open + 1)) {
      const std::string stage = parts.substr(open, parts.find(']', open) - open);
      int n = 0;
      for (std::size_t at = stage.find("layers."); at != std::string::npos; at = stage.find("layers.", at + 1)) ++n;
      per_stage.push_back(n);
    }
    const bool v_shaped = s.plan.schedule != Schedule::kInterleavedZeroBubble;
    const std::vector<int> expected =
        v_shaped ? std::vector<int>{3, 5, 5, 3, 3, 5, 5, 3} : std::vector<int>{4, 4, 4, 4, 4, 4, 4, 4};
    EXPECT_EQ(per_stage, expected) << config << "\n" << parts;
  }
  // DualPipeV overlaps the expert all-to-all when ep > 1 unless told not to (T4.6): stated as planned.
  const ModelSpec moe = load_model(std::string(PARATUNE_SOURCE_DIR) + "/examples/tiny-moe.yaml");
  for (const bool overlap : {true, false}) {
    const Scene s = scene(moe, "dgx-h100:2", 2048, 32,
                          overlap ? "dp=8,pp=2,vpp=2,ep=8,mbs=1,zero=3,schedule=dualpipev,ep_overlap=true"
                                  : "dp=8,pp=2,vpp=2,ep=8,mbs=1,zero=3,schedule=dualpipev");
    EXPECT_EQ(parse(job_file(launch(s).text)).at("parallelism", "pipeline_parallel_expert_parallel_overlap"),
              overlap ? "true" : "false");
  }
  // DualPipe's two directions and parameter copies: torchtitan runs none of that.
  const Scene dual = scene(llama8, "dgx-h100:1", 8192, 64, "dp=2,pp=4,mbs=1,zero=3,schedule=dualpipe");
  EXPECT_FALSE(can_run(Framework::kTorchtitan, dual.plan, dual.model, dual.training));
  EXPECT_FALSE(can_run(Framework::kMegatron, dual.plan, dual.model, dual.training));
}

TEST(LaunchTorchtitan, ModelsMapToRegisteredFlavors) {
  auto model_of = [](const ModelSpec& m, const char* config = "dp=8,mbs=1,zero=3") {
    const Scene s = scene(m, "dgx-h100:1", 4096, 64, config);
    const LaunchSettings l = launch(s);
    const Toml t = parse(job_file(l.text));
    return std::make_pair(t.at("model", "name") + " " + t.at("model", "flavor"), l.cannot_express);
  };
  auto registered = [&](const ModelSpec& m, const std::string& expected) {
    const auto [name, cannot] = model_of(m);
    EXPECT_EQ(name, expected) << m.name;
    EXPECT_FALSE(torchtitan_mentions(cannot, "registered flavor")) << m.name << ": " << cannot.front();
  };
  registered(load_model("llama3-8b"), "\"llama3\" \"8B\"");  // not 8B_flex or 8B_varlen
  registered(load_model("llama3.1-8b"), "\"llama3\" \"8B\"");
  registered(load_model("llama3.1-70b"), "\"llama3\" \"70B\"");
  registered(load_model("llama3.1-405b"), "\"llama3\" \"405B\"");
  registered(load_model("deepseek-v3"), "\"deepseek_v3\" \"671B\"");  // MLA, 3 dense layers, 1 shared expert
  registered(load_model("qwen3-30b-a3b"), "\"qwen3\" \"30B-A3B\"");
  // Shapes paratune has no preset for, as their Hugging Face configs give them.
  ModelSpec qwen3_8b = load_model("llama3-8b");  // Qwen3-8B: 36 layers, head_dim 128, ffn 12288
  qwen3_8b.name = "qwen3-8b";
  qwen3_8b.num_layers = 36;
  qwen3_8b.ffn_hidden_size = 12288;
  qwen3_8b.vocab_size = 151936;
  registered(qwen3_8b, "\"qwen3\" \"8B\"");
  ModelSpec scout = load_model("llama3-8b");  // Llama-4-Scout: 16 experts + 1 shared, every layer MoE
  scout.name = "llama4-scout";
  scout.num_layers = 48;
  scout.hidden_size = 5120;
  scout.num_attention_heads = 40;
  scout.head_dim = 128;
  scout.ffn_hidden_size = 16384;
  scout.vocab_size = 202048;
  scout.moe = MoeSpec{.num_experts = 16, .top_k = 1, .expert_ffn_hidden_size = 8192, .num_shared_experts = 1};
  registered(scout, "\"llama4\" \"17bx16e\"");  // not 17bx16e_irope
  ModelSpec maverick = scout;  // Llama-4-Maverick: 128 experts on every second layer
  maverick.name = "llama4-maverick";
  maverick.moe->num_experts = 128;
  maverick.moe->first_dense_layers = 1;
  maverick.moe->layer_freq = 2;
  registered(maverick, "\"llama4\" \"17bx128e\"");

  // No flavor has the shape: the nearest family, a flavor named after the model, and a line saying so.
  ModelSpec other_vocab = load_model("llama3-8b");
  other_vocab.name = "llama3-8b-32k";
  other_vocab.vocab_size = 32000;
  auto [name, cannot] = model_of(other_vocab);
  EXPECT_EQ(name, "\"llama3\" \"llama3-8b-32k\"");
  EXPECT_TRUE(torchtitan_mentions(cannot, "register it as llama3 flavor \"llama3-8b-32k\"")) << cannot.front();
  EXPECT_TRUE(torchtitan_mentions(cannot, "vocab=32000"));
  const ModelSpec tiny_moe = load_model(std::string(PARATUNE_SOURCE_DIR) + "/examples/tiny-moe.yaml");
  std::tie(name, cannot) = model_of(tiny_moe, "dp=8,ep=8,mbs=1,zero=3");
  EXPECT_EQ(name, "\"llama4\" \"tiny-moe\"");
  EXPECT_TRUE(torchtitan_mentions(cannot, "no flavor of deepseek_v3, gpt_oss, llama3, llama4 or qwen3 has its shape"));
  EXPECT_TRUE(torchtitan_mentions(cannot, "experts=8, top_k=2"));
  // Not Llama-style at all: a new model, not only a flavor.
  ModelSpec gpt2 = load_model("gpt2");
  gpt2.max_position_embeddings = 4096;  // the scene's sequence length
  std::tie(name, cannot) = model_of(gpt2, "dp=8,mbs=1,zero=0");
  EXPECT_EQ(name, "\"llama3\" \"gpt2\"");
  EXPECT_TRUE(torchtitan_mentions(cannot, "is not a Llama-style decoder")) << cannot.front();
  EXPECT_TRUE(torchtitan_mentions(cannot, "LayerNorm"));
  // The script carries the same lines, for whoever reads it alone.
  const LaunchSettings l = launch(scene(tiny_moe, "dgx-h100:1", 4096, 64, "dp=8,ep=8,mbs=1,zero=3"));
  EXPECT_NE(l.text.find("# NOTE: model tiny-moe: "), std::string::npos) << l.text;
}

}  // namespace
}  // namespace paratune::launch
