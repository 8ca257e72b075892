// Hardware profiles (issue 45): reading and checking them, the prices they give kernels (hand-worked
// interpolation), the plan of what to measure, and the estimate they change.
#include "paratune/cost/hardware_profile.h"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <string>

#include "../../src/cost/device.h"
#include "../../src/cost/measured_rates.h"
#include "../test_util.h"
#include "paratune/calib/profile_fit.h"
#include "paratune/cost/estimate.h"
#include "paratune/cost/profile_plan.h"
#include "paratune/spec/error.h"
#include "paratune/spec/io.h"

namespace paratune {
namespace hardware_profile_test {

using nlohmann::json;

json timing(double median_s) { return {{"median_s", median_s}, {"p10_s", median_s}, {"p90_s", median_s}, {"repetitions", 3}}; }

json with_timing(json entry, double median_s) {
  entry.update(timing(median_s));
  return entry;
}

// A profile of llama3-8b on an H100 in BF16 with the given lists.
json profile_document(const json& gemms = json::array(), const json& attention = json::array(),
                      const json& collectives = json::array(), int world_size = 2) {
  return {{"format", kHardwareProfileFormat},
          {"version", kHardwareProfileVersion},
          {"plan",
           {{"model", "llama3-8b"},
            {"model_fingerprint", model_fingerprint(load_model("llama3-8b"))},
            {"gpu", "h100-sxm"},
            {"precision", "bf16"}}},
          {"device", {{"backend", "cuda"}, {"name", "NVIDIA H100 80GB HBM3"}, {"world_size", world_size}, {"nodes", 1}}},
          {"gemms", gemms},
          {"attention", attention},
          {"collectives", collectives}};
}

std::string error_of(const json& document) {
  try {
    parse_hardware_profile(document, "p.json");
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(HardwareProfile, ReadsWhatTheMeasurerWrites) {
  const HardwareProfile p = parse_hardware_profile(
      profile_document({with_timing({{"id", "g"}, {"m", 8}, {"n", 16}, {"k", 32}, {"dtype", "bf16"}}, 1e-3),
                        {{"id", "skipped fp8"}, {"m", 8}, {"n", 16}, {"k", 32}, {"dtype", "fp8"}, {"skipped", "no FP8 here"}}}),
      "p.json");
  ASSERT_EQ(p.gemms.size(), 2U);
  EXPECT_EQ(p.gemms[0].m, 8);
  ASSERT_TRUE(p.gemms[0].time);
  EXPECT_DOUBLE_EQ(p.gemms[0].time->median_s, 1e-3);
  EXPECT_FALSE(p.gemms[1].time);
  EXPECT_EQ(p.gemms[1].skipped, "no FP8 here");
  EXPECT_EQ(p.world_size, 2);
  EXPECT_EQ(p.gpu, "h100-sxm");
}

TEST(HardwareProfile, BadFieldsNameTheFileTheEntryTheFieldAndTheRule) {
  json doc = profile_document();
  doc["format"] = "something else";
  EXPECT_NE(error_of(doc).find("p.json: format: 'something else' is not 'paratune-hardware-profile'"), std::string::npos)
      << error_of(doc);
  doc = profile_document();
  doc["version"] = 2;
  EXPECT_NE(error_of(doc).find("version: 2 is not 1"), std::string::npos) << error_of(doc);
  json gemm = with_timing({{"id", "qkv"}, {"m", 8}, {"n", 16}, {"k", 32}, {"dtype", "bf16"}}, 1e-3);
  gemm["p10_s"] = 2e-3;
  EXPECT_NE(error_of(profile_document(json::array({gemm}))).find("gemms[0] (qkv): median_s: p10_s 0.002 <= median_s 0.001"),
            std::string::npos)
      << error_of(profile_document(json::array({gemm})));
  gemm = with_timing({{"id", "qkv"}, {"m", 0}, {"n", 16}, {"k", 32}, {"dtype", "bf16"}}, 1e-3);
  EXPECT_NE(error_of(profile_document(json::array({gemm}))).find("gemms[0] (qkv): m: 0 must be a whole number from 1 to 2^53"),
            std::string::npos);
  gemm = with_timing({{"id", "qkv"}, {"m", 8}, {"n", 16}, {"k", 32}, {"dtype", "int4"}}, 1e-3);
  EXPECT_NE(error_of(profile_document(json::array({gemm}))).find("dtype: 'int4' is not a GEMM dtype"), std::string::npos);
  gemm = with_timing({{"id", "qkv"}, {"m", 8}, {"n", 16}, {"k", 32}, {"dtype", "bf16"}}, -1);
  EXPECT_NE(error_of(profile_document(json::array({gemm}))).find("must be a time in seconds, > 0"), std::string::npos);
  gemm = {{"id", "qkv"}, {"m", 8}, {"n", 16}, {"k", 32}, {"dtype", "bf16"}};
  EXPECT_NE(error_of(profile_document(json::array({gemm}))).find("median_s: is required (or give `skipped` with the reason)"),
            std::string::npos);
  doc = profile_document();
  doc["bogus"] = 1;
  EXPECT_NE(error_of(doc).find("unknown key 'bogus'"), std::string::npos);
  const json collective = with_timing({{"id", "ar"}, {"op", "broadcast"}, {"ranks", 2}, {"bytes", 1024}}, 1e-3);
  EXPECT_NE(error_of(profile_document({}, {}, json::array({collective}))).find("op: 'broadcast' is not a collective"), std::string::npos);
}

// A hand-edited file's values that used to pass: a world of 2^31 - 1 ranks (placing a collective's
// group on nodes that large hung), more nodes than ranks, a device name that is a number (an
// internal error in `paratune profile`'s table), no precision (read as bf16), an entry or a shape
// given twice (one silently unused; two times at one collective size priced a step 45x slower),
// a collective timed on more ranks than the measurer had, a copy rate of 1e-300 B/s (infinite
// seconds, reported as a bad --config) and a negative byte count.
TEST(HardwareProfile, HostileValuesAreRefusedNamingTheEntryTheFieldTheValueAndTheRule) {
  auto expect_error = [](const json& doc, const std::string& expected) {
    const std::string error = error_of(doc);
    EXPECT_NE(error.find(expected), std::string::npos) << "expected: " << expected << "\ngot: " << error;
  };
  json doc = profile_document();
  doc["device"]["world_size"] = 2147483647;
  expect_error(doc, "p.json: device: world_size: 2147483647 must be a whole number from 1 to 16777216");
  doc = profile_document();
  doc["device"]["nodes"] = 4;
  expect_error(doc, "p.json: device: nodes: 4 must be a whole number from 1 to 2");
  doc = profile_document();
  doc["device"]["name"] = 5;
  expect_error(doc, "p.json: device: name: 5 is not a string");
  doc = profile_document();
  doc["plan"].erase("precision");
  expect_error(doc, "p.json: plan: precision: is required");

  const json gemm = with_timing({{"id", "qkv"}, {"m", 8}, {"n", 16}, {"k", 32}, {"dtype", "bf16"}}, 1e-3);
  json other = gemm;
  other["m"] = 16;
  expect_error(profile_document({gemm, other}), "p.json: gemms[1] (qkv): id: 'qkv' is also the id of gemms[0]");
  other = gemm;
  other["id"] = "qkv again";
  other["median_s"] = other["p90_s"] = 2e-3;
  expect_error(profile_document({gemm, other}),
               "p.json: gemms[1] (qkv again): measures the GEMM 8x16x32 in bf16, as gemms[0] (qkv) does: each shape is "
               "measured once");
  const json ar = with_timing({{"id", "ar"}, {"op", "all_reduce"}, {"ranks", 2}, {"bytes", 1048576}}, 1e-3);
  json ar2 = with_timing({{"id", "ar2"}, {"op", "all_reduce"}, {"ranks", 2}, {"bytes", 1048576}}, 0.5);
  expect_error(profile_document({}, {}, {ar, ar2}),
               "collectives[1] (ar2): measures all_reduce of 1048576 bytes on 2 ranks");
  json wide = with_timing({{"id", "ar8"}, {"op", "all_reduce"}, {"ranks", 8}, {"bytes", 1048576}}, 1e-3);
  expect_error(profile_document({}, {}, json::array({wide})),
               "p.json: collectives[0] (ar8): ranks: 8 must be at most the device's world_size (2)");
  wide = {
      {"id", "ar8"}, {"op", "all_reduce"}, {"ranks", 8}, {"bytes", 1048576}, {"skipped", "8 ranks in a world of 2"}};
  EXPECT_EQ(error_of(profile_document({}, {}, json::array({wide}))), "") << "the measurer writes such an entry back skipped";

  doc = profile_document();
  doc["memory_bandwidth"] = with_timing({{"bytes_per_s", 1e-300}}, 1e-3);
  expect_error(doc, "p.json: memory_bandwidth: bytes_per_s: 1e-300 must be a rate from 1e6 to 1e15 bytes per second");
  doc = profile_document();
  doc["elementwise"] = {
      with_timing({{"id", "add"}, {"kind", "add"}, {"rows", 8}, {"cols", 8}, {"bytes_moved", -5}}, 1e-3)};
  expect_error(doc, "p.json: elementwise[0] (add): bytes_moved: -5 must be a number of bytes >= 0");
}

TEST(HardwareProfile, RefusesAnotherGpuModelOrPrecisionWithTheReason) {
  const HardwareProfile p = parse_hardware_profile(profile_document(), "p.json");
  const ModelSpec llama3 = load_model("llama3-8b");
  const ClusterSpec h100 = testing::dgx_h100(1);
  const TrainingSpec bf16 = testing::training(4096, 8);
  EXPECT_NO_THROW(check_profile_applies(p, llama3, h100, bf16));
  auto reason = [&](const ModelSpec& m, const ClusterSpec& c, const TrainingSpec& t) {
    try {
      check_profile_applies(p, m, c, t);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_NE(reason(llama3, load_cluster("dgx-a100:1"), bf16).find("measured on GPU 'h100-sxm', but the cluster's GPU is 'a100-80gb'"),
            std::string::npos);
  EXPECT_NE(reason(load_model("llama2-7b"), h100, bf16).find("measured for model 'llama3-8b'"), std::string::npos);
  TrainingSpec fp8 = bf16;
  fp8.precision = Precision::kFP8;
  EXPECT_NE(reason(llama3, h100, fp8).find("measured in bf16, but this training runs in fp8"), std::string::npos);
  // The depth is not part of a model's shapes: a shallower llama3-8b is the same model to a profile.
  ModelSpec shallow = llama3;
  shallow.num_layers = 4;
  EXPECT_EQ(model_fingerprint(shallow), model_fingerprint(llama3));
}

// A device whose fitted times are easy by hand: GEMMs at 1 TFLOP/s whatever their shape (no roll-off,
// no memory bound), attention at 1 TFLOP/s.
cost_detail::Device hand_device() {
  return cost_detail::Device{.linear_peak_flops_per_s = 1e12,
                             .linear_efficiency_max = 1,
                             .bf16_peak_flops_per_s = 1e12,
                             .bf16_efficiency_max = 1,
                             .half_dim = 0,
                             .attention_flops_per_s = 1e12,
                             .attention_half_kv_tokens = 0,
                             .hbm_bytes_per_s = 1e30};
}

TEST(HardwareProfile, GemmsAreMeasuredAtTheirShapesAndInterpolatedBetweenThem) {
  // 1024^3 measured at 2x its fitted 2·1024^3 / 1e12 s, 4096^3 at 0.5x.
  auto gemm = [](double d, double factor) {
    return with_timing({{"id", fmt::format("g{}", d)}, {"m", d}, {"n", d}, {"k", d}, {"dtype", "bf16"}},
                       factor * 2 * d * d * d / 1e12);
  };
  const HardwareProfile p = parse_hardware_profile(profile_document({gemm(1024, 2), gemm(4096, 0.5)}), "p.json");
  const cost_detail::MeasuredRates rates(p, hand_device(), make_fabric(testing::dgx_h100(1)));
  EXPECT_NEAR(*rates.gemm_factor(GemmDtype::kBF16, 1024, 1024, 1024), 2.0, 1e-12);
  // Halfway in every log dimension: equal weights, log factors ln 2 and -ln 2: factor 1.
  EXPECT_NEAR(*rates.gemm_factor(GemmDtype::kBF16, 2048, 2048, 2048), 1.0, 1e-12);
  // (2048, 1024, 1024): squared log distances (ln 2)^2 and 9 (ln 2)^2, weights 1 and 1/9:
  // log factor = (ln 2 - ln 2 / 9) / (10 / 9) = 0.8 ln 2.
  EXPECT_NEAR(*rates.gemm_factor(GemmDtype::kBF16, 2048, 1024, 1024), std::pow(2.0, 0.8), 1e-12);
  EXPECT_FALSE(rates.gemm_factor(GemmDtype::kBF16, 8192, 2048, 2048)) << "outside the measured box: the fitted model";
  EXPECT_FALSE(rates.gemm_factor(GemmDtype::kFP8, 1024, 1024, 1024)) << "no FP8 measured";
}

TEST(HardwareProfile, AttentionIsInterpolatedInLogSequenceLength) {
  // One sequence of s tokens, 8 heads of 64, causal: fitted forward 2·s·s·128·8·0.5 / 1e12 s, backward 2.5x.
  auto row = [](int s, double forward_factor, double backward_factor) {
    const double forward = 2.0 * s * s * 128 * 8 * 0.5 / 1e12;
    return json{{"id", fmt::format("s{}", s)}, {"batch", 1},  {"seq_len", s}, {"heads", 8}, {"kv_heads", 8},
                {"head_dim", 64},              {"causal", true}, {"forward", timing(forward_factor * forward)},
                {"backward", timing(backward_factor * 2.5 * forward)}};
  };
  const HardwareProfile p = parse_hardware_profile(profile_document({}, {row(1024, 2, 3), row(4096, 1, 1)}), "p.json");
  const cost_detail::MeasuredRates rates(p, hand_device(), make_fabric(testing::dgx_h100(1)));
  const auto at_1024 = rates.attention_factors(true, 1024);
  ASSERT_TRUE(at_1024);
  EXPECT_NEAR(at_1024->forward, 2, 1e-9);
  EXPECT_NEAR(at_1024->backward, 3, 1e-9);
  const auto at_2048 = rates.attention_factors(true, 2048);  // halfway in log length
  ASSERT_TRUE(at_2048);
  EXPECT_NEAR(at_2048->forward, std::sqrt(2.0), 1e-9);
  EXPECT_NEAR(at_2048->backward, std::sqrt(3.0), 1e-9);
  EXPECT_FALSE(rates.attention_factors(true, 8192));
  EXPECT_FALSE(rates.attention_factors(false, 2048)) << "non-causal attention was not measured";
}

TEST(HardwareProfile, CollectivesAreMeasuredTimesInterpolatedAndScaledInTheBandwidthRegime) {
  auto ar = [](double mib, double s) {
    return with_timing({{"id", fmt::format("ar{}", mib)}, {"op", "all_reduce"}, {"ranks", 2}, {"bytes", mib * 1048576}}, s);
  };
  const HardwareProfile p = parse_hardware_profile(profile_document({}, {}, {ar(1, 1e-4), ar(4, 2e-4)}), "p.json");
  const cost_detail::MeasuredRates rates(p, hand_device(), make_fabric(testing::dgx_h100(1)));
  EXPECT_NEAR(*rates.collective_s(CollectiveOp::kAllReduce, 2, 1, 1048576), 1e-4, 1e-15);
  // 2 MiB: halfway in log bytes between 1 and 4 MiB, so halfway in log time: 1e-4 x sqrt(2).
  EXPECT_NEAR(*rates.collective_s(CollectiveOp::kAllReduce, 2, 1, 2 * 1048576), 1e-4 * std::sqrt(2.0), 1e-15);
  // 8 MiB: twice the largest measured message, twice its time.
  EXPECT_NEAR(*rates.collective_s(CollectiveOp::kAllReduce, 2, 1, 8 * 1048576), 4e-4, 1e-15);
  EXPECT_FALSE(rates.collective_s(CollectiveOp::kAllReduce, 2, 1, 512 * 1024)) << "below the smallest: fitted";
  EXPECT_FALSE(rates.collective_s(CollectiveOp::kAllReduce, 4, 1, 1048576)) << "another group size";
  EXPECT_FALSE(rates.collective_s(CollectiveOp::kAllGather, 2, 1, 1048576)) << "another operation";
}

ClusterSpec one_h100() {
  ClusterSpec c = testing::dgx_h100(1);
  c.gpus_per_node = 1;
  return c;
}

TEST(HardwareProfile, ThePlanListsTheKernelsTheModelPricesAtTheirExactShapes) {
  const ModelSpec llama3 = load_model("llama3-8b");
  ClusterSpec two = testing::dgx_h100(1);
  two.gpus_per_node = 2;
  ProfilePlanOptions options;
  options.configs = {parse_parallel_config("dp=2,mbs=1"), parse_parallel_config("tp=2,mbs=1")};
  const nlohmann::ordered_json plan = profile_plan(llama3, two, testing::training(4096, 2), default_calibration(), options);
  auto has = [&](const char* list, const std::string& id) {
    for (const auto& e : plan[list])
      if (e["id"] == id) return true;
    return false;
  };
  // One micro-batch of 4096 tokens: QKV 4096 x (32 + 2·8)·128 x 4096, attention out, the gated MLP,
  // the LM head over 128,256 tokens; at tp 2 each split in two.
  for (const char* id : {"gemm/4096x6144x4096/bf16", "gemm/4096x4096x4096/bf16", "gemm/4096x28672x4096/bf16",
                         "gemm/4096x4096x14336/bf16", "gemm/4096x128256x4096/bf16", "gemm/4096x3072x4096/bf16",
                         "gemm/4096x14336x4096/bf16", "gemm/4096x64128x4096/bf16"})
    EXPECT_TRUE(has("gemms", id)) << id << " in " << plan["gemms"].dump();
  EXPECT_TRUE(has("attention", "attention/b1/s4096/h32/kv8/d128/causal"));
  EXPECT_TRUE(has("attention", "attention/b1/s4096/h16/kv4/d128/causal"));  // tp 2
  // Tensor parallelism's all-reduce of one micro-batch's activations: 4096 x 4096 x 2 bytes.
  EXPECT_TRUE(has("collectives", "all_reduce/2/33554432")) << plan["collectives"].dump();
  EXPECT_EQ(plan["model_fingerprint"], model_fingerprint(llama3));
  EXPECT_EQ(plan["step"]["layers"], 2);
}

// A profile of every kernel the plan lists, each measured at `factor` x the shipped calibration's time (FP8 GEMMs
// `factor` x `fp8_factor`).
HardwareProfile profile_at(double factor, const ModelSpec& model, const ClusterSpec& cluster, const TrainingSpec& training,
                           double fp8_factor = 1) {
  ProfilePlanOptions options;
  options.configs = {ParallelConfig{}};
  const nlohmann::ordered_json plan = profile_plan(model, cluster, training, default_calibration(), options);
  // First the fitted times, from a profile measured at 1 s everywhere.
  json doc = profile_document({}, {}, {}, 1);
  for (const auto& g : plan["gemms"]) doc["gemms"].push_back(with_timing(json(g), 1));
  for (const auto& a : plan["attention"]) {
    json row(a);
    row["forward"] = row["backward"] = timing(1);
    doc["attention"].push_back(row);
  }
  const HardwareProfile ones = parse_hardware_profile(doc, "ones.json");
  const ProfileComparison fitted = compare_profile(ones, model, cluster, training, default_calibration());
  std::size_t row = 0;
  for (auto& g : doc["gemms"])
    g.update(timing(factor * (g["dtype"] == "fp8" ? fp8_factor : 1.0) * fitted.rows[row++].model_s));
  for (auto& a : doc["attention"]) {
    a["forward"] = timing(factor * fitted.rows[row++].model_s);
    a["backward"] = timing(factor * fitted.rows[row++].model_s);
  }
  // The copy rate the model uses: HBM x its efficiency, over `factor`.
  doc["memory_bandwidth"] = with_timing({{"bytes_per_s", cluster.gpu.hbm_bandwidth_bytes_per_s *
                                                             default_calibration().hbm_efficiency / factor}},
                                        1);
  return parse_hardware_profile(doc, "profile.json");
}

TEST(HardwareProfile, AProfileThatMeasuredTheModelsOwnTimesChangesNothing) {
  const ModelSpec llama3 = load_model("llama3-8b");
  const TrainingSpec training = testing::training(4096, 1);
  const HardwareProfile same = profile_at(1, llama3, one_h100(), training);
  ASSERT_GT(same.gemms.size(), 4U);
  EstimateOptions with;
  with.profile = &same;
  const Estimate fitted = estimate(llama3, one_h100(), training, ParallelConfig{}, default_calibration());
  const Estimate measured = estimate(llama3, one_h100(), training, ParallelConfig{}, default_calibration(), with);
  EXPECT_NEAR(measured.iteration_time_s, fitted.iteration_time_s, 1e-9 * fitted.iteration_time_s);
}

TEST(HardwareProfile, KernelsMeasuredTwiceAsSlowSlowTheStepByTheirShare) {
  const ModelSpec llama3 = load_model("llama3-8b");
  const TrainingSpec training = testing::training(4096, 1);
  const HardwareProfile slow = profile_at(2, llama3, one_h100(), training);
  EstimateOptions with;
  with.profile = &slow;
  const Estimate fitted = estimate(llama3, one_h100(), training, ParallelConfig{}, default_calibration());
  const Estimate measured = estimate(llama3, one_h100(), training, ParallelConfig{}, default_calibration(), with);
  // GEMMs, attention and memory-bound kernels at twice their time: the compute doubles, the fixed
  // per-iteration and host-side overheads do not.
  EXPECT_NEAR(measured.breakdown.compute_s, 2 * fitted.breakdown.compute_s, 0.1 * fitted.breakdown.compute_s);
  EXPECT_GT(measured.iteration_time_s, 1.7 * fitted.iteration_time_s);
  EXPECT_LT(measured.iteration_time_s, 2.0 * fitted.iteration_time_s + 1e-9);
}

}  // namespace hardware_profile_test
}  // namespace paratune

namespace paratune::hardware_profile_test {

TEST(HardwareProfile, TheCalibrationFittedToAProfileFindsTheGpusOwnGemmEfficiency) {
  // A profile of an H100 whose GEMMs and attention all ran 20% slower than the shipped calibration
  // says: the fit moves the hopper efficiencies down (within their physical ranges) and the error
  // falls; it never touches another GPU class's coefficient.
  const ModelSpec llama3 = load_model("llama3-8b");
  const TrainingSpec training = testing::training(4096, 1);
  const HardwareProfile slower = profile_at(1.2, llama3, one_h100(), training);
  const ProfileFit fit = fit_calibration_to_profile(slower, llama3, one_h100(), training, default_calibration());
  EXPECT_GT(fit.rows, 4);
  EXPECT_NEAR(fit.error_before_pct, 100 * std::log(1.2), 0.5);
  EXPECT_LT(fit.error_after_pct, fit.error_before_pct / 3);
  EXPECT_LT(fit.calibration.gemm_efficiency_for("h100-sxm"), default_calibration().gemm_efficiency_for("h100-sxm"));
  EXPECT_EQ(fit.calibration.gemm_efficiency_for("a100-80gb"), default_calibration().gemm_efficiency_for("a100-80gb"));
  for (const std::string& name : fit.parameters) EXPECT_EQ(name.find("[a100]"), std::string::npos) << name;
}

TEST(HardwareProfile, AnFp8ProfileFitsTheFp8GemmRateAndABf16OneDoesNot) {
  // FP8 GEMMs measured 10% faster than the shipped fp8_gemm_efficiency prices them, everything else
  // as priced: the fit raises fp8_gemm_efficiency, the error falls. A blockwise or BF16 profile leaves
  // it alone.
  const ModelSpec llama3 = load_model("llama3-8b");
  TrainingSpec fp8 = testing::training(4096, 1);
  fp8.precision = Precision::kFP8;
  fp8.fp8_recipe = Fp8Recipe::kTensorwise;
  const HardwareProfile faster = profile_at(1, llama3, one_h100(), fp8, 0.9);
  const ProfileFit fit = fit_calibration_to_profile(faster, llama3, one_h100(), fp8, default_calibration());
  EXPECT_NE(std::find(fit.parameters.begin(), fit.parameters.end(), "fp8_gemm_efficiency"), fit.parameters.end());
  EXPECT_GT(fit.calibration.fp8_gemm_efficiency, default_calibration().fp8_gemm_efficiency * 1.05);
  EXPECT_LT(fit.error_after_pct, fit.error_before_pct / 2);

  // A blockwise plan runs block-scaled GEMMs, which the measurer's per-tensor kernel is not.
  TrainingSpec blockwise = fp8;
  blockwise.fp8_recipe = Fp8Recipe::kBlockwise;
  const ProfileFit block = fit_calibration_to_profile(profile_at(1, llama3, one_h100(), blockwise, 0.9), llama3,
                                                      one_h100(), blockwise, default_calibration());
  EXPECT_EQ(std::find(block.parameters.begin(), block.parameters.end(), "fp8_gemm_efficiency"), block.parameters.end());

  const TrainingSpec bf16 = testing::training(4096, 1);
  const ProfileFit plain = fit_calibration_to_profile(profile_at(1.2, llama3, one_h100(), bf16), llama3, one_h100(),
                                                      bf16, default_calibration());
  EXPECT_EQ(std::find(plain.parameters.begin(), plain.parameters.end(), "fp8_gemm_efficiency"), plain.parameters.end());
  EXPECT_EQ(plain.calibration.fp8_gemm_efficiency, default_calibration().fp8_gemm_efficiency);
}

}  // namespace paratune::hardware_profile_test
