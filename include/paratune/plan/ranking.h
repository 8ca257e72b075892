// How configurations are ranked: by predicted iteration time, and, among those whose predicted
// times are equal within a small relative tolerance, simpler configuration first. One rule, used
// wherever paratune orders configurations by a prediction: the planner's top N (plan/planner.h),
// each candidate's choice among its refinements, the 3-axis baseline, and the tuner's derived
// space (tune/derived_space.h).
#pragma once

#include <algorithm>
#include <vector>

#include "paratune/spec/parallel.h"

namespace paratune::plan {

// Two predicted times are equal ("tie") when |a - b| <= kTieRelativeTolerance * max(a, b). 1e-9 is
// far below any difference the cost model can resolve (its inputs carry 3-4 significant digits)
// and far above the rounding noise of adding the same costs in another order (~1e-15).
inline constexpr double kTieRelativeTolerance = 1e-9;
[[nodiscard]] bool same_time(double a_s, double b_s);

// The bound a search must refine below so that nothing that ties with a plan of `time_s` is
// missed: every time t that ties with time_s or is smaller has t < tie_limit_s(time_s). Infinity
// stays infinity.
[[nodiscard]] double tie_limit_s(double time_s);

// The simplicity rule: a strict total order on configurations, a before b when a is simpler.
// "Simpler" turns fewer mechanisms on, or turns them on to a smaller degree; the keys, compared in
// this order, first difference decides:
//   1. fewer parallel axes in use: the count of tp > 1, pp > 1, cp > 1, ep > 1, vpp > 1
//      (dp is what the others leave);
//   2. smaller cp, 3. smaller pp, 4. smaller vpp, 5. smaller ep (the axes that each add a
//      communication pattern, the rarer ones first);
//   6. lower ZeRO stage; 7. with ZeRO, sharding over all of dp before hybrid sharding (fewer
//      optimizer replicas dp/op first);
//   8. recompute none < selective < full; 9. fewer fully recomputed layers, fewer selectively
//      recomputed modules, fewer offloaded modules (activation offload);
//   10. ep_overlap off before on; then the alltoall dispatcher before deepep (the default first);
//   11. smaller tp; 12. expert-TP equal to tp (the default) first, then smaller etp;
//   13. sequence parallelism off before on;
//   14. schedule: 1F1B or interleaved 1F1B (the standard ones; interleaving is keyed by vpp)
//       < GPipe < the zero-bubble ones (ZB-H1, interleaved zero-bubble, ZB-V) < DualPipeV, DualPipe;
//   15. even stages before any other layout;
//   16. gradient sync overlapped (what the frameworks do by default) < shifted < in-backward;
//   17. smaller micro-batch (less activation memory for the same time);
//   18. the overlap settings that are not searched (from --base): the frameworks' defaults first
//       (overlap_grad_reduce, overlap_param_gather, overlap_p2p on; tp_comm_overlap off);
//   19. finally the configuration text (to_string), so that distinct configurations never compare
//       equal and the order is total and deterministic.
// Works on resolved configurations and on level-1 ones (empty stage_layers = even stages).
[[nodiscard]] bool simpler(const ParallelConfig& a, const ParallelConfig& b);

// Whether a plan of time a_s and configuration a ranks before one of (b_s, b): the faster, or the
// simpler when the times tie (same_time). For choosing the better of two; to sort many, use rank()
// (tying within a tolerance is not transitive, so this is not a sorting comparator).
[[nodiscard]] bool ranks_before(double a_s, const ParallelConfig& a, double b_s, const ParallelConfig& b);

// Sorts `items` by the rule: by time (exact ties: simpler first), then every maximal run of items
// whose times tie with the run's first (fastest) item is reordered simpler first. Deterministic:
// the result depends only on the set of items.
template <typename T, typename TimeOf, typename ConfigOf>
void rank(std::vector<T>& items, TimeOf time_of, ConfigOf config_of) {
  std::sort(items.begin(), items.end(), [&](const T& a, const T& b) {
    const double ta = time_of(a), tb = time_of(b);
    return ta != tb ? ta < tb : simpler(config_of(a), config_of(b));
  });
  for (auto begin = items.begin(); begin != items.end();) {
    const double fastest = time_of(*begin);
    auto end = begin + 1;
    while (end != items.end() && same_time(fastest, time_of(*end))) ++end;
    std::sort(begin, end, [&](const T& a, const T& b) { return simpler(config_of(a), config_of(b)); });
    begin = end;
  }
}

}  // namespace paratune::plan
