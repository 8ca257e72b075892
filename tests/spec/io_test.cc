#include "paratune/spec/io.h"

#include <gtest/gtest.h>

#include <fmt/format.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "../test_util.h"
#include "paratune/cost/model_stats.h"

namespace paratune {
namespace {

using testing::write_temp;

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(ModelFile, YamlModelSpecLoads) {
  const auto path = write_temp("tiny.yaml", R"(name: tiny
num_layers: 4
hidden_size: 256
num_attention_heads: 8
num_kv_heads: 2
ffn_hidden_size: 704
gated_mlp: true
vocab_size: 32000
norm: rmsnorm
moe:
  num_experts: 8
  top_k: 2
  expert_ffn_hidden_size: 512
)");
  const ModelSpec m = load_model(path);
  EXPECT_EQ(m.name, "tiny");
  EXPECT_EQ(m.kv_heads(), 2);
  EXPECT_EQ(m.head_size(), 32);
  ASSERT_TRUE(m.moe.has_value());
  EXPECT_EQ(m.moe->top_k, 2);
}

TEST(ModelFile, UnknownKeyNamesFileAndSuggests) {
  const auto path = write_temp("typo.yaml", "num_layers: 4\nhidden_size: 256\nnum_attention_heads: 8\nvocab_size: 10\nnum_kv_head: 2\n");
  const std::string e = error_of([&] { load_model(path); });
  EXPECT_NE(e.find("typo.yaml"), std::string::npos) << e;
  EXPECT_NE(e.find("unknown key 'num_kv_head' (did you mean 'num_kv_heads'?)"), std::string::npos) << e;
}

TEST(ModelFile, BadYamlAndBadValues) {
  const auto bad = write_temp("bad.yaml", "num_layers: [4\nhidden_size: 2\n");
  EXPECT_NE(error_of([&] { load_model(bad); }).find("invalid YAML at line"), std::string::npos);
  const auto wrong_type = write_temp("wrong.yaml", "num_layers: four\nhidden_size: 256\nnum_attention_heads: 8\nvocab_size: 10\n");
  EXPECT_NE(error_of([&] { load_model(wrong_type); }).find("num_layers: \"four\" is not an integer"), std::string::npos);
  const auto heads = write_temp("heads.json", R"({"num_layers": 2, "hidden_size": 250, "num_attention_heads": 8, "vocab_size": 10})");
  EXPECT_NE(error_of([&] { load_model(heads); }).find("does not divide hidden_size 250"), std::string::npos);
}

// Issue 21: values that do not fit or have the wrong type were wrapped or replaced by defaults
// (4294967312 layers became 16; "8" KV heads became multi-head attention), and a duplicated key
// kept its last value. Each is an error naming the file, the field and the value.
TEST(ModelFile, NoValueIsWrappedDefaultedOrSilentlyDuplicated) {
  const auto wrapped = write_temp("wrapped.json",
                                  R"({"num_layers": 4294967312, "hidden_size": 256, "num_attention_heads": 8, "vocab_size": 10})");
  std::string e = error_of([&] { load_model(wrapped); });
  EXPECT_NE(e.find("wrapped.json: num_layers: 4294967312 does not fit in a 32-bit integer"), std::string::npos) << e;
  const auto yaml_wrapped = write_temp("wrapped.yaml", "num_layers: 99999999999999999999999\nhidden_size: 256\n"
                                                       "num_attention_heads: 8\nvocab_size: 10\n");
  EXPECT_NE(error_of([&] { load_model(yaml_wrapped); }).find("num_layers:"), std::string::npos);
  const auto negative = write_temp("negative.json",
                                   R"({"num_layers": -9223372036854775808, "hidden_size": 256, "num_attention_heads": 8, "vocab_size": 10})");
  EXPECT_NE(error_of([&] { load_model(negative); }).find("does not fit in a 32-bit integer"), std::string::npos);
  const auto hf = write_temp("string_kv_config.json", R"({"model_type": "llama", "hidden_size": 16384,
      "intermediate_size": 53248, "num_attention_heads": 128, "num_hidden_layers": 126, "num_key_value_heads": "8",
      "vocab_size": 128256})");
  e = error_of([&] { load_model(hf); });
  EXPECT_NE(e.find("string_kv_config.json: num_key_value_heads: \"8\" is not an integer"), std::string::npos) << e;
  const auto hf_bool = write_temp("bool_config.json", R"({"model_type": "llama", "hidden_size": 64,
      "intermediate_size": 128, "num_attention_heads": 4, "num_hidden_layers": 2, "vocab_size": 100,
      "tie_word_embeddings": "yes"})");
  EXPECT_NE(error_of([&] { load_model(hf_bool); }).find("tie_word_embeddings: \"yes\" is not a boolean"), std::string::npos);
  const auto duplicate = write_temp("duplicate.json",
                                    R"({"num_layers": 2, "hidden_size": 256, "num_attention_heads": 8, "vocab_size": 10, "num_layers": 4})");
  e = error_of([&] { load_model(duplicate); });
  EXPECT_NE(e.find("duplicate.json: the key 'num_layers' appears twice in one object"), std::string::npos) << e;
  const auto yaml_duplicate = write_temp("duplicate.yaml", "num_layers: 2\nhidden_size: 256\nnum_attention_heads: 8\n"
                                                           "vocab_size: 10\nnum_layers: 4\n");
  e = error_of([&] { load_model(yaml_duplicate); });
  EXPECT_NE(e.find("duplicate.yaml: line 5: the key 'num_layers' appears twice in one mapping"), std::string::npos) << e;
  const auto latin1 = write_temp("latin1.yaml", "num_layers: 2\nhidden_size: 256\nname: caf\xe9\n");
  e = error_of([&] { load_model(latin1); });
  EXPECT_NE(e.find("latin1.yaml: line 3, column 10: byte 0xE9 is not UTF-8"), std::string::npos) << e;
  const auto huge = write_temp("huge.json", R"({"num_layers": 1e400, "hidden_size": 256, "num_attention_heads": 8, "vocab_size": 10})");
  EXPECT_NE(error_of([&] { load_model(huge); }).find("huge.json: invalid JSON"), std::string::npos);
}

