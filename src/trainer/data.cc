#include "data.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "paratune/spec/error.h"

namespace paratune::train {
namespace {

class FashionData final : public TrainingData {
 public:
  FashionData(const TrainOptions& o) : seed_(o.seed) {
    const std::string dir = o.data.empty() ? kDebianFashionMnist : o.data;
    train_ = load_fashion_mnist(dir, "train");
    test_ = load_fashion_mnist(dir, "t10k");
    if (o.val_size >= train_.count)
      throw Error(fmt::format("val_size: value {} leaves no training images of {}", o.val_size, train_.count));
    std::vector<int> order(static_cast<std::size_t>(train_.count));
    std::iota(order.begin(), order.end(), 0);
    std::mt19937_64 rng(seed_);
    std::shuffle(order.begin(), order.end(), rng);
    validation_.assign(order.end() - o.val_size, order.end());
    training_.assign(order.begin(), order.end() - o.val_size);
    // Normalisation from the training images.
    double sum = 0, squares = 0;
    for (int i : training_) {
      const std::uint8_t* px = image(train_, i);
      for (int k = 0; k < pixels(); ++k) sum += px[k], squares += 1.0 * px[k] * px[k];
    }
    const double n = 1.0 * training_.size() * pixels();
    mean_ = sum / n / 255.0;
    std_ = std::sqrt(squares / n - (sum / n) * (sum / n)) / 255.0;
  }

  std::int64_t steps_per_epoch(int global_batch) const override {
    return std::max<std::int64_t>(1, static_cast<std::int64_t>(training_.size()) / global_batch);
  }

  Batch train_batch(std::int64_t step, int global_batch, int first, int count) override {
    const std::int64_t per_epoch = steps_per_epoch(global_batch);
    const std::int64_t epoch = step / per_epoch;
    if (epoch != epoch_) {  // each epoch's order: the seed and the epoch number
      permutation_ = training_;
      std::mt19937_64 rng(seed_ * 1000003 + static_cast<std::uint64_t>(epoch) + 1);
      std::shuffle(permutation_.begin(), permutation_.end(), rng);
      epoch_ = epoch;
    }
    const std::int64_t start = (step % per_epoch) * global_batch + first;
    std::vector<int> picked;
    for (int i = 0; i < count; ++i)
      picked.push_back(permutation_[static_cast<std::size_t>((start + i) % permutation_.size())]);
    return gather(train_, picked);
  }

  bool has_split(EvalSplit) const override { return true; }
  std::int64_t eval_size(EvalSplit split) const override {
    return split == EvalSplit::kValidation ? static_cast<std::int64_t>(validation_.size()) : test_.count;
  }
  Batch eval_batch(EvalSplit split, std::int64_t first, std::int64_t count) const override {
    std::vector<int> picked;
    for (std::int64_t i = first; i < first + count; ++i)
      picked.push_back(split == EvalSplit::kValidation ? validation_[static_cast<std::size_t>(i)] : static_cast<int>(i));
    return gather(split == EvalSplit::kValidation ? train_ : test_, picked);
  }
  std::string describe() const override {
    return fmt::format("Fashion-MNIST: {} training, {} validation, {} test images", training_.size(),
                       validation_.size(), test_.count);
  }

 private:
  int pixels() const { return train_.rows * train_.cols; }
  const std::uint8_t* image(const LabelledImages& set, int i) const {
    return set.images.data() + static_cast<std::size_t>(i) * pixels();
  }
  Batch gather(const LabelledImages& set, const std::vector<int>& picked) const {
    const auto n = static_cast<std::int64_t>(picked.size());
    torch::Tensor bytes = torch::empty({n, 1, set.rows, set.cols}, torch::kUInt8);
    torch::Tensor labels = torch::empty({n}, torch::kInt64);
    auto* out = bytes.data_ptr<std::uint8_t>();
    auto* lab = labels.data_ptr<std::int64_t>();
    for (std::int64_t k = 0; k < n; ++k) {
      std::copy_n(image(set, picked[k]), pixels(), out + k * pixels());
      lab[k] = set.labels[static_cast<std::size_t>(picked[k])];
    }
    return {(bytes.to(torch::kFloat32).div_(255.0).sub_(mean_)).div_(std_), labels};
  }

