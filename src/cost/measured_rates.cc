// Pricing with a hardware profile and the kernel log (measured_rates.h).
#include "measured_rates.h"

#include <algorithm>
#include <cmath>
#include <tuple>

#include "context_parallel.h"
#include "device.h"

namespace paratune::cost_detail {

void KernelLog::add(const Gemm& g) {
  for (const Gemm& known : gemms)
    if (known.m == g.m && known.n == g.n && known.k == g.k && known.dtype == g.dtype) return;
  gemms.push_back(g);
}
void KernelLog::add(const Attention& a) {
  for (const Attention& known : attention)
    if (std::tie(known.batch, known.seq_len, known.heads, known.kv_heads, known.head_dim, known.causal) ==
        std::tie(a.batch, a.seq_len, a.heads, a.kv_heads, a.head_dim, a.causal))
      return;
  attention.push_back(a);
}
void KernelLog::add(const Collective& c) {
  for (const Collective& known : collectives)
    if (known.op == c.op && known.ranks == c.ranks && known.nodes == c.nodes && known.bytes == c.bytes) return;
  collectives.push_back(c);
}

namespace {
namespace measured_pricing {

// The fitted time of a GEMM of `dtype` on `d`: the linear layers' rate for their dtype, the BF16
// rate for the GEMMs that stay BF16/FP16 (and for any other dtype a profile names).
double fitted_gemm_s(const Device& d, GemmDtype dtype, double m, double n, double k) {
  if (dtype == d.linear_dtype)
    return gemm_at_s(d.linear_peak_flops_per_s, d.linear_efficiency_max, d.half_dim, d.hbm_bytes_per_s, m, n, k);
  return gemm_at_s(d.bf16_peak_flops_per_s, d.bf16_efficiency_max, d.half_dim, d.hbm_bytes_per_s, m, n, k);
}

double fitted_attention_forward_s(const Device& d, const MeasuredAttention& a) {
  return flash_attention_forward_s(d, static_cast<double>(a.batch) * a.seq_len, a.seq_len, a.head_dim, a.head_dim, a.heads,
                                   a.causal, attention_kv_block_tokens(1, a.seq_len, a.causal));
}

GroupPlacement measured_group(int ranks, const HardwareProfile& p) {
  // The measurer runs groups of `ranks` consecutive ranks on nodes of world / nodes ranks each.
  const int per_node = std::max(1, p.world_size / std::max(1, p.nodes));
  return place_group(ranks, 1, per_node);
}

// Linear interpolation of y over x at `x` among sorted points [first, last); nullopt outside.
template <typename It, typename X, typename Y>
std::optional<double> interpolate(It first, It last, double x, X x_of, Y y_of) {
  if (first == last) return std::nullopt;
  constexpr double kTolerance = 1e-9;
  if (x < x_of(*first) - kTolerance || x > x_of(*(last - 1)) + kTolerance) return std::nullopt;
  const It upper = std::lower_bound(first, last, x, [&](const auto& p, double v) { return x_of(p) < v; });
  if (upper == last) return y_of(*(last - 1));
  if (upper == first || std::abs(x_of(*upper) - x) <= kTolerance) return y_of(*upper);
  const It lower = upper - 1;
  const double w = (x - x_of(*lower)) / (x_of(*upper) - x_of(*lower));
  return y_of(*lower) + w * (y_of(*upper) - y_of(*lower));
}

}  // namespace measured_pricing
}  // namespace

MeasuredRates::MeasuredRates(const HardwareProfile& profile, const Device& plain, const Fabric& fabric) {
  using namespace measured_pricing;
  for (const MeasuredGemm& g : profile.gemms) {
    if (!g.time) continue;
    const double model = fitted_gemm_s(plain, g.dtype, g.m, g.n, g.k);
    gemms_.push_back({g.dtype, std::log(g.m), std::log(g.n), std::log(g.k), std::log(g.time->median_s / model)});
    comparisons_.push_back({"gemm", g.id, g.time->median_s, model});
  }
  for (const MeasuredAttention& a : profile.attention) {
    if (!a.forward || !a.backward) continue;
    const double forward = fitted_attention_forward_s(plain, a);
    const double backward = kFlashBackwardOverForward * forward;
    attention_.push_back({a.causal, std::log(a.seq_len), std::log(a.forward->median_s / forward),
                          std::log(a.backward->median_s / backward)});
    comparisons_.push_back({"attention forward", a.id, a.forward->median_s, forward});
    comparisons_.push_back({"attention backward", a.id, a.backward->median_s, backward});
  }
  // Shapes measured more than once (several heads at one length): their mean log factor.
  std::sort(attention_.begin(), attention_.end(), [](const AttentionPoint& a, const AttentionPoint& b) {
    return std::tie(a.causal, a.log_seq) < std::tie(b.causal, b.log_seq);
  });
  std::vector<AttentionPoint> merged;
  std::vector<int> counts;
  for (const AttentionPoint& p : attention_) {
    if (!merged.empty() && merged.back().causal == p.causal && merged.back().log_seq == p.log_seq) {
      const double n = ++counts.back();
      merged.back().log_forward += (p.log_forward - merged.back().log_forward) / n;
      merged.back().log_backward += (p.log_backward - merged.back().log_backward) / n;
    } else {
      merged.push_back(p);
      counts.push_back(1);
    }
  }
  attention_ = std::move(merged);

  Fabric fitted_fabric = fabric;
  fitted_fabric.measured = nullptr;
  fitted_fabric.log = nullptr;
  for (const MeasuredCollective& c : profile.collectives) {
    if (!c.time || c.op == CollectiveOp::kSendRecv) continue;  // point-to-point: shown by the measurer only
    const GroupPlacement group = measured_group(c.ranks, profile);
    collectives_.push_back({c.op, c.ranks, group.nodes(), std::log(c.bytes), std::log(c.time->median_s)});
    double model = 0;
    switch (c.op) {
      case CollectiveOp::kAllReduce: model = all_reduce_s(c.bytes, group, fitted_fabric); break;
      case CollectiveOp::kAllGather: model = all_gather_s(c.bytes, group, fitted_fabric); break;
      case CollectiveOp::kReduceScatter: model = reduce_scatter_s(c.bytes, group, fitted_fabric); break;
      case CollectiveOp::kAllToAll: model = all_to_all_s(c.bytes, group, fitted_fabric); break;
      case CollectiveOp::kSendRecv: break;
    }
    comparisons_.push_back({to_string(c.op), c.id, c.time->median_s, model});
  }
  std::sort(collectives_.begin(), collectives_.end(), [](const CollectivePoint& a, const CollectivePoint& b) {
    return std::tie(a.op, a.ranks, a.nodes, a.log_bytes) < std::tie(b.op, b.ranks, b.nodes, b.log_bytes);
  });
  if (profile.memory_bandwidth_bytes_per_s) {
    bandwidth_ = profile.memory_bandwidth_bytes_per_s;
    // As seconds per GiB moved, so that the table reads like the others.
    comparisons_.push_back({"memory bandwidth", "1 GiB copied", 1073741824.0 / *bandwidth_, 1073741824.0 / plain.hbm_bytes_per_s});
  }
}

std::optional<double> MeasuredRates::gemm_factor(GemmDtype dtype, double m, double n, double k) const {
  const double lm = std::log(m), ln = std::log(n), lk = std::log(k);
  // Inside the measured box of every dimension only.
  bool any = false;
  double lo[3] = {INFINITY, INFINITY, INFINITY}, hi[3] = {-INFINITY, -INFINITY, -INFINITY};
  for (const GemmPoint& p : gemms_) {
    if (p.dtype != dtype) continue;
    any = true;
    const double v[3] = {p.log_m, p.log_n, p.log_k};
    for (int i = 0; i < 3; ++i) lo[i] = std::min(lo[i], v[i]), hi[i] = std::max(hi[i], v[i]);
  }
  if (!any) return std::nullopt;
  constexpr double kTolerance = 1e-9;
  const double q[3] = {lm, ln, lk};
  for (int i = 0; i < 3; ++i)
    if (q[i] < lo[i] - kTolerance || q[i] > hi[i] + kTolerance) return std::nullopt;
  // Inverse-distance weighting (Shepard 1968) of the log factors, power 2.
  double weights = 0, weighted = 0;
  for (const GemmPoint& p : gemms_) {
    if (p.dtype != dtype) continue;
    const double d2 = (p.log_m - lm) * (p.log_m - lm) + (p.log_n - ln) * (p.log_n - ln) + (p.log_k - lk) * (p.log_k - lk);
    if (d2 <= kTolerance * kTolerance) return std::exp(p.log_factor);
    weights += 1 / d2;
    weighted += p.log_factor / d2;
  }
  return std::exp(weighted / weights);
}

std::optional<MeasuredRates::AttentionFactors> MeasuredRates::attention_factors(bool causal, double seq_len) const {
  const auto first = std::find_if(attention_.begin(), attention_.end(), [&](const AttentionPoint& p) { return p.causal == causal; });
  const auto last = std::find_if(first, attention_.end(), [&](const AttentionPoint& p) { return p.causal != causal; });
  const double x = std::log(seq_len);
  auto log_seq = [](const AttentionPoint& p) { return p.log_seq; };
  const std::optional<double> forward =
      measured_pricing::interpolate(first, last, x, log_seq, [](const AttentionPoint& p) { return p.log_forward; });
  const std::optional<double> backward =
      measured_pricing::interpolate(first, last, x, log_seq, [](const AttentionPoint& p) { return p.log_backward; });
  if (!forward || !backward) return std::nullopt;
  return AttentionFactors{std::exp(*forward), std::exp(*backward)};
}

std::optional<double> MeasuredRates::collective_s(CollectiveOp op, int ranks, int nodes, double bytes) const {
  const auto first = std::find_if(collectives_.begin(), collectives_.end(), [&](const CollectivePoint& p) {
    return p.op == op && p.ranks == ranks && p.nodes == nodes;
  });
  const auto last = std::find_if(first, collectives_.end(), [&](const CollectivePoint& p) {
    return !(p.op == op && p.ranks == ranks && p.nodes == nodes);
  });
  if (first == last) return std::nullopt;
  // Above the largest measured message the collective runs in the bandwidth regime its measurement
  // shows: time in proportion to the bytes (a ring's latency term is negligible there).
  const CollectivePoint& largest = *(last - 1);
  if (std::log(bytes) > largest.log_bytes) return std::exp(largest.log_s) * bytes / std::exp(largest.log_bytes);
  const std::optional<double> log_s = measured_pricing::interpolate(
      first, last, std::log(bytes), [](const CollectivePoint& p) { return p.log_bytes; },
      [](const CollectivePoint& p) { return p.log_s; });
  if (!log_s) return std::nullopt;
  return std::exp(*log_s);
}

double measured_gemm_s(const Device& d, GemmDtype dtype, double model_s, double m, double n, double k) {
  if (m <= 0 || n <= 0 || k <= 0) return model_s;
  if (d.log) d.log->add(KernelLog::Gemm{.m = m, .n = n, .k = k, .dtype = dtype});
  if (d.measured)
    if (const std::optional<double> factor = d.measured->gemm_factor(dtype, m, n, k)) return model_s * *factor;
  return model_s;
}

}  // namespace paratune::cost_detail
