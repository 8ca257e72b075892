#include "trainer.h"

#include <fmt/format.h>
#include <malloc.h>
#include <sys/resource.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <numeric>

#include "data.h"
#include "models.h"
#include "paratune/spec/error.h"
#include "paratune/train/schedule.h"
#include "paratune/train/stage_split.h"
#include "paratune/trial/protocol.h"

namespace paratune::train {
namespace {

// Point-to-point tags: training micro-batch j uses j; evaluation chunks and the tied embedding's
// gradient use their own ranges so a message can never be taken for another.
constexpr int kEvalTag = 1 << 24, kTiedTag = 1 << 25;

// Protocol lines are flushed once per step, with its step line (one write instead of several).
void report(const std::string& json, bool flush = false) {
  std::printf("@paratune %s\n", json.c_str());
  if (flush) std::fflush(stdout);
}

void report_metric(const char* name, double value, std::int64_t step) {
  report(fmt::format(R"({{"metric": "{}", "value": {}, "step": {}}})", name, value, step));
}

// The RSS high-water mark: /proc/self/status's VmHWM, which a serving process resets for each trial
// (reset_peak_rss), else getrusage's (the process's whole life).
std::int64_t peak_rss_bytes() {
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);)
    if (line.starts_with("VmHWM:")) return std::stoll(line.substr(6)) * 1024;  // "VmHWM:   123456 kB"
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<std::int64_t>(usage.ru_maxrss) * 1024;  // Linux reports KiB
}

}  // namespace

void reset_peak_rss() {
  // proc(5), /proc/pid/clear_refs: "5" resets the peak RSS to the current RSS (Linux 4.0).
  std::ofstream("/proc/self/clear_refs") << "5";
}

class RankTrainer {
 public:
  RankTrainer(const TrainOptions& o, Comm& comm, std::shared_ptr<TrainingData> data = nullptr) : o_(o), comm_(comm) {
    Model model = build_model(o);  // every rank draws the whole model's weights, as none does
    // Dropout's masks: a stream per rank (rank 0 keeps the seed's), so replicas and stages do not
    // draw the same masks.
    if (comm.rank() > 0) torch::manual_seed(o.seed + 0x9E3779B97F4A7C15ULL * static_cast<std::uint64_t>(comm.rank()));
    const std::vector<int> split = stage_layers_for(o, model.unit_flops());
    split_ = split;
    model_units_ = static_cast<int>(model.units.size());
    const int first = std::accumulate(split.begin(), split.begin() + comm.stage(), 0);
    const int last = first + split[static_cast<std::size_t>(comm.stage())];
    units_.assign(model.units.begin() + first, model.units.begin() + last);
    parameters_ = unique_parameters(model, first, last);
    sequence_targets_ = model.sequence_targets;
    classes_ = model.classes;
    // A tied embedding split over the pipeline: the first and last stages each hold it.
    if (model.tied_weight.defined() && comm.pp() > 1 && (comm.first_stage() || comm.last_stage()))
      tied_ = model.tied_weight;
    optimizer_ = make_optimizer(o, model, parameters_);
    sync_ = std::make_unique<GradientSync>(comm, parameters_, o.bucket_mb, o.overlap);
    data_ = data ? std::move(data) : load_training_data(o);
    if (reporter()) {
      std::string layout;
      for (int n : split) layout += (layout.empty() ? "" : ",") + std::to_string(n);
      std::printf("paratune-train: %s, %lld parameters in %zu layers; %s\n", to_string(o.model),
                  static_cast<long long>(model.parameter_count()), model.units.size(), data_->describe().c_str());
      std::printf("paratune-train: strategy %s, %d ranks (dp %d x pp %d), %d micro-batches, stage layers %s\n",
                  to_string(o.strategy), comm.world(), comm.dp(), comm.pp(), o.micro_batches, layout.c_str());
      std::fflush(stdout);
    }
  }

  // Each step's lines end with its step line: the trial runner may stop the program as soon as it
  // has PARATUNE_MAX_STEPS step lines, so the train loss and any evaluation come first.
  int run() { return run_from(o_.resume ? resume_from_checkpoint() : 0); }

