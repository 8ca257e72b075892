// The MoE dispatch and combine terms of the cost model (cost/moe.h expert_dispatch_s, deepep) next
// to the published DeepEP kernel measurements: "normal kernels with NVLink and RDMA forwarding" on
// H800 (~160 GB/s NVLink, one CX7 400 Gb/s NIC per GPU) in DeepSeek-V3's pretraining setting: 4096
// tokens per batch, hidden 7168, 256 experts, top-8, top-4 groups, FP8 dispatch, BF16 combine
// (deepseek-ai/DeepEP @dd758ca, docs/legacy.md "Performance").
//
// The source gives a bandwidth; its test (tests/legacy/test_internode.py, test_intranode.py) divides
// logical bytes by the kernel time: internode, one copy per token and distinct node *including its
// own* (num_rdma_token_sent), with a token's experts limited to num_topk_groups = 4 nodes;
// intranode, the tokens each rank receives, one per distinct rank including itself (recv_x). So the
// published time is those bytes over that bandwidth, and the model's time is compared with it.
// The model routes as the test does: one group per node, the top min(4, nodes) groups (cost/moe.h
// holders_reached). Not modelled: kernel launch and the notify step's latency.
//
// Run: build/bench/bench_moe_dispatch_vs_deepep   (no arguments; prints a Markdown table)
#include <fmt/format.h>

#include <algorithm>
#include <iostream>
#include <vector>

#include "../src/cost/moe.h"
#include "paratune/cost/calibration.h"
#include "paratune/cost/collectives.h"
#include "paratune/spec/io.h"

namespace {

using namespace paratune;

struct Published {
  int ep;
  double dispatch_gb_per_s, combine_gb_per_s;
  const char* link;  // the bottleneck the source names
};

}  // namespace

int main() {
  const std::vector<Published> published{
      {8, 153, 158, "NVLink"}, {16, 43, 43, "RDMA"}, {32, 58, 57, "RDMA"}, {64, 51, 50, "RDMA"}};
  const Calibration cal = default_calibration();
  MoeSpec moe;
  moe.num_experts = 256;
  moe.top_k = 8;
  constexpr double kTokens = 4096, kHidden = 7168, kTopkGroups = 4;
  const double fp8_bytes = kHidden * (1 + 4.0 / 128);  // FP8 values + one fp32 scale per 128
  const double bf16_bytes = kHidden * 2;
  std::cout << "| EP | bottleneck | logical copies per token | dispatch: published | model | error | combine: published "
               "| model | error |\n|---|---|---|---|---|---|---|---|---|\n";
  double sum_abs = 0;
  int n = 0;
  for (const Published& p : published) {
    const ClusterSpec cluster = load_cluster(fmt::format("hgx-h800:{}", std::max(1, p.ep / 8)));
    const Fabric fabric =
        make_fabric(cluster, cal.intra_node_bandwidth_efficiency, cal.inter_node_bandwidth_efficiency);
    const GroupPlacement group = place_group(p.ep, 1, cluster);
    const double nodes = group.nodes();
    moe.route_groups = static_cast<int>(nodes);
    moe.route_group_topk = static_cast<int>(std::min<double>(kTopkGroups, nodes));
    // The test's logical copies per token (its routing: top-8 among the experts of kTopkGroups nodes,
    // all nodes when there are no more): distinct ranks on one node, else distinct nodes, own
    // included. Counted independently of the model's groups: one group per node, as the test has it.
    double copies = 0;
    if (nodes <= 1) {
      copies = cost_detail::expected_distinct_holders(moe.num_experts, p.ep, moe.top_k);
    } else if (nodes <= kTopkGroups) {
      copies = cost_detail::expected_distinct_holders(moe.num_experts, nodes, moe.top_k);
    } else {
      copies = cost_detail::expected_distinct_holders(moe.num_experts * kTopkGroups / nodes, kTopkGroups, moe.top_k);
    }
    auto row = [&](double token_bytes, double published_gb_per_s, double* error_pct) {
      const double published_s = copies * kTokens * token_bytes / (published_gb_per_s * 1e9);
      const double model_s =
          cost_detail::expert_dispatch_s(kTokens, token_bytes, moe, MoeDispatcher::kDeepEP, group, fabric);
      *error_pct = 100 * (model_s / published_s - 1);
      sum_abs += std::abs(*error_pct);
      ++n;
      return fmt::format("{:.0f} us | {:.0f} us", published_s * 1e6, model_s * 1e6);
    };
    double e_dispatch = 0, e_combine = 0;
    const std::string dispatch = row(fp8_bytes, p.dispatch_gb_per_s, &e_dispatch);
    const std::string combine = row(bf16_bytes, p.combine_gb_per_s, &e_combine);
    std::cout << fmt::format("| {} | {} | {:.2f} | {} | {:+.0f}% | {} | {:+.0f}% |\n", p.ep, p.link, copies, dispatch,
                             e_dispatch, combine, e_combine);
  }
  std::cout << fmt::format(
      "\nmean |error| {:.1f}% over {} published figures (paratune's model prediction against the time implied by "
      "DeepEP's measured bandwidth)\n",
      sum_abs / n, n);
  return 0;
}
