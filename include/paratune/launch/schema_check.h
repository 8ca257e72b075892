// Emitted launch settings checked against the target framework's own schema at a named version:
// Megatron-LM's flags (action, type, choices, nargs), torchtitan's TOML keys (type, choices),
// DeepSpeed's ds_config keys (type, choices). The schemas are the facts of data/frameworks,
// compacted into data/frameworks/*.schema.json by scripts/framework_schemas.py and compiled in.
// A launch paratune emits that breaks one is a bug of the emitter: launch_settings throws.
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <string_view>
#include <vector>

#include "paratune/launch/framework_support.h"

namespace paratune::launch {

// A framework at a version: "megatron", "megatron@core_v0.19.0", "torchtitan@v0.2.2".
struct FrameworkTarget {
  Framework framework = Framework::kMegatron;
  std::string version;  // one of framework_versions(framework)
};

// The versions whose schema paratune has, the default (newest) first.
std::vector<std::string> framework_versions(Framework framework);
// Parses NAME[@VERSION]; without a version, the default. Throws Error naming the known versions.
FrameworkTarget parse_framework_target(std::string_view text);
std::string to_string(const FrameworkTarget& target);  // "megatron@0.20.0-dev"
// What `plan --framework` searches within: "any" -> the three, "none" -> {} (the whole space),
// NAME[@VERSION] -> {NAME} (the version checked as parse_framework_target does). Throws Error.
std::vector<Framework> parse_searched_frameworks(std::string_view text);
// The commit a version was read at (for the emitted header).
std::string framework_commit(const FrameworkTarget& target);

// One entry of a Megatron-LM argument list split into words: "--flag a b" -> {"--flag", "a", "b"};
// a value in double quotes is one word, the quotes removed.
std::vector<std::string> launch_arg_words(const std::string& arg);

// Problems of a Megatron-LM argument list (each entry "--flag" or "--flag value ..."); empty when
// every flag exists at the version, is given once, is not deprecated, and its values match its
// action, nargs, type and choices (rules R0.1, R0.4, R0.6).
std::vector<std::string> check_megatron_args(const std::vector<std::string>& args, const std::string& version);
// Problems of a torchtitan TOML job file (tables, key = value); empty when every key exists in its
// table at the version with a value of its TOML type and choices (rule T0).
std::vector<std::string> check_torchtitan_toml(const std::string& toml, const std::string& version);
// Problems of a ds_config: every key known at the version, with its type and choices (rule D0).
std::vector<std::string> check_deepspeed_config(const nlohmann::json& config, const std::string& version);

}  // namespace paratune::launch