  // Trains steps [first_step, the run's last). `cancelled`, asked after each step, ends the run
  // early; `keep`: a serving process keeps the model after the run's last step instead of saving
  // it (its checkpoint line says "in_memory"; spill() saves it later).
  int run_from(std::int64_t first_step, const std::function<bool()>& cancelled = {}, bool keep = false) {
    const std::int64_t steps_per_epoch = data_->steps_per_epoch(o_.batch_size);
    const std::int64_t total = total_steps(o_, steps_per_epoch);
    const std::int64_t run_steps = o_.max_steps > 0 ? std::min(total, o_.max_steps) : total;
    for (std::int64_t step = first_step; step < run_steps; ++step) {
      const auto start = std::chrono::steady_clock::now();
      const double loss = train_step(step, learning_rate(o_, step, total, steps_per_epoch));
      const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      if (reporter()) {
        if (!std::isfinite(loss)) {
          std::fprintf(stderr, "paratune-train: training diverged: the train loss is %f at step %lld (lr %g)\n", loss,
                       static_cast<long long>(step), o_.lr);
          return 3;
        }
        report_metric("train_loss", loss, step);
      }
      const bool last = step + 1 == run_steps;
      if ((last || (o_.eval_every > 0 && (step + 1) % o_.eval_every == 0)) && !evaluate(step, last)) return 3;
      last_step_ = step;
      if (keep && last && step + 1 < total && !o_.checkpoint_dir.empty()) {  // paused, not finished
        report(fmt::format(R"({{"checkpoint_step": {}, "in_memory": true}})", step));
      } else if (!o_.checkpoint_dir.empty() &&
                 (last || (o_.checkpoint_every > 0 && (step + 1) % o_.checkpoint_every == 0))) {
        save_checkpoint(step);  // before the step line: a runner may stop the trial right after it
        // Every rank's file is written before the announcement (a runner may stop the group as soon
        // as it has the step line): the all-reduce is the barrier.
        if (comm_.world() > 1) {
          torch::Tensor saved = torch::ones({1});
          comm_.sum_over_all(saved);
        }
        if (reporter()) report(fmt::format(R"({{"checkpoint_step": {}}})", step));
      }
      if (reporter()) report(fmt::format(R"({{"step": {}, "step_time_s": {}}})", step, std::max(seconds, trial::kMinStepTimeS)), true);
      if (cancelled && cancelled()) return 0;
    }
    return 0;
  }

  // The last step trained (-1: none yet) and whether a run would train more (a paused trial).
  [[nodiscard]] std::int64_t last_step() const { return last_step_; }
  [[nodiscard]] bool finished() const {
    return last_step_ + 1 >= total_steps(o_, data_->steps_per_epoch(o_.batch_size));
  }
  // Saves the model after its last step to the checkpoint directory (a serving process's spill).
  void spill() { save_checkpoint(last_step_); }
  // What a kept trial holds: weights, gradients and optimizer state (SGD's momentum: one more copy
  // of the weights, Adam's moments two), with BatchNorm's statistics.
  [[nodiscard]] std::size_t state_bytes() const {
    std::size_t weights = 0;
    for (const auto& p : parameters_) weights += p.nbytes();
    const std::size_t copies = o_.optimizer == Optimizer::kSgd ? (o_.momentum > 0 ? 3 : 2) : 4;
    std::size_t buffers = 0;
    for (const auto& unit : units_)
      for (const auto& b : unit->buffers()) buffers += b.nbytes();
    return weights * copies + buffers;
  }
  // Loads this rank's checkpoint (see below) for a trial that is not in memory.
  std::int64_t resume() { return resume_from_checkpoint(); }

 private:
  bool reporter() const { return comm_.replica() == 0 && comm_.last_stage(); }

  torch::Tensor forward(torch::Tensor x) {
    for (auto& unit : units_) x = unit->forward(x);
    return x;
  }

  // Cross-entropy over every sample (every byte position of a sequence): the mean, or the sum.
  torch::Tensor loss_of(const torch::Tensor& logits, const torch::Tensor& targets, bool sum) {
    namespace F = torch::nn::functional;
    F::CrossEntropyFuncOptions options;
    if (sum) options.reduction(torch::kSum);
    return F::cross_entropy(logits.reshape({-1, classes_}), targets.reshape(-1), options);
  }

