// Configurations of a hyperparameter space as points of [0,1]^p, for the GP sampler (gp_sampler.cc)
// and the samplers' feasibility model (feasibility.h).
#pragma once

#include <Eigen/Dense>
#include <nlohmann/json.hpp>
#include <vector>

#include "paratune/hpo/space.h"

namespace paratune::hpo {

// Encoded value of an inactive float/int parameter: the middle of its interval, equally far from
// every value it could take, so "absent" does not read as closer to either end. All configurations
// that lack it share this value (they are alike in lacking it); the condition's parent coordinate
// already tells them apart from those that have it.
constexpr double kInactiveUnit = 0.5;
// An inactive categorical is all-zero one-hot: at equal distance (1) from each of its choices
// (two different choices are sqrt(2) apart).

// Configurations as points of [0,1]^p: float/int parameters one coordinate each (Space::to_unit,
// log scale folded in), categorical ones one coordinate per choice (one-hot).
class Encoding {
 public:
  explicit Encoding(const Space& space) : space_(&space) {
    for (const ParamSpec& p : space.parameters()) {
      first_column_.push_back(dimensions_);
      dimensions_ += p.type == ParamType::kCategorical ? static_cast<int>(p.choices.size()) : 1;
    }
  }

  [[nodiscard]] int dimensions() const { return dimensions_; }

  // The parameter (its index) each column encodes: a categorical's one-hot columns share one.
  [[nodiscard]] std::vector<int> parameter_of_columns() const {
    std::vector<int> out(static_cast<std::size_t>(dimensions_));
    for (std::size_t i = 0; i < first_column_.size(); ++i) {
      const int end = i + 1 < first_column_.size() ? first_column_[i + 1] : dimensions_;
      for (int c = first_column_[i]; c < end; ++c) out[static_cast<std::size_t>(c)] = static_cast<int>(i);
    }
    return out;
  }

  // A configuration holds exactly its active parameters, so absence means inactive.
  [[nodiscard]] Eigen::VectorXd encode(const Config& config) const {
    Eigen::VectorXd x = Eigen::VectorXd::Zero(dimensions_);
    const std::vector<ParamSpec>& params = space_->parameters();
    for (std::size_t i = 0; i < params.size(); ++i) {
      const int column = first_column_[i];
      const auto it = config.find(params[i].name);
      if (params[i].type == ParamType::kCategorical) {
        if (it != config.end()) x(column + static_cast<int>(space_->choice_index(i, *it))) = 1;
      } else {
        x(column) = it != config.end() ? space_->to_unit(i, *it) : kInactiveUnit;
      }
    }
    return x;
  }

  // {param: lengthscale}; a categorical parameter lists one per choice.
  [[nodiscard]] nlohmann::ordered_json lengthscales(const Eigen::VectorXd& l) const {
    nlohmann::ordered_json out = nlohmann::ordered_json::object();
    const std::vector<ParamSpec>& params = space_->parameters();
    for (std::size_t i = 0; i < params.size(); ++i) {
      const int column = first_column_[i];
      if (params[i].type != ParamType::kCategorical) {
        out[params[i].name] = l(column);
        continue;
      }
      nlohmann::ordered_json per_choice = nlohmann::ordered_json::array();
      for (std::size_t c = 0; c < params[i].choices.size(); ++c) per_choice.push_back(l(column + static_cast<int>(c)));
      out[params[i].name] = per_choice;
    }
    return out;
  }

 private:
  const Space* space_;
  std::vector<int> first_column_;
  int dimensions_ = 0;
};

}  // namespace paratune::hpo
