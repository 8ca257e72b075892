#include "paratune/calib/published_mfu.h"

#include <fmt/format.h>

#include <array>

namespace paratune {
namespace {

// MFU = published TFLOP/s per GPU (in the source's own FLOP count) / the dense peak of the run's
// precision, or the published MFU where the source prints one. A test checks each row against the
// CSV (tests/calib/published_mfu_test.cc).
constexpr std::array<PublishedMfu, 6> kHighest{{
    {"volta", "bf16", 0.575, "1", "S1", "GPT-2-style 1B"},         // 71.9 of 125 TFLOP/s (FP16)
    {"ampere", "bf16", 0.642, "125", "S11", "MPT-7b"},             // MFU 64.2% (Composer)
    {"hopper", "bf16", 0.625, "239", "S24", "Llama 3.1 8b"},       // DGXC MFU 62.5%
    {"hopper", "fp8", 0.471, "226", "S21", "GPT3-175B"},           // 932 of 1979 TFLOP/s
    {"blackwell", "bf16", 0.476, "263", "S25", "Grok-1 314B"},     // DGXC MFU 47.6% (GB200)
    {"blackwell", "fp8", 0.383, "218", "S21", "GPT3-175B"},        // of the B200's FP8 peak
}};

}  // namespace

std::optional<PublishedMfu> highest_published_mfu(const GpuSpec& gpu, Precision precision) {
  const std::string generation = gpu_generation(gpu);
  const std::string numbers = precision == Precision::kFP8 ? "fp8" : "bf16";
  for (const PublishedMfu& p : kHighest)
    if (generation == p.generation && numbers == p.precision) return p;
  return std::nullopt;
}

std::string mfu_above_published(double mfu, const GpuSpec& gpu, Precision precision) {
  const auto best = highest_published_mfu(gpu, precision);
  if (!best || mfu <= best->mfu) return "";
  return fmt::format("MFU {:.1f}% is above the highest published for {} {} ({:.1f}%: {}, {} row {}): a prediction "
                     "no published run has shown",
                     100 * mfu, best->generation, best->precision, 100 * best->mfu, best->model, best->source_id,
                     best->row_id);
}

}  // namespace paratune
