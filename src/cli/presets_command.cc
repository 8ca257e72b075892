// `paratune presets`: the model, GPU and cluster presets.
#include <fmt/format.h>

#include <cmath>
#include <iostream>
#include <memory>

#include "commands.h"
#include "output.h"
#include "paratune/cost/model_stats.h"
#include "paratune/spec/io.h"
#include "paratune/spec/presets.h"
#include "paratune/spec/units.h"

namespace paratune::cli {
namespace {

int run_presets(bool json) {
  if (json) {
    nlohmann::json j{{"models", model_preset_names()}, {"gpus", nlohmann::json::array()}, {"clusters", nlohmann::json::array()}};
    for (const auto& g : gpu_presets()) j["gpus"].push_back(to_json(g));
    for (const auto& c : cluster_presets()) {
      auto n = to_json(c.node);
      n["source"] = c.source;
      j["clusters"].push_back(n);
    }
    write_json(j);
    return 0;
  }
  // The counts the cost model uses (count_parameters), and the published ones where they differ by
  // more than 0.5% (the source's rounding, or what the model spec leaves out).
  std::cout << "models (parameters as paratune counts them; published in brackets where > 0.5% apart):\n";
  for (const auto& p : model_presets()) {
    const ParamCounts counted = count_parameters(p.spec);
    const auto differs = [](double a, double b) { return std::abs(a - b) > 0.005 * b; };
    const bool published_differs = differs(counted.total, p.published_total_params) ||
                                   differs(counted.active, p.published_active_params);
    std::cout << fmt::format("  {:<16} {:>8} total {:>8} active{}\n", p.spec.name, units::format_count(counted.total),
                             units::format_count(counted.active),
                             published_differs ? fmt::format("  [{} / {}]", units::format_count(p.published_total_params),
                                                             units::format_count(p.published_active_params))
                                               : "");
  }
  std::cout << "\ngpus:\n";
  for (const auto& g : gpu_presets())
    std::cout << fmt::format("  {:<12} {:>9}  bf16 {:>6.1f}  fp16 {:>6.1f}  fp8 {:>6.1f} TFLOP/s  HBM {}\n", g.name,
                             units::format_bytes(g.memory_bytes), g.peak_bf16_flops_per_s / 1e12,
                             g.peak_fp16_flops_per_s / 1e12, g.peak_fp8_flops_per_s / 1e12,
                             units::format_bandwidth(g.hbm_bandwidth_bytes_per_s));
  std::cout << "\nclusters (per node; use NAME:NODES):\n";
  for (const auto& c : cluster_presets())
    std::cout << fmt::format("  {:<22} {} x {:<10} intra {:>10}  inter {:>10}  ({})\n", c.node.name,
                             c.node.gpus_per_node, c.node.gpu.name,
                             units::format_bandwidth(c.node.intra_node_bandwidth_bytes_per_s),
                             units::format_bandwidth(c.node.inter_node_bandwidth_bytes_per_s), c.source);
  return 0;
}

}  // namespace

void add_presets_command(CLI::App& app, Commands& commands) {
  const auto json = std::make_shared<bool>(false);
  auto* presets = app.add_subcommand("presets", "list model, GPU and cluster presets");
  presets->add_flag("--json", *json, "machine-readable output");
  commands.push_back({presets, [json] { return run_presets(*json); }});
}

}  // namespace paratune::cli
