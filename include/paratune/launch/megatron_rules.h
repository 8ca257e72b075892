// Megatron-LM's validation rules (data/frameworks/megatron-lm-rules.md) checked on an emitted
// launch: not the flag schema (check_megatron_args in paratune/launch/schema_check.h does that) but
// the combinations that validate_args, TransformerConfig and the process-group / microbatch setup
// refuse. Only rules the rules file states precisely are encoded; the machine is taken to be
// Hopper (arch 9), as the file's cases were run.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace paratune::launch {

// Rules of data/frameworks/megatron-lm-rules.md that Megatron-LM's validate_args and
// TransformerConfig enforce, checked on an argument list ("--flag value ..." entries, as
// check_megatron_args takes), the world size and the environment. Each violation names its rule
// ("R9.1: ..."). Encoded: R1.1, R1.3-R1.5, R2.1-R2.5, R3.1-R3.3, R3.6-R3.7, R4, R5.1, R6, R8.1,
// R9.1-R9.2, R10.1-R10.4, R11.1, R11.3-R11.4, R12.1-R12.3, R13.2-R13.4, R14.1-R14.3, R14.5,
// R15.1, R15.3, R16.1, R16.3-R16.4, R16.6-R16.7, R17.1-R17.3, R18.1, R19.2-R19.4, R19.6,
// R20.3-R20.5, R21.2-R21.3, R22.1, R23.1. R7.1 (SP with tp = 1) is a warning, not a violation.
std::vector<std::string> check_megatron_rules(const std::vector<std::string>& args, std::int64_t world_size,
                                              const std::map<std::string, std::string>& environment);

}  // namespace paratune::launch