  std::uint64_t seed_;
  LabelledImages train_, test_;
  std::vector<int> training_, validation_, permutation_;
  std::int64_t epoch_ = -1;
  double mean_ = 0, std_ = 1;
};

class TextData final : public TrainingData {
 public:
  TextData(const TrainOptions& o) : seed_(o.seed), seq_len_(o.seq_len) {
    corpus_ = load_text_corpus(o.data.empty() ? kDebianFortunes : o.data, static_cast<std::size_t>(o.seq_len) + 1);
  }
  std::int64_t steps_per_epoch(int global_batch) const override {
    const double tokens_per_step = 1.0 * global_batch * seq_len_;
    return std::max<std::int64_t>(1, static_cast<std::int64_t>(corpus_.train.size() / tokens_per_step));
  }
  Batch train_batch(std::int64_t step, int global_batch, int first, int count) override {
    // The step's offsets: one generator per step, so any rank can draw any step's batch.
    std::mt19937_64 rng(seed_ * 1000003 + static_cast<std::uint64_t>(step));
    std::uniform_int_distribution<std::size_t> offset(0, corpus_.train.size() - seq_len_ - 1);
    std::vector<std::size_t> starts;
    for (int i = 0; i < global_batch; ++i) starts.push_back(offset(rng));
    return sequences(corpus_.train, std::vector<std::size_t>(starts.begin() + first, starts.begin() + first + count));
  }
  bool has_split(EvalSplit split) const override { return split == EvalSplit::kValidation; }
  std::int64_t eval_size(EvalSplit) const override {
    return static_cast<std::int64_t>((corpus_.validation.size() - 1) / seq_len_);
  }
  Batch eval_batch(EvalSplit, std::int64_t first, std::int64_t count) const override {
    std::vector<std::size_t> starts;
    for (std::int64_t i = first; i < first + count; ++i) starts.push_back(static_cast<std::size_t>(i) * seq_len_);
    return sequences(corpus_.validation, starts);
  }
  std::string describe() const override {
    return fmt::format("text: {} training and {} validation bytes ({} files, {} records)", corpus_.train.size(),
                       corpus_.validation.size(), corpus_.files, corpus_.records);
  }

 private:
  Batch sequences(const std::vector<std::uint8_t>& text, const std::vector<std::size_t>& starts) const {
    const auto n = static_cast<std::int64_t>(starts.size());
    torch::Tensor inputs = torch::empty({n, seq_len_}, torch::kInt64);
    torch::Tensor targets = torch::empty({n, seq_len_}, torch::kInt64);
    auto* in = inputs.data_ptr<std::int64_t>();
    auto* out = targets.data_ptr<std::int64_t>();
    for (std::int64_t k = 0; k < n; ++k)
      for (int t = 0; t < seq_len_; ++t) {
        in[k * seq_len_ + t] = text[starts[static_cast<std::size_t>(k)] + t];
        out[k * seq_len_ + t] = text[starts[static_cast<std::size_t>(k)] + t + 1];
      }
    return {inputs, targets};
  }

  std::uint64_t seed_;
  int seq_len_;
  TextCorpus corpus_;
};

}  // namespace

std::unique_ptr<TrainingData> load_fashion_data(const TrainOptions& options) {
  return std::make_unique<FashionData>(options);
}
std::unique_ptr<TrainingData> load_text_data(const TrainOptions& options) { return std::make_unique<TextData>(options); }

std::unique_ptr<TrainingData> load_training_data(const TrainOptions& options) {
  return options.model == Workload::kGpt ? load_text_data(options) : load_fashion_data(options);
}

std::string data_identity(const TrainOptions& o) {
  // FashionData reads data, seed and val_size; TextData data, seed and seq_len.
  return o.model == Workload::kGpt ? fmt::format("text {} seed={} seq_len={}", o.data, o.seed, o.seq_len)
                                   : fmt::format("fashion {} seed={} val_size={}", o.data, o.seed, o.val_size);
}

}  // namespace paratune::train
