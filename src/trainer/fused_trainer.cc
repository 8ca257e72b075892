#include "fused_trainer.h"

#include <fmt/format.h>
#include <sys/resource.h>

#include <chrono>
#include <cmath>
#include <cstdio>

#include "data.h"
#include "fused_models.h"
#include "fused_optimizer.h"
#include "models.h"
#include "paratune/train/schedule.h"
#include "paratune/trial/protocol.h"

namespace paratune::train {
namespace {

void report(const std::string& json, bool flush = false) {
  std::printf("@paratune %s\n", json.c_str());
  if (flush) std::fflush(stdout);
}

void report_metric(std::size_t member, const char* name, double value, std::int64_t step) {
  report(fmt::format(R"({{"member": {}, "metric": "{}", "value": {}, "step": {}}})", member, name, value, step));
}

class FusedTrainer {
 public:
  explicit FusedTrainer(const std::vector<TrainOptions>& members) : members_(members), o_(members.front()) {
    {
      // Each member's weights as its own run draws them (its seed, init_scale, muP), then fused.
      std::vector<Model> models;
      for (const TrainOptions& m : members) models.push_back(build_model(m));
      model_ = fuse_models(models);
    }
    optimizer_ = std::make_unique<FusedOptimizer>(model_.parameters, model_.rate_scaling, members);
    data_ = o_.model == Workload::kGpt ? load_text_data(o_) : load_fashion_data(o_);
    diverged_.assign(members.size(), false);
    std::printf("paratune-train: %zu fused trials of %s; %s\n", members.size(), to_string(o_.model),
                data_->describe().c_str());
    std::fflush(stdout);
  }

  int run() {
    const std::int64_t steps_per_epoch = data_->steps_per_epoch(o_.batch_size);
    const std::int64_t total = total_steps(o_, steps_per_epoch);
    const std::int64_t run_steps = o_.max_steps > 0 ? std::min(total, o_.max_steps) : total;
    for (std::int64_t step = 0; step < run_steps; ++step) {
      const auto start = std::chrono::steady_clock::now();
      std::vector<double> rates;
      for (const TrainOptions& m : members_) rates.push_back(learning_rate(m, step, total, steps_per_epoch));
      const torch::Tensor losses = train_step(step, rates);
      const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      for (std::size_t b = 0; b < members_.size(); ++b) {
        if (diverged_[b]) continue;
        const double loss = losses[static_cast<std::int64_t>(b)].item<double>();
        if (!std::isfinite(loss)) {
          mark_diverged(b, fmt::format("the train loss is {} at step {} (lr {})", loss, step, members_[b].lr));
          continue;
        }
        report_metric(b, "train_loss", loss, step);
      }
      const bool last = step + 1 == run_steps;
      if (last || (o_.eval_every > 0 && (step + 1) % o_.eval_every == 0)) evaluate(step, last);
      report(fmt::format(R"({{"step": {}, "step_time_s": {}}})", step, std::max(seconds, trial::kMinStepTimeS)), true);
      if (std::all_of(diverged_.begin(), diverged_.end(), [](bool d) { return d; })) {
        std::fprintf(stderr, "paratune-train: every fused trial diverged by step %lld\n", static_cast<long long>(step));
        return 3;
      }
    }
    return 0;
  }

 private:
  // One optimizer step of every member on the shared batch; returns the members' losses [B].
  torch::Tensor train_step(std::int64_t step, const std::vector<double>& rates) {
    model_.train(true);
    optimizer_->zero_grad();
    const Batch batch = data_->train_batch(step, o_.batch_size, 0, o_.batch_size);
    const torch::Tensor losses = member_losses(model_.forward(batch.inputs), batch.targets, model_.classes);
    losses.sum().backward();  // each member's gradient is its own loss's: nothing is shared
    optimizer_->clip_gradients();
    optimizer_->step(rates);
    return losses.detach().to(torch::kFloat64);
  }

  void mark_diverged(std::size_t member, const std::string& why) {
    diverged_[member] = true;
    report(fmt::format(R"({{"member": {}, "diverged": "{}"}})", member, why));
  }

  void evaluate(std::int64_t step, bool final) {
    torch::NoGradGuard no_grad;
    model_.train(false);
    std::vector<EvalSplit> splits{EvalSplit::kValidation};
    if ((final || o_.eval_test) && data_->has_split(EvalSplit::kTest)) splits.push_back(EvalSplit::kTest);
    for (EvalSplit split : splits) {
      std::int64_t n = data_->eval_size(split);
      if (o_.eval_limit > 0) n = std::min<std::int64_t>(n, o_.eval_limit);
      const auto members = static_cast<std::int64_t>(members_.size());
      torch::Tensor loss_sum = torch::zeros({members}, torch::kFloat64), correct = loss_sum.clone();
      double count = 0;
      for (std::int64_t first = 0; first < n; first += o_.eval_batch) {
        const Batch batch = data_->eval_batch(split, first, std::min<std::int64_t>(o_.eval_batch, n - first));
        const torch::Tensor logits = model_.forward(batch.inputs);
        const auto per_sample = batch.targets.numel();
        loss_sum += member_losses(logits, batch.targets, model_.classes).to(torch::kFloat64) * static_cast<double>(per_sample);
        correct += (logits.argmax(-1) == batch.targets.unsqueeze(0)).reshape({members, -1}).sum(1).to(torch::kFloat64);
        count += static_cast<double>(per_sample);
      }
      if (count == 0) continue;
      const bool validation = split == EvalSplit::kValidation;
      for (std::size_t b = 0; b < members_.size(); ++b) {
        if (diverged_[b]) continue;
        const double loss = loss_sum[static_cast<std::int64_t>(b)].item<double>() / count;
        if (!std::isfinite(loss) || (model_.sequence_targets && !std::isfinite(std::exp(loss)))) {
          mark_diverged(b, fmt::format("the {} loss is {} at step {} (lr {})", validation ? "validation" : "test", loss,
                                       step, members_[b].lr));
          continue;
        }
        report_metric(b, validation ? "val_loss" : "test_loss", loss, step);
        if (model_.sequence_targets)
          report_metric(b, validation ? "val_perplexity" : "test_perplexity", std::exp(loss), step);
        else
          report_metric(b, validation ? "val_accuracy" : "test_accuracy",
                        correct[static_cast<std::int64_t>(b)].item<double>() / count, step);
      }
    }
    rusage usage{};
    getrusage(RUSAGE_SELF, &usage);
    report(fmt::format(R"({{"peak_memory_bytes": {}}})", static_cast<std::int64_t>(usage.ru_maxrss) * 1024));
  }

  const std::vector<TrainOptions>& members_;
  const TrainOptions& o_;  // what the members share
  FusedModel model_;
  std::unique_ptr<FusedOptimizer> optimizer_;
  std::unique_ptr<TrainingData> data_;
  std::vector<bool> diverged_;
};

}  // namespace

int train_fused(const std::vector<TrainOptions>& members) {
  torch::set_num_threads(std::max(1, members.front().threads));
  FusedTrainer trainer(members);
  return trainer.run();
}

}  // namespace paratune::train