// 0 means "derive it" only in paratune's own files, and only 0: a negative size is an error, and in
// a config.json (where null is the default) so is 0.
TEST(ModelFile, NegativeOrZeroSizesAreNotDefaults) {
  const std::string base = "num_layers: 2\nhidden_size: 256\nnum_attention_heads: 8\nvocab_size: 10\n";
  for (const auto& [field, rule] : std::vector<std::pair<std::string, std::string>>{
           {"num_kv_heads: -8", "num_kv_heads: -8 must be >= 1"},
           {"head_dim: -64", "head_dim: -64 must be >= 1"},
           {"ffn_hidden_size: -5", "ffn_hidden_size"}}) {
    const auto file = write_temp("negative_field.yaml", base + field + "\n");
    const std::string e = error_of([&] { load_model(file); });
    EXPECT_NE(e.find(rule), std::string::npos) << field << ": " << e;
  }
  const auto moe = write_temp("negative_shared.yaml", base + "moe: {num_experts: 4, top_k: 2, expert_ffn_hidden_size: 64, "
                                                             "num_shared_experts: 1, shared_expert_ffn_hidden_size: -5}\n");
  EXPECT_NE(error_of([&] { load_model(moe); }).find("moe.shared_expert_ffn_hidden_size: -5 must be >= 0"), std::string::npos);
  EXPECT_EQ(load_model(write_temp("zero_kv.yaml", base + "num_kv_heads: 0\n")).kv_heads(), 8);  // 0: derived, as documented

  const std::string hf = R"("model_type": "llama", "hidden_size": 4096, "num_attention_heads": 32, "num_hidden_layers": 2, "vocab_size": 32000)";
  for (const auto& [field, rule] : std::vector<std::pair<std::string, std::string>>{
           {R"("intermediate_size": 11008, "num_key_value_heads": -8)", "num_key_value_heads: -8 must be >= 1"},
           {R"("intermediate_size": 11008, "num_key_value_heads": 0)", "num_key_value_heads: 0 must be >= 1"},
           {R"("intermediate_size": -1)", "intermediate_size: -1 must be >= 1"},
           {R"("intermediate_size": 0)", "intermediate_size: 0 must be >= 1"},
           {R"("intermediate_size": 11008, "head_dim": 0)", "head_dim: 0 must be >= 1"}}) {
    const auto file = write_temp("hf_sizes_config.json", "{" + hf + ", " + field + "}");
    const std::string e = error_of([&] { load_model(file); });
    EXPECT_NE(e.find("hf_sizes_config.json: " + rule), std::string::npos) << field << ": " << e;
  }
  const auto gpt2 = write_temp("gpt2_config.json", R"({"model_type": "gpt2", "n_layer": 2, "n_embd": 64, "n_head": 4,
      "vocab_size": 100, "n_inner": -3})");
  EXPECT_NE(error_of([&] { load_model(gpt2); }).find("n_inner: -3 must be >= 1"), std::string::npos);
  const auto escape_name = write_temp("escape_name_config.json", "{" + hf + R"(, "intermediate_size": 11008, "_name_or_path": "x\u001b[2Jy"})");
  EXPECT_NE(error_of([&] { load_model(escape_name); }).find("name: 'x\\x1B[2Jy' holds the control character 0x1B"), std::string::npos)
      << error_of([&] { load_model(escape_name); });
  const auto null_kv = write_temp("null_kv_config.json", "{" + hf + R"(, "intermediate_size": 11008, "num_key_value_heads": null})");
  EXPECT_EQ(load_model(null_kv).kv_heads(), 32);  // null: the default, multi-head attention
}

