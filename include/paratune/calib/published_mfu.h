// The highest model-FLOPs utilisation published for each GPU generation and precision, among the
// shipped published runs (data/published-runs/published_runs.csv). A predicted MFU above it is not
// impossible, but no one has shown it: `estimate` and `plan` say so next to the figure.
#pragma once

#include <optional>
#include <string>

#include "paratune/spec/hardware.h"
#include "paratune/spec/training.h"

namespace paratune {

struct PublishedMfu {
  const char* generation;  // volta, ampere, hopper, blackwell (prediction_class's names)
  const char* precision;   // bf16, fp8
  double mfu;              // fraction of the dense peak of that precision
  const char* row_id;      // the row of published_runs.csv, its source and model
  const char* source_id;
  const char* model;
};

// The highest published MFU for `gpu`'s generation at `precision`, if any row shows one.
std::optional<PublishedMfu> highest_published_mfu(const GpuSpec& gpu, Precision precision);

// "" when `mfu` is at most the highest published; else a sentence saying it is above it.
std::string mfu_above_published(double mfu, const GpuSpec& gpu, Precision precision);

}  // namespace paratune
