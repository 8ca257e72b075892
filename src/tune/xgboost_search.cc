// xgboost (tune/bayes.h), as DeepSpeed's autotuner: gradient-boosted trees on the observed
// throughputs (failed and out-of-memory trials count as 0), trial the best predicted untried point
// -- times P(runs), the one respect in which it differs from DeepSpeed's.
#include <cmath>

#include "model_search.h"
#include "paratune/trial/failure.h"

namespace paratune::tune {
namespace {

class XgboostSearch final : public ModelSearch {
 public:
  using ModelSearch::ModelSearch;

 private:
  Eigen::Index pick(const std::vector<Eigen::Index>& candidates, const std::vector<Eigen::Index>& /*running*/,
                    nlohmann::ordered_json& notes) override {
    std::vector<Eigen::Index> rows;
    Eigen::VectorXd y(static_cast<Eigen::Index>(throughput_.size() + failures_.size()));
    for (const Observation& o : throughput_) {
      y(static_cast<Eigen::Index>(rows.size())) = o.value;
      rows.push_back(o.row);
    }
    for (Eigen::Index row : failures_) {
      y(static_cast<Eigen::Index>(rows.size())) = 0;
      rows.push_back(row);
    }
    if (rows.size() < 2) {  // nothing to learn from yet (e.g. --parallel with every design still running)
      notes["source"] = "random: fewer than two trials finished";
      return random_among(candidates);
    }
    const Eigen::MatrixXd query = rows_of(candidates);
    const Eigen::VectorXd predicted =
        xgboost_fit_predict(rows_of(rows), y, query, options_.seed + static_cast<std::uint64_t>(rows.size()));
    // DeepSpeed's rule, then as every search here: probably runs first (trial::kLikelyToRun), then
    // the prediction times P(runs).
    const Eigen::VectorXd p_run = feasibility().probabilities(query);
    Eigen::Index best = 0;
    std::pair<bool, double> best_key{false, -HUGE_VAL};
    for (Eigen::Index c = 0; c < query.rows(); ++c) {
      const std::pair<bool, double> key{p_run(c) >= trial::kLikelyToRun, std::max(predicted(c), 0.0) * p_run(c)};
      if (key > best_key) {
        best_key = key;
        best = c;
      }
    }
    const bool weighed = feasibility().active();
    notes["source"] = weighed ? "XGBoost's best prediction times P(runs)" : "XGBoost's best prediction";
    notes["predicted_throughput"] = predicted(best);
    if (weighed) notes["p_runs"] = p_run(best);
    return candidates[static_cast<std::size_t>(best)];
  }
};

}  // namespace

std::unique_ptr<hpo::Sampler> make_xgboost_search(const SearchSpace& view, const BayesOptions& options) {
  return std::make_unique<XgboostSearch>(view, std::nullopt, options);
}

}  // namespace paratune::tune