// Issue 21: /dev/zero, FIFOs and a 520-byte YAML alias bomb were read or expanded without limit.
TEST(InputFiles, DevicesFifosHugeFilesAndAliasBombsAreRefused) {
  std::string e = error_of([] { load_model("/dev/zero"); });
  EXPECT_NE(e.find("/dev/zero: is a character device; a YAML file must be a regular file"), std::string::npos) << e;
  const auto dir = std::filesystem::path(::testing::TempDir()) / "paratune_input_files";
  std::filesystem::create_directories(dir);
  const auto fifo = dir / "model.yaml";
  std::filesystem::remove(fifo);
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  e = error_of([&] { load_model(fifo.string()); });  // nobody writes to it: must not wait
  EXPECT_NE(e.find("is a FIFO (named pipe)"), std::string::npos) << e;
  std::filesystem::remove(fifo);
  const auto big = dir / "big.yaml";
  {
    std::ofstream out(big);
    const std::string line(1023, '#');
    for (int i = 0; i < 65 * 1024; ++i) out << line << "\n";  // 65 MiB of comments
  }
  e = error_of([&] { load_model(big.string()); });
  EXPECT_NE(e.find("big.yaml: the YAML file is larger than 64.0 MiB"), std::string::npos) << e;
  std::filesystem::remove(big);
  // Nine levels of nine aliases: 9^9 = 387 million values from about 500 bytes.
  std::string bomb = "a: &a [x, x, x, x, x, x, x, x, x]\n";
  for (char level = 'b'; level <= 'i'; ++level) {
    const char prev = static_cast<char>(level - 1);
    bomb += fmt::format("{}: &{} [*{}, *{}, *{}, *{}, *{}, *{}, *{}, *{}, *{}]\n", level, level, prev, prev, prev, prev,
                        prev, prev, prev, prev, prev);
  }
  const auto bomb_file = write_temp("bomb.yaml", bomb);
  e = error_of([&] { load_model(bomb_file); });
  EXPECT_NE(e.find("bomb.yaml: the document expands to more than 1000000 values"), std::string::npos) << e;
}

// Issue 21: a Hugging Face model given by its directory was named after the directory ("data").
TEST(ModelFile, HuggingFaceDirectoryIsNamedByTheCheckpointNotTheDirectory) {
  const auto dir = std::filesystem::path(::testing::TempDir()) / "paratune_hf_name" / "data";
  std::filesystem::create_directories(dir);
  const std::string shape = R"("model_type": "llama", "hidden_size": 64, "intermediate_size": 128,
      "num_attention_heads": 4, "num_hidden_layers": 2, "vocab_size": 100)";
  std::ofstream(dir / "config.json") << "{" << shape << "}";
  EXPECT_EQ(load_model(dir.string()).name, "llama-2L-64h");
  EXPECT_EQ(load_model((dir / "config.json").string()).name, "llama-2L-64h");
  std::ofstream(dir / "config.json") << R"({"_name_or_path": "meta-llama/Tiny", )" << shape << "}";
  EXPECT_EQ(load_model(dir.string()).name, "meta-llama/Tiny");
  std::filesystem::remove(dir / "config.json");
  EXPECT_NE(error_of([&] { load_model(dir.string()); }).find("is a directory without a config.json"), std::string::npos);
}

TEST(ModelFile, UnknownPresetListsValidNames) {
  const std::string e = error_of([] { load_model("llama3.1-404b"); });
  EXPECT_NE(e.find("did you mean 'llama3.1-405b'"), std::string::npos) << e;
  EXPECT_NE(e.find("mixtral-8x22b"), std::string::npos) << e;
}

TEST(HuggingFace, MixtralConfigMatchesPreset) {
  const auto path = write_temp("mixtral_config.json", R"({
    "architectures": ["MixtralForCausalLM"], "model_type": "mixtral", "hidden_size": 6144,
    "intermediate_size": 16384, "num_attention_heads": 48, "num_hidden_layers": 56, "num_key_value_heads": 8,
    "num_local_experts": 8, "num_experts_per_tok": 2, "vocab_size": 32768, "tie_word_embeddings": false,
    "rms_norm_eps": 1e-05, "torch_dtype": "bfloat16"})");
  const ModelSpec m = load_model(path);
  EXPECT_DOUBLE_EQ(count_parameters(m).total, count_parameters(find_model_preset("mixtral-8x22b").spec).total);
}

