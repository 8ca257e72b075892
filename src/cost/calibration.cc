#include "paratune/cost/calibration.h"

#include <fmt/format.h>

#include <cmath>

#include "../spec/json_reader.h"
#include "paratune/spec/io.h"

namespace paratune {
namespace {

Calibration make_default() {
  // Fitted by `paratune calibrate --runs data/published-runs/published_runs.csv -o
  // data/calibration.json` (docs/calibration.md); a test checks this equals that file.
  Calibration c;
  c.attention_efficiency = 0.5248128699916591;
  for (const char* gpu : {"b200", "b300", "gb200", "gb300"}) c.attention_efficiency_by_gpu[gpu] = 0.4653305821332159;
  for (const char* gpu : {"h100-sxm", "h200", "h800"}) c.attention_efficiency_by_gpu[gpu] = 0.3893213175293545;
  c.attention_half_kv_tokens = 1960.2620853246083;
  c.comm_buffer_bytes = 536870912.0;
  c.cuda_context_bytes = 1073741824.0;
  c.dp_overlap = 0.8280007558284496;
  c.ep_overlap = 0.5409170989120917;
  for (const char* gpu : {"h100-sxm", "h200", "h800"}) c.flash_attention_2_speed_by_gpu[gpu] = 0.6730611926200272;
  c.fp8_attention_speed = 1.3253165238536464;
  c.fp8_block_scaled_gemm_efficiency = 0.8364491885533626;
  c.fp8_gemm_efficiency = 0.8948074352999272;
  c.fragmentation = 0.1;
  for (const char* gpu : {"a100-40gb", "a100-80gb"}) c.gemm_efficiency_by_gpu[gpu] = 0.8116183528713323;
  for (const char* gpu : {"b200", "b300"}) c.gemm_efficiency_by_gpu[gpu] = 0.6246764915390857;
  c.gemm_efficiency_by_gpu["gb200"] = 0.5490153236344264;
  c.gemm_efficiency_by_gpu["gb300"] = 0.6654194603920596;
  for (const char* gpu : {"h100-sxm", "h200", "h800"}) c.gemm_efficiency_by_gpu[gpu] = 0.7287907071974044;
  c.gemm_efficiency_by_gpu["v100-32gb"] = 0.8914445522475742;
  c.gemm_efficiency_max = 0.8;
  c.gemm_half_efficiency_dim = 98.12555996272158;
  c.hbm_efficiency = 0.841797773002825;
  c.inter_node_bandwidth_efficiency = 0.8592955230752584;
  c.intra_node_bandwidth_efficiency = 0.7241354732393509;
  c.iteration_overhead_s = 0.005;
  c.moe_load_imbalance = 1.195848061539797;
  c.nccl_bytes_per_communicator = 150994944.0;
  c.op_issue_s = 8.376320798403049e-06;
  c.overlap_interference = 0.1150303489155392;
  c.pipeline_chunk_overhead_s = 5.2134149008357695e-05;
  c.power_clock_exponent = 0.35671743886575114;
  c.step_jitter_cv = 0.012614329287043813;
  c.tp_overlap = 0.6;
  return c;
}

}  // namespace

const std::vector<CalibrationGpuMap>& calibration_gpu_maps() {
  static const std::vector<CalibrationGpuMap> maps{
      {"gemm_efficiency_by_gpu", &Calibration::gemm_efficiency_by_gpu},
      {"attention_efficiency_by_gpu", &Calibration::attention_efficiency_by_gpu},
      {"flash_attention_2_speed_by_gpu", &Calibration::flash_attention_2_speed_by_gpu},
  };
  return maps;
}

const std::vector<CalibrationField>& calibration_fields() {
  using R = CalibrationRange;
  static const std::vector<CalibrationField> fields{
      {"gemm_efficiency_max", &Calibration::gemm_efficiency_max, R::kFraction, ""},
      {"gemm_half_efficiency_dim", &Calibration::gemm_half_efficiency_dim, R::kNonNegative, ""},
      {"attention_efficiency", &Calibration::attention_efficiency, R::kFraction, ""},
      {"attention_half_kv_tokens", &Calibration::attention_half_kv_tokens, R::kNonNegative, "tokens"},
      {"hbm_efficiency", &Calibration::hbm_efficiency, R::kFraction, ""},
      {"power_clock_exponent", &Calibration::power_clock_exponent, R::kUnitInterval, ""},
      {"op_issue_s", &Calibration::op_issue_s, R::kNonNegative, "s"},
      {"iteration_overhead_s", &Calibration::iteration_overhead_s, R::kNonNegative, "s"},
      {"pipeline_chunk_overhead_s", &Calibration::pipeline_chunk_overhead_s, R::kNonNegative, "s"},
      {"fp8_gemm_efficiency", &Calibration::fp8_gemm_efficiency, R::kFraction, ""},
      {"fp8_block_scaled_gemm_efficiency", &Calibration::fp8_block_scaled_gemm_efficiency, R::kFraction, ""},
      {"fp8_attention_speed", &Calibration::fp8_attention_speed, R::kAtLeastOne, ""},
      {"moe_load_imbalance", &Calibration::moe_load_imbalance, R::kAtLeastOne, ""},
      {"ep_overlap", &Calibration::ep_overlap, R::kUnitInterval, ""},
      {"intra_node_bandwidth_efficiency", &Calibration::intra_node_bandwidth_efficiency, R::kFraction, ""},
      {"inter_node_bandwidth_efficiency", &Calibration::inter_node_bandwidth_efficiency, R::kFraction, ""},
      {"tp_overlap", &Calibration::tp_overlap, R::kUnitInterval, ""},
      {"dp_overlap", &Calibration::dp_overlap, R::kUnitInterval, ""},
      {"overlap_interference", &Calibration::overlap_interference, R::kUnitInterval, ""},
      {"step_jitter_cv", &Calibration::step_jitter_cv, R::kUnitInterval, ""},
      {"cuda_context_bytes", &Calibration::cuda_context_bytes, R::kNonNegative, "bytes"},
      {"comm_buffer_bytes", &Calibration::comm_buffer_bytes, R::kNonNegative, "bytes"},
      {"nccl_bytes_per_communicator", &Calibration::nccl_bytes_per_communicator, R::kNonNegative, "bytes"},
      {"fragmentation", &Calibration::fragmentation, R::kNonNegative, ""},
  };
  return fields;
}

const Calibration& default_calibration() {
  static const Calibration calibration = make_default();
  return calibration;
}

nlohmann::json to_json(const Calibration& c) {
  nlohmann::json out = nlohmann::json::object();
  for (const CalibrationField& f : calibration_fields()) out[f.name] = c.*f.member;
  for (const CalibrationGpuMap& m : calibration_gpu_maps()) out[m.name] = c.*m.member;
  return out;
}

Calibration calibration_from_json(const nlohmann::json& doc, const std::string& source) {
  std::vector<std::string> keys;
  for (const CalibrationGpuMap& m : calibration_gpu_maps()) keys.emplace_back(m.name);
  for (const CalibrationField& f : calibration_fields()) keys.emplace_back(f.name);
  detail::JsonReader r(doc, source, keys);
  Calibration c = default_calibration();
  for (const CalibrationField& f : calibration_fields()) c.*f.member = r.get_double(f.name, c.*f.member);
  for (const CalibrationGpuMap& m : calibration_gpu_maps()) {
    const auto* by_gpu = r.get_object(m.name);
    if (!by_gpu) continue;
    if (!by_gpu->is_object()) r.fail(m.name, "must map GPU preset names to numbers");
    (c.*m.member).clear();
    for (const auto& [gpu, value] : by_gpu->items()) {
      if (!value.is_number()) r.fail(std::string(m.name) + "." + gpu, value.dump() + " is not a number");
      (c.*m.member)[gpu] = value.get<double>();
    }
  }
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
  auto check = [](const std::string& key, double v, CalibrationRange range) {
    switch (range) {
      case CalibrationRange::kFraction:
        if (!(v > 0 && v <= 1)) throw Error(fmt::format("{}: {} must be in (0, 1]", key, v));
        break;
      case CalibrationRange::kUnitInterval:
        if (!(v >= 0 && v <= 1)) throw Error(fmt::format("{}: {} must be in [0, 1]", key, v));
        break;
      case CalibrationRange::kNonNegative:
        if (!(v >= 0 && std::isfinite(v))) throw Error(fmt::format("{}: {} must be a finite number >= 0", key, v));
        break;
      case CalibrationRange::kAtLeastOne:
        if (!(v >= 1 && std::isfinite(v))) throw Error(fmt::format("{}: {} must be a finite number >= 1", key, v));
        break;
    }
  };
  for (const CalibrationField& f : calibration_fields()) check(f.name, c.*f.member, f.range);
  for (const CalibrationGpuMap& m : calibration_gpu_maps())
    for (const auto& [gpu, v] : c.*m.member) check(std::string(m.name) + "." + gpu, v, CalibrationRange::kFraction);
}

}  // namespace paratune