  // One optimizer step on the global batch; returns its mean loss on the last stages (0 elsewhere).
  double train_step(std::int64_t step, double lr) {
    for (auto& unit : units_) unit->train(true);
    for (auto& p : parameters_) p.mutable_grad() = torch::Tensor();
    const int m = o_.micro_batches, per_replica = o_.batch_size / comm_.dp(), micro = per_replica / m;
    std::vector<torch::Tensor> inputs(m), outputs(m), losses(m);
    // GPipe (Huang et al. 2019): every micro-batch's forward pass, then every backward pass.
    for (int j = 0; j < m; ++j) {
      const int first_sample = comm_.replica() * per_replica + j * micro;
      Batch batch;
      if (comm_.first_stage() || comm_.last_stage()) batch = data_->train_batch(step, o_.batch_size, first_sample, micro);
      torch::Tensor x = comm_.first_stage() ? batch.inputs : comm_.receive(comm_.stage() - 1, j).requires_grad_(true);
      torch::Tensor y = forward(x);
      if (comm_.last_stage()) {
        losses[j] = loss_of(y, batch.targets, false);
        if (m > 1) losses[j] = losses[j] / m;  // the micro-batches' gradients add up to the batch mean's
      } else {
        comm_.send(y.detach(), comm_.stage() + 1, j);
        outputs[j] = y;
      }
      inputs[j] = x;
    }
    for (int j = m - 1; j >= 0; --j) {
      if (j == 0) sync_->arm();  // this backward pass makes the gradients final
      if (comm_.last_stage()) losses[j].backward();
      else outputs[j].backward(comm_.receive(comm_.stage() + 1, j));
      if (!comm_.first_stage()) comm_.send(inputs[j].grad(), comm_.stage() - 1, j);
      outputs[j] = torch::Tensor();
    }
    comm_.wait_sends();
    sync_->finish();
    sum_tied_gradient();
    if (o_.clip_norm > 0) clip_gradients();
    optimizer_.set_learning_rate(lr);
    optimizer_.optimizer->step();

    if (!comm_.last_stage()) return 0;
    double loss = 0;
    for (const auto& l : losses) loss += l.item<double>();
    if (comm_.dp() == 1) return loss;
    torch::Tensor total = torch::tensor({loss}, torch::kFloat64);
    comm_.sum_over_replicas(total);
    return total.item<double>() / comm_.dp();
  }

  // The embedding and the output projection are one weight: its two stages add their gradients.
  void sum_tied_gradient() {
    if (!tied_.defined()) return;
    torch::NoGradGuard no_grad;
    if (!tied_.grad().defined()) tied_.mutable_grad() = torch::zeros_like(tied_);
    const int other = comm_.first_stage() ? comm_.pp() - 1 : 0;
    torch::Tensor theirs;
    if (comm_.first_stage()) {
      comm_.send(tied_.grad(), other, kTiedTag);
      theirs = comm_.receive(other, kTiedTag);
    } else {
      theirs = comm_.receive(other, kTiedTag);
      comm_.send(tied_.grad(), other, kTiedTag);
    }
    comm_.wait_sends();
    tied_.mutable_grad().add_(theirs);  // a + b on one stage, b + a on the other: the same bits
  }

  // torch.nn.utils.clip_grad_norm_ over the whole model: each weight counted once (a tied weight on
  // the first stage), the squares summed over stages; replicas hold equal gradients, so the sum
  // over every rank is dp times the model's.
  void clip_gradients() {
    torch::NoGradGuard no_grad;
    torch::Tensor squares = torch::zeros({1}, torch::kFloat64);
    for (const auto& p : parameters_) {
      if (!p.grad().defined()) continue;
      if (tied_.defined() && comm_.last_stage() && p.is_same(tied_)) continue;
      squares += p.grad().to(torch::kFloat64).pow(2).sum();
    }
    comm_.sum_over_all(squares);
    const double norm = std::sqrt(squares.item<double>() / comm_.dp());
    const double coefficient = o_.clip_norm / (norm + 1e-6);
    if (coefficient < 1)
      for (auto& p : parameters_)
        if (p.grad().defined()) p.mutable_grad().mul_(coefficient);
  }

  struct Totals {
    double loss_sum = 0, correct = 0, count = 0;
  };