TEST(HuggingFace, DeepSeekV3ConfigMatchesPreset) {
  const auto path = write_temp("dsv3_config.json", R"({
    "model_type": "deepseek_v3", "hidden_size": 7168, "intermediate_size": 18432, "moe_intermediate_size": 2048,
    "num_attention_heads": 128, "num_key_value_heads": 128, "num_hidden_layers": 61, "n_routed_experts": 256,
    "n_shared_experts": 1, "num_experts_per_tok": 8, "first_k_dense_replace": 3, "moe_layer_freq": 1,
    "q_lora_rank": 1536, "kv_lora_rank": 512, "qk_rope_head_dim": 64, "qk_nope_head_dim": 128, "v_head_dim": 128,
    "vocab_size": 129280, "tie_word_embeddings": false})");
  const ModelSpec m = load_model(path);
  EXPECT_DOUBLE_EQ(count_parameters(m).total, count_parameters(find_model_preset("deepseek-v3").spec).total);
}

TEST(HuggingFace, Gpt2AndBertAndQwenMoe) {
  const auto gpt2 = write_temp("gpt2_config.json",
                               R"({"model_type": "gpt2", "n_layer": 12, "n_embd": 768, "n_head": 12, "n_positions": 1024, "vocab_size": 50257})");
  EXPECT_NEAR(count_parameters(load_model(gpt2)).total, 124.44e6, 0.1e6);
  const auto bert = write_temp("bert_config.json", R"({"model_type": "bert", "num_hidden_layers": 12, "hidden_size": 768,
      "num_attention_heads": 12, "intermediate_size": 3072, "vocab_size": 30522, "max_position_embeddings": 512, "type_vocab_size": 2})");
  EXPECT_FALSE(load_model(bert).causal);
  const auto qwen = write_temp("qwen3moe_config.json", R"({"model_type": "qwen3_moe", "num_hidden_layers": 48, "hidden_size": 2048,
      "num_attention_heads": 32, "num_key_value_heads": 4, "head_dim": 128, "intermediate_size": 6144, "moe_intermediate_size": 768,
      "num_experts": 128, "num_experts_per_tok": 8, "vocab_size": 151936, "tie_word_embeddings": false})");
  EXPECT_NEAR(count_parameters(load_model(qwen)).total, 30.5e9, 0.01 * 30.5e9);
}

TEST(HuggingFace, AConfigWithoutModelTypeSaysSo) {
  const testing::TempDir dir;
  const std::string path =
      dir.write("config.json", R"({"num_hidden_layers": 32, "hidden_size": 4096, "num_attention_heads": 32})");
  const std::string e = error_of([&] { load_model(path); });
  EXPECT_NE(e.find(path + ": model_type: is required: the file has Hugging Face config.json fields"),
            std::string::npos)
      << e;
  EXPECT_NE(e.find("llama"), std::string::npos) << e;  // the supported types
}

TEST(HuggingFace, UnsupportedModelTypeListsSupported) {
  const auto path = write_temp("t5_config.json", R"({"model_type": "t5", "d_model": 512})");
  const std::string e = error_of([&] { load_model(path); });
  EXPECT_NE(e.find("model_type: 't5' is not supported; supported: llama, mistral"), std::string::npos) << e;
}

TEST(Cluster, PresetNodesAndShorthand) {
  const ClusterSpec a = load_cluster("dgx-h100:16");
  EXPECT_EQ(a.num_gpus(), 128);
  EXPECT_EQ(a.gpu.name, "h100-sxm");
  const ClusterSpec b = load_cluster("h100x128");
  EXPECT_EQ(b.num_gpus(), 128);
  EXPECT_DOUBLE_EQ(b.inter_node_bandwidth_bytes_per_s, a.inter_node_bandwidth_bytes_per_s);
  EXPECT_EQ(load_cluster("a100-40gbx4").gpus_per_node, 4);
  EXPECT_NE(error_of([] { load_cluster("dgx-h10:2"); }).find("did you mean 'dgx-h100'"), std::string::npos);
  EXPECT_NE(error_of([] { load_cluster("h100x12"); }).find("not a whole number of 8-GPU nodes"), std::string::npos);
}

