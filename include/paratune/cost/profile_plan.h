// `paratune profile`'s two ends on the cost model's side (docs/profile.md): the plan of what to
// measure -- the exact kernels the cost model prices for the given configurations -- and, once the
// measurer has written a hardware profile, each measurement beside the model's prediction of it.
#pragma once

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <vector>

#include "paratune/cost/calibration.h"
#include "paratune/cost/hardware_profile.h"
#include "paratune/spec/hardware.h"
#include "paratune/spec/model.h"
#include "paratune/spec/parallel.h"
#include "paratune/spec/training.h"

namespace paratune {

struct ProfilePlanOptions {
  // The configurations whose kernels are measured (their degrees and micro-batches give the
  // shapes); at least one.
  std::vector<ParallelConfig> configs;
  // A reduced set for a CPU: sequences cut to kQuickSeqLen tokens, one layer in the step, fewer
  // repetitions. The shapes are then the model's widths at that length, said so in the plan.
  bool quick = false;
  int warmup = 3;        // untimed runs before each measurement (>= 0)
  int repetitions = 10;  // timed runs (>= 1)
};
inline constexpr int kQuickSeqLen = 256;
// The warm-up and repetitions `paratune profile --quick` asks for unless told otherwise.
inline constexpr int kQuickWarmup = 1;
inline constexpr int kQuickRepetitions = 3;

// The plan (format kProfilePlanFormat): every distinct GEMM (m, n, k, dtype), flash-attention shape
// and single-node collective the cost model prices for the configurations, element-wise passes of
// the layer's widths, a bandwidth copy and a reduced-depth training step. Throws Error (context
// "configuration ...") for a configuration the specs refuse.
nlohmann::ordered_json profile_plan(const ModelSpec& model, const ClusterSpec& cluster, const TrainingSpec& training,
                                    const Calibration& calibration, const ProfilePlanOptions& options);

// Each measurement of a profile beside the fitted model's time for it on one GPU of `cluster`, and
// the reduced-depth step: measured, predicted by the fitted model, predicted with the profile.
struct ProfileComparison {
  struct Row {
    std::string kind;  // "gemm", "attention forward", ..., "all_reduce", "memory bandwidth"
    std::string id;
    double measured_s = 0, model_s = 0;
  };
  std::vector<Row> rows;
  struct Step {
    double measured_s = 0;
    double model_s = 0;          // the fitted model alone
    double with_profile_s = 0;   // the model priced with the profile
    std::optional<double> measured_memory_bytes;  // torch.cuda.max_memory_allocated (none on a CPU)
    double model_memory_bytes = 0;  // weights, gradients, optimizer state and activations (what
                                    // max_memory_allocated counts: no CUDA context or buffers)
    int layers = 0;
  };
  std::optional<Step> step;
};
ProfileComparison compare_profile(const HardwareProfile& profile, const ModelSpec& model, const ClusterSpec& cluster,
                                  const TrainingSpec& training, const Calibration& calibration);

}  // namespace paratune