  Totals evaluate_split(EvalSplit split) {
    torch::NoGradGuard no_grad;
    for (auto& unit : units_) unit->train(false);
    std::int64_t n = data_->eval_size(split);
    if (o_.eval_limit > 0) n = std::min<std::int64_t>(n, o_.eval_limit);
    const std::int64_t chunks = (n + o_.eval_batch - 1) / o_.eval_batch;
    torch::Tensor totals = torch::zeros({3}, torch::kFloat64);
    for (std::int64_t c = comm_.replica(); c < chunks; c += comm_.dp()) {
      const std::int64_t first = c * o_.eval_batch, count = std::min<std::int64_t>(o_.eval_batch, n - first);
      Batch batch;
      if (comm_.first_stage() || comm_.last_stage()) batch = data_->eval_batch(split, first, count);
      const int tag = kEvalTag + static_cast<int>(c % kEvalTag);
      torch::Tensor y = forward(comm_.first_stage() ? batch.inputs : comm_.receive(comm_.stage() - 1, tag));
      if (!comm_.last_stage()) {
        comm_.send(y, comm_.stage() + 1, tag);
        continue;
      }
      totals[0] += loss_of(y, batch.targets, true).to(torch::kFloat64);
      totals[1] += (y.argmax(-1) == batch.targets).sum().to(torch::kFloat64);
      totals[2] += static_cast<double>(batch.targets.numel());
    }
    comm_.wait_sends();
    if (comm_.last_stage()) comm_.sum_over_replicas(totals);
    return {totals[0].item<double>(), totals[1].item<double>(), totals[2].item<double>()};
  }

  // What a checkpoint must match to be resumed: the model, the split and the optimizer's shape.
  std::string checkpoint_identity() const {
    std::string layout;
    for (int n : split_) layout += std::to_string(n) + ",";
    return fmt::format("model={} units={} dp={} pp={} stage_layers={} optimizer={} parametrization={} "
                       "surrogate_ratio={} rank={}",
                       to_string(o_.model), model_units_, comm_.dp(), comm_.pp(), layout, to_string(o_.optimizer),
                       to_string(o_.parametrization), o_.surrogate_ratio, comm_.rank());
  }

  std::filesystem::path checkpoint_path() const {
    return std::filesystem::path(o_.checkpoint_dir) / fmt::format("rank-{}.pt", comm_.rank());
  }

  // Written to a temporary file and renamed, so a checkpoint file is whole or absent.
  void save_checkpoint(std::int64_t step) {
    torch::serialize::OutputArchive archive;
    archive.write("identity", c10::IValue(checkpoint_identity()));
    archive.write("step", torch::tensor({step}, torch::kInt64));
    for (std::size_t i = 0; i < units_.size(); ++i) {
      torch::serialize::OutputArchive unit;
      units_[i]->save(unit);
      archive.write(fmt::format("unit{}", i), unit);
    }
    torch::serialize::OutputArchive optimizer;
    optimizer_.optimizer->save(optimizer);
    archive.write("optimizer", optimizer);
    archive.write("random_state", at::detail::getDefaultCPUGenerator().get_state());
    std::filesystem::create_directories(o_.checkpoint_dir);
    const std::filesystem::path path = checkpoint_path(), temporary = path.string() + ".tmp";
    archive.save_to(temporary.string());
    std::filesystem::rename(temporary, path);
  }

