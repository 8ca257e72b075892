#include "paratune/plan/stage_assignment.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <unordered_map>

#include "paratune/spec/model.h"

namespace paratune::plan {
namespace {

constexpr double kNoAssignment = std::numeric_limits<double>::infinity();

// One possible stage: a rank holding `k` blocks of vpp layers starting at block `i`.
struct StageOption {
  double time_s = kNoAssignment;  // infinity: does not fit even with every layer recomputed
  int recomputed = 0;
};

// The best option of every (rank, first block, blocks) triple, computed on demand. A rank's costs
// depend on it only through whether it is the first or the last and its activations in flight, so
// ranks alike in those (a kind) share entries (all middle ranks under ZB-H1 or GPipe); a range's
// costs depend on it only through its size and its signature (StageCosts::range_signature), so
// ranges alike in those (a class) share entries too: all ranges of one size when all layers are
// alike. Options are kept per (class, kind), a small table, whatever the model's length.
class StageOptions {
 public:
  StageOptions(const StageCosts& costs, std::span<const double> in_flight, bool allow_recompute, int blocks,
               int recompute_per_chunk)
      : costs_(costs),
        in_flight_(in_flight),
        allow_recompute_(allow_recompute),
        per_chunk_(recompute_per_chunk),
        blocks_(blocks),
        vpp_(costs.virtual_stages()),
        alike_(costs.layers_alike()),
        limit_(costs.memory_limit_bytes()) {
    const int pp = costs.pipeline_stages();
    std::vector<int> representatives;  // the first rank of each kind
    for (int r = 0; r < pp; ++r) {
      auto same_kind = [&](int q) {
        return (q == 0) == (r == 0) && (q == pp - 1) == (r == pp - 1) &&
               in_flight[static_cast<std::size_t>(q)] == in_flight[static_cast<std::size_t>(r)];
      };
      const auto it = std::find_if(representatives.begin(), representatives.end(), same_kind);
      kind_of_rank_.push_back(static_cast<std::size_t>(it - representatives.begin()));
      if (it == representatives.end()) representatives.push_back(r);
    }
    kinds_ = representatives.size();
    if (alike_) classes_ = static_cast<std::size_t>(blocks) + 1;  // the class of a range is its size
    else range_class_.assign(static_cast<std::size_t>(blocks + 1) * static_cast<std::size_t>(blocks + 1), kUnknown);
    options_.resize(classes_ * kinds_);
    known_.assign(options_.size(), 0);
  }

  [[nodiscard]] bool alike() const { return alike_; }
  [[nodiscard]] double least_block_time_s() const { return costs_.least_block_time_s(); }

  StageOption get(int rank, int first, int k) {
    const std::size_t entry = range_class(first, k) * kinds_ + kind_of_rank_[static_cast<std::size_t>(rank)];
    if (!known_[entry]) {
      known_[entry] = 1;
      options_[entry] = compute(rank, alike_ ? 0 : first, k);
      computed_times_.push_back(options_[entry].time_s);
    }
    return options_[entry];
  }
  // The time of every option computed so far (each once; ranges sharing one are not repeated).
  [[nodiscard]] const std::vector<double>& computed_times() const { return computed_times_; }

 private:
  static constexpr std::size_t kUnknown = std::numeric_limits<std::size_t>::max();

  // The class of the range of k blocks from block `first` (numbered as they are met).
  std::size_t range_class(int first, int k) {
    if (alike_) return static_cast<std::size_t>(k);
    std::size_t& c = range_class_[static_cast<std::size_t>(first) * static_cast<std::size_t>(blocks_ + 1) +
                                  static_cast<std::size_t>(k)];
    if (c == kUnknown) {
      const auto [it, inserted] =
          class_of_.try_emplace(Shared{k, costs_.range_signature(first * vpp_, k * vpp_)}, classes_);
      if (inserted) {
        ++classes_;
        options_.resize(classes_ * kinds_);
        known_.resize(options_.size(), 0);
      }
      c = it->second;
    }
    return c;
  }

