#!/usr/bin/env python3
"""Optuna's samplers on bench_hpo's test functions, for the comparison in bench/results/hpo_functions.md.

    /usr/bin/python3 bench/optuna_functions.py --functions levy10,rosenbrock20 --samplers cmaes,tpe \\
        --seeds 0-9 --evaluations 300 --out optuna.tsv
    build/bench/bench_hpo summarize optuna.tsv paratune.tsv

Optuna from Debian (python3-optuna 3.1, python3-cmaes for its CmaEsSampler), each sampler with its
defaults and the seed; the objective in process (only the values found are compared, not the time). The
functions are those of bench/functions/function_trial.cc (Surjanovic & Bingham), on the same boxes as
bench_hpo's spaces. Rows are written in bench_hpo's TSV format, the sampler named optuna-<name>.
"""
import argparse
import math
import sys
import time

import optuna

CHECKPOINTS = [10, 25, 50, 100, 300]


def levy(x):
    w = [1 + (v - 1) / 4 for v in x]
    total = math.sin(math.pi * w[0]) ** 2
    for v in w[:-1]:
        total += (v - 1) ** 2 * (1 + 10 * math.sin(math.pi * v + 1) ** 2)
    return total + (w[-1] - 1) ** 2 * (1 + math.sin(2 * math.pi * w[-1]) ** 2)


def rosenbrock(x):
    return sum(100 * (x[i + 1] - x[i] ** 2) ** 2 + (1 - x[i]) ** 2 for i in range(len(x) - 1))


FUNCTIONS = {  # name: (function, dimensions, low, high)
    "levy10": (levy, 10, -10.0, 10.0),
    "rosenbrock20": (rosenbrock, 20, -5.0, 10.0),
    "rosenbrock4": (rosenbrock, 4, -5.0, 10.0),
}


def make_sampler(name, seed):
    if name == "cmaes":
        return optuna.samplers.CmaEsSampler(seed=seed)
    if name == "tpe":
        return optuna.samplers.TPESampler(seed=seed)
    if name == "random":
        return optuna.samplers.RandomSampler(seed=seed)
    raise SystemExit(f"--samplers: unknown sampler {name!r} (cmaes, tpe, random)")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--functions", default="levy10,rosenbrock20")
    parser.add_argument("--samplers", default="cmaes,tpe")
    parser.add_argument("--seeds", default="0-9")
    parser.add_argument("--evaluations", type=int, default=300)
    parser.add_argument("--out", default="optuna_functions.tsv")
    args = parser.parse_args()
    first, last = (int(v) for v in args.seeds.split("-"))
    checkpoints = [c for c in CHECKPOINTS if c <= args.evaluations]
    optuna.logging.set_verbosity(optuna.logging.ERROR)
    with open(args.out, "w") as out:
        out.write("function\tsampler\tseed\tseconds" + "".join(f"\tbest_{c}" for c in checkpoints) + "\n")
        for fname in args.functions.split(","):
            function, dims, low, high = FUNCTIONS[fname]
            for sname in args.samplers.split(","):
                for seed in range(first, last + 1):
                    study = optuna.create_study(sampler=make_sampler(sname, seed))
                    start = time.perf_counter()
                    study.optimize(lambda t: function([t.suggest_float(f"x{d}", low, high) for d in range(1, dims + 1)]),
                                   n_trials=args.evaluations)
                    seconds = time.perf_counter() - start
                    best, best_after = math.inf, []
                    for i, trial in enumerate(study.trials):
                        best = min(best, trial.value)
                        if i + 1 in checkpoints:
                            best_after.append(best)
                    out.write(f"{fname}\toptuna-{sname}\t{seed}\t{seconds:.2f}" +
                              "".join(f"\t{b:.17g}" for b in best_after) + "\n")
                    out.flush()
                    print(f"{fname} optuna-{sname} seed {seed}: best {best:.6g} after {args.evaluations}, {seconds:.1f} s",
                          file=sys.stderr)


if __name__ == "__main__":
    main()
