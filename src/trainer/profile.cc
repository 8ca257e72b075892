#include "profile.h"

#include <algorithm>
#include <chrono>
#include <cstdio>

#include "models.h"
#include "paratune/train/strategy_cost.h"
#include "trainer.h"

namespace paratune::train {
namespace {

constexpr int kRepetitions = 5;
// Batches grow by 4x from 1 until a forward + backward of the whole model takes this long, so a
// large model's profile stays a few seconds; every trial batch beyond is extrapolated linearly.
constexpr double kEnoughSeconds = 0.1;
constexpr double kLargestBatch = 256;

// The median of `repetitions` timed runs of `work`, after one untimed run (allocations, caches).
template <class Work>
double median_seconds(Work&& work, int repetitions = kRepetitions) {
  work();
  std::vector<double> times;
  for (int i = 0; i < repetitions; ++i) {
    const auto start = std::chrono::steady_clock::now();
    work();
    times.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  std::nth_element(times.begin(), times.begin() + repetitions / 2, times.end());
  return times[static_cast<std::size_t>(repetitions / 2)];
}

// The same decision on every rank: the largest of the ranks' values.
double agreed(Comm& comm, double value) {
  if (comm.world() == 1) return value;
  torch::Tensor t = torch::tensor({value}, torch::kFloat64);
  comm.max_over_all(t);
  return t.item<double>();
}

class Profiler {
 public:
  Profiler(const TrainOptions& o, Comm& comm) : o_(o), comm_(comm), model_(build_model(o)) {
    for (auto& unit : model_.units) unit->train(true);
  }

  StrategyProfile run() {
    StrategyProfile p;
    p.ranks = comm_.world();
    p.threads = o_.threads;
    p.unit_seconds.resize(model_.units.size());
    for (double batch = 1; batch <= kLargestBatch; batch *= 4) {
      const std::vector<double> times = units_at(static_cast<std::int64_t>(batch));
      p.batches.push_back(batch);
      double whole = 0;
      for (std::size_t u = 0; u < times.size(); ++u) {
        p.unit_seconds[u].push_back(times[u]);
        whole += times[u];
      }
      if (p.batches.size() >= 2 && agreed(comm_, whole) >= kEnoughSeconds) break;
    }
    p.optimizer_s = optimizer_step();
    if (comm_.world() > 1) {
      p.allreduce = fit_linear_cost(collective_points([&](torch::Tensor& t) { comm_.sum_over_all(t); }));
      if (comm_.pp() > 1) p.p2p = fit_linear_cost(point_to_point());
    }
    return p;
  }

 private:
  torch::Tensor inputs(std::int64_t batch) const {
    if (o_.model == Workload::kGpt) return torch::randint(0, 256, {batch, o_.seq_len}, torch::kInt64);
    return torch::randn({batch, 1, 28, 28});
  }
  torch::Tensor targets(std::int64_t batch) const {
    if (o_.model == Workload::kGpt) return torch::randint(0, model_.classes, {batch, o_.seq_len}, torch::kInt64);
    return torch::randint(0, model_.classes, {batch}, torch::kInt64);
  }

  // Each unit's forward + backward on `batch` samples; the last unit's includes the loss, as a
  // pipeline's last stage computes it.
  std::vector<double> units_at(std::int64_t batch) {
    std::vector<torch::Tensor> unit_inputs;
    {
      torch::NoGradGuard no_grad;
      torch::Tensor x = inputs(batch);
      for (auto& unit : model_.units) {
        unit_inputs.push_back(x);
        x = unit->forward(x);
      }
    }
    const torch::Tensor labels = targets(batch);
    std::vector<double> times;
    for (std::size_t u = 0; u < model_.units.size(); ++u) {
      const bool last = u + 1 == model_.units.size();
      const torch::Tensor gradient = last ? torch::Tensor() : torch::randn_like(unit_inputs[u + 1]);
      times.push_back(median_seconds([&] {
        torch::Tensor x = unit_inputs[u];
        if (u > 0) x = x.detach().requires_grad_(true);
        torch::Tensor y = model_.units[u]->forward(x);
        if (last) {
          torch::nn::functional::cross_entropy(y.reshape({-1, model_.classes}), labels.reshape(-1)).backward();
        } else {
          y.backward(gradient);
        }
        model_.units[u]->zero_grad();
      }));
    }
    return times;
  }

  double optimizer_step() {
    std::vector<torch::Tensor> parameters = unique_parameters(model_, 0, static_cast<int>(model_.units.size()));
    for (auto& p : parameters) p.mutable_grad() = torch::randn_like(p) * 1e-3;
    ScaledOptimizer optimizer = make_optimizer(o_, model_, parameters);
    return median_seconds([&] { optimizer.optimizer->step(); }, 5);
  }

  // (bytes, seconds) of `collective` on float tensors from 256 B to 8 MiB.
  template <class Collective>
  std::vector<std::pair<double, double>> collective_points(Collective&& collective) {
    std::vector<std::pair<double, double>> points;
    for (std::int64_t bytes : {std::int64_t{256}, std::int64_t{64} << 10, std::int64_t{1} << 20, std::int64_t{8} << 20}) {
      torch::Tensor t = torch::ones({bytes / 4});
      points.emplace_back(static_cast<double>(bytes), agreed(comm_, median_seconds([&] { collective(t); })));
    }
    return points;
  }

  // Rank 0 sends to rank 1, which sends it back: half the round trip, as Comm::send and receive
  // move a pipeline's tensors (a shape header, then the data). The other ranks wait.
  std::vector<std::pair<double, double>> point_to_point() {
    int tag = 0;
    std::vector<std::pair<double, double>> points;
    for (std::int64_t bytes : {std::int64_t{256}, std::int64_t{64} << 10, std::int64_t{1} << 20, std::int64_t{8} << 20}) {
      torch::Tensor t = torch::ones({bytes / 4});
      double seconds = 0;
      if (comm_.rank() <= 1) {
        seconds = median_seconds([&] {
          ++tag;
          if (comm_.rank() == 0) {
            comm_.send(t, 1, tag);
            comm_.wait_sends();
            (void)comm_.receive(1, tag);
          } else {
            torch::Tensor back = comm_.receive(0, tag);
            comm_.send(back, 0, tag);
            comm_.wait_sends();
          }
        }) / 2;
      }
      points.emplace_back(static_cast<double>(bytes), agreed(comm_, seconds));
    }
    return points;
  }

  const TrainOptions& o_;
  Comm& comm_;
  Model model_;
};

}  // namespace

int profile_rank(const TrainOptions& options, Comm& comm) {
  torch::set_num_threads(std::max(1, options.threads));
  torch::manual_seed(options.seed);
  const StrategyProfile profile = Profiler(options, comm).run();
  if (comm.rank() == 0) {
    std::printf("@profile %s\n", profile.to_json().dump().c_str());
    std::fflush(stdout);
  }
  return 0;
}

}  // namespace paratune::train