  // Loads this rank's checkpoint and returns the step to continue from (0 when there is none on any
  // rank). Every rank must hold one of the same step. Throws Error naming the file.
  std::int64_t resume_from_checkpoint() {
    const std::filesystem::path path = checkpoint_path();
    std::int64_t step = -1;
    torch::serialize::InputArchive archive;
    if (std::filesystem::exists(path)) {
      try {
        archive.load_from(path.string());
        c10::IValue identity;
        archive.read("identity", identity);
        if (identity.toStringRef() != checkpoint_identity())
          throw Error(fmt::format("{}: written by a different configuration ({}); this run is {}", path.string(),
                                  identity.toStringRef(), checkpoint_identity()));
        torch::Tensor saved_step;
        archive.read("step", saved_step);
        step = saved_step.item<std::int64_t>();
      } catch (const c10::Error& e) {
        throw Error(fmt::format("{}: not a readable checkpoint ({})", path.string(), e.what_without_backtrace()));
      }
    }
    // The same step on every rank, or no checkpoint anywhere.
    torch::Tensor bounds = torch::tensor({static_cast<double>(step), -static_cast<double>(step)}, torch::kFloat64);
    comm_.max_over_all(bounds);
    if (bounds[0].item<double>() != -bounds[1].item<double>())
      throw Error(fmt::format("{}: the ranks' checkpoints are of different steps (from {} to {}): an interrupted save",
                              o_.checkpoint_dir, -bounds[1].item<double>(), bounds[0].item<double>()));
    if (step < 0) {
      if (reporter()) std::printf("paratune-train: no checkpoint in %s; starting from step 0\n", o_.checkpoint_dir.c_str());
      return 0;
    }
    for (std::size_t i = 0; i < units_.size(); ++i) {
      torch::serialize::InputArchive unit;
      archive.read(fmt::format("unit{}", i), unit);
      units_[i]->load(unit);
    }
    torch::serialize::InputArchive optimizer;
    archive.read("optimizer", optimizer);
    optimizer_.optimizer->load(optimizer);
    torch::Tensor random_state;
    archive.read("random_state", random_state);
    at::Generator generator = at::detail::getDefaultCPUGenerator();  // a handle to the default one
    generator.set_state(random_state);
    if (reporter()) std::printf("paratune-train: resumed from %s after step %lld\n", o_.checkpoint_dir.c_str(),
                                static_cast<long long>(step));
    return step + 1;
  }

  // BatchNorm's running statistics are each replica's own (each saw its share of the batches):
  // averaged over the replicas before an evaluation so every replica scores one model, as
  // PyTorch DDP's buffer broadcast intends.
  void average_buffers_over_replicas() {
    if (comm_.dp() == 1) return;
    torch::NoGradGuard no_grad;
    for (auto& unit : units_)
      for (auto& buffer : unit->buffers())
        if (buffer.is_floating_point()) {
          comm_.sum_over_replicas(buffer);
          buffer.div_(comm_.dp());
        }
  }

  // Returns false when a value is not finite (the run has diverged).
  bool evaluate(std::int64_t step, bool final) {
    average_buffers_over_replicas();
    std::vector<EvalSplit> splits{EvalSplit::kValidation};
    if ((final || o_.eval_test) && data_->has_split(EvalSplit::kTest)) splits.push_back(EvalSplit::kTest);
    for (EvalSplit split : splits) {
      const Totals t = evaluate_split(split);
      if (!reporter() || t.count == 0) continue;
      const bool validation = split == EvalSplit::kValidation;
      const double loss = t.loss_sum / t.count;
      if (!std::isfinite(loss) || (sequence_targets_ && !std::isfinite(std::exp(loss)))) {
        std::fprintf(stderr, "paratune-train: training diverged: the %s loss is %f at step %lld (lr %g)\n",
                     validation ? "validation" : "test", loss, static_cast<long long>(step), o_.lr);
        return false;
      }
      report_metric(validation ? "val_loss" : "test_loss", loss, step);
      if (sequence_targets_) {
        report_metric(validation ? "val_perplexity" : "test_perplexity", std::exp(loss), step);  // per byte
      } else {
        report_metric(validation ? "val_accuracy" : "test_accuracy", t.correct / t.count, step);
      }
    }
    torch::Tensor peak = torch::tensor({static_cast<double>(peak_rss_bytes())}, torch::kFloat64);
    comm_.max_over_all(peak);
    if (reporter()) report(fmt::format(R"({{"peak_memory_bytes": {}}})", static_cast<std::int64_t>(peak.item<double>())));
    return true;
  }

  const TrainOptions& o_;
  Comm& comm_;
  std::vector<int> split_;  // layers per stage
  int model_units_ = 0;
  std::vector<std::shared_ptr<Unit>> units_;
  std::vector<torch::Tensor> parameters_;
  torch::Tensor tied_;
  bool sequence_targets_ = false;
  int classes_ = 0;
  ScaledOptimizer optimizer_;
  std::unique_ptr<GradientSync> sync_;
  std::shared_ptr<TrainingData> data_;
  std::int64_t last_step_ = -1;
};

RankTrainerHandle::RankTrainerHandle(const TrainOptions& options, Comm& comm, std::shared_ptr<TrainingData> data)
    : trainer_(std::make_unique<RankTrainer>(options, comm, std::move(data))) {}