  StageOption compute(int rank, int first, int k) const {
    const int layers = k * vpp_, first_layer = first * vpp_;
    const double in_flight = in_flight_[static_cast<std::size_t>(rank)];
    auto work = [&](int recomputed) { return costs_.stage_work(rank, first_layer, layers, recomputed, in_flight); };
    StageOption best;
    if (allow_recompute_ && per_chunk_ >= 0) {  // one count for every chunk: fits with it or not at all
      const int recomputed = static_cast<int>(std::min<long long>(1LL * per_chunk_ * vpp_, layers));
      const StageWork w = work(recomputed);
      return w.memory_bytes <= limit_ ? StageOption{w.time_s, recomputed} : best;
    }
    const StageWork none = work(0);
    if (none.memory_bytes <= limit_) return {none.time_s, 0};
    if (!allow_recompute_ || work(layers).memory_bytes > limit_) return best;
    // Memory falls with every recomputed layer from the first on (each keeps only its input; the
    // first adds the working set of the layer being recomputed), time rises: the smallest count
    // that fits is the best one. Binary search over [1, layers].
    int lo = 1, hi = layers;
    while (lo < hi) {
      const int mid = (lo + hi) / 2;
      if (work(mid).memory_bytes <= limit_) hi = mid;
      else lo = mid + 1;
    }
    return {work(lo).time_s, lo};
  }

  const StageCosts& costs_;
  std::span<const double> in_flight_;
  bool allow_recompute_;
  int per_chunk_;
  int blocks_, vpp_;
  bool alike_;
  double limit_;
  std::vector<std::size_t> kind_of_rank_;
  std::size_t kinds_ = 0, classes_ = 0;
  std::vector<std::size_t> range_class_;  // per (first, k); alike layers: none (the class is k)
  struct Shared {
    int k;
    std::uint64_t signature;
    bool operator==(const Shared&) const = default;
  };
  struct SharedHash {
    std::size_t operator()(const Shared& s) const {
      return std::hash<std::uint64_t>()(s.signature * 1000003u + static_cast<std::size_t>(s.k));
    }
  };
  std::unordered_map<Shared, std::size_t, SharedHash> class_of_;
  std::vector<StageOption> options_;  // per (class, kind)
  std::vector<char> known_;
  std::vector<double> computed_times_;
};

struct Solution {
  bool feasible = false;
  double sum_s = kNoAssignment;
  double max_s = 0;
  std::vector<int> blocks;  // per stage
};

// Least sum of stage times with every stage's time <= cap: dynamic programme over
// best[s][j] = least sum placing blocks [0, j) on stages 0..s. With alike layers a stage's time
// never falls as it grows (StageCostModel::layers_alike), so the first size over the cap ends the
// search over sizes.
Solution least_sum(StageOptions& options, int pp, int blocks, double cap) {
  const bool monotone = options.alike();
  const std::size_t width = static_cast<std::size_t>(blocks) + 1;
  // A stage of more blocks than this exceeds the cap wherever it starts.
  const double block = options.least_block_time_s();
  const int most = block > 0 && cap < kNoAssignment ? static_cast<int>(std::min<double>(blocks, std::floor(cap / block))) : blocks;
  std::vector<double> best(static_cast<std::size_t>(pp) * width, kNoAssignment);
  std::vector<int> choice(best.size(), 0);
  // Stage 0 holds blocks [0, j).
  for (int j = 1; j <= std::min(most, blocks - (pp - 1)); ++j) {
    const double t = options.get(0, 0, j).time_s;
    if (t > cap && monotone) break;
    if (t > cap) continue;
    best[static_cast<std::size_t>(j)] = t;
    choice[static_cast<std::size_t>(j)] = j;
  }
  // Stage s holds blocks [j - k, j); the stages before it hold at least one block each, the ones
  // after it too.
  for (int s = 1; s < pp; ++s)
    for (int j = s == pp - 1 ? blocks : s + 1; j <= blocks - (pp - 1 - s); ++j) {
      const std::size_t cell = s * width + j;
      for (int k = 1; k <= std::min(most, j - s); ++k) {
        const double before = best[(s - 1) * width + (j - k)];
        if (before == kNoAssignment) continue;
        const double t = options.get(s, j - k, k).time_s;
        if (t > cap && monotone) break;
        if (t > cap || before + t >= best[cell]) continue;
        best[cell] = before + t;
        choice[cell] = k;
      }
    }
  Solution out;
  const double total = best[(pp - 1) * width + blocks];
  if (total == kNoAssignment) return out;
  out.feasible = true;
  out.sum_s = total;
  out.blocks.assign(static_cast<std::size_t>(pp), 0);
  int j = blocks;
  for (int s = pp - 1; s >= 0; --s) {
    const int k = choice[s * width + j];
    out.blocks[static_cast<std::size_t>(s)] = k;
    out.max_s = std::max(out.max_s, options.get(s, j - k, k).time_s);
    j -= k;
  }
  return out;
}

// The least bottleneck of any assignment: min over assignments of max_s w_s, by the same dynamic
// programme as least_sum() with max in place of the sum and no cap. Infinity when none fits.
double least_bottleneck(StageOptions& options, int pp, int blocks) {
  const std::size_t width = static_cast<std::size_t>(blocks) + 1;
  std::vector<double> worst(static_cast<std::size_t>(pp) * width, kNoAssignment);
  for (int j = 1; j <= blocks - (pp - 1); ++j) worst[static_cast<std::size_t>(j)] = options.get(0, 0, j).time_s;
  for (int s = 1; s < pp; ++s)
    for (int j = s == pp - 1 ? blocks : s + 1; j <= blocks - (pp - 1 - s); ++j) {
      double& cell = worst[s * width + j];
      for (int k = 1; k <= j - s; ++k) {
        const double before = worst[(s - 1) * width + (j - k)];
        if (before >= cell) continue;  // cannot lower the cell, whatever this stage costs
        cell = std::min(cell, std::max(before, options.get(s, j - k, k).time_s));
      }
    }
  return worst[(pp - 1) * width + blocks];
}

// The candidate caps in increasing order. With alike layers each rank's times rise with its size,
// so the caps are a merge of p increasing sequences, walked lazily: `most[s]` is the most blocks
// rank s may hold under the current cap. Otherwise every stage cost that can occur, sorted.
class Caps {
 public:
  Caps(StageOptions& options, int pp, int blocks) : options_(options), pp_(pp), blocks_(blocks) {
    if (options.alike()) {
      most_.assign(static_cast<std::size_t>(pp), 0);
      return;
    }
    // Every stage cost that can occur (ranges that share an option's cost add no value of their
    // own; options computed before for ranges no stage can hold only add caps to try).
    for (int s = 0; s < pp; ++s)
      for (int first = s; first <= (s == 0 ? 0 : blocks - (pp - s)); ++first)
        for (int k = 1; first + k <= blocks - (pp - 1 - s); ++k) {
          if (s == pp - 1 && first + k != blocks) continue;  // the last stage ends the model
          options.get(s, first, k);
        }
    for (double t : options.computed_times())
      if (t < kNoAssignment) sorted_.push_back(t);
    std::sort(sorted_.begin(), sorted_.end());
    sorted_.erase(std::unique(sorted_.begin(), sorted_.end()), sorted_.end());
  }

