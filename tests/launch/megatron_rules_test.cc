// Megatron-LM's validation rules (launch/megatron_rules.h) against the cases that were run through
// Megatron's own argparse, validate_args and TransformerConfig (data/frameworks).
#include "paratune/launch/megatron_rules.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cctype>
#include <fstream>
#include <iostream>
#include <set>

namespace paratune::launch {
namespace {

nlohmann::json megatron_shared_cases(const char* name) {
  std::ifstream in(std::string(PARATUNE_SOURCE_DIR) + "/data/frameworks/" + name);
  if (!in) return nullptr;
  return nlohmann::json::parse(in);
}

// "--flag v1 v2" entries from argv tokens; a value with spaces is quoted.
std::vector<std::string> entries(const nlohmann::json& argv) {
  std::vector<std::string> args;
  for (const auto& token : argv) {
    const std::string t = token.get<std::string>();
    if (t.rfind("--", 0) == 0) args.push_back(t);
    else if (!args.empty()) args.back() += t.find(' ') != std::string::npos ? " \"" + t + "\"" : " " + t;
  }
  return args;
}

// Whether a violation names rule `id` ("R2" matches "R2.3" but not "R21.2").
bool names_rule(const std::vector<std::string>& violations, const std::string& id) {
  for (const std::string& v : violations)
    for (std::size_t at = v.find(id); at != std::string::npos; at = v.find(id, at + 1)) {
      const std::size_t end = at + id.size();
      const bool start_ok = at == 0 || !std::isalnum(static_cast<unsigned char>(v[at - 1]));
      if (start_ok && (end == v.size() || !std::isdigit(static_cast<unsigned char>(v[end])))) return true;
    }
  return false;
}

std::string joined(const std::vector<std::string>& v) {
  std::string out;
  for (const auto& s : v) out += (out.empty() ? "" : " | ") + s;
  return out;
}

TEST(MegatronRules, AgreesWithMegatronsValidation) {
  const nlohmann::json cases = megatron_shared_cases("megatron-lm-cases.json");
  ASSERT_FALSE(cases.is_null()) << "data/frameworks/ ships the cases";
  // The rules check_megatron_rules encodes (at least in part).
  const std::set<std::string> implemented{"R1",  "R2",  "R3",  "R4",  "R5",  "R6",  "R8",  "R9",  "R10", "R11", "R12",
                                          "R13", "R14", "R15", "R16", "R17", "R18", "R19", "R20", "R21", "R22", "R23"};
  // Cases whose tag differs from the section of the rules file that states the refusing rule.
  const std::map<std::string, std::string> stated_in{
      {"missing_mbs", "R2"},                    // tagged R3; --micro-batch-size is R2.1
      {"moe_bias_etp2", "R15"},                 // tagged R16; biases need etp = 1 is R15.3
      {"uneven_with_account", "R11"},           // tagged R12; the account-flag exclusion is R11.4
      {"uneven_with_layers_per_vstage", "R10"}  // tagged R12; the exclusion is R10.2
  };
  int accepted = 0, rejected = 0, skipped = 0;
  for (const auto& c : cases.at("cases")) {
    const std::vector<std::string> args = entries(c.at("argv"));
    std::map<std::string, std::string> env;
    for (const auto& [k, val] : c.at("env").items()) env[k] = val.get<std::string>();
    const std::vector<std::string> v = check_megatron_rules(args, c.at("world_size").get<int>(), env);
    const std::string id = c.at("id").get<std::string>();
    if (c.at("outcome") == "accepted") {
      EXPECT_TRUE(v.empty()) << id << " was accepted by Megatron-LM: " << joined(v);
      ++accepted;
      continue;
    }
    const std::string at = c.value("rejected_at", "");
    std::string rule = c.at("rule").get<std::string>();
    if (const auto it = stated_in.find(id); it != stated_in.end()) rule = it->second;
    if ((at != "validate_args" && at != "TransformerConfig") || !implemented.contains(rule)) {
      ++skipped;
      continue;
    }
    EXPECT_TRUE(names_rule(v, rule)) << id << " was refused by Megatron-LM (" << rule << ", " << at
                                     << "); found: " << (v.empty() ? "nothing" : joined(v));
    ++rejected;
  }
  std::cout << "megatron rules: " << accepted << " accepted cases clean, " << rejected
            << " rejected cases flagged with their rule, " << skipped << " not checked\n";
  EXPECT_GE(rejected, 25);
  EXPECT_GE(accepted, 40);
}

std::vector<std::string> base() {
  return {"--num-layers 32", "--hidden-size 4096", "--num-attention-heads 32", "--seq-length 4096",
          "--max-position-embeddings 4096", "--micro-batch-size 1", "--global-batch-size 64", "--bf16",
          "--tensor-model-parallel-size 2"};
}

TEST(MegatronRules, TpCommOverlapNeedsSequenceParallel) {
  const std::map<std::string, std::string> env{{"CUDA_DEVICE_MAX_CONNECTIONS", "1"}};
  std::vector<std::string> args = base();
  EXPECT_TRUE(check_megatron_rules(args, 8, env).empty()) << joined(check_megatron_rules(args, 8, env));
  args.push_back("--tp-comm-overlap");
  const auto v = check_megatron_rules(args, 8, env);
  ASSERT_EQ(v.size(), 1u) << joined(v);
  EXPECT_TRUE(names_rule(v, "R8")) << v.front();
  args.push_back("--sequence-parallel");
  EXPECT_TRUE(check_megatron_rules(args, 8, env).empty());
  // Without the environment variable, R6.1 (tp > 1 on Hopper).
  EXPECT_TRUE(names_rule(check_megatron_rules(args, 8, {}), "R6"));
  // A layout in quotes is one value.
  args = base();
  args.push_back("--pipeline-model-parallel-size 2");
  args.push_back("--pipeline-model-parallel-layout \"Et*16|t*16L\"");
  EXPECT_TRUE(check_megatron_rules(args, 8, env).empty()) << joined(check_megatron_rules(args, 8, env));
  args.back() = "--pipeline-model-parallel-layout \"Et*16|t*15L\"";
  EXPECT_TRUE(names_rule(check_megatron_rules(args, 8, env), "R13"));
}

// Fine-grained activation offloading (R19.8): the module list, attn_proj with core_attn, TE's
// environment variable.
TEST(MegatronRules, ActivationOffload) {
  std::map<std::string, std::string> env{{"CUDA_DEVICE_MAX_CONNECTIONS", "1"}, {"NVTE_CPU_OFFLOAD_V1", "1"}};
  std::vector<std::string> args = base();
  args.push_back("--fine-grained-activation-offloading");
  args.push_back("--offload-modules core_attn attn_proj");
  EXPECT_TRUE(check_megatron_rules(args, 8, env).empty()) << joined(check_megatron_rules(args, 8, env));
  args.back() = "--offload-modules attn_proj";
  EXPECT_TRUE(names_rule(check_megatron_rules(args, 8, env), "R19.8"));
  args.back() = "--offload-modules core_attn";
  env.erase("NVTE_CPU_OFFLOAD_V1");
  EXPECT_TRUE(names_rule(check_megatron_rules(args, 8, env), "R19.8"));
  args = base();
  args.push_back("--offload-modules core_attn");  // without --fine-grained-activation-offloading
  EXPECT_TRUE(names_rule(check_megatron_rules(args, 8, {{"CUDA_DEVICE_MAX_CONNECTIONS", "1"}}), "R19.8"));
}

}  // namespace
}  // namespace paratune::launch