TEST(Cluster, FileWithUnitsAndInlineGpu) {
  const auto path = write_temp("cluster.yaml", R"(gpu:
  name: my-gpu
  memory: 48GiB
  peak_bf16_tflops: 200
  hbm_bandwidth: 1.5TB/s
nodes: 4
gpus_per_node: 4
intra_node_bandwidth: 100GB/s
inter_node_bandwidth: 200Gbps
intra_node_latency: 3us
inter_node_latency: 10us
)");
  const ClusterSpec c = load_cluster(path);
  EXPECT_EQ(c.num_gpus(), 16);
  EXPECT_DOUBLE_EQ(c.gpu.memory_bytes, 48.0 * 1024 * 1024 * 1024);
  EXPECT_DOUBLE_EQ(c.inter_node_bandwidth_bytes_per_s, 25e9);
  EXPECT_DOUBLE_EQ(c.intra_node_latency_s, 3e-6);
  const auto bad = write_temp("cluster_bad.yaml", "gpu: h100-sxm\nnodes: 2\nintra_node_bandwith: 1GB/s\n");
  EXPECT_NE(error_of([&] { load_cluster(bad); }).find("did you mean 'intra_node_bandwidth'"), std::string::npos);
  const auto bad_unit = write_temp("cluster_unit.yaml", "gpu: h100-sxm\nnodes: 2\nintra_node_bandwidth: 1 parsec\n");
  EXPECT_NE(error_of([&] { load_cluster(bad_unit); }).find("intra_node_bandwidth: '1 parsec': unknown unit"), std::string::npos);
  // A value of the wrong type is named once, with the file and the key (it was said twice).
  const auto bad_type = write_temp("cluster_type.yaml", "gpu: {name: g, memory: 80GB, hbm_bandwidth: [1], "
                                                        "peak_bf16_tflops: 900}\nnodes: 1\n");
  const std::string once = error_of([&] { load_cluster(bad_type); });
  EXPECT_NE(once.find("hbm_bandwidth: [1] is not a string"), std::string::npos) << once;
  EXPECT_EQ(once.find("hbm_bandwidth"), once.rfind("hbm_bandwidth")) << once;
  // The GPU's host link (activation offload) is read with units.
  const auto link = write_temp("cluster_link.yaml", "gpu: {name: g, memory: 80GB, hbm_bandwidth: 3TB/s, "
                                                    "peak_bf16_tflops: 900, host_link_bandwidth: 55GB/s}\nnodes: 1\ngpus_per_node: 8\n"
                                                    "intra_node_bandwidth: 450GB/s\ninter_node_bandwidth: 400Gbps\n"
                                                    "intra_node_latency: 2us\ninter_node_latency: 6us\n");
  EXPECT_DOUBLE_EQ(load_cluster(link).gpu.host_link_bandwidth_bytes_per_s, 55e9);
}

TEST(Cluster, ScaleUpDomainAndPods) {
  const auto path = write_temp("nvl72.yaml", R"(gpu: gb200
nodes: 36
gpus_per_node: 4
nvlink_domain_gpus: 72
nodes_per_pod: 144
pod_oversubscription: 2
rail_optimized: false
)");
  const ClusterSpec c = load_cluster(path);
  EXPECT_EQ(c.nvlink_domain_gpus, 72);
  EXPECT_EQ(c.scale_up_gpus(), 72);
  EXPECT_EQ(c.nodes_per_pod, 144);
  EXPECT_EQ(c.pod_gpus(), 576);
  EXPECT_DOUBLE_EQ(c.pod_oversubscription, 2);
  EXPECT_FALSE(c.rail_optimized);
  // Links and the domain default to the GPU's reference node (gb200-nvl72) ...
  EXPECT_DOUBLE_EQ(c.intra_node_bandwidth_bytes_per_s, 900e9);
  const auto tray = write_temp("nvl72_default.yaml", "gpu: gb200\nnodes: 18\n");
  EXPECT_EQ(load_cluster(tray).scale_up_gpus(), 72);
  // ... the domain only while the node is the reference node's.
  const auto other = write_temp("gb200_8.yaml", "gpu: gb200\nnodes: 2\ngpus_per_node: 8\n");
  EXPECT_EQ(load_cluster(other).nvlink_domain_gpus, 0);
  // Defaults: one node per domain, one fabric, rails.
  const ClusterSpec h = load_cluster(write_temp("h100.yaml", "gpu: h100-sxm\nnodes: 2\n"));
  EXPECT_EQ(h.scale_up_gpus(), 8);
  EXPECT_EQ(h.nodes_per_pod, 0);
  EXPECT_DOUBLE_EQ(h.pod_oversubscription, 1);
  EXPECT_TRUE(h.rail_optimized);
}

