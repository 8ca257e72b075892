// The searches of parallel configurations behind the one study loop's Sampler interface
// (tune/bayes.h as_sampler).
#include <memory>
#include <set>

#include "paratune/hpo/sampler.h"
#include "paratune/tune/bayes.h"

namespace paratune::tune {
namespace {

// How a trial ended, in the terms the searches learn from (FinishedTrial::status).
trial::TrialStatus status_of(const hpo::TrialRecord& r) {
  switch (r.state) {
    case hpo::TrialRecord::State::kCompleted: return trial::TrialStatus::kCompleted;
    case hpo::TrialRecord::State::kPruned: return trial::TrialStatus::kEarlyStopped;
    default: break;
  }
  switch (r.failure) {
    case trial::FailureKind::kOom: return trial::TrialStatus::kOom;
    case trial::FailureKind::kOverMemory: return trial::TrialStatus::kInfeasible;
    case trial::FailureKind::kTimeout: return trial::TrialStatus::kTimeout;
    default: return trial::TrialStatus::kFailed;
  }
}

class SearchSampler final : public hpo::Sampler {
 public:
  SearchSampler(std::unique_ptr<SearchAlgorithm> search, const SearchSpace& view)
      : search_(std::move(search)), view_(view) {}
  [[nodiscard]] std::string name() const override { return search_->name(); }

  std::optional<hpo::Config> propose(const std::vector<hpo::TrialRecord>& trials) override {
    std::vector<Point> running;
    for (const hpo::TrialRecord& r : trials) {
      const std::optional<Point> point = view_.point_of(r.config);
      if (!point) continue;  // not a configuration of the space: cannot happen in one study
      if (r.state == hpo::TrialRecord::State::kRunning) {
        running.push_back(*point);
      } else if (seen_.insert(r.number).second) {  // the searches take each finished trial once, in order
        FinishedTrial f;
        f.point = *point;
        f.status = status_of(r);
        if (r.measured.steps_used > 0) f.throughput = r.measured.steps_per_s;
        f.throughput_standard_error = r.measured.standard_error;
        f.peak_memory_bytes = r.peak_memory_bytes;
        f.steps = static_cast<int>(r.resource);
        f.failure = r.failure;
        finished_.push_back(std::move(f));
      }
    }
    const std::optional<Point> point = search_->propose(finished_, running);
    if (!point) return std::nullopt;
    last_ = point;
    return hpo::Config(view_.to_json(*point));
  }

  [[nodiscard]] nlohmann::ordered_json proposal_notes() const override {
    return last_ ? search_->proposal_notes(*last_) : nlohmann::ordered_json();
  }
  [[nodiscard]] nlohmann::ordered_json model_summary() const override { return search_->model_summary(); }

 private:
  std::unique_ptr<SearchAlgorithm> search_;
  const SearchSpace& view_;
  std::vector<FinishedTrial> finished_;  // only grows (the searches rely on it)
  std::set<int> seen_;                   // trial numbers in finished_
  std::optional<Point> last_;
};

}  // namespace

std::unique_ptr<hpo::Sampler> as_sampler(std::unique_ptr<SearchAlgorithm> search, const SearchSpace& view) {
  return std::make_unique<SearchSampler>(std::move(search), view);
}

std::unique_ptr<hpo::Sampler> make_configuration_sampler(const hpo::Space& space, const SearchSpace& view,
                                                         std::optional<Prior> prior, const BayesOptions& options,
                                                         std::size_t max_trials) {
  hpo::SamplerOptions sampler_options;
  sampler_options.direction = hpo::Direction::kMaximize;
  sampler_options.seed = options.seed;
  sampler_options.max_trials = max_trials;
  switch (options.algorithm) {
    case Algorithm::kGrid: return hpo::make_grid_sampler(space, sampler_options);
    case Algorithm::kRandom: return hpo::make_random_sampler(space, sampler_options);
    default: return as_sampler(make_model_search(view, std::move(prior), options), view);
  }
}

}  // namespace paratune::tune
