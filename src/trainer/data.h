// The trainer's data: which samples each step trains on and which ones an evaluation scores, the
// same on every rank of a trial (each takes its own slice), fixed by the seed.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "paratune/train/corpus.h"
#include "paratune/train/idx.h"
#include "paratune/train/options.h"

namespace paratune::train {

struct Batch {
  torch::Tensor inputs;   // images [n, 1, 28, 28] float, or byte sequences [n, T] int64
  torch::Tensor targets;  // labels [n] or next bytes [n, T], int64
};

enum class EvalSplit { kValidation, kTest };

class TrainingData {
 public:
  virtual ~TrainingData() = default;
  // Optimizer steps in one pass over the training data with this global batch (at least 1).
  [[nodiscard]] virtual std::int64_t steps_per_epoch(int global_batch) const = 0;
  // Samples [first, first + count) of step `step`'s global batch of `global_batch` samples.
  [[nodiscard]] virtual Batch train_batch(std::int64_t step, int global_batch, int first, int count) = 0;
  [[nodiscard]] virtual bool has_split(EvalSplit split) const = 0;
  [[nodiscard]] virtual std::int64_t eval_size(EvalSplit split) const = 0;
  [[nodiscard]] virtual Batch eval_batch(EvalSplit split, std::int64_t first, std::int64_t count) const = 0;
  [[nodiscard]] virtual std::string describe() const = 0;
};

// Fashion-MNIST: the 60,000 training images less `val_size` held out (chosen by the seed), shuffled
// every epoch by the seed; the 10,000 official test images. Pixels scaled to mean 0, deviation 1
// over the training images.
std::unique_ptr<TrainingData> load_fashion_data(const TrainOptions& options);

// Byte-level text (corpus.h): each step's sequences start at offsets drawn by the seed and the step;
// validation is the held-out text cut into consecutive sequences.
std::unique_ptr<TrainingData> load_text_data(const TrainOptions& options);

// The model's data: text for gpt, Fashion-MNIST otherwise.
std::unique_ptr<TrainingData> load_training_data(const TrainOptions& options);

// What the data of load_training_data depends on: two options with the same identity load the same
// data (a serving process loads it once).
std::string data_identity(const TrainOptions& options);

}  // namespace paratune::train