TEST(Cluster, ScaleUpDomainErrorsNameFileFieldValueAndRule) {
  const auto bad = write_temp("bad_domain.yaml", "gpu: gb200\nnodes: 18\ngpus_per_node: 4\nnvlink_domain_gpus: 70\n");
  std::string e = error_of([&] { load_cluster(bad); });
  EXPECT_NE(e.find("bad_domain.yaml: nvlink_domain_gpus: 70 must be 0 (one node) or a multiple of gpus_per_node 4"),
            std::string::npos) << e;
  const auto not_int = write_temp("domain_text.yaml", "gpu: gb200\nnodes: 18\nnvlink_domain_gpus: rack\n");
  e = error_of([&] { load_cluster(not_int); });
  EXPECT_NE(e.find("domain_text.yaml"), std::string::npos) << e;
  EXPECT_NE(e.find("nvlink_domain_gpus: \"rack\" is not an integer"), std::string::npos) << e;
  const auto pods = write_temp("bad_pod.yaml", "gpu: h100-sxm\nnodes: 64\npod_oversubscription: 0.5\n");
  e = error_of([&] { load_cluster(pods); });
  EXPECT_NE(e.find("bad_pod.yaml: pod_oversubscription: 0.5 must be a finite number >= 1"), std::string::npos) << e;
  const auto typo = write_temp("typo_domain.yaml", "gpu: gb200\nnodes: 18\nnvlink_domain_gpu: 72\n");
  e = error_of([&] { load_cluster(typo); });
  EXPECT_NE(e.find("did you mean 'nvlink_domain_gpus'"), std::string::npos) << e;
  const auto rails = write_temp("rails.yaml", "gpu: h100-sxm\nnodes: 2\nrail_optimized: 1\n");
  EXPECT_NE(error_of([&] { load_cluster(rails); }).find("rail_optimized: 1 is not a boolean"), std::string::npos);
}

// A power limit below the board power: read from the cluster file, kept in JSON, refused where it
// cannot be (no board power, above it, below a quarter of it).
TEST(Cluster, GpuPowerLimit) {
  const ClusterSpec capped = load_cluster(write_temp("capped.yaml", "gpu: h100-sxm\nnodes: 2\ngpu_power_limit_w: 500\n"));
  EXPECT_DOUBLE_EQ(capped.gpu.board_power_w, 700);
  EXPECT_DOUBLE_EQ(capped.gpu.power_limit_w, 500);
  EXPECT_DOUBLE_EQ(cluster_from_json(to_json(capped), "round-trip").gpu.power_limit_w, 500);
  std::string e = error_of([&] {
    load_cluster(write_temp("above.yaml", "gpu: h100-sxm\nnodes: 1\ngpu_power_limit_w: 800\n"));
  });
  EXPECT_NE(e.find("above.yaml"), std::string::npos) << e;
  EXPECT_NE(e.find("gpu.power_limit_w: 800 W is above h100-sxm's board power of 700 W"), std::string::npos) << e;
  e = error_of([&] { load_cluster(write_temp("low.yaml", "gpu: h100-sxm\nnodes: 1\ngpu_power_limit_w: 100\n")); });
  EXPECT_NE(e.find("gpu.power_limit_w: 100 W is below a quarter of h100-sxm's board power"), std::string::npos) << e;
  e = error_of([&] { load_cluster(write_temp("unknown.yaml", "gpu: a100-80gb\nnodes: 1\ngpu_power_limit_w: 300\n")); });
  EXPECT_NE(e.find("gpu.power_limit_w: 300 W needs the board power the peaks are for (gpu.board_power_w)"),
            std::string::npos) << e;
}

TEST(Cluster, JsonRoundTripKeepsTheFabric) {
  ClusterSpec c = load_cluster("gb200-nvl72:36");
  c.nodes_per_pod = 18;
  c.pod_oversubscription = 1.5;
  c.rail_optimized = false;
  const nlohmann::json j = to_json(c);
  EXPECT_EQ(j["nvlink_domain_gpus"], 72);
  const ClusterSpec back = cluster_from_json(j, "round-trip");
  EXPECT_EQ(back.nvlink_domain_gpus, 72);
  EXPECT_EQ(back.nodes_per_pod, 18);
  EXPECT_DOUBLE_EQ(back.pod_oversubscription, 1.5);
  EXPECT_FALSE(back.rail_optimized);
  EXPECT_EQ(back.num_gpus(), 144);
}