RankTrainerHandle::~RankTrainerHandle() = default;
RankTrainerHandle::RankTrainerHandle(RankTrainerHandle&&) noexcept = default;
RankTrainerHandle& RankTrainerHandle::operator=(RankTrainerHandle&&) noexcept = default;
int RankTrainerHandle::run_from(std::int64_t first_step, const std::function<bool()>& cancelled, bool keep) {
  return trainer_->run_from(first_step, cancelled, keep);
}
std::int64_t RankTrainerHandle::resume() { return trainer_->resume(); }
std::int64_t RankTrainerHandle::last_step() const { return trainer_->last_step(); }
bool RankTrainerHandle::finished() const { return trainer_->finished(); }
void RankTrainerHandle::spill() { trainer_->spill(); }
std::size_t RankTrainerHandle::state_bytes() const { return trainer_->state_bytes(); }

void ScaledOptimizer::set_learning_rate(double lr) {
  auto& groups = optimizer->param_groups();
  for (std::size_t g = 0; g < groups.size(); ++g) groups[g].options().set_lr(lr * rate_multipliers[g]);
}

ScaledOptimizer make_optimizer(const TrainOptions& o, const Model& model, const std::vector<torch::Tensor>& params) {
  // Groups in the order of their first parameter, so every run (and its checkpoint) has the same.
  std::vector<RateScaling> scalings;
  std::map<RateScaling, std::vector<torch::Tensor>> members;
  for (const auto& p : params) {
    const RateScaling s = model.rate_scaling_of(p);
    if (!members.count(s)) scalings.push_back(s);
    members[s].push_back(p);
  }
  ScaledOptimizer out;
  std::vector<torch::optim::OptimizerParamGroup> groups;
  for (const RateScaling& s : scalings) {
    out.rate_multipliers.push_back(s.learning_rate);
    const double lr = o.lr * s.learning_rate, wd = o.weight_decay * s.weight_decay;
    std::unique_ptr<torch::optim::OptimizerOptions> options;
    switch (o.optimizer) {
      case Optimizer::kSgd:
        options = std::make_unique<torch::optim::SGDOptions>(
            torch::optim::SGDOptions(lr).momentum(o.momentum).weight_decay(wd));
        break;
      case Optimizer::kAdam:
        options = std::make_unique<torch::optim::AdamOptions>(
            torch::optim::AdamOptions(lr).betas({o.beta1, o.beta2}).eps(o.eps).weight_decay(wd));
        break;
      case Optimizer::kAdamW:
        options = std::make_unique<torch::optim::AdamWOptions>(
            torch::optim::AdamWOptions(lr).betas({o.beta1, o.beta2}).eps(o.eps).weight_decay(wd));
        break;
    }
    groups.emplace_back(members[s], std::move(options));
  }
  switch (o.optimizer) {
    case Optimizer::kSgd:
      out.optimizer = std::make_unique<torch::optim::SGD>(groups, torch::optim::SGDOptions(o.lr));
      break;
    case Optimizer::kAdam:
      out.optimizer = std::make_unique<torch::optim::Adam>(groups, torch::optim::AdamOptions(o.lr));
      break;
    case Optimizer::kAdamW:
      out.optimizer = std::make_unique<torch::optim::AdamW>(groups, torch::optim::AdamWOptions(o.lr));
      break;
  }
  return out;
}

std::vector<int> stage_layers_for(const TrainOptions& o, const std::vector<double>& unit_flops) {
  if (!o.stage_layers.empty()) {
    check_stage_layers(o.stage_layers, static_cast<int>(unit_flops.size()), o.pp);
    return o.stage_layers;
  }
  return split_stages(unit_flops, o.pp, o.micro_batches);
}

void keep_freed_memory() {
  mallopt(M_MMAP_THRESHOLD, 32 << 20);  // glibc's largest: bigger blocks are still mapped
  mallopt(M_TRIM_THRESHOLD, 1 << 30);
}

int train_rank(const TrainOptions& options, Comm& comm) {
  torch::set_num_threads(std::max(1, options.threads));
  RankTrainer trainer(options, comm);
  return trainer.run();
}

}  // namespace paratune::train
