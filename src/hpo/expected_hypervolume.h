// Expected hypervolume improvement: the acquisition of the gp sampler with several objectives
// (gp_sampler.cc). Internal to the hpo module; tests/hpo/gp_sampler_test.cc checks it by hand.
//
// For a front F of losses (smaller better) and a reference point r, the hypervolume improvement of a
// new point y is HVI(y) = HV(F u {y}) - HV(F): the part of the box between y and r that F does not
// already dominate (Zitzler & Thiele 1998's S metric; hpo/pareto.h computes HV). A GP per objective
// predicts y ~ N(mean, diag(sd^2)) at a configuration (independent objectives), and the expected
// improvement EHVI = E[HVI(y)] (Emmerich, Giannakoglou & Naujoks 2006, "Single- and multiobjective
// evolutionary optimization assisted by Gaussian random field metamodels", IEEE TEVC 10(4)) is
// estimated by Monte Carlo over fixed standard-normal draws z_s shared by every candidate (common
// random numbers, as qEHVI does: Daulton, Balandat & Bakshy 2020, NeurIPS), so that candidates are
// compared on the same draws and the estimate is a smooth function of mean and sd:
//   EHVI ~= (1/S) sum_s HVI(mean + sd * z_s).
#pragma once

#include <span>
#include <vector>

#include "paratune/hpo/pareto.h"

namespace paratune::hpo::gp_detail {

// HVI(y) against `front` (any points; dominated ones add nothing) whose hypervolume is `front_hv`.
// 0 when y is not strictly below the reference in every objective or a point of the front weakly
// dominates it.
double hypervolume_improvement(const std::vector<pareto::Losses>& front, const pareto::Losses& reference,
                               double front_hv, const pareto::Losses& y);

// The Monte Carlo EHVI above: `draws` are S standard-normal vectors of the objectives' count.
double expected_hypervolume_improvement(const std::vector<pareto::Losses>& front, const pareto::Losses& reference,
                                        double front_hv, std::span<const double> mean, std::span<const double> sd,
                                        const std::vector<pareto::Losses>& draws);

}  // namespace paratune::hpo::gp_detail