TEST(Cluster, ShippedClusterExamplesLoad) {
  const std::string dir = std::string(PARATUNE_SOURCE_DIR) + "/examples/";
  EXPECT_EQ(load_cluster(dir + "cluster-h100-64.yaml").num_gpus(), 64);
  EXPECT_EQ(load_cluster(dir + "tsubame4.yaml").num_gpus(), 32);
  const ClusterSpec nvl72 = load_cluster(dir + "cluster-gb200-nvl72.yaml");
  EXPECT_EQ(nvl72.num_gpus(), 144);
  EXPECT_EQ(nvl72.scale_up_gpus(), 72);
  const ClusterSpec superpod = load_cluster(dir + "cluster-b200-superpod.yaml");
  EXPECT_EQ(superpod.num_gpus(), 1024);
  EXPECT_EQ(superpod.pod_gpus(), 256);
  EXPECT_DOUBLE_EQ(superpod.pod_oversubscription, 2);
}


TEST(Cluster, CountsOutOfRangeAreErrorsNotWrapped) {
  // 536870913 nodes x 8 GPUs wrapped to 8 GPUs in 32 bits.
  EXPECT_EQ(error_of([] { load_cluster("dgx-h100:536870913"); }),
            "cluster 'dgx-h100:536870913': node count '536870913' must be an integer from 1 to 16777216");
  EXPECT_EQ(error_of([] { load_cluster("dgx-h100:99999999999999999999"); }),
            "cluster 'dgx-h100:99999999999999999999': node count '99999999999999999999' must be an integer from 1 "
            "to 16777216");
  EXPECT_EQ(error_of([] { load_cluster("dgx-h100:3000000"); }),
            "cluster 'dgx-h100:3000000': nodes: 3000000 nodes x 8 GPUs per node = 24000000 GPUs; paratune models at "
            "most 16777216 GPUs");
  EXPECT_NE(error_of([] { load_cluster("h100x4294967304"); }).find("GPU count '4294967304' must be an integer from 1"),
            std::string::npos);
  EXPECT_EQ(load_cluster("dgx-h100:16384").num_gpus(), 131072);
  EXPECT_EQ(load_cluster("h100x131072").num_gpus(), 131072);
  const testing::TempDir dir;
  const std::string huge = dir.write("huge.yaml", "gpu: h100-sxm\nnodes: 2147483647\n");
  EXPECT_EQ(error_of([&] { load_cluster(huge); }),
            huge + ": nodes: 2147483647 nodes x 8 GPUs per node = 17179869176 GPUs; paratune models at most 16777216 "
                   "GPUs");
  const std::string file = dir.write("four.yaml", "gpu: h100-sxm\nnodes: 4\n");
  EXPECT_NE(error_of([&] { load_cluster(file + ":536870913"); }).find("must be an integer from 1 to 16777216"),
            std::string::npos);
  EXPECT_EQ(load_cluster(file + ":16").num_gpus(), 128);
}

// A cluster file of two H100 nodes with `line` added (a `gpu:` line replaces the preset GPU, and
// then gives the links too) must be refused with `expected`, naming the file.
void expect_cluster_error(const testing::TempDir& dir, const std::string& line, const std::string& expected) {
  const bool inline_gpu = line.rfind("gpu:", 0) == 0;
  const std::string path =
      dir.write("c.yaml", (inline_gpu ? "" : "gpu: h100-sxm\n") + line + "\nnodes: 2\n" +
                              (inline_gpu ? "intra_node_bandwidth: 450GB/s\ninter_node_bandwidth: 50GB/s\n" : ""));
  const std::string e = error_of([&] { load_cluster(path); });
  EXPECT_NE(e.find(path + ": "), std::string::npos) << line << ": " << e;
  EXPECT_NE(e.find(expected), std::string::npos) << line << ": " << e;
}

TEST(Cluster, NanAndInfinityInFilesAreErrorsNamingFileAndField) {
  const testing::TempDir dir;
  for (const auto& [line, expected] : std::vector<std::pair<std::string, std::string>>{
           {"intra_node_bandwidth: nan", "intra_node_bandwidth: nan must be a finite number > 0"},
           {"inter_node_bandwidth: inf", "inter_node_bandwidth: inf must be a finite number > 0"},
           {"inter_node_latency: nan", "inter_node_latency: nan must be a finite number >= 0"},
           {"pod_oversubscription: inf", "pod_oversubscription: inf must be a finite number >= 1"},
           {"gpu: {memory: 80GB, peak_bf16_tflops: nan, hbm_bandwidth: 3TB/s}",
            "gpu: gpu.peak_bf16_tflops: nan must be a finite number >= 0"},
           {"gpu: {memory: nan, peak_bf16_tflops: 900, hbm_bandwidth: 3TB/s}", "gpu: gpu.memory: nan must be a finite"},
           {"gpu: {memory: 80GB, peak_bf16_tflops: 900, hbm_bandwidth: 1e308TB/s}",
            "gpu: hbm_bandwidth: '1e308TB/s' is not a valid bandwidth: it must be finite"}}) {
    expect_cluster_error(dir, line, expected);
  }
}

