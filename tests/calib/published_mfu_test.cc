// The highest published MFU per GPU generation and precision (paratune/calib/published_mfu.h),
// recomputed from the shipped published runs.
#include "paratune/calib/published_mfu.h"

#include <gtest/gtest.h>

#include <map>

#include "paratune/calib/published_runs.h"
#include "paratune/spec/presets.h"

namespace paratune {
namespace {

// The row's MFU as published: its mfu_pct, or its TFLOP/s per GPU over the dense peak of its
// precision (FP16 and BF16 share a peak; FP8 and MXFP8 use the FP8 peak on Hopper and Blackwell).
std::optional<std::pair<std::string, double>> published_mfu(const PublishedRun& run) {
  std::string g = run.get("gpu_type");
  for (char& ch : g) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  const char* preset = g.find("gb200") != std::string::npos  ? "gb200"
                       : g.find("b200") != std::string::npos ? "b200"
                       : g.find("h100") != std::string::npos || g.find("h200") != std::string::npos ||
                               g.find("h800") != std::string::npos
                           ? "h100-sxm"
                       : g.find("a100") != std::string::npos ? "a100-80gb"
                       : g.find("v100") != std::string::npos ? "v100-32gb"
                                                             : nullptr;
  if (!preset) return std::nullopt;
  const GpuSpec& gpu = find_gpu_preset(preset);
  std::string precision = run.get("precision");
  for (char& ch : precision) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  const bool fp8 = precision.find("fp8") != std::string::npos && gpu.peak_fp8_flops_per_s > 0;
  const std::string key = gpu_generation(gpu) + (fp8 ? " fp8" : " bf16");
  if (!run.get("mfu_pct").empty()) return std::make_pair(key, std::stod(run.get("mfu_pct")) / 100);
  if (run.get("tflops_per_gpu").empty()) return std::nullopt;
  const double peak = fp8 ? gpu.peak_fp8_flops_per_s : std::max(gpu.peak_bf16_flops_per_s, gpu.peak_fp16_flops_per_s);
  return std::make_pair(key, std::stod(run.get("tflops_per_gpu")) * 1e12 / peak);
}

TEST(PublishedMfu, TheTableIsTheHighestOfTheShippedRuns) {
  const auto runs = read_published_runs(std::string(PARATUNE_SOURCE_DIR) + "/data/published-runs/published_runs.csv");
  std::map<std::string, std::pair<double, std::string>> highest;  // key -> (mfu, row id)
  for (const PublishedRun& run : runs) {
    const auto m = published_mfu(run);
    if (m && (!highest.contains(m->first) || m->second > highest[m->first].first))
      highest[m->first] = {m->second, run.id()};
  }
  for (const char* preset : {"v100-32gb", "a100-80gb", "h100-sxm", "b200"})
    for (Precision p : {Precision::kBF16, Precision::kFP8}) {
      const GpuSpec& gpu = find_gpu_preset(preset);
      const std::string key = gpu_generation(gpu) + (p == Precision::kFP8 ? " fp8" : " bf16");
      const auto table = highest_published_mfu(gpu, p);
      ASSERT_EQ(table.has_value(), highest.contains(key)) << key;
      if (!table) continue;
      EXPECT_NEAR(table->mfu, highest[key].first, 0.001) << key;
      EXPECT_EQ(table->row_id, highest[key].second) << key;
    }
}

TEST(PublishedMfu, AboveTheHighestIsSaid) {
  const GpuSpec& a100 = find_gpu_preset("a100-80gb");
  EXPECT_EQ(mfu_above_published(0.60, a100, Precision::kBF16), "");
  EXPECT_EQ(mfu_above_published(0.65, a100, Precision::kBF16),
            "MFU 65.0% is above the highest published for ampere bf16 (64.2%: MPT-7b, S11 row 125): a prediction no "
            "published run has shown");
}

}  // namespace
}  // namespace paratune
