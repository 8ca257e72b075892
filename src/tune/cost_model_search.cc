// costmodel (tune/bayes.h): fit the prior's coefficients to the trials so far (least squares on log
// throughput and log memory), trial its predicted best untried point that fits; repeat.
#include <nlopt.hpp>

#include <cmath>
#include <tuple>

#include "model_search.h"
#include "paratune/trial/failure.h"

namespace paratune::tune {
namespace {

class CostModelSearch final : public ModelSearch {
 public:
  using ModelSearch::ModelSearch;

 private:
  Eigen::Index pick(const std::vector<Eigen::Index>& candidates, const std::vector<Eigen::Index>& /*running*/,
                    nlohmann::ordered_json& notes) override {
    const std::vector<double> time_theta = least_squares(prior_->time, throughput_, true);
    const std::vector<double> memory_theta = least_squares(prior_->memory, memory_, false);
    const Eigen::VectorXd p_run = p_runs(candidates);
    const double limit = options_.memory_limit_bytes;
    std::size_t best = 0;
    std::tuple<bool, bool, double> best_key{false, false, -1};
    for (std::size_t c = 0; c < candidates.size(); ++c) {
      const Eigen::Index row = candidates[c];
      const bool fits = limit <= 0 || prior_memory(row, memory_theta) <= limit;
      // Fits, then probably runs (trial::kLikelyToRun), then the expected throughput: the model's,
      // times the chance that the configuration runs at all.
      const double p = p_run(static_cast<Eigen::Index>(c));
      const std::tuple<bool, bool, double> key{fits, p >= trial::kLikelyToRun, prior_throughput(row, time_theta) * p};
      if (key > best_key) {
        best_key = key;
        best = c;
      }
    }
    const Eigen::Index row = candidates[best];
    const bool weighed = feasibility().active();
    notes["source"] = weighed ? "the fitted cost model's best prediction times P(runs)" : "the fitted cost model's best prediction";
    notes["predicted_throughput"] = prior_throughput(row, time_theta);
    if (weighed) notes["p_runs"] = p_run(static_cast<Eigen::Index>(best));
    notes["predicted_memory_bytes"] = prior_memory(row, memory_theta);
    summary_ = {{"prior", prior_->name},
                {"throughput_coefficients", coefficients(prior_->time, time_theta)},
                {"memory_coefficients", coefficients(prior_->memory, memory_theta)}};
    describe_feasibility();
    return row;
  }

  // The log-coefficients minimising the squared error of log prediction vs log observation
  // (BOBYQA within the prior's bounds); the prior's start when nothing was observed.
  std::vector<double> least_squares(const LinearTerms& terms, const std::vector<Observation>& obs, bool time) const {
    const gp::MeanFunction start = prior_mean(terms, obs, time, 1, {});
    if (obs.empty()) return start.initial;
    nlopt::opt optimizer(nlopt::LN_BOBYQA, static_cast<unsigned>(start.initial.size()));
    optimizer.set_lower_bounds(start.lower);
    optimizer.set_upper_bounds(start.upper);
    struct Data {
      const CostModelSearch* self;
      const std::vector<Observation>* obs;
      bool time;
    } data{this, &obs, time};
    optimizer.set_min_objective(
        [](const std::vector<double>& u, std::vector<double>&, void* p) {
          const Data& d = *static_cast<Data*>(p);
          double sum = 0;
          for (const Observation& o : *d.obs) {
            const double model = d.time ? d.self->prior_throughput(o.row, u) : d.self->prior_memory(o.row, u);
            const double e = std::log(std::max(model, 1e-300)) - std::log(o.value);
            sum += e * e;
          }
          return sum;
        },
        &data);
    optimizer.set_maxeval(2000);
    optimizer.set_xtol_rel(1e-6);
    std::vector<double> u = start.initial;
    double value = 0;
    try {
      optimizer.optimize(u, value);
    } catch (const std::exception&) {
      // keep the point reached
    }
    return u;
  }
};

}  // namespace

std::unique_ptr<hpo::Sampler> make_cost_model_search(const SearchSpace& view, Prior prior, const BayesOptions& options) {
  return std::make_unique<CostModelSearch>(view, std::move(prior), options);
}

}  // namespace paratune::tune
