#include "coord_check.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "data.h"
#include "models.h"
#include "trainer.h"

namespace paratune::train {

CoordinateScales coordinate_check(const TrainOptions& o, int steps) {
  // The options' thread count (a run with a fixed count is deterministic; 0: libtorch's default).
  if (o.threads > 0) torch::set_num_threads(o.threads);
  Model model = build_model(o);
  const std::vector<torch::Tensor> parameters = unique_parameters(model, 0, static_cast<int>(model.units.size()));
  ScaledOptimizer optimizer = make_optimizer(o, model, parameters);
  optimizer.set_learning_rate(o.lr);
  auto data = o.model == Workload::kGpt ? load_text_data(o) : load_fashion_data(o);
  CoordinateScales scales;
  for (const auto& unit : model.units) {
    scales.units.push_back(unit->describe());
    unit->train(true);
  }
  for (int step = 0; step < steps; ++step) {
    const Batch batch = data->train_batch(step, o.batch_size, 0, o.batch_size);
    optimizer.optimizer->zero_grad();
    std::vector<double> row;
    torch::Tensor x = batch.inputs;
    for (auto& unit : model.units) {
      x = unit->forward(x);
      row.push_back(x.detach().abs().mean().item<double>());
    }
    scales.l1.push_back(std::move(row));
    torch::nn::functional::cross_entropy(x.reshape({-1, model.classes}), batch.targets.reshape(-1)).backward();
    optimizer.optimizer->step();
  }
  return scales;
}

std::string coordinate_lines(const CoordinateScales& scales) {
  std::string out;
  for (std::size_t s = 0; s < scales.l1.size(); ++s)
    for (std::size_t u = 0; u < scales.units.size(); ++u)
      out += "@coord " +
             nlohmann::json{{"step", s}, {"unit", u}, {"name", scales.units[u]}, {"l1", scales.l1[s][u]}}.dump() + "\n";
  return out;
}

}  // namespace paratune::train
