#include "paratune/cost/calibration.h"

#include <fmt/format.h>

#include "../spec/json_reader.h"
#include "paratune/spec/io.h"

namespace paratune {
namespace {

const std::vector<std::string> kKeys{
    "gemm_efficiency_max", "gemm_efficiency_by_gpu", "gemm_half_efficiency_dim", "attention_efficiency",
    "hbm_efficiency", "layer_overhead_s", "iteration_overhead_s", "intra_node_bandwidth_efficiency",
    "inter_node_bandwidth_efficiency", "tp_overlap", "dp_overlap", "cuda_context_bytes",
    "comm_buffer_bytes", "fragmentation"};

Calibration make_default() {
  // Fitted by `paratune calibrate --runs ../shared/calibration/published_runs.csv -o
  // data/calibration.json` (README, "Calibration"); a test checks this equals that file.
  Calibration c;
  c.attention_efficiency = 0.2813544388213262;
  c.comm_buffer_bytes = 536870912.0;
  c.cuda_context_bytes = 1073741824.0;
  c.dp_overlap = 0.8776683159773717;
  c.fragmentation = 0.1;
  c.gemm_efficiency_by_gpu["a100-40gb"] = 0.7259499263930691;
  c.gemm_efficiency_by_gpu["a100-80gb"] = 0.7259499263930691;
  c.gemm_efficiency_by_gpu["h100-sxm"] = 0.5959697700845995;
  c.gemm_efficiency_by_gpu["h200"] = 0.5959697700845995;
  c.gemm_efficiency_by_gpu["h800"] = 0.5959697700845995;
  c.gemm_efficiency_by_gpu["v100-32gb"] = 0.8984455500230987;
  c.gemm_efficiency_max = 0.8;
  c.gemm_half_efficiency_dim = 43.55863893429991;
  c.hbm_efficiency = 0.7708967421985041;
  c.inter_node_bandwidth_efficiency = 0.785133619264766;
  c.intra_node_bandwidth_efficiency = 0.7351460621785962;
  c.iteration_overhead_s = 0.005;
  c.layer_overhead_s = 1.788517541232501e-05;
  c.tp_overlap = 0.6;
  return c;
}

}  // namespace

const Calibration& default_calibration() {
  static const Calibration calibration = make_default();
  return calibration;
}

nlohmann::json to_json(const Calibration& c) {
  return {{"gemm_efficiency_max", c.gemm_efficiency_max},
          {"gemm_efficiency_by_gpu", c.gemm_efficiency_by_gpu},
          {"gemm_half_efficiency_dim", c.gemm_half_efficiency_dim},
          {"attention_efficiency", c.attention_efficiency},
          {"hbm_efficiency", c.hbm_efficiency},
          {"layer_overhead_s", c.layer_overhead_s},
          {"iteration_overhead_s", c.iteration_overhead_s},
          {"intra_node_bandwidth_efficiency", c.intra_node_bandwidth_efficiency},
          {"inter_node_bandwidth_efficiency", c.inter_node_bandwidth_efficiency},
          {"tp_overlap", c.tp_overlap},
          {"dp_overlap", c.dp_overlap},
          {"cuda_context_bytes", c.cuda_context_bytes},
          {"comm_buffer_bytes", c.comm_buffer_bytes},
          {"fragmentation", c.fragmentation}};
}

Calibration calibration_from_json(const nlohmann::json& doc, const std::string& source) {
  detail::JsonReader r(doc, source, kKeys);
  Calibration c = default_calibration();
  c.gemm_efficiency_max = r.get_double("gemm_efficiency_max", c.gemm_efficiency_max);
  if (const auto* by_gpu = r.get_object("gemm_efficiency_by_gpu")) {
    if (!by_gpu->is_object()) r.fail("gemm_efficiency_by_gpu", "must map GPU preset names to numbers");
    c.gemm_efficiency_by_gpu.clear();
    for (const auto& [gpu, value] : by_gpu->items()) {
      if (!value.is_number()) r.fail("gemm_efficiency_by_gpu." + gpu, value.dump() + " is not a number");
      c.gemm_efficiency_by_gpu[gpu] = value.get<double>();
    }
  }
  c.gemm_half_efficiency_dim = r.get_double("gemm_half_efficiency_dim", c.gemm_half_efficiency_dim);
  c.attention_efficiency = r.get_double("attention_efficiency", c.attention_efficiency);
  c.hbm_efficiency = r.get_double("hbm_efficiency", c.hbm_efficiency);
  c.layer_overhead_s = r.get_double("layer_overhead_s", c.layer_overhead_s);
  c.iteration_overhead_s = r.get_double("iteration_overhead_s", c.iteration_overhead_s);
  c.intra_node_bandwidth_efficiency = r.get_double("intra_node_bandwidth_efficiency", c.intra_node_bandwidth_efficiency);
  c.inter_node_bandwidth_efficiency = r.get_double("inter_node_bandwidth_efficiency", c.inter_node_bandwidth_efficiency);
  c.tp_overlap = r.get_double("tp_overlap", c.tp_overlap);
  c.dp_overlap = r.get_double("dp_overlap", c.dp_overlap);
  c.cuda_context_bytes = r.get_double("cuda_context_bytes", c.cuda_context_bytes);
  c.comm_buffer_bytes = r.get_double("comm_buffer_bytes", c.comm_buffer_bytes);
  c.fragmentation = r.get_double("fragmentation", c.fragmentation);
  r.finish();
  try {
    validate(c);
  } catch (const Error& e) {
    throw e.with_context(source);
  }
  return c;
}

Calibration load_calibration(const std::string& path) { return calibration_from_json(read_document(path), path); }

void validate(const Calibration& c) {
  auto fraction = [](const char* key, double v) {
    if (!(v > 0 && v <= 1)) throw Error(fmt::format("{}: {} must be in (0, 1]", key, v));
  };
  auto unit_interval = [](const char* key, double v) {
    if (!(v >= 0 && v <= 1)) throw Error(fmt::format("{}: {} must be in [0, 1]", key, v));
  };
  auto non_negative = [](const char* key, double v) {
    if (!(v >= 0)) throw Error(fmt::format("{}: {} must be >= 0", key, v));
  };
  fraction("gemm_efficiency_max", c.gemm_efficiency_max);
  for (const auto& [gpu, v] : c.gemm_efficiency_by_gpu)
    if (!(v > 0 && v <= 1)) throw Error(fmt::format("gemm_efficiency_by_gpu.{}: {} must be in (0, 1]", gpu, v));
  non_negative("gemm_half_efficiency_dim", c.gemm_half_efficiency_dim);
  fraction("attention_efficiency", c.attention_efficiency);
  fraction("hbm_efficiency", c.hbm_efficiency);
  non_negative("layer_overhead_s", c.layer_overhead_s);
  non_negative("iteration_overhead_s", c.iteration_overhead_s);
  fraction("intra_node_bandwidth_efficiency", c.intra_node_bandwidth_efficiency);
  fraction("inter_node_bandwidth_efficiency", c.inter_node_bandwidth_efficiency);
  unit_interval("tp_overlap", c.tp_overlap);
  unit_interval("dp_overlap", c.dp_overlap);
  non_negative("cuda_context_bytes", c.cuda_context_bytes);
  non_negative("comm_buffer_bytes", c.comm_buffer_bytes);
  non_negative("fragmentation", c.fragmentation);
}

}  // namespace paratune
