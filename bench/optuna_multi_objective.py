#!/usr/bin/env python3
"""Optuna's multi-objective samplers on bench_hpo multi's problems, for bench/results/hpo_multi_objective.md.

    /usr/bin/python3 bench/optuna_multi_objective.py --problems zdt1,zdt2,zdt3,dtlz2 --samplers nsga2,motpe \\
        --seeds 0-4 --trials 300 --out optuna_multi.tsv
    build/bench/bench_hpo multi-summarize optuna_multi.tsv paratune_multi.tsv

Optuna from Debian (python3-optuna 3.1), NSGAIISampler and MOTPESampler each with its defaults and the
seed; the objective in process. The problems are those of bench/hpo_multi_objective.cc (ZDT1-3 with 30
variables, DTLZ2 with 3 objectives and 12 variables, every variable in [0, 1]). Rows are bench_hpo multi's
TSV (one per trial: its objective values), the sampler named optuna-<name>: bench_hpo multi-summarize
measures the hypervolume of both sides' rows with the same code (paratune's hpo/pareto.h).
"""
import argparse
import math
import sys
import time
import warnings

import optuna


def zdt_g(x):
    return 1.0 + 9.0 * sum(x[1:]) / (len(x) - 1)


def zdt1(x):
    g = zdt_g(x)
    return [x[0], g * (1.0 - math.sqrt(x[0] / g))]


def zdt2(x):
    g = zdt_g(x)
    return [x[0], g * (1.0 - (x[0] / g) ** 2)]


def zdt3(x):
    g = zdt_g(x)
    return [x[0], g * (1.0 - math.sqrt(x[0] / g) - (x[0] / g) * math.sin(10.0 * math.pi * x[0]))]


def dtlz2(x):
    g = sum((v - 0.5) ** 2 for v in x[2:])
    a, b = x[0] * math.pi / 2, x[1] * math.pi / 2
    return [(1 + g) * math.cos(a) * math.cos(b), (1 + g) * math.cos(a) * math.sin(b), (1 + g) * math.sin(a)]


PROBLEMS = {  # name: (function, variables, objectives)
    "zdt1": (zdt1, 30, 2),
    "zdt2": (zdt2, 30, 2),
    "zdt3": (zdt3, 30, 2),
    "dtlz2": (dtlz2, 12, 3),
}


def make_sampler(name, seed):
    if name == "nsga2":
        return optuna.samplers.NSGAIISampler(seed=seed)
    if name == "motpe":
        return optuna.samplers.MOTPESampler(seed=seed)
    if name == "random":
        return optuna.samplers.RandomSampler(seed=seed)
    raise SystemExit(f"--samplers: unknown sampler {name!r} (nsga2, motpe, random)")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--problems", default="zdt1,zdt2,zdt3,dtlz2")
    parser.add_argument("--samplers", default="nsga2,motpe")
    parser.add_argument("--seeds", default="0-4")
    parser.add_argument("--trials", type=int, default=300)
    parser.add_argument("--out", default="optuna_multi_objective.tsv")
    args = parser.parse_args()
    first, last = (int(v) for v in args.seeds.split("-"))
    optuna.logging.set_verbosity(optuna.logging.ERROR)
    warnings.simplefilter("ignore")  # MOTPESampler is deprecated in 3.1 (still the sampler the paper describes)
    with open(args.out, "w") as out:
        out.write("problem\tsampler\tseed\ttrial\tseconds\tvalues...\n")
        for pname in args.problems.split(","):
            function, variables, objectives = PROBLEMS[pname]
            for sname in args.samplers.split(","):
                for seed in range(first, last + 1):
                    study = optuna.create_study(directions=["minimize"] * objectives, sampler=make_sampler(sname, seed))
                    start = time.perf_counter()
                    rows = []

                    def objective(trial):
                        values = function([trial.suggest_float(f"x{d}", 0.0, 1.0) for d in range(1, variables + 1)])
                        rows.append((time.perf_counter() - start, values))
                        return values

                    study.optimize(objective, n_trials=args.trials)
                    for number, (seconds, values) in enumerate(rows, start=1):
                        out.write(f"{pname}\toptuna-{sname}\t{seed}\t{number}\t{seconds:.3f}" +
                                  "".join(f"\t{v:.17g}" for v in values) + "\n")
                    out.flush()
                    print(f"{pname} optuna-{sname} seed {seed}: {args.trials} trials, {time.perf_counter() - start:.1f} s",
                          file=sys.stderr)


if __name__ == "__main__":
    main()
