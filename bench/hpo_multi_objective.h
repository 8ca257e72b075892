// bench_hpo's multi-objective scenarios (bench/hpo_multi_objective.cc, docs/hyperparameter-studies.md):
//
//   bench_hpo multi [--seeds A-B] [--trials N] [--problems a,b] [--samplers a,b] [--out FILE.tsv]
//       paratune's samplers (nsga2, tpe: multi-objective TPE, random) on ZDT1, ZDT2, ZDT3 (30 variables,
//       Zitzler, Deb & Thiele 2000) and DTLZ2 (3 objectives, 12 variables, Deb, Thiele, Laumanns &
//       Zitzler 2002), each proposal evaluated in process (the samplers as a study drives them:
//       propose, evaluate, record, one trial at a time): one TSV row per trial, its objective values.
//   bench_hpo multi-summarize FILE.tsv...
//       the hypervolume after 100 and 300 trials per problem and sampler (median and quartiles over
//       seeds), every file's rows measured by the same code (hpo/pareto.h) against each problem's fixed
//       reference point, so Optuna's rows (bench/optuna_multi_objective.py, same TSV) compare equally.
#pragma once

#include <string>
#include <vector>

namespace paratune::bench {

int run_multi_objective(const std::vector<std::string>& args);
int summarize_multi_objective(const std::vector<std::string>& files);

}  // namespace paratune::bench
