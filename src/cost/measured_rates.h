// Pricing with a hardware profile (paratune/cost/hardware_profile.h), and the log of what the cost
// model priced that `paratune profile` turns into its plan. Internal to the cost module.
//
// How a measurement enters a prediction. For each measured GEMM and attention shape the profile
// gives a factor, measured time / the fitted model's time for that shape on one GPU (without the
// many-GPU jitter the model adds on top: device_for). A kernel the model prices is scaled by the
// factor of its shape when the profile measured that shape, by a factor interpolated between
// measured shapes when it lies inside their range, and is left at the fitted model's time outside
// it. So an exact shape costs what was measured (times the jitter of a large job), and the model's
// dependence on shape carries between the measured points:
//   GEMMs      inverse-distance weighting of log factors over the measured shapes of the same dtype,
//              distance in (log m, log n, log k); inside the measured box of each dimension only.
//   attention  linear in log sequence length between the two nearest measured lengths (causal and
//              not apart); flash attention at context parallelism 1 only (ring attention's blocks
//              are other shapes).
//   collectives  the measured time itself, piecewise linear in (log bytes, log seconds) between
//              measured sizes of the same operation and group size, for groups that span as many
//              nodes as the measured ones did; above the largest measured size in proportion to the
//              bytes (the bandwidth regime), below the smallest the fitted model.
//   memory-bound kernels  at the measured copy bandwidth instead of HBM peak x hbm_efficiency.
// Launch and synchronisation overheads are measured and shown, not used: the model's host-issue
// terms (cost/host_issue.h) price more than one launch.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "paratune/cost/collectives.h"
#include "paratune/cost/hardware_profile.h"

namespace paratune::cost_detail {

struct Device;

// What the cost model priced while the log was attached: every distinct GEMM, flash-attention and
// collective shape. `paratune profile` plans its measurements from it.
struct KernelLog {
  struct Gemm {
    double m = 0, n = 0, k = 0;
    GemmDtype dtype = GemmDtype::kBF16;
  };
  struct Attention {
    int batch = 0, seq_len = 0, heads = 0, kv_heads = 0, head_dim = 0;
    bool causal = true;
  };
  struct Collective {
    CollectiveOp op = CollectiveOp::kAllReduce;
    int ranks = 0;
    int nodes = 1;
    double bytes = 0;
  };
  std::vector<Gemm> gemms;
  std::vector<Attention> attention;
  std::vector<Collective> collectives;

  void add(const Gemm& g);
  void add(const Attention& a);
  void add(const Collective& c);
};

class MeasuredRates {
 public:
  // `plain`: the device the factors are taken against -- the fitted model's rates on one GPU.
  // `fabric`: the fitted collectives the measured ones are compared with.
  MeasuredRates(const HardwareProfile& profile, const Device& plain, const Fabric& fabric);

  // The factor for a GEMM of this shape; nullopt outside the measured shapes.
  [[nodiscard]] std::optional<double> gemm_factor(GemmDtype dtype, double m, double n, double k) const;
  // The factors for core attention's forward and backward at this sequence length; nullopt outside.
  struct AttentionFactors {
    double forward = 1, backward = 1;
  };
  [[nodiscard]] std::optional<AttentionFactors> attention_factors(bool causal, double seq_len) const;
  // The measured time of a collective; nullopt when not measured for that group or size.
  [[nodiscard]] std::optional<double> collective_s(CollectiveOp op, int ranks, int nodes, double bytes) const;
  [[nodiscard]] std::optional<double> memory_bandwidth_bytes_per_s() const { return bandwidth_; }

  // Each measurement beside the fitted model's time for it on one GPU (what `paratune profile`
  // prints): GEMMs, attention forward and backward, collectives (the fitted model on `cluster`'s
  // fabric for a group of the measured size) and the copy bandwidth.
  struct Comparison {
    std::string kind;  // "gemm", "attention forward", "attention backward", "all_reduce", ..., "memory bandwidth"
    std::string id;
    double measured_s = 0, model_s = 0;
  };
  [[nodiscard]] const std::vector<Comparison>& comparisons() const { return comparisons_; }

 private:
  struct GemmPoint {
    GemmDtype dtype;
    double log_m, log_n, log_k, log_factor;
  };
  struct AttentionPoint {
    bool causal;
    double log_seq, log_forward, log_backward;
  };
  struct CollectivePoint {
    CollectiveOp op;
    int ranks, nodes;
    double log_bytes, log_s;
  };
  std::vector<GemmPoint> gemms_;
  std::vector<AttentionPoint> attention_;          // sorted by (causal, log_seq)
  std::vector<CollectivePoint> collectives_;       // sorted by (op, ranks, nodes, log_bytes)
  std::optional<double> bandwidth_;
  std::vector<Comparison> comparisons_;
};

}  // namespace paratune::cost_detail