  // The smallest cap under which the blocks can be placed at all, or infinity.
  double smallest_feasible() {
    if (!options_.alike()) {
      if (sorted_.empty()) return kNoAssignment;
      // The least bottleneck of any assignment is the answer, once least_sum() confirms that it is
      // feasible and the cap below it is not; otherwise a binary search over the caps finds it.
      const double least = least_bottleneck(options_, pp_, blocks_);
      const auto at = std::lower_bound(sorted_.begin(), sorted_.end(), least);
      if (at != sorted_.end() && *at == least && least_sum(options_, pp_, blocks_, least).feasible &&
          (at == sorted_.begin() || !least_sum(options_, pp_, blocks_, *(at - 1)).feasible)) {
        next_ = static_cast<std::size_t>(at - sorted_.begin()) + 1;
        return least;
      }
      std::size_t lo = 0, hi = sorted_.size() - 1;
      if (!least_sum(options_, pp_, blocks_, sorted_[hi]).feasible) return kNoAssignment;
      while (lo < hi) {
        const std::size_t mid = (lo + hi) / 2;
        if (least_sum(options_, pp_, blocks_, sorted_[mid]).feasible) hi = mid;
        else lo = mid + 1;
      }
      next_ = lo + 1;
      return sorted_[lo];
    }
    // Every rank needs one block; then raise the cap to the next size some rank could take until
    // the ranks can hold all blocks between them.
    double cap = 0;
    for (int s = 0; s < pp_; ++s) cap = std::max(cap, time(s, 1));
    for (;;) {
      if (cap == kNoAssignment) return kNoAssignment;
      if (raise_to(cap) >= blocks_) return cap;
      cap = following();
    }
  }

  // The next larger cap (after smallest_feasible() or the previous next()), or infinity.
  double next() {
    if (!options_.alike()) return next_ < sorted_.size() ? sorted_[next_++] : kNoAssignment;
    const double cap = following();
    if (cap < kNoAssignment) raise_to(cap);
    return cap;
  }

