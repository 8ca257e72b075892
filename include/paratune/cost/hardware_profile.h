// A hardware profile: what `paratune profile` measured on the user's own GPUs (docs/profile.md) --
// GEMMs of the model's exact shapes, core attention, memory bandwidth, collectives and one training
// step of a reduced-depth model -- and the checks that it applies to a prediction.
//
// The cost model prices with it (EstimateOptions::profile): a kernel the profile measured costs what
// was measured, one between measured shapes or sizes is interpolated, one outside them keeps the
// fitted model (cost/measured_rates.h says how).
#pragma once

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <vector>

#include "paratune/spec/enums.h"
#include "paratune/spec/hardware.h"
#include "paratune/spec/model.h"
#include "paratune/spec/training.h"

namespace paratune {

// The profile file format this build reads and the plan format it writes.
inline constexpr int kHardwareProfileVersion = 1;
inline constexpr const char* kHardwareProfileFormat = "paratune-hardware-profile";
inline constexpr const char* kProfilePlanFormat = "paratune-profile-plan";

// One timing: the median and the 10th / 90th percentiles over `repetitions` timed runs.
struct MeasuredTime {
  double median_s = 0;
  double p10_s = 0;
  double p90_s = 0;
  int repetitions = 0;
};

enum class GemmDtype { kBF16, kFP16, kFP32, kFP8 };
const char* to_string(GemmDtype dtype);

struct MeasuredGemm {
  std::string id;
  double m = 0, n = 0, k = 0;
  GemmDtype dtype = GemmDtype::kBF16;
  std::string measured_dtype;  // what ran (a CPU may run bf16 as fp32)
  std::optional<MeasuredTime> time;  // nullopt: skipped (`skipped` says why)
  std::string skipped;
};

struct MeasuredAttention {
  std::string id;
  int batch = 0, seq_len = 0, heads = 0, kv_heads = 0, head_dim = 0;
  bool causal = true;
  std::string kernel;  // e.g. "sdpa-flash", "matmul-softmax-matmul"
  std::optional<MeasuredTime> forward, backward;
  std::string skipped;
};

enum class CollectiveOp { kAllReduce, kAllGather, kReduceScatter, kAllToAll, kSendRecv };
const char* to_string(CollectiveOp op);

struct MeasuredCollective {
  std::string id;
  CollectiveOp op = CollectiveOp::kAllReduce;
  int ranks = 0;
  double bytes = 0;  // the full buffer as the cost model counts it (cost/collectives.h)
  std::optional<MeasuredTime> time;
  std::string skipped;
};

struct MeasuredElementwise {
  std::string id, kind;
  double rows = 0, cols = 0, bytes_moved = 0;
  std::optional<MeasuredTime> time;
  std::string skipped;
};

// The reduced-depth model's training step.
struct MeasuredStep {
  int layers = 0;
  int micro_batch = 0;
  int seq_len = 0;
  int vocab_size = 0;  // 0: not stated (the model's)
  std::optional<MeasuredTime> time;
  std::optional<double> max_memory_allocated_bytes;  // nullopt on a CPU
  std::string dtype;
  std::string skipped;
};

struct HardwareProfile {
  std::string source;  // the file it was read from (for messages)
  std::string created_utc;
  // What it was measured for: the plan's model, its fingerprint (model_fingerprint), the GPU name of
  // the cluster the plan was written for and the precision.
  std::string model, model_fingerprint, gpu;
  Precision precision = Precision::kBF16;
  // Where: backend ("cuda" | "cpu"), device name, versions, clocks, as written (shown, not used).
  nlohmann::ordered_json device;
  int world_size = 1;
  int nodes = 1;
  std::vector<MeasuredGemm> gemms;
  std::vector<MeasuredAttention> attention;
  std::vector<MeasuredElementwise> elementwise;
  std::optional<double> memory_bandwidth_bytes_per_s;
  std::optional<MeasuredTime> launch_overhead, sync_overhead;
  std::vector<MeasuredCollective> collectives;
  std::optional<MeasuredStep> step;
};

// Reads and checks a profile file: the format and version, every field's type and range (a time is
// finite and > 0, p10 <= median <= p90, sizes are whole and >= 1). Throws Error naming the file, the
// entry (its id), the field, the value and the rule.
HardwareProfile read_hardware_profile(const std::string& path);
HardwareProfile parse_hardware_profile(const nlohmann::json& document, const std::string& source);

// A digest of what fixes the model's kernel shapes (widths, heads, vocabulary, MoE and MLA shapes;
// not the depth): a profile measured for another model is refused.
std::string model_fingerprint(const ModelSpec& model);

// Throws Error with the reason when `profile` was measured for another model, another GPU or another
// precision than this prediction's.
void check_profile_applies(const HardwareProfile& profile, const ModelSpec& model, const ClusterSpec& cluster,
                           const TrainingSpec& training);

}  // namespace paratune