// A figure far outside any machine is a unit slip (a bare number is in base units), not a cluster
// whose iterations take years.
TEST(Cluster, ImplausibleFiguresAreUnitSlipsAndErrors) {
  const testing::TempDir dir;
  for (const auto& [line, expected] : std::vector<std::pair<std::string, std::string>>{
           {"intra_node_bandwidth: 450",
            "intra_node_bandwidth: 450 B/s is outside any real machine's range (1e+06 to 1e+14 B/s); a bare number is "
            "in B/s: write the unit, e.g. 450GB/s"},
           {"inter_node_latency: 5", "inter_node_latency: 5 s is outside any real machine's range (0 to 1 s)"},
           {"gpu: {memory: 80, peak_bf16_tflops: 900, hbm_bandwidth: 3TB/s}",
            "gpu.memory: 80 B is outside any real machine's range"},
           {"gpu: {memory: 80GB, peak_bf16_tflops: 900}",
            "gpu: hbm_bandwidth: is required for a GPU given as an object (e.g. 3.35TB/s)"}}) {
    expect_cluster_error(dir, line, expected);
  }
}

TEST(Gpu, UnsupportedPrecisionIsAnError) {
  EXPECT_THROW(static_cast<void>(find_gpu_preset("a100-80gb").peak_flops_per_s(Precision::kFP8)), Error);
  EXPECT_THROW(static_cast<void>(find_gpu_preset("v100-32gb").peak_flops_per_s(Precision::kBF16)), Error);
  EXPECT_DOUBLE_EQ(find_gpu_preset("h100-sxm").peak_flops_per_s(Precision::kFP8), 1978.9e12);
}

// Found by fuzz/model_yaml: a string that is not UTF-8 became a JSON string that every later
// dump() refused with nlohmann's type_error (exit 1, "internal"). Raw bytes and the two YAML escapes
// yaml-cpp decodes to Latin-1 bytes (\N, \_) are input errors naming the line.
TEST(ModelFile, TextThatIsNotUtf8IsAnInputError) {
  const std::string raw = "num_layers: 4\nname: caf\xE9\n";
  EXPECT_NE(error_of([&] { parse_document(raw, "m.yaml", DocumentFormat::kYaml); })
                .find("m.yaml: line 2, column 10: byte 0xE9 is not UTF-8"),
            std::string::npos);
  EXPECT_NE(error_of([&] { parse_document(raw, "m.json", DocumentFormat::kJson); }).find("m.json: line 2"),
            std::string::npos);
  for (const char* escape : {"\\N", "\\_"}) {
    const std::string text = std::string("num_layers: 4\nname: \"a") + escape + "b\"\n";
    EXPECT_NE(error_of([&] { parse_document(text, "m.yaml", DocumentFormat::kYaml); })
                  .find("m.yaml: line 2: a string is not UTF-8 once YAML's escapes are decoded"),
              std::string::npos)
        << escape;
  }
  EXPECT_EQ(parse_document("name: \"caf\\xE9 \\u2713\"\n", "m.yaml", DocumentFormat::kYaml)["name"], "caf\u00e9 \u2713");
  // Issue 39, item 8: a UTF-16 surrogate pair, as Python's json.dumps writes an emoji, is one
  // character in a YAML file as in a JSON one; half a pair is an error in both.
  for (const auto format : {DocumentFormat::kYaml, DocumentFormat::kJson}) {
    EXPECT_EQ(parse_document("{\"name\": \"\\ud83d\\ude80\"}", "m", format)["name"], "\U0001F680");
    EXPECT_NE(error_of([&] { parse_document("{\"name\": \"\\ud83d\"}", "m.yaml", format); }).find("m.yaml: invalid"),
              std::string::npos);
  }
}

// Found by fuzz/cluster_arg: std::filesystem::exists threw filesystem_error ("File name too long")
// for an argument longer than a file name may be.
TEST(Cluster, ArgumentTooLongForAFileNameIsAnInputError) {
  EXPECT_NE(error_of([] { load_cluster(std::string(300, 'a')); }).find("unknown"), std::string::npos);
  EXPECT_NE(error_of([] { load_cluster(std::string(300, 'a') + ":2"); }).find("unknown"), std::string::npos);
  EXPECT_NE(error_of([] { load_model(std::string(300, 'a')); }).find("unknown"), std::string::npos);
}

}  // namespace
}  // namespace paratune
