// The routed experts' GEMMs as the cost model prices them (cost/layer_cost.cc: local experts x
// (FC1 + FC2) GEMMs of tokens-per-expert rows, each at peak x gemm_efficiency x f(m)f(n)f(k) or at HBM
// speed, cost/device.h gemm_at_s) next to the same GEMMs measured on one H200 by
// bench/gpu/moe_expert_gemms.py (issue 41: "grouped GEMMs whose efficiency falls with tokens per expert
// and expert width"). Measured two ways the frameworks run them: one CUTLASS grouped-GEMM kernel
// (torch._grouped_mm, torchtitan) and one cuBLAS GEMM per expert (Transformer Engine's GroupedLinear,
// Megatron-Core), each replayed from a CUDA graph (the GPU's time alone) and the per-expert GEMMs also
// as PyTorch issues them. The model's time is compared with the faster replayed way, forward; the
// measured backward (input + weight gradients of the grouped kernel) is set beside the model's 2x.
//
// The model here is the GPU time on one GPU at the shipped calibration (no jitter, no power cap, as
// `paratune profile` compares). The host's issue time (operators x op_issue_s) is a separate term of
// the model (cost/host_issue.h); the measurement's per-launch host cost is printed beside it.
//
// Run: build/bench/bench_moe_expert_gemms [MEASURED.json]   (default: the H200 measurement shipped in
// data/profiles/; prints a Markdown table)
#include <fmt/format.h>

#include <array>
#include <cmath>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "../src/cost/device.h"
#include "paratune/cost/calibration.h"
#include "paratune/spec/io.h"

namespace {

using namespace paratune;

// Mean |ln(model / measured)| over a band of tokens per expert, as percent.
struct Band {
  const char* name;
  double below;  // tokens per expert under this (the bands are in order)
  double sum = 0;
  int n = 0;
  void add(double model_s, double measured_s) {
    sum += std::abs(std::log(model_s / measured_s));
    ++n;
  }
  [[nodiscard]] std::string text() const { return n ? fmt::format("{:.1f}% ({} points)", 100 * sum / n, n) : "-"; }
};

}  // namespace

int main(int argc, char** argv) {
  const std::string path =
      argc > 1 ? argv[1] : std::string(PARATUNE_SOURCE_DIR) + "/data/profiles/h200-moe-expert-gemms-2026-11-28.json";
  std::ifstream in(path);
  if (!in) {
    std::cerr << "bench_moe_expert_gemms: cannot read " << path << "\n";
    return 2;
  }
  nlohmann::json measured;
  try {
    measured = nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    std::cerr << "bench_moe_expert_gemms: " << path << ": not JSON: " << e.what() << "\n";
    return 2;
  }
  // The GPU the measurement names (PyTorch's device name), as a preset.
  const std::string device = measured.at("device").get<std::string>();
  const char* preset = device.find("H200") != std::string::npos   ? "h200x1"
                       : device.find("H100") != std::string::npos ? "h100-sxmx1"
                                                                  : nullptr;
  if (!preset) {
    std::cerr << "bench_moe_expert_gemms: " << path << ": device '" << device
              << "': only an H100 or H200 measurement is compared (a preset for it is needed)\n";
    return 2;
  }
  const Calibration cal = default_calibration();
  const GpuSpec gpu = load_cluster(preset).gpu;
  const double peak = gpu.peak_flops_per_s(Precision::kBF16);
  const double efficiency = cal.gemm_efficiency_for(gpu.name);
  const double hbm = gpu.hbm_bandwidth_bytes_per_s * cal.hbm_efficiency;
  auto gemm = [&](double m, double n, double k) {
    return cost_detail::gemm_at_s(peak, efficiency, cal.gemm_half_efficiency_dim, hbm, m, n, k);
  };

  const nlohmann::json& floors = measured.at("floors");
  std::cout << fmt::format(
      "Measured on {} (PyTorch {}, CUDA {}), {}, median of {} runs after {} warm-up runs each.\n\n"
      "Single-launch floor: a {} GEMM takes {:.1f} us timed alone, {:.1f} us each issued back to back, {:.1f} us "
      "each replayed from a CUDA graph; the host issues one torch.mm in {:.1f} us (the shipped op_issue_s: "
      "{:.1f} us per operator).\n\n",
      device, measured.at("torch").get<std::string>(),
      measured.at("cuda").get<std::string>(), measured.at("created_utc").get<std::string>(),
      measured.at("repetitions").get<int>(), measured.at("warmup").get<int>(), floors.at("gemm").get<std::string>(),
      1e3 * floors.at("alone_ms").get<double>(), 1e3 * floors.at("back_to_back_ms").get<double>(),
      1e3 * floors.at("graph_ms").get<double>(), floors.at("host_issue_us").get<double>(), 1e6 * cal.op_issue_s);
  std::cout << "| model | local experts | tokens per expert | grouped kernel (replayed) | per-expert GEMMs "
               "(replayed) | model | model / faster | per-expert GEMMs as issued | grouped backward / forward (both as "
               "issued) |\n"
               "|---|--:|--:|--:|--:|--:|--:|--:|--:|\n";
  std::array<Band, 3> bands{Band{"under 256", 256}, Band{"256-1023", 1024}, Band{"1024 and more", 1e300}};
  Band all{"all", 1e300};
  auto ms = [](const nlohmann::json& p, const char* key) {
    return p.contains(key) ? fmt::format("{:.3f} ms", p.at(key).get<double>()) : std::string("-");
  };
  for (const nlohmann::json& p : measured.at("points")) {
    const double experts = p.at("experts"), tokens = p.at("tokens_per_expert");
    const double hidden = p.at("hidden"), ffn = p.at("ffn");
    // The GPU's time: each way replayed from a CUDA graph (no host launches between the kernels).
    std::optional<double> faster_s;
    for (const char* key : {"loop_graph_ms", "grouped_graph_ms"})
      if (p.contains(key)) faster_s = std::min(faster_s.value_or(1e300), p.at(key).get<double>() / 1e3);
    if (!faster_s) continue;  // neither way could be replayed
    // Gated experts (SwiGLU): FC1 H -> 2F, FC2 F -> H, as cost/layer_cost.cc prices them.
    const double model_s = experts * (gemm(tokens, 2 * ffn, hidden) + gemm(tokens, hidden, ffn));
    std::find_if(bands.begin(), bands.end(), [&](const Band& b) { return tokens < b.below; })->add(model_s, *faster_s);
    all.add(model_s, *faster_s);
    const std::string backward =
        p.contains("grouped_backward_ms") && p.contains("grouped_ms")
            ? fmt::format("{:.2f}", p.at("grouped_backward_ms").get<double>() / p.at("grouped_ms").get<double>())
            : "-";
    std::cout << fmt::format("| {} | {:.0f} | {:.0f} | {} | {} | {:.3f} ms | {:.2f} | {} | {} |\n",
                             p.at("model").get<std::string>(), experts, tokens, ms(p, "grouped_graph_ms"),
                             ms(p, "loop_graph_ms"), model_s * 1e3, model_s / *faster_s, ms(p, "loop_ms"), backward);
  }
  std::cout << "\nmean |ln(model / measured)| by tokens per expert (measured: the faster way, replayed):\n\n";
  for (const Band& b : bands) std::cout << fmt::format("- {}: {}\n", b.name, b.text());
  std::cout << fmt::format("- {}: {}\n", all.name, all.text());
  return 0;
}
