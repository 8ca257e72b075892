// One rank of a paratune-train trial: its pipeline stage of the model, trained with the trial's
// strategy, reporting through the trial protocol (docs/trial-protocol.md).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>

#include "comm.h"
#include "data.h"
#include "models.h"
#include "paratune/train/options.h"

namespace paratune::train {

// Trains `options`' model as rank comm.rank() and returns the process's exit code (0; 3 when the
// loss stops being finite). The reporting rank -- the last pipeline stage of replica 0, where the
// loss is known -- prints the protocol lines of each step in this order:
//   @paratune {"metric": "train_loss", "value": v, "step": k}  every step (mean over the global batch)
//   @paratune {"metric": "val_loss" | "val_accuracy" | "val_perplexity" | "test_loss" | "test_accuracy", ...}
//   @paratune {"peak_memory_bytes": n}    after each evaluation (every eval_every steps and after the
//                                         last step): RSS high-water in bytes, max over ranks
//   @paratune {"step": k, "step_time_s": t}  last, so a runner that stops the trial after its last
//                                         step line has every line of it
// Throws Error for bad input found while loading (data files, stage layers).
int train_rank(const TrainOptions& options, Comm& comm);

// One trial of a serving process (serve.h): a one-rank trainer that is built once, trains to a
// rung, is kept and trains on. `options` and `comm` must outlive it.
class RankTrainer;
class RankTrainerHandle {
 public:
  // `data`: the process's loaded data (null: load it).
  RankTrainerHandle(const TrainOptions& options, Comm& comm, std::shared_ptr<TrainingData> data);
  ~RankTrainerHandle();
  RankTrainerHandle(RankTrainerHandle&&) noexcept;
  RankTrainerHandle& operator=(RankTrainerHandle&&) noexcept;
  // Trains from `first_step` to the options' max_steps (or the end) and returns the exit code
  // train_rank would (0, or 3 when the loss stops being finite); `cancelled`, asked after each step,
  // ends it early; `keep`: the checkpoint line after the last step says "in_memory" (spill() saves it).
  int run_from(std::int64_t first_step, const std::function<bool()>& cancelled, bool keep);
  std::int64_t resume();  // the checkpoint directory's checkpoint: the step to continue from (0: none)
  [[nodiscard]] std::int64_t last_step() const;  // -1 before the first
  [[nodiscard]] bool finished() const;           // no step left to train
  void spill();                                  // saves it after its last step to its checkpoint directory
  [[nodiscard]] std::size_t state_bytes() const; // weights, gradients, optimizer state, buffers

 private:
  std::unique_ptr<RankTrainer> trainer_;
};

// Resets the process's RSS high-water mark that the peak_memory_bytes lines report (a serving
// process, before each trial: the peak is then the trial's and what the process holds besides).
void reset_peak_rss();

// The optimizer options.optimizer names over `parameters` of `model`, one parameter group per rate
// scaling (muP's per-layer factors, train/mup.h; one group under the standard parametrization),
// each group's weight decay multiplied by its factor.
struct ScaledOptimizer {
  std::unique_ptr<torch::optim::Optimizer> optimizer;
  std::vector<double> rate_multipliers;  // one per parameter group

  // Sets every group's rate to lr x its multiplier (the schedule's rate, each step).
  void set_learning_rate(double lr);
};
ScaledOptimizer make_optimizer(const TrainOptions& options, const Model& model,
                               const std::vector<torch::Tensor>& parameters);

// Makes glibc keep freed memory for reuse instead of returning it to the kernel: by default blocks
// above 128 KiB (the threshold then adapts, up to 32 MiB) are mmap'ed and unmapped one by one and the
// heap's top is trimmed, so every step's activations arrive as fresh zeroed pages. Measured here
// (bench_train): a CNN step took 0.13 s in some runs and 0.05 s in others with the defaults, 0.05 s
// in every run with this -- the role jemalloc or tcmalloc play in PyTorch's CPU performance advice.
// Call first thing in main().
void keep_freed_memory();

// The layers per pipeline stage the trial uses: --stage-layers, else paratune's stage assignment
// (train/stage_split.h) on the model's counted FLOPs. Throws Error.
std::vector<int> stage_layers_for(const TrainOptions& options, const std::vector<double>& unit_flops);

}  // namespace paratune::train