 private:
  // Rank s's time with k blocks (alike layers: the position does not matter).
  double time(int s, int k) { return options_.get(s, 0, k).time_s; }
  // Grows each rank's most blocks to what `cap` allows; returns their sum.
  int raise_to(double cap) {
    int held = 0;
    for (int s = 0; s < pp_; ++s) {
      int& k = most_[static_cast<std::size_t>(s)];
      while (k < blocks_ - (pp_ - 1) && time(s, k + 1) <= cap) ++k;
      held += k;
    }
    return held;
  }
  // The smallest time some rank would reach by taking one more block.
  double following() {
    double cap = kNoAssignment;
    for (int s = 0; s < pp_; ++s) {
      const int k = most_[static_cast<std::size_t>(s)];
      if (k < blocks_ - (pp_ - 1)) cap = std::min(cap, time(s, k + 1));
    }
    return cap;
  }

  StageOptions& options_;
  int pp_, blocks_;
  std::vector<int> most_;
  std::vector<double> sorted_;
  std::size_t next_ = 0;
};

// The transformer cost model as StageCosts.
class TransformerStageCosts final : public StageCosts {
 public:
  explicit TransformerStageCosts(const StageCostModel& model) : model_(model) {
    for (int n : model.config().stage_layers) layers_ += n;
  }
  int pipeline_stages() const override { return model_.config().pp; }
  int virtual_stages() const override { return model_.config().vpp; }
  int layers() const override { return layers_; }
  double num_microbatches() const override { return model_.num_microbatches(); }
  double memory_limit_bytes() const override { return model_.memory_limit_bytes(); }
  StageWork stage_work(int rank, int first_layer, int layers, int recomputed, double in_flight) const override {
    return model_.stage_work(rank, first_layer, layers, recomputed, in_flight);
  }
  bool layers_alike() const override { return model_.layers_alike(); }
  double least_block_time_s() const override { return model_.config().vpp * model_.lightest_layer_s(); }
  std::uint64_t range_signature(int first_layer, int layers) const override {
    return model_.range_signature(first_layer, layers);
  }
  double model_work_s() const override { return model_.model_work_s(); }

 private:
  const StageCostModel& model_;
  int layers_ = 0;
};

}  // namespace

StageAssignment assign_stages(const StageCostModel& costs, std::span<const double> in_flight, bool allow_recompute,
                              double bottleneck_limit_s, int recompute_per_chunk) {
  return assign_stages(TransformerStageCosts(costs), in_flight, allow_recompute, bottleneck_limit_s,
                       recompute_per_chunk);
}

StageAssignment assign_stages(const StageCosts& costs, std::span<const double> in_flight, bool allow_recompute,
                              double bottleneck_limit_s, int recompute_per_chunk) {
  const int pp = costs.pipeline_stages(), v = costs.virtual_stages();
  const int blocks = costs.layers() / v;  // vpp divides the layer count (level 1 only has such candidates)
  const double m = costs.num_microbatches();
  StageOptions options(costs, in_flight, allow_recompute, blocks, recompute_per_chunk);
  auto objective = [&](const Solution& s) { return (m - 1.0 / v) * s.max_s + s.sum_s / v; };

  StageAssignment out;
  // No assignment whose bottleneck exceeds the limit can help the caller; one pass of the programme
  // under that cap says whether any assignment stays below it, before every cap is listed.
  if (bottleneck_limit_s < kNoAssignment && !least_sum(options, pp, blocks, bottleneck_limit_s).feasible) return out;
  Caps caps(options, pp, blocks);
  const double smallest = caps.smallest_feasible();
  if (smallest == kNoAssignment || smallest > bottleneck_limit_s) return out;
  Solution best = least_sum(options, pp, blocks, smallest);
  double best_objective = objective(best);
  // No assignment with bottleneck >= cap can beat the best: the sum of its stage times is at least
  // the model's work.
  const double least_total = costs.model_work_s();
  for (double cap = caps.next(); cap < kNoAssignment; cap = caps.next()) {
    if ((m - 1.0 / v) * cap + least_total / v >= best_objective) break;
    const Solution s = least_sum(options, pp, blocks, cap);
    if (s.feasible && objective(s) < best_objective) {
      best = s;
      best_objective = objective(s);
    }
  }

  out.feasible = true;
  out.objective_s = best_objective;
  out.bottleneck_s = best.max_s;
  int first = 0;
  for (int s = 0; s < pp; ++s) {
    const int k = best.blocks[static_cast<std::size_t>(s)];
    out.stage_layers.push_back(k * v);
    out.recomputed.push_back(options.get(s, first, k).recomputed);
    first += k;
  }
  return out;
}

}  // namespace paratune::plan
